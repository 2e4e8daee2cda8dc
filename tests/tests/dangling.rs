//! A forgotten guard (issue #13, item 6): `mem::forget(guard)` leaves the stream capturing,
//! and in Global mode every synchronous operation of the context is refused. The recovery,
//! `Context::end_dangling_captures()`, ends and discards the capture; afterwards
//! synchronous work runs again, and every operation through the forgotten guard's streams
//! is `CaptureEnded`.
//!
//! The guards are "forgotten" with `ManuallyDrop` (what `mem::forget` does: the destructor
//! does not run), and handed back at the very end, after the recovery, so the test itself
//! leaks nothing and runs clean under Miri's leak check; dropping a guard whose capture
//! was already ended does nothing more.

use std::mem::ManuallyDrop;

use capture_core::{CaptureMode, CaptureOptions, Context, Error, LaunchConfig};
use capture_tests::{on_both, Fixture};

const N: usize = 1024;
fn cfg() -> LaunchConfig {
    LaunchConfig::for_num_elems(N as u32)
}

fn assert_ended<T>(r: Result<T, Error>, id: u64) {
    match r {
        Err(Error::CaptureEnded { capture, .. }) => assert_eq!(capture, id),
        Err(e) => panic!("expected CaptureEnded for capture #{id}, got {e}"),
        Ok(_) => panic!("expected CaptureEnded for capture #{id}, got Ok"),
    }
}

on_both!(forgotten_guard_is_recovered, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let tracking = f.ctx.cudarc().map(|cu| cu.is_event_tracking());
    let mut other = f.ctx.new_stream().unwrap();
    let x = f.stream.upload_new(&[1.0f32; N]).unwrap();
    let y = f.stream.upload_new(&[1.0f32; N]).unwrap();
    let mut g = f.stream.capture().unwrap();
    let id = g.id();
    g.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
    let mut side = g.fork().unwrap();
    side.launch(&f.incr, cfg(), (&y, N as u32)).unwrap();
    let forgotten = ManuallyDrop::new(g); // as `mem::forget(g)`

    // Stuck: Global mode refuses every synchronous operation of the context.
    match other.alloc_zeros::<f32>(N) {
        Err(Error::CaptureActive { capture, .. }) => assert_eq!(capture, id),
        r => panic!("expected CaptureActive while the forgotten capture lives, got {r:?}"),
    }

    assert_eq!(f.ctx.end_dangling_captures(), vec![id]);
    assert_eq!(f.ctx.end_dangling_captures(), Vec::<u64>::new(), "a second call finds nothing");
    // cudarc's event tracking, off for the capture, is restored with its end.
    assert_eq!(f.ctx.cudarc().map(|cu| cu.is_event_tracking()), tracking, "event tracking restored");

    // Synchronous work runs again; nothing the forgotten capture recorded ever ran.
    let z = other.alloc_zeros::<f32>(N).unwrap();
    assert!(other.download(&z).unwrap().iter().all(|v| *v == 0.0));
    assert!(other.download(&x).unwrap().iter().all(|v| *v == 1.0));
    assert!(other.download(&y).unwrap().iter().all(|v| *v == 1.0));
    f.ctx.synchronize().unwrap();

    // The forgotten guard's fork refuses work instead of running it eagerly.
    assert_ended(side.launch(&f.incr, cfg(), (&y, N as u32)), id);
    assert_ended(side.memset_async(&y, 0), id);
    assert_ended(side.alloc_async::<f32>(N), id);
    assert_ended(side.fork(), id);
    drop(side);
    assert!(other.download(&y).unwrap().iter().all(|v| *v == 1.0));
    // Handing the guard back after the recovery does nothing more.
    let _ = f.ctx.take_abandoned_reports();
    drop(ManuallyDrop::into_inner(forgotten));
    assert!(f.ctx.take_abandoned_reports().is_empty());

    // The stream the forgotten guard borrowed is idle and captures again.
    f.stream.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
    let (graph, _) = g.finish().unwrap();
    graph.launch(&mut f.stream).unwrap();
    assert!(f.stream.download(&x).unwrap().iter().all(|v| *v == 3.0));
});

on_both!(a_live_guard_it_ends_reports_capture_ended, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.upload_new(&[1.0f32; N]).unwrap();
    let mut g = f.stream.capture().unwrap();
    let id = g.id();
    g.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
    // The documented boundary: it cannot tell a live guard from a leaked one.
    assert_eq!(f.ctx.end_dangling_captures(), vec![id]);
    assert_ended(g.launch(&f.incr, cfg(), (&x, N as u32)), id);
    assert_ended(g.finish(), id);
    assert!(f.ctx.take_abandoned_reports().is_empty(), "an ended capture is not also abandoned");
    assert!(f.stream.download(&x).unwrap().iter().all(|v| *v == 1.0));
});

/// Captures of other threads are left alone: CUDA ends a capture only on the thread that
/// began it (Relaxed mode here, so the other thread's capture blocks nothing meanwhile).
#[test]
fn sim_other_threads_captures_are_left_alone() {
    let ctx = Context::simulated();
    let (to_main, from_thread) = std::sync::mpsc::channel();
    let (to_thread, from_main) = std::sync::mpsc::channel::<()>();
    std::thread::scope(|sc| {
        let c = ctx.clone();
        sc.spawn(move || {
            let mut f = Fixture::new(c).unwrap();
            let x = f.stream.upload_new(&[1.0f32; N]).unwrap();
            let mut g = f.stream.capture_with(CaptureOptions::new().mode(CaptureMode::Relaxed)).unwrap();
            g.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
            let id = g.id();
            let forgotten = ManuallyDrop::new(g); // as `mem::forget(g)`
            to_main.send(id).unwrap();
            from_main.recv().unwrap();
            assert_eq!(f.ctx.end_dangling_captures(), vec![id]);
            drop(ManuallyDrop::into_inner(forgotten));
            f.stream.synchronize().unwrap();
        });
        let id = from_thread.recv().unwrap();
        assert!(id > 0);
        assert_eq!(ctx.end_dangling_captures(), Vec::<u64>::new());
        to_thread.send(()).unwrap();
    });
}
