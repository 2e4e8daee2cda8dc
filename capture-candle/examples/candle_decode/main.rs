//! A candle decoder's decode step captured on candle's own stream and replayed per token,
//! checked against candle's eager decode, with a planted stale-position bug caught, and timed.
//!
//! ```text
//! candle_decode [check|bench|all] [--tokens N] [--rounds R] [--layers L]
//! ```
//! Needs a CUDA GPU (it says so and exits 0 without one).

mod model;

use std::time::Instant;

use candle_core::{Device, Tensor};
use capture_candle::{CandleStream, Error};
use capture_core::validate::{Outputs, ReplayCheck};
use capture_core::Graph;
use model::{Config, Model, State};

struct Args {
    check: bool,
    bench: bool,
    tokens: usize,
    rounds: usize,
    layers: usize,
}

fn parse_args() -> Args {
    let mut a = Args { check: true, bench: true, tokens: 128, rounds: 15, layers: 4 };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut num = |name: &str| -> usize {
            it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
                eprintln!("{name} takes a positive number");
                std::process::exit(2)
            })
        };
        match arg.as_str() {
            "check" => (a.check, a.bench) = (true, false),
            "bench" => (a.check, a.bench) = (false, true),
            "all" => (a.check, a.bench) = (true, true),
            "--tokens" => a.tokens = num("--tokens"),
            "--rounds" => a.rounds = num("--rounds"),
            "--layers" => a.layers = num("--layers"),
            other => {
                eprintln!("unknown argument {other:?}; usage: candle_decode [check|bench|all] [--tokens N] [--rounds R] [--layers L]");
                std::process::exit(2)
            }
        }
    }
    a
}

/// Fresh, repeatable token ids.
fn token_id(step: usize, vocab: usize) -> u32 {
    let x = (step as u64 + 1).wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
    ((x >> 33) % vocab as u64) as u32
}

/// Writes the step's inputs into the state's device tensors (outside any graph).
fn write_inputs(state: &State, dev: &Device, token: u32, pos: u32) -> candle_core::Result<()> {
    state.token.slice_set(&Tensor::new(&[token], dev)?, 0, 0)?;
    state.pos.slice_set(&Tensor::new(&[pos], dev)?, 0, 0)
}

fn logits(state: &State) -> candle_core::Result<Vec<f32>> {
    state.logits.flatten_all()?.to_vec1::<f32>()
}

fn main() -> Result<(), Error> {
    env_logger_init();
    let args = parse_args();
    let device = match Device::new_cuda_with_stream(0) {
        Ok(d) => d,
        Err(e) => {
            println!("candle_decode: no CUDA device ({e}); this example needs a GPU");
            return Ok(());
        }
    };
    let cfg = Config { vocab: 8192, hidden: 512, heads: 8, mlp: 1536, layers: args.layers, max_seq: 256 };
    assert!(args.tokens <= cfg.max_seq, "--tokens is at most {}", cfg.max_seq);
    device.set_seed(7)?;
    let model = std::sync::Arc::new(Model::random(cfg, &device)?);
    let state = std::sync::Arc::new(model.new_state(&device)?);
    let mut cs = CandleStream::new(&device)?;
    println!("device: {} ({:?}); model: {cfg:?}", cs.context().name(), device.location());

    // Capture one decode step, after a warm-up at position 0.
    write_inputs(&state, &device, 1, 0)?;
    cs.warm_up(|| model.step(&state))?;
    let (graph, report) = cs.capture_owned((model.clone(), state.clone()), |(m, s)| Ok(m.step(s)?))?;
    println!("captured decode step:\n{report}");

    if args.check {
        check(&mut cs, &device, (&model, &state), &graph, args.tokens)?;
    }
    if args.bench {
        bench(&mut cs, &device, &model, &state, &graph, args.tokens, args.rounds)?;
    }
    Ok(())
}

fn env_logger_init() {
    let _ = env_logger::builder().is_test(false).try_init();
}

/// Decodes `tokens` tokens eagerly, then the same tokens by replay, and compares every
/// logit; then captures the planted stale-position step and shows that it diverges.
type Owned = (std::sync::Arc<Model>, std::sync::Arc<State>);

