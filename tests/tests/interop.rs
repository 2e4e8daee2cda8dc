//! Interop with cudarc both ways (issue #2, part 2): wrap an existing cudarc context and
//! stream, hand the cudarc objects back, so a cudarc or candle code base can adopt capture
//! safety one function at a time.
//!
//! Issue #9, part 2: cudarc slices/views and user types as arguments and copy operands,
//! cudarc functions and cuBLAS handles, the raw-address route made `unsafe`. Issue #9,
//! part 3: cudarc's event tracking off during captures, invalidations that name the code
//! and the last operation, work issued through cudarc behind the library's back reported.
//! Issue #13, item 4: launch arguments checked by type class, not size only.

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

// ----- Issue #9, part 2 and issue #13, item 4: arguments -------------------------------

use std::rc::Rc;
use std::sync::Arc;

use capture_core::ptx::ParamClass;
use capture_core::{DeviceBuffer, DeviceScalar, Error, KernelArg, KernelParam};
use capture_tests::{on_both, Fixture};

/// A user's tensor type: it becomes a kernel argument through the public trait.
struct Tensor {
    data: DeviceBuffer<f32>,
    len: u32,
}

impl<'a> KernelArg<'a> for &'a Tensor {
    fn to_param(&self) -> KernelParam<'a> {
        KernelParam::device_ptr(&self.data)
    }
}

// Issue #9, part 2: a user type is a kernel argument, borrowed by the graph.
on_both!(user_type_is_a_kernel_arg, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let t = Tensor { data: f.stream.upload_new(&[1.0f32; 64]).unwrap(), len: 64 };
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(t.len), (&t, t.len)).unwrap();
    let (graph, _) = g.finish().unwrap();
    graph.launch(&mut f.stream).unwrap();
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&t.data).unwrap()[0], 3.0);
    // Outputs may be passed as `&mut`, as cudarc code does.
    let mut out = f.stream.alloc_zeros::<f32>(64).unwrap();
    f.stream.launch(&f.add, LaunchConfig::for_num_elems(64), (&t, &t, &mut out, 64u32)).unwrap();
    assert_eq!(f.stream.download(&out).unwrap()[0], 6.0);
});

// Issue #9, part 2: every `DeviceMemory` (and &, Arc, Rc, Box of it) works where a
// `DeviceBuffer` does: kernel arguments, async copies and memsets, uploads and downloads.
on_both!(device_memory_is_accepted_everywhere, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let a = Arc::new(f.stream.upload_new(&[1.0f32; 16]).unwrap());
    let b = Rc::new(f.stream.alloc_zeros::<f32>(16).unwrap());
    let c = Box::new(f.stream.alloc_zeros::<f32>(16).unwrap());
    let pos = DeviceScalar::new(&mut f.stream, 5u32).unwrap();
    let pinned = f.stream.alloc_pinned::<f32>(16).unwrap();
    pinned.write(&[2.0; 16]).unwrap();
    let mut g = f.stream.capture().unwrap();
    g.upload_async(&*b, &pinned).unwrap(); // b = 2
    g.launch(&f.add, LaunchConfig::for_num_elems(16), (&a, &b, &c, 16u32)).unwrap(); // c = 3
    g.copy_async(&a, &c).unwrap(); // a = 3
    g.memset_async(&b, 0).unwrap(); // b = 0
    g.launch(&f.add_ptr, LaunchConfig::for_num_elems(16), (&a, &pos, 16u32)).unwrap(); // a = 8
    g.download_async(&pinned, &a).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert!(report.unpinned_host_copies.is_empty(), "{report}");
    graph.launch(&mut f.stream).unwrap();
    f.stream.synchronize().unwrap();
    assert_eq!(pinned.read()[0], 8.0);
    assert_eq!(f.stream.download(&a).unwrap()[0], 8.0);
    assert_eq!(f.stream.download(&b).unwrap()[0], 0.0);
    f.stream.upload(&c, &[7.0; 16]).unwrap();
    let mut out = [0.0f32; 16];
    f.stream.download_into(&c, &mut out).unwrap();
    assert_eq!(out[15], 7.0);
    f.stream.memset_sync(&c, 0).unwrap();
    assert_eq!(f.stream.download(&*c).unwrap()[3], 0.0);
});

