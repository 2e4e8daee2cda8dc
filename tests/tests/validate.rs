//! Replay validation (issue #9, part 4): `ReplayCheck` replays a graph and runs the same
//! work eagerly on fresh input sets, and names the first divergence. Planted bugs prove it
//! catches a host value baked in at capture time: a position passed to a kernel by value,
//! and a small upload served once.

use capture_core::validate::{Outputs, ReplayCheck, Scalar, Tolerance};
use capture_core::{
    CaptureMode, CaptureOptions, Context, DeviceBuffer, DeviceScalar, Error, Kernel, LaunchConfig, Records, Result,
    Stream,
};
use capture_tests::{on_both, Fixture};

const N: usize = 1024;
const CFG_N: u32 = N as u32;

/// Fresh input set `i`: differs from every other set and from the zeros present at capture.
fn input(i: usize) -> Vec<f32> {
    (0..N).map(|j| (j % 97) as f32 * 0.25 + i as f32 * 3.0 + 1.0).collect()
}

/// The position of input set `i` (never the capture-time position, 7).
fn position(i: usize) -> u32 {
    11 + 5 * i as u32
}

const CAPTURE_POS: u32 = 7;

/// `y = x + *pos`, the position read from device memory at run time: correct under replay.
fn step_by_address<'a, S: Records<'a>>(
    s: &mut Stream<S>,
    add_ptr: &'a Kernel,
    x: &'a DeviceBuffer<f32>,
    y: &'a DeviceBuffer<f32>,
    pos: &'a DeviceScalar<u32>,
) -> Result<()> {
    s.copy_async(y, x)?;
    s.launch(add_ptr, LaunchConfig::for_num_elems(CFG_N), (y, pos, CFG_N))
}

/// `y = x + pos`, the position passed by value: a capture freezes it (the planted bug).
fn step_by_value<'a, S: Records<'a>>(
    s: &mut Stream<S>,
    fill: &'a Kernel,
    add: &'a Kernel,
    x: &'a DeviceBuffer<f32>,
    tmp: &'a DeviceBuffer<f32>,
    y: &'a DeviceBuffer<f32>,
    pos: u32,
) -> Result<()> {
    let cfg = LaunchConfig::for_num_elems(CFG_N);
    s.launch(fill, cfg, (tmp, pos as f32, CFG_N))?;
    s.launch(add, cfg, (x, tmp, y, CFG_N))
}

// (a) A correct graph passes on every input set, float and integer outputs alike.
on_both!(correct_graph_passes_on_fresh_inputs, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let pos = DeviceScalar::new(&mut f.stream, CAPTURE_POS).unwrap();
    let mut g = f.stream.capture().unwrap();
    step_by_address(&mut g, &f.add_ptr, &x, &y, &pos).unwrap();
    let (graph, _) = g.finish().unwrap();

    let report = ReplayCheck::new(8)
        .tolerance(Tolerance::EXACT)
        .run(
            &graph,
            &mut f.stream,
            |i, s| {
                s.upload(&x, &input(i))?;
                pos.set(s, position(i))
            },
            |_, s| step_by_address(s, &f.add_ptr, &x, &y, &pos),
            |s| Ok(Outputs::new().with("y", s.download(&y)?).with("pos", s.download(pos.buffer())?)),
        )
        .unwrap();
    assert_eq!(report.input_sets, 8);
    assert_eq!(report.outputs, 2);
    assert_eq!(report.elements, 8 * (N + 1));
    assert_eq!(report.max_abs_diff, 0.0, "the same kernels give bit-equal results");
    assert!(report.to_string().contains("matched the eager run on 8 input sets"), "{report}");
    // The graph really ran with the last set.
    assert_eq!(f.stream.download(&y).unwrap()[1], input(7)[1] + position(7) as f32);
});

