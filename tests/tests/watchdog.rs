//! The capture watchdog (issue #6, part 7): a capture open past its deadline is reported,
//! with the last operation it recorded, while it is still open.

use std::time::{Duration, Instant};

use capture_core::{CaptureOptions, Context, LaunchConfig};
use capture_tests::{on_both, Fixture};

on_both!(capture_past_its_deadline_is_reported_with_its_last_op, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(64).unwrap();
    let mut g = f.stream.capture_with(CaptureOptions::new().deadline(Duration::from_millis(50))).unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(64), (&x, 64u32)).unwrap();
    // Stall (as a capture stuck in a hanging call would), then check the watchdog thread
    // reported it while the capture is still open.
    let start = Instant::now();
    while !g.watchdog_fired() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(g.watchdog_fired(), "the watchdog did not fire within 10 s");
    let (graph, report) = g.finish().unwrap();
    let w = report.watchdog.expect("watchdog verdict");
    assert!(w.exceeded);
    assert!(w.fired_after.unwrap() >= Duration::from_millis(50));
    assert_eq!(report.last_op.as_ref().unwrap().op, "Stream::launch");
    assert!(report.to_string().contains("deadline"), "{report}");
    graph.launch(&mut f.stream).unwrap();
});

on_both!(capture_within_its_deadline_is_not_reported, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(64).unwrap();
    let mut g = f.stream.capture_with(CaptureOptions::new().deadline(Duration::from_secs(60))).unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(64), (&x, 64u32)).unwrap();
    let (_graph, report) = g.finish().unwrap();
    let w = report.watchdog.unwrap();
    assert!(!w.exceeded && w.fired_after.is_none());
});
