//! A decode loop as an inference engine runs it: workspaces allocated into a pool that is
//! then sealed, a cuBLAS handle with its workspace set, one graph captured under a
//! watchdog and replayed every step with a new position (`DeviceScalar`), and the
//! fail-fast registry refusing a synchronous call made while capturing; then a replay check
//! against the same step run eagerly. Runs on the GPU when present, otherwise on the
//! simulated device.

use std::time::Duration;

use capture_core::{
    kernels, AllocPolicy, Blas, CaptureOptions, CapturePool, Context, DeviceScalar, Error, LaunchConfig, Outputs,
    ReplayCheck, Result, Transpose,
};

fn main() -> Result<()> {
    let ctx = Context::open_default();
    println!("device: {} ({})", ctx.name(), ctx.kind());
    if let Some(sim) = ctx.sim() {
        kernels::register_chain_kernels(sim);
    }
    let mut stream = ctx.new_stream()?;
    let mut side = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let add_pos = module.kernel("add_scalar_from_ptr_f32")?;
    let d = 128; // hidden size

    // Everything the step needs exists before capture: weights, activations, the position,
    // the cuBLAS workspace, and the pool's scratch buffers (then sealed).
    let blas = Blas::new(&mut stream, Blas::DEFAULT_WORKSPACE)?;
    let weights =
        stream.upload_new(&(0..d * d).map(|i| if i % (d + 1) == 0 { 1.0 } else { 0.0 }).collect::<Vec<f32>>())?;
    let hidden = stream.alloc_zeros::<f32>(d)?;
    let pos = DeviceScalar::new(&mut stream, 0u32)?;
    let pool = CapturePool::new(&ctx);
    let scratch = pool.workspace::<f32, _>(&mut stream, "scratch", d)?;
    pool.seal();
    // Each GEMM shape once eagerly, so CUDA's lazy loading brings its kernel in before capture.
    blas.sgemm(
        &mut stream,
        Transpose::No,
        Transpose::No,
        (d, 1, d),
        1.0,
        (&weights, d),
        (&hidden, d),
        0.0,
        (&scratch, d),
    )?;

    let opts = CaptureOptions::new().alloc_policy(AllocPolicy::Deny).deadline(Duration::from_secs(1));
    let mut g = stream.capture_with(opts)?;
    // scratch = W · hidden (identity weights); hidden = scratch + pos
    blas.sgemm(
        g.stream(),
        Transpose::No,
        Transpose::No,
        (d, 1, d),
        1.0,
        (&weights, d),
        (&hidden, d),
        0.0,
        (&scratch, d),
    )?;
    g.copy_async(&hidden, &scratch)?;
    g.launch(&add_pos, LaunchConfig::for_num_elems(d as u32), (&hidden, &pos, d as u32))?;
    // A lazily-initialised buffer the pool was not given: refused, not allocated.
    match pool.workspace::<f32, _>(g.stream(), "kv_cache", 1 << 20) {
        Err(e @ Error::PoolSealed { .. }) => println!("refused as it should be: {e}"),
        other => panic!("expected PoolSealed, got {other:?}"),
    }
    // A synchronous call on another stream while capturing: refused without touching the driver.
    match side.synchronize() {
        Err(e @ Error::CaptureActive { .. }) => println!("refused as it should be: {e}"),
        other => panic!("expected CaptureActive, got {other:?}"),
    }
    let (graph, report) = g.finish()?;
    println!("\n{report}");

    // The decode loop: one replay per step, the position updated in between.
    let steps = 32u32;
    for step in 1..=steps {
        pos.set(&mut stream, step)?;
        graph.launch(&mut stream)?;
    }
    let h = stream.download(&hidden)?;
    let expect = (steps * (steps + 1) / 2) as f32;
    println!("after {steps} steps: hidden[0] = {} (expected {expect})", h[0]);
    assert_eq!(h[0], expect);

    // Prove the graph computes what the same step computes eagerly, on fresh hidden states
    // and positions it was not captured with (a position passed by value would show here).
    let check = ReplayCheck::new(4).run(
        &graph,
        &mut stream,
        |i, s| {
            s.upload(&hidden, &vec![0.5 + i as f32; d])?;
            pos.set(s, 1000 + 17 * i as u32)
        },
        |_, s| {
            let (w, h, sc) = ((&weights, d), (&hidden, d), (&*scratch, d));
            blas.sgemm(s, Transpose::No, Transpose::No, (d, 1, d), 1.0, w, h, 0.0, sc)?;
            s.copy_async(&hidden, &scratch)?;
            s.launch(&add_pos, LaunchConfig::for_num_elems(d as u32), (&hidden, &pos, d as u32))
        },
        |s| Ok(Outputs::new().with("hidden", s.download(&hidden)?)),
    )?;
    println!("{check}");
    Ok(())
}
