//! Engine-grade graphs (issue #11, parts 1-3): owning graphs, graph families per bucket
//! sharing one graph-memory pool, capture-or-eager fallback — and their bad input.

use std::collections::BTreeMap;
use std::sync::Arc;

use capture_core::engine::{BucketStats, GraphFamily};
use capture_core::{
    CaptureOptions, Context, DeviceBuffer, Error, Event, Fallback, Kernel, LaunchConfig, OwnedGraph, Path, Records,
    Region, ReplayCheck, Result, Stream,
};
use capture_tests::{mem_in_use, on_both, Fixture};

const ROW: usize = if cfg!(miri) { 16 } else { 256 };

struct Model {
    scale: Kernel,
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
}

fn model(f: &mut Fixture, rows: usize) -> Arc<Model> {
    Arc::new(Model {
        scale: f.scale.clone(),
        x: f.stream.alloc_zeros::<f32>(rows * ROW).unwrap(),
        y: f.stream.alloc_zeros::<f32>(rows * ROW).unwrap(),
    })
}

/// y = 3 x over `bucket` rows, through scratch from the graph-memory pool.
fn step<'a>(s: &mut Stream<capture_core::Capturing<'a>>, m: &'a Model, bucket: usize) -> Result<()> {
    let n = (bucket * ROW) as u32;
    let tmp = s.alloc_async::<f32>(bucket * ROW)?;
    s.launch(&m.scale, LaunchConfig::for_num_elems(n), (&m.x, &tmp, 2.0f32, n))?;
    s.launch(&m.scale, LaunchConfig::for_num_elems(n), (&tmp, &m.y, 1.5f32, n))?;
    s.free_async(tmp)
}

on_both!(engine_struct_keeps_owned_graphs_in_a_map, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let m = model(&mut f, 4);
    let mut graphs: BTreeMap<usize, OwnedGraph<Arc<Model>>> = BTreeMap::new();
    for rows in [1usize, 2, 4] {
        let (g, report) = f.stream.capture_owned(m.clone(), |s, m| step(s, m, rows)).unwrap();
        assert_eq!(report.nodes.kernels, 2);
        graphs.insert(rows, g);
    }
    f.stream.upload(&m.x, &vec![1.0f32; 4 * ROW]).unwrap();
    graphs[&2].launch(&mut f.stream).unwrap();
    let y = f.stream.download(&m.y).unwrap();
    assert!(y[..2 * ROW].iter().all(|&v| v == 3.0), "rows 0-1 computed");
    assert!(y[2 * ROW..].iter().all(|&v| v == 0.0), "rows 2-3 untouched by the 2-row graph");
    // The resources come back when the graph goes.
    let g = graphs.remove(&4).unwrap();
    let back: Arc<Model> = g.into_resources();
    assert!(Arc::ptr_eq(&back, &m));
});

on_both!(dropping_the_users_handle_does_not_free_what_a_graph_uses, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    // 64 MiB of f32 (16 KiB interpreted under Miri, where the simulated device counts exactly).
    const N: usize = if cfg!(miri) { 4 << 10 } else { 16 << 20 };
    let slack = if cfg!(miri) { 0 } else { 2 << 20 }; // the GPU's allocation granularity
    let before = mem_in_use(&ctx);
    let x = Arc::new(f.stream.alloc_zeros::<f32>(N).unwrap());
    let with_buffer = mem_in_use(&ctx);
    assert!(with_buffer - before >= N * 4, "the buffer is counted: {before} -> {with_buffer}");
    let (graph, _) = f
        .stream
        .capture_owned((x.clone(), f.incr.clone()), |s, (x, incr)| {
            s.launch(incr, LaunchConfig::for_num_elems(N as u32), (&**x, N as u32))
        })
        .unwrap();
    drop(x); // the user's handle
    f.stream.synchronize().unwrap();
    let after_drop = mem_in_use(&ctx);
    assert!(after_drop + (N * 4) / 2 > with_buffer, "still allocated: {with_buffer} -> {after_drop}");
    for _ in 0..3 {
        graph.launch(&mut f.stream).unwrap();
    }
    let x = &graph.resources().0;
    assert_eq!(f.stream.download(&**x).unwrap()[N - 1], 3.0, "the graph still reads and writes it");
    drop(graph);
    f.stream.synchronize().unwrap();
    let after_graph = mem_in_use(&ctx);
    assert!(after_graph + N * 4 <= after_drop + slack, "freed with the graph: {after_drop} -> {after_graph}");
});

