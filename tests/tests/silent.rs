//! The silent hazards of real hardware (issue #2, part 6): work issued on another stream
//! during a capture — a synchronous copy, a kernel — runs once, now, returns success and is
//! not in the graph. The report names each such operation.

use capture_core::{CaptureMode, CaptureOptions, Context, Error, LaunchConfig};
use capture_tests::{on_both, Fixture};

const N: usize = 256;

on_both!(sync_copy_on_another_stream_is_refused_during_global_capture, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let mut other = ctx.new_stream().unwrap();
    let input = f.stream.alloc_zeros::<f32>(N).unwrap();
    let g = f.stream.capture().unwrap();
    let e = other.upload(&input, &vec![5.0f32; N]).unwrap_err();
    assert!(matches!(e, Error::CaptureActive { .. }), "{e}");
    drop(g);
});

on_both!(sync_copy_on_another_stream_runs_now_and_is_not_replayed, |ctx: Context| {
    // Relaxed mode lets the copy through: it runs once, now, and is not in the graph.
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let mut other = ctx.new_stream().unwrap();
    let input = f.stream.alloc_zeros::<f32>(N).unwrap();
    let out = f.stream.alloc_zeros::<f32>(N).unwrap();
    let cfg = LaunchConfig::for_num_elems(N as u32);
    let mut g = f.stream.capture_with(CaptureOptions::new().mode(CaptureMode::Relaxed)).unwrap();
    other.upload(&input, &vec![5.0f32; N]).unwrap(); // returns OK, runs now
    g.launch(&f.add, cfg, (&input, &input, &out, N as u32)).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.ran_eagerly.len(), 1, "{report}");
    assert_eq!(report.ran_eagerly[0].op, "Stream::upload");
    assert!(report.to_string().contains("NOT in the graph"));
    assert_eq!(report.nodes.memcpy, 0);
    // The copy ran once; the graph reads whatever is there at replay time.
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&out).unwrap()[0], 10.0);
    f.stream.upload(&input, &vec![1.0f32; N]).unwrap();
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&out).unwrap()[0], 2.0, "the graph did not re-run the copy");
});

on_both!(kernel_on_another_stream_runs_now, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let mut other = ctx.new_stream().unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let cfg = LaunchConfig::for_num_elems(N as u32);
    let mut g = f.stream.capture().unwrap();
    other.launch(&f.incr, cfg, (&y, N as u32)).unwrap();
    g.launch(&f.incr, cfg, (&x, N as u32)).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.ran_eagerly.len(), 1);
    assert_eq!(report.ran_eagerly[0].op, "Stream::launch");
    assert_eq!(report.nodes.kernels, 1);
    other.synchronize().unwrap();
    assert_eq!(other.download(&y).unwrap()[0], 1.0, "ran once at capture time");
    graph.launch(&mut f.stream).unwrap();
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&y).unwrap()[0], 1.0, "not part of the replays");
    assert_eq!(f.stream.download(&x).unwrap()[0], 2.0);
});
