//! The GPU proof of issue #25: candle-transformers' own `llama.rs`, unchanged, its decode
//! step captured at two positions and the two graphs diffed — every place that bakes the
//! position into the graph is named. Then capture-candle's capture-ready Llama, diffed the
//! same way, must report nothing, and a planted position upload in it must be named.
//!
//! ```text
//! cargo run --release --features transformers-proof --example llama_rs_diff -- [REPORT.txt]
//! ```
//! Needs a CUDA GPU (it says so and exits 0 without one).

use std::cell::{Cell, RefCell};
use std::sync::Arc;

use candle_core::{DType, Device, Tensor};
use candle_nn::{VarBuilder, VarMap};
use candle_transformers::models::llama as tl;
use capture_candle::model::{Config, Family, Model};
use capture_candle::{CandleStream, Result};

/// A small Llama config for candle-transformers: 2 layers, hidden 256, 4/2 heads of 64.
fn small_config() -> tl::Config {
    tl::Config {
        hidden_size: 256,
        intermediate_size: 512,
        vocab_size: 1000,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        use_flash_attn: false,
        rms_norm_eps: 1e-5,
        rope_theta: 10_000.0,
        bos_token_id: None,
        eos_token_id: None,
        rope_scaling: None,
        max_position_embeddings: 64,
        tie_word_embeddings: false,
    }
}

/// A cache holding the keys and values of a `len`-token prompt: a clone of `base`, so that
/// every cache shares its RoPE tables (as one user's caches do).
fn prefilled(llama: &tl::Llama, base: &tl::Cache, len: usize, device: &Device) -> Result<tl::Cache> {
    let mut cache = base.clone();
    let prompt: Vec<u32> = (0..len as u32).map(|i| (i * 37 + 11) % 1000).collect();
    let x = Tensor::new(prompt.as_slice(), device)?.unsqueeze(0)?;
    llama.forward(&x, 0, &mut cache)?;
    Ok(cache)
}

fn main() -> Result<()> {
    let device = match Device::new_cuda_with_stream(0) {
        Ok(d) => d,
        Err(e) => {
            println!("no CUDA GPU ({e}): this proof runs on a GPU only");
            return Ok(());
        }
    };
    let mut out = String::new();
    let mut cs = CandleStream::new(&device)?;
    let (p1, p2) = (3usize, 7usize);

    // 1. candle-transformers' llama.rs, as its users hold it (random f32 weights).
    let cfg = small_config();
    let vars = VarMap::new();
    let llama = tl::Llama::load(VarBuilder::from_varmap(&vars, DType::F32, &device), &cfg)?;
    let base = tl::Cache::new(true, DType::F32, &cfg, &device)?;
    let (c1, c2) = (prefilled(&llama, &base, p1, &device)?, prefilled(&llama, &base, p2, &device)?);
    let token = Tensor::new(&[[5u32]], &device)?;
    // Warm up at both positions: kernels loaded, cuBLAS sized, small uploads cached.
    for (c, p) in [(&c1, p1), (&c2, p2)] {
        cs.warm_up(|| llama.forward(&token, p, &mut c.clone()).map(|_| ()))?;
    }
    let cache = RefCell::new(c1.clone());
    let pos = Cell::new(p1);
    let step = || -> Result<()> {
        // The step as a user writes it: the logits it returns are dropped at once.
        llama.forward(&token, pos.get(), &mut cache.borrow_mut())?;
        Ok(())
    };
    let between = || -> Result<()> {
        *cache.borrow_mut() = c2.clone();
        pos.set(p2);
        Ok(())
    };
    out += &format!(
        "## candle-transformers llama.rs (hidden {}, {} layers, {}/{} heads, f32), decode step at index_pos {p1} and {p2}\n\n",
        cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads
    );
    match cs.capture_diff(step, between) {
        Ok(d) => {
            out += &format!("{d}\n");
            out += &format!(
                "graph nodes: {} / {}; differences by cause: {}\n\n",
                d.diff.nodes.0,
                d.diff.nodes.1,
                causes(&d.diff)
            );
        }
        Err(e) => out += &format!("the diff could not be made: {e}\n\n"),
    }

    // 2. capture-candle's capture-ready Llama: the position lives on the device.
    let mcfg = Config::tiny(Family::Llama);
    let model = Arc::new(Model::random(&mcfg, DType::F32, 64, &device, 1)?);
    let state = model.new_state(1)?;
    for p in [p1 as u32, p2 as u32] {
        state.set_row(0, p, true)?;
        state.set_token(0, 5)?;
        cs.warm_up(|| model.step(&state).map_err(candle_core::Error::wrap))?;
    }
    state.set_row(0, p1 as u32, true)?;
    let d = cs.capture_diff(
        || model.step(&state),
        || {
            state.set_row(0, p2 as u32, true)?;
            state.set_token(0, 9)
        },
    )?;
    out += &format!(
        "## capture-candle's Llama (tiny config, f32), positions {p1} and {p2} set on the device between\n\n{d}\n"
    );
    out += &format!("RESULT: {}\n\n", if d.is_clean() { "clean, as it must be" } else { "NOT clean" });

    // 3. The same model with the position uploaded from a host value inside the step.
    let host = Cell::new(p1 as u32);
    let planted = || -> Result<()> {
        state.pos().slice_set(&Tensor::new(&[host.get()], &device)?, 0, 0)?;
        model.step(&state)
    };
    for p in [p1 as u32, p2 as u32] {
        host.set(p);
        cs.warm_up(|| planted().map_err(candle_core::Error::wrap))?;
    }
    host.set(p1 as u32);
    let d = cs.capture_diff(planted, || {
        host.set(p2 as u32);
        Ok(())
    })?;
    out += &format!(
        "## capture-candle's Llama with the position uploaded from the host inside the step (planted)\n\n{d}\n"
    );
    out += &format!("RESULT: {}\n", if d.diff.differences.is_empty() { "NOT named" } else { "named" });

    print!("{out}");
    if let Some(path) = std::env::args().nth(1) {
        std::fs::write(&path, &out).map_err(|source| capture_candle::Error::Io { path, source })?;
    }
    Ok(())
}

/// "3 HostValue, 2 PointerOffset, …".
fn causes(d: &capture_core::diff::CaptureDiff) -> String {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for x in &d.differences {
        let k = format!("{:?}", x.cause);
        match counts.iter_mut().find(|(c, _)| *c == k) {
            Some((_, n)) => *n += 1,
            None => counts.push((k, 1)),
        }
    }
    counts.iter().map(|(c, n)| format!("{n} {c}")).collect::<Vec<_>>().join(", ")
}