on_both!(family_picks_the_smallest_bucket_pads_and_counts, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let m = model(&mut f, 8);
    ctx.trim_graph_memory().unwrap();
    ctx.reset_graph_memory_high().unwrap();
    let mut progress: Vec<(usize, usize)> = Vec::new();
    let (mut family, summary) = GraphFamily::builder(&[8, 1, 4, 2])
        .on_progress(|b: &BucketStats| progress.push((b.bucket, b.position)))
        .capture(&mut f.stream, m.clone(), step)
        .unwrap();
    assert_eq!(progress, [(8, 1), (4, 2), (2, 3), (1, 4)], "largest first, each reported");
    assert_eq!(family.buckets(), [1, 2, 4, 8]);
    assert_eq!(summary.buckets.len(), 4);
    assert!(summary.to_string().contains("bucket     8 (1/4)"), "{summary}");
    // One pool: the family needs no more graph memory than its largest bucket.
    let ratio = summary.pool_ratio().expect("the buckets allocate graph memory");
    assert!(summary.largest_bucket_pool >= (8 * ROW * 4) as u64, "{summary}");
    assert!(
        ratio <= 1.25,
        "family {} vs largest bucket {}: {ratio}",
        summary.pool_reserved,
        summary.largest_bucket_pool
    );
    if ctx.sim().is_some() {
        assert_eq!(ratio, 1.0, "the simulated pool reuses exactly");
    }
    // Each size runs in the smallest bucket that holds it, on padded input.
    for size in 1..=8usize {
        let sel = family.select(size).unwrap();
        assert_eq!(sel.bucket, size.next_power_of_two());
        let rows: Vec<f32> = (0..size * ROW).map(|i| (i / ROW + 1) as f32).collect();
        let mut input = sel.pad(&rows, ROW, 0.0).unwrap();
        assert_eq!(input.len(), sel.bucket * ROW);
        input.resize(8 * ROW, -1.0);
        f.stream.upload(&m.x, &input).unwrap();
        f.stream.memset_sync(&m.y, 0).unwrap();
        assert_eq!(family.launch(&mut f.stream, size).unwrap(), sel);
        let y = f.stream.download(&m.y).unwrap();
        for r in 0..8 {
            let want = if r < size {
                3.0 * (r + 1) as f32
            } else {
                0.0 // padding rows compute on zeros; rows past the bucket are not touched
            };
            assert_eq!(y[r * ROW], want, "size {size}, row {r}");
        }
    }
    let st = family.stats();
    assert_eq!(st.replays, 8);
    assert_eq!(st.rows, 36);
    // Sizes 1..=8 run in buckets 1, 2, 4, 4, 8, 8, 8, 8: 0+0+1+0+3+2+1+0 rows of padding.
    assert_eq!(st.padded_rows, 7);
    assert_eq!(st.per_bucket, [1, 1, 2, 4]);
    assert!(st.to_string().contains("rows of padding"));
    family.reset_stats();
    assert_eq!(family.stats().replays, 0);
});

on_both!(family_bad_input_is_typed_and_never_truncates, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let m = model(&mut f, 4);
    for (buckets, needle) in [(&[][..], "empty"), (&[1, 0, 4][..], "at least 1"), (&[4, 2, 4][..], "twice")] {
        let e = GraphFamily::builder(buckets).capture(&mut f.stream, m.clone(), step).unwrap_err();
        assert!(matches!(&e, Error::InvalidBuckets { reason, .. } if reason.contains(needle)), "{e}");
    }
    let (mut family, _) = GraphFamily::builder(&[1, 2, 4]).capture(&mut f.stream, m.clone(), step).unwrap();
    f.stream.synchronize().unwrap();
    let e = family.launch(&mut f.stream, 5).unwrap_err();
    assert!(matches!(e, Error::NoBucketFits { size: 5, largest: 4 }), "{e}");
    assert!(e.to_string().contains("split the batch"), "{e}");
    assert!(matches!(family.launch(&mut f.stream, 0).unwrap_err(), Error::EmptyBatch));
    assert_eq!(family.stats().replays, 0, "nothing launched");
    // A stream of another context.
    let other = Context::simulated();
    let mut foreign = other.new_stream().unwrap();
    let e = family.launch(&mut foreign, 2).unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    assert!(matches!(family.select(3).unwrap().pad(&[1.0f32; 5], ROW, 0.0).unwrap_err(), Error::LengthMismatch { .. }));
    // A bucket whose capture fails: the error comes back and the stream is idle and usable.
    let e = GraphFamily::builder(&[1, 2])
        .options(CaptureOptions::new().alloc_policy(capture_core::AllocPolicy::Deny))
        .capture(&mut f.stream, m.clone(), step)
        .unwrap_err();
    assert!(matches!(e, Error::AllocationDenied { .. }), "{e}");
    f.stream.synchronize().unwrap();
});