// Issue #13, item 4: arguments are checked by type class, not size only, and the error
// names the parameter.
on_both!(argument_type_class_is_checked, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let x = f.stream.alloc_zeros::<f32>(16).unwrap();
    let y = f.stream.alloc_zeros::<f32>(16).unwrap();
    let cfg = LaunchConfig::for_num_elems(16);
    // u32 where the PTX declares `.f32`: same size, garbage result; refused.
    let e = f.stream.launch(&f.scale, cfg, (&x, &y, 2u32, 16u32)).unwrap_err();
    match &e {
        Error::ArgumentMismatch { reason, .. } => {
            assert!(reason.contains("parameter 2 `scale_f32_param_2`"), "{reason}");
            assert!(reason.contains(".f32") && reason.contains("u32"), "{reason}");
        }
        e => panic!("expected ArgumentMismatch, got {e}"),
    }
    // i32 where the PTX declares `.u32`: refused.
    let e = f.stream.launch(&f.incr, cfg, (&x, 16i32)).unwrap_err();
    assert!(matches!(&e, Error::ArgumentMismatch { reason, .. } if reason.contains("signed")), "{e}");
    // f32 for a `.u64` pointer parameter... wrong size; a float for `.b32`, a plain u64 for a
    // `.ptr` parameter: refused. A device pointer for `.u64`: accepted.
    let ptx = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry typed(\n .param .b32 typed_param_0,\n .param .u64 .ptr.global.align 4 typed_param_1,\n .param .u64 typed_param_2\n)\n{\n ret;\n}\n";
    let m = ctx.load_module(ptx).unwrap();
    let k = m.kernel("typed").unwrap();
    assert_eq!(k.signature().params[1].class, ParamClass::Pointer);
    let e = f.stream.launch(&k, cfg, (1.0f32, &x, &y)).unwrap_err();
    assert!(matches!(&e, Error::ArgumentMismatch { reason, .. } if reason.contains("parameter 0")), "{e}");
    let e = f.stream.launch(&k, cfg, (1u32, 0x1000u64, &y)).unwrap_err();
    assert!(matches!(&e, Error::ArgumentMismatch { reason, .. } if reason.contains("parameter 1")), "{e}");
    if ctx.sim().is_some() {
        // (On the GPU this kernel is not worth running; the check is the same code.)
        f.stream.launch(&k, cfg, (1u32, &x, &y)).unwrap();
    }
});

// Issue #9, part 2: the raw-address route is `unsafe`; it still works for memory whose
// owner the library cannot see.
on_both!(raw_device_ptr_is_unsafe_and_works, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.upload_new(&[1.0f32; 8]).unwrap();
    // SAFETY: `x` outlives the launch, which is synchronized below.
    let p = unsafe { KernelParam::raw_device_ptr(x.device_ptr()) };
    f.stream.launch(&f.incr, LaunchConfig::for_num_elems(8), (p, 8u32)).unwrap();
    assert_eq!(f.stream.download(&x).unwrap()[0], 2.0);
});

// Issue #9, bad input: memory of another context is a typed error, for every operation.
#[test]
fn memory_of_another_context_is_refused() {
    let mut f = Fixture::new(Context::simulated()).unwrap();
    let other = Context::simulated();
    let mut s2 = other.new_stream().unwrap();
    let foreign = s2.alloc_zeros::<f32>(8).unwrap();
    let mine = f.stream.alloc_zeros::<f32>(8).unwrap();
    let cfg = LaunchConfig::for_num_elems(8);
    let e = f.stream.launch(&f.incr, cfg, (&foreign, 8u32)).unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    assert!(matches!(f.stream.copy_async(&mine, &foreign).unwrap_err(), Error::ContextMismatch { .. }));
    assert!(matches!(f.stream.memset_async(&foreign, 0).unwrap_err(), Error::ContextMismatch { .. }));
    assert!(matches!(f.stream.download(&foreign).unwrap_err(), Error::ContextMismatch { .. }));
}

// ----- Issue #9, part 3: work issued behind the library's back --------------------------

