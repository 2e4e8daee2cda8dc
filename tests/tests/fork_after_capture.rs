//! A forked capturing stream that outlives its capture (issue #13, item 10): after the
//! capture ends — `finish()` failing with `UnjoinedFork`, succeeding, or the guard dropped
//! — every operation on the fork is `CaptureEnded` (the fork no longer records, so work
//! would silently run eagerly), and no allocation made through it leaks: device memory in
//! use is measured before and after.

use capture_core::{Context, Error, LaunchConfig};
use capture_tests::{mem_in_use, on_both, Fixture};

const N: usize = 1024;
fn cfg() -> LaunchConfig {
    LaunchConfig::for_num_elems(N as u32)
}

/// Device memory in use: exact on the simulated device, the driver's view on a GPU.
fn in_use(ctx: &Context) -> usize {
    match ctx.sim() {
        Some(sim) => sim.bytes_in_use(),
        None => mem_in_use(ctx),
    }
}

/// No growth: exact on the simulated device; on a GPU the driver's view moves in 2 MiB
/// steps and a stream created for the fork may take a little, so allow 64 MiB (the leak
/// this guards against was 4 MiB per iteration, 4 GiB in all).
fn assert_no_growth(ctx: &Context, before: usize) {
    let now = in_use(ctx);
    let slack = if ctx.sim().is_some() { 0 } else { 64 << 20 };
    assert!(now <= before + slack, "memory allocated through a fork after its capture leaked: {before} -> {now} bytes");
}

fn assert_ended<T>(r: Result<T, Error>, id: u64) {
    match r {
        Err(Error::CaptureEnded { capture, .. }) => assert_eq!(capture, id),
        Err(e) => panic!("expected CaptureEnded for capture #{id}, got {e}"),
        Ok(_) => panic!("expected CaptureEnded for capture #{id}, got Ok"),
    }
}

on_both!(unjoined_fork_after_finish_refuses_work_and_leaks_nothing, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.upload_new(&[1.0f32; N]).unwrap();
    let y = f.stream.upload_new(&[1.0f32; N]).unwrap();
    let before = in_use(&f.ctx);
    let mut g = f.stream.capture().unwrap();
    let id = g.id();
    g.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
    let mut side = g.fork().unwrap();
    side.launch(&f.incr, cfg(), (&y, N as u32)).unwrap();
    match g.finish() {
        Err(Error::UnjoinedFork { .. }) => {}
        r => panic!("expected UnjoinedFork, got {:?}", r.map(|_| ())),
    }
    // The loop: 1,000 x 4 MiB through the fork, each buffer dropped.
    for _ in 0..1000 {
        assert_ended(side.alloc_async::<f32>(1 << 20), id);
    }
    assert_ended(side.launch(&f.incr, cfg(), (&y, N as u32)), id);
    assert_ended(side.memset_async(&y, 0), id);
    assert_ended(side.copy_async(&y, &x), id);
    assert_ended(side.fork(), id);
    drop(side);
    assert_no_growth(&f.ctx, before);
    // Nothing ran eagerly.
    assert!(f.stream.download(&y).unwrap().iter().all(|v| *v == 1.0));
    assert!(f.stream.download(&x).unwrap().iter().all(|v| *v == 1.0));
});

on_both!(fork_after_the_guard_is_dropped_refuses_work, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let y = f.stream.upload_new(&[1.0f32; N]).unwrap();
    let before = in_use(&f.ctx);
    let mut g = f.stream.capture().unwrap();
    let id = g.id();
    g.launch(&f.incr, cfg(), (&y, N as u32)).unwrap();
    let mut side = g.fork().unwrap();
    drop(g);
    for _ in 0..100 {
        assert_ended(side.alloc_async::<f32>(1 << 20), id);
    }
    assert_ended(side.launch(&f.incr, cfg(), (&y, N as u32)), id);
    drop(side);
    assert_no_growth(&f.ctx, before);
    assert!(f.stream.download(&y).unwrap().iter().all(|v| *v == 1.0));
});

on_both!(graph_buffers_of_a_fork_are_freed_with_the_graph, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.upload_new(&[1.0f32; N]).unwrap();
    let before = in_use(&f.ctx);
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
    let mut side = g.fork().unwrap();
    // One buffer dropped now (a `GraphBuffer` handle owns nothing; the graph frees it),
    // one kept past the graph.
    let _ = side.alloc_async::<f32>(1 << 20).unwrap();
    let kept = side.alloc_async::<f32>(1 << 20).unwrap();
    g.join(side).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.allocation_count(), 2);
    graph.launch(&mut f.stream).unwrap();
    f.stream.synchronize().unwrap();
    drop(graph);
    assert_eq!(kept.len(), 1 << 20);
    f.stream.synchronize().unwrap();
    if f.ctx.sim().is_some() {
        assert_eq!(in_use(&f.ctx), before, "graph memory outlived its graph");
    }
    // Repeating does not grow memory (on a GPU, after the first round fills the pool).
    let warm = in_use(&f.ctx);
    for _ in 0..20 {
        let mut g = f.stream.capture().unwrap();
        g.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
        let mut side = g.fork().unwrap();
        let _b = side.alloc_async::<f32>(1 << 20).unwrap();
        g.join(side).unwrap();
        let (graph, _) = g.finish().unwrap();
        graph.launch(&mut f.stream).unwrap();
        f.stream.synchronize().unwrap();
    }
    assert!(in_use(&f.ctx) <= warm + (64 << 20), "memory grew: {} -> {}", warm, in_use(&f.ctx));
});
