//! Soak: 1,000,000 replays of one graph and 10,000 capture / instantiate / destroy cycles,
//! with device memory in use (from the driver's memory info) before and after. Runs on the
//! GPU when present, otherwise on the simulated device (with fewer iterations).
//!
//! ```text
//! cargo run --release --example soak [-- REPLAYS CYCLES]
//! ```

use std::time::Instant;

use capture_core::{kernels, CaptureOptions, Context, DeviceKind, LaunchConfig, Result};

fn in_use(ctx: &Context) -> Result<usize> {
    let (free, total) = ctx.mem_info()?;
    Ok(total - free)
}

fn main() -> Result<()> {
    let ctx = Context::open_default();
    let sim = ctx.kind() == DeviceKind::Simulated;
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>().ok());
    let replays = args.next().flatten().unwrap_or(if sim { 10_000 } else { 1_000_000 });
    let cycles = args.next().flatten().unwrap_or(if sim { 1_000 } else { 10_000 });
    println!("device: {} ({})", ctx.name(), ctx.kind());
    if let Some(s) = ctx.sim() {
        kernels::register_chain_kernels(s);
    }
    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let incr = module.kernel("incr_f32")?;
    let n = 1024usize;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let x = stream.alloc_zeros::<f32>(n)?;
    let host = stream.alloc_pinned::<f32>(n)?;

    // Warm up: one of each, so lazily-created driver state exists before the baseline.
    {
        let mut g = stream.capture()?;
        let tmp = g.alloc_async::<f32>(n)?;
        g.launch(&incr, cfg, (&tmp, n as u32))?;
        g.launch(&incr, cfg, (&x, n as u32))?;
        let (graph, _) = g.finish()?;
        graph.launch(&mut stream)?;
        stream.synchronize()?;
    }
    stream.memset_sync(&x, 0)?;
    let before = in_use(&ctx)?;

    // 1. Replays of one graph.
    let mut g = stream.capture()?;
    for _ in 0..4 {
        g.launch(&incr, cfg, (&x, n as u32))?;
    }
    g.download_async(&host, &x)?;
    let (graph, _) = g.finish()?;
    let t = Instant::now();
    for i in 0..replays {
        graph.launch(&mut stream)?;
        if i % 100_000 == 99_999 {
            stream.synchronize()?;
        }
    }
    stream.synchronize()?;
    let replay_s = t.elapsed().as_secs_f64();
    let expect = 4.0 * replays as f32;
    let got = host.read()[n - 1];
    // f32 counts exactly up to 2^24; past that, compare with the rounding f32 itself does.
    let ok = (got - expect).abs() <= expect * 1e-6 || replays * 4 > (1 << 24) && got >= (1 << 24) as f32;
    println!(
        "{replays} replays in {replay_s:.2} s ({:.2} µs each); x = {got} (expected {expect}): {}",
        replay_s * 1e6 / replays as f64,
        if ok { "ok" } else { "WRONG" }
    );
    drop(graph);

    // 2. Capture / instantiate / destroy cycles, each with a graph allocation.
    let t = Instant::now();
    for _ in 0..cycles {
        let mut g = stream.capture_with(CaptureOptions::new().alloc_policy(capture_core::AllocPolicy::Allow))?;
        let tmp = g.alloc_async::<f32>(n)?;
        g.launch(&incr, cfg, (&tmp, n as u32))?;
        g.launch(&incr, cfg, (&x, n as u32))?;
        let (graph, _) = g.finish()?;
        graph.launch(&mut stream)?;
    }
    stream.synchronize()?;
    let cycle_s = t.elapsed().as_secs_f64();
    println!(
        "{cycles} capture/instantiate/launch/destroy cycles in {cycle_s:.2} s ({:.1} µs each)",
        cycle_s * 1e6 / cycles as f64
    );

    stream.memset_sync(&x, 0)?;
    let after = in_use(&ctx)?;
    let growth = after as i64 - before as i64;
    println!("device memory in use: before {before} B, after {after} B, growth {growth} B");
    if !ok || growth != 0 {
        eprintln!("SOAK FAILED");
        std::process::exit(1);
    }
    println!("SOAK OK");
    Ok(())
}
