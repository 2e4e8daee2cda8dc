//! The kernels that steer conditional graph nodes (issue #12) ship as PTX with the others and
//! load through the ordinary module path: on a GPU the driver's JIT resolves their
//! `cudaGraphSetConditional` calls (no link step), on the simulated device their signatures
//! parse.

use capture_core::kernels;
use capture_tests::on_both;

on_both!(the_control_kernels_load, |ctx: capture_core::Context| {
    let m = ctx.load_module(kernels::CONTROL_PTX).unwrap();
    for k in [
        "cond_step_below",
        "cond_until_token",
        "cond_from_flag",
        "zero_u32",
        "loop_start",
        "loop_start_flag",
        "add_u32",
        "cond_steps",
        "cond_steps_until",
        "stop_on_token",
        "cond_from_zero_flag",
    ] {
        m.kernel(k).unwrap_or_else(|e| panic!("{k}: {e}"));
    }
    assert!(m.kernel("no_such_kernel").is_err());
});

/// `incr_f32` (with its host implementation on the simulated device) and a stream.
fn incr_and_stream(ctx: &capture_core::Context) -> (capture_core::Kernel, capture_core::Stream) {
    if let Some(sim) = ctx.sim() {
        kernels::register_chain_kernels(sim);
    }
    let incr = ctx.load_module(kernels::CHAIN_PTX).unwrap().kernel("incr_f32").unwrap();
    (incr, ctx.new_stream().unwrap())
}

// One launch runs the whole loop: K steps, K increments, a counter of K, on every replay.
on_both!(a_loop_runs_to_its_bound_in_one_launch, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::LaunchConfig;
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    for k in [1u32, 5, 64] {
        let x = s.alloc_zeros::<f32>(1024).unwrap();
        let (graph, report) = {
            let mut g = s.capture().unwrap();
            g.stream()
                .while_loop(&counter, k, Until::Bound, |body| {
                    body.launch(&incr, LaunchConfig::for_num_elems(1024), (&x, 1024u32))?;
                    body.launch(&incr, LaunchConfig::for_num_elems(1024), (&x, 1024u32))
                })
                .unwrap();
            g.finish().unwrap()
        };
        assert_eq!(report.nodes.conditional, 1, "{report}");
        if ctx.sim().is_some() {
            // The picture draws the loop and what its body holds.
            let dot = graph.to_dot().unwrap();
            assert!(dot.contains("WHILE") && dot.contains("incr_f32, incr_f32, cond_step_below"), "{dot}");
        }
        for replay in 1..=2u32 {
            graph.launch(&mut s).unwrap();
            assert_eq!(counter.steps(&mut s).unwrap(), k);
            let got = s.download(&x).unwrap();
            assert!(got.iter().all(|&v| v == (2 * k * replay) as f32), "K = {k}, replay {replay}: {}", got[0]);
        }
    }
});

// A loop that stops on a token the body writes: here the token counts steps (as f32 bits,
// written by `incr_f32`), and the stop id is the bits of 5.0 — so 5 steps of a bound of
// 100; with a stop id never written, the bound ends it.
on_both!(a_loop_stops_on_its_token_or_its_bound, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::LaunchConfig;
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    for (stop, want) in [(5.0f32.to_bits(), 5u32), (u32::MAX, 100)] {
        let token = s.alloc_zeros::<u32>(1).unwrap();
        let (graph, _) = {
            let mut g = s.capture().unwrap();
            g.stream().memset_async(&token, 0).unwrap();
            g.stream()
                .while_loop(&counter, 100, Until::Token { token: &token, stop }, |body| {
                    body.launch(&incr, LaunchConfig::for_num_elems(1), (&token, 1u32))
                })
                .unwrap();
            g.finish().unwrap()
        };
        graph.launch(&mut s).unwrap();
        assert_eq!(counter.steps(&mut s).unwrap(), want, "stop id {stop:#x}");
        assert_eq!(f32::from_bits(s.download(&token).unwrap()[0]), want as f32);
    }
});

// What a conditional body cannot hold is a typed error, the loop still bounded; and bad
// input to a loop.
on_both!(a_loop_body_refuses_memory_nodes_and_bad_input, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::Error;
    let mut s = ctx.new_stream().unwrap();
    let counter = LoopCounter::new(&mut s).unwrap();
    let other = capture_core::Context::simulated();
    let mut os = other.new_stream().unwrap();
    let foreign = LoopCounter::new(&mut os).unwrap();
    let mut g = s.capture().unwrap();
    // Refused before anything is recorded: the capture goes on.
    let e = g.stream().while_loop(&counter, 0, Until::Bound, |_| Ok(())).unwrap_err();
    assert!(matches!(e, Error::InvalidLoop { .. }), "{e}");
    let e = g.stream().while_loop(&foreign, 4, Until::Bound, |_| Ok(())).unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    // Refused in the body: the loop is recorded half, so the capture is lost.
    let e = g.stream().while_loop(&counter, 4, Until::Bound, |b| b.alloc_async::<f32>(16).map(drop)).unwrap_err();
    assert!(matches!(e, Error::NotInConditionalBody { op: "Stream::alloc_async", .. }), "{e}");
    drop(g);
    // A loop nested in another on the same counter would reset the outer loop's count
    // every iteration, so the outer loop would never reach its bound: refused.
    let mut g = s.capture().unwrap();
    let e = g.stream().while_loop(&counter, 4, Until::Bound, |b| b.while_loop(&counter, 2, Until::Bound, |_| Ok(())));
    assert!(matches!(e, Err(Error::InvalidLoop { ref reason }) if reason.contains("nested")), "{e:?}");
    drop(g);
    // The counter is free again once the loop's recording is over, on the error path too.
    let mut g = s.capture().unwrap();
    g.stream().while_loop(&counter, 2, Until::Bound, |_| Ok(())).unwrap();
    g.stream().while_loop(&counter, 3, Until::Bound, |_| Ok(())).unwrap();
    drop(g);
    s.synchronize().unwrap();
});

