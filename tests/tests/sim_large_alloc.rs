//! Large allocations never abort the process (issue #13, item 1): the simulated device
//! advertises 80 GiB and must hand out what it advertises, backing memory lazily; requests
//! beyond what a device or host has are typed errors (the driver's `OUT_OF_MEMORY`, or
//! `AllocationTooLarge`), never "memory allocation of … bytes failed" and an abort.

use capture_core::{Context, DriverCode, Error};
use capture_tests::on_both;

/// Three quarters of the device: 60 GiB on the simulated device's 80 GiB.
fn big(ctx: &Context) -> usize {
    let (_, total) = ctx.mem_info().unwrap();
    total / 4 * 3
}

on_both!(device_three_quarters_of_advertised, |ctx: Context| {
    let mut s = ctx.new_stream().unwrap();
    let bytes = big(&ctx);
    let buf = s.alloc_zeros::<u8>(bytes).expect("an allocation the device advertises room for");
    assert_eq!(buf.len(), bytes);
    // Touch both ends; the middle stays untouched (and, on the simulated device, unbacked).
    let one = s.alloc_zeros::<u8>(1).unwrap();
    s.memset_async(&one, 7).unwrap();
    let mut tail = vec![0u8; 1];
    s.download_into(&one, &mut tail).unwrap();
    assert_eq!(tail, [7]);
    s.memset_sync(&buf, 0).unwrap();
    drop(buf);
    s.synchronize().unwrap();
});

on_both!(device_beyond_advertised_is_typed, |ctx: Context| {
    let mut s = ctx.new_stream().unwrap();
    let (_, total) = ctx.mem_info().unwrap();
    match s.alloc_zeros::<u8>(total + 1) {
        Err(Error::AllocationTooLarge { requested, .. }) => assert_eq!(requested, total + 1),
        other => panic!("expected AllocationTooLarge, got {other:?}"),
    }
    // Two allocations that fit alone but not together: the second is the driver's OOM.
    let a = s.alloc_uninit::<u8>(big(&ctx)).unwrap();
    match s.alloc_uninit::<u8>(big(&ctx)) {
        Err(e) => assert_eq!(e.driver_code(), Some(DriverCode::OUT_OF_MEMORY), "{e}"),
        Ok(_) => panic!("two allocations of 3/4 of the device both succeeded"),
    }
    drop(a);
});

on_both!(pinned_8_tib_is_typed_oom, |ctx: Context| {
    let mut s = ctx.new_stream().unwrap();
    match s.alloc_pinned::<f64>(1 << 40) {
        Err(e) => assert_eq!(e.driver_code(), Some(DriverCode::OUT_OF_MEMORY), "{e}"),
        Ok(_) => panic!("8 TiB of pinned memory was handed out"),
    }
    // The stream and context still work.
    let p = s.alloc_pinned::<f32>(16).unwrap();
    assert_eq!(p.read(), vec![0.0; 16]);
});

on_both!(managed_8_tib_is_typed, |ctx: Context| {
    let mut s = ctx.new_stream().unwrap();
    match s.alloc_managed::<f64>(1 << 40) {
        Err(Error::AllocationTooLarge { requested, .. }) => assert_eq!(requested, 8 << 40),
        Err(e) => assert_eq!(e.driver_code(), Some(DriverCode::OUT_OF_MEMORY), "{e}"),
        Ok(_) => panic!("8 TiB of managed memory was handed out"),
    }
    let m = s.alloc_managed::<f32>(16).unwrap();
    assert_eq!(s.read_managed(&m).unwrap(), vec![0.0; 16]);
});

/// Pinned memory the simulated device has room for (1 TiB, more than this host's RAM)
/// is handed out, zeroed, without touching host memory up front.
#[test]
fn sim_pinned_1_tib_is_lazily_backed() {
    let ctx = Context::simulated();
    let mut s = ctx.new_stream().unwrap();
    let p = s.alloc_pinned::<u8>(1 << 40).expect("1 TiB of simulated pinned memory");
    assert_eq!(p.len(), 1 << 40);
    let m = s.alloc_managed::<u8>(60 << 30).expect("60 GiB of simulated managed memory");
    assert_eq!(m.len(), 60 << 30);
}
