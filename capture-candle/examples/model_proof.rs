//! The H100 proof of issue #21: the capture-ready Llama 3.2-1B and Qwen2.5-0.5B configs
//! (random bf16 weights), captured and replayed against eager decode.
//!
//! ```text
//! model_proof [--family llama|qwen2|both] [--tokens N] [--max-seq S]
//! ```
//! For each family: greedy replay bit-equal to eager (tokens and every logit) at batch 1
//! and 8; seeded sampling (top-k/top-p, and top-p alone beside other modes) by replay equal
//! to eager, and two seeds differing; replay validation catching a planted host position
//! and a planted sampler offset; time per token at positions 64 and 4,000 with the
//! attention and KV-write shares; the generate loop's tokens/s at batch 1 and 8. Needs a
//! CUDA GPU (it says so and exits 0 without one).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use capture_candle::decode::{self, SamplingParams};
use capture_candle::generate::{Generator, Request};
use capture_candle::model::{Config, DecodeState, Family, Model};
use capture_candle::{CandleStream, Error, Result};
use capture_core::validate::{Outputs, ReplayCheck};

/// An error of this example's own (bad arguments, a missing bucket).
fn fail(what: &str, value: impl std::fmt::Display, expected: &str) -> Error {
    Error::Candle(candle_core::Error::msg(format!("{what} = {value}: expected {expected}")))
}

fn token(i: usize, vocab: usize) -> u32 {
    let x = (i as u64 + 11).wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((x >> 33) % vocab as u64) as u32
}

fn prompt(row: usize, vocab: usize) -> Vec<u32> {
    (0..5 + 3 * row).map(|i| token(row * 100 + i, vocab)).collect()
}

/// Logits of every row as f32 bits (bf16 widens exactly), for bit comparison.
fn logit_bits(state: &DecodeState) -> Result<Vec<u32>> {
    let l = state.logits()?.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()?;
    Ok(l.into_iter().map(f32::to_bits).collect())
}

struct Run {
    tokens: Vec<Vec<u32>>,
    logits: Vec<Vec<u32>>,
}