// A branch decided on the device from a flag in device memory, alone and nested in a loop;
// the host changes the flag between launches, the graph stays the same.
on_both!(a_branch_runs_on_its_flag_and_nests_in_a_loop, |ctx: capture_core::Context| {
    use capture_core::control::{Branch, LoopCounter, Until};
    use capture_core::LaunchConfig;
    let (incr, mut s) = incr_and_stream(&ctx);
    let branch = Branch::new(&ctx).unwrap();
    let counter = LoopCounter::new(&mut s).unwrap();
    let flag = s.alloc_zeros::<u32>(1).unwrap();
    let x = s.alloc_zeros::<f32>(256).unwrap();
    let cfg = LaunchConfig::for_num_elems(256);
    let (alone, _) = {
        let mut g = s.capture().unwrap();
        g.stream().if_nonzero(&branch, &flag, |then| then.launch(&incr, cfg, (&x, 256u32))).unwrap();
        g.finish().unwrap()
    };
    let (nested, report) = {
        let mut g = s.capture().unwrap();
        g.stream()
            .while_loop(&counter, 4, Until::Bound, |body| {
                body.if_nonzero(&branch, &flag, |then| then.launch(&incr, cfg, (&x, 256u32)))
            })
            .unwrap();
        g.finish().unwrap()
    };
    assert_eq!(report.nodes.conditional, 1, "the IF is inside the WHILE's body: {report}");
    let mut want = 0.0;
    for (f, graph, adds) in [(0u32, &alone, 1.0), (1, &alone, 1.0), (1, &nested, 4.0), (0, &nested, 4.0)] {
        s.upload(&flag, &[f]).unwrap();
        graph.launch(&mut s).unwrap();
        if f != 0 {
            want += adds;
        }
        assert_eq!(s.download(&x).unwrap()[255], want, "flag {f}");
    }
    assert_eq!(counter.steps(&mut s).unwrap(), 4);
});

// A body whose recording is invalidated (it waits on an event recorded before the
// capture): the loop is a capture failure, and the stream is usable after the guard goes.
on_both!(a_body_that_invalidates_fails_the_loop, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    let mut s = ctx.new_stream().unwrap();
    let counter = LoopCounter::new(&mut s).unwrap();
    let before = capture_core::Event::new(&ctx).unwrap();
    s.record_event(&before).unwrap();
    s.synchronize().unwrap();
    let err = {
        let mut g = s.capture().unwrap();
        g.stream().while_loop(&counter, 4, Until::Bound, |body| body.wait_event(&before)).unwrap_err()
    };
    assert!(err.is_capture_failure(), "{err}");
    let y = s.upload_new(&[2.0f32; 8]).unwrap();
    s.synchronize().unwrap();
    assert_eq!(s.download(&y).unwrap()[7], 2.0);
    // Finishing such a capture anyway is a typed error too. On the H100 the driver keeps
    // the capture going but discards the body, and destroying that graph crashed the
    // process (SIGSEGV): the library leaks it instead, and this test ran to its end.
    let err = {
        let mut g = s.capture().unwrap();
        let _ = g.stream().while_loop(&counter, 4, Until::Bound, |body| body.wait_event(&before));
        g.finish().map(drop).unwrap_err()
    };
    assert!(matches!(err, capture_core::Error::CaptureInvalidated { .. }), "{err}");
    s.upload(&y, &[3.0f32; 8]).unwrap();
    assert_eq!(s.download(&y).unwrap()[7], 3.0);
});

// Several steps per WHILE iteration, to a bound: exact for any bound (the remainder runs
// once after the node), on every replay.
on_both!(an_unrolled_loop_runs_exactly_to_its_bound, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::LaunchConfig;
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    for (k, per, remainder) in [(16u32, 8u32, 0u32), (13, 4, 1), (3, 8, 0), (1, 1, 0)] {
        let x = s.alloc_zeros::<f32>(512).unwrap();
        let cfg = LaunchConfig::for_num_elems(512);
        let (graph, report) = {
            let mut g = s.capture().unwrap();
            g.stream()
                .while_loop_unrolled(&counter, k, per, Until::Bound, |body| body.launch(&incr, cfg, (&x, 512u32)))
                .unwrap();
            g.finish().unwrap()
        };
        assert_eq!(report.nodes.conditional, 1, "K {k}, {per} per iteration: {report}");
        // Outside the node: two counter kernels, and the remainder's steps and count.
        let outside = if remainder == 0 { 1 } else { 1 + (k % per) as usize + 1 };
        assert_eq!(report.nodes.kernels, outside, "K {k}, {per} per iteration: {report}");
        for replay in 1..=2u32 {
            graph.launch(&mut s).unwrap();
            assert_eq!(counter.steps(&mut s).unwrap(), k);
            assert_eq!(s.download(&x).unwrap()[511], (k * replay) as f32, "K {k}, {per} per iteration");
        }
    }
});

