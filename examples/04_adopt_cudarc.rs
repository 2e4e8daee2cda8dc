//! An existing cudarc program whose hot loop becomes a safe capture, changing 10 lines.
//!
//! `before` is the program as a cudarc user writes it today: per step, upload fresh input
//! and launch a chain of kernels, one submission each. `after` is the same program with the
//! chain captured once and replayed per step. Its lines that differ from `before` end in
//! `// changed`; everything else — the context, stream, module, functions and buffers — is
//! the user's own cudarc objects, passed as they are. The graph borrows the `CudaSlice`s, so
//! dropping one while the graph lives does not compile.
//!
//! ```text
//! cargo run --release --example 04_adopt_cudarc [-- STEPS]
//! ```
//! cudarc's `CudaContext` needs a CUDA GPU; without one this example says so and exits.

use std::sync::Arc;
use std::time::Instant;

use capture_core::{kernels::CHAIN_PTX, Context, Kernel};
use cudarc::driver::{CudaContext, CudaFunction, CudaSlice, CudaStream, PushKernelArg};
use cudarc::nvrtc::Ptx;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const N: usize = 1 << 14;
const INCREMENTS: usize = 32;

/// The user's objects: a context, a stream, two kernels and three buffers.
struct App {
    cu: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    scale: CudaFunction,
    incr: CudaFunction,
    x: CudaSlice<f32>,
    y: CudaSlice<f32>,
}

impl App {
    fn new(cu: Arc<CudaContext>) -> Res<Self> {
        let stream = cu.new_stream()?;
        let module = cu.load_module(Ptx::from_src(CHAIN_PTX))?;
        let scale = module.load_function("scale_f32")?;
        let incr = module.load_function("incr_f32")?;
        let x = stream.alloc_zeros::<f32>(N)?;
        let y = stream.alloc_zeros::<f32>(N)?;
        Ok(Self { cu, stream, scale, incr, x, y })
    }
}

fn input(step: usize) -> Vec<f32> {
    (0..N).map(|i| ((i + 7 * step) % 1000) as f32).collect()
}

/// Before: the hot loop launches every kernel every step.
fn before(app: &mut App, steps: usize) -> Res<Vec<Vec<f32>>> {
    let cfg = cudarc::driver::LaunchConfig::for_num_elems(N as u32);
    let n = N as u32;
    let mut out = Vec::new();
    for step in 0..steps {
        app.stream.memcpy_htod(&input(step), &mut app.x)?;
        // SAFETY: scale_f32(x, out, alpha, n) and incr_f32(x, n) over N elements.
        unsafe { app.stream.launch_builder(&app.scale).arg(&app.x).arg(&mut app.y).arg(&2.0f32).arg(&n).launch(cfg)? };
        for _ in 0..INCREMENTS {
            // SAFETY: as above.
            unsafe { app.stream.launch_builder(&app.incr).arg(&mut app.y).arg(&n).launch(cfg)? };
        }
        out.push(app.stream.clone_dtoh(&app.y)?);
    }
    Ok(out)
}

/// After: the same chain, captured once and replayed per step.
fn after(app: &mut App, steps: usize) -> Res<Vec<Vec<f32>>> {
    let cfg = cudarc::driver::LaunchConfig::for_num_elems(N as u32);
    let n = N as u32;
    let ctx = Context::from_cudarc(app.cu.clone())?; // changed
    let mut stream = ctx.wrap_cudarc_stream(app.stream.clone())?; // changed
    let scale = Kernel::from_cudarc(&ctx, app.scale.clone(), "scale_f32", Some(CHAIN_PTX))?; // changed
    let incr = Kernel::from_cudarc(&ctx, app.incr.clone(), "incr_f32", Some(CHAIN_PTX))?; // changed
    let mut g = stream.capture()?; // changed
    g.launch(&scale, cfg, (&app.x, &app.y, 2.0f32, n))?; // changed
    for _ in 0..INCREMENTS {
        g.launch(&incr, cfg, (&app.y, n))?; // changed
    }
    let (graph, _report) = g.finish()?; // changed
    let mut out = Vec::new();
    for step in 0..steps {
        stream.upload(&app.x, &input(step))?; // changed
        graph.launch(&mut stream)?; // changed
        out.push(app.stream.clone_dtoh(&app.y)?);
    }
    Ok(out)
}

fn main() -> Res<()> {
    let steps = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(200usize).max(1);
    let cu = match CudaContext::new(0) {
        Ok(cu) => cu,
        Err(e) => {
            println!(
                "04_adopt_cudarc: cudarc found no CUDA GPU ({e}); this example adopts a cudarc program and needs one"
            );
            return Ok(());
        }
    };
    let mut app = App::new(cu)?;
    println!("device: {} (cudarc)", app.cu.name()?);
    let t = Instant::now();
    let eager = before(&mut app, steps)?;
    let eager_ms = t.elapsed().as_secs_f64() * 1e3;
    let t = Instant::now();
    let replayed = after(&mut app, steps)?;
    let replay_ms = t.elapsed().as_secs_f64() * 1e3;
    let same = eager.iter().zip(&replayed).all(|(a, b)| a.iter().zip(b).all(|(x, y)| x.to_bits() == y.to_bits()));
    let want = 2.0 * input(steps - 1)[5] + INCREMENTS as f32;
    println!(
        "{steps} steps of {} kernels: eager {eager_ms:.2} ms, captured (capture included) {replay_ms:.2} ms; \
         outputs bit-equal: {same}; y[5] at the last step = {} (expected {want})",
        INCREMENTS + 1,
        replayed[steps - 1][5],
    );
    if !same || replayed[steps - 1][5] != want {
        return Err("the replayed outputs differ from the eager cudarc program".into());
    }
    Ok(())
}
