//! Issue #22's benchmark, capture-candle's side: the Llama-3.2-1B config (random bf16
//! weights) decoded eagerly, by replaying the unfused step, and by replaying the fused step,
//! alternated round by round in one process, at batch 1 and 8 and positions 64 and 2,000;
//! then a breakdown of the fused step into sub-graphs of one class of operations each.
//! Issue #32 adds sampled decoding, batch 32, long positions, and the `Generator` protocol.
//! `--config` names another config of `Config::named`: `llama-3.1-8b` for heads of 128.
//!
//! ```text
//! llama_bench [--config NAME] [--rounds R] [--tokens N] [--max-seq S] [--batches 1,8] [--positions 64,2000]
//!             [--sampling greedy,topk,topp,plain] [--paths eager,unfused,fused,cublas,plain-launch|none] [--no-breakdown]
//!             [--generator] [--prompt-len 32] [--new-tokens 128] [--ragged MAX] [--attention BxTxP,...]
//! ```
//! Each token counts the step and the read-back of the next token to the host (the inputs
//! are already on the device: the step writes them). Prints a markdown table and, per
//! measurement, a `json` line. Needs a CUDA GPU.
//!
//! `--sampling`: the ways the next token is drawn, each timed on the same captured graph (the
//! sampler's parameters live in device memory and are set, with a fixed seed per row, before
//! each timed run): `greedy` (the default), `topk` (temperature 0.8, top-k 50, top-p 0.95),
//! `topp` (temperature 1, top-p 0.9 alone) and `plain` (temperature 1, every token). The
//! modes alternate round by round like the paths; with more than greedy, the table gains a
//! `sampling` column and each row's time over greedy's on the same path.
//!
//! `--paths`: which steps to time (`none` skips the step benchmark; `cublas`, not in the
//! default list, is the fused step with cuBLAS products at every batch, how 3 to 8 rows ran
//! before the tensor-core kernel; `plain-launch`, not in the default list either, is the fused
//! step with programmatic dependent launch turned off, on a second model with the same
//! weights, where `fused` has it on GPUs that do, up to `decode::matvec_rows` rows:
//! `Model::set_programmatic_launch`; `unfused` and `cublas` launch plainly).
//! `--no-breakdown` skips the per-part sub-graphs.
//!
//! `--generator`: after the step benchmark, the `Generator` protocol: for each batch of
//! `--batches` (buckets captured once), requests of a `--prompt-len`-token prompt that
//! generate exactly `--new-tokens` tokens (no stop tokens), in each sampling mode, `--rounds`
//! rounds alternated. A request's time is the whole `generate` call: the sampler and row
//! uploads, the eager prefill of the rows together (which draws the first new token), every
//! replayed step, and the host's read of the tokens after each (and of the overflow flags once
//! a row can have reached the cache's end). The decode time per step counts the steps where no
//! row stopped yet: one replay and its reads each.
//!
//! `--ragged MAX`: the prefill of prompts of mixed lengths (fixed pseudo-random lengths from 16
//! to MAX tokens), for each batch of `--batches`: `Model::prefill_rows` with the rows in the
//! prompts' given order (how `generate` placed requests until 2026-12-02) and in order of
//! length (how it places them since); in order of length with rounds of at most 256 tokens a
//! row (`PrefillRounds::new(2048, 256)`: the rounds before 2026-12-02's fourth session); and in
//! order of length with the prefill's attention in the per-token kernel
//! (`Model::set_tiled_attention(false)`: the kernel before 2026-12-02's third session). The
//! last two run on models of their own with the same weights (three models' weights on the
//! GPU at once). All four alternate round by round; each time ends with the read of the rows'
//! first tokens.
//!
//! `--attention BxTxP,...`: last, `decode::attention_using` on bf16 operands of the config's
//! heads, B rows of T tokens after a prefix of P positions, in the tiled and the per-token
//! kernels, alternated round by round, launched eagerly as a prefill launches them: each time
//! is a median over rounds of one sync'd batch of launches (enough for about 2 ms). Where the
//! tiled kernel does not take the shape (fewer than 16 tokens, other heads) its cells are `–`.

use std::sync::Arc;
use std::time::Instant;

use candle_core::{DType, Device};
use capture_candle::decode::SamplingParams;
use capture_candle::decode::{attention_using, AttentionKernel, KvCache};
use capture_candle::generate::{Generator, Progress, Request};
use capture_candle::model::{Config, DecodeState, Model, Part, PrefillRounds};
use capture_candle::{CandleGraph, CandleStream, Result};