fn check(
    cs: &mut CandleStream,
    dev: &Device,
    owned: (&std::sync::Arc<Model>, &std::sync::Arc<State>),
    graph: &Graph<'_>,
    tokens: usize,
) -> Result<(), Error> {
    let owned: Owned = (owned.0.clone(), owned.1.clone());
    let (model, state) = (&*owned.0, &*owned.1);
    let vocab = state.logits.dims()[1];
    model.reset(state)?;
    let mut eager = Vec::with_capacity(tokens);
    for t in 0..tokens {
        write_inputs(state, dev, token_id(t, vocab), t as u32)?;
        model.step(state)?;
        eager.push(logits(state)?);
    }
    model.reset(state)?;
    let (mut max_abs, mut unequal, mut first) = (0f32, 0usize, None);
    for (t, e) in eager.iter().enumerate() {
        write_inputs(state, dev, token_id(t, vocab), t as u32)?;
        graph.launch(cs.stream())?;
        let r = logits(state)?;
        for (i, (a, b)) in e.iter().zip(&r).enumerate() {
            if a.to_bits() != b.to_bits() {
                unequal += 1;
                first.get_or_insert((t, i, *a, *b));
                max_abs = max_abs.max((a - b).abs());
            }
        }
    }
    println!(
        "replay vs eager over {tokens} tokens x {vocab} logits: {} bit-unequal, max |diff| {max_abs:e}{}",
        unequal,
        first.map(|(t, i, a, b)| format!(", first at token {t} logit {i}: eager {a} replay {b}")).unwrap_or_default()
    );
    if unequal > 0 {
        println!("RESULT: replay differs from eager");
    } else {
        println!("RESULT: replay is bit-equal to eager");
    }

    // The same comparison as a library call: replay validation on fresh inputs.
    let positions = [3u32, 17, 42, 99, 131, 200, 7, 255];
    let set_inputs = |i: usize| (token_id(1000 + i, vocab), positions[i % positions.len()]);
    let validation = ReplayCheck::new(positions.len()).with_error_type::<Error>();
    let read = |_: &mut _| -> Result<Outputs, Error> { Ok(Outputs::new().with("logits", logits(state)?)) };
    let write = |i: usize, _: &mut _| -> Result<(), Error> {
        let (token, pos) = set_inputs(i);
        model.reset(state)?;
        Ok(write_inputs(state, dev, token, pos)?)
    };
    let good = validation.run(graph, cs.stream(), write, |_, _| Ok(model.step(state)?), read)?;
    println!("replay validation of the decode step: {good}");

    // The planted bug: the position is read on the host and uploaded inside the step, so
    // the capture bakes in the position it saw (candle serves the upload from its cache).
    model.reset(state)?;
    write_inputs(state, dev, 1, 0)?;
    cs.warm_up(|| model.step_with_host_position(state, 0))?;
    let (stale, _) = cs.capture_owned(owned.clone(), |(m, s)| Ok(m.step_with_host_position(s, 0)?))?;
    let planted = validation.run(
        &stale,
        cs.stream(),
        write,
        |i, _| Ok(model.step_with_host_position(state, set_inputs(i).1)?),
        read,
    );
    match planted {
        Err(Error::Capture(e @ capture_core::Error::ReplayDiverged { .. })) => {
            println!("replay validation of the planted stale-position step: caught: {e}");
            println!("RESULT: planted stale position caught");
        }
        Ok(r) => println!("RESULT: planted stale position NOT caught ({r})"),
        Err(e) => return Err(e),
    }
    Ok(())
}

/// Per-token time of eager candle against graph replay, interleaved round by round in one
/// process. Each token writes its inputs, runs the step, and reads the greedy next token
/// back to the host (what a decode loop does).
fn bench(
    cs: &mut CandleStream,
    dev: &Device,
    model: &Model,
    state: &State,
    graph: &Graph<'_>,
    tokens: usize,
    rounds: usize,
) -> Result<(), Error> {
    let vocab = state.logits.dims()[1];
    let mut eager_ms = Vec::new();
    let mut replay_ms = Vec::new();
    for round in 0..rounds + 1 {
        model.reset(state)?;
        let t0 = Instant::now();
        for t in 0..tokens {
            write_inputs(state, dev, token_id(t, vocab), t as u32)?;
            model.step(state)?;
            let _next = state.next.to_vec1::<u32>()?;
        }
        let eager = t0.elapsed().as_secs_f64() * 1e3 / tokens as f64;
        model.reset(state)?;
        let t0 = Instant::now();
        for t in 0..tokens {
            write_inputs(state, dev, token_id(t, vocab), t as u32)?;
            graph.launch(cs.stream())?;
            let _next = state.next.to_vec1::<u32>()?;
        }
        let replay = t0.elapsed().as_secs_f64() * 1e3 / tokens as f64;
        if round > 0 {
            // Round 0 warms both paths up.
            eager_ms.push(eager);
            replay_ms.push(replay);
        }
    }
    let stats = |v: &mut Vec<f64>| {
        v.sort_by(|a, b| a.total_cmp(b));
        let q = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
        (q(0.5), q(0.1), q(0.9), v[0], v[v.len() - 1])
    };
    let (em, e10, e90, emin, emax) = stats(&mut eager_ms);
    let (rm, r10, r90, rmin, rmax) = stats(&mut replay_ms);
    println!("| path | median ms/token | p10 | p90 | min | max |");
    println!("| --- | --- | --- | --- | --- | --- |");
    println!("| candle eager | {em:.4} | {e10:.4} | {e90:.4} | {emin:.4} | {emax:.4} |");
    println!("| graph replay (capture-candle) | {rm:.4} | {r10:.4} | {r90:.4} | {rmin:.4} | {rmax:.4} |");
    println!("speedup (median eager / median replay): {:.2}x over {rounds} rounds of {tokens} tokens", em / rm);
    Ok(())
}