// A cudarc `memcpy_htod` from a `Vec` on the capturing stream (modelled on the simulated
// device): recorded by the driver, invisible to the library, replayed from a stale host
// address. The report lists it, read from the graph.
#[test]
fn cudarc_upload_from_vec_during_capture_is_reported() {
    let ctx = Context::simulated();
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let x = f.stream.alloc_zeros::<f32>(4).unwrap();
    let mut g = f.stream.capture().unwrap();
    let fresh = vec![1.0f32; 4];
    ctx.sim().unwrap().foreign_memcpy_htod(g.stream(), &x, &fresh).unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(4), (&x, 4u32)).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.unpinned_host_copies, vec![capture_core::HostCopy { bytes: 16, to_device: true }]);
    assert_eq!(report.nodes.memcpy, 1);
    assert!(report.to_string().contains("pageable host memory"), "{report}");
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&x).unwrap()[0], 2.0);
}

// A cudarc `synchronize` on the capturing stream: the driver refuses it and invalidates the
// capture; the error names the code and the last operation the library saw.
#[test]
fn cudarc_synchronize_during_capture_names_the_code() {
    let ctx = Context::simulated();
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let x = f.stream.alloc_zeros::<f32>(4).unwrap();
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(4), (&x, 4u32)).unwrap();
    let code = ctx.sim().unwrap().foreign_synchronize(g.stream()).unwrap_err();
    assert_eq!(code, capture_core::DriverCode::STREAM_CAPTURE_UNSUPPORTED);
    let e = g.finish().unwrap_err();
    match &e {
        Error::CaptureInvalidated { code, last_op: Some(last), cause: None, .. } => {
            assert_eq!(*code, capture_core::DriverCode::STREAM_CAPTURE_INVALIDATED);
            assert_eq!(last.op, "Stream::launch");
        }
        e => panic!("expected CaptureInvalidated, got {e}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("cudarc handle") && msg.contains("Stream::launch"), "{msg}");
    // The stream is usable afterwards.
    f.stream.launch(&f.incr, LaunchConfig::for_num_elems(4), (&x, 4u32)).unwrap();
    assert_eq!(f.stream.download(&x).unwrap()[0], 1.0);
}

// Issue #9, part 3: ISOLATION (a capture waiting on an event recorded before it) says what
// usually causes it and what to do, at the failing call and at `finish`.
on_both!(isolation_says_what_causes_it, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let x = f.stream.alloc_zeros::<f32>(4).unwrap();
    let before = capture_core::Event::new(&ctx).unwrap();
    f.stream.record_event(&before).unwrap();
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(4), (&x, 4u32)).unwrap();
    let e = g.wait_event(&before).unwrap_err();
    assert_eq!(e.driver_code(), Some(capture_core::DriverCode::STREAM_CAPTURE_ISOLATION));
    assert!(e.to_string().contains("event tracking"), "{e}");
    let e = g.finish().unwrap_err();
    match &e {
        Error::CaptureInvalidated { cause: Some(c), last_op: Some(_), cause_code, .. } => {
            assert_eq!(c.op, "Stream::wait_event");
            assert_eq!(*cause_code, Some(capture_core::DriverCode::STREAM_CAPTURE_ISOLATION));
        }
        e => panic!("expected CaptureInvalidated naming wait_event, got {e}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("Stream::wait_event") && msg.contains("event tracking"), "{msg}");
});

// ----- GPU variants ---------------------------------------------------------------------

fn gpu_setup() -> Option<(std::sync::Arc<capture_tests::CudaContext>, Context)> {
    let probe = capture_tests::gpu()?;
    drop(probe);
    let cu = cudarc_context();
    let ctx = Context::from_cudarc(cu.clone()).unwrap();
    Some((cu, ctx))
}

/// A cudarc context and one of its streams, both wrapped (what adopting code starts from).
struct Wrapped {
    ctx: Context,
    cu_stream: std::sync::Arc<cudarc::driver::CudaStream>,
    stream: capture_core::Stream,
}

fn wrapped() -> Option<Wrapped> {
    let (cu, ctx) = gpu_setup()?;
    let cu_stream = cu.new_stream().unwrap();
    let stream = ctx.wrap_cudarc_stream(cu_stream.clone()).unwrap();
    Some(Wrapped { ctx, cu_stream, stream })
}

// Issue #9, part 2: cudarc slices and views are kernel arguments and copy operands.
#[test]
#[ignore = "needs a CUDA device"]
fn cudarc_slices_and_views_as_args_gpu() {
    let _serial = capture_tests::gpu_lock();
    let Some(Wrapped { ctx, cu_stream, mut stream }) = wrapped() else { return };
    let module = ctx.load_module(kernels::CHAIN_PTX).unwrap();
    let incr = module.kernel("incr_f32").unwrap();
    let mut slice = cu_stream.clone_htod(&[1.0f32; 64]).unwrap();
    let other = cu_stream.alloc_zeros::<f32>(64).unwrap();
    {
        let view = slice.slice(32..);
        let mut g = stream.capture().unwrap();
        g.launch(&incr, LaunchConfig::for_num_elems(64), (&slice, 64u32)).unwrap();
        g.launch(&incr, LaunchConfig::for_num_elems(32), (&view, 32u32)).unwrap();
        g.copy_async(&other, &slice).unwrap();
        let (graph, _) = g.finish().unwrap();
        graph.launch(&mut stream).unwrap();
    }
    {
        let view_mut = slice.slice_mut(..32);
        let mut g = stream.capture().unwrap();
        g.launch(&incr, LaunchConfig::for_num_elems(32), (&view_mut, 32u32)).unwrap();
        let (graph, _) = g.finish().unwrap();
        graph.launch(&mut stream).unwrap();
    }
    let host = stream.download(&slice).unwrap();
    assert_eq!((host[0], host[63]), (3.0, 3.0));
    assert_eq!(stream.download(&other).unwrap()[40], 3.0);
    assert_eq!(cu_stream.clone_dtoh(&slice).unwrap()[10], 3.0);
}

// Issue #9, bad input: a CudaSlice of another context is a typed ContextMismatch.
#[test]
#[ignore = "needs a CUDA device"]
fn cudarc_slice_of_another_context_is_refused_gpu() {
    let _serial = capture_tests::gpu_lock();
    let Some((_cu, ctx)) = gpu_setup() else { return };
    let other = capture_tests::CudaContext::new_non_primary(0, 0).unwrap();
    let foreign = other.default_stream().alloc_zeros::<f32>(16).unwrap();
    let mut stream = ctx.new_stream().unwrap();
    let module = ctx.load_module(kernels::CHAIN_PTX).unwrap();
    let incr = module.kernel("incr_f32").unwrap();
    let e = stream.launch(&incr, LaunchConfig::for_num_elems(16), (&foreign, 16u32)).unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    assert!(matches!(stream.download(&foreign).unwrap_err(), Error::ContextMismatch { .. }));
}

// Issue #9, part 2: a cudarc function launched under capture, checked when its PTX is given.
#[test]
#[ignore = "needs a CUDA device"]
fn cudarc_function_with_and_without_ptx_gpu() {
    let _serial = capture_tests::gpu_lock();
    let Some((cu, ctx)) = gpu_setup() else { return };
    let cu_module = cu.load_module(cudarc::nvrtc::Ptx::from_src(kernels::CHAIN_PTX)).unwrap();
    let checked =
        capture_core::Kernel::from_cudarc_module(&ctx, &cu_module, "incr_f32", Some(kernels::CHAIN_PTX)).unwrap();
    assert!(checked.is_checked());
    let f = cu_module.load_function("incr_f32").unwrap();
    let unchecked = capture_core::Kernel::from_cudarc(&ctx, f, "incr_f32", None).unwrap();
    assert!(!unchecked.is_checked());
    let mut stream = ctx.new_stream().unwrap();
    let x = stream.upload_new(&[1.0f32; 32]).unwrap();
    let cfg = LaunchConfig::for_num_elems(32);
    let e = stream.launch(&checked, cfg, (&x, 32i32)).unwrap_err();
    assert!(matches!(e, Error::ArgumentMismatch { .. }), "{e}");
    let mut g = stream.capture().unwrap();
    g.launch(&checked, cfg, (&x, 32u32)).unwrap();
    g.launch(&unchecked, cfg, (&x, 32u32)).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.nodes.kernels, 2);
    graph.launch(&mut stream).unwrap();
    assert_eq!(stream.download(&x).unwrap()[31], 3.0);
}