// Several steps per iteration stopping on a token: the stop is seen at its step (the stop
// flag rises), the rest of that iteration still runs (a body kernel that does not read
// the flag counts them), and the remainder after the node is skipped once stopped.
on_both!(an_unrolled_loop_stops_in_the_iteration_of_its_token, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::LaunchConfig;
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    let one = LaunchConfig::for_num_elems(1);
    // (stop after, bound, per iteration) -> (steps run, stop flag)
    for ((stop, k, per), (ran, raised)) in [
        ((5.0f32, 16u32, 4u32), (8u32, 1u32)),
        ((8.0, 16, 4), (8, 1)),
        ((17.0, 18, 4), (18, 1)),
        ((99.0, 18, 4), (18, 0)),
        ((5.0, 18, 4), (8, 1)),
    ] {
        let token = s.alloc_zeros::<u32>(1).unwrap();
        let (graph, report) = {
            let mut g = s.capture().unwrap();
            g.stream()
                .while_loop_unrolled(&counter, k, per, Until::Token { token: &token, stop: stop.to_bits() }, |b| {
                    b.launch(&incr, one, (&token, 1u32))
                })
                .unwrap();
            g.finish().unwrap()
        };
        let ifs = usize::from(k % per != 0);
        assert_eq!(report.nodes.conditional, 1 + ifs, "{report}");
        for _ in 0..2 {
            s.memset_async(&token, 0).unwrap();
            graph.launch(&mut s).unwrap();
            let case = format!("stop after {stop}, bound {k}, {per} per iteration");
            assert_eq!(counter.steps(&mut s).unwrap(), ran, "{case}");
            assert_eq!(f32::from_bits(s.download(&token).unwrap()[0]), ran as f32, "{case}");
            assert_eq!(s.download(counter.stop_flag()).unwrap()[0], raised, "{case}");
        }
    }
});

// A stop flag raised by the body's own kernel (here `stop_on_token`, launched by the
// test as a user would launch theirs): the loop zeroes it when it starts, tests it after
// each iteration; bad input to an unrolled loop.
on_both!(an_unrolled_loop_stops_on_a_flag_the_body_raises, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::{Error, LaunchConfig};
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    let raise = ctx.load_module(kernels::CONTROL_PTX).unwrap().kernel("stop_on_token").unwrap();
    let one = LaunchConfig::for_num_elems(1);
    let token = s.alloc_zeros::<u32>(1).unwrap();
    let flag = s.upload_new(&[7u32]).unwrap(); // stale: the loop zeroes it
    let stop = 10.0f32.to_bits();
    let (graph, _) = {
        let mut g = s.capture().unwrap();
        g.stream().memset_async(&token, 0).unwrap();
        g.stream()
            .while_loop_unrolled(&counter, 64, 8, Until::Flag { flag: &flag }, |b| {
                b.launch(&incr, one, (&token, 1u32))?;
                b.launch(&raise, LaunchConfig::for_num_elems(1), (&token, stop, &flag))
            })
            .unwrap();
        g.finish().unwrap()
    };
    graph.launch(&mut s).unwrap();
    assert_eq!(counter.steps(&mut s).unwrap(), 16, "the stop at step 10 ends the second iteration");
    assert_eq!(s.download(&flag).unwrap()[0], 1);

    let other = capture_core::Context::simulated();
    let mut os = other.new_stream().unwrap();
    let foreign = os.alloc_zeros::<u32>(1).unwrap();
    let mut g = s.capture().unwrap();
    let e = g.stream().while_loop_unrolled(&counter, 8, 0, Until::Bound, |_| Ok(())).unwrap_err();
    assert!(matches!(e, Error::InvalidLoop { .. }), "{e}");
    let e = g.stream().while_loop_unrolled(&counter, 8, 2, Until::Flag { flag: &foreign }, |_| Ok(())).unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { what: "stop flag", .. }), "{e}");
    let e = g.stream().while_loop_unrolled(&counter, u32::MAX, 2, Until::Bound, |_| Ok(())).unwrap_err();
    assert!(matches!(e, Error::InvalidLoop { .. }), "{e}");
    drop(g);
    s.synchronize().unwrap();
});

// A two-way branch (IF with an ELSE body) decided on the device.
on_both!(a_two_way_branch_runs_one_body_or_the_other, |ctx: capture_core::Context| {
    use capture_core::control::Branch;
    use capture_core::LaunchConfig;
    let (incr, mut s) = incr_and_stream(&ctx);
    let branch = Branch::new(&ctx).unwrap();
    let flag = s.alloc_zeros::<u32>(1).unwrap();
    let (yes, no) = (s.alloc_zeros::<f32>(64).unwrap(), s.alloc_zeros::<f32>(64).unwrap());
    let cfg = LaunchConfig::for_num_elems(64);
    let (graph, report) = {
        let mut g = s.capture().unwrap();
        g.stream()
            .if_else(&branch, &flag, |t| t.launch(&incr, cfg, (&yes, 64u32)), |e| e.launch(&incr, cfg, (&no, 64u32)))
            .unwrap();
        g.finish().unwrap()
    };
    assert_eq!(report.nodes.conditional, 1, "{report}");
    for (f, want) in [(1u32, (1.0, 0.0)), (0, (1.0, 1.0)), (5, (2.0, 1.0))] {
        s.upload(&flag, &[f]).unwrap();
        graph.launch(&mut s).unwrap();
        assert_eq!((s.download(&yes).unwrap()[63], s.download(&no).unwrap()[63]), want, "flag {f}");
    }
});

