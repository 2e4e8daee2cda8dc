//! `Config::from_json` on the two forms of `config.json` (issue #31): transformers 4.4x's
//! (`rope_theta`, `rope_scaling`, `torch_dtype`) and transformers 5's (`rope_parameters`,
//! `dtype`, Qwen2's `layer_types`), the table of known fields, and the refusals. Parsing only:
//! no device is used.

use candle_core::DType;
use capture_candle::decode::Llama3Scaling;
use capture_candle::model::{Config, Family};
use capture_candle::Error;

/// Qwen2.5-0.5B's `config.json` as published (written by transformers 4.40.1).
const QWEN_V4: &str = r#"{
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24, "num_key_value_heads": 2,
  "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768, "tie_word_embeddings": true,
  "torch_dtype": "bfloat16", "transformers_version": "4.40.1", "use_cache": true,
  "use_sliding_window": false, "vocab_size": 151936
}"#;

/// [`QWEN_V4`] loaded with `Qwen2Config.from_dict` and written back with `to_json_string()` by
/// transformers 5.24.0 (one field a line; lists kept on one line).
const QWEN_V5: &str = r#"{
  "architectures": ["Qwen2ForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 151643,
  "dtype": "bfloat16",
  "eos_token_id": 151643,
  "hidden_act": "silu",
  "hidden_size": 896,
  "initializer_range": 0.02,
  "intermediate_size": 4864,
  "layer_types": ["full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention", "full_attention"],
  "max_position_embeddings": 32768,
  "max_window_layers": 24,
  "model_type": "qwen2",
  "num_attention_heads": 14,
  "num_hidden_layers": 24,
  "num_key_value_heads": 2,
  "pad_token_id": null,
  "rms_norm_eps": 1e-06,
  "rope_parameters": {"rope_theta": 1000000.0, "rope_type": "default"},
  "sliding_window": null,
  "tie_word_embeddings": true,
  "transformers_version": "5.24.0",
  "use_cache": true,
  "use_sliding_window": false,
  "vocab_size": 151936
}"#;

/// Llama-3.2-1B's `config.json` as published (written by transformers 4.45.0.dev0).
const LLAMA_V4: &str = r#"{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu",
  "hidden_size": 2048, "initializer_range": 0.02, "intermediate_size": 8192,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 16, "num_key_value_heads": 8, "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256
}"#;

/// [`LLAMA_V4`] loaded with `LlamaConfig.from_dict` and written back with `to_json_string()`
/// by transformers 5.24.0 (one field a line).
const LLAMA_V5: &str = r#"{
  "architectures": ["LlamaForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "bos_token_id": 128000,
  "dtype": "bfloat16",
  "eos_token_id": 128001,
  "head_dim": 64,
  "hidden_act": "silu",
  "hidden_size": 2048,
  "initializer_range": 0.02,
  "intermediate_size": 8192,
  "max_position_embeddings": 131072,
  "mlp_bias": false,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 16,
  "num_key_value_heads": 8,
  "pad_token_id": null,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_parameters": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0, "original_max_position_embeddings": 8192, "rope_theta": 500000.0, "rope_type": "llama3"},
  "tie_word_embeddings": true,
  "transformers_version": "5.24.0",
  "use_cache": true,
  "vocab_size": 128256
}"#;

