//! The ownership proof at real size, and its soak (issue #30, parts 1, 5 and 6), on a GPU.
//!
//! ```text
//! ownership proof [--configs llama-3.2-1b,qwen2.5-0.5b] [--max-seq 2048]
//! ownership soak  [--config tiny-llama] [--steps 100000] [--cycles 1000]
//! ```
//! `proof`: for each config and each of f32, f16 and bf16, random weights, then a
//! [`Generator`] (one graph per bucket 1, 2, 4, 8, 16, 32), each graph proven at capture to
//! own every address it uses. Prints, per bucket, capture + instantiate + proof, the proof
//! alone, and what it counted. A false refusal fails the run.
//!
//! `soak`: in one process, `--steps` generate steps spread over every bucket and dtype,
//! then `--cycles` captures and drops of a whole bucket family, then a step that panics and
//! one that fails mid-capture; device memory (the driver's free memory) is read after a
//! first round and at the end, and must stay within 1 MiB.

use std::sync::Arc;
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use capture_candle::decode::SamplingParams;
use capture_candle::generate::{Generator, Request};
use capture_candle::model::{Config, Model};
use capture_candle::CandleStream;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const DTYPES: [DType; 3] = [DType::BF16, DType::F16, DType::F32];

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).cloned().unwrap_or_else(|| default.to_owned())
}

fn used_mib(cs: &CandleStream) -> Res<f64> {
    cs.context().synchronize()?;
    let (free, total) = cs.context().mem_info()?;
    Ok((total - free) as f64 / (1 << 20) as f64)
}