/// The device's peak memory bandwidth in bytes/s, from the driver: the memory clock (kHz) × 2
/// (double data rate) × the bus width (bits) / 8. An H100 SXM reports 2,619 MHz and 5,120 bits:
/// 3.35 TB/s, its datasheet figure. `None` where the driver reports neither.
fn peak_bandwidth(device: &Device) -> Option<f64> {
    use cudarc::driver::sys::CUdevice_attribute as A;
    let Device::Cuda(d) = device else { return None };
    let stream = d.cuda_stream();
    let ctx = stream.context();
    let khz = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).ok()?;
    let bits = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH).ok()?;
    (khz > 0 && bits > 0).then(|| khz as f64 * 1e3 * 2.0 * bits as f64 / 8.0)
}

/// How the next token is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    Greedy,
    /// Temperature 0.8, top-k 50, top-p 0.95.
    TopK,
    /// Temperature 1, top-p 0.9, no top-k.
    TopP,
    /// Temperature 1 over the whole vocabulary.
    Plain,
}

impl Mode {
    fn parse(s: &str) -> Option<Self> {
        match s {
            "greedy" => Some(Self::Greedy),
            "topk" => Some(Self::TopK),
            "topp" => Some(Self::TopP),
            "plain" => Some(Self::Plain),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Greedy => "greedy",
            Self::TopK => "topk",
            Self::TopP => "topp",
            Self::Plain => "plain",
        }
    }

    fn params(self) -> Result<SamplingParams> {
        match self {
            Self::Greedy => Ok(SamplingParams::GREEDY),
            Self::TopK => SamplingParams::new(0.8, 50, 0.95),
            Self::TopP => SamplingParams::new(1.0, 0, 0.9),
            Self::Plain => SamplingParams::new(1.0, 0, 1.0),
        }
    }
}

/// A decode step the step benchmark times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Path {
    Eager,
    Unfused,
    Fused,
    /// The fused step with cuBLAS products at every batch (how 3 to 8 rows ran before the
    /// tensor-core kernel): not in the default list.
    Cublas,
    /// The fused step with programmatic dependent launch turned off (a second model, the same
    /// weights), to compare with `fused` (on by default on GPUs that have it): not in the
    /// default list.
    PlainLaunch,
}

impl Path {
    const ALL: [Path; 3] = [Path::Eager, Path::Unfused, Path::Fused];

    fn parse(s: &str) -> Option<Self> {
        match s {
            "eager" => Some(Self::Eager),
            "unfused" => Some(Self::Unfused),
            "fused" => Some(Self::Fused),
            "cublas" => Some(Self::Cublas),
            "plain-launch" => Some(Self::PlainLaunch),
            _ => None,
        }
    }

    /// The name in the table and the `json` lines (as before issue #32).
    fn name(self) -> &'static str {
        match self {
            Self::Eager => "eager (capture-ready layers)",
            Self::Unfused => "replay, unfused",
            Self::Fused => "replay, fused",
            Self::Cublas => "replay, fused, cuBLAS products",
            Self::PlainLaunch => "replay, fused, plain launch",
        }
    }
}

struct Args {
    config: String,
    rounds: usize,
    tokens: usize,
    max_seq: usize,
    batches: Vec<usize>,
    positions: Vec<u32>,
    sampling: Vec<Mode>,
    paths: Vec<Path>,
    breakdown: bool,
    generator: bool,
    prompt_len: usize,
    new_tokens: usize,
    /// `--ragged MAX`: the longest prompt of the ragged prefill benchmark (0: not run).
    ragged: usize,
    /// `--attention BxTxP,...`: the attention shapes to time in both kernels (batch, tokens a
    /// row, prefix before them).
    attention: Vec<(usize, usize, usize)>,
}

const USAGE: &str = "usage: llama_bench [--config NAME] [--rounds R] [--tokens N] [--max-seq S] [--batches 1,8] \
[--positions 64,2000] [--sampling greedy,topk,topp,plain] [--paths eager,unfused,fused,cublas,plain-launch|none] [--no-breakdown] \
[--generator] [--prompt-len 32] [--new-tokens 128] [--ragged MAX] [--attention BxTxP,...]";