// A body that panics: the panic goes on to the caller, and nothing is left behind — the
// body's own stream is not left capturing (it goes back to the context's spares and is
// used again), the stream is idle and usable, and the next loop records and runs.
on_both!(a_body_that_panics_leaves_nothing_capturing, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::LaunchConfig;
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    let x = s.alloc_zeros::<f32>(64).unwrap();
    let cfg = LaunchConfig::for_num_elems(64);
    for round in 0..2 {
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut g = s.capture().unwrap();
            g.stream().while_loop(&counter, 4, Until::Bound, |body| {
                body.launch(&incr, cfg, (&x, 64u32))?;
                panic!("a body that panics")
            })
        }));
        assert!(panicked.is_err(), "round {round}: the body never ran: {panicked:?}");
    }
    let (graph, _) = {
        let mut g = s.capture().unwrap();
        g.stream().while_loop(&counter, 3, Until::Bound, |body| body.launch(&incr, cfg, (&x, 64u32))).unwrap();
        g.finish().unwrap()
    };
    graph.launch(&mut s).unwrap();
    assert_eq!(s.download(&x).unwrap()[63], 3.0);
});

// A loop nested in another loop's body (each with its counter of its own) runs in full in
// every iteration of the outer one: its condition is set again each time the graph reaches
// it, not only at the launch.
on_both!(a_loop_nests_in_a_loop, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::LaunchConfig;
    let (incr, mut s) = incr_and_stream(&ctx);
    let (outer, inner) = (LoopCounter::new(&mut s).unwrap(), LoopCounter::new(&mut s).unwrap());
    let x = s.alloc_zeros::<f32>(128).unwrap();
    let cfg = LaunchConfig::for_num_elems(128);
    let (graph, report) = {
        let mut g = s.capture().unwrap();
        g.stream()
            .while_loop(&outer, 3, Until::Bound, |o| {
                o.while_loop_unrolled(&inner, 5, 2, Until::Bound, |i| i.launch(&incr, cfg, (&x, 128u32)))
            })
            .unwrap();
        g.finish().unwrap()
    };
    assert_eq!(report.nodes.conditional, 1, "{report}");
    for replay in 1..=2u32 {
        graph.launch(&mut s).unwrap();
        assert_eq!((outer.steps(&mut s).unwrap(), inner.steps(&mut s).unwrap()), (3, 5));
        assert_eq!(s.download(&x).unwrap()[127], (15 * replay) as f32, "replay {replay}");
    }
});

// A body that fails leaves a loop the graph must not run (a WHILE body without its test
// would never end): `finish` refuses the capture, and the stream stays usable.
on_both!(a_capture_whose_loop_body_failed_does_not_finish, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::Error;
    let mut s = ctx.new_stream().unwrap();
    let counter = LoopCounter::new(&mut s).unwrap();
    let err = {
        let mut g = s.capture().unwrap();
        let e = g.stream().while_loop(&counter, 4, Until::Bound, |b| b.alloc_async::<f32>(8).map(drop));
        assert!(matches!(e, Err(Error::NotInConditionalBody { .. })), "{e:?}");
        g.finish().map(drop).unwrap_err()
    };
    assert!(matches!(err, Error::CaptureInvalidated { .. }), "{err}");
    let y = s.upload_new(&[1u32, 2]).unwrap();
    assert_eq!(s.download(&y).unwrap(), [1, 2]);
});

// A body that swaps its stream for another capture's: the loop's test still goes into the
// loop, both captures are discarded, and the swapped-out streams refuse work.
on_both!(a_body_that_swaps_its_stream_is_refused, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::{Error, LaunchConfig};
    let (incr, mut s1) = incr_and_stream(&ctx);
    let mut s2 = ctx.new_stream().unwrap();
    let counter = LoopCounter::new(&mut s1).unwrap();
    let x = s1.alloc_zeros::<f32>(32).unwrap();
    let cfg = LaunchConfig::for_num_elems(32);
    let mut g2 =
        s2.capture_with(capture_core::CaptureOptions::default().mode(capture_core::CaptureMode::Relaxed)).unwrap();
    let mut other = g2.stream().fork().unwrap();
    let mut g1 =
        s1.capture_with(capture_core::CaptureOptions::default().mode(capture_core::CaptureMode::Relaxed)).unwrap();
    let e = g1.stream().while_loop(&counter, 4, Until::Bound, |b| {
        std::mem::swap(b, &mut other);
        Ok(())
    });
    assert!(matches!(e, Err(Error::InvalidLoop { .. })), "{e:?}");
    let e = other.launch(&incr, cfg, (&x, 32u32));
    assert!(e.is_err(), "the body's stream, smuggled out, refuses work");
    drop(other);
    assert!(g1.finish().is_err(), "the capture holding the loop is discarded");
    assert!(g2.finish().is_err(), "the capture whose stream was swapped in is discarded");
    s1.synchronize().unwrap();
    s2.synchronize().unwrap();
});