fn proof(device: &Device, cs: &mut CandleStream) -> Res<()> {
    let max_seq: usize = arg("--max-seq", "2048").parse()?;
    println!("| config | dtype | bucket | capture + instantiate + proof (ms) | proof (ms) | nodes | addresses | graph memory | resources | cache entries | resource tensors |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    let mut worst: f64 = 0.0;
    let mut worst_proof: f64 = 0.0;
    let mut failed = 0;
    for name in arg("--configs", "llama-3.2-1b,qwen2.5-0.5b").split(',') {
        let cfg = Config::named(name)?;
        for dtype in DTYPES {
            let built = Model::random(&cfg, dtype, max_seq, device, 1)
                .map_err(|e| format!("building the model: {e}"))
                .and_then(|m| {
                    Generator::new(cs, Arc::new(m), &Generator::BUCKETS).map_err(|e| format!("capturing: {e}"))
                });
            let gen = match built {
                Ok(g) => g,
                Err(e) => {
                    println!("| {name} | {dtype:?} | FAILED: {e} |");
                    failed += 1;
                    continue;
                }
            };
            for c in gen.family().captures() {
                let g = gen.family().graph(c.bucket).ok_or("a bucket without its graph")?;
                let o = g.ownership();
                let (total, pt) = (c.capture.as_secs_f64() * 1e3, o.time.as_secs_f64() * 1e3);
                worst = worst.max(total);
                worst_proof = worst_proof.max(pt);
                println!(
                    "| {name} | {dtype:?} | {} | {total:.2} | {pt:.2} | {} | {} | {} | {} | {} | {} |",
                    c.bucket,
                    o.proof.nodes,
                    o.proof.addresses,
                    o.proof.graph_memory,
                    o.proof.resources,
                    o.cache_entries,
                    o.tensors
                );
            }
            drop(gen);
        }
    }
    if failed > 0 {
        return Err(format!("{failed} config(s) failed").into());
    }
    println!("every graph proven, no refusal; slowest capture + instantiate + proof {worst:.2} ms, slowest proof {worst_proof:.2} ms");
    Ok(())
}

/// cuBLAS at shapes where it may use its workspace (split-K): each product captured alone,
/// proven or refused (a refusal would name cuBLAS's workspace as memory the graph does not
/// own).
fn gemms(device: &Device, cs: &mut CandleStream) -> Res<()> {
    for dtype in [DType::BF16, DType::F32] {
        for (m, n, k) in [(1, 2048, 16384), (3, 2048, 8192), (8, 4096, 14336), (32, 2048, 128256), (64, 64, 65536)] {
            let x = Tensor::randn(0f32, 1.0, (m, k), device)?.to_dtype(dtype)?;
            let w = Tensor::randn(0f32, 1.0, (n, k), device)?.to_dtype(dtype)?;
            let y = Tensor::zeros((m, n), dtype, device)?;
            let step = |(x, w, y): &(Tensor, Tensor, Tensor)| -> capture_candle::Result<()> {
                Ok(y.slice_set(&x.matmul(&w.t()?)?, 0, 0)?)
            };
            let res = (x, w, y);
            cs.warm_up(|| step(&res).map_err(candle_core::Error::wrap))?;
            match cs.capture_owned(res, step) {
                Ok((g, _)) => println!("gemm {dtype:?} {m}x{n}x{k}: proven: {}", g.ownership()),
                Err(e) => println!("gemm {dtype:?} {m}x{n}x{k}: REFUSED: {e}"),
            }
        }
    }
    Ok(())
}

fn soak(device: &Device, cs: &mut CandleStream) -> Res<()> {
    gemms(device, cs)?;
    let cfg = Config::named(&arg("--config", "tiny-llama"))?;
    let steps: usize = arg("--steps", "100000").parse()?;
    let cycles: usize = arg("--cycles", "1000").parse()?;
    let sampling = SamplingParams::new(0.8, 50, 0.95)?;
    let mut gens = Vec::new();
    for dtype in DTYPES {
        let model = Arc::new(Model::random(&cfg, dtype, 512, device, 7)?);
        gens.push((dtype, Generator::new(cs, model, &Generator::BUCKETS)?));
    }
    // One round of every bucket and dtype, so every pool and cache has its size.
    let reqs = |batch: usize, new: usize| -> Vec<Request> {
        (0..batch)
            .map(|r| Request { prompt: vec![1 + r as u32, 5, 9], sampling, seed: r as u64, max_new_tokens: new })
            .collect()
    };
    let run = |gens: &mut Vec<(DType, Generator)>, cs: &mut CandleStream, new: usize| -> Res<usize> {
        let mut n = 0;
        for (_, g) in gens.iter_mut() {
            for b in Generator::BUCKETS {
                let mut steps = 0;
                g.generate(cs, &reqs(b, new), |p| steps = p.steps)?;
                n += steps;
            }
        }
        Ok(n)
    };
    run(&mut gens, cs, 4)?;
    let before = used_mib(cs)?;
    let t = Instant::now();
    let mut done = 0;
    // Each round: 3 dtypes x 6 buckets, `per` steps each (the first token is the prefill's).
    let per = 64;
    while done < steps {
        done += run(&mut gens, cs, per + 1)?;
    }
    let after = used_mib(cs)?;
    println!(
        "soak: {done} generate steps over buckets {:?} and {DTYPES:?} in {:.1?}; device memory in use {before:.1} MiB -> {after:.1} MiB ({:+.3} MiB)",
        Generator::BUCKETS,
        t.elapsed(),
        after - before
    );
    let steps_flat = (after - before).abs() <= 1.0;
    drop(gens);

    // Capture-and-drop cycles of a whole family.
    let model = Arc::new(Model::random(&cfg, DType::BF16, 512, device, 9)?);
    drop(Generator::new(cs, model.clone(), &Generator::BUCKETS)?);
    let before = used_mib(cs)?;
    let t = Instant::now();
    for _ in 0..cycles {
        drop(Generator::new(cs, model.clone(), &Generator::BUCKETS)?);
    }
    let after = used_mib(cs)?;
    println!(
        "cycles: {cycles} captures and drops of a {}-bucket family in {:.1?}; device memory in use {before:.1} MiB -> {after:.1} MiB ({:+.3} MiB)",
        Generator::BUCKETS.len(),
        t.elapsed(),
        after - before
    );
    let cycles_flat = (after - before).abs() <= 1.0;

    // A step that panics, and one that fails, mid-capture; then a capture that works.
    let before = used_mib(cs)?;
    let x = Tensor::ones(1 << 20, DType::F32, device)?;
    let y = Tensor::zeros(1 << 20, DType::F32, device)?;
    cs.warm_up(|| y.slice_set(&(&x * 2.0)?, 0, 0))?;
    // The panics below are the test: keep their messages out of the log.
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(|_| {}));
    for _ in 0..100 {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = cs.capture_owned((x.clone(), y.clone()), |(x, _)| -> capture_candle::Result<()> {
                let _t = (x * 2.0)?;
                panic!("mid-capture")
            });
        }));
        assert!(r.is_err());
        let e = cs.capture_owned((x.clone(), y.clone()), |(x, _)| {
            let _t = (x * 2.0)?;
            Err(candle_core::Error::Msg("fails mid-capture".into()).into())
        });
        assert!(e.is_err());
    }
    std::panic::set_hook(hook);
    let (g, _) = cs.capture_owned((x.clone(), y.clone()), |(x, y)| Ok(y.slice_set(&(x * 2.0)?, 0, 0)?))?;
    g.launch(cs.stream())?;
    let ok = y.get(3)?.to_scalar::<f32>()? == 2.0;
    drop(g);
    let after = used_mib(cs)?;
    println!(
        "mid-capture: 100 panics and 100 failures, then a capture that replays right ({ok}); device memory in use {before:.1} MiB -> {after:.1} MiB ({:+.3} MiB)",
        after - before
    );
    let failures_flat = (after - before).abs() <= 1.0;
    if !(steps_flat && cycles_flat && failures_flat && ok) {
        return Err("the soak did not hold".into());
    }
    println!("soak held");
    Ok(())
}

fn main() -> Res<()> {
    let Ok(device) = Device::new_cuda_with_stream(0) else {
        println!("ownership: no CUDA device; the proof is checked on the simulated device by capture-core's tests");
        return Ok(());
    };
    let mut cs = CandleStream::new(&device)?;
    match std::env::args().nth(1).as_deref() {
        Some("proof") => proof(&device, &mut cs),
        Some("soak") => soak(&device, &mut cs),
        _ => Err("usage: ownership proof [--configs a,b] [--max-seq N] | ownership soak [--config NAME] [--steps N] [--cycles N]".into()),
    }
}
