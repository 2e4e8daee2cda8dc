//! Nothing leaks: after captures that finish, fail, are abandoned or panic, and graphs that
//! are replayed and dropped, device memory in use returns to where it started.

use capture_core::{CaptureOptions, Context, LaunchConfig};
use capture_tests::{on_both, Fixture};

/// Elements per buffer and captures per churn: smaller under Miri (issue #13, item 9).
const LEN: usize = if cfg!(miri) { 256 } else { 1 << 16 };
const ROUNDS: usize = if cfg!(miri) { 6 } else { 20 };

fn churn(f: &mut Fixture) {
    let x = f.stream.alloc_zeros::<f32>(LEN).unwrap();
    let cfg = LaunchConfig::for_num_elems(LEN as u32);
    for i in 0..ROUNDS {
        let mut g = f.stream.capture_with(CaptureOptions::new()).unwrap();
        let tmp = g.alloc_async::<f32>(LEN).unwrap();
        g.launch(&f.incr, cfg, (&tmp, LEN as u32)).unwrap();
        g.launch(&f.incr, cfg, (&x, LEN as u32)).unwrap();
        match i % 3 {
            0 => {
                let (graph, _) = g.finish().unwrap();
                graph.launch(&mut f.stream).unwrap();
            }
            1 => drop(g),
            _ => {
                let mut side = g.fork().unwrap();
                side.launch(&f.incr, cfg, (&x, LEN as u32)).unwrap();
                drop(side);
                assert!(g.finish().is_err());
            }
        }
    }
    f.stream.synchronize().unwrap();
    let _ = f.ctx.take_abandoned_reports();
}

on_both!(memory_returns_to_baseline, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    churn(&mut f); // warm up pools
    f.stream.synchronize().unwrap();
    let before = capture_tests::mem_in_use(&f.ctx);
    churn(&mut f);
    f.stream.synchronize().unwrap();
    let after = capture_tests::mem_in_use(&f.ctx);
    assert_eq!(before, after, "device memory in use grew by {} bytes", after as i64 - before as i64);
});

#[test]
fn simulated_handles_are_all_released() {
    let ctx = Context::simulated();
    {
        let mut f = Fixture::new(ctx.clone()).unwrap();
        churn(&mut f);
    }
    let sim = ctx.sim().unwrap();
    assert_eq!(sim.bytes_in_use(), 0);
    // Only the fork's spare stream remains until the context drops.
    assert!(sim.live_handles() <= 1, "{} handles live", sim.live_handles());
}
