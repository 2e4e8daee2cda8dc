//! capture-candle on a real GPU (issue #9 part 5, and its bad-input list): a capture on
//! candle's stream, a capture that invalidates, a step that leaks graph memory, and a
//! missing warm-up. Each leaves the candle device usable, proven by an eager candle op.
//!
//! GPU tests are ignored by plain `cargo test`; `CAPTURE_REQUIRE_GPU=1` makes a missing GPU
//! a failure when they are run with `--include-ignored`.

mod common;

use candle_core::{DType, Device, Tensor};
use capture_candle::{CandleStream, Error};
use common::gpu;

/// An eager candle op, read back: the device still works.
fn eager_op_works(dev: &Device) {
    let a = Tensor::arange(0f32, 8.0, dev).unwrap();
    let v = (a * 2.0).unwrap().to_vec1::<f32>().unwrap();
    assert_eq!(v[7], 14.0);
}

#[test]
fn a_cpu_device_is_refused_with_advice() {
    let e = CandleStream::new(&Device::Cpu).unwrap_err();
    assert!(matches!(e, Error::NotCuda { .. }), "{e}");
    assert!(e.to_string().contains("new_cuda_with_stream"), "{e}");
}

/// Each `Device::new_cuda_with_stream` call makes a device with its own stream: work on a
/// tensor of another device (or the CPU) runs on a stream the capture does not record. Such
/// resources are refused, naming the fix, before anything is captured, for one graph and
/// for a family; the same step on the stream's own device is captured.
#[test]
#[ignore = "needs a CUDA device"]
fn tensors_of_another_candle_device_are_refused() {
    let Some(dev) = gpu() else { return };
    let other = Device::new_cuda_with_stream(0).unwrap();
    let mut cs = CandleStream::new(&dev).unwrap();
    let double = |(x, y): &(Tensor, Tensor)| -> Result<(), Error> { Ok(y.slice_set(&(x * 2.0)?, 0, 0)?) };
    let on = |d: &Device| (Tensor::ones(8, DType::F32, d).unwrap(), Tensor::zeros(8, DType::F32, d).unwrap());
    let (x, _) = on(&dev);
    let (_, y_other) = on(&other);
    let (x_cpu, _) = on(&Device::Cpu);
    for (what, r) in [
        ("another CUDA device", on(&other)),
        ("one tensor on another", (x.clone(), y_other)),
        ("the CPU", (x_cpu, x.clone())),
    ] {
        let e = cs.capture_owned(r, double).unwrap_err();
        assert!(matches!(&e, Error::OtherDevice { .. }), "{what}: {e}");
        assert!(e.to_string().contains("new_cuda_with_stream"), "{what}: {e}");
    }
    let e = cs.capture_family(&[1, 2], std::sync::Arc::new(on(&other)), move |r, _| double(r)).unwrap_err();
    assert!(matches!(&e, Error::OtherDevice { .. }), "family: {e}");
    eager_op_works(&dev);
    // The same step on the stream's device: captured, and its replay writes y.
    let r = on(&dev);
    cs.warm_up(|| double(&r).map_err(candle_core::Error::wrap)).unwrap();
    r.1.zero_set().unwrap();
    let (graph, _) = cs.capture_owned(r.clone(), double).unwrap();
    graph.launch(cs.stream()).unwrap();
    assert_eq!(r.1.to_vec1::<f32>().unwrap(), [2.0; 8]);
}

