//! Capture-time allocations are counted and reported (issue #2, parts 4 and 8): in the
//! finished report, under each policy, and by the guard's `Drop` on an abandoned capture.
//! Buffers dropped during a capture are freed after it instead of invalidating it.

use capture_core::{AllocPolicy, CaptureOptions, Context, Error, LaunchConfig};
use capture_tests::{on_both, Fixture};

const N: usize = 1024;

on_both!(alloc_async_is_counted_with_bytes_and_site, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let out = f.stream.alloc_zeros::<f32>(N).unwrap();
    let cfg = LaunchConfig::for_num_elems(N as u32);
    let mut g = f.stream.capture().unwrap();
    let tmp = g.alloc_async::<f32>(N).unwrap();
    let tmp2 = g.alloc_async::<u8>(100).unwrap();
    g.launch(&f.incr, cfg, (&tmp, N as u32)).unwrap();
    g.launch(&f.add, cfg, (&tmp, &tmp, &out, N as u32)).unwrap();
    g.free_async(tmp).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.allocation_count(), 2);
    assert_eq!(report.allocation_bytes(), N * 4 + 100);
    assert!(report.allocations[0].site.file.ends_with("allocation.rs"));
    assert_eq!(report.nodes.mem_alloc, 2);
    // tmp freed by the user, tmp2 freed by the guard at the end of the graph.
    assert_eq!(report.nodes.mem_free, 2);
    assert!(report.to_string().contains("allocations:  2"));
    assert_eq!(tmp2.len(), 100); // freed by the guard, inside the graph
    for _ in 0..3 {
        graph.launch(&mut f.stream).unwrap();
    }
    f.stream.synchronize().unwrap();
});

on_both!(deny_policy_refuses_capture_time_allocation, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let mut g = f.stream.capture_with(CaptureOptions::new().alloc_policy(AllocPolicy::Deny)).unwrap();
    let e = g.alloc_async::<f32>(N).unwrap_err();
    assert!(matches!(e, Error::AllocationDenied { bytes, .. } if bytes == N * 4), "{e}");
    assert!(e.to_string().contains("allocate before `capture()`"));
    // The capture itself is still fine.
    g.launch(&f.incr, LaunchConfig::for_num_elems(N as u32), (&x, N as u32)).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.allocation_count(), 0);
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&x).unwrap()[0], 1.0);
});

on_both!(abandoned_capture_reports_its_allocations, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    {
        let mut g = f.stream.capture_with(CaptureOptions::new().alloc_policy(AllocPolicy::Allow)).unwrap();
        let _a = g.alloc_async::<f32>(256).unwrap();
        let _b = g.alloc_async::<f32>(512).unwrap();
        // dropped without finish()
    }
    let r = f.ctx.take_abandoned_reports();
    assert_eq!(r.len(), 1);
    assert!(r[0].abandoned);
    assert_eq!(r[0].allocation_count(), 2);
    assert_eq!(r[0].allocation_bytes(), 768 * 4);
    assert!(r[0].to_string().contains("abandoned"));
    // The stream is fine.
    let x = f.stream.upload_new(&[1.0f32; 4]).unwrap();
    assert_eq!(f.stream.download(&x).unwrap(), vec![1.0; 4]);
});

on_both!(graph_buffer_outside_its_capture_is_a_typed_error, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let cfg = LaunchConfig::for_num_elems(N as u32);
    let mut g = f.stream.capture().unwrap();
    let tmp = g.alloc_async::<f32>(N).unwrap();
    g.launch(&f.incr, cfg, (&tmp, N as u32)).unwrap();
    let (_graph, _) = g.finish().unwrap();
    let e = f.stream.launch(&f.incr, cfg, (&tmp, N as u32)).unwrap_err();
    assert!(matches!(e, Error::ForeignGraphBuffer { .. }), "{e}");
    let mut g2 = f.stream.capture().unwrap();
    let e = g2.launch(&f.incr, cfg, (&tmp, N as u32)).unwrap_err();
    assert!(matches!(e, Error::ForeignGraphBuffer { .. }), "{e}");
});

on_both!(buffer_dropped_during_capture_is_freed_after_it, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let mut other = f.ctx.new_stream().unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let doomed = other.alloc_zeros::<f32>(1 << 20).unwrap();
    let before = capture_tests::mem_in_use(&f.ctx);
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(N as u32), (&x, N as u32)).unwrap();
    drop(doomed); // would be cuMemFree during a Global capture: deferred instead
    let (graph, _) = g.finish().unwrap();
    let after = capture_tests::mem_in_use(&f.ctx);
    assert!(after < before, "the deferred free ran after the capture: {before} -> {after}");
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&x).unwrap()[0], 1.0);
});

on_both!(graph_memory_reused_within_a_capture_is_freed_once, |ctx: Context| {
    // The driver gives a graph allocation the address of one freed earlier in the same
    // capture (seen on the H100): the guard must not take the second allocation for the
    // first, which it already freed, and free that address again at the end of the capture.
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.upload_new(&[1.0f32; 1024]).unwrap();
    let cfg = LaunchConfig::for_num_elems(1024);
    let mut g = f.stream.capture_with(CaptureOptions::new().alloc_policy(AllocPolicy::Allow)).unwrap();
    let a = g.alloc_async::<f32>(1024).unwrap();
    g.launch(&f.scale, cfg, (&x, &a, 2.0f32, 1024u32)).unwrap();
    let c = g.alloc_async::<f32>(1024).unwrap();
    g.launch(&f.add, cfg, (&a, &x, &c, 1024u32)).unwrap();
    g.free_async(a).unwrap();
    let d = g.alloc_async::<f32>(1024).unwrap(); // may get `a`'s address
    g.launch(&f.scale, cfg, (&c, &d, 0.5f32, 1024u32)).unwrap();
    g.free_async(c).unwrap();
    g.launch(&f.scale, cfg, (&d, &x, 2.0f32, 1024u32)).unwrap();
    g.free_async(d).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!((report.nodes.mem_alloc, report.nodes.mem_free), (3, 3), "{report}");
    assert_eq!(report.freed_at_end, 0, "every allocation was freed by the capture itself: {report}");
    graph.launch(&mut f.stream).unwrap();
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&x).unwrap()[0], 9.0);
});
