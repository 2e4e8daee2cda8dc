//! Issue #13, item 3: what `#[capturable]` guarantees through a helper it cannot see into.
//!
//! The attribute reads only the annotated function. The type-state closes the common paths: a
//! capturing stream gives out no context and no idle handle, and the parameter check rejects
//! idle handles by type. A helper that still does a synchronous operation must have got a handle
//! from elsewhere (here a struct field). During a Global capture the fail-fast registry refuses
//! that operation at run time with a typed error, before the driver is called, so the capture
//! stays intact and finishes; in Relaxed mode it would run eagerly and be listed in the report.

use capture_core::{capturable, CaptureMode, CaptureOptions, Capturing, Context, DeviceBuffer, Error, Kernel};
use capture_core::{LaunchConfig, Result, Stream};
use capture_tests::{on_both, Fixture};

const N: usize = 1024;

/// Holds a context of its own: the path the type-state cannot see.
struct Model {
    ctx: Context,
    incr: Kernel,
}

impl Model {
    /// Not `#[capturable]`: allocates managed memory on a stream of its own.
    fn refresh_cache(&self) -> Result<()> {
        let mut side = self.ctx.new_stream()?;
        let cache = side.alloc_managed::<f32>(N)?;
        side.write_managed(&cache, &vec![1.0; N])
    }

    /// Not `#[capturable]`: synchronizes the device.
    fn wait_for_everything(&self) -> Result<()> {
        self.ctx.synchronize()
    }
}

#[capturable]
fn step<'a>(stream: &mut Stream<Capturing<'a>>, model: &'a Model, x: &'a DeviceBuffer<f32>) -> Result<()> {
    stream.launch(&model.incr, LaunchConfig::for_num_elems(N as u32), (x, N as u32))?;
    model.refresh_cache()
}

#[capturable]
fn step_then_wait<'a>(stream: &mut Stream<Capturing<'a>>, model: &'a Model, x: &'a DeviceBuffer<f32>) -> Result<()> {
    stream.launch(&model.incr, LaunchConfig::for_num_elems(N as u32), (x, N as u32))?;
    model.wait_for_everything()
}

on_both!(helper_with_a_sync_op_is_refused_at_run_time_during_global_capture, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let model = Model { ctx: ctx.clone(), incr: f.module.kernel("incr_f32").unwrap() };
    let x = f.stream.upload_new(&vec![1.0f32; N]).unwrap();
    let mut g = f.stream.capture_with(CaptureOptions::new().mode(CaptureMode::Global)).unwrap();
    let refused = [step(g.stream(), &model, &x).unwrap_err(), step_then_wait(g.stream(), &model, &x).unwrap_err()];
    for (e, op) in refused.iter().zip(["alloc_managed", "synchronize"]) {
        assert!(matches!(e, Error::CaptureActive { .. }), "expected CaptureActive, got {e}");
        assert!(e.to_string().contains(op), "{e}");
    }
    // Refused before the driver was called: both launches were recorded and the capture is intact.
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.nodes.kernels, 2);
    graph.launch(&mut f.stream).unwrap();
    assert!(f.stream.download(&x).unwrap().iter().all(|v| *v == 3.0));
    // After the capture the same helpers work.
    model.refresh_cache().unwrap();
    model.wait_for_everything().unwrap();
});
