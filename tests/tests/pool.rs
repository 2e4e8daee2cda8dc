//! `CapturePool` (issue #6, part 4): workspaces allocated before capture; a request for a
//! workspace that was not, from a sealed pool or during capture, is a typed error.

use capture_core::{CapturePool, Context, Error, LaunchConfig};
use capture_tests::{on_both, Fixture};

on_both!(sealed_pool_serves_existing_and_refuses_new, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let pool = CapturePool::new(&ctx);
    let ws = pool.workspace::<f32, _>(&mut f.stream, "scratch", 1024).unwrap();
    pool.seal();
    // The same workspace again: served from the pool, same buffer.
    let again = pool.workspace::<f32, _>(&mut f.stream, "scratch", 1024).unwrap();
    // SAFETY: the addresses are only compared, never used.
    assert_eq!(unsafe { ws.device_ptr() }, unsafe { again.device_ptr() });
    // A new one from a sealed pool: refused, naming it.
    let e = pool.workspace::<f32, _>(&mut f.stream, "late", 16).unwrap_err();
    assert!(matches!(&e, Error::PoolSealed { name, capturing: false, .. } if name == "late"), "{e}");
    // Inside a capture: existing workspaces are served, new ones refused without touching the driver.
    let mut g = f.stream.capture().unwrap();
    let w = pool.workspace::<f32, _>(g.stream(), "scratch", 1024).unwrap();
    // SAFETY: the addresses are only compared, never used.
    assert_eq!(unsafe { w.device_ptr() }, unsafe { ws.device_ptr() });
    // (The graph borrows what it launches with, so it uses `ws`, which outlives it.)
    g.launch(&f.incr, LaunchConfig::for_num_elems(1024), (&*ws, 1024u32)).unwrap();
    pool.unseal();
    let e = pool.workspace::<u8, _>(g.stream(), "fp8_scratch", 64).unwrap_err();
    assert!(matches!(&e, Error::PoolSealed { capturing: true, .. }), "{e}");
    assert!(e.to_string().contains("fp8_scratch") && e.to_string().contains("pool.rs"), "{e}");
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.allocation_count(), 0);
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&ws).unwrap()[0], 1.0);
    // Shape mismatch.
    let e = pool.workspace::<f32, _>(&mut f.stream, "scratch", 8).unwrap_err();
    assert!(matches!(e, Error::WorkspaceMismatch { .. }), "{e}");
});