fn parse_args() -> std::result::Result<Args, String> {
    let mut a = Args {
        config: "llama-3.2-1b".to_string(),
        rounds: 10,
        tokens: 32,
        max_seq: 2112,
        batches: vec![1, 8],
        positions: vec![64, 2000],
        sampling: vec![Mode::Greedy],
        paths: Path::ALL.to_vec(),
        breakdown: true,
        generator: false,
        prompt_len: 32,
        new_tokens: 128,
        ragged: 0,
        attention: Vec::new(),
    };
    fn num<T: std::str::FromStr>(k: &str, v: &str) -> std::result::Result<T, String> {
        v.parse().map_err(|_| format!("{k}: `{v}` is not a number"))
    }
    fn list<T>(
        k: &str,
        v: &str,
        accepted: &str,
        item: impl Fn(&str) -> Option<T>,
    ) -> std::result::Result<Vec<T>, String> {
        let out: Vec<T> = v
            .split(',')
            .map(|x| item(x.trim()).ok_or_else(|| format!("{k}: `{x}` is not {accepted}")))
            .collect::<std::result::Result<_, _>>()?;
        if out.is_empty() {
            return Err(format!("{k}: an empty list"));
        }
        Ok(out)
    }
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        match k.as_str() {
            "--no-breakdown" => a.breakdown = false,
            "--generator" => a.generator = true,
            "-h" | "--help" => return Err(USAGE.to_string()),
            _ => {
                let v = it.next().ok_or_else(|| format!("{k} needs a value\n{USAGE}"))?;
                match k.as_str() {
                    "--config" => a.config = v,
                    "--rounds" => a.rounds = num(&k, &v)?,
                    "--tokens" => a.tokens = num(&k, &v)?,
                    "--max-seq" => a.max_seq = num(&k, &v)?,
                    "--batches" => {
                        a.batches =
                            list(&k, &v, "a batch of at least 1", |x| x.parse().ok().filter(|&b: &usize| b > 0))?
                    }
                    "--positions" => a.positions = list(&k, &v, "a position", |x| x.parse().ok())?,
                    "--sampling" => a.sampling = list(&k, &v, "greedy, topk, topp or plain", Mode::parse)?,
                    "--paths" if v == "none" => a.paths.clear(),
                    "--paths" => {
                        a.paths = list(
                            &k,
                            &v,
                            "eager, unfused, fused, cublas or plain-launch (or `none` alone)",
                            Path::parse,
                        )?
                    }
                    "--prompt-len" => a.prompt_len = num(&k, &v)?,
                    "--new-tokens" => a.new_tokens = num(&k, &v)?,
                    "--ragged" => a.ragged = num(&k, &v)?,
                    "--attention" => {
                        a.attention = list(&k, &v, "BATCHxTOKENSxPREFIX with a batch and tokens of at least 1", |x| {
                            let n: Vec<usize> = x.split('x').map(|n| n.parse().ok()).collect::<Option<_>>()?;
                            match n[..] {
                                [b, t, p] if b > 0 && t > 0 => Some((b, t, p)),
                                _ => None,
                            }
                        })?
                    }
                    _ => return Err(format!("unknown argument {k}\n{USAGE}")),
                }
            }
        }
    }
    // Each named once, in the order first given.
    fn once<T: PartialEq + Copy>(v: &mut Vec<T>) {
        let mut seen = Vec::new();
        v.retain(|x| {
            !seen.contains(x) && {
                seen.push(*x);
                true
            }
        });
    }
    once(&mut a.sampling);
    once(&mut a.paths);
    if a.rounds == 0 || a.tokens == 0 {
        return Err("--rounds and --tokens must be at least 1".into());
    }
    if !a.paths.is_empty() {
        if let Some(&p) = a.positions.iter().find(|&&p| p as usize + a.tokens > a.max_seq) {
            return Err(format!(
                "position {p} + {} tokens = {} does not fit --max-seq {}: the cache holds positions 0..{}; \
                 raise --max-seq to at least {}",
                a.tokens,
                p as usize + a.tokens,
                a.max_seq,
                a.max_seq,
                p as usize + a.tokens
            ));
        }
    }
    if a.ragged > 0 && !(RAGGED_MIN..=a.max_seq).contains(&a.ragged) {
        return Err(format!(
            "--ragged {}: the longest prompt is from {RAGGED_MIN} to --max-seq {}",
            a.ragged, a.max_seq
        ));
    }
    if a.generator {
        if a.prompt_len == 0 || a.new_tokens == 0 {
            return Err("--prompt-len and --new-tokens must be at least 1".into());
        }
        if a.prompt_len + a.new_tokens > a.max_seq {
            return Err(format!(
                "--prompt-len {} + --new-tokens {} does not fit --max-seq {}",
                a.prompt_len, a.new_tokens, a.max_seq
            ));
        }
    }
    Ok(a)
}

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

/// Row `row`'s generator seed: fixed, and distinct per row.
fn seed(row: usize) -> u64 {
    0x5eed_0000 + row as u64
}