/// Prefills rows `0..batch` and decodes `n` steps, eagerly or by replaying `family`. With
/// `sampling` (a seed and modes), row r draws with mode `r % modes.len()`, seeded
/// `seed + r`; greedy without.
fn decode_run(
    cs: &mut CandleStream,
    gen: &Generator,
    batch: usize,
    n: usize,
    sampling: Option<(u64, &[SamplingParams])>,
    replay: bool,
    keep_logits: bool,
) -> Result<Run> {
    let d = gen.decoder();
    let vocab = d.model.config().vocab_size;
    let state = d.state.rows(0, batch)?;
    for row in 0..batch {
        match sampling {
            None => state.sampler().set(row, &SamplingParams::GREEDY, 0)?,
            Some((seed, modes)) => state.sampler().set(row, &modes[row % modes.len()], seed + row as u64)?,
        }
        d.model.prefill(&state, row, &prompt(row, vocab))?;
    }
    let mut run = Run { tokens: vec![state.read_tokens()?], logits: Vec::new() };
    for _ in 0..n {
        if replay {
            gen.family().launch(cs, batch)?;
        } else {
            d.model.step(&state)?;
        }
        run.tokens.push(state.read_tokens()?);
        if keep_logits {
            run.logits.push(logit_bits(&state)?);
        }
    }
    Ok(run)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Replays of `graph` on `cs`, timed: milliseconds per replay (median of 5 rounds of `n`).
fn time_replays(
    cs: &mut CandleStream,
    graph: &capture_core::Graph<'_>,
    n: usize,
    mut before: impl FnMut() -> Result<()>,
) -> Result<f64> {
    let mut t = Vec::new();
    for _ in 0..5 {
        before()?;
        cs.stream().synchronize()?;
        let t0 = Instant::now();
        for _ in 0..n {
            graph.launch(cs.stream())?;
        }
        cs.stream().synchronize()?;
        t.push(t0.elapsed().as_secs_f64() * 1e3 / n as f64);
    }
    Ok(median(&mut t))
}

fn prove(family: Family, device: &Device, tokens: usize, max_seq: usize) -> Result<()> {
    let cfg = match family {
        Family::Llama => Config::llama_3_2_1b(),
        _ => Config::qwen2_5_0_5b(),
    };
    let t0 = Instant::now();
    let model = Arc::new(Model::random(&cfg, DType::BF16, max_seq, device, 1)?);
    println!(
        "\n## {family:?}: hidden {}, {} layers, {}/{} heads, vocab {}, {:.2} GB of bf16 weights, max_seq {max_seq} (made in {:.1?})",
        cfg.hidden_size,
        cfg.num_hidden_layers,
        cfg.num_attention_heads,
        cfg.num_key_value_heads,
        cfg.vocab_size,
        model.weight_bytes() as f64 / 1e9,
        t0.elapsed()
    );
    let mut cs = CandleStream::new(device)?;
    let t0 = Instant::now();
    let gen = Generator::new(&mut cs, model.clone(), &Generator::BUCKETS)?.with_stop_tokens(Vec::new());
    println!("captured buckets {:?} in {:.2?} (warm-ups included):", gen.family().buckets(), t0.elapsed());
    for c in gen.family().captures() {
        println!(
            "  bucket {:>2}: capture + instantiate {:>7.2?}, {} kernels, {} graph alloc nodes, graph pool {:.1} MiB",
            c.bucket,
            c.capture,
            c.report.nodes.kernels,
            c.report.nodes.mem_alloc,
            c.pool_reserved as f64 / (1 << 20) as f64
        );
    }

    // A. Greedy: replay bit-equal to eager.
    for batch in [1, 8] {
        let eager = decode_run(&mut cs, &gen, batch, tokens, None, false, true)?;
        let replay = decode_run(&mut cs, &gen, batch, tokens, None, true, true)?;
        let tok_diff = eager.tokens.iter().zip(&replay.tokens).filter(|(a, b)| a != b).count();
        let logit_diff: usize =
            eager.logits.iter().zip(&replay.logits).map(|(a, b)| a.iter().zip(b).filter(|(x, y)| x != y).count()).sum();
        let distinct: std::collections::BTreeSet<u32> = eager.tokens.iter().map(|t| t[0]).collect();
        println!(
            "greedy, batch {batch}, {tokens} steps: {} of {} token rows differ, {} of {} logits bit-unequal ({} distinct tokens in row 0) -> {}",
            tok_diff,
            eager.tokens.len(),
            logit_diff,
            eager.logits.len() * eager.logits[0].len(),
            distinct.len(),
            if tok_diff == 0 && logit_diff == 0 { "RESULT: bit-equal" } else { "RESULT: DIFFERENT" }
        );
    }
    // B. Seeded sampling: top-k/top-p on every row; then rows of top-p alone (whose draw
    // keeps a histogram in the sampler's scratch from one kernel to the next), top-k/top-p
    // and neither filter side by side.
    let topk = [SamplingParams::new(0.8, 50, 0.95)?];
    let mixed =
        [SamplingParams::new(1.0, 0, 0.9)?, SamplingParams::new(0.8, 50, 0.95)?, SamplingParams::new(1.0, 0, 1.0)?];
    for (name, modes) in [
        ("T 0.8, top-k 50, top-p 0.95", &topk[..]),
        ("rows of top-p 0.9 alone, top-k/top-p and T 1.0 in turn", &mixed[..]),
    ] {
        for batch in [1, 8] {
            let eager = decode_run(&mut cs, &gen, batch, tokens, Some((1000, modes)), false, false)?;
            let replay = decode_run(&mut cs, &gen, batch, tokens, Some((1000, modes)), true, false)?;
            let other = decode_run(&mut cs, &gen, batch, tokens, Some((2000, modes)), true, false)?;
            let same = eager.tokens == replay.tokens;
            let differs = replay.tokens.iter().zip(&other.tokens).filter(|(a, b)| a != b).count();
            println!(
                "sampling ({name}), batch {batch}, {tokens} steps: replay == eager for the same seeds: {same}; another seed differs at {differs} of {} steps -> {}",
                replay.tokens.len(),
                if same && differs > tokens / 2 { "RESULT: ok" } else { "RESULT: FAILED" }
            );
        }
    }

    // C. Replay validation: the right step passes; two planted bugs are caught.
    let d = gen.decoder();
    let state = d.state.rows(0, 1)?;
    let vocab = cfg.vocab_size;
    let positions = [3u32, 17, 42, 99, 131, 200];
    let host_pos = Arc::new(AtomicU32::new(0));
    let write = {
        let (state, host_pos) = (state.clone(), host_pos.clone());
        move |i: usize, _: &mut capture_core::Stream<capture_core::Idle>| -> Result<()> {
            state.set_row(0, positions[i], true)?;
            state.set_token(0, token(500 + i, vocab))?;
            state.sampler().set(0, &SamplingParams::new(1.0, 0, 1.0)?, 77)?;
            host_pos.store(positions[i], Ordering::SeqCst);
            Ok(())
        }
    };
    let read = {
        let state = state.clone();
        move |_: &mut capture_core::Stream<capture_core::Idle>| -> Result<Outputs> {
            Ok(Outputs::new().with("logits", logit_bits(&state)?).with("token", state.read_tokens()?))
        }
    };
    let check = ReplayCheck::new(positions.len()).with_error_type::<Error>();
    let graph1 = gen.family().graph(1).ok_or(fail("bucket", 1, "captured"))?;
    let ok = {
        let (m, s) = (d.model.clone(), state.clone());
        check.run(graph1, cs.stream(), write.clone(), move |_, _| m.step(&s), read.clone())?
    };
    println!("replay validation of the decode step over {} positions: {ok}", positions.len());
    // Planted 1: the position uploaded from a host value inside the step.
    let host_pos_step = |m: &Model, s: &DecodeState, p: u32| -> Result<()> {
        s.pos().slice_set(&Tensor::new(&[p], s.pos().device())?, 0, 0)?;
        m.step(s)
    };
    host_pos.store(positions[0], Ordering::SeqCst);
    let res = (d.model.clone(), state.clone(), host_pos.clone());
    cs.warm_up(|| host_pos_step(&res.0, &res.1, res.2.load(Ordering::SeqCst)).map_err(candle_core::Error::wrap))?;
    let (planted, _) = cs.capture_owned(res, move |(m, s, p)| host_pos_step(m, s, p.load(Ordering::SeqCst)))?;
    let r = {
        let (m, s, p) = (d.model.clone(), state.clone(), host_pos.clone());
        check.run(
            &planted,
            cs.stream(),
            write.clone(),
            move |_, _| host_pos_step(&m, &s, p.load(Ordering::SeqCst)),
            read.clone(),
        )
    };
    match r {
        Err(Error::Capture(e @ capture_core::Error::ReplayDiverged { .. })) => {
            println!("planted host position: RESULT: caught: {e}")
        }
        other => println!("planted host position: RESULT: NOT caught ({other:?})"),
    }
    // Planted 2: the sampler's counter passed by value (uploaded inside the step).
    let host_ctr = Arc::new(AtomicU32::new(0));
    let offset_step = |m: &Model, s: &DecodeState, c: u32| -> Result<()> {
        // The row's generator state written from host values: seed 77, counter `c`.
        let g = Tensor::new(&[[77u32, 0, c, 0]], s.pos().device())?;
        s.sampler_state().slice_set(&g, 0, 0)?;
        m.step(s)
    };
    let write2 = {
        let (w, c) = (write.clone(), host_ctr.clone());
        move |i: usize, st: &mut capture_core::Stream<capture_core::Idle>| -> Result<()> {
            w(0, st)?; // the same position and token for every set: only the draw changes
            c.store(i as u32 + 1, Ordering::SeqCst);
            Ok(())
        }
    };
    host_ctr.store(1, Ordering::SeqCst);
    let res = (d.model.clone(), state.clone(), host_ctr.clone());
    cs.warm_up(|| offset_step(&res.0, &res.1, res.2.load(Ordering::SeqCst)).map_err(candle_core::Error::wrap))?;
    let (planted2, _) = cs.capture_owned(res, move |(m, s, c)| offset_step(m, s, c.load(Ordering::SeqCst)))?;
    let r = {
        let (m, s, c) = (d.model.clone(), state.clone(), host_ctr.clone());
        let read_tok = {
            let state = state.clone();
            move |_: &mut capture_core::Stream<capture_core::Idle>| -> Result<Outputs> {
                Ok(Outputs::new().with("token", state.read_tokens()?))
            }
        };
        check.run(&planted2, cs.stream(), write2, move |_, _| offset_step(&m, &s, c.load(Ordering::SeqCst)), read_tok)
    };
    match r {
        Err(Error::Capture(e @ capture_core::Error::ReplayDiverged { .. })) => {
            println!("planted sampler offset: RESULT: caught: {e}")
        }
        other => println!("planted sampler offset: RESULT: NOT caught ({other:?})"),
    }

    // D. Cost against position: a whole step, and the attention and KV-write ops alone
    // (16 of each in one graph, like the layers).
    let n = 40;
    let layers = cfg.num_hidden_layers;
    let cache = d.state.caches()[0].rows(0, 1)?;
    let q = Tensor::zeros((1, cfg.num_attention_heads, 1, cfg.head_dim), DType::BF16, device)?;
    let qkv = Tensor::zeros(
        (1, (cfg.num_attention_heads + 2 * cfg.num_key_value_heads) * cfg.head_dim),
        DType::BF16,
        device,
    )?;
    let scale = 1.0 / (cfg.head_dim as f32).sqrt();
    let rope = decode::RopeTable::new(
        cfg.head_dim,
        max_seq,
        cfg.rope_theta,
        cfg.rope_scaling.as_ref(),
        decode::RopeLayout::Halves,
        device,
    )?;
    let ops_res = (q, qkv, cache, state.clone(), rope);
    let att_step =
        move |(q, _, c, s, _): &(Tensor, Tensor, decode::KvCache, DecodeState, decode::RopeTable)| -> Result<()> {
            for _ in 0..layers {
                decode::attention(q, c, s.pos(), scale)?;
            }
            Ok(())
        };
    let nq = cfg.num_attention_heads;
    let write_step =
        move |(_, x, c, s, r): &(Tensor, Tensor, decode::KvCache, DecodeState, decode::RopeTable)| -> Result<()> {
            for _ in 0..layers {
                decode::qkv_rope_write(x, None, r, s.pos(), Some(s.active()), c, s.overflow(), nq)?;
            }
            Ok(())
        };
    state.set_row(0, 64, true)?;
    cs.warm_up(|| att_step(&ops_res).and_then(|_| write_step(&ops_res)).map_err(candle_core::Error::wrap))?;
    let (att_g, _) = cs.capture_owned(ops_res.clone(), att_step)?;
    let (wr_g, _) = cs.capture_owned(ops_res.clone(), write_step)?;
    println!("| position | step ms/token (replay) | attention, all layers (ms) | KV write + rope, all layers (ms) |");
    println!("|---|---|---|---|");
    for p in [64u32, 4000] {
        let p = p.min(max_seq as u32 - n as u32 - 1);
        let step = time_replays(&mut cs, graph1, n, || state.set_row(0, p, true))?;
        let att = time_replays(&mut cs, &att_g, n, || state.set_row(0, p, true))?;
        let wr = time_replays(&mut cs, &wr_g, n, || state.set_row(0, p, true))?;
        println!("| {p} | {step:.3} | {att:.3} ({:.0}%) | {wr:.3} ({:.0}%) |", 100.0 * att / step, 100.0 * wr / step);
    }

    // E. The generate loop.
    let mut gen = gen;
    for batch in [1usize, 8] {
        let reqs: Vec<Request> = (0..batch)
            .map(|r| Request {
                prompt: prompt(r, vocab),
                sampling: SamplingParams::new(0.8, 50, 0.95).unwrap_or(SamplingParams::GREEDY),
                seed: r as u64,
                max_new_tokens: tokens,
            })
            .collect();
        let mut last = None;
        let out = gen.generate(&mut cs, &reqs, |p| last = Some(*p))?;
        let p = last.ok_or(fail("steps", 0, "at least one"))?;
        let n_tok: usize = out.iter().map(|g| g.tokens.len()).sum();
        println!(
            "generate, batch {batch}: {n_tok} tokens in {} steps, {:.2?} after prefill: {:.0} tokens/s ({:.3} ms/step); stops: {:?}",
            p.steps,
            p.elapsed,
            p.tokens as f64 / p.elapsed.as_secs_f64(),
            p.elapsed.as_secs_f64() * 1e3 / p.steps as f64,
            out.iter().map(|g| format!("{:?}", g.stop)).collect::<std::collections::BTreeSet<_>>()
        );
    }
    Ok(())
}

fn main() -> Result<()> {
    let mut family = "both".to_string();
    let (mut tokens, mut max_seq) = (256usize, 4096usize);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut val = || it.next().unwrap_or_default();
        match a.as_str() {
            "--family" => family = val(),
            "--tokens" => tokens = val().parse().map_err(|_| fail("--tokens", "?", "a number"))?,
            "--max-seq" => max_seq = val().parse().map_err(|_| fail("--max-seq", "?", "a number"))?,
            other => return Err(fail("argument", other, "--family llama|qwen2|both, --tokens N, --max-seq S")),
        }
    }
    let device = match Device::new_cuda_with_stream(0) {
        Ok(d) => d,
        Err(e) => {
            println!("model_proof: no CUDA device ({e}); this example needs a GPU");
            return Ok(());
        }
    };
    if family == "llama" || family == "both" {
        prove(Family::Llama, &device, tokens, max_seq)?;
    }
    if family == "qwen2" || family == "both" {
        prove(Family::Qwen2, &device, tokens, max_seq)?;
    }
    Ok(())
}
