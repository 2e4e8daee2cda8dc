//! The Llama and Qwen2 models (issue #21 parts 2 and 3): configs from `config.json`, weights
//! from safetensors in the Hugging Face layout (with typed errors naming the tensor), and the
//! model's prefill and decode steps against a plain candle reference forward — full causal
//! attention, candle-nn's rope, repeated KV heads — on candle's CPU device (and on CUDA in
//! the `_gpu` twins).

mod common;

use std::collections::HashMap;
use std::path::PathBuf;

use candle_core::{DType, Device, IndexOp, Tensor, D};
use capture_candle::decode::{self, KvCache, Llama3Scaling, RopeLayout, RopeTable, SamplingParams};
use capture_candle::model::{Config, Family, Model, PrefillRounds};
use capture_candle::{CandleStream, Error};
use common::*;

const LLAMA_JSON: &str = r#"{
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
  "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,
  "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 64, "vocab_size": 128256,
  "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "max_position_embeddings": 131072,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "attention_bias": false, "mlp_bias": false,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]
}"#;

const QWEN_JSON: &str = r#"{
  "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
  "hidden_size": 896, "intermediate_size": 4864, "num_hidden_layers": 24,
  "num_attention_heads": 14, "num_key_value_heads": 2, "vocab_size": 151936,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "max_position_embeddings": 32768,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16", "use_sliding_window": false,
  "bos_token_id": 151643, "eos_token_id": 151645
}"#;

/// Llama-3.1-8B-Instruct's `config.json` as transformers writes it (no `head_dim`: 4096 / 32).
const LLAMA_8B_JSON: &str = r#"{
  "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_act": "silu",
  "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
  "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256,
  "rms_norm_eps": 1e-05, "rope_theta": 500000.0, "max_position_embeddings": 131072,
  "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "tie_word_embeddings": false, "torch_dtype": "bfloat16", "attention_bias": false, "mlp_bias": false,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009]
}"#;

#[test]
fn configs_are_read_from_hugging_face_config_json() {
    let l = Config::from_json(LLAMA_JSON).unwrap();
    assert_eq!(l, Config::llama_3_2_1b());
    let l8 = Config::from_json(LLAMA_8B_JSON).unwrap();
    assert_eq!(l8, Config::llama_3_1_8b());
    assert_eq!(Config::named("llama-3.1-8b").unwrap(), l8);
    l8.validate().unwrap();
    let q = Config::from_json(QWEN_JSON).unwrap();
    assert_eq!((q.family, q.qkv_bias, q.head_dim, q.rope_theta), (Family::Qwen2, true, 64, 1e6));
    assert_eq!(q.eos_token_ids, [151_645]);
}