/// Every row draws by `mode`, its generator reset to its seed (an eager upload).
fn set_sampling(state: &DecodeState, mode: Mode) -> Result<()> {
    let p = mode.params()?;
    for r in 0..state.batch() {
        state.sampler().set(r, &p, seed(r))?;
    }
    Ok(())
}

type Owned = (Arc<Model>, DecodeState);
/// A replayed path's graph and its capture + instantiate time (ms); `None` for eager.
type Replay = Option<(CandleGraph<Owned>, f64)>;

fn main() -> Result<()> {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("llama_bench: {e}");
            std::process::exit(2)
        }
    };
    let device = match Device::new_cuda_with_stream(0) {
        Ok(d) => d,
        Err(e) => {
            println!("llama_bench: no CUDA device ({e}); this benchmark needs a GPU");
            return Ok(());
        }
    };
    let cfg = Config::named(&a.config)?;
    let model = Arc::new(Model::random(&cfg, DType::BF16, a.max_seq, &device, 1)?);
    let mut cs = CandleStream::new(&device)?;
    let peak = peak_bandwidth(&device);
    println!(
        "# {}: {:.3} GB of bf16 weights, max_seq {}, {} rounds of {} tokens; HBM share against {}",
        a.config,
        model.weight_bytes() as f64 / 1e9,
        a.max_seq,
        a.rounds,
        a.tokens,
        peak.map_or(String::from("nothing (the driver reports no memory clock or bus width)"), |p| format!(
            "this device's peak, {:.2} TB/s (memory clock x bus width)",
            p / 1e12
        ))
    );
    if !a.paths.is_empty() {
        // The `plain-launch` path's model: the same weights (the same seed on the same device).
        let plain = if a.paths.contains(&Path::PlainLaunch) {
            let mut m = Model::random(&cfg, DType::BF16, a.max_seq, &device, 1)?;
            m.set_programmatic_launch(false)?;
            Some(Arc::new(m))
        } else {
            None
        };
        if !model.programmatic_launch() {
            println!("# this device has no programmatic dependent launch: every path launches plainly");
        }
        step_bench(&a, &cfg, &model, plain.as_ref(), &mut cs, peak)?;
    }
    if a.generator {
        generator_bench(&a, &model, &mut cs)?;
    }
    if a.ragged > 0 {
        // The per-token attention's model and the 256-a-row rounds' model: the same weights
        // (the same seed on the same device).
        let mut per_token = Model::random(&cfg, DType::BF16, a.max_seq, &device, 1)?;
        per_token.set_tiled_attention(false);
        let mut rows256 = Model::random(&cfg, DType::BF16, a.max_seq, &device, 1)?;
        rows256.set_prefill_rounds(PrefillRounds::new(2048, 256)?);
        ragged_bench(&a, &model, &rows256, &per_token, &mut cs)?;
    }
    if !a.attention.is_empty() {
        attention_bench(&a, &cfg, &device, &mut cs)?;
    }
    Ok(())
}