/// A step whose work is not on the captured stream: a graph of it would replay nothing. A
/// step that does nothing, and one whose closure took tensors of another candle device
/// (not in the resources, so the device check cannot see them) under relaxed capture, where
/// that device's allocations do not fail the capture: both refused with `EmptyStep`, by
/// `capture_owned` and by `capture_diff`; the other device's kernels ran once, eagerly.
#[test]
#[ignore = "needs a CUDA device"]
fn a_step_that_records_no_work_is_refused() {
    use capture_core::{CaptureMode, CaptureOptions};
    let Some(dev) = gpu() else { return };
    let other = Device::new_cuda_with_stream(0).unwrap();
    let mut cs = CandleStream::new(&dev).unwrap();
    let e = cs.capture_owned((), |_: &()| Ok(())).unwrap_err();
    assert!(matches!(e, Error::EmptyStep { nodes: 0 }), "nothing: {e}");
    assert!(e.to_string().contains("another candle device"), "{e}");

    let (x, y) = (Tensor::ones(8, DType::F32, &other).unwrap(), Tensor::zeros(8, DType::F32, &other).unwrap());
    let (xs, ys) = (x.clone(), y.clone());
    let elsewhere = move |_: &Tensor| -> Result<(), Error> { Ok(ys.slice_set(&(&xs * 2.0)?, 0, 0)?) };
    let mine = Tensor::zeros(8, DType::F32, &dev).unwrap();
    let relaxed = CaptureOptions::new().mode(CaptureMode::Relaxed);
    let e = cs.capture_owned_with(relaxed, mine.clone(), elsewhere).unwrap_err();
    assert!(matches!(e, Error::EmptyStep { nodes: 0 }), "another device's work: {e}");
    assert_eq!(y.to_vec1::<f32>().unwrap(), [2.0; 8], "the other device's kernel ran once, outside the capture");

    let e = cs.capture_diff(|| Ok(()), || Ok(())).unwrap_err();
    match &e {
        Error::DiffCaptureFailed { run: 1, source } => {
            assert!(matches!(**source, Error::EmptyStep { nodes: 0 }), "{e}")
        }
        _ => panic!("capture_diff of an empty step: {e}"),
    }
    eager_op_works(&dev);
    // A step with work on the stream is still captured.
    let fill = |m: &Tensor| -> Result<(), Error> { Ok(m.slice_set(&m.ones_like()?, 0, 0)?) };
    cs.warm_up(|| fill(&mine).map_err(candle_core::Error::wrap)).unwrap();
    mine.zero_set().unwrap();
    let (graph, report) = cs.capture_owned(mine.clone(), fill).unwrap();
    assert!(report.nodes.kernels + report.nodes.memcpy + report.nodes.memset > 0, "{report}");
    graph.launch(cs.stream()).unwrap();
    assert_eq!(mine.to_vec1::<f32>().unwrap(), [1.0; 8]);
}

#[test]
#[ignore = "needs a CUDA device"]
fn the_per_thread_default_stream_is_refused_with_advice() {
    let Some(_) = gpu() else { return };
    let dev = Device::new_cuda(0).unwrap();
    let e = CandleStream::new(&dev).unwrap_err();
    assert!(matches!(e, Error::DefaultStream), "{e}");
}

#[test]
#[ignore = "needs a CUDA device"]
fn candle_ops_are_captured_and_replayed_with_fresh_inputs() {
    let Some(dev) = gpu() else { return };
    let mut cs = CandleStream::new(&dev).unwrap();
    let w = Tensor::randn(0f32, 1.0, (32, 32), &dev).unwrap();
    let x = Tensor::zeros((1, 32), DType::F32, &dev).unwrap();
    let y = Tensor::zeros((1, 32), DType::F32, &dev).unwrap();
    let step = || -> candle_core::Result<()> {
        let out = (x.matmul(&w)?.relu()? + 1.0)?;
        y.slice_set(&out, 0, 0)
    };
    cs.warm_up(step).unwrap();
    let (graph, report) = cs
        .capture_owned((w.clone(), x.clone(), y.clone()), |(w, x, y)| {
            let out = (x.matmul(w)?.relu()? + 1.0)?;
            Ok(y.slice_set(&out, 0, 0)?)
        })
        .unwrap();
    assert!(report.nodes.kernels >= 2, "{report}");
    assert_eq!(report.nodes.mem_alloc, report.nodes.mem_free, "{report}");
    for i in 0..5 {
        let input = Tensor::full(i as f32, (1, 32), &dev).unwrap();
        x.slice_set(&input, 0, 0).unwrap();
        graph.launch(cs.stream()).unwrap();
        let got = y.to_vec2::<f32>().unwrap();
        let want = (input.matmul(&w).unwrap().relu().unwrap() + 1.0).unwrap().to_vec2::<f32>().unwrap();
        assert_eq!(got, want, "input set {i}");
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn an_invalidating_capture_is_a_typed_error_and_the_device_stays_usable() {
    let Some(dev) = gpu() else { return };
    let mut cs = CandleStream::new(&dev).unwrap();
    let x = Tensor::ones(16, DType::F32, &dev).unwrap();
    cs.warm_up(|| (&x * 3.0).map(drop)).unwrap();
    let d = dev.clone();
    let e = cs
        .capture_owned(x.clone(), move |x| {
            let _y = (x * 3.0)?;
            // A synchronize through candle's own handle: the driver refuses it and invalidates.
            let _ = d.synchronize();
            Ok(())
        })
        .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::Capture(capture_core::Error::CaptureInvalidated { .. })), "{msg}");
    assert!(msg.contains("CUDA_ERROR"), "the error names the driver code: {msg}");
    eager_op_works(&dev);
}