// Issue #9, part 3: event tracking is off during a capture and restored after it — also
// when the capture panics.
#[test]
#[ignore = "needs a CUDA device"]
fn event_tracking_restored_after_panic_gpu() {
    let _serial = capture_tests::gpu_lock();
    let Some((cu, ctx)) = gpu_setup() else { return };
    assert!(cu.is_event_tracking());
    let mut stream = ctx.new_stream().unwrap();
    let module = ctx.load_module(kernels::CHAIN_PTX).unwrap();
    let incr = module.kernel("incr_f32").unwrap();
    let x = stream.alloc_zeros::<f32>(8).unwrap();
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = stream.capture_scope(capture_core::CaptureOptions::new(), |s| {
            s.launch(&incr, LaunchConfig::for_num_elems(8), (&x, 8u32))?;
            assert!(!cu.is_event_tracking(), "tracking must be off during capture");
            panic!("planted panic inside the capture");
            #[allow(unreachable_code)]
            Ok(())
        });
    }));
    assert!(r.is_err());
    assert!(cu.is_event_tracking(), "tracking restored after the panic");
    // And after `?`-style early return and after finish.
    let g = stream.capture().unwrap();
    assert!(!cu.is_event_tracking());
    drop(g);
    assert!(cu.is_event_tracking());
}