/// The decode step alone, per path and sampling mode, at each batch and position.
fn step_bench(
    a: &Args,
    cfg: &Config,
    model: &Arc<Model>,
    plain: Option<&Arc<Model>>,
    cs: &mut CandleStream,
    peak: Option<f64>,
) -> Result<()> {
    let weights = model.weight_bytes() as f64;
    let modes = &a.sampling;
    // The default (greedy only) prints the table as before issue #32.
    let sampled = modes.iter().any(|&m| m != Mode::Greedy);
    let greedy = modes.iter().position(|&m| m == Mode::Greedy);
    if sampled {
        println!("\n| batch | position | path | ms/token (median) | min | max | tokens/s | HBM share | kernels/step | capture+instantiate ms | sampling | ÷ greedy |");
        println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    } else {
        println!("\n| batch | position | path | ms/token (median) | min | max | tokens/s | HBM share | kernels/step | capture+instantiate ms |");
        println!("|---|---|---|---|---|---|---|---|---|---|");
    }
    for &batch in &a.batches {
        let state = model.new_state(batch)?;
        set_sampling(&state, Mode::Greedy)?;
        set_rows(&state, 64)?;
        let owned: Owned = (model.clone(), state.clone());
        // Each path, with its graph and capture time for the replayed ones. Every sampling
        // mode replays the same graph: the sampler reads its parameters from device memory.
        let mut runs: Vec<(Path, Replay)> = Vec::new();
        for &path in &a.paths {
            if path == Path::Eager {
                runs.push((path, None));
                continue;
            }
            let step = move |(m, s): &Owned| match path {
                Path::Cublas => m.step_cublas(s),
                Path::Unfused => m.step_unfused(s),
                _ => m.step(s),
            };
            let owned = match (path, plain) {
                (Path::PlainLaunch, Some(m)) => (m.clone(), state.clone()),
                _ => owned.clone(),
            };
            cs.warm_up(|| step(&owned).map_err(candle_core::Error::wrap))?;
            let t = Instant::now();
            let (g, _report) = cs.capture_owned(owned, step)?;
            runs.push((path, Some((g, t.elapsed().as_secs_f64() * 1e3))));
        }
        for &pos in &a.positions {
            let kv_bytes = 2.0
                * cfg.num_hidden_layers as f64
                * (batch * cfg.num_key_value_heads * cfg.head_dim) as f64
                * 2.0
                * (pos as f64 + a.tokens as f64 / 2.0);
            let bytes = weights + kv_bytes;
            // times[mode][path]
            let mut times: Vec<Vec<Vec<f64>>> = vec![vec![Vec::new(); runs.len()]; modes.len()];
            for round in 0..=a.rounds {
                for (mi, &mode) in modes.iter().enumerate() {
                    for (ri, (_, graph)) in runs.iter().enumerate() {
                        set_sampling(&state, mode)?;
                        set_rows(&state, pos)?;
                        cs.stream().synchronize()?;
                        let t = Instant::now();
                        for _ in 0..a.tokens {
                            match graph {
                                None => model.step(&state)?,
                                Some((g, _)) => g.launch(cs.stream())?,
                            }
                            let _next = state.read_tokens()?;
                        }
                        if round > 0 {
                            times[mi][ri].push(t.elapsed().as_secs_f64() * 1e3 / a.tokens as f64);
                        }
                    }
                }
            }
            let meds: Vec<Vec<(f64, f64, f64)>> =
                times.iter_mut().map(|per_path| per_path.iter_mut().map(|t| median(t)).collect()).collect();
            for (mi, &mode) in modes.iter().enumerate() {
                for (ri, (path, graph)) in runs.iter().enumerate() {
                    let (med, lo, hi) = meds[mi][ri];
                    let name = path.name();
                    let (kernels, cap) = match graph {
                        None => (String::from("-"), String::from("-")),
                        Some((g, ms)) => {
                            let kernels = match g.programmatic_edges() {
                                0 => g.nodes().kernels.to_string(),
                                e => format!("{} ({e} programmatic edges)", g.nodes().kernels),
                            };
                            (kernels, format!("{ms:.2}"))
                        }
                    };
                    let share = peak.map_or(String::from("-"), |p| format!("{:.0}%", bytes / (med * 1e-3) / p * 100.0));
                    let row = format!(
                        "| {batch} | {pos} | {name} | {med:.3} | {lo:.3} | {hi:.3} | {:.0} | {share} | {kernels} | {cap} |",
                        batch as f64 * 1e3 / med,
                    );
                    let ratio = greedy.map(|g| med / meds[g][ri].0);
                    if sampled {
                        let r = ratio.map_or(String::from("-"), |r| format!("{r:.3}"));
                        println!("{row} {} | {r} |", mode.name());
                    } else {
                        println!("{row}");
                    }
                    let vs = match ratio {
                        Some(r) if mode != Mode::Greedy => format!(",\"vs_greedy\":{r:.4}"),
                        _ => String::new(),
                    };
                    println!(
                        "json {{\"side\":\"capture-candle\",\"batch\":{batch},\"pos\":{pos},\"path\":\"{name}\",\"sampling\":\"{}\",\"ms\":{med:.4},\"min\":{lo:.4},\"max\":{hi:.4},\"kernels\":\"{kernels}\",\"capture_ms\":\"{cap}\",\"bytes\":{bytes:.0}{vs}}}",
                        mode.name()
                    );
                }
            }
            if a.breakdown {
                set_sampling(&state, Mode::Greedy)?;
                breakdown(cs, &owned, batch, pos)?;
            }
        }
    }
    Ok(())
}