// Bad input for an unrolled loop, and the stop flag of a loop whose steps per iteration
// come down to 1: lowered at the start like any other, so gated kernels run.
on_both!(an_unrolled_loop_refuses_bad_input_and_keeps_its_flag, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until, MAX_PER_ITERATION};
    use capture_core::{Error, LaunchConfig};
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    {
        let mut g = s.capture().unwrap();
        let e = g.stream().while_loop_unrolled(&counter, 1 << 20, MAX_PER_ITERATION + 1, Until::Bound, |_| Ok(()));
        assert!(matches!(e, Err(Error::InvalidLoop { .. })), "{e:?}");
        // One step per iteration adds nothing to the bound: the whole u32 range is fine.
        g.stream().while_loop(&counter, u32::MAX, Until::Bound, |_| Ok(())).unwrap();
    }
    s.upload(counter.stop_flag(), &[1]).unwrap(); // stale, as an earlier stop leaves it
    let token = s.alloc_zeros::<u32>(1).unwrap();
    let one = LaunchConfig::for_num_elems(1);
    let (graph, _) = {
        let mut g = s.capture().unwrap();
        g.stream()
            .while_loop_unrolled(&counter, 1, 8, Until::Token { token: &token, stop: 1.0f32.to_bits() }, |b| {
                b.launch(&incr, one, (&token, 1u32))
            })
            .unwrap();
        g.finish().unwrap()
    };
    graph.launch(&mut s).unwrap();
    assert_eq!(counter.steps(&mut s).unwrap(), 1);
    assert_eq!(s.download(counter.stop_flag()).unwrap()[0], 1, "raised at the stop token, one step per iteration too");
    s.upload(counter.stop_flag(), &[1]).unwrap();
    s.memset_async(&token, 0).unwrap();
    let (graph, _) = {
        let mut g = s.capture().unwrap();
        g.stream()
            .while_loop(&counter, 3, Until::Token { token: &token, stop: u32::MAX }, |b| {
                b.launch(&incr, one, (&token, 1u32))
            })
            .unwrap();
        g.finish().unwrap()
    };
    graph.launch(&mut s).unwrap();
    assert_eq!(s.download(counter.stop_flag()).unwrap()[0], 0, "lowered when the loop starts");
    assert_eq!(counter.steps(&mut s).unwrap(), 3);
});

// A graph with a loop, captured again with another bound: re-instantiated, never updated
// in place (new condition handles), and runs the new bound.
on_both!(a_loop_graph_is_reinstantiated_on_update, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::{GraphUpdate, LaunchConfig};
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    let x = s.alloc_zeros::<f32>(16).unwrap();
    let cfg = LaunchConfig::for_num_elems(16);
    let (mut graph, _) = {
        let mut g = s.capture().unwrap();
        g.stream().while_loop(&counter, 2, Until::Bound, |b| b.launch(&incr, cfg, (&x, 16u32))).unwrap();
        g.finish().unwrap()
    };
    let mut g = s.capture().unwrap();
    g.stream().while_loop(&counter, 5, Until::Bound, |b| b.launch(&incr, cfg, (&x, 16u32))).unwrap();
    let (how, _) = g.finish_update(&mut graph).unwrap();
    assert_eq!(how, GraphUpdate::Reinstantiated);
    graph.launch(&mut s).unwrap();
    assert_eq!(counter.steps(&mut s).unwrap(), 5);
    assert_eq!(s.download(&x).unwrap()[15], 5.0);
});

// After a body fails, the capture is lost: its streams refuse work with a typed error —
// a fork made inside the body and kept past it included (its recording has ended, so
// its work would otherwise run eagerly).
on_both!(a_lost_capture_refuses_work_on_every_stream, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::{Error, LaunchConfig};
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    let x = s.alloc_zeros::<f32>(8).unwrap();
    let cfg = LaunchConfig::for_num_elems(8);
    let mut g = s.capture().unwrap();
    let mut kept = None;
    let e = g.stream().while_loop(&counter, 2, Until::Bound, |b| {
        kept = Some(b.fork()?); // never joined: the library joins it and fails the body
        Ok(())
    });
    // (On the H100 the driver ended such a body without an error: the library checks.)
    assert!(matches!(e, Err(Error::UnjoinedFork { .. })), "{e:?}");
    let mut fork = kept.expect("the body ran");
    let e = fork.launch(&incr, cfg, (&x, 8u32)).unwrap_err();
    assert!(matches!(e, Error::CaptureLost { .. }), "{e}");
    let e = g.stream().launch(&incr, cfg, (&x, 8u32)).unwrap_err();
    assert!(matches!(e, Error::CaptureLost { .. }), "{e}");
    drop(fork);
    assert!(matches!(g.finish().map(drop), Err(Error::CaptureInvalidated { .. })));
    assert_eq!(s.download(&x).unwrap()[7], 0.0, "nothing ran eagerly");
});