// Issue #9, part 3: with two streams, cudarc's tracking makes cudarc work on the capturing
// stream wait on an event recorded before the capture (the slice's last write, on another
// stream): CUDA_ERROR_STREAM_CAPTURE_ISOLATION. With tracking off for the capture, the
// cudarc copy is recorded; two concurrent captures count correctly.
#[test]
#[ignore = "needs a CUDA device"]
fn multi_stream_capture_with_tracking_gpu() {
    let _serial = capture_tests::gpu_lock();
    let Some((cu, ctx)) = gpu_setup() else { return };
    let s_a = cu.new_stream().unwrap();
    let s_b = cu.new_stream().unwrap();
    assert!(cu.is_managing_stream_synchronization());
    // Written on stream A: their write events are recorded there, before any capture.
    let src = s_a.clone_htod(&[1.0f32; 256]).unwrap();
    let mut dst = s_a.alloc_zeros::<f32>(256).unwrap();
    let other = s_a.clone_htod(&[1.0f32; 256]).unwrap();
    let module = ctx.load_module(kernels::CHAIN_PTX).unwrap();
    let incr = module.kernel("incr_f32").unwrap();
    let mut b = ctx.wrap_cudarc_stream(s_b.clone()).unwrap();
    let mut c = ctx.new_stream().unwrap();
    // Relaxed: with two ThreadLocal captures on one thread, the first `finish` could not
    // instantiate (see guard.rs, finish_while_another_capture_is_active_names_it).
    let opts = capture_core::CaptureOptions::new().mode(capture_core::CaptureMode::Relaxed);
    let mut g1 = b.capture_with(opts).unwrap();
    let mut g2 = c.capture_with(opts).unwrap();
    // cudarc's own copy on the capturing stream (as candle's ops issue work).
    s_b.memcpy_dtod(&src, &mut dst).unwrap();
    g1.launch(&incr, LaunchConfig::for_num_elems(256), (&dst, 256u32)).unwrap();
    g2.launch(&incr, LaunchConfig::for_num_elems(256), (&other, 256u32)).unwrap();
    let (graph1, report1) = g1.finish().unwrap();
    assert_eq!((report1.nodes.memcpy, report1.nodes.kernels), (1, 1), "{report1}");
    assert!(!cu.is_event_tracking(), "still off: the second capture is active");
    let (graph2, _) = g2.finish().unwrap();
    assert!(cu.is_event_tracking());
    graph1.launch(&mut b).unwrap();
    graph2.launch(&mut c).unwrap();
    c.synchronize().unwrap();
    assert_eq!(b.download(&dst).unwrap()[0], 2.0);
    assert_eq!(b.download(&other).unwrap()[0], 2.0);
}

