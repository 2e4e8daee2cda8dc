//! Generate with a capture-ready Llama or Qwen2: prompts prefilled eagerly, then decoded by
//! replaying one CUDA graph per batch bucket, with progress and tokens/s. Given a model
//! directory, it takes text and prints text as it is made.
//!
//! ```text
//! generate [--model DIR | --config NAME] [--prompt TEXT|IDS] [--chat | --no-chat] [--system TEXT]
//!          [--batch B] [--max-new N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--max-seq S]
//! ```
//! `--model DIR`: a Hugging Face model directory (`config.json`, `*.safetensors`, and for text
//! `tokenizer.json`, with `tokenizer_config.json` and `generation_config.json` where the model
//! has them). `--prompt` is text, encoded with the model's tokenizer; a list of numbers
//! (`--prompt 1,2,3`) is token ids, as before, and the output is then token ids too. A text
//! prompt goes through the model's chat template when it has one (as a user message, after
//! `--system`'s), unless `--no-chat`; `--chat` insists on one. Generation stops at the
//! stop tokens of `generation_config.json`.
//!
//! Without `--model`, random bf16 weights of `--config` (default `llama-3.2-1b`; also
//! `qwen2.5-0.5b`, `tiny-llama`, `tiny-qwen2`), which have no tokenizer: prompts are token
//! ids, and without `--prompt` each sequence gets a few ids of its own. Without a GPU it
//! decodes eagerly on the CPU (no graphs; `tiny-llama` when no model is given) and says so.
//!
//! ```text
//! cargo run --release --example generate -- --model Llama-3.2-1B-Instruct --prompt "Why is the sky blue?"
//! ```

use std::io::Write;
use std::sync::Arc;
use std::time::Instant;

use candle_core::{DType, Device};
use capture_candle::decode::SamplingParams;
use capture_candle::generate::{generate_eager, Generation, Generator, NewTokens, Request};
use capture_candle::model::{Config, Model};
use capture_candle::text::{Message, TextIo, TextStream};
use capture_candle::CandleStream;

enum Prompt {
    Ids(Vec<u32>),
    Text(String),
}

struct Args {
    model: Option<String>,
    config: String,
    batch: usize,
    max_new: usize,
    prompt: Option<Prompt>,
    chat: Option<bool>,
    system: Option<String>,
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
        chat: None,
        system: None,
        temperature: 0.8,
        top_k: 50,
        top_p: 0.95,
        seed: 1,
        max_seq: 2048,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        match k.as_str() {
            "--chat" => {
                a.chat = Some(true);
                continue;
            }
            "--no-chat" => {
                a.chat = Some(false);
                continue;
            }
            _ => {}
        }
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
                // A list of numbers is token ids (as before text prompts); anything else is text.
                let ids: Option<Vec<u32>> = v.split(',').map(|t| t.trim().parse().ok()).collect();
                a.prompt = Some(match ids {
                    Some(ids) if !ids.is_empty() => Prompt::Ids(ids),
                    _ => Prompt::Text(v),
                })
            }
            "--system" => a.system = Some(v),
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    Ok(a)
}

const USAGE: &str = "usage: generate [--model DIR | --config NAME] [--prompt TEXT|IDS] [--chat | --no-chat] \
[--system TEXT] [--batch B] [--max-new N] [--temperature T] [--top-k K] [--top-p P] [--seed S] [--max-seq S]";

