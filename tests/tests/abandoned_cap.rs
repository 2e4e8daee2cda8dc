//! Abandoned-capture reports are capped, and the cap is visible (issue #13, item 7): of 200
//! abandoned captures the context keeps the newest `ABANDONED_REPORTS_KEPT` and counts the
//! rest in `abandoned_reports_dropped()`.

use capture_core::{Context, LaunchConfig};
use capture_tests::{on_both, Fixture};

on_both!(two_hundred_abandoned_captures, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(256).unwrap();
    let kept = Context::ABANDONED_REPORTS_KEPT;
    assert_eq!(kept, 64);
    let _ = f.ctx.take_abandoned_reports();
    let before = f.ctx.abandoned_reports_dropped();
    let mut ids = Vec::new();
    for _ in 0..200 {
        let mut g = f.stream.capture().unwrap();
        g.launch(&f.incr, LaunchConfig::for_num_elems(256), (&x, 256u32)).unwrap();
        ids.push(g.id());
        drop(g);
    }
    let reports = f.ctx.take_abandoned_reports();
    assert_eq!(reports.len(), kept);
    assert_eq!(f.ctx.abandoned_reports_dropped() - before, (200 - kept) as u64);
    // The newest are kept, oldest first.
    let got: Vec<u64> = reports.iter().map(|r| r.capture_id).collect();
    assert_eq!(got, ids[200 - kept..]);
    assert!(reports.iter().all(|r| r.abandoned));
    // Taking does not reset the count; within the cap nothing more is dropped.
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(256), (&x, 256u32)).unwrap();
    drop(g);
    assert_eq!(f.ctx.take_abandoned_reports().len(), 1);
    assert_eq!(f.ctx.abandoned_reports_dropped() - before, (200 - kept) as u64);
});