on_both!(family_warmup_runs_eagerly_before_each_capture, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let m = model(&mut f, 4);
    let mut warmed = Vec::new();
    let (family, summary) = GraphFamily::builder(&[2, 4])
        .warmup(|s, m: &Model, bucket| {
            warmed.push(bucket);
            s.memset_sync(&m.y, 0)
        })
        .replays(0)
        .capture(&mut f.stream, m.clone(), step)
        .unwrap();
    assert_eq!(warmed, [4, 2]);
    assert!(summary.buckets.iter().all(|b| b.replay < std::time::Duration::from_secs(5)));
    assert!(family.graph(4).is_some() && family.graph(3).is_none());
});

struct Scale;
impl Region<Model> for Scale {
    fn run<'r, S: Records<'r>>(&mut self, s: &mut Stream<S>, m: &'r Model) -> Result<()> {
        let n = (4 * ROW) as u32;
        s.launch(&m.scale, LaunchConfig::for_num_elems(n), (&m.x, &m.y, 2.0f32, n))
    }
}

/// Waits on an event recorded before the capture: CUDA_ERROR_STREAM_CAPTURE_ISOLATION
/// under capture (what cudarc's event tracking does to a capture), harmless eagerly.
struct WaitsOnOldEvent;
struct WithEvent {
    m: Arc<Model>,
    ev: Event,
}
impl Region<WithEvent> for WaitsOnOldEvent {
    fn run<'r, S: Records<'r>>(&mut self, s: &mut Stream<S>, r: &'r WithEvent) -> Result<()> {
        s.wait_event(&r.ev)?;
        Scale.run(s, &*r.m)
    }
}

on_both!(fallback_captures_once_then_replays, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let m = model(&mut f, 4);
    f.stream.upload(&m.x, &vec![1.5f32; 4 * ROW]).unwrap();
    let mut region = Fallback::new("scale", m.clone());
    assert_eq!(region.run(&mut f.stream, &mut Scale).unwrap(), Path::Captured);
    assert_eq!(f.stream.download(&m.y).unwrap()[0], 3.0, "the first call's work is done");
    f.stream.upload(&m.x, &vec![2.0f32; 4 * ROW]).unwrap();
    assert_eq!(region.run(&mut f.stream, &mut Scale).unwrap(), Path::Replayed);
    assert_eq!(f.stream.download(&m.y).unwrap()[0], 4.0);
    assert!(region.reason().is_none() && region.graph().is_some());
});

on_both!(fallback_runs_eagerly_after_a_capture_error_and_says_why_once, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let m = model(&mut f, 4);
    let ev = Event::new(&ctx).unwrap();
    f.stream.record_event(&ev).unwrap();
    f.stream.synchronize().unwrap();
    let r = Arc::new(WithEvent { m: m.clone(), ev });
    let mut region = Fallback::new("waits-on-old-event", r);
    f.stream.upload(&m.x, &vec![1.0f32; 4 * ROW]).unwrap();
    assert_eq!(region.run(&mut f.stream, &mut WaitsOnOldEvent).unwrap(), Path::FellBack);
    assert_eq!(f.stream.download(&m.y).unwrap()[0], 2.0, "it ran eagerly in the same call");
    let why = region.reason().expect("a reason");
    assert!(why.error.is_capture_failure(), "{}", why.error);
    assert!(why.to_string().contains("waits-on-old-event") && why.to_string().contains("engine.rs"), "{why}");
    for i in 0..3 {
        f.stream.upload(&m.x, &vec![i as f32; 4 * ROW]).unwrap();
        assert_eq!(region.run(&mut f.stream, &mut WaitsOnOldEvent).unwrap(), Path::Eager);
        assert_eq!(f.stream.download(&m.y).unwrap()[0], 2.0 * i as f32);
    }
    assert!(region.graph().is_none());
    // The stream is idle and clean: an ordinary capture works.
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(4), (&m.y, 4u32)).unwrap();
    g.finish().unwrap();
});