/// Breakdown of the fused step (greedy): each class of operations as a sub-graph.
fn breakdown(cs: &mut CandleStream, owned: &Owned, batch: usize, pos: u32) -> Result<()> {
    let state = &owned.1;
    let mut parts = Vec::new();
    for part in Part::ALL {
        let o = owned.clone();
        set_rows(state, pos)?;
        cs.warm_up(|| o.0.run_part(&o.1, part).map_err(candle_core::Error::wrap))?;
        let (g, _) = cs.capture_owned(o, move |(m, s): &Owned| m.run_part(s, part))?;
        let mut t = Vec::new();
        for _ in 0..5 {
            set_rows(state, pos)?;
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
    Ok(())
}

/// One `generate` call's times, ms: the whole call, the decode steps where every row was still
/// going (per step), and the rest of the call (uploads, prefill, the last step's stops).
struct Sample {
    request: f64,
    step: f64,
    prefill: f64,
}

/// The `Generator` protocol: prompt `prompt_len`, exactly `new_tokens` new tokens, per batch
/// and sampling mode.
fn generator_bench(a: &Args, model: &Arc<Model>, cs: &mut CandleStream) -> Result<()> {
    let mut buckets = a.batches.clone();
    buckets.sort_unstable();
    buckets.dedup();
    let t = Instant::now();
    let mut gen = Generator::new(cs, model.clone(), &buckets)?.with_stop_tokens(Vec::new());
    let capture_ms = t.elapsed().as_secs_f64() * 1e3;
    let vocab = model.config().vocab_size;
    let modes = &a.sampling;
    let greedy = modes.iter().position(|&m| m == Mode::Greedy);
    println!(
        "\n## Generator: prompt {} tokens, {} new tokens (the prefill draws the first), no stop tokens, {} rounds; \
         buckets {buckets:?} captured in {capture_ms:.0} ms\n",
        a.prompt_len, a.new_tokens, a.rounds
    );
    println!("| batch | sampling | request ms (median) | min | max | ms / new token | decode ms/step (median) | min | max | decode tokens/s | prefill + rest ms | request ÷ greedy | step ÷ greedy |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &batch in &buckets {
        let requests: Vec<Vec<Request>> = modes
            .iter()
            .map(|&m| {
                let sampling = m.params()?;
                Ok((0..batch)
                    .map(|row| Request {
                        prompt: (0..a.prompt_len).map(|i| ((row * 131 + i * 17 + 7) % vocab) as u32).collect(),
                        sampling,
                        seed: seed(row),
                        max_new_tokens: a.new_tokens,
                    })
                    .collect())
            })
            .collect::<Result<_>>()?;
        let mut samples: Vec<Vec<Sample>> = modes.iter().map(|_| Vec::new()).collect();
        for round in 0..=a.rounds {
            for (mi, reqs) in requests.iter().enumerate() {
                cs.stream().synchronize()?;
                let (mut steady, mut last): (Option<Progress>, Option<Progress>) = (None, None);
                let t0 = Instant::now();
                let out = gen.generate_stream(cs, reqs, |n| {
                    let p = n.progress;
                    if p.steps > 0 {
                        last = Some(p);
                        if p.active == batch {
                            steady = Some(p);
                        }
                    }
                })?;
                let request = t0.elapsed().as_secs_f64() * 1e3;
                if let Some(g) = out.iter().find(|g| g.tokens.len() != a.new_tokens) {
                    return Err(capture_candle::Error::InvalidArgument {
                        what: "generated tokens",
                        value: format!("{} ({:?})", g.tokens.len(), g.stop),
                        expected: format!("exactly --new-tokens {}", a.new_tokens),
                    });
                }
                if round > 0 {
                    let ms = |p: Option<Progress>| p.map_or(0.0, |p| p.elapsed.as_secs_f64() * 1e3);
                    let step = steady.map_or(f64::NAN, |p| ms(Some(p)) / p.steps as f64);
                    samples[mi].push(Sample { request, step, prefill: request - ms(last) });
                }
            }
        }
        let stats: Vec<[(f64, f64, f64); 3]> = samples
            .iter()
            .map(|s| {
                let col = |f: fn(&Sample) -> f64| median(&mut s.iter().map(f).collect::<Vec<_>>());
                [col(|s| s.request), col(|s| s.step), col(|s| s.prefill)]
            })
            .collect();
        for (mi, &mode) in modes.iter().enumerate() {
            let [(req, req_lo, req_hi), (step, step_lo, step_hi), (pre, _, _)] = stats[mi];
            let per_token = req / a.new_tokens as f64;
            let (r_req, r_step) = greedy.map_or((f64::NAN, f64::NAN), |g| (req / stats[g][0].0, step / stats[g][1].0));
            let fmt = |r: f64| if r.is_nan() { String::from("-") } else { format!("{r:.3}") };
            println!(
                "| {batch} | {} | {req:.2} | {req_lo:.2} | {req_hi:.2} | {per_token:.3} | {step:.3} | {step_lo:.3} | {step_hi:.3} | {:.0} | {pre:.2} | {} | {} |",
                mode.name(),
                batch as f64 * 1e3 / step,
                fmt(r_req),
                fmt(r_step)
            );
            let num = |v: f64| if v.is_nan() { String::from("null") } else { format!("{v:.4}") };
            println!(
                "json {{\"side\":\"capture-candle\",\"bench\":\"generator\",\"batch\":{batch},\"sampling\":\"{}\",\"prompt\":{},\"new_tokens\":{},\"request_ms\":{req:.4},\"request_min\":{req_lo:.4},\"request_max\":{req_hi:.4},\"ms_per_new_token\":{per_token:.4},\"step_ms\":{},\"step_min\":{},\"step_max\":{},\"prefill_ms\":{pre:.4},\"capture_ms\":{capture_ms:.2}}}",
                mode.name(),
                a.prompt_len,
                a.new_tokens,
                num(step),
                num(step_lo),
                num(step_hi)
            );
        }
    }
    Ok(())
}

/// The shortest prompt of `--ragged`.
const RAGGED_MIN: usize = 16;

/// `--ragged`: the prefill of prompts of mixed lengths, with the rows in the prompts' order and
/// in order of length, in order of length on `rows256` (rounds of at most 256 tokens a row)
/// and on `per_token` (the per-token attention), alternated round by round.
fn ragged_bench(a: &Args, model: &Arc<Model>, rows256: &Model, per_token: &Model, cs: &mut CandleStream) -> Result<()> {
    let vocab = model.config().vocab_size;
    let r = model.prefill_rounds();
    println!(
        "\n## Prefill of ragged prompts ({RAGGED_MIN} to {} tokens): the rows in the prompts' order and in order of length (tiled attention: {}; rounds of at most {} token rows and {} tokens a row); in order of length with rounds of at most 256 tokens a row; in order of length with the per-token attention; {} rounds\n",
        a.ragged,
        model.tiled_attention(),
        r.token_rows(),
        r.row_tokens(),
        a.rounds
    );
    println!("| batch | prompt tokens | given order ms (median) | min | max | by length ms (median) | min | max | given ÷ by length | 256 a row, by length ms (median) | min | max | 256 a row ÷ by length | per-token attention, by length ms (median) | min | max | per-token ÷ tiled |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for &batch in &a.batches {
        let state = model.new_state(batch)?;
        // Fixed pseudo-random lengths (xorshift), the same for every run.
        let mut h = 0x9e37_79b9_7f4a_7c15u64 ^ batch as u64;
        let prompts: Vec<Vec<u32>> = (0..batch)
            .map(|row| {
                h ^= h << 13;
                h ^= h >> 7;
                h ^= h << 17;
                let len = RAGGED_MIN + (h % (a.ragged - RAGGED_MIN + 1) as u64) as usize;
                (0..len).map(|i| ((row * 131 + i * 17 + 7) % vocab) as u32).collect()
            })
            .collect();
        let given: Vec<&[u32]> = prompts.iter().map(Vec::as_slice).collect();
        let mut by_length = given.clone();
        by_length.sort_by_key(|p| p.len());
        let tokens: usize = given.iter().map(|p| p.len()).sum();
        let per_state = per_token.new_state(batch)?;
        let rows_state = rows256.new_state(batch)?;
        let mut times = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
        for round in 0..=a.rounds {
            for (k, (m, st, order)) in [
                (&**model, &state, &given),
                (&**model, &state, &by_length),
                (rows256, &rows_state, &by_length),
                (per_token, &per_state, &by_length),
            ]
            .into_iter()
            .enumerate()
            {
                cs.stream().synchronize()?;
                let t0 = Instant::now();
                m.prefill_rows(st, order)?;
                st.read_tokens()?;
                if round > 0 {
                    times[k].push(t0.elapsed().as_secs_f64() * 1e3);
                }
            }
        }
        let [(g, g_lo, g_hi), (l, l_lo, l_hi), (r, r_lo, r_hi), (p, p_lo, p_hi)] = times.map(|mut t| median(&mut t));
        println!(
            "| {batch} | {tokens} | {g:.2} | {g_lo:.2} | {g_hi:.2} | {l:.2} | {l_lo:.2} | {l_hi:.2} | {:.3} | {r:.2} | {r_lo:.2} | {r_hi:.2} | {:.3} | {p:.2} | {p_lo:.2} | {p_hi:.2} | {:.3} |",
            g / l,
            r / l,
            p / l
        );
        println!(
            "json {{\"side\":\"capture-candle\",\"bench\":\"ragged\",\"batch\":{batch},\"max_prompt\":{},\"prompt_tokens\":{tokens},\"given_ms\":{g:.4},\"by_length_ms\":{l:.4},\"rows256_ms\":{r:.4},\"per_token_ms\":{p:.4}}}",
            a.ragged
        );
    }
    Ok(())
}

/// `--attention`: `decode::attention_using` in the tiled and the per-token kernels on each
/// shape, alternated round by round, launched eagerly (as a prefill launches them).
fn attention_bench(a: &Args, cfg: &Config, device: &Device, cs: &mut CandleStream) -> Result<()> {
    let (nq, nk, d) = (cfg.num_attention_heads, cfg.num_key_value_heads, cfg.head_dim);
    println!(
        "\n## Attention alone, bf16, {nq} query heads over {nk} key heads of {d}: the tiled and the per-token kernel, eager launches, medians of {} rounds\n",
        a.rounds
    );
    println!("| batch | tokens a row | prefix | tiled blocks | launches a round | tiled µs (median) | min | max | per-token µs (median) | min | max | per-token ÷ tiled |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|");
    let scale = 1.0 / (d as f64).sqrt();
    for &(b, t, p) in &a.attention {
        let cache = KvCache::new(b, nk, p + t, d, DType::BF16, device)?;
        let fill = |x: &candle_core::Tensor| -> Result<()> {
            let r = candle_core::Tensor::randn(0f32, 1.0, x.dims(), device)?.to_dtype(DType::BF16)?;
            x.slice_set(&r, 0, 0)?;
            Ok(())
        };
        fill(cache.k())?;
        fill(cache.v())?;
        let q = candle_core::Tensor::randn(0f32, 1.0, (b, nq, t, d), device)?.to_dtype(DType::BF16)?;
        let pos = candle_core::Tensor::new(vec![p as u32; b], device)?;
        let kernels = [AttentionKernel::Tiled, AttentionKernel::PerToken];
        let run = |kernel: AttentionKernel, n: usize, cs: &mut CandleStream| -> Result<f64> {
            cs.stream().synchronize()?;
            let t0 = Instant::now();
            for _ in 0..n {
                attention_using(&q, &cache, &pos, scale as f32, kernel)?;
            }
            cs.stream().synchronize()?;
            Ok(t0.elapsed().as_secs_f64() * 1e6 / n as f64)
        };
        // The tiled kernel where it takes the shape (16 or more tokens a row, heads of 64 or
        // 128): `Tiled` is refused elsewhere.
        let kernels: Vec<AttentionKernel> = match run(AttentionKernel::Tiled, 1, cs) {
            Ok(_) => kernels.to_vec(),
            Err(capture_candle::Error::BadOperands { .. }) => vec![AttentionKernel::PerToken],
            Err(e) => return Err(e),
        };
        // Warm each twice (the first launch loads its module), then size a round's launches
        // from the slower of them.
        let mut once = Vec::new();
        for &k in &kernels {
            run(k, 1, cs)?;
            once.push(run(k, 1, cs)?);
        }
        let n = (2000.0 / once.iter().fold(1.0f64, |m, &x| m.max(x))).ceil().clamp(3.0, 200.0) as usize;
        let mut times = vec![Vec::new(); kernels.len()];
        for _ in 0..a.rounds {
            for (i, &k) in kernels.iter().enumerate() {
                times[i].push(run(k, n, cs)?);
            }
        }
        let blocks = (t * (nq / nk)).div_ceil(64) * b * nk;
        let mut meds: Vec<(f64, f64, f64)> = times.iter_mut().map(|v| median(v)).collect();
        let (pt, pt_lo, pt_hi) = meds.pop().unwrap_or_default();
        let Some((ti, ti_lo, ti_hi)) = meds.pop() else {
            println!("| {b} | {t} | {p} | – | {n} | – | – | – | {pt:.1} | {pt_lo:.1} | {pt_hi:.1} | – |");
            println!(
                "json {{\"side\":\"capture-candle\",\"bench\":\"attention\",\"batch\":{b},\"tokens\":{t},\"prefix\":{p},\"per_token_us\":{pt:.3}}}"
            );
            continue;
        };
        println!(
            "| {b} | {t} | {p} | {blocks} | {n} | {ti:.1} | {ti_lo:.1} | {ti_hi:.1} | {pt:.1} | {pt_lo:.1} | {pt_hi:.1} | {:.3} |",
            pt / ti
        );
        println!(
            "json {{\"side\":\"capture-candle\",\"bench\":\"attention\",\"batch\":{b},\"tokens\":{t},\"prefix\":{p},\"tiled_blocks\":{blocks},\"tiled_us\":{ti:.3},\"per_token_us\":{pt:.3}}}"
        );
    }
    Ok(())
}