fn main() {
    if let Err(e) = run() {
        eprintln!("generate: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<(), Box<dyn std::error::Error>> {
    let a = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("generate: {e}\n{USAGE}");
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

    // Text in: the tokenizer, stop tokens and chat template of the model directory.
    let text = match (&a.prompt, &a.model) {
        (Some(Prompt::Text(_)), Some(dir)) => Some(TextIo::from_dir(dir, &cfg)?),
        (Some(Prompt::Text(_)), None) => {
            eprintln!("generate: a text prompt needs --model DIR (its tokenizer.json); a random model takes token ids (--prompt 1,2,3)\n{USAGE}");
            std::process::exit(2);
        }
        _ => None,
    };
    let prompt: Option<Vec<u32>> = match (&a.prompt, &text) {
        (Some(Prompt::Ids(ids)), _) => Some(ids.clone()),
        (Some(Prompt::Text(t)), Some(io)) => {
            let chat = match (a.chat, io.chat_template()) {
                (Some(true), None) => {
                    eprintln!("generate: --chat, but the model has no chat template (tokenizer_config.json's chat_template, or chat_template.jinja): leave --chat out to send the text as it is");
                    std::process::exit(2);
                }
                (Some(false), _) | (None, None) => false,
                (_, Some(_)) => true,
            };
            let ids = if chat {
                let mut messages: Vec<Message> = a.system.iter().map(Message::system).collect();
                messages.push(Message::user(t.as_str()));
                io.chat_prompt(&messages)?
            } else {
                io.prompt(t)?
            };
            println!(
                "prompt: {} tokens{}; stop tokens {:?}",
                ids.len(),
                if chat { ", through the chat template" } else { " (plain text)" },
                io.stop_tokens()
            );
            Some(ids)
        }
        _ => None,
    };
    let stop_tokens: Vec<u32> = text.as_ref().map_or_else(|| cfg.eos_token_ids.clone(), |io| io.stop_tokens().to_vec());
    let reqs: Vec<Request> = (0..a.batch.max(1))
        .map(|r| Request {
            prompt: prompt.clone().unwrap_or_else(|| {
                (0..4 + r as u32).map(|i| (7 + 31 * (i + 5 * r as u32)) % cfg.vocab_size as u32).collect()
            }),
            sampling,
            seed: a.seed + r as u64,
            max_new_tokens: a.max_new,
        })
        .collect();

    // Text out as it is made: sequence 0's new tokens, decoded as they arrive.
    let mut stream: Option<TextStream<'_>> = text.as_ref().map(|io| io.tokenizer().stream(true).after(&reqs[0].prompt));
    if stream.is_some() {
        println!("---");
    }
    let mut stream_error = None;
    let mut last_progress = Instant::now();
    // The prefill's tokens, and the decode's progress.
    let (mut prefilled, mut decoded) = (0, None);
    let mut on_tokens = |t: &NewTokens<'_>| {
        if t.progress.steps == 0 {
            prefilled = t.progress.tokens;
        } else {
            decoded = Some(t.progress);
        }
        if let Some(s) = stream.as_mut() {
            if let Some(id) = t.tokens[0] {
                match s.push(id) {
                    Ok(Some(piece)) => print!("{piece}"),
                    Ok(None) => {}
                    Err(e) => stream_error = Some(e),
                }
                let _ = std::io::stdout().flush();
            }
        } else if t.progress.steps > 0 && last_progress.elapsed().as_millis() >= 250 {
            last_progress = Instant::now();
            print!(
                "\r  step {:>5}: {:>6} tokens, {} active, {:>7.0} tokens/s",
                t.progress.steps,
                t.progress.tokens,
                t.progress.active,
                t.progress.tokens as f64 / t.progress.elapsed.as_secs_f64()
            );
            let _ = std::io::stdout().flush();
        }
    };
    let mut t = Instant::now();
    let out: Vec<Generation> = if on_gpu {
        let mut cs = CandleStream::new(&device)?;
        let buckets: Vec<usize> =
            Generator::BUCKETS.iter().copied().filter(|&b| b <= a.batch.max(1).next_power_of_two().max(8)).collect();
        let mut gen = Generator::new(&mut cs, Arc::new(model), &buckets)?.with_stop_tokens(stop_tokens);
        println!("captured decode graphs for buckets {:?} in {:.2?}", gen.family().buckets(), t.elapsed());
        t = Instant::now();
        gen.generate_stream(&mut cs, &reqs, &mut on_tokens)?
    } else {
        // The same layers and stop rules, each step run eagerly on the CPU.
        generate_eager(&model, &stop_tokens, &reqs, &mut on_tokens)?
    };
    let elapsed = t.elapsed();
    if let Some(e) = stream_error {
        return Err(e.into());
    }
    if let (Some(s), Some(io)) = (stream.as_mut(), &text) {
        println!("{}\n---", s.finish()?);
        for (row, g) in out.iter().enumerate().skip(1) {
            println!("sequence {row} ({:?}, {} tokens): {}", g.stop, g.tokens.len(), io.decode(&g.tokens)?);
        }
        println!("sequence 0: {:?}, {} tokens", out[0].stop, out[0].tokens.len());
    } else {
        println!();
        for (row, g) in out.iter().enumerate() {
            println!("sequence {row} ({:?}, {} tokens): {:?}", g.stop, g.tokens.len(), g.tokens);
        }
    }
    let total: usize = out.iter().map(|g| g.tokens.len()).sum();
    println!("{total} tokens in {elapsed:.2?}, prefill included");
    if let Some(p) = decoded {
        let n = p.tokens - prefilled;
        println!(
            "decode: {n} tokens in {} steps, {:.2?}: {:.0} tokens/s",
            p.steps,
            p.elapsed,
            n as f64 / p.elapsed.as_secs_f64()
        );
    }
    Ok(())
}