/// transformers 4.46.3's `LlamaConfig(hidden_size=64, intermediate_size=96,
/// num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2, vocab_size=97,
/// rope_theta=1e6, torch_dtype="float32").to_json_string(use_diff=False)`: every field of
/// `PretrainedConfig` and `LlamaConfig`, at its default (`transformers_version` left out).
const LLAMA_V4_FULL: &str = r#"
{"_attn_implementation_autoset": false, "_name_or_path": "", "add_cross_attention": false,
"architectures": null, "attention_bias": false, "attention_dropout": 0.0, "bad_words_ids": null,
"begin_suppress_tokens": null, "bos_token_id": 1, "chunk_size_feed_forward": 0,
"cross_attention_hidden_size": null, "decoder_start_token_id": null, "diversity_penalty": 0.0,
"do_sample": false, "early_stopping": false, "encoder_no_repeat_ngram_size": 0, "eos_token_id": 2,
"exponential_decay_length_penalty": null, "finetuning_task": null, "forced_bos_token_id": null,
"forced_eos_token_id": null, "head_dim": 16, "hidden_act": "silu", "hidden_size": 64, "id2label":
{"0": "LABEL_0", "1": "LABEL_1"}, "initializer_range": 0.02, "intermediate_size": 96, "is_decoder":
false, "is_encoder_decoder": false, "label2id": {"LABEL_0": 0, "LABEL_1": 1}, "length_penalty": 1.0,
"max_length": 20, "max_position_embeddings": 2048, "min_length": 0, "mlp_bias": false, "model_type":
"llama", "no_repeat_ngram_size": 0, "num_attention_heads": 4, "num_beam_groups": 1, "num_beams": 1,
"num_hidden_layers": 2, "num_key_value_heads": 2, "num_return_sequences": 1, "output_attentions":
false, "output_hidden_states": false, "output_scores": false, "pad_token_id": null, "prefix": null,
"pretraining_tp": 1, "problem_type": null, "pruned_heads": {}, "remove_invalid_values": false,
"repetition_penalty": 1.0, "return_dict": true, "return_dict_in_generate": false, "rms_norm_eps":
1e-06, "rope_scaling": null, "rope_theta": 1000000.0, "sep_token_id": null, "suppress_tokens": null,
"task_specific_params": null, "temperature": 1.0, "tf_legacy_loss": false, "tie_encoder_decoder":
false, "tie_word_embeddings": false, "tokenizer_class": null, "top_k": 50, "top_p": 1.0,
"torch_dtype": "float32", "torchscript": false, "typical_p": 1.0, "use_bfloat16": false,
"use_cache": true, "vocab_size": 97}"#;

/// transformers 5.24.0's `Qwen2Config(` the same sizes `, rope_parameters={"rope_type":
/// "default", "rope_theta": 1e6}, dtype="float32").to_json_string(use_diff=False)`
/// (`transformers_version` left out).
const QWEN_V5_FULL: &str = r#"
{"_name_or_path": "", "architectures": null, "attention_dropout": 0.0, "bos_token_id": null,
"chunk_size_feed_forward": 0, "dtype": "float32", "eos_token_id": null, "hidden_act": "silu",
"hidden_size": 64, "id2label": {"0": "LABEL_0", "1": "LABEL_1"}, "initializer_range": 0.02,
"intermediate_size": 96, "is_encoder_decoder": false, "label2id": {"LABEL_0": 0, "LABEL_1": 1},
"layer_types": ["full_attention", "full_attention"], "max_position_embeddings": 32768,
"max_window_layers": 28, "model_type": "qwen2", "num_attention_heads": 4, "num_hidden_layers": 2,
"num_key_value_heads": 2, "output_attentions": false, "output_hidden_states": false, "pad_token_id":
null, "problem_type": null, "return_dict": true, "rms_norm_eps": 1e-06, "rope_parameters":
{"rope_theta": 1000000.0, "rope_type": "default"}, "sliding_window": null, "tie_word_embeddings":
false, "use_cache": true, "use_sliding_window": false, "vocab_size": 97}"#;

/// `json` with `field`'s value replaced by `value` (added where `json` lacks it).
fn with(json: &str, field: &str, value: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
    v[field] = serde_json::from_str(value).unwrap();
    v.to_string()
}

/// `json` without `field`.
fn without(json: &str, field: &str) -> String {
    let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
    v.as_object_mut().unwrap().remove(field);
    v.to_string()
}

fn llama_3_2_1b_as_published() -> Config {
    let mut c = Config::llama_3_2_1b();
    c.eos_token_ids = vec![128_001];
    c
}

fn qwen2_5_0_5b_as_published() -> Config {
    let mut c = Config::qwen2_5_0_5b();
    c.bos_token_id = Some(151_643);
    c.eos_token_ids = vec![151_643];
    c
}

/// The field an `UnsupportedConfig` names; panics on another outcome.
fn unsupported_field(json: &str) -> &'static str {
    match Config::from_json(json) {
        Err(Error::UnsupportedConfig { field, .. }) => field,
        other => panic!("expected UnsupportedConfig, got {other:?}"),
    }
}