/// Bakes a host value into the graph: what replay validation catches.
struct StalePosition {
    pos: u32,
}
impl Region<Model> for StalePosition {
    fn run<'r, S: Records<'r>>(&mut self, s: &mut Stream<S>, m: &'r Model) -> Result<()> {
        self.pos += 1;
        let n = (4 * ROW) as u32;
        s.launch(&m.scale, LaunchConfig::for_num_elems(n), (&m.x, &m.y, self.pos as f32, n))
    }
}

on_both!(fallback_validation_catches_a_stale_graph, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let m = model(&mut f, 4);
    let validated = |r| {
        Fallback::new("stale", r).validate(
            ReplayCheck::new(3),
            |i, s, m: &Model| s.upload(&m.x, &vec![i as f32 + 1.0; 4 * ROW]),
            |s, m: &Model| Ok(capture_core::Outputs::new().with("y", s.download(&m.y)?)),
        )
    };
    let mut region = validated(m.clone());
    assert_eq!(region.prepare(&mut f.stream, &mut StalePosition { pos: 0 }).unwrap(), Path::FellBack);
    assert!(matches!(region.reason().unwrap().error, Error::ReplayDiverged { .. }));
    // A region without the bug passes validation and keeps its graph.
    let mut region = validated(m.clone());
    assert_eq!(region.prepare(&mut f.stream, &mut Scale).unwrap(), Path::Captured);
    assert_eq!(region.prepare(&mut f.stream, &mut Scale).unwrap(), Path::Replayed);
    assert!(region.graph().is_some());
});

struct Panics;
impl Region<Model> for Panics {
    fn run<'r, S: Records<'r>>(&mut self, s: &mut Stream<S>, m: &'r Model) -> Result<()> {
        Scale.run(s, m)?;
        panic!("a bug in the region");
    }
}

on_both!(fallback_region_that_panics_leaves_the_stream_idle, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let m = model(&mut f, 4);
    let mut region = Fallback::new("panics", m.clone());
    let stream = &mut f.stream;
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| region.run(stream, &mut Panics)));
    assert!(out.is_err(), "the panic propagates");
    assert!(region.reason().is_none() && region.graph().is_none(), "undecided: the next call tries again");
    // The stream is idle: synchronous work and a new capture succeed.
    f.stream.synchronize().unwrap();
    let _ = ctx.take_abandoned_reports();
    let mut region = Fallback::new("fixed", m.clone());
    assert_eq!(region.run(&mut f.stream, &mut Scale).unwrap(), Path::Captured);
});

fn scale_step<'r, S: Records<'r>>(s: &mut Stream<S>, m: &'r Model) -> Result<()> {
    Scale.run(s, m)
}

on_both!(fallback_closure_form_captures_and_falls_back, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let m = model(&mut f, 4);
    f.stream.upload(&m.x, &vec![2.0f32; 4 * ROW]).unwrap();
    let mut ok = Fallback::new("closures", m.clone());
    for want in [Path::Captured, Path::Replayed, Path::Replayed] {
        assert_eq!(ok.run_with(&mut f.stream, |s, m| scale_step(s, m), |s, m| scale_step(s, m)).unwrap(), want);
    }
    assert_eq!(f.stream.download(&m.y).unwrap()[0], 4.0);
    // The capture closure waits on an event recorded before the capture: ISOLATION.
    let ev = Event::new(&ctx).unwrap();
    f.stream.record_event(&ev).unwrap();
    f.stream.synchronize().unwrap();
    let r = Arc::new(WithEvent { m: m.clone(), ev });
    let mut bad = Fallback::new("closures-isolated", r);
    fn record<'r>(s: &mut Stream<capture_core::Capturing<'r>>, r: &'r WithEvent) -> Result<()> {
        s.wait_event(&r.ev)
    }
    let path = bad.run_with(&mut f.stream, record, |s, r| scale_step(s, &r.m)).unwrap();
    assert_eq!(path, Path::FellBack);
    assert!(bad.reason().unwrap().to_string().contains("closures-isolated"));
    f.stream.memset_sync(&m.y, 0).unwrap();
    assert_eq!(bad.run_with(&mut f.stream, record, |s, r| scale_step(s, &r.m)).unwrap(), Path::Eager);
    assert_eq!(f.stream.download(&m.y).unwrap()[0], 4.0, "the eager closure ran");
});