// A remainder step that fails loses the capture like a body step; a flag loop's bound
// leaves room for the step count; a nested loop cannot share its enclosing loop's flag.
on_both!(a_loop_refuses_a_short_remainder_a_wrapping_bound_and_a_shared_flag, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::{Error, LaunchConfig};
    let (incr, mut s) = incr_and_stream(&ctx);
    let (outer, inner) = (LoopCounter::new(&mut s).unwrap(), LoopCounter::new(&mut s).unwrap());
    let flag = s.alloc_zeros::<u32>(1).unwrap();
    let x = s.alloc_zeros::<f32>(8).unwrap();
    let cfg = LaunchConfig::for_num_elems(8);
    {
        let mut g = s.capture().unwrap();
        let mut calls = 0;
        // 10 steps, 4 per iteration: calls 1-4 are the node's body, 5 and 6 the remainder.
        let e = g.stream().while_loop_unrolled(&outer, 10, 4, Until::Bound, |b| {
            calls += 1;
            if calls == 5 {
                b.launch(&incr, cfg, (&x,)) // one argument short: refused before the driver
            } else {
                b.launch(&incr, cfg, (&x, 8u32))
            }
        });
        assert!(e.is_err(), "{e:?}");
        assert!(matches!(g.finish().map(drop), Err(Error::CaptureInvalidated { .. })), "8 of 10 steps: not finished");
    }
    let mut g = s.capture().unwrap();
    let e = g.stream().while_loop(&outer, u32::MAX, Until::Flag { flag: &flag }, |_| Ok(()));
    assert!(matches!(e, Err(Error::InvalidLoop { .. })), "{e:?}");
    let e = g.stream().while_loop(&outer, 4, Until::Flag { flag: &flag }, |b| {
        b.while_loop(&inner, 2, Until::Flag { flag: &flag }, |_| Ok(()))
    });
    assert!(matches!(e, Err(Error::InvalidLoop { ref reason }) if reason.contains("nested")), "{e:?}");
});

// A body may fork work onto another stream and join it back (parallel branches inside
// each step); both branches run in every iteration.
on_both!(a_loop_body_forks_and_joins, |ctx: capture_core::Context| {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::LaunchConfig;
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    let (x, y) = (s.alloc_zeros::<f32>(64).unwrap(), s.alloc_zeros::<f32>(64).unwrap());
    let cfg = LaunchConfig::for_num_elems(64);
    let (graph, _) = {
        let mut g = s.capture().unwrap();
        g.stream()
            .while_loop(&counter, 3, Until::Bound, |b| {
                let mut side = b.fork()?;
                side.launch(&incr, cfg, (&y, 64u32))?;
                b.launch(&incr, cfg, (&x, 64u32))?;
                b.join(side)
            })
            .unwrap();
        g.finish().unwrap()
    };
    graph.launch(&mut s).unwrap();
    assert_eq!((s.download(&x).unwrap()[63], s.download(&y).unwrap()[63]), (3.0, 3.0));
});

/// `depth` branches on `flag`, each nested in the one before, each body adding 1 to `x`.
fn nested_branches<'a>(
    s: &mut capture_core::Stream<capture_core::Capturing<'a>>,
    branch: &'a capture_core::control::Branch,
    flag: &'a capture_core::DeviceBuffer<u32>,
    incr: &'a capture_core::Kernel,
    x: &'a capture_core::DeviceBuffer<f32>,
    depth: u32,
) -> capture_core::Result<()> {
    s.if_nonzero(branch, flag, |b| {
        b.launch(incr, capture_core::LaunchConfig::for_num_elems(x.len() as u32), (x, x.len() as u32))?;
        match depth {
            0 | 1 => Ok(()),
            _ => nested_branches(b, branch, flag, incr, x, depth - 1),
        }
    })
}

// Each body of a loop or branch is recorded on a spare stream of the context, which goes
// back to the spares as soon as the body's recording ends: 50 loops and branches one after
// another in a capture take one stream, branches nested 8 deep take 8, and the captures
// after them — a body that fails included — take no more. (Issue #12: a body's stream kept
// out of the spares would make the context's streams pile up, one per body.)
on_both!(loop_and_branch_bodies_give_their_streams_back, |ctx: capture_core::Context| {
    use capture_core::control::{Branch, LoopCounter, Until};
    use capture_core::{Error, LaunchConfig};
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    let branch = Branch::new(&ctx).unwrap();
    let flag = s.upload_new(&[1u32]).unwrap();
    let token = s.alloc_zeros::<u32>(1).unwrap(); // never the stop id: token loops run to their bound
    let x = s.alloc_zeros::<f32>(32).unwrap();
    let cfg = LaunchConfig::for_num_elems(32);
    // The simulated device counts its streams; a GPU checks the work only.
    let streams = || ctx.sim().map(|sim| sim.live_streams());
    let base = streams();
    let mut want = 0.0;
    let mut settled = None;
    for round in 0..4 {
        // 50 loops and branches one after another (74 bodies: an IF/ELSE has two, and so has
        // an unrolled token loop with a remainder), each loop step and taken branch adding 1
        // to `x`.
        let (graph, report) = {
            let mut g = s.capture().unwrap();
            for i in 0..50 {
                let until = Until::Token { token: &token, stop: u32::MAX };
                match i % 4 {
                    0 => g.stream().while_loop(&counter, 2, Until::Bound, |b| b.launch(&incr, cfg, (&x, 32u32))),
                    1 => g.stream().if_nonzero(&branch, &flag, |b| b.launch(&incr, cfg, (&x, 32u32))),
                    2 => g.stream().if_else(&branch, &flag, |b| b.launch(&incr, cfg, (&x, 32u32)), |_| Ok(())),
                    _ => g.stream().while_loop_unrolled(&counter, 3, 2, until, |b| b.launch(&incr, cfg, (&x, 32u32))),
                }
                .unwrap_or_else(|e| panic!("round {round}, loop or branch {i}: {e}"));
            }
            g.finish().unwrap()
        };
        assert_eq!(report.nodes.conditional, 62, "{report}");
        graph.launch(&mut s).unwrap();
        want += 87.0; // 13 loops of 2 steps, 25 branches taken, 12 loops of 3 steps
        assert_eq!(s.download(&x).unwrap()[31], want, "round {round}");
        drop(graph);
        if let (Some(base), Some(now), 0) = (base, streams(), round) {
            assert!(now <= base + 1, "50 loops and branches in one capture left {} streams more", now - base);
        }
        // Branches nested 8 deep: 8 bodies open at once, so 8 streams, no more.
        let (graph, _) = {
            let mut g = s.capture().unwrap();
            nested_branches(g.stream(), &branch, &flag, &incr, &x, 8).unwrap();
            g.finish().unwrap()
        };
        graph.launch(&mut s).unwrap();
        want += 8.0;
        assert_eq!(s.download(&x).unwrap()[31], want, "round {round}");
        drop(graph);
        // A body that fails: the capture is lost, its body's stream goes back all the same.
        {
            let mut g = s.capture().unwrap();
            let e = g.stream().while_loop(&counter, 2, Until::Bound, |b| b.alloc_async::<f32>(4).map(drop));
            assert!(matches!(e, Err(Error::NotInConditionalBody { .. })), "{e:?}");
        }
        if let (Some(base), Some(now)) = (base, streams()) {
            assert!(now <= base + 8, "round {round}: branches nested 8 deep left {} streams more", now - base);
            // After the first round, the spares are reused: the count holds still.
            assert_eq!(*settled.get_or_insert(now), now, "round {round}: the context's streams grew");
        }
    }
});