// (b) A position folded into a kernel argument at capture time is caught, naming the
// output, the input set, the element, and both values.
on_both!(stale_position_in_kernel_argument_is_caught, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let fill = f.module.kernel("fill_f32").unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let tmp = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let mut g = f.stream.capture().unwrap();
    step_by_value(&mut g, &fill, &f.add, &x, &tmp, &y, CAPTURE_POS).unwrap();
    let (graph, _) = g.finish().unwrap();

    let e = ReplayCheck::new(4)
        .run(
            &graph,
            &mut f.stream,
            |i, s| s.upload(&x, &input(i)),
            |i, s| step_by_value(s, &fill, &f.add, &x, &tmp, &y, position(i)),
            |s| Ok(Outputs::new().with("y", s.download(&y)?)),
        )
        .unwrap_err();
    match &e {
        Error::ReplayDiverged { output, input_set, element, eager, replay, differing, len } => {
            assert_eq!(output, "y");
            assert_eq!(*input_set, 0);
            assert_eq!(*element, 0);
            assert_eq!(*eager, Scalar::F32(input(0)[0] + position(0) as f32));
            assert_eq!(
                *replay,
                Scalar::F32(input(0)[0] + CAPTURE_POS as f32),
                "the replay used the capture-time position"
            );
            assert_eq!((*differing, *len), (N, N));
        }
        other => panic!("expected ReplayDiverged, got {other}"),
    }
    let msg = e.to_string();
    assert!(msg.contains("output `y`, input set 0, element 0: eager 12.0, replay 8.0"), "{msg}");
    assert!(msg.contains("baked in at capture time"), "{msg}");
});

// (c) A small upload served once is caught: (1) an upload captured from host memory that
// the code rewrites elsewhere (candle's per-call host-to-device upload of a position).
on_both!(upload_captured_from_host_memory_served_once_is_caught, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let small = f.stream.alloc_zeros::<u32>(1).unwrap();
    let pinned_at_capture = f.stream.alloc_pinned::<u32>(1).unwrap();
    let pinned_per_call = f.stream.alloc_pinned::<u32>(1).unwrap();
    let cfg = LaunchConfig::for_num_elems(CFG_N);
    pinned_at_capture.write(&[CAPTURE_POS]).unwrap();
    let mut g = f.stream.capture().unwrap();
    g.upload_async(&small, &pinned_at_capture).unwrap();
    g.copy_async(&y, &x).unwrap();
    g.launch(&f.add_ptr, cfg, (&y, &small, CFG_N)).unwrap();
    let (graph, _) = g.finish().unwrap();

    let eager = |i: usize, s: &mut Stream| -> Result<()> {
        // The eager code stages its position in a host buffer of its own each call.
        pinned_per_call.write(&[position(i)])?;
        s.upload_async(&small, &pinned_per_call)?;
        s.copy_async(&y, &x)?;
        s.launch(&f.add_ptr, cfg, (&y, &small, CFG_N))
    };
    let read = |s: &mut Stream| -> Result<Outputs> { Ok(Outputs::new().with("y", s.download(&y)?)) };

    // The bug: fresh positions never reach the host memory the graph copies from.
    let e = ReplayCheck::new(3).run(&graph, &mut f.stream, |i, s| s.upload(&x, &input(i)), eager, read).unwrap_err();
    match e {
        Error::ReplayDiverged { output, input_set: 0, element: 0, eager, replay, .. } => {
            assert_eq!(output, "y");
            assert_eq!(eager, Scalar::F32(input(0)[0] + position(0) as f32));
            assert_eq!(replay, Scalar::F32(input(0)[0] + CAPTURE_POS as f32));
        }
        other => panic!("expected ReplayDiverged at set 0, element 0, got {other}"),
    }

    // The fix passes: write the position into the host memory the graph copies from.
    ReplayCheck::new(3)
        .run(
            &graph,
            &mut f.stream,
            |i, s| {
                pinned_at_capture.write(&[position(i)])?;
                s.upload(&x, &input(i))
            },
            eager,
            read,
        )
        .unwrap();
});

// (c) (2) A synchronous upload issued during a (relaxed) capture runs once, then, and is not
// in the graph: each replay reads whatever the buffer last held.
on_both!(sync_upload_during_capture_served_once_is_caught, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let mut other = ctx.new_stream().unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let small = f.stream.alloc_zeros::<u32>(1).unwrap();
    let cfg = LaunchConfig::for_num_elems(CFG_N);
    let mut g = f.stream.capture_with(CaptureOptions::new().mode(CaptureMode::Relaxed)).unwrap();
    other.upload(&small, &[CAPTURE_POS]).unwrap(); // succeeds, runs now, not recorded
    g.copy_async(&y, &x).unwrap();
    g.launch(&f.add_ptr, cfg, (&y, &small, CFG_N)).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.ran_eagerly.len(), 1, "{report}");

    let e = ReplayCheck::new(3)
        .run(
            &graph,
            &mut f.stream,
            |i, s| s.upload(&x, &input(i)),
            |i, s| {
                other.upload(&small, &[position(i)])?;
                s.copy_async(&y, &x)?;
                s.launch(&f.add_ptr, cfg, (&y, &small, CFG_N))
            },
            |s| Ok(Outputs::new().with("y", s.download(&y)?)),
        )
        .unwrap_err();
    match e {
        Error::ReplayDiverged { output, input_set: 0, element: 0, eager, replay, differing, .. } => {
            assert_eq!(output, "y");
            assert_eq!(eager, Scalar::F32(input(0)[0] + position(0) as f32));
            assert_eq!(replay, Scalar::F32(input(0)[0] + CAPTURE_POS as f32));
            assert_eq!(differing, N);
        }
        other => panic!("expected ReplayDiverged at set 0, element 0, got {other}"),
    }
});

