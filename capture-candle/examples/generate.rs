//! Generate text tokens with a capture-ready Llama or Qwen2: prompts prefilled eagerly, then
//! decoded by replaying one CUDA graph per batch bucket, with progress and tokens/s.
//!
//! ```text
//! generate [--model DIR | --config NAME] [--batch B] [--max-new N] [--prompt 1,2,3]
//!          [--temperature T] [--top-k K] [--top-p P] [--seed S] [--max-seq S]
//! ```
//! `--model DIR`: a Hugging Face model directory (`config.json` and `*.safetensors`). Without
//! it, random bf16 weights of `--config` (default `llama-3.2-1b`; also `qwen2.5-0.5b`,
//! `tiny-llama`, `tiny-qwen2`). Prompts are token ids (no tokenizer here); without
//! `--prompt`, each sequence gets a few ids of its own. Without a GPU it decodes eagerly on
//! the CPU with `tiny-llama` and says so.

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use candle_core::{DType, Device};
use capture_candle::decode::SamplingParams;
use capture_candle::generate::{Generator, Request};
use capture_candle::model::{Config, Model};
use capture_candle::CandleStream;

struct Args {
    model: Option<String>,
    config: String,
    batch: usize,
    max_new: usize,
    prompt: Option<Vec<u32>>,
    temperature: f32,
    top_k: usize,
    top_p: f32,
    seed: u64,
    max_seq: usize,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        model: None,
        config: "llama-3.2-1b".into(),
        batch: 1,
        max_new: 128,
        prompt: None,
        temperature: 0.8,
        top_k: 50,
        top_p: 0.95,
        seed: 1,
        max_seq: 2048,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let v = it.next().ok_or(format!("{k} needs a value"))?;
        let num = |v: &str| v.parse::<f64>().map_err(|_| format!("{k} takes a number, not {v:?}"));
        match k.as_str() {
            "--model" => a.model = Some(v),
            "--config" => a.config = v,
            "--batch" => a.batch = num(&v)? as usize,
            "--max-new" => a.max_new = num(&v)? as usize,
            "--temperature" => a.temperature = num(&v)? as f32,
            "--top-k" => a.top_k = num(&v)? as usize,
            "--top-p" => a.top_p = num(&v)? as f32,
            "--seed" => a.seed = num(&v)? as u64,
            "--max-seq" => a.max_seq = num(&v)? as usize,
            "--prompt" => {
                a.prompt = Some(
                    v.split(',')
                        .map(|t| t.trim().parse().map_err(|_| format!("bad token id {t:?}")))
                        .collect::<Result<_, _>>()?,
                )
            }
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    Ok(a)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("generate: {e}\nusage: generate [--model DIR | --config NAME] [--batch B] [--max-new N] [--prompt 1,2,3] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--max-seq S]");
            std::process::exit(2);
        }
    };
    let sampling = SamplingParams::new(a.temperature, a.top_k, a.top_p)?;
    let device = Device::new_cuda_with_stream(0).ok();
    let on_gpu = device.is_some();
    let device = device.unwrap_or(Device::Cpu);
    let t0 = Instant::now();
    let model = match (&a.model, on_gpu) {
        (Some(dir), _) => Model::from_dir(dir, if on_gpu { DType::BF16 } else { DType::F32 }, a.max_seq, &device)?,
        (None, true) => Model::random(&Config::named(&a.config)?, DType::BF16, a.max_seq, &device, a.seed)?,
        (None, false) => Model::random(&Config::named("tiny-llama")?, DType::F32, a.max_seq.min(512), &device, a.seed)?,
    };
    let cfg = model.config().clone();
    println!(
        "{} on {}: {:?}, hidden {}, {} layers, vocab {}, {:.2} GB of weights ({}), loaded in {:.1?}",
        a.model.as_deref().unwrap_or(if on_gpu { &a.config } else { "tiny-llama" }),
        if on_gpu { "the GPU" } else { "the CPU (no GPU found: eager decode, no graphs)" },
        cfg.family,
        cfg.hidden_size,
        cfg.num_hidden_layers,
        cfg.vocab_size,
        model.weight_bytes() as f64 / 1e9,
        if a.model.is_some() { "from safetensors" } else { "random" },
        t0.elapsed()
    );
    let reqs: Vec<Request> = (0..a.batch.max(1))
        .map(|r| Request {
            prompt: a.prompt.clone().unwrap_or_else(|| {
                (0..4 + r as u32).map(|i| (7 + 31 * (i + 5 * r as u32)) % cfg.vocab_size as u32).collect()
            }),
            sampling,
            seed: a.seed + r as u64,
            max_new_tokens: a.max_new,
        })
        .collect();
    if !on_gpu {
        // The same layers, eagerly on the CPU.
        let state = model.new_state(reqs.len())?;
        for (row, r) in reqs.iter().enumerate() {
            state.sampler().set(row, &r.sampling, r.seed)?;
            model.prefill(&state, row, &r.prompt)?;
        }
        let t = Instant::now();
        let mut out = vec![state.read_tokens()?];
        for _ in 1..a.max_new {
            model.step(&state)?;
            out.push(state.read_tokens()?);
        }
        let n = out.len() * reqs.len();
        println!("decoded {n} tokens in {:.2?}: {:.0} tokens/s", t.elapsed(), n as f64 / t.elapsed().as_secs_f64());
        for row in 0..reqs.len() {
            println!("sequence {row}: {:?}", out.iter().map(|t| t[row]).collect::<Vec<_>>());
        }
        return Ok(());
    }
    let mut cs = CandleStream::new(&device)?;
    let t = Instant::now();
    let buckets: Vec<usize> =
        Generator::BUCKETS.iter().copied().filter(|&b| b <= a.batch.max(1).next_power_of_two().max(8)).collect();
    let mut gen = Generator::new(&mut cs, Arc::new(model), &buckets)?;
    println!("captured decode graphs for buckets {:?} in {:.2?}", gen.family().buckets(), t.elapsed());
    let out = gen.generate(&mut cs, &reqs, |p| {
        if p.steps % 16 == 0 {
            print!(
                "\r  step {:>5}: {:>6} tokens, {} active, {:>7.0} tokens/s",
                p.steps,
                p.tokens,
                p.active,
                p.tokens as f64 / p.elapsed.as_secs_f64()
            );
            let _ = std::io::stdout().flush();
        }
    })?;
    println!();
    for (row, g) in out.iter().enumerate() {
        println!("sequence {row} ({:?}, {} tokens): {:?}", g.stop, g.tokens.len(), g.tokens);
    }
    Ok(())
}