// Issue #9, part 3: a cudarc synchronize through a handed-out stream during capture is
// refused by the driver; the capture's error names the code and the last library op.
#[test]
#[ignore = "needs a CUDA device"]
fn cudarc_synchronize_during_capture_names_the_code_gpu() {
    let _serial = capture_tests::gpu_lock();
    let Some(Wrapped { ctx, cu_stream: _, mut stream }) = wrapped() else { return };
    let handed_out = stream.cudarc().unwrap().clone();
    let module = ctx.load_module(kernels::CHAIN_PTX).unwrap();
    let incr = module.kernel("incr_f32").unwrap();
    let x = stream.alloc_zeros::<f32>(8).unwrap();
    let mut g = stream.capture().unwrap();
    g.launch(&incr, LaunchConfig::for_num_elems(8), (&x, 8u32)).unwrap();
    assert!(handed_out.synchronize().is_err());
    let e = g.finish().unwrap_err();
    assert!(matches!(&e, Error::CaptureInvalidated { last_op: Some(l), .. } if l.op == "Stream::launch"), "{e}");
    assert!(e.driver_code().is_some(), "{e}");
    // Usable afterwards.
    stream.launch(&incr, LaunchConfig::for_num_elems(8), (&x, 8u32)).unwrap();
    assert_eq!(stream.download(&x).unwrap()[0], 1.0);
}

// Issue #9, part 3: a cudarc upload from a Vec during capture is recorded by the driver and
// listed in the report (read from the graph's copy nodes).
#[test]
#[ignore = "needs a CUDA device"]
fn cudarc_upload_from_vec_reported_gpu() {
    let _serial = capture_tests::gpu_lock();
    let Some(Wrapped { ctx, cu_stream: _, mut stream }) = wrapped() else { return };
    let handed_out = stream.cudarc().unwrap().clone();
    let module = ctx.load_module(kernels::CHAIN_PTX).unwrap();
    let incr = module.kernel("incr_f32").unwrap();
    let x = stream.alloc_zeros::<f32>(8).unwrap();
    let mut staging = handed_out.alloc_zeros::<f32>(8).unwrap();
    let pinned = stream.alloc_pinned::<f32>(8).unwrap();
    let mut g = stream.capture().unwrap();
    g.upload_async(&x, &pinned).unwrap(); // pinned: not listed
    let fresh = vec![5.0f32; 8];
    handed_out.memcpy_htod(&fresh, &mut staging).unwrap();
    g.launch(&incr, LaunchConfig::for_num_elems(8), (&x, 8u32)).unwrap();
    let (_graph, report) = g.finish().unwrap();
    assert_eq!(report.unpinned_host_copies.len(), 1, "{report}");
    assert!(report.unpinned_host_copies[0].to_device);
    assert_eq!(report.nodes.memcpy, 2, "{report}");
}

// Issue #9, part 2: Blas wraps a cudarc cuBLAS handle, workspace set before capture.
#[test]
#[ignore = "needs a CUDA device"]
fn blas_wraps_cudarc_handle_gpu() {
    let _serial = capture_tests::gpu_lock();
    let Some(Wrapped { ctx: _, cu_stream, mut stream }) = wrapped() else { return };
    let handle = Arc::new(cudarc::cublas::CudaBlas::new(cu_stream.clone()).unwrap());
    let blas = capture_core::Blas::from_cudarc(&mut stream, handle, capture_core::Blas::DEFAULT_WORKSPACE).unwrap();
    let a = cu_stream.clone_htod(&[1.0f32, 2.0, 3.0, 4.0]).unwrap();
    let c = cu_stream.alloc_zeros::<f32>(4).unwrap();
    use capture_core::Transpose::No;
    // Warm the GEMM shape eagerly first (lazy module loading).
    blas.sgemm(&mut stream, No, No, (2, 2, 2), 1.0, (&a, 2), (&a, 2), 0.0, (&c, 2)).unwrap();
    let mut g = stream.capture().unwrap();
    blas.sgemm(g.stream(), No, No, (2, 2, 2), 1.0, (&a, 2), (&a, 2), 0.0, (&c, 2)).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.nodes.mem_alloc, 0, "{report}");
    stream.memset_sync(&c, 0).unwrap();
    graph.launch(&mut stream).unwrap();
    assert_eq!(stream.download(&c).unwrap(), vec![7.0, 10.0, 15.0, 22.0]);
}
