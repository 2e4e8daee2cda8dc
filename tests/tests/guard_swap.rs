//! Swapping the capturing streams of two live guards (issue #13, item 5):
//! `std::mem::swap(g1.stream(), g2.stream())` compiles, so each guard checks that it still
//! holds the stream of the capture it began. Afterwards neither stream accepts work, both
//! `finish()` calls give `CaptureStreamSwapped` (dropped guards: reports with
//! `stream_swapped`), nothing ran, and both streams are idle and usable again.

use capture_core::{Context, Error, LaunchConfig};
use capture_tests::{on_both, Fixture};

const N: usize = 1024;
fn cfg() -> LaunchConfig {
    LaunchConfig::for_num_elems(N as u32)
}

fn assert_swapped(r: Result<impl Sized, Error>, id: u64) {
    match r {
        Err(Error::CaptureStreamSwapped { capture, .. }) => assert_eq!(capture, id),
        Err(e) => panic!("expected CaptureStreamSwapped for capture #{id}, got {e}"),
        Ok(_) => panic!("expected CaptureStreamSwapped for capture #{id}, got Ok"),
    }
}

on_both!(both_guards_fail_at_finish, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let mut s2 = f.ctx.new_stream().unwrap();
    let x = f.stream.upload_new(&[1.0f32; N]).unwrap();
    let y = s2.upload_new(&[1.0f32; N]).unwrap();
    {
        let mut g1 = f.stream.capture().unwrap();
        let mut g2 = s2.capture().unwrap();
        let (id1, id2) = (g1.id(), g2.id());
        g1.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
        g2.launch(&f.incr, cfg(), (&y, N as u32)).unwrap();
        std::mem::swap(g1.stream(), g2.stream());
        // Work meant for capture 1 would land in capture 2's graph: refused, both ways
        // (the error names the capture whose stream each guard now holds).
        assert_swapped(g1.launch(&f.incr, cfg(), (&x, N as u32)), id2);
        assert_swapped(g2.launch(&f.incr, cfg(), (&y, N as u32)), id1);
        assert_swapped(g1.finish(), id1);
        assert_swapped(g2.finish(), id2);
    }
    // Nothing ran, and both streams work.
    assert!(f.stream.download(&x).unwrap().iter().all(|v| *v == 1.0));
    assert!(s2.download(&y).unwrap().iter().all(|v| *v == 1.0));
    f.stream.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
    s2.launch(&f.incr, cfg(), (&y, N as u32)).unwrap();
    assert!(f.stream.download(&x).unwrap().iter().all(|v| *v == 2.0));
    assert!(s2.download(&y).unwrap().iter().all(|v| *v == 2.0));
    // And capture again normally.
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert!(!report.stream_swapped);
    graph.launch(&mut f.stream).unwrap();
    assert!(f.stream.download(&x).unwrap().iter().all(|v| *v == 3.0));
});

on_both!(both_guards_report_it_when_dropped, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let mut s2 = f.ctx.new_stream().unwrap();
    let x = f.stream.upload_new(&[1.0f32; N]).unwrap();
    let _ = f.ctx.take_abandoned_reports();
    let ids = {
        let mut g1 = f.stream.capture().unwrap();
        let mut g2 = s2.capture().unwrap();
        g1.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
        std::mem::swap(g1.stream(), g2.stream());
        [g1.id(), g2.id()]
    };
    let reports = f.ctx.take_abandoned_reports();
    assert_eq!(reports.len(), 2);
    for id in ids {
        let r = reports.iter().find(|r| r.capture_id == id).expect("a report for each capture");
        assert!(r.stream_swapped && r.abandoned, "capture #{id}: {r}");
        assert!(r.to_string().contains("swapped"), "{r}");
    }
    assert!(f.stream.download(&x).unwrap().iter().all(|v| *v == 1.0));
    f.stream.synchronize().unwrap();
    s2.synchronize().unwrap();
});

on_both!(swapping_in_a_fork_of_the_same_capture_is_caught, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.upload_new(&[1.0f32; N]).unwrap();
    let mut g = f.stream.capture().unwrap();
    let id = g.id();
    g.launch(&f.incr, cfg(), (&x, N as u32)).unwrap();
    let mut side = g.fork().unwrap();
    std::mem::swap(g.stream(), &mut side);
    assert_swapped(g.launch(&f.incr, cfg(), (&x, N as u32)), id);
    drop(side);
    assert_swapped(g.finish(), id);
    f.stream.synchronize().unwrap();
});
