//! Bad input gives typed errors that say what to do; nothing panics, nothing leaks, and the
//! stream stays usable (issue #2, "Bad input").

use capture_core::{Context, Error, LaunchConfig};
use capture_tests::{on_both, Fixture};

on_both!(zero_length_allocations, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    for e in [
        f.stream.alloc_zeros::<f32>(0).map(|_| ()).unwrap_err(),
        f.stream.alloc_uninit::<f32>(0).map(|_| ()).unwrap_err(),
        f.stream.alloc_pinned::<f32>(0).map(|_| ()).unwrap_err(),
        f.stream.alloc_async::<f32>(0).map(|_| ()).unwrap_err(),
        f.stream.upload_new::<f32>(&[]).map(|_| ()).unwrap_err(),
    ] {
        assert!(matches!(e, Error::ZeroSizedAllocation { .. }), "{e}");
        assert!(e.to_string().contains("at least one element"));
    }
    let x = f.stream.upload_new(&[7u32]).unwrap();
    assert_eq!(f.stream.download(&x).unwrap(), vec![7]);
});

on_both!(allocation_larger_than_the_device, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let (_, total) = f.ctx.mem_info().unwrap();
    let e = f.stream.alloc_zeros::<u8>(total + 1).unwrap_err();
    assert!(matches!(e, Error::AllocationTooLarge { requested, .. } if requested == total + 1), "{e}");
    let e = f.stream.alloc_zeros::<u64>(usize::MAX / 4).unwrap_err();
    assert!(matches!(e, Error::SizeOverflow { .. }), "{e}");
    let e = f.stream.alloc_managed::<u8>(total + 1).map(|_| ()).unwrap_err();
    assert!(matches!(e, Error::AllocationTooLarge { .. }), "{e}");
    let x = f.stream.upload_new(&[1u8, 2, 3]).unwrap();
    assert_eq!(f.stream.download(&x).unwrap(), vec![1, 2, 3]);
});

on_both!(kernel_not_in_module, |ctx: Context| {
    let f = Fixture::new(ctx).unwrap();
    let e = f.module.kernel("add_f64").unwrap_err();
    match &e {
        Error::KernelNotFound { name, available } => {
            assert_eq!(name, "add_f64");
            assert!(available.contains("add_f32"));
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("extern \"C\""));
});

on_both!(invalid_ptx, |ctx: Context| {
    let e = ctx.load_module("__global__ void k() {}").unwrap_err();
    assert!(matches!(e, Error::InvalidPtx { .. }), "{e}");
});

on_both!(launch_arguments_that_do_not_match, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(16).unwrap();
    let cfg = LaunchConfig::for_num_elems(16);
    // Too few.
    let e = f.stream.launch(&f.add, cfg, (&x, &x, 16u32)).unwrap_err();
    assert!(matches!(e, Error::ArgumentMismatch { .. }), "{e}");
    assert!(e.to_string().contains("4 parameter(s)"), "{e}");
    // Right count, wrong size: a u64 where the kernel takes a u32.
    let e = f.stream.launch(&f.incr, cfg, (&x, 16u64)).unwrap_err();
    assert!(e.to_string().contains("u32 (4 bytes)") && e.to_string().contains("u64 (8 bytes)"), "{e}");
    // A scalar where a pointer goes.
    let e = f.stream.launch(&f.incr, cfg, (3.0f32, 16u32)).unwrap_err();
    assert!(matches!(e, Error::ArgumentMismatch { .. }), "{e}");
    // The same mistakes inside a capture leave the capture usable.
    let mut g = f.stream.capture().unwrap();
    assert!(g.launch(&f.incr, cfg, (&x,)).is_err());
    g.launch(&f.incr, cfg, (&x, 16u32)).unwrap();
    let (graph, _) = g.finish().unwrap();
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&x).unwrap()[0], 1.0);
});

on_both!(bad_launch_configuration, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(16).unwrap();
    for cfg in [
        LaunchConfig { grid: (0, 1, 1), block: (16, 1, 1), shared_mem_bytes: 0 },
        LaunchConfig { grid: (1, 1, 1), block: (2048, 1, 1), shared_mem_bytes: 0 },
    ] {
        let e = f.stream.launch(&f.incr, cfg, (&x, 16u32)).unwrap_err();
        assert!(matches!(e, Error::InvalidLaunchConfig { .. }), "{e}");
    }
});

on_both!(length_mismatches, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let a = f.stream.alloc_zeros::<f32>(16).unwrap();
    let b = f.stream.alloc_zeros::<f32>(8).unwrap();
    let p = f.stream.alloc_pinned::<f32>(8).unwrap();
    assert!(matches!(f.stream.copy_async(&a, &b).unwrap_err(), Error::LengthMismatch { .. }));
    assert!(matches!(f.stream.upload(&a, &[1.0; 3]).unwrap_err(), Error::LengthMismatch { .. }));
    assert!(matches!(f.stream.upload_async(&a, &p).unwrap_err(), Error::LengthMismatch { .. }));
    assert!(matches!(p.write(&[0.0; 9]).unwrap_err(), Error::LengthMismatch { .. }));
    let mut out = [0.0f32; 4];
    assert!(matches!(f.stream.download_into(&a, &mut out).unwrap_err(), Error::LengthMismatch { .. }));
});

#[test]
fn objects_of_another_context_are_refused() {
    let f1 = Fixture::new(Context::simulated()).unwrap();
    let mut f2 = Fixture::new(Context::simulated()).unwrap();
    let mut s1 = f1.ctx.new_stream().unwrap();
    let x1 = s1.alloc_zeros::<f32>(4).unwrap();
    let e = f2.stream.launch(&f2.incr, LaunchConfig::for_num_elems(4), (&x1, 4u32)).unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    let e = f2.stream.launch(&f1.incr, LaunchConfig::for_num_elems(4), (4u32, 4u32)).unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
}

#[test]
#[cfg_attr(miri, ignore = "Miri cannot dlopen libcuda; runs natively")]
fn open_default_says_which_device() {
    let ctx = Context::open_default();
    match ctx.kind() {
        capture_core::DeviceKind::Simulated => assert!(ctx.fallback_reason().is_some()),
        _ => assert!(ctx.fallback_reason().is_none()),
    }
}