/// The fields a `ConflictingConfig` names; panics on another outcome.
fn conflicting_fields(json: &str) -> (&'static str, &'static str) {
    match Config::from_json(json) {
        Err(Error::ConflictingConfig { field, other, .. }) => (field, other),
        other => panic!("expected ConflictingConfig, got {other:?}"),
    }
}

/// The field an `UnknownConfigField` names; panics on another outcome.
fn unknown_field(json: &str) -> String {
    match Config::from_json(json) {
        Err(Error::UnknownConfigField { field }) => field,
        other => panic!("expected UnknownConfigField, got {other:?}"),
    }
}

#[test]
fn qwen2_transformers_5_reads_theta_from_rope_parameters() {
    let q = Config::from_json(QWEN_V5).unwrap();
    assert_eq!(q.rope_theta, 1e6);
    assert_eq!(q, qwen2_5_0_5b_as_published());
    // The published (transformers 4) form gives the same config.
    assert_eq!(Config::from_json(QWEN_V4).unwrap(), q);
}

#[test]
fn llama_transformers_5_reads_llama3_scaling_from_rope_parameters() {
    let l = Config::from_json(LLAMA_V5).unwrap();
    let scaling = Llama3Scaling {
        factor: 32.0,
        low_freq_factor: 1.0,
        high_freq_factor: 4.0,
        original_max_position_embeddings: 8192,
    };
    assert_eq!((l.rope_theta, l.rope_scaling), (500_000.0, Some(scaling)));
    assert_eq!(l, llama_3_2_1b_as_published());
    assert_eq!(Config::from_json(LLAMA_V4).unwrap(), l);
}

#[test]
fn every_field_transformers_writes_at_its_default_is_accepted() {
    let l = Config::from_json(LLAMA_V4_FULL).unwrap();
    assert_eq!((l.family, l.rope_theta, l.rope_scaling, l.torch_dtype), (Family::Llama, 1e6, None, Some(DType::F32)));
    assert_eq!((l.bos_token_id, l.eos_token_ids.as_slice(), l.head_dim), (Some(1), &[2][..], 16));
    let q = Config::from_json(QWEN_V5_FULL).unwrap();
    assert_eq!((q.family, q.rope_theta, q.rope_scaling, q.torch_dtype), (Family::Qwen2, 1e6, None, Some(DType::F32)));
    assert_eq!((q.bos_token_id, q.eos_token_ids.len(), q.head_dim, q.qkv_bias), (None, 0, 16, true));
}

