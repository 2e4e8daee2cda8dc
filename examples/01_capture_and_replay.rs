//! Captures a chain of kernels once and replays it many times: the report, the device it ran
//! on, and eager-versus-replay timing. Runs on the GPU when present, otherwise on the
//! simulated device.
//!
//! ```text
//! cargo run --release --example 01_capture_and_replay [-- CHAIN_LEN REPLAYS]
//! ```

use std::time::Instant;

use capture_core::{kernels, DeviceKind, LaunchConfig, Result};

fn main() -> Result<()> {
    env_logger::Builder::new().filter_level(log::LevelFilter::Warn).parse_default_env().init();
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let chain = args.next().and_then(|r| r.ok()).unwrap_or(100).max(1);
    let replays = args.next().and_then(|r| r.ok()).unwrap_or(1000).max(1);

    let ctx = capture_examples::open_device();

    // Everything the graph uses is allocated and loaded before capture.
    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let (scale, add, incr) = (module.kernel("scale_f32")?, module.kernel("add_f32")?, module.kernel("incr_f32")?);
    let n: usize = 1 << 12;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let input = stream.alloc_pinned::<f32>(n)?;
    let output = stream.alloc_pinned::<f32>(n)?;
    let x = stream.alloc_zeros::<f32>(n)?;
    let y = stream.alloc_zeros::<f32>(n)?;

    // The chain: x <- input; y = 2x; then `chain` increments of y; y = y + x; output <- y.
    // Result per element: 3 * input + chain.
    let mut g = stream.capture()?;
    g.upload_async(&x, &input)?;
    g.launch(&scale, cfg, (&x, &y, 2.0f32, n as u32))?;
    for _ in 0..chain {
        g.launch(&incr, cfg, (&y, n as u32))?;
    }
    g.launch(&add, cfg, (&y, &x, &y, n as u32))?;
    g.download_async(&output, &y)?;
    let (graph, report) = g.finish()?;
    println!("\n{report}");
    graph.upload(&mut stream)?;

    // Replay with fresh inputs and check each result.
    for round in 0..3 {
        let data: Vec<f32> = (0..n).map(|i| (i % 97 + round) as f32).collect();
        input.write(&data)?;
        graph.launch(&mut stream)?;
        stream.synchronize()?;
        let out = output.read();
        let ok = out.iter().zip(&data).all(|(o, d)| *o == 3.0 * d + chain as f32);
        println!("replay {round} with fresh input: {}", if ok { "correct" } else { "WRONG" });
        assert!(ok, "replay produced a wrong result");
    }

    // Eager versus replay: the same work, issued kernel by kernel or as one graph launch.
    let eager = |stream: &mut capture_core::Stream| -> Result<()> {
        stream.upload_async(&x, &input)?;
        stream.launch(&scale, cfg, (&x, &y, 2.0f32, n as u32))?;
        for _ in 0..chain {
            stream.launch(&incr, cfg, (&y, n as u32))?;
        }
        stream.launch(&add, cfg, (&y, &x, &y, n as u32))?;
        stream.download_async(&output, &y)
    };
    let iters = (replays / 10).max(1);
    eager(&mut stream)?;
    stream.synchronize()?;
    let t = Instant::now();
    for _ in 0..iters {
        eager(&mut stream)?;
    }
    stream.synchronize()?;
    let eager_us = t.elapsed().as_secs_f64() * 1e6 / iters as f64;
    let t = Instant::now();
    for _ in 0..replays {
        graph.launch(&mut stream)?;
    }
    stream.synchronize()?;
    let replay_us = t.elapsed().as_secs_f64() * 1e6 / replays as f64;
    println!(
        "\n{} kernels + 2 copies per iteration on the {}:\n  eager:  {eager_us:10.1} µs/iteration ({iters} iterations)\n  replay: {replay_us:10.1} µs/iteration ({replays} replays)\n  speed-up: {:.2}x",
        chain + 2,
        ctx.kind(),
        eager_us / replay_us
    );
    if ctx.kind() == DeviceKind::Simulated {
        println!("  (simulated device: host-side timings, not a GPU measurement)");
    }
    Ok(())
}
