//! Issue #22's benchmark, capture-candle's side: the Llama-3.2-1B config (random bf16
//! weights) decoded eagerly, by replaying the unfused step, and by replaying the fused step,
//! alternated round by round in one process, at batch 1 and 8 and positions 64 and 2,000;
//! then a breakdown of the fused step into sub-graphs of one class of operations each.
//!
//! ```text
//! llama_bench [--config NAME] [--rounds R] [--tokens N] [--max-seq S] [--batches 1,8] [--positions 64,2000]
//! ```
//! Each token counts the step and the read-back of the next token to the host (the inputs
//! are already on the device: the step writes them). Prints a markdown table and, per
//! measurement, a `json` line. Needs a CUDA GPU.

use std::sync::Arc;
use std::time::Instant;

use candle_core::{DType, Device};
use capture_candle::decode::SamplingParams;
use capture_candle::model::{Config, DecodeState, Model, Part};
use capture_candle::{CandleGraph, CandleStream, Result};

const HBM: f64 = 3.35e12;

fn median(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn set_rows(state: &DecodeState, pos: u32) -> Result<()> {
    for r in 0..state.batch() {
        state.set_row(r, pos, true)?;
        state.set_token(r, 1000 + r as u32)?;
    }
    Ok(())
}

type Owned = (Arc<Model>, DecodeState);

fn main() -> Result<()> {
    let (mut config, mut rounds, mut tokens, mut max_seq) = ("llama-3.2-1b".to_string(), 10usize, 32usize, 2112usize);
    let (mut batches, mut positions) = (vec![1usize, 8], vec![64u32, 2000]);
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().unwrap_or_default();
        let list = |v: &str| v.split(',').filter_map(|x| x.parse().ok()).collect::<Vec<usize>>();
        match k.as_str() {
            "--config" => config = v,
            "--rounds" => rounds = v.parse().unwrap_or(rounds),
            "--tokens" => tokens = v.parse().unwrap_or(tokens),
            "--max-seq" => max_seq = v.parse().unwrap_or(max_seq),
            "--batches" => batches = list(&v),
            "--positions" => positions = list(&v).into_iter().map(|p| p as u32).collect(),
            _ => {
                eprintln!("unknown argument {k}");
                std::process::exit(2)
            }
        }
    }
    let device = match Device::new_cuda_with_stream(0) {
        Ok(d) => d,
        Err(e) => {
            println!("llama_bench: no CUDA device ({e}); this benchmark needs a GPU");
            return Ok(());
        }
    };
    let cfg = Config::named(&config)?;
    let model = Arc::new(Model::random(&cfg, DType::BF16, max_seq, &device, 1)?);
    let weights = model.weight_bytes() as f64;
    let mut cs = CandleStream::new(&device)?;
    println!(
        "# {config}: {:.3} GB of bf16 weights, max_seq {max_seq}, {rounds} rounds of {tokens} tokens",
        weights / 1e9
    );
    println!("\n| batch | position | path | ms/token (median) | min | max | tokens/s | HBM share | kernels/step | capture+instantiate ms |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for &batch in &batches {
        let state = model.new_state(batch)?;
        for r in 0..batch {
            state.sampler().set(r, &SamplingParams::GREEDY, 0)?;
        }
        set_rows(&state, 64)?;
        let owned: Owned = (model.clone(), state.clone());
        let mut graphs: Vec<(&str, CandleGraph<Owned>, f64)> = Vec::new();
        for (name, fused) in [("replay, unfused", false), ("replay, fused", true)] {
            let step = move |(m, s): &Owned| if fused { m.step(s) } else { m.step_unfused(s) };
            cs.warm_up(|| step(&owned).map_err(candle_core::Error::wrap))?;
            let t = Instant::now();
            let (g, _report) = cs.capture_owned(owned.clone(), step)?;
            graphs.push((name, g, t.elapsed().as_secs_f64() * 1e3));
        }
        for &pos in &positions {
            let kv_bytes = 2.0
                * cfg.num_hidden_layers as f64
                * (batch * cfg.num_key_value_heads * cfg.head_dim) as f64
                * 2.0
                * (pos as f64 + tokens as f64 / 2.0);
            let bytes = weights + kv_bytes;
            let mut times: Vec<Vec<f64>> = vec![Vec::new(); 1 + graphs.len()];
            for round in 0..=rounds {
                for (i, ti) in times.iter_mut().enumerate() {
                    set_rows(&state, pos)?;
                    cs.stream().synchronize()?;
                    let t = Instant::now();
                    for _ in 0..tokens {
                        if i == 0 {
                            model.step(&state)?;
                        } else {
                            graphs[i - 1].1.launch(cs.stream())?;
                        }
                        let _next = state.read_tokens()?;
                    }
                    if round > 0 {
                        ti.push(t.elapsed().as_secs_f64() * 1e3 / tokens as f64);
                    }
                }
            }
            for (i, ti) in times.iter_mut().enumerate() {
                let (med, lo, hi) = median(ti);
                let (name, kernels, cap) = match i {
                    0 => ("eager (capture-ready layers)", String::from("-"), String::from("-")),
                    _ => (
                        graphs[i - 1].0,
                        graphs[i - 1].1.nodes().kernels.to_string(),
                        format!("{:.2}", graphs[i - 1].2),
                    ),
                };
                let share = bytes / (med * 1e-3) / HBM;
                println!(
                    "| {batch} | {pos} | {name} | {med:.3} | {lo:.3} | {hi:.3} | {:.0} | {:.0}% | {kernels} | {cap} |",
                    batch as f64 * 1e3 / med,
                    share * 100.0
                );
                println!(
                    "json {{\"side\":\"capture-candle\",\"batch\":{batch},\"pos\":{pos},\"path\":\"{name}\",\"ms\":{med:.4},\"min\":{lo:.4},\"max\":{hi:.4},\"kernels\":\"{kernels}\",\"capture_ms\":\"{cap}\",\"bytes\":{bytes:.0}}}"
                );
            }
            // Breakdown of the fused step: each class of operations as a sub-graph.
            let mut parts = Vec::new();
            for part in Part::ALL {
                let o = owned.clone();
                set_rows(&state, pos)?;
                cs.warm_up(|| o.0.run_part(&o.1, part).map_err(candle_core::Error::wrap))?;
                let (g, _) = cs.capture_owned(o, move |(m, s): &Owned| m.run_part(s, part))?;
                let mut t = Vec::new();
                for _ in 0..5 {
                    set_rows(&state, pos)?;
                    cs.stream().synchronize()?;
                    let t0 = Instant::now();
                    for _ in 0..20 {
                        g.launch(cs.stream())?;
                    }
                    cs.stream().synchronize()?;
                    t.push(t0.elapsed().as_secs_f64() * 1e3 / 20.0);
                }
                parts.push((part, median(&mut t).0, g.nodes().kernels));
            }
            let total: f64 = parts.iter().map(|p| p.1).sum();
            println!("\nbreakdown, batch {batch}, position {pos} (sub-graphs replayed alone; sum {total:.3} ms):\n");
            println!("| part | ms | share | kernels |");
            println!("|---|---|---|---|");
            for (p, ms, k) in &parts {
                println!("| {p:?} | {ms:.3} | {:.0}% | {k} |", 100.0 * ms / total);
                println!("json {{\"side\":\"breakdown\",\"batch\":{batch},\"pos\":{pos},\"part\":\"{p:?}\",\"ms\":{ms:.4},\"kernels\":{k}}}");
            }
            println!();
        }
    }
    Ok(())
}