// `Context::end_dangling_captures` called from inside a loop's body while it is recorded
// (the documented boundary: it cannot tell a live guard from a leaked one). The capture
// ends, but the graph the body is recording into is not destroyed under the body (on a GPU
// that frees the body graph the body's stream still records into): it is leaked, and
// logged. Every later operation of the capture, in the body and after it, is
// `CaptureEnded` and runs nowhere; the stream is idle and captures loops again.
// Simulated only: what it checks is the simulated device's count of live graphs.
#[test]
fn sim_ending_dangling_captures_in_a_loop_body_keeps_the_graph_it_records_into() {
    use capture_core::control::{LoopCounter, Until};
    use capture_core::{Error, LaunchConfig};
    let ctx = capture_tests::sim();
    let sim = ctx.sim().unwrap();
    let (incr, mut s) = incr_and_stream(&ctx);
    let counter = LoopCounter::new(&mut s).unwrap();
    let x = s.alloc_zeros::<f32>(16).unwrap();
    let cfg = LaunchConfig::for_num_elems(16);
    let mut g = s.capture().unwrap();
    let id = g.id();
    g.stream().launch(&incr, cfg, (&x, 16u32)).unwrap();
    let mut inside = None;
    let e = g.stream().while_loop(&counter, 4, Until::Bound, |body| {
        body.launch(&incr, cfg, (&x, 16u32))?;
        let handles = sim.live_handles();
        let ended = ctx.end_dangling_captures();
        let kept = sim.live_handles() as i64 - handles as i64; // the capture's graph, kept
        inside = Some((ended, kept, body.launch(&incr, cfg, (&x, 16u32))));
        Ok(())
    });
    let (ended, kept, launched) = inside.expect("the body ran");
    assert_eq!(ended, vec![id]);
    assert_eq!(kept, 1, "the graph the body records into was destroyed under it");
    assert!(matches!(launched, Err(Error::CaptureEnded { capture, .. }) if capture == id), "{launched:?}");
    // The loop's test, recorded after the body, is refused the same way: so is the loop.
    assert!(matches!(e, Err(Error::CaptureEnded { capture, .. }) if capture == id), "{e:?}");
    let e = g.stream().launch(&incr, cfg, (&x, 16u32));
    assert!(matches!(e, Err(Error::CaptureEnded { capture, .. }) if capture == id), "{e:?}");
    let e = g.finish().map(drop);
    assert!(matches!(e, Err(Error::CaptureEnded { capture, .. }) if capture == id), "{e:?}");
    assert!(ctx.take_abandoned_reports().is_empty(), "an ended capture is not also abandoned");
    assert_eq!(ctx.end_dangling_captures(), Vec::<u64>::new(), "a second call finds nothing");
    // Nothing ran eagerly, and the stream (and the body's, back in the spares) work again.
    assert_eq!(s.download(&x).unwrap(), [0.0; 16]);
    s.launch(&incr, cfg, (&x, 16u32)).unwrap();
    let (graph, _) = {
        let mut g = s.capture().unwrap();
        g.stream().while_loop(&counter, 4, Until::Bound, |b| b.launch(&incr, cfg, (&x, 16u32))).unwrap();
        g.finish().unwrap()
    };
    graph.launch(&mut s).unwrap();
    assert_eq!(counter.steps(&mut s).unwrap(), 4);
    assert_eq!(s.download(&x).unwrap(), [5.0; 16]);
}

/// What a loop holding a two-way branch and an unrolled token loop needs.
struct Nest<'k> {
    outer: &'k capture_core::control::LoopCounter,
    inner: &'k capture_core::control::LoopCounter,
    branch: &'k capture_core::control::Branch,
    flag: &'k capture_core::DeviceBuffer<u32>,
    token: &'k capture_core::DeviceBuffer<u32>,
    incr: &'k capture_core::Kernel,
    x: &'k capture_core::DeviceBuffer<f32>,
}

