//! Interop with cudarc both ways (issue #2, part 2): wrap an existing cudarc context and
//! stream, hand the cudarc objects back, so a cudarc or candle code base can adopt capture
//! safety one function at a time.

use capture_core::{kernels, Context, DeviceKind, LaunchConfig};

#[test]
fn simulated_device_has_no_cudarc_objects() {
    let ctx = Context::simulated();
    assert!(ctx.cudarc().is_none());
    assert_eq!(ctx.kind(), DeviceKind::Simulated);
    let s = ctx.new_stream().unwrap();
    assert!(s.cudarc().is_none());
}

#[test]
#[ignore = "needs a CUDA device"]
fn wraps_and_hands_back_cudarc_objects_gpu() {
    let _serial = capture_tests::gpu_lock();
    let Some(probe) = capture_tests::gpu() else { return };
    drop(probe);
    let cu_ctx = cudarc_context();
    let ctx = Context::from_cudarc(cu_ctx.clone()).unwrap();
    assert!(std::sync::Arc::ptr_eq(ctx.cudarc().unwrap(), &cu_ctx));
    let cu_stream = cu_ctx.new_stream().unwrap();
    let mut stream = ctx.wrap_cudarc_stream(cu_stream.clone()).unwrap();
    let module = ctx.load_module(kernels::CHAIN_PTX).unwrap();
    let incr = module.kernel("incr_f32").unwrap();
    let x = stream.upload_new(&[1.0f32; 64]).unwrap();
    let mut g = stream.capture().unwrap();
    g.launch(&incr, LaunchConfig::for_num_elems(64), (&x, 64u32)).unwrap();
    let (graph, _) = g.finish().unwrap();
    graph.launch(&mut stream).unwrap();
    // Hand the stream back to cudarc and synchronize it there.
    stream.cudarc().unwrap().synchronize().unwrap();
    assert_eq!(stream.download(&x).unwrap()[0], 2.0);
    // A stream of another context is refused.
    let other = Context::open(0).unwrap();
    let foreign = other.cudarc().unwrap().new_stream().unwrap();
    assert!(Context::simulated().wrap_cudarc_stream(foreign).is_err());
}

fn cudarc_context() -> std::sync::Arc<capture_tests::CudaContext> {
    capture_tests::CudaContext::new(0).unwrap()
}