#[test]
fn both_forms_in_one_config_are_read_where_they_agree() {
    // transformers 5 form with the transformers 4 fields beside it, all agreeing.
    let json = with(
        &with(&with(LLAMA_V5, "rope_theta", "500000"), "torch_dtype", "\"bfloat16\""),
        "rope_scaling",
        r#"{"rope_type": "llama3", "factor": 32, "low_freq_factor": 1, "high_freq_factor": 4, "original_max_position_embeddings": 8192}"#,
    );
    assert_eq!(Config::from_json(&json).unwrap(), llama_3_2_1b_as_published());
    let json = with(&with(QWEN_V5, "rope_theta", "1e6"), "rope_scaling", "null");
    assert_eq!(Config::from_json(&json).unwrap().rope_theta, 1e6);
    // `type`, the older name of `rope_type`, and a `default` type meaning no scaling.
    let json = with(QWEN_V4, "rope_scaling", r#"{"type": "default"}"#);
    assert_eq!(Config::from_json(&json).unwrap().rope_scaling, None);
}

#[test]
fn dtype_and_torch_dtype() {
    let dt = |json: &str| Config::from_json(json).unwrap().torch_dtype;
    assert_eq!(dt(&with(QWEN_V5, "dtype", "\"float16\"")), Some(DType::F16));
    assert_eq!(dt(&with(QWEN_V4, "torch_dtype", "\"float32\"")), Some(DType::F32));
    assert_eq!(dt(&with(QWEN_V5, "torch_dtype", "\"bfloat16\"")), Some(DType::BF16));
    assert_eq!(dt(&with(QWEN_V5, "torch_dtype", "null")), Some(DType::BF16));
    assert_eq!(dt(&without(QWEN_V5, "dtype")), None);
    assert_eq!(conflicting_fields(&with(QWEN_V5, "torch_dtype", "\"float16\"")), ("dtype", "torch_dtype"));
    assert_eq!(unsupported_field(&with(QWEN_V5, "dtype", "\"int8\"")), "dtype");
}

#[test]
fn disagreeing_forms_are_refused_naming_the_fields() {
    // The Qwen2.5 bug of issue #31: a transformers 4 theta beside a transformers 5 one.
    let json = with(QWEN_V5, "rope_theta", "10000.0");
    assert_eq!(conflicting_fields(&json), ("rope_parameters.rope_theta", "rope_theta"));
    let json = with(LLAMA_V5, "rope_scaling", r#"{"rope_type": "default"}"#);
    assert_eq!(conflicting_fields(&json), ("rope_parameters", "rope_scaling"));
    let json = with(
        LLAMA_V4,
        "rope_parameters",
        r#"{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192}"#,
    );
    assert_eq!(conflicting_fields(&json), ("rope_parameters", "rope_scaling"));
    let json = with(QWEN_V5, "rope_parameters", r#"{"rope_type": "default", "type": "llama3"}"#);
    assert_eq!(conflicting_fields(&json), ("rope_parameters.rope_type", "rope_parameters.type"));
}

#[test]
fn defaults_are_transformers_defaults() {
    // No RoPE field anywhere: theta 10,000 for both families.
    let q = Config::from_json(&without(&without(QWEN_V4, "rope_theta"), "max_position_embeddings")).unwrap();
    assert_eq!((q.rope_theta, q.rope_scaling, q.max_position_embeddings), (10_000.0, None, 32_768));
    let q = Config::from_json(&without(QWEN_V5, "rope_parameters")).unwrap();
    assert_eq!(q.rope_theta, 10_000.0);
    let q = Config::from_json(&with(QWEN_V5, "rope_parameters", r#"{"rope_type": "default"}"#)).unwrap();
    assert_eq!(q.rope_theta, 10_000.0);
    let l =
        without(&without(&without(&without(LLAMA_V4, "rope_theta"), "rope_scaling"), "bos_token_id"), "eos_token_id");
    let l = Config::from_json(&without(&l, "max_position_embeddings")).unwrap();
    assert_eq!((l.rope_theta, l.rope_scaling, l.max_position_embeddings), (10_000.0, None, 2048));
    assert_eq!((l.bos_token_id, l.eos_token_ids.as_slice()), (Some(1), &[2][..]));
    // Llama 3 scaling without original_max_position_embeddings: max_position_embeddings.
    let json = with(
        LLAMA_V5,
        "rope_parameters",
        r#"{"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0}"#,
    );
    assert_eq!(Config::from_json(&json).unwrap().rope_scaling.unwrap().original_max_position_embeddings, 131_072);
    // Qwen2Config's key/value heads default to 32, Llama's to the query heads.
    let json =
        with(&with(&without(QWEN_V4, "num_key_value_heads"), "num_attention_heads", "32"), "hidden_size", "2048");
    assert_eq!(Config::from_json(&json).unwrap().num_key_value_heads, 32);
    let json = with(&with(QWEN_V4, "num_key_value_heads", "null"), "max_window_layers", "null");
    assert_eq!(Config::from_json(&json).unwrap().num_key_value_heads, 14);
    assert_eq!(Config::from_json(&without(LLAMA_V4, "num_key_value_heads")).unwrap().num_key_value_heads, 32);
}

#[test]
fn qwen2_layer_types_and_sliding_window() {
    // `sliding_window: null`, or a number while `use_sliding_window` is off: full attention.
    assert!(Config::from_json(&with(QWEN_V4, "sliding_window", "null")).is_ok());
    assert!(Config::from_json(&with(QWEN_V5, "sliding_window", "4096")).is_ok());
    assert!(Config::from_json(&without(QWEN_V5, "layer_types")).is_ok());
    assert_eq!(unsupported_field(&with(QWEN_V5, "use_sliding_window", "true")), "use_sliding_window");
    let mut types = vec!["\"full_attention\""; 24];
    types[23] = "\"sliding_attention\"";
    let json = with(QWEN_V5, "layer_types", &format!("[{}]", types.join(",")));
    assert_eq!(unsupported_field(&json), "layer_types");
    assert_eq!(unsupported_field(&with(QWEN_V5, "layer_types", r#"["full_attention"]"#)), "layer_types");
    // Llama has no such fields.
    assert_eq!(unknown_field(&with(LLAMA_V5, "layer_types", "[]")), "layer_types");
    assert_eq!(unknown_field(&with(LLAMA_V5, "use_sliding_window", "false")), "use_sliding_window");
}

#[test]
fn options_that_change_the_computation_are_refused() {
    let cases = [
        (with(LLAMA_V5, "pretraining_tp", "2"), "pretraining_tp"),
        (with(LLAMA_V5, "attention_bias", "true"), "attention_bias"),
        (with(LLAMA_V5, "mlp_bias", "true"), "mlp_bias"),
        (with(LLAMA_V5, "hidden_act", "\"gelu\""), "hidden_act"),
        (with(LLAMA_V5, "partial_rotary_factor", "0.5"), "partial_rotary_factor"),
        (
            with(QWEN_V5, "rope_parameters", r#"{"rope_type": "default", "partial_rotary_factor": 0.5}"#),
            "rope_parameters.partial_rotary_factor",
        ),
        (with(QWEN_V5, "rope_parameters", r#"{"rope_type": "yarn", "factor": 4.0}"#), "rope_parameters.rope_type"),
        (with(QWEN_V4, "rope_scaling", r#"{"type": "dynamic", "factor": 2.0}"#), "rope_scaling.rope_type"),
        (with(LLAMA_V4, "architectures", r#"["LlamaForSequenceClassification"]"#), "architectures"),
        (with(QWEN_V5, "temperature", "0.7"), "temperature"),
        (with(QWEN_V5, "pruned_heads", r#"{"0": [1]}"#), "pruned_heads"),
        (with(QWEN_V5, "use_mrope", "true"), "use_mrope"),
        (with(LLAMA_V4, "quantization_config", r#"{"quant_method": "gptq"}"#), "quantization_config"),
    ];
    for (json, field) in cases {
        assert_eq!(unsupported_field(&json), field);
    }
    // The same settings at their harmless values are accepted.
    for (field, value) in
        [("pretraining_tp", "1"), ("partial_rotary_factor", "1.0"), ("temperature", "1"), ("use_mrope", "false")]
    {
        let json = if field == "use_mrope" { with(QWEN_V5, field, value) } else { with(LLAMA_V5, field, value) };
        assert!(Config::from_json(&json).is_ok(), "{field}: {value}");
    }
}

#[test]
fn unknown_fields_are_refused_naming_them() {
    assert_eq!(unknown_field(&with(QWEN_V5, "sliding_window_pattern", "2")), "sliding_window_pattern");
    // A Llama option is not a Qwen2 one (Qwen2's projections are fixed).
    assert_eq!(unknown_field(&with(QWEN_V5, "attention_bias", "false")), "attention_bias");
    // Inside a RoPE object: keys of other RoPE types.
    let json = with(
        LLAMA_V5,
        "rope_parameters",
        r#"{"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "attention_factor": 1.2}"#,
    );
    assert_eq!(unknown_field(&json), "rope_parameters.attention_factor");
    let json = with(QWEN_V4, "rope_scaling", r#"{"rope_type": "default", "factor": 2.0}"#);
    assert_eq!(unknown_field(&json), "rope_scaling.factor");
    let e = Config::from_json(&with(QWEN_V5, "new_thing", "1")).unwrap_err().to_string();
    assert!(e.contains("new_thing") && e.contains("transformers"), "{e}");
}

#[test]
fn broken_configs_are_config_errors() {
    let bad = |json: &str| matches!(Config::from_json(json), Err(Error::Config(_)));
    assert!(bad("[1, 2]"));
    assert!(bad(&with(QWEN_V5, "rope_parameters", "1e6")));
    assert!(bad(&with(QWEN_V5, "hidden_size", "\"896\"")));
    assert!(bad(&with(QWEN_V5, "layer_types", "\"full_attention\"")));
    assert!(bad(&with(LLAMA_V5, "rope_parameters", r#"{"rope_type": "llama3", "rope_theta": 500000.0}"#)));
    assert!(bad(&without(QWEN_V5, "rms_norm_eps")));
}