/// A loop of 3 steps holding a two-way branch and an unrolled token loop with a remainder:
/// four condition handles, three of them made in bodies.
fn record_nest<'a>(
    g: &mut capture_core::Stream<capture_core::Capturing<'a>>,
    n: &Nest<'a>,
) -> capture_core::Result<()> {
    use capture_core::control::Until;
    let (incr, x, cfg) = (n.incr, n.x, capture_core::LaunchConfig::for_num_elems(64));
    g.while_loop(n.outer, 3, Until::Bound, |o| {
        o.if_else(n.branch, n.flag, |t| t.launch(incr, cfg, (x, 64u32)), |_| Ok(()))?;
        o.while_loop_unrolled(n.inner, 5, 2, Until::Token { token: n.token, stop: u32::MAX }, |i| {
            i.launch(incr, cfg, (x, 64u32))
        })
    })
}

/// What leaked condition handles would show: on the simulated device, its live
/// allocations (each handle is a cell of its memory); on a GPU, device memory in use.
fn live_memory(ctx: &capture_core::Context) -> usize {
    match ctx.sim() {
        Some(sim) => sim.live_allocations(),
        None => capture_tests::mem_in_use(ctx),
    }
}

// Each loop and branch makes a condition handle (on the simulated device, a 4-byte cell of
// its memory). It lives while a graph or executable graph holding its node does, and goes
// with the last of them: launched and dropped, abandoned, lost to a failed body,
// re-instantiated by an update, or (simulated) invalidated in a nested body — memory in
// use comes back to where it was. (Issue #12: the simulated device never freed them.)
on_both!(condition_handles_go_with_their_graphs, |ctx: capture_core::Context| {
    use capture_core::control::{Branch, LoopCounter, Until};
    use capture_core::{Error, LaunchConfig};
    let (incr, mut s) = incr_and_stream(&ctx);
    let (outer, inner) = (LoopCounter::new(&mut s).unwrap(), LoopCounter::new(&mut s).unwrap());
    let branch = Branch::new(&ctx).unwrap();
    let flag = s.upload_new(&[1u32]).unwrap();
    let token = s.alloc_zeros::<u32>(1).unwrap();
    let x = s.alloc_zeros::<f32>(64).unwrap();
    let cfg = LaunchConfig::for_num_elems(64);
    let before = capture_core::Event::new(&ctx).unwrap();
    s.record_event(&before).unwrap();
    s.synchronize().unwrap();
    let n = Nest { outer: &outer, inner: &inner, branch: &branch, flag: &flag, token: &token, incr: &incr, x: &x };
    let round = |s: &mut capture_core::Stream| {
        // Launched twice and dropped (the executable graph goes first, then the graph).
        let (graph, report) = {
            let mut g = s.capture().unwrap();
            record_nest(g.stream(), &n).unwrap();
            g.finish().unwrap()
        };
        assert_eq!(report.nodes.conditional, 1, "{report}");
        graph.launch(s).unwrap();
        graph.launch(s).unwrap();
        assert_eq!(inner.steps(s).unwrap(), 5);
        drop(graph);
        // Abandoned: the guard dropped without `finish`.
        {
            let mut g = s.capture().unwrap();
            record_nest(g.stream(), &n).unwrap();
        }
        // Lost: a body fails after a branch was recorded in it.
        {
            let mut g = s.capture().unwrap();
            let e = g.stream().while_loop(&outer, 2, Until::Bound, |b| {
                b.if_nonzero(&branch, &flag, |t| t.launch(&incr, cfg, (&x, 64u32)))?;
                b.alloc_async::<f32>(4).map(drop)
            });
            assert!(matches!(e, Err(Error::NotInConditionalBody { .. })), "{e:?}");
            assert!(g.finish().is_err());
        }
        // Re-instantiated on update: the old graph and executable graph go.
        let (mut graph, _) = {
            let mut g = s.capture().unwrap();
            record_nest(g.stream(), &n).unwrap();
            g.finish().unwrap()
        };
        let mut g = s.capture().unwrap();
        record_nest(g.stream(), &n).unwrap();
        g.finish_update(&mut graph).unwrap();
        graph.launch(s).unwrap();
        drop(graph);
        // Invalidated in a body nested in a body (simulated only: on a GPU the driver keeps
        // the capture going, and its graph is leaked on purpose, as in
        // `a_body_that_invalidates_fails_the_loop`).
        if ctx.sim().is_some() {
            let mut g = s.capture().unwrap();
            let e = g
                .stream()
                .while_loop(&outer, 2, Until::Bound, |b| b.if_nonzero(&branch, &flag, |t| t.wait_event(&before)));
            assert!(e.is_err(), "{e:?}");
            assert!(g.finish().is_err());
        }
        s.synchronize().unwrap();
        let _ = ctx.take_abandoned_reports();
    };
    round(&mut s); // warm up (a GPU's pools)
    let start = live_memory(&ctx);
    for r in 0..3 {
        round(&mut s);
        let now = live_memory(&ctx);
        assert_eq!(now, start, "round {r}: {} more live allocations (or bytes on a GPU)", now as i64 - start as i64);
    }
});
