//! Interop with cudarc's graph types and the driver's instantiate flags (issue #11, part 5):
//! raw `CUgraph`/`CUgraphExec` handles, and each flag — upload, auto-free-on-launch, device
//! launch, node priorities — with the combinations the driver refuses refused as typed errors.
//! Each scenario runs on the simulated device and, `#[ignore]`d, on the GPU.

use std::sync::Arc;

use capture_core::{CaptureOptions, Context, DeviceKind, DriverCode, Error, InstantiateFlags, LaunchConfig, Stream};
use capture_tests::{on_both, Fixture};
use cudarc::driver::CudaStream;

const N: u32 = 256;

fn opts(flags: InstantiateFlags) -> CaptureOptions {
    CaptureOptions::new().instantiate(flags)
}

/// Captures `x += 1` with `flags`, launches it twice and checks the result.
fn incr_twice(f: &mut Fixture, flags: InstantiateFlags) -> capture_core::Result<()> {
    let x = f.stream.alloc_zeros::<f32>(N as usize)?;
    let mut g = f.stream.capture_with(opts(flags))?;
    g.launch(&f.incr, LaunchConfig::for_num_elems(N), (&x, N))?;
    let (graph, _) = g.finish()?;
    assert_eq!(graph.instantiate_flags(), flags);
    graph.launch(&mut f.stream)?;
    graph.launch(&mut f.stream)?;
    assert_eq!(f.stream.download(&x)?[N as usize - 1], 2.0);
    Ok(())
}

// ----- upload ------------------------------------------------------------------------------

on_both!(upload_flag_uploads_at_instantiation, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let before = ctx.sim().map(|s| s.graph_uploads());
    incr_twice(&mut f, InstantiateFlags::new().upload(true)).unwrap();
    if let Some(sim) = ctx.sim() {
        assert_eq!(Some(sim.graph_uploads()), before.map(|b| b + 1), "one upload, into the capture's stream");
    }
});

// ----- auto-free-on-launch -----------------------------------------------------------------

/// Captures, on `$stream`, an allocation made behind the library's back (as cudarc's
/// stream-ordered `alloc_zeros` would) that the graph never frees, plus `x += 1`; evaluates
/// to the graph and the allocation's address.
macro_rules! capture_unfreed_alloc {
    ($f:expr, $stream:expr, $x:expr, $flags:expr, $alloc:expr) => {{
        let mut g = $stream.capture_with(opts($flags)).unwrap();
        let p: u64 = $alloc(&g);
        g.launch(&$f.incr, LaunchConfig::for_num_elems(N), ($x, N)).unwrap();
        let (graph, report) = g.finish().unwrap();
        assert_eq!((report.nodes.mem_alloc, report.nodes.mem_free), (1, 0), "{report}");
        (graph, p)
    }};
}

#[test]
fn auto_free_on_launch_lets_a_graph_with_unfreed_memory_relaunch_sim() {
    let ctx = capture_tests::sim();
    let f = Fixture::new(ctx.clone()).unwrap();
    let sim = ctx.sim().unwrap();
    let mut stream = ctx.new_stream().unwrap();
    let x = stream.alloc_zeros::<f32>(N as usize).unwrap();
    let alloc = |s: &Stream<capture_core::Capturing<'_>>| sim.foreign_alloc_async(s, 1024).unwrap();

    // Default flags: auto-free-on-launch, so relaunching frees the last launch's allocation.
    let (graph, _) = capture_unfreed_alloc!(f, stream, &x, InstantiateFlags::new(), alloc);
    assert!(graph.instantiate_flags().is_auto_free_on_launch());
    for _ in 0..3 {
        graph.launch(&mut stream).unwrap();
    }
    drop(graph);

    // Without it the driver refuses the relaunch while the allocation is live...
    let flags = InstantiateFlags::new().auto_free_on_launch(false);
    let (graph, p) = capture_unfreed_alloc!(f, stream, &x, flags, alloc);
    graph.launch(&mut stream).unwrap();
    let e = graph.launch(&mut stream).unwrap_err();
    assert_eq!(e.driver_code(), Some(DriverCode::INVALID_VALUE), "{e}");
    // ...and accepts it once the allocation is freed.
    sim.foreign_free_async(&stream, p).unwrap();
    graph.launch(&mut stream).unwrap();
    assert_eq!(stream.download(&x).unwrap()[0], 5.0);
}

/// A cudarc context and stream, wrapped (the raw-handle and raw-allocation GPU tests need
/// the `CUstream`).
fn wrapped_gpu() -> Option<(Context, Arc<CudaStream>, Stream)> {
    let probe = capture_tests::gpu()?;
    drop(probe);
    let cu = capture_tests::CudaContext::new(0).unwrap();
    let ctx = Context::from_cudarc(cu.clone()).unwrap();
    let cu_stream = cu.new_stream().unwrap();
    let stream = ctx.wrap_cudarc_stream(cu_stream.clone()).unwrap();
    Some((ctx, cu_stream, stream))
}

