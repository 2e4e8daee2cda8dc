//! Issue #32's sampler benchmark: one row of logits per sequence over the Llama-3.2-1B
//! vocabulary (128,256, bf16), drawn by the multi-block sampler and by the single-block
//! kernel it replaced, each captured as a graph of 16 draws and replayed, alternated round
//! by round in one process, at batch 1, 8 and 32, greedy and sampled.
//!
//! ```text
//! sampling_bench [--rounds R] [--batches 1,8,32] [--vocab V]
//! ```
//! Without the LM head's packed argmax (this benchmark has no LM head) the multi-block path
//! runs its own argmax kernel first: the model's step skips it. Prints a markdown table and a
//! `json` line per measurement. Needs a CUDA GPU.

use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use capture_candle::decode::{Sampler, SamplingParams};
use capture_candle::{CandleStream, Result};

const DRAWS: usize = 16;

type Owned = (Sampler, Tensor, Tensor, Tensor);

fn main() -> Result<()> {
    let (mut rounds, mut batches, mut vocab) = (20usize, vec![1usize, 8, 32], 128_256usize);
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_default();
        match k.as_str() {
            "--rounds" => rounds = v.parse().unwrap_or(rounds),
            "--vocab" => vocab = v.parse().unwrap_or(vocab),
            "--batches" => batches = v.split(',').filter_map(|x| x.parse().ok()).collect(),
            _ => {
                eprintln!("unknown argument {k}");
                std::process::exit(2)
            }
        }
    }
    let device = match Device::new_cuda_with_stream(0) {
        Ok(d) => d,
        Err(e) => {
            println!("sampling_bench: no CUDA device ({e}); this benchmark needs a GPU");
            return Ok(());
        }
    };
    let mut cs = CandleStream::new(&device)?;
    let modes = [
        ("greedy", SamplingParams::GREEDY),
        ("T0.8 top-k 50 top-p 0.95", SamplingParams::new(0.8, 50, 0.95)?),
        ("T1.0", SamplingParams::new(1.0, 0, 1.0)?),
        ("T0.8 top-k 50", SamplingParams::new(0.8, 50, 1.0)?),
        ("T1.0 top-p 0.9", SamplingParams::new(1.0, 0, 0.9)?),
    ];
    println!("# sampler alone, vocabulary {vocab}, bf16 logits (random, spread 6), {rounds} rounds of {DRAWS} draws a replay\n");
    println!("| batch | mode | multi-block us/draw | single-block us/draw | single / multi |");
    println!("|---|---|---|---|---|");
    for &batch in &batches {
        let logits = (Tensor::randn(0f32, 2.0, (batch, vocab), &device)?.to_dtype(DType::BF16))?;
        let tokens = Tensor::zeros(batch, DType::U32, &device)?;
        let pos = Tensor::zeros(batch, DType::U32, &device)?;
        let sampler = Sampler::new(batch, &device)?;
        let owned: Owned = (sampler.clone(), logits, tokens, pos);
        let mut graphs = Vec::new();
        for single in [false, true] {
            let step = move |(s, l, t, p): &Owned| -> Result<()> {
                for _ in 0..DRAWS {
                    if single {
                        s.sample_single_block(l, t, p, None, 1)?;
                    } else {
                        s.sample(l, t, p, None, 1)?;
                    }
                }
                Ok(())
            };
            let o = owned.clone();
            cs.warm_up(|| step(&o).map_err(candle_core::Error::wrap))?;
            graphs.push(cs.capture_owned(owned.clone(), step)?.0);
        }
        for (name, p) in &modes {
            for r in 0..batch {
                sampler.set(r, p, 7 + r as u64)?;
            }
            let mut t = [Vec::new(), Vec::new()];
            for round in 0..=rounds {
                for (i, g) in graphs.iter().enumerate() {
                    cs.stream().synchronize()?;
                    let t0 = Instant::now();
                    g.launch(cs.stream())?;
                    cs.stream().synchronize()?;
                    if round > 0 {
                        t[i].push(t0.elapsed().as_secs_f64() * 1e6 / DRAWS as f64);
                    }
                }
            }
            let med = |v: &mut Vec<f64>| {
                v.sort_by(|a, b| a.total_cmp(b));
                v[v.len() / 2]
            };
            let (m, s) = (med(&mut t[0]), med(&mut t[1]));
            println!("| {batch} | {name} | {m:.1} | {s:.1} | {:.1}x |", s / m);
            println!(
                "json {{\"side\":\"sampler\",\"batch\":{batch},\"mode\":\"{name}\",\"multi_us\":{m:.2},\"single_us\":{s:.2}}}"
            );
        }
    }
    Ok(())
}