#[test]
fn unsupported_or_broken_configs_name_the_field() {
    let cases = [
        (LLAMA_JSON.replace("\"llama3\"", "\"yarn\""), "rope_scaling.rope_type"),
        (LLAMA_JSON.replace("\"silu\"", "\"gelu\""), "hidden_act"),
        (LLAMA_JSON.replace("\"model_type\": \"llama\"", "\"model_type\": \"mistral\""), "model_type"),
        (QWEN_JSON.replace("\"use_sliding_window\": false", "\"use_sliding_window\": true"), "use_sliding_window"),
        (LLAMA_JSON.replace("\"num_key_value_heads\": 8", "\"num_key_value_heads\": 5"), "num_key_value_heads"),
        (LLAMA_JSON.replace("\"bfloat16\"", "\"int8\""), "torch_dtype"),
    ];
    for (json, field) in cases {
        match Config::from_json(&json) {
            Err(Error::UnsupportedConfig { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: expected UnsupportedConfig, got {other:?}"),
        }
    }
    let e = Config::from_json(&LLAMA_JSON.replace("\"vocab_size\": 128256,", "")).unwrap_err();
    assert!(matches!(&e, Error::Config(m) if m.contains("vocab_size")), "{e}");
    assert!(matches!(Config::from_json("{not json"), Err(Error::Config(_))));
    assert!(matches!(Config::named("gpt-2"), Err(Error::InvalidArgument { .. })));
}

/// Random weights of `cfg` in the Hugging Face layout, as named host tensors.
fn hf_weights(cfg: &Config, seed: u64) -> HashMap<String, Tensor> {
    let (h, d, nq, nk, i, v) = (
        cfg.hidden_size,
        cfg.head_dim,
        cfg.num_attention_heads,
        cfg.num_key_value_heads,
        cfg.intermediate_size,
        cfg.vocab_size,
    );
    let mut m = HashMap::new();
    let mut n = seed;
    let mut put = |name: String, shape: &[usize], scale: f32, offset: f32| {
        n += 1;
        let t = (rand(shape, DType::F32, &Device::Cpu, n) * scale as f64).unwrap().affine(1.0, offset as f64).unwrap();
        m.insert(name, t);
    };
    put("model.embed_tokens.weight".into(), &[v, h], 0.5, 0.0);
    for l in 0..cfg.num_hidden_layers {
        let p = format!("model.layers.{l}");
        put(format!("{p}.input_layernorm.weight"), &[h], 0.1, 1.0);
        put(format!("{p}.post_attention_layernorm.weight"), &[h], 0.1, 1.0);
        for (name, out) in [("q_proj", nq * d), ("k_proj", nk * d), ("v_proj", nk * d)] {
            put(format!("{p}.self_attn.{name}.weight"), &[out, h], 0.3, 0.0);
            if cfg.qkv_bias {
                put(format!("{p}.self_attn.{name}.bias"), &[out], 0.2, 0.0);
            }
        }
        put(format!("{p}.self_attn.o_proj.weight"), &[h, nq * d], 0.3, 0.0);
        put(format!("{p}.mlp.gate_proj.weight"), &[i, h], 0.3, 0.0);
        put(format!("{p}.mlp.up_proj.weight"), &[i, h], 0.3, 0.0);
        put(format!("{p}.mlp.down_proj.weight"), &[h, i], 0.3, 0.0);
    }
    put("model.norm.weight".into(), &[h], 0.1, 1.0);
    if !cfg.tie_word_embeddings {
        put("lm_head.weight".into(), &[v, h], 0.3, 0.0);
    }
    m
}

fn save(weights: &HashMap<String, Tensor>, dtype: DType, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("capture-candle-test-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let conv: HashMap<String, Tensor> = weights.iter().map(|(k, t)| (k.clone(), t.to_dtype(dtype).unwrap())).collect();
    let file = dir.join("model.safetensors");
    candle_core::safetensors::save(&conv, &file).unwrap();
    file
}

/// The plain forward: every token of `tokens` from position 0, full causal attention with
/// candle ops; returns the logits of every position, `[T, vocab]`, in f32.
fn reference_logits(cfg: &Config, w: &HashMap<String, Tensor>, tokens: &[u32]) -> Tensor {
    let g = |n: &str| w[n].clone();
    let (t, d, nq, nk) = (tokens.len(), cfg.head_dim, cfg.num_attention_heads, cfg.num_key_value_heads);
    let ids = Tensor::new(tokens, &Device::Cpu).unwrap();
    let mut x = g("model.embed_tokens.weight").index_select(&ids, 0).unwrap();
    let inv = RopeTable::inv_freq(d, cfg.rope_theta, cfg.rope_scaling.as_ref());
    let ang: Vec<f32> = (0..t).flat_map(|p| inv.iter().map(move |f| (p as f64 * f) as f32)).collect();
    let ang = Tensor::from_vec(ang, (t, d / 2), &Device::Cpu).unwrap();
    let (cos, sin) = (ang.cos().unwrap(), ang.sin().unwrap());
    let mask: Vec<f32> =
        (0..t).flat_map(|i| (0..t).map(move |j| if j > i { f32::NEG_INFINITY } else { 0.0 })).collect();
    let mask = Tensor::from_vec(mask, (t, t), &Device::Cpu).unwrap();
    let lin = |x: &Tensor, n: &str| x.matmul(&g(n).t().unwrap()).unwrap();
    for l in 0..cfg.num_hidden_layers {
        let p = format!("model.layers.{l}");
        let h =
            candle_nn::ops::rms_norm(&x, &g(&format!("{p}.input_layernorm.weight")), cfg.rms_norm_eps as f32).unwrap();
        let proj = |name: &str, heads: usize| {
            let mut y = lin(&h, &format!("{p}.self_attn.{name}.weight"));
            if cfg.qkv_bias {
                y = y.broadcast_add(&g(&format!("{p}.self_attn.{name}.bias"))).unwrap();
            }
            y.reshape((1, t, heads, d)).unwrap().transpose(1, 2).unwrap().contiguous().unwrap()
        };
        let q = candle_nn::rotary_emb::rope(&proj("q_proj", nq), &cos, &sin).unwrap();
        let k = candle_nn::rotary_emb::rope(&proj("k_proj", nk), &cos, &sin).unwrap();
        let v = proj("v_proj", nk);
        let rep = |x: Tensor| {
            Tensor::cat(&(0..nq / nk).map(|_| x.clone()).collect::<Vec<_>>(), 2)
                .unwrap()
                .reshape((1, nq, t, d))
                .unwrap()
        };
        let (k, v) = (rep(k), rep(v));
        let sc = (q.matmul(&k.t().unwrap()).unwrap() / (d as f64).sqrt()).unwrap().broadcast_add(&mask).unwrap();
        let att = candle_nn::ops::softmax(&sc, D::Minus1).unwrap().matmul(&v).unwrap();
        let att = att.transpose(1, 2).unwrap().reshape((t, nq * d)).unwrap();
        x = (x + lin(&att, &format!("{p}.self_attn.o_proj.weight"))).unwrap();
        let h2 =
            candle_nn::ops::rms_norm(&x, &g(&format!("{p}.post_attention_layernorm.weight")), cfg.rms_norm_eps as f32)
                .unwrap();
        let gate =
            candle_nn::ops::silu(&h2.matmul(&g(&format!("{p}.mlp.gate_proj.weight")).t().unwrap()).unwrap()).unwrap();
        let up = h2.matmul(&g(&format!("{p}.mlp.up_proj.weight")).t().unwrap()).unwrap();
        x = (x + (gate * up).unwrap().matmul(&g(&format!("{p}.mlp.down_proj.weight")).t().unwrap()).unwrap()).unwrap();
    }
    let h = candle_nn::ops::rms_norm(&x, &g("model.norm.weight"), cfg.rms_norm_eps as f32).unwrap();
    let head = if cfg.tie_word_embeddings { "model.embed_tokens.weight" } else { "lm_head.weight" };
    lin(&h, head)
}

/// Loads a random checkpoint of `family`, prefills a prompt and decodes greedily, and
/// compares every step's logits with the reference forward over the sequence so far.
fn model_matches_reference(family: Family, dev: &Device, dtype: DType) {
    let mut cfg = Config::tiny(family);
    cfg.tie_word_embeddings = family == Family::Qwen2; // one of each
    cfg.torch_dtype = Some(DType::F32);
    let w = hf_weights(&cfg, 40);
    let file = save(&w, DType::F32, &format!("{family:?}-{dtype:?}-{}", dev.is_cuda()));
    let model = Model::from_safetensors(&cfg, &[file], dtype, 64, dev).unwrap();
    let state = model.new_state(2).unwrap();
    let prompt = [1u32, 17, 42, 5, 88, 3, 61];
    // Row 1 holds another sequence, so rows must not mix.
    model.prefill(&state, 1, &[9, 9, 9]).unwrap();
    model.prefill(&state, 0, &prompt).unwrap();
    let mut seq = prompt.to_vec();
    for step in 0..6 {
        let want = reference_logits(&cfg, &w, &seq);
        let want = f32s(&want.i(seq.len() - 1).unwrap());
        let got = f32s(&state.logits().unwrap().i(0).unwrap());
        let e = rel_err(&got, &want);
        let limit = match dtype {
            DType::F32 => 1e-4,
            _ => 5e-2,
        };
        assert!(e < limit, "{family:?} {dtype:?} step {step}: logits rel err {e}");
        let next = state.read_tokens().unwrap()[0];
        if dtype == DType::F32 {
            let argmax = want.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).unwrap().0 as u32;
            assert_eq!(next, argmax, "{family:?} step {step}: greedy token");
        }
        assert_eq!(state.read_pos().unwrap()[0] as usize, seq.len(), "the position advanced on the device");
        seq.push(next);
        model.step(&state.rows(0, 1).unwrap()).unwrap();
    }
    assert_eq!(state.read_pos().unwrap()[1], 3, "the other row did not move");
}

#[test]
fn llama_prefill_and_decode_match_the_reference_forward() {
    model_matches_reference(Family::Llama, &Device::Cpu, DType::F32);
    model_matches_reference(Family::Llama, &Device::Cpu, DType::BF16);
}
#[test]
fn qwen2_prefill_and_decode_match_the_reference_forward() {
    model_matches_reference(Family::Qwen2, &Device::Cpu, DType::F32);
    model_matches_reference(Family::Qwen2, &Device::Cpu, DType::F16);
}
#[test]
#[ignore = "needs a CUDA device"]
fn models_match_the_reference_forward_gpu() {
    if let Some(d) = gpu() {
        for f in [Family::Llama, Family::Qwen2] {
            for dt in [DType::F32, DType::BF16, DType::F16] {
                model_matches_reference(f, &d, dt);
            }
        }
    }
}

#[test]
fn checkpoints_that_do_not_match_the_config_name_the_tensor() {
    let mut cfg = Config::tiny(Family::Qwen2);
    cfg.torch_dtype = Some(DType::BF16);
    let w = hf_weights(&cfg, 7);
    let dev = Device::Cpu;
    // dtype: the file is f32, the config says bfloat16.
    let f = save(&w, DType::F32, "dtype");
    match Model::from_safetensors(&cfg, &[f], DType::F32, 16, &dev) {
        Err(Error::WeightDtype { name, .. }) => assert_eq!(name, "model.embed_tokens.weight"),
        other => panic!("expected WeightDtype, got {other:?}"),
    }
    // shape
    let mut bad = w.clone();
    bad.insert("model.layers.1.mlp.down_proj.weight".into(), Tensor::zeros((64, 95), DType::F32, &dev).unwrap());
    let f = save(&bad, DType::BF16, "shape");
    match Model::from_safetensors(&cfg, &[f], DType::BF16, 16, &dev) {
        Err(Error::WeightShape { name, expected, found }) => {
            assert_eq!(name, "model.layers.1.mlp.down_proj.weight");
            assert_eq!((expected, found), (vec![64, 96], vec![64, 95]));
        }
        other => panic!("expected WeightShape, got {other:?}"),
    }
    // missing
    let mut bad = w.clone();
    bad.remove("model.layers.0.self_attn.k_proj.bias");
    let f = save(&bad, DType::BF16, "missing");
    match Model::from_safetensors(&cfg, &[f], DType::BF16, 16, &dev) {
        Err(Error::MissingWeight { name }) => assert_eq!(name, "model.layers.0.self_attn.k_proj.bias"),
        other => panic!("expected MissingWeight, got {other:?}"),
    }
    // a directory: config.json + safetensors
    let f = save(&w, DType::BF16, "dir");
    let dir = f.parent().unwrap();
    std::fs::write(dir.join("config.json"), QWEN_JSON.replace("\"hidden_size\": 896", "\"hidden_size\": 65")).unwrap();
    assert!(Model::from_dir(dir, DType::BF16, 16, &dev).is_err(), "a config that does not match the weights");
    let e = Model::from_safetensors(&cfg, &[dir.join("nope.safetensors")], DType::BF16, 16, &dev).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e}");
}

#[test]
fn bad_model_input_is_refused_before_any_work() {
    let dev = Device::Cpu;
    let model = Model::random(&Config::tiny(Family::Llama), DType::F32, 8, &dev, 1).unwrap();
    let state = model.new_state(2).unwrap();
    match model.prefill(&state, 0, &[1; 9]) {
        Err(Error::PromptTooLong { len: 9, max_seq: 8 }) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(state.read_pos().unwrap(), [0, 0], "nothing ran");
    assert!(matches!(model.prefill(&state, 0, &[]), Err(Error::InvalidArgument { .. })));
    assert!(
        matches!(model.prefill(&state, 0, &[97]), Err(Error::InvalidArgument { .. })),
        "token id past the vocabulary"
    );
    assert!(matches!(model.prefill(&state, 2, &[1]), Err(Error::InvalidArgument { .. })), "row past the batch");
    assert!(matches!(
        Model::random(&Config::tiny(Family::Llama), DType::U32, 8, &dev, 1),
        Err(Error::InvalidArgument { .. })
    ));
    assert!(matches!(
        Model::random(&Config::tiny(Family::Llama), DType::F32, 0, &dev, 1),
        Err(Error::InvalidArgument { .. })
    ));
}

/// A state's setters refuse what the step cannot use: a token outside the vocabulary (on a
/// GPU the embedding's lookup would fail a device assertion and lose the context), a position
/// that a step could wrap to 0, a batch past the sampler's limit (before any cache is
/// allocated); and the device still works afterwards (a step runs).
fn bad_state_input(dev: &Device) {
    let model = Model::random(&Config::tiny(Family::Llama), DType::F32, 8, dev, 1).unwrap();
    let vocab = model.config().vocab_size as u32;
    let state = model.new_state(2).unwrap();
    match state.set_token(1, vocab) {
        Err(Error::InvalidArgument { what: "token", .. }) => {}
        other => panic!("a token past the vocabulary: {other:?}"),
    }
    assert!(matches!(state.set_token(1, u32::MAX), Err(Error::InvalidArgument { .. })));
    for pos in [u32::MAX, 1 << 31] {
        match state.set_row(0, pos, true) {
            Err(Error::InvalidArgument { what: "state position", .. }) => {}
            other => panic!("position {pos}: {other:?}"),
        }
    }
    // Past the cache is allowed (a finished row is left there): its step only flags overflow.
    state.set_row(0, 9, true).unwrap();
    for batch in [usize::MAX, 65_536] {
        match model.new_state(batch) {
            Err(Error::InvalidArgument { what: "batch", .. }) => {}
            other => panic!("batch {batch}: {other:?}"),
        }
    }
    // What is accepted still runs: the last token and the cache's last position.
    state.set_token(1, vocab - 1).unwrap();
    state.set_row(1, 7, true).unwrap();
    state.set_row(0, 9, true).unwrap();
    model.step(&state).unwrap();
    assert_eq!(state.read_pos().unwrap(), [10, 8]);
    assert_eq!(state.read_overflow().unwrap(), [true, false]);
}

#[test]
fn bad_state_input_is_refused() {
    bad_state_input(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn bad_state_input_is_refused_gpu() {
    if let Some(d) = gpu() {
        bad_state_input(&d);
    }
}

/// Sizes no machine could hold, or that overflow the kernels' 32-bit sizes, are typed
/// errors before anything is allocated: never a panic, an abort or a wrapped size.
#[test]
fn impossible_sizes_are_refused_before_any_allocation() {
    let dev = Device::Cpu;
    // Past the kernels' 32-bit sizes (a batch, a row of keys).
    for (b, k, s, d) in [(1usize << 32, 1usize << 32, 1, 2), (1 << 40, 8, 1 << 20, 64), (1, 1 << 40, 1, 64)] {
        match KvCache::new(b, k, s, d, DType::F32, &dev) {
            Err(Error::BadOperands { .. }) => {}
            other => panic!("{b} x {k} x {s} x {d}: {other:?}"),
        }
    }
    // Within them, but 2^78 bytes in all: the byte count would wrap.
    match KvCache::new(1 << 30, 1 << 10, 1 << 30, 64, DType::F32, &dev) {
        Err(Error::InvalidArgument { what: "KV cache size", .. }) => {}
        other => panic!("2^78 bytes: {other:?}"),
    }
    let table = RopeTable::new(2, 4, 10_000.0, None, RopeLayout::Halves, &dev).unwrap();
    let pos = Tensor::new(&[0u32], &dev).unwrap();
    let x = Tensor::zeros((1, 1, 2), DType::F32, &dev).unwrap();
    assert!(matches!(decode::rope(&x, 1 << 63, &table, &pos), Err(Error::BadOperands { .. })));
    let bad = |f: &dyn Fn(&mut Config)| {
        let mut c = Config::tiny(Family::Llama);
        f(&mut c);
        c
    };
    let cases: [(&str, Config); 6] = [
        ("num_hidden_layers", bad(&|c| c.num_hidden_layers = 100_000_000_000_000)),
        (
            "num_attention_heads",
            bad(&|c| {
                c.num_attention_heads = 1 << 40;
                c.num_key_value_heads = 1 << 40;
            }),
        ),
        ("intermediate_size", bad(&|c| c.intermediate_size = 1 << 62)),
        ("hidden_size", bad(&|c| c.hidden_size = 1 << 40)),
        ("max_position_embeddings", bad(&|c| c.max_position_embeddings = 0)),
        (
            "rope_scaling",
            bad(&|c| {
                c.rope_scaling = Some(Llama3Scaling {
                    factor: 0.0,
                    low_freq_factor: 1.0,
                    high_freq_factor: 4.0,
                    original_max_position_embeddings: 8192,
                })
            }),
        ),
    ];
    for (field, cfg) in cases {
        match Model::random(&cfg, DType::F32, 8, &dev, 1) {
            Err(Error::UnsupportedConfig { field: f, .. }) => assert_eq!(f, field),
            other => panic!("{field}: {other:?}"),
        }
    }
    // Equal frequency factors would divide by zero: NaN in every scaled frequency.
    let s = Llama3Scaling {
        factor: 8.0,
        low_freq_factor: 2.0,
        high_freq_factor: 2.0,
        original_max_position_embeddings: 8192,
    };
    assert!(matches!(
        RopeTable::new(64, 16, 500_000.0, Some(&s), RopeLayout::Halves, &dev),
        Err(Error::InvalidArgument { .. })
    ));
    // A fractional original_max_position_embeddings is refused, a whole float accepted.
    let json = |v: &str| {
        LLAMA_JSON.replace(
            "\"original_max_position_embeddings\": 8192",
            &format!("\"original_max_position_embeddings\": {v}"),
        )
    };
    assert!(
        matches!(Config::from_json(&json("8192.5")), Err(Error::Config(m)) if m.contains("original_max_position_embeddings"))
    );
    assert!(matches!(Config::from_json(&json("1e30")), Err(Error::Config(_))));
    let c = Config::from_json(&json("8192.0")).unwrap();
    assert_eq!(c.rope_scaling.unwrap().original_max_position_embeddings, 8192);

    // Sizes that count and address, but that no machine holds: 4,096 layers of 2^20-wide
    // products (about 10^14 bytes in f32), a cache of 2^58 bytes. Refused on the CPU before
    // candle's allocation could abort the process (where the host's memory is known).
    if std::fs::read_to_string("/proc/meminfo").is_ok_and(|m| m.contains("MemTotal:")) {
        let huge = bad(&|c| {
            c.num_hidden_layers = Config::MAX_LAYERS;
            c.hidden_size = 2048;
            c.intermediate_size = 1 << 20;
        });
        huge.validate().unwrap();
        match Model::random(&huge, DType::F32, 8, &dev, 1) {
            Err(e @ Error::HostMemory { what: "the model's weights", .. }) => {
                assert!(e.to_string().contains("smaller dtype"), "{e}")
            }
            other => panic!("10^14 bytes of weights: {other:?}"),
        }
        match KvCache::new(1 << 16, 8, 1 << 30, 128, DType::F32, &dev) {
            Err(Error::HostMemory { what, bytes, .. }) => {
                assert_eq!((what, bytes), ("a KV cache (keys and values)", 1 << 59))
            }
            other => panic!("2^59 bytes of cache: {other:?}"),
        }
        // 512 small layers (64 MB of weights), each layer's cache 17 GB at 65,535 rows: the
        // state's 8.8 TB in all is refused before the first cache is allocated.
        let deep = bad(&|c| c.num_hidden_layers = 512);
        let model = Model::random(&deep, DType::F32, 1024, &dev, 1).unwrap();
        match model.new_state(65_535) {
            Err(Error::HostMemory { what: "a decode state (KV caches and logits)", bytes, .. }) => {
                assert_eq!(bytes, 512 * 2 * 65_535 * 2 * 1024 * 16 * 4 + 65_535 * 97 * 4)
            }
            other => panic!("8.8 TB of state: {:?}", other.map(|s| s.batch())),
        }
    }
}

/// A sequence that reaches the end of its cache stops with the overflow flag set, and
/// nothing is written past the cache.
fn cache_full(dev: &Device) {
    let model = Model::random(&Config::tiny(Family::Llama), DType::F32, 6, dev, 3).unwrap();
    let state = model.new_state(1).unwrap();
    model.prefill(&state, 0, &[1, 2, 3, 4, 5]).unwrap();
    assert_eq!(state.read_overflow().unwrap(), [false]);
    model.step(&state).unwrap(); // position 5: the last slot
    assert_eq!(state.read_overflow().unwrap(), [false]);
    model.step(&state).unwrap(); // position 6: past the end
    assert_eq!(state.read_overflow().unwrap(), [true]);
    for c in state.caches() {
        assert_eq!(c.k().dims()[2], 6);
    }
}

#[test]
fn a_sequence_at_the_end_of_its_cache_raises_its_flag() {
    cache_full(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn a_sequence_at_the_end_of_its_cache_raises_its_flag_gpu() {
    if let Some(d) = gpu() {
        cache_full(&d);
    }
}

/// Prompts of different lengths prefilled together (`prefill_rows`) give each row what it gets
/// prefilled alone: the first logits (within 1e-3 in f32, 3e-2 in bf16), the position, and in
/// f32 the tokens of the steps after (greedy, and seeded top-k/top-p draws). The caches past
/// each prompt stay unwritten (the rows that sit a round out write nothing), a row past the
/// prompts is not touched, and bad prompt lists (and a state of another model) are refused
/// before any work.
fn ragged_prefill(dev: &Device, dtype: DType, max_seq: usize, rounds: PrefillRounds, prompts: &[&[u32]]) {
    let mut model = Model::random(&Config::tiny(Family::Llama), dtype, max_seq, dev, 11).unwrap();
    model.set_prefill_rounds(rounds);
    assert_eq!(model.prefill_rounds(), rounds);
    let b = prompts.len() + 1;
    let params = [SamplingParams::GREEDY, SamplingParams::new(0.8, 20, 0.9).unwrap()];
    let decode = |st: &capture_candle::model::DecodeState| {
        let mut out = vec![st.read_tokens().unwrap()];
        for _ in 0..6 {
            model.step(st).unwrap();
            out.push(st.read_tokens().unwrap());
        }
        out
    };
    let tol = if dtype == DType::F32 { 1e-3 } else { 3e-2 };
    for p in params {
        let st = model.new_state(b).unwrap();
        for row in 0..b {
            st.sampler().set(row, &p, 30 + row as u64).unwrap();
        }
        // The last row holds a sequence of its own, which the prefill leaves where it is.
        st.set_row(b - 1, 7, true).unwrap();
        model.prefill_rows(&st, prompts).unwrap();
        let pos = st.read_pos().unwrap();
        let want: Vec<u32> = prompts.iter().map(|p| p.len() as u32).chain([7]).collect();
        assert_eq!(pos, want, "{p:?}");
        assert_eq!(st.active().to_vec1::<u32>().unwrap()[b - 1], 1, "the last row is still active");
        let last = st.caches()[0].k().i(b - 1).unwrap();
        assert!(f32s(&last).iter().all(|v| *v == 0.0), "the last row's cache is not written");
        for (row, prompt) in prompts.iter().enumerate() {
            let k = st.caches()[0].k().i(row).unwrap().narrow(1, prompt.len(), max_seq - prompt.len()).unwrap();
            assert!(f32s(&k).iter().all(|v| *v == 0.0), "row {row}: the cache past its prompt is written");
        }
        // A copy: the state's logits are overwritten by the steps below.
        let logits = st.logits().unwrap().copy().unwrap();
        let together = decode(&st);
        for (row, prompt) in prompts.iter().enumerate() {
            let one = model.new_state(1).unwrap();
            one.sampler().set(0, &p, 30 + row as u64).unwrap();
            model.prefill(&one, 0, prompt).unwrap();
            let e = rel_err(&f32s(&one.logits().unwrap().i(0).unwrap()), &f32s(&logits.i(row).unwrap()));
            assert!(e < tol, "row {row} ({p:?}, {dtype:?}): first logits differ by {e}");
            let alone = decode(&one);
            let mine: Vec<u32> = together.iter().map(|t| t[row]).collect();
            if dtype == DType::F32 {
                assert_eq!(mine, alone.iter().map(|t| t[0]).collect::<Vec<_>>(), "row {row} ({p:?})");
            }
        }
    }
    let st = model.new_state(2).unwrap();
    st.set_row(0, 3, true).unwrap();
    let three: [&[u32]; 3] = [&[1], &[2], &[3]];
    let long = vec![1; max_seq + 1];
    assert!(matches!(model.prefill_rows(&st, &three), Err(Error::InvalidArgument { .. })));
    assert!(matches!(model.prefill_rows(&st, &[]), Err(Error::InvalidArgument { .. })));
    assert!(matches!(model.prefill_rows(&st, &[&[1], &[]]), Err(Error::InvalidArgument { .. })));
    assert!(matches!(
        model.prefill_rows(&st, &[&[1], &long]),
        Err(Error::PromptTooLong { len, max_seq: m }) if len == max_seq + 1 && m == max_seq
    ));
    assert!(matches!(model.prefill(&st, usize::MAX, &[1]), Err(Error::InvalidArgument { .. })));
    let mut deeper = Config::tiny(Family::Llama);
    deeper.num_hidden_layers += 1;
    let other = Model::random(&deeper, dtype, max_seq, dev, 11).unwrap().new_state(2).unwrap();
    assert!(matches!(model.prefill_rows(&other, &[&[1]]), Err(Error::BadOperands { .. })));
    // A state whose cache is shorter than the model's: prompts are held to the cache.
    let short = Model::random(&Config::tiny(Family::Llama), dtype, 4, dev, 11).unwrap().new_state(1).unwrap();
    assert!(matches!(model.prefill_rows(&short, &[&[1; 5]]), Err(Error::PromptTooLong { len: 5, max_seq: 4 })));
    assert_eq!(st.read_pos().unwrap(), [3, 0], "refused before any work");
}

/// Prompts of these lengths, of fixed tokens.
fn of(lens: &[u32]) -> Vec<Vec<u32>> {
    lens.iter().map(|&n| (0..n).map(|t| (t * 7 + n) % 97).collect()).collect()
}
fn view(v: &[Vec<u32>]) -> Vec<&[u32]> {
    v.iter().map(|p| p.as_slice()).collect()
}

/// Short prompts of 5, 1, 12 and 2 tokens (rounds of 1, 3 and 7 tokens, row 1 sitting out
/// inside the span; with at most 6 token rows a round, 1, 2, 1, 6 and 1); long ones of 520, 3
/// and 260 (rounds of 2, 257 and 260; with at most 256 tokens a row, the rounds before
/// 2026-12-02's fourth session, 2, 256, 1, 256 and 4); 9 prompts of 300 to 308 tokens (2,048
/// token rows a round: rounds of 227 and 72, then eight of 1 as the rows finish).
fn ragged_cases(dev: &Device, dtype: DType) {
    let short: [&[u32]; 4] = [&[3, 1, 4, 1, 5], &[9], &[2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4, 5], &[6, 6]];
    let default = PrefillRounds::default();
    ragged_prefill(dev, dtype, 64, default, &short);
    ragged_prefill(dev, dtype, 64, PrefillRounds::new(6, 2048).unwrap(), &short);
    let long = of(&[520, 3, 260]);
    ragged_prefill(dev, dtype, 600, default, &view(&long));
    ragged_prefill(dev, dtype, 600, PrefillRounds::new(2048, 256).unwrap(), &view(&long));
    ragged_prefill(dev, dtype, 320, default, &view(&of(&(300..309).collect::<Vec<_>>())));
}

#[test]
fn prompts_of_different_lengths_prefill_together_as_alone() {
    ragged_cases(&Device::Cpu, DType::F32);
}
#[test]
#[ignore = "needs a CUDA device"]
fn prompts_of_different_lengths_prefill_together_as_alone_gpu() {
    if let Some(d) = gpu() {
        ragged_cases(&d, DType::F32);
        ragged_cases(&d, DType::BF16);
    }
}

/// The rounds' sizes change how a prefill is cut, not what it computes: prompts of 300, 41 and
/// 7 tokens under the default rounds (of 6, 34 and 259 tokens), at most 256 tokens a row (6,
/// 34, 256 and 3) and at most 5 tokens a row in 16 token rows (61 rounds) give the same first
/// logits (within 1e-4 in f32, 3e-2 in bf16) and, in f32, the same greedy tokens after.
fn rounds_agree(dev: &Device, dtype: DType) {
    let prompts = of(&[300, 41, 7]);
    let settings =
        [PrefillRounds::default(), PrefillRounds::new(2048, 256).unwrap(), PrefillRounds::new(16, 5).unwrap()];
    let run = |rounds: PrefillRounds| {
        let mut model = Model::random(&Config::tiny(Family::Llama), dtype, 320, dev, 11).unwrap();
        model.set_prefill_rounds(rounds);
        let st = model.new_state(3).unwrap();
        model.prefill_rows(&st, &view(&prompts)).unwrap();
        let logits = f32s(&st.logits().unwrap());
        let mut tokens = vec![st.read_tokens().unwrap()];
        for _ in 0..4 {
            model.step(&st).unwrap();
            tokens.push(st.read_tokens().unwrap());
        }
        (logits, tokens)
    };
    let (want, want_tokens) = run(settings[0]);
    let tol = if dtype == DType::F32 { 1e-4 } else { 3e-2 };
    for r in &settings[1..] {
        let (logits, tokens) = run(*r);
        let e = rel_err(&logits, &want);
        assert!(e < tol, "{r:?} ({dtype:?}): first logits differ by {e}");
        if dtype == DType::F32 {
            assert_eq!(tokens, want_tokens, "{r:?}");
        }
    }
}

#[test]
fn prefill_rounds_of_any_size_compute_the_same() {
    rounds_agree(&Device::Cpu, DType::F32);
}
#[test]
#[ignore = "needs a CUDA device"]
fn prefill_rounds_of_any_size_compute_the_same_gpu() {
    if let Some(d) = gpu() {
        rounds_agree(&d, DType::F32);
        rounds_agree(&d, DType::BF16);
    }
}

#[test]
fn seeded_sampling_in_the_model_repeats() {
    let dev = Device::Cpu;
    let model = Model::random(&Config::tiny(Family::Qwen2), DType::F32, 32, &dev, 5).unwrap();
    let run = |seed: u64| {
        let state = model.new_state(1).unwrap();
        state.sampler().set(0, &SamplingParams::new(1.5, 0, 1.0).unwrap(), seed).unwrap();
        model.prefill(&state, 0, &[1, 2, 3]).unwrap();
        let mut out = vec![state.read_tokens().unwrap()[0]];
        for _ in 0..12 {
            model.step(&state).unwrap();
            out.push(state.read_tokens().unwrap()[0]);
        }
        out
    };
    assert_eq!(run(9), run(9));
    assert_ne!(run(9), run(10));
}

/// The tiled attention of a prefill's rounds (on by default) agrees with the per-token kernel
/// it replaces: for heads of 64 (Llama-3.2-1B's 32 over 8) and of 128 (16 over 4), in bf16
/// and f16, three layers, rows of 17 to 601 tokens prefilled together (rounds of 1 to 301
/// tokens a row: the per-token kernel below 16 tokens or 2,048 query rows, the tiled one from
/// there, with blocks part full; the caches' bits differ, so the tiled one ran). Then a round
/// below 2,048 query rows over a short prefix (heads of 64), which the model gives the tiled
/// kernel too.
/// The caches of layers 1 and 2, which the attention of the layers before them fed, and the
/// first logits agree within the type's rounding. (The last layer's prefill attention feeds
/// nothing the model keeps; `decode`'s tests check the kernel itself.) It is in effect only
/// on CUDA, in 16-bit types, for heads of 64 or 128.
#[test]
#[ignore = "needs a CUDA device"]
fn tiled_prefill_attention_agrees_with_the_per_token_kernel_gpu() {
    let Some(dev) = gpu() else { return };
    let mut cpu = Model::random(&Config::tiny(Family::Llama), DType::F32, 16, &Device::Cpu, 1).unwrap();
    assert!(!cpu.tiled_attention() && !cpu.set_tiled_attention(true), "not on the CPU");
    let mut tiny = Model::random(&Config::tiny(Family::Llama), DType::BF16, 16, &dev, 1).unwrap();
    assert!(!tiny.set_tiled_attention(true), "not for heads of 16");
    let mut d64 = Config::llama_3_2_1b();
    d64.num_hidden_layers = 3;
    d64.vocab_size = 512;
    let mut d128 = Config::tiny(Family::Qwen2);
    (d128.num_attention_heads, d128.num_key_value_heads, d128.head_dim, d128.hidden_size) = (16, 4, 128, 256);
    d128.num_hidden_layers = 3;
    for cfg in [d64, d128] {
        for dtype in [DType::BF16, DType::F16] {
            let tiled = Model::random(&cfg, dtype, 700, &dev, 3).unwrap();
            assert!(tiled.tiled_attention(), "on by default, head_dim {}", cfg.head_dim);
            let mut per_token = Model::random(&cfg, dtype, 700, &dev, 3).unwrap();
            assert!(!per_token.set_tiled_attention(false));
            let lens = [17usize, 21, 22, 32, 33, 300, 601];
            let prompts: Vec<Vec<u32>> = lens
                .iter()
                .enumerate()
                .map(|(r, &n)| (0..n).map(|i| ((i * 29 + r * 7 + 3) % cfg.vocab_size) as u32).collect())
                .collect();
            let prompts: Vec<&[u32]> = prompts.iter().map(Vec::as_slice).collect();
            let run = |m: &Model| {
                let st = m.new_state(lens.len()).unwrap();
                m.prefill_rows(&st, &prompts).unwrap();
                let caches: Vec<Vec<f32>> = st.caches()[1..].iter().flat_map(|c| [f32s(c.k()), f32s(c.v())]).collect();
                (f32s(&st.logits().unwrap()), caches, st.read_pos().unwrap())
            };
            let (want, want_caches, want_pos) = run(&per_token);
            let (got, got_caches, got_pos) = run(&tiled);
            assert_eq!(got_pos, want_pos);
            assert_ne!(got_caches, want_caches, "head_dim {} {dtype:?}: the tiled kernel did not run", cfg.head_dim);
            let limit = if dtype == DType::F16 { 1e-2 } else { 3e-2 };
            for (i, (g, w)) in got_caches.iter().zip(&want_caches).enumerate() {
                let e = rel_err(g, w);
                assert!(
                    e < limit,
                    "head_dim {} {dtype:?}: layer {}'s {}: rel err {e}",
                    cfg.head_dim,
                    1 + i / 2,
                    ["keys", "values"][i % 2]
                );
            }
            let e = rel_err(&got, &want);
            assert!(e < limit, "head_dim {} {dtype:?}: first logits rel err {e}", cfg.head_dim);
        }
    }
    // Below 2,048 query rows the model takes the tiled kernel only where it knows every row's
    // prefix is short (heads of 64, at most 1,024 keys): one prompt of 100 tokens at 8 query
    // heads is a round of 99 tokens, 792 query rows, 99 keys.
    let mut short = Config::llama_3_2_1b();
    (short.num_hidden_layers, short.vocab_size, short.num_attention_heads, short.num_key_value_heads) = (3, 512, 8, 2);
    let prompt: Vec<u32> = (0..100).map(|i| (i * 31 + 5) % 512).collect();
    let run = |m: &Model| {
        let st = m.new_state(1).unwrap();
        m.prefill_rows(&st, &[&prompt]).unwrap();
        let caches: Vec<Vec<f32>> = st.caches()[1..].iter().flat_map(|c| [f32s(c.k()), f32s(c.v())]).collect();
        (f32s(&st.logits().unwrap()), caches)
    };
    let tiled = Model::random(&short, DType::BF16, 128, &dev, 3).unwrap();
    let mut per_token = Model::random(&short, DType::BF16, 128, &dev, 3).unwrap();
    per_token.set_tiled_attention(false);
    let ((got, got_caches), (want, want_caches)) = (run(&tiled), run(&per_token));
    assert_ne!(got_caches, want_caches, "a short round below 2,048 query rows: the tiled kernel did not run");
    for (g, w) in got_caches.iter().zip(&want_caches) {
        assert!(rel_err(g, w) < 3e-2, "a short round: caches rel err {}", rel_err(g, w));
    }
    assert!(rel_err(&got, &want) < 3e-2, "a short round: first logits rel err {}", rel_err(&got, &want));
}

/// Programmatic dependent launch is in effect only on a GPU that has it: on the CPU
/// `set_programmatic_launch` says it is not, and the step runs as before.
#[test]
fn programmatic_launch_is_not_in_effect_on_the_cpu() {
    let mut m = Model::random(&Config::tiny(Family::Llama), DType::F32, 16, &Device::Cpu, 1).unwrap();
    assert!(!m.programmatic_launch(), "off by default on the CPU");
    assert!(!m.set_programmatic_launch(true).unwrap());
    assert!(!m.programmatic_launch());
    let st = m.new_state(1).unwrap();
    m.prefill(&st, 0, &[1, 2, 3]).unwrap();
    m.step(&st).unwrap();
}

/// Programmatic dependent launch, on by default where the GPU has it, changes when the step's
/// products and attention start, not what they compute: its eager steps and its captured
/// replays give the plain eager step's tokens and logits, bit for bit, at one row (the gemv
/// kernels), two and four (the tensor-core ones, in bf16), greedy and sampled, for the tiny Llama
/// and Qwen2 configs (Qwen2's QKV bias) and for four layers of Llama-3.2-1B's shapes; and the
/// captured graph holds the programmatic edges. The prompts (600 tokens and more, a row each
/// at its own length) put the prefix past one attention chunk: the chunks' partial results
/// are combined, and the blocks past the prefix return early.
#[test]
#[ignore = "needs a CUDA device"]
fn programmatic_launch_gives_the_plain_steps_bits_gpu() {
    use std::sync::Arc;
    let Some(dev) = gpu() else { return };
    let mut four_layers = Config::llama_3_2_1b();
    four_layers.num_hidden_layers = 4;
    four_layers.vocab_size = 4096;
    for cfg in [Config::tiny(Family::Llama), Config::tiny(Family::Qwen2), four_layers] {
        let mut plain = Model::random(&cfg, DType::BF16, 1024, &dev, 7).unwrap();
        // On by default where the GPU has it.
        let default = plain.programmatic_launch();
        assert!(!plain.set_programmatic_launch(false).unwrap());
        let plain = Arc::new(plain);
        let mut m = Model::random(&cfg, DType::BF16, 1024, &dev, 7).unwrap();
        let supported = m.set_programmatic_launch(true).unwrap();
        assert_eq!(default, supported, "on by default exactly where the GPU has it");
        if !supported {
            eprintln!(
                "this GPU has no programmatic dependent launch (compute capability below 9.0): nothing to compare"
            );
            return;
        }
        let pdl = Arc::new(m);
        let topk = SamplingParams::new(0.8, 50, 0.95).unwrap();
        // 1 row: the matrix-vector kernels; 2 and 4 (bf16): the tensor-core ones.
        for batch in [1, 2, 4] {
            let start = |m: &Model| {
                let st = m.new_state(batch).unwrap();
                for r in 0..batch {
                    let params = if r == 0 { SamplingParams::GREEDY } else { topk };
                    st.sampler().set(r, &params, 11 + r as u64).unwrap();
                    let prompt: Vec<u32> =
                        (0..600 + 37 * r).map(|i| ((i * 13 + r * 5 + 1) % cfg.vocab_size) as u32).collect();
                    m.prefill(&st, r, &prompt).unwrap();
                }
                st
            };
            let bits = |st: &capture_candle::model::DecodeState| {
                let l = st.logits().unwrap().to_dtype(DType::F32).unwrap().flatten_all().unwrap();
                l.to_vec1::<f32>().unwrap().iter().map(|v| v.to_bits()).collect::<Vec<u32>>()
            };
            let eager = |m: &Model| {
                let st = start(m);
                (0..16)
                    .map(|_| {
                        m.step(&st).unwrap();
                        (st.read_tokens().unwrap(), bits(&st))
                    })
                    .collect::<Vec<_>>()
            };
            let want = eager(&plain);
            assert_eq!(eager(&pdl), want, "eager, {} layers, batch {batch}", cfg.num_hidden_layers);
            let mut cs = CandleStream::new(&dev).unwrap();
            // Modules load and candle's caches fill outside the capture, on a state of its own.
            let warm = start(&pdl);
            cs.warm_up(|| pdl.step(&warm).map_err(candle_core::Error::wrap)).unwrap();
            let st = start(&pdl);
            let (graph, _) = cs.capture_owned((pdl.clone(), st.clone()), |(m, s)| m.step(s)).unwrap();
            // The overlap is in the graph: the edges into the products and attention are
            // programmatic, every layer's QKV, attention, output projection, gate/up and down,
            // and the LM head's.
            let layers = cfg.num_hidden_layers;
            assert_eq!(graph.programmatic_edges(), 5 * layers + 1, "{layers} layers, batch {batch}");
            let got: Vec<_> = (0..16)
                .map(|_| {
                    graph.launch(cs.stream()).unwrap();
                    (st.read_tokens().unwrap(), bits(&st))
                })
                .collect();
            assert_eq!(got, want, "replay, {} layers, batch {batch}", cfg.num_hidden_layers);
        }
    }
}