#[test]
#[ignore = "needs a CUDA device"]
fn auto_free_on_launch_lets_a_graph_with_unfreed_memory_relaunch_gpu() {
    use cudarc::driver::result;
    let _serial = capture_tests::gpu_lock();
    let Some((ctx, cu_stream, mut stream)) = wrapped_gpu() else { return };
    let f = Fixture::new(ctx).unwrap();
    let x = stream.alloc_zeros::<f32>(N as usize).unwrap();
    let raw = cu_stream.cu_stream();
    // cuMemAllocAsync on the capturing stream, behind the library's back: an allocation
    // node the graph never frees.
    // SAFETY: `raw` is the live capturing stream; the memory is never read.
    let alloc = |_: &Stream<capture_core::Capturing<'_>>| unsafe { result::malloc_async(raw, 1024) }.unwrap();
    // SAFETY: `p` is a graph allocation a launch left live, freed once in stream order.
    let free = |p: u64| unsafe { result::free_async(p, raw) }.unwrap();

    let (graph, p) = capture_unfreed_alloc!(f, stream, &x, InstantiateFlags::new(), alloc);
    for _ in 0..3 {
        graph.launch(&mut stream).unwrap();
    }
    free(p);
    stream.synchronize().unwrap();
    drop(graph);

    let flags = InstantiateFlags::new().auto_free_on_launch(false);
    let (graph, p) = capture_unfreed_alloc!(f, stream, &x, flags, alloc);
    graph.launch(&mut stream).unwrap();
    let e = graph.launch(&mut stream).unwrap_err();
    assert_eq!(e.driver_code(), Some(DriverCode::INVALID_VALUE), "{e}");
    free(p);
    graph.launch(&mut stream).unwrap();
    free(p);
    stream.synchronize().unwrap();
    assert_eq!(stream.download(&x).unwrap()[0], 5.0);
}

// ----- device launch -----------------------------------------------------------------------

on_both!(device_launch_instantiates_a_kernel_graph, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let flags = InstantiateFlags::new().device_launch(true).upload(true);
    assert!(!flags.is_auto_free_on_launch(), "device launch turns auto-free off by default");
    incr_twice(&mut f, flags).unwrap();
    // With a fork and join too (edges, not nodes, on the GPU).
    let x = f.stream.alloc_zeros::<f32>(N as usize).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N as usize).unwrap();
    let cfg = LaunchConfig::for_num_elems(N);
    let mut g = f.stream.capture_with(opts(InstantiateFlags::new().device_launch(true))).unwrap();
    let mut side = g.fork().unwrap();
    side.launch(&f.incr, cfg, (&y, N)).unwrap();
    g.launch(&f.incr, cfg, (&x, N)).unwrap();
    g.join(side).unwrap();
    g.launch(&f.add, cfg, (&x, &y, &x, N)).unwrap();
    let (graph, _) = g.finish().unwrap();
    assert!(graph.instantiate_flags().is_device_launch());
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&x).unwrap()[0], 2.0);
});

on_both!(device_launch_refuses_memory_nodes, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let mut g = f.stream.capture_with(opts(InstantiateFlags::new().device_launch(true))).unwrap();
    let tmp = g.alloc_async::<f32>(N as usize).unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(N), (&tmp, N)).unwrap();
    let e = g.finish().unwrap_err();
    assert!(matches!(e, Error::DeviceLaunchUnsupported { .. }), "{e}");
    let msg = e.to_string();
    assert!(msg.contains("memory allocation") && msg.contains("alloc_async"), "{msg}");
    // The stream is idle again.
    incr_twice(&mut f, InstantiateFlags::new()).unwrap();
});

on_both!(device_launch_with_auto_free_is_refused_before_capture, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let flags = InstantiateFlags::new().device_launch(true).auto_free_on_launch(true);
    let e = f.stream.capture_with(opts(flags)).map(|_| ()).unwrap_err();
    assert!(matches!(e, Error::InvalidInstantiateFlags { .. }), "{e}");
    assert!(e.to_string().contains("auto_free_on_launch"), "{e}");
    // Nothing began: the stream captures normally.
    incr_twice(&mut f, InstantiateFlags::new().auto_free_on_launch(false)).unwrap();
});

// ----- node priority -----------------------------------------------------------------------

on_both!(use_node_priority_is_accepted, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let flags = InstantiateFlags::new().use_node_priority(true);
    assert!(flags.is_use_node_priority());
    incr_twice(&mut f, flags).unwrap();
});

// ----- raw handles -------------------------------------------------------------------------

#[test]
fn raw_handles_are_none_on_the_simulated_device() {
    let mut f = Fixture::new(capture_tests::sim()).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N as usize).unwrap();
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(N), (&x, N)).unwrap();
    let (graph, _) = g.finish().unwrap();
    assert!(graph.as_raw_graph().is_none() && graph.as_raw_exec().is_none());
}

#[test]
#[ignore = "needs a CUDA device"]
fn raw_handles_work_with_cudarc_gpu() {
    use cudarc::driver::{result, sys};
    let _serial = capture_tests::gpu_lock();
    let Some((ctx, cu_stream, mut stream)) = wrapped_gpu() else { return };
    assert_eq!(ctx.kind(), DeviceKind::Cuda);
    let f = Fixture::new(ctx).unwrap();
    let x = stream.alloc_zeros::<f32>(N as usize).unwrap();
    let mut g = stream.capture().unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(N), (&x, N)).unwrap();
    let (graph, _) = g.finish().unwrap();
    let (raw_graph, raw_exec) = (graph.as_raw_graph().unwrap(), graph.as_raw_exec().unwrap());
    assert!(!raw_graph.is_null() && !raw_exec.is_null());
    let mut n = 0usize;
    // SAFETY: the graph is live (borrowed from `graph`); a null array asks for the count.
    let r = unsafe { sys::cuGraphGetNodes(raw_graph, std::ptr::null_mut(), &mut n) };
    assert_eq!(r, sys::CUresult::CUDA_SUCCESS);
    assert_eq!(n, graph.nodes().total);
    // SAFETY: the exec is live and everything it uses is borrowed by `graph`, which outlives
    // the launch (synchronized below); one launch at a time, on this thread.
    unsafe { result::graph::launch(raw_exec, cu_stream.cu_stream()) }.unwrap();
    stream.synchronize().unwrap();
    assert_eq!(stream.download(&x).unwrap()[0], 1.0);
}