// The stale value is caught even when the first set happens to use the capture-time value:
// the replay runs before the eager run of each set, so it reads the previous set's upload.
on_both!(stale_upload_caught_on_a_later_set_when_the_first_matches, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let mut other = ctx.new_stream().unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let small = f.stream.alloc_zeros::<u32>(1).unwrap();
    let cfg = LaunchConfig::for_num_elems(CFG_N);
    let mut g = f.stream.capture_with(CaptureOptions::new().mode(CaptureMode::Relaxed)).unwrap();
    other.upload(&small, &[CAPTURE_POS]).unwrap();
    g.copy_async(&y, &x).unwrap();
    g.launch(&f.add_ptr, cfg, (&y, &small, CFG_N)).unwrap();
    let (graph, _) = g.finish().unwrap();
    let pos = |i: usize| if i == 0 { CAPTURE_POS } else { position(i) };
    let e = ReplayCheck::new(3)
        .run(
            &graph,
            &mut f.stream,
            |i, s| s.upload(&x, &input(i)),
            |i, s| {
                other.upload(&small, &[pos(i)])?;
                s.copy_async(&y, &x)?;
                s.launch(&f.add_ptr, cfg, (&y, &small, CFG_N))
            },
            |s| Ok(Outputs::new().with("y", s.download(&y)?)),
        )
        .unwrap_err();
    match e {
        Error::ReplayDiverged { input_set: 1, eager, replay, .. } => {
            assert_eq!(eager, Scalar::F32(input(1)[0] + position(1) as f32));
            assert_eq!(replay, Scalar::F32(input(1)[0] + CAPTURE_POS as f32), "set 0's value, served again");
        }
        other => panic!("expected ReplayDiverged at set 1, got {other}"),
    }
});

/// An application's error type: the closures' own errors and this crate's.
#[derive(Debug)]
enum AppError {
    Capture(Error),
    OutOfTokens(usize),
}

impl From<Error> for AppError {
    fn from(e: Error) -> Self {
        AppError::Capture(e)
    }
}

