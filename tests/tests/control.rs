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
        "zero2_u32",
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
    let e = g.stream().while_loop(&counter, 4, Until::Bound, |b| b.alloc_async::<f32>(16).map(drop)).unwrap_err();
    assert!(matches!(e, Error::NotInConditionalBody { op: "Stream::alloc_async", .. }), "{e}");
    let e = g.stream().while_loop(&counter, 0, Until::Bound, |_| Ok(())).unwrap_err();
    assert!(matches!(e, Error::InvalidLoop { .. }), "{e}");
    let e = g.stream().while_loop(&foreign, 4, Until::Bound, |_| Ok(())).unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
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