#[test]
#[ignore = "needs a CUDA device"]
fn a_tensor_alive_at_finish_is_unfreed_graph_memory() {
    let Some(dev) = gpu() else { return };
    let mut cs = CandleStream::new(&dev).unwrap();
    let x = Tensor::ones(1024, DType::F32, &dev).unwrap();
    cs.warm_up(|| (&x + 1.0).map(drop)).unwrap();
    let kept = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let k = kept.clone();
    let e = cs
        .capture_owned(x.clone(), move |x| {
            // Allocated in the graph, still alive at the end of the capture.
            k.lock().unwrap().push((x + 1.0)?);
            Ok(())
        })
        .unwrap_err();
    assert!(matches!(e, Error::UnfreedGraphMemory { unfreed: 1, .. }), "{e}");
    kept.lock().unwrap().clear();
    eager_op_works(&dev);
}

#[test]
#[ignore = "needs a CUDA device"]
fn an_upload_not_seen_in_warm_up_fails_the_step_and_the_device_stays_usable() {
    let Some(dev) = gpu() else { return };
    let mut cs = CandleStream::new(&dev).unwrap();
    let d = dev.clone();
    // A small host upload never seen during a warm-up: candle refuses it while capturing.
    let r = cs.capture_owned((), move |_| Ok(Tensor::new(&[12345u32], &d).map(drop)?));
    assert!(matches!(r, Err(Error::Candle(_))), "candle's host-upload cache refuses an unseen upload during capture");
    eager_op_works(&dev);
}

// Issue #25: the capture diff on candle's stream names a host value candle passes by value
// (an affine op's scalar), reports nothing for a step that reads its inputs from device
// tensors, and names the capture whose step fails.
#[test]
#[ignore = "needs a CUDA device"]
fn the_capture_diff_names_a_scalar_candle_passes_by_value() {
    use capture_core::diff::Cause;
    let Some(dev) = gpu() else { return };
    let mut cs = CandleStream::new(&dev).unwrap();
    let x = Tensor::arange(0f32, 64.0, &dev).unwrap();
    let y = Tensor::zeros(64, DType::F32, &dev).unwrap();
    let scale = std::cell::Cell::new(3.0f64);
    let step = || -> capture_candle::Result<()> { Ok(y.slice_set(&x.affine(scale.get(), 0.0)?, 0, 0)?) };
    cs.warm_up(|| step().map_err(candle_core::Error::wrap)).unwrap();
    let d = cs
        .capture_diff(step, || {
            scale.set(7.0);
            Ok(())
        })
        .unwrap();
    assert!(!d.diff.differences.is_empty(), "{d}");
    assert!(d.diff.differences.iter().all(|x| x.cause == Cause::HostValue), "{d}");
    // candle's affine kernel takes the scale as an f32 by value.
    let scale_param = d.diff.differences.iter().find(|x| x.first.ends_with("(as a float: 3)")).expect("the scale");
    assert!(scale_param.second.ends_with("(as a float: 7)"), "{d}");
    assert!(scale_param.node.kind.contains("affine"), "{d}");
    assert!(scale_param.node.op.is_none(), "candle's op is not issued through capture-core: {d}");
    assert_eq!(d.unfreed, [0, 0], "{d}");

    // Read from a device tensor instead: nothing to report.
    let s = Tensor::new(&[3f32], &dev).unwrap();
    let clean = || -> capture_candle::Result<()> { Ok(y.slice_set(&x.broadcast_mul(&s)?, 0, 0)?) };
    cs.warm_up(|| clean().map_err(candle_core::Error::wrap)).unwrap();
    let d = cs.capture_diff(clean, || Ok(s.slice_set(&Tensor::new(&[7f32], &dev)?, 0, 0)?)).unwrap();
    assert!(d.is_clean(), "{d}");

    // A step that fails in the second capture: named, and the device still works.
    let run = std::cell::Cell::new(1);
    let e = cs
        .capture_diff(
            || {
                if run.get() == 2 {
                    return Err(Error::InvalidArgument { what: "run", value: "2".into(), expected: "1".into() });
                }
                Ok(y.slice_set(&(&x + 1.0)?, 0, 0)?)
            },
            || {
                run.set(2);
                Ok(())
            },
        )
        .unwrap_err();
    assert!(matches!(e, Error::DiffCaptureFailed { run: 2, .. }), "{e}");
    eager_op_works(&dev);
}