// (d) Bad input: typed errors, never a panic.
on_both!(bad_replay_checks_are_typed_errors, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let cfg = LaunchConfig::for_num_elems(CFG_N);
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.scale, cfg, (&x, &y, 2.0f32, CFG_N)).unwrap();
    let (graph, _) = g.finish().unwrap();
    let inputs = |i: usize, s: &mut Stream| s.upload(&x, &input(i));
    let eager = |_: usize, s: &mut Stream| s.launch(&f.scale, cfg, (&x, &y, 2.0f32, CFG_N));
    let read_y = |s: &mut Stream| -> Result<Outputs> { Ok(Outputs::new().with("y", s.download(&y)?)) };

    // Zero input sets.
    let e = ReplayCheck::new(0).run(&graph, &mut f.stream, inputs, eager, read_y).unwrap_err();
    assert!(matches!(e, Error::InvalidReplayCheck { .. }), "{e}");
    assert!(e.to_string().contains("0 input sets"), "{e}");

    // Tolerances that are NaN, infinite or negative.
    for tol in [Tolerance::new(f64::NAN, 0.0), Tolerance::new(0.0, f64::INFINITY), Tolerance::new(-1e-3, 0.0)] {
        let e = ReplayCheck::new(2).tolerance(tol).run(&graph, &mut f.stream, inputs, eager, read_y).unwrap_err();
        assert!(matches!(e, Error::InvalidReplayCheck { .. }), "{tol:?}: {e}");
        assert!(e.to_string().contains("tolerance"), "{e}");
    }

    // Outputs whose length changes between the replay and the eager run.
    let mut reads = 0usize;
    let e = ReplayCheck::new(2)
        .run(&graph, &mut f.stream, inputs, eager, |s| {
            reads += 1;
            let mut v = s.download(&y)?;
            v.truncate(N - reads % 2);
            Ok(Outputs::new().with("y", v))
        })
        .unwrap_err();
    match &e {
        Error::OutputShapeChanged { output, input_set: 0, eager, replay } => {
            assert_eq!(output, "y");
            assert_eq!(replay, &format!("{} x f32", N - 1));
            assert_eq!(eager, &format!("{N} x f32"));
        }
        other => panic!("expected OutputShapeChanged, got {other}"),
    }
    assert!(e.to_string().contains("same lengths and element types"), "{e}");

    // An element type that changes, and an output that disappears.
    let mut reads = 0usize;
    let e = ReplayCheck::new(2)
        .run(&graph, &mut f.stream, inputs, eager, |s| {
            reads += 1;
            let v = s.download(&y)?;
            Ok(if reads == 1 { Outputs::new().with("y", v) } else { Outputs::new().with_f16_bits("y", vec![0; N]) })
        })
        .unwrap_err();
    assert!(matches!(&e, Error::OutputShapeChanged { eager, .. } if eager == &format!("{N} x f16")), "{e}");
    let mut reads = 0usize;
    let e = ReplayCheck::new(2)
        .run(&graph, &mut f.stream, inputs, eager, |s| {
            reads += 1;
            let v = s.download(&y)?;
            let out = Outputs::new().with("y", v);
            Ok(if reads == 1 { out.with("count", vec![1u32]) } else { out })
        })
        .unwrap_err();
    assert!(
        matches!(&e, Error::OutputShapeChanged { output, eager, .. } if output == "count" && eager == "absent"),
        "{e}"
    );

    // No outputs, or one name twice.
    let e = ReplayCheck::new(2).run(&graph, &mut f.stream, inputs, eager, |_| Ok(Outputs::new())).unwrap_err();
    assert!(matches!(e, Error::InvalidReplayCheck { .. }), "{e}");
    let e = ReplayCheck::new(2)
        .run(&graph, &mut f.stream, inputs, eager, |s| {
            Ok(Outputs::new().with("y", s.download(&y)?).with("y", s.download(&y)?))
        })
        .unwrap_err();
    assert!(e.to_string().contains("same name"), "{e}");

    // A closure's error comes back unchanged, in the application's error type; the
    // check's own errors convert into it.
    let e = ReplayCheck::new(4)
        .with_error_type::<AppError>()
        .run(
            &graph,
            &mut f.stream,
            |i, s| if i == 2 { Err(AppError::OutOfTokens(i)) } else { Ok(s.upload(&x, &input(i))?) },
            |_, s| Ok(s.launch(&f.scale, cfg, (&x, &y, 2.0f32, CFG_N))?),
            |s| Ok(Outputs::new().with("y", s.download(&y)?)),
        )
        .unwrap_err();
    assert!(matches!(e, AppError::OutOfTokens(2)), "{e:?}");
    let e = ReplayCheck::new(0)
        .with_error_type::<AppError>()
        .run(&graph, &mut f.stream, |_, _| Ok(()), |_, _| Ok(()), |_| Ok(Outputs::new()))
        .unwrap_err();
    assert!(matches!(e, AppError::Capture(Error::InvalidReplayCheck { .. })), "{e:?}");

    // The stream is idle and usable afterwards; the good check passes.
    ReplayCheck::new(2).run(&graph, &mut f.stream, inputs, eager, read_y).unwrap();
});

// Floating-point tolerance: a replay within it passes, one outside it is reported.
on_both!(tolerance_bounds_the_accepted_difference, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let cfg = LaunchConfig::for_num_elems(CFG_N);
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.scale, cfg, (&x, &y, 2.0f32, CFG_N)).unwrap();
    let (graph, _) = g.finish().unwrap();
    // The eager path runs a slightly different computation (2.001 x instead of 2 x).
    let run = |stream: &mut Stream, tol: Tolerance| {
        ReplayCheck::new(2).tolerance(tol).run(
            &graph,
            stream,
            |i, s| s.upload(&x, &input(i)),
            |_, s| s.launch(&f.scale, cfg, (&x, &y, 2.001f32, CFG_N)),
            |s| Ok(Outputs::new().with("y", s.download(&y)?)),
        )
    };
    let report = run(&mut f.stream, Tolerance::new(0.0, 1e-3)).unwrap();
    assert!(report.max_abs_diff > 0.0);
    let e = run(&mut f.stream, Tolerance::new(0.0, 1e-4)).unwrap_err();
    assert!(matches!(e, Error::ReplayDiverged { input_set: 0, element: 0, .. }), "{e}");
});
