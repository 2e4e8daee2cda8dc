//! Model configs, read from a Hugging Face `config.json`.

use candle_core::DType;
use serde_json::{Map, Value};

use crate::decode::Llama3Scaling;
use crate::error::{Error, Result};

/// The architecture family.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Family {
    /// Llama 2/3.x (`model_type: "llama"`).
    Llama,
    /// Qwen2 and Qwen2.5 (`model_type: "qwen2"`): biases on the q/k/v projections.
    Qwen2,
}

/// A decoder's sizes and options: the fields of `config.json` the models use.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Config {
    /// The family.
    pub family: Family,
    /// `hidden_size`.
    pub hidden_size: usize,
    /// `intermediate_size`.
    pub intermediate_size: usize,
    /// `num_hidden_layers`.
    pub num_hidden_layers: usize,
    /// `num_attention_heads`.
    pub num_attention_heads: usize,
    /// `num_key_value_heads`. Where it is left out: `num_attention_heads` for Llama, 32 for
    /// Qwen2 (`Qwen2Config`'s default; a `null` means `num_attention_heads`).
    pub num_key_value_heads: usize,
    /// `head_dim` (default `hidden_size / num_attention_heads`, for both families).
    pub head_dim: usize,
    /// `vocab_size`.
    pub vocab_size: usize,
    /// `rms_norm_eps`.
    pub rms_norm_eps: f64,
    /// The RoPE base: `rope_parameters.rope_theta` (transformers 5) or `rope_theta`
    /// (transformers 4). Where neither is given, 10,000, transformers' default for both
    /// families (`LlamaConfig` and `Qwen2Config` in 4.4x, `default_theta` in 5.x).
    pub rope_theta: f64,
    /// Llama 3's RoPE scaling, if any: `rope_parameters` (transformers 5) or `rope_scaling`
    /// (transformers 4) with `rope_type: "llama3"`. `None` for `rope_type: "default"` or no
    /// RoPE object. A llama3 object without `original_max_position_embeddings` takes
    /// `max_position_embeddings`, as transformers 5 does.
    pub rope_scaling: Option<Llama3Scaling>,
    /// `max_position_embeddings` (default 2048 for Llama, 32,768 for Qwen2, transformers'
    /// defaults).
    pub max_position_embeddings: usize,
    /// `tie_word_embeddings`: the LM head is the embedding matrix (default false).
    pub tie_word_embeddings: bool,
    /// Biases on the q, k and v projections (Qwen2).
    pub qkv_bias: bool,
    /// The dtype of the checkpoint's tensors, if given: `dtype` (transformers 5) or
    /// `torch_dtype` (transformers 4).
    pub torch_dtype: Option<DType>,
    /// `bos_token_id`. Where it is left out: 1 for Llama (`LlamaConfig`'s default), none for
    /// Qwen2.
    pub bos_token_id: Option<u32>,
    /// `eos_token_id` (one or several). Where it is left out: 2 for Llama (`LlamaConfig`'s
    /// default), none for Qwen2.
    pub eos_token_ids: Vec<u32>,
}

/// How [`Config::from_json`] treats one top-level field of `config.json`.
#[derive(Clone, Copy, Debug)]
enum Rule {
    /// Read into [`Config`], and checked there.
    Read,
    /// Known, and harmless whatever its value: it does not change what the model computes.
    Harmless,
    /// Harmless at transformers' default (this JSON literal) or `null`; any other value is
    /// refused with [`Error::UnsupportedConfig`], this text saying what is supported.
    DefaultOnly(&'static str, &'static str),
    /// Known, and refused whatever its value: this text says why.
    Refused(&'static str),
}

/// Which families' configs a field belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Of {
    Both,
    Llama,
    Qwen2,
}

/// A generation setting of transformers 4's `PretrainedConfig`: at its default it says
/// nothing; another value would change what transformers 4's `generate()` does, while this
/// crate samples with [`SamplingParams`](crate::decode::SamplingParams).
const GENERATION: &str =
    "transformers' default or null: sampling is set with SamplingParams; delete the field from config.json";

/// Every top-level field of a Llama or Qwen2 `config.json` as transformers 4.4x
/// (`LlamaConfig`, `Qwen2Config` and `PretrainedConfig`) and 5.x (`PreTrainedConfig`) write
/// them, and what [`Config::from_json`] does with it. A field not listed is refused
/// ([`Error::UnknownConfigField`]).
const FIELDS: &[(&str, Of, Rule)] = {
    use Rule::*;
    &[
        // The model's shape and options: read.
        ("model_type", Of::Both, Read),
        ("architectures", Of::Both, Read),
        ("hidden_size", Of::Both, Read),
        ("intermediate_size", Of::Both, Read),
        ("num_hidden_layers", Of::Both, Read),
        ("num_attention_heads", Of::Both, Read),
        ("num_key_value_heads", Of::Both, Read),
        // Not a `Qwen2Config` field, but Qwen2's attention reads it where it is present.
        ("head_dim", Of::Both, Read),
        ("vocab_size", Of::Both, Read),
        ("rms_norm_eps", Of::Both, Read),
        ("hidden_act", Of::Both, Read),
        ("max_position_embeddings", Of::Both, Read),
        ("tie_word_embeddings", Of::Both, Read),
        ("bos_token_id", Of::Both, Read),
        ("eos_token_id", Of::Both, Read),
        // The checkpoint's dtype: `torch_dtype` up to transformers 4.5x, `dtype` from then on.
        ("torch_dtype", Of::Both, Read),
        ("dtype", Of::Both, Read),
        // RoPE: the transformers 4 form (`rope_theta`, `rope_scaling`) and the transformers 5
        // form (`rope_parameters`); `partial_rotary_factor` may stand beside either.
        ("rope_theta", Of::Both, Read),
        ("rope_scaling", Of::Both, Read),
        ("rope_parameters", Of::Both, Read),
        ("partial_rotary_factor", Of::Both, Read),
        // Llama's options (Qwen2's projections are fixed: q/k/v biased, the rest not).
        ("attention_bias", Of::Llama, Read),
        ("mlp_bias", Of::Llama, Read),
        ("pretraining_tp", Of::Llama, Read),
        // Qwen2's sliding-window attention: read, and refused where a layer would use it.
        ("use_sliding_window", Of::Qwen2, Read),
        ("sliding_window", Of::Qwen2, Read),
        ("max_window_layers", Of::Qwen2, Read),
        ("layer_types", Of::Qwen2, Read),
        // Not a `Qwen2Config` field, but written into some Qwen2 checkpoints (DeepSeek's
        // distilled ones): true is Qwen2-VL's multimodal RoPE.
        ("use_mrope", Of::Qwen2, DefaultOnly("false", "false or null: multimodal RoPE (Qwen2-VL) is not implemented")),
        // Training only: weight initialisation, and dropout, which inference does not apply.
        ("initializer_range", Of::Both, Harmless),
        ("attention_dropout", Of::Both, Harmless),
        ("tf_legacy_loss", Of::Both, Harmless),
        // What transformers returns, not what it computes.
        ("use_cache", Of::Both, Harmless),
        ("output_attentions", Of::Both, Harmless),
        ("output_hidden_states", Of::Both, Harmless),
        ("return_dict", Of::Both, Harmless),
        ("output_scores", Of::Both, Harmless),
        ("return_dict_in_generate", Of::Both, Harmless),
        ("torchscript", Of::Both, Harmless),
        // Splits the feed-forward over the sequence in transformers; the sums are the same.
        ("chunk_size_feed_forward", Of::Both, Harmless),
        // A TensorFlow/Flax dtype hint; the checkpoint's dtype is `dtype` / `torch_dtype`.
        ("use_bfloat16", Of::Both, Harmless),
        // Tokens the decoder never sees as such: padding (this crate pads nothing) and
        // encoder-decoder or sequence-pair markers.
        ("pad_token_id", Of::Both, Harmless),
        ("sep_token_id", Of::Both, Harmless),
        ("decoder_start_token_id", Of::Both, Harmless),
        // Bookkeeping, tokenizer and pipeline metadata, and classification heads' labels
        // (the causal LM head does not use them).
        ("_name_or_path", Of::Both, Harmless),
        ("_attn_implementation_autoset", Of::Both, Harmless),
        ("transformers_version", Of::Both, Harmless),
        ("tokenizer_class", Of::Both, Harmless),
        ("prefix", Of::Both, Harmless),
        ("task_specific_params", Of::Both, Harmless),
        ("finetuning_task", Of::Both, Harmless),
        ("id2label", Of::Both, Harmless),
        ("label2id", Of::Both, Harmless),
        ("problem_type", Of::Both, Harmless),
        ("is_decoder", Of::Both, Harmless),
        // Structure a decoder-only model does not have: harmless only when off.
        (
            "is_encoder_decoder",
            Of::Both,
            DefaultOnly("false", "false or null: encoder-decoder models are not implemented"),
        ),
        ("add_cross_attention", Of::Both, DefaultOnly("false", "false or null: cross-attention is not implemented")),
        (
            "tie_encoder_decoder",
            Of::Both,
            DefaultOnly("false", "false or null: encoder-decoder models are not implemented"),
        ),
        ("cross_attention_hidden_size", Of::Both, DefaultOnly("null", "null: cross-attention is not implemented")),
        ("pruned_heads", Of::Both, DefaultOnly("{}", "{} or null: pruned attention heads are not implemented")),
        // transformers 4's generation settings (transformers 5 keeps them in
        // generation_config.json): harmless at their defaults.
        ("max_length", Of::Both, DefaultOnly("20", GENERATION)),
        ("min_length", Of::Both, DefaultOnly("0", GENERATION)),
        ("do_sample", Of::Both, DefaultOnly("false", GENERATION)),
        ("early_stopping", Of::Both, DefaultOnly("false", GENERATION)),
        ("num_beams", Of::Both, DefaultOnly("1", GENERATION)),
        ("num_beam_groups", Of::Both, DefaultOnly("1", GENERATION)),
        ("diversity_penalty", Of::Both, DefaultOnly("0.0", GENERATION)),
        ("temperature", Of::Both, DefaultOnly("1.0", GENERATION)),
        ("top_k", Of::Both, DefaultOnly("50", GENERATION)),
        ("top_p", Of::Both, DefaultOnly("1.0", GENERATION)),
        ("typical_p", Of::Both, DefaultOnly("1.0", GENERATION)),
        ("repetition_penalty", Of::Both, DefaultOnly("1.0", GENERATION)),
        ("length_penalty", Of::Both, DefaultOnly("1.0", GENERATION)),
        ("no_repeat_ngram_size", Of::Both, DefaultOnly("0", GENERATION)),
        ("encoder_no_repeat_ngram_size", Of::Both, DefaultOnly("0", GENERATION)),
        ("bad_words_ids", Of::Both, DefaultOnly("null", GENERATION)),
        ("num_return_sequences", Of::Both, DefaultOnly("1", GENERATION)),
        ("forced_bos_token_id", Of::Both, DefaultOnly("null", GENERATION)),
        ("forced_eos_token_id", Of::Both, DefaultOnly("null", GENERATION)),
        ("remove_invalid_values", Of::Both, DefaultOnly("false", GENERATION)),
        ("exponential_decay_length_penalty", Of::Both, DefaultOnly("null", GENERATION)),
        ("suppress_tokens", Of::Both, DefaultOnly("null", GENERATION)),
        ("begin_suppress_tokens", Of::Both, DefaultOnly("null", GENERATION)),
        // Changes the weights' meaning.
        (
            "quantization_config",
            Of::Both,
            Refused("unquantized checkpoints only: quantized weights are not implemented"),
        ),
    ]
};

/// The rule for `field` in `family`'s configs, if it has one.
fn rule(family: Family, field: &str) -> Option<(&'static str, Rule)> {
    FIELDS
        .iter()
        .find(|(name, of, _)| {
            *name == field
                && match of {
                    Of::Both => true,
                    Of::Llama => family == Family::Llama,
                    Of::Qwen2 => family == Family::Qwen2,
                }
        })
        .map(|&(name, _, r)| (name, r))
}

/// `value` is `null` or the JSON literal `default` (numbers compared as numbers).
fn is_default(value: &Value, default: &str) -> bool {
    let Ok(d) = serde_json::from_str::<Value>(default) else { return false };
    match (value, &d) {
        (Value::Null, _) => true,
        (Value::Number(a), Value::Number(b)) => a.as_f64() == b.as_f64(),
        (a, b) => a == b,
    }
}

fn need<T>(v: Option<T>, field: &str) -> Result<T> {
    v.ok_or_else(|| Error::Config(format!("the field `{field}` is missing")))
}

fn unsupported(field: &'static str, value: impl std::fmt::Display, supported: &'static str) -> Error {
    Error::UnsupportedConfig { field, value: value.to_string(), supported }
}

fn conflict(
    field: &'static str,
    value: impl std::fmt::Display,
    other: &'static str,
    other_value: impl std::fmt::Display,
) -> Error {
    Error::ConflictingConfig { field, value: value.to_string(), other, other_value: other_value.to_string() }
}

/// The top-level fields, `null` where absent (transformers reads a `null` as unset).
struct Fields<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Fields<'a> {
    /// The value of `field`, `None` where absent or `null`.
    fn get(&self, field: &str) -> Option<&'a Value> {
        self.map.get(field).filter(|v| !v.is_null())
    }

    fn uint(&self, field: &str) -> Result<Option<usize>> {
        self.get(field).map(|v| as_usize(v, field)).transpose()
    }

    fn num(&self, field: &str) -> Result<Option<f64>> {
        self.get(field).map(|v| as_f64(v, field)).transpose()
    }

    fn flag(&self, field: &str) -> Result<Option<bool>> {
        self.get(field)
            .map(|v| v.as_bool().ok_or_else(|| Error::Config(format!("`{field}` must be true or false, not {v}"))))
            .transpose()
    }

    fn text(&self, field: &str) -> Result<Option<&'a str>> {
        self.get(field)
            .map(|v| v.as_str().ok_or_else(|| Error::Config(format!("`{field}` must be a string, not {v}"))))
            .transpose()
    }
}

fn as_usize(v: &Value, field: &str) -> Result<usize> {
    v.as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Error::Config(format!("`{field}` must be a non-negative integer, not {v}")))
}

fn as_f64(v: &Value, field: &str) -> Result<f64> {
    v.as_f64().ok_or_else(|| Error::Config(format!("`{field}` must be a number, not {v}")))
}

fn token_ids(v: Option<&Value>, field: &str) -> Result<Vec<u32>> {
    let bad = || Error::Config(format!("`{field}` must be a token id or a list of them"));
    let id = |x: &Value| x.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(bad);
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(n @ Value::Number(_)) => Ok(vec![id(n)?]),
        Some(Value::Array(a)) => a.iter().map(id).collect(),
        Some(_) => Err(bad()),
    }
}

/// The checkpoint dtype named by `dtype` or `torch_dtype`.
fn dtype(name: &str, field: &'static str) -> Result<DType> {
    match name {
        "bfloat16" => Ok(DType::BF16),
        "float16" => Ok(DType::F16),
        "float32" => Ok(DType::F32),
        other => Err(unsupported(field, other, "bfloat16, float16, float32")),
    }
}

/// Which object a RoPE setting came from.
#[derive(Clone, Copy, PartialEq, Eq)]
enum RopeForm {
    /// transformers 4's `rope_scaling`.
    Scaling,
    /// transformers 5's `rope_parameters`.
    Parameters,
}

/// The keys a RoPE object may hold, and their names as errors give them.
const ROPE_KEYS: [&str; 8] = [
    "rope_type",
    "type",
    "rope_theta",
    "partial_rotary_factor",
    "factor",
    "low_freq_factor",
    "high_freq_factor",
    "original_max_position_embeddings",
];
const ROPE_SCALING_NAMES: [&str; 8] = [
    "rope_scaling.rope_type",
    "rope_scaling.type",
    "rope_scaling.rope_theta",
    "rope_scaling.partial_rotary_factor",
    "rope_scaling.factor",
    "rope_scaling.low_freq_factor",
    "rope_scaling.high_freq_factor",
    "rope_scaling.original_max_position_embeddings",
];
const ROPE_PARAMETERS_NAMES: [&str; 8] = [
    "rope_parameters.rope_type",
    "rope_parameters.type",
    "rope_parameters.rope_theta",
    "rope_parameters.partial_rotary_factor",
    "rope_parameters.factor",
    "rope_parameters.low_freq_factor",
    "rope_parameters.high_freq_factor",
    "rope_parameters.original_max_position_embeddings",
];

impl RopeForm {
    fn name(self) -> &'static str {
        match self {
            RopeForm::Scaling => "rope_scaling",
            RopeForm::Parameters => "rope_parameters",
        }
    }

    /// `key` of this object as errors name it (`rope_parameters.factor`).
    fn key(self, key: &str) -> &'static str {
        let names = match self {
            RopeForm::Scaling => &ROPE_SCALING_NAMES,
            RopeForm::Parameters => &ROPE_PARAMETERS_NAMES,
        };
        ROPE_KEYS.iter().position(|k| *k == key).map_or(self.name(), |i| names[i])
    }
}

/// One RoPE object (`rope_scaling` or `rope_parameters`), read.
struct RopeObject {
    form: RopeForm,
    /// `rope_theta`, where the object gives it.
    theta: Option<f64>,
    /// The scaling: `None` for `rope_type: "default"`.
    scaling: Option<Llama3Scaling>,
}

impl RopeObject {
    /// Reads `v`; `max_position_embeddings` is the default of llama3's
    /// `original_max_position_embeddings` (transformers 5 fills it in the same way).
    fn read(v: &Value, form: RopeForm, max_position_embeddings: usize) -> Result<Self> {
        let Value::Object(m) = v else {
            return Err(Error::Config(format!("`{}` must be an object, not {v}", form.name())));
        };
        let f = Fields { map: m };
        let kind = match (f.text("rope_type")?, f.text("type")?) {
            (Some(a), Some(b)) if a != b => return Err(conflict(form.key("rope_type"), a, form.key("type"), b)),
            (Some(a), _) | (None, Some(a)) => a,
            // transformers reads a RoPE object without a type as the default RoPE.
            (None, None) => "default",
        };
        let llama3 = match kind {
            "default" => false,
            "llama3" => true,
            other => {
                return Err(unsupported(
                    form.key("rope_type"),
                    other,
                    "default or llama3 (dynamic, linear, yarn, longrope... are not implemented)",
                ))
            }
        };
        for key in m.keys() {
            let known = ROPE_KEYS[..4].contains(&key.as_str()) || (llama3 && ROPE_KEYS[4..].contains(&key.as_str()));
            if !known {
                return Err(Error::UnknownConfigField { field: format!("{}.{key}", form.name()) });
            }
        }
        if let Some(p) = f.num("partial_rotary_factor")? {
            if p != 1.0 {
                return Err(unsupported(form.key("partial_rotary_factor"), p, "1 (RoPE over the whole head)"));
            }
        }
        let theta = f.num("rope_theta")?;
        if !llama3 {
            return Ok(RopeObject { form, theta, scaling: None });
        }
        let required = |k: &str| f.num(k)?.ok_or_else(|| Error::Config(format!("`{}` is missing", form.key(k))));
        let original = match f.get("original_max_position_embeddings") {
            None => max_position_embeddings,
            Some(v) => {
                // An integer, or a float with no fraction (8192.0): never silently truncated.
                let key = form.key("original_max_position_embeddings");
                let n = as_f64(v, key)?;
                if !(n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= i32::MAX as f64) {
                    return Err(Error::Config(format!("`{key}` must be a whole number below 2^31, not {v}")));
                }
                n as usize
            }
        };
        let s = Llama3Scaling {
            factor: required("factor")?,
            low_freq_factor: required("low_freq_factor")?,
            high_freq_factor: required("high_freq_factor")?,
            original_max_position_embeddings: original,
        };
        if s.validate().is_err() {
            return Err(unsupported(form.name(), format!("{s:?}"), Llama3Scaling::EXPECTED));
        }
        Ok(RopeObject { form, theta, scaling: Some(s) })
    }
}

/// The RoPE settings from either form, or both where they agree: `(theta, scaling)`.
fn rope(f: &Fields, max_position_embeddings: usize) -> Result<(f64, Option<Llama3Scaling>)> {
    if let Some(p) = f.num("partial_rotary_factor")? {
        if p != 1.0 {
            return Err(unsupported("partial_rotary_factor", p, "1 (RoPE over the whole head)"));
        }
    }
    let objects = [("rope_scaling", RopeForm::Scaling), ("rope_parameters", RopeForm::Parameters)]
        .into_iter()
        .filter_map(|(field, form)| f.get(field).map(|v| RopeObject::read(v, form, max_position_embeddings)))
        .collect::<Result<Vec<_>>>()?;
    // The scaling: both objects, where both are given, must say the same.
    if let [a, b] = objects.as_slice() {
        if a.scaling != b.scaling {
            let show =
                |s: &Option<Llama3Scaling>| s.map_or("default (no scaling)".to_string(), |s| format!("llama3 {s:?}"));
            return Err(conflict(b.form.name(), show(&b.scaling), a.form.name(), show(&a.scaling)));
        }
    }
    let scaling = objects.first().and_then(|o| o.scaling);
    // The theta: every place that gives it must give the same number.
    let mut theta: Option<(&'static str, f64)> = f.num("rope_theta")?.map(|t| ("rope_theta", t));
    for o in &objects {
        if let Some(t) = o.theta {
            let name = o.form.key("rope_theta");
            match theta {
                Some((other, u)) if u != t => return Err(conflict(name, t, other, u)),
                _ => theta = Some((name, t)),
            }
        }
    }
    Ok((theta.map_or(DEFAULT_ROPE_THETA, |(_, t)| t), scaling))
}

/// transformers' RoPE base where a config gives none, for Llama and Qwen2 alike
/// (`LlamaConfig` and `Qwen2Config` in 4.4x, `default_theta` in 5.x).
const DEFAULT_ROPE_THETA: f64 = 10_000.0;

impl Config {
    /// Parses a `config.json` as transformers 4.4x or 5.x writes it for `LlamaForCausalLM` or
    /// `Qwen2ForCausalLM`.
    ///
    /// Both forms of the settings transformers 5 renamed are read: the RoPE settings as
    /// transformers 4's `rope_theta` and `rope_scaling` or as transformers 5's
    /// `rope_parameters` (with `rope_type` `default` or `llama3`), and the checkpoint dtype as
    /// `torch_dtype` or `dtype`. A config may hold both forms only where they agree.
    ///
    /// Every top-level field is checked against a table of the fields transformers writes
    /// for the family: each one is read, known to leave the computation unchanged (training,
    /// output and bookkeeping settings; generation settings at their defaults), or refused.
    /// A field outside the table is refused too, never ignored: it may come from an older or
    /// newer transformers, or from another model, and could change what the model computes.
    ///
    /// Fields left out take transformers' defaults for the family (see each field of
    /// [`Config`]), except the sizes (`hidden_size`, `intermediate_size`, `num_hidden_layers`,
    /// `num_attention_heads`, `vocab_size`) and `rms_norm_eps`, which transformers always
    /// writes and this reader requires. A `null` counts as left out.
    ///
    /// # Errors
    /// - [`Error::Config`] for text that is not such a config, a field of the wrong type, or a
    ///   required field missing;
    /// - [`Error::UnsupportedConfig`], naming the field, for a `model_type`, `hidden_act`, RoPE
    ///   type, dtype or option these models do not implement (`attention_bias`, `mlp_bias`,
    ///   `pretraining_tp` other than 1, `partial_rotary_factor` other than 1, Qwen2's
    ///   `use_sliding_window: true` or a `layer_types` entry other than `full_attention`, ...),
    ///   and for sizes that do not fit together ([`validate`](Self::validate));
    /// - [`Error::ConflictingConfig`] where the two forms of one setting disagree;
    /// - [`Error::UnknownConfigField`] for a field outside the table.
    pub fn from_json(text: &str) -> Result<Self> {
        let v: Value = serde_json::from_str(text).map_err(|e| Error::Config(e.to_string()))?;
        let Value::Object(map) = &v else {
            return Err(Error::Config("the text is not a JSON object".into()));
        };
        let f = Fields { map };
        let family = match f.text("model_type")? {
            Some("llama") => Family::Llama,
            Some("qwen2") => Family::Qwen2,
            Some(other) => return Err(unsupported("model_type", other, "llama, qwen2")),
            None => return Err(Error::Config("the field `model_type` is missing".into())),
        };
        for (key, value) in map {
            match rule(family, key) {
                None => return Err(Error::UnknownConfigField { field: key.clone() }),
                Some((_, Rule::Read | Rule::Harmless)) => {}
                Some((name, Rule::DefaultOnly(default, supported))) => {
                    if !is_default(value, default) {
                        return Err(unsupported(name, value, supported));
                    }
                }
                Some((name, Rule::Refused(supported))) => return Err(unsupported(name, value, supported)),
            }
        }

        if let Some(archs) = f.get("architectures") {
            let want = match family {
                Family::Llama => "LlamaForCausalLM",
                Family::Qwen2 => "Qwen2ForCausalLM",
            };
            let ok = archs.as_array().is_some_and(|a| a.iter().all(|x| x.as_str() == Some(want)));
            if !ok {
                return Err(unsupported(
                    "architectures",
                    archs,
                    "[\"LlamaForCausalLM\"] for llama, [\"Qwen2ForCausalLM\"] for qwen2",
                ));
            }
        }
        if let Some(act) = f.text("hidden_act")? {
            if act != "silu" {
                return Err(unsupported("hidden_act", act, "silu"));
            }
        }
        if f.flag("mlp_bias")? == Some(true) {
            return Err(unsupported("mlp_bias", true, "false"));
        }
        if f.flag("attention_bias")? == Some(true) {
            return Err(unsupported("attention_bias", true, "false"));
        }
        if let Some(tp) = f.get("pretraining_tp") {
            if tp.as_u64() != Some(1) {
                return Err(unsupported("pretraining_tp", tp, "1"));
            }
        }

        let hidden_size = need(f.uint("hidden_size")?, "hidden_size")?;
        let num_attention_heads = need(f.uint("num_attention_heads")?, "num_attention_heads")?;
        let num_hidden_layers = need(f.uint("num_hidden_layers")?, "num_hidden_layers")?;
        let num_key_value_heads = match f.uint("num_key_value_heads")? {
            Some(n) => n,
            // `Qwen2Config`'s default is 32 (only a `null` means "as many as query heads").
            None if family == Family::Qwen2 && !map.contains_key("num_key_value_heads") => 32,
            None => num_attention_heads,
        };
        let max_position_embeddings = f.uint("max_position_embeddings")?.unwrap_or(match family {
            Family::Llama => 2048,
            Family::Qwen2 => 32_768,
        });

        if family == Family::Qwen2 {
            // transformers drops `sliding_window` where `use_sliding_window` is off; it must
            // still be a number or null.
            f.uint("sliding_window")?;
            f.uint("max_window_layers")?;
            if f.flag("use_sliding_window")? == Some(true) {
                return Err(unsupported(
                    "use_sliding_window",
                    true,
                    "false (sliding-window attention is not implemented)",
                ));
            }
            if let Some(types) = f.get("layer_types") {
                let Some(types) = types.as_array() else {
                    return Err(Error::Config(format!("`layer_types` must be a list of strings, not {types}")));
                };
                if types.len() != num_hidden_layers {
                    return Err(unsupported(
                        "layer_types",
                        format!("{} entries for {num_hidden_layers} layers", types.len()),
                        "one entry per layer (num_hidden_layers)",
                    ));
                }
                if let Some(t) = types.iter().find(|t| t.as_str() != Some("full_attention")) {
                    return Err(unsupported(
                        "layer_types",
                        t,
                        "\"full_attention\" for every layer (with sliding-window attention off, transformers \
                         cannot run a \"sliding_attention\" layer either)",
                    ));
                }
            }
        }

        let (rope_theta, rope_scaling) = rope(&f, max_position_embeddings)?;
        let torch_dtype = match (f.text("dtype")?, f.text("torch_dtype")?) {
            (Some(a), Some(b)) if a != b => return Err(conflict("dtype", a, "torch_dtype", b)),
            (Some(a), _) => Some(dtype(a, "dtype")?),
            (None, Some(b)) => Some(dtype(b, "torch_dtype")?),
            (None, None) => None,
        };
        // `LlamaConfig`'s token defaults are 1 and 2; `Qwen2Config` has none. A `null` is none.
        let (bos_default, eos_default) = match family {
            Family::Llama => (Some(1), vec![2]),
            Family::Qwen2 => (None, Vec::new()),
        };
        let bos_token_id = match map.get("bos_token_id") {
            None => bos_default,
            Some(v) => token_ids(Some(v), "bos_token_id")?.first().copied(),
        };
        let eos_token_ids = match map.get("eos_token_id") {
            None => eos_default,
            Some(v) => token_ids(Some(v), "eos_token_id")?,
        };
        let cfg = Config {
            family,
            hidden_size,
            intermediate_size: need(f.uint("intermediate_size")?, "intermediate_size")?,
            num_hidden_layers,
            num_attention_heads,
            num_key_value_heads,
            head_dim: f.uint("head_dim")?.unwrap_or(hidden_size / num_attention_heads.max(1)),
            vocab_size: need(f.uint("vocab_size")?, "vocab_size")?,
            rms_norm_eps: need(f.num("rms_norm_eps")?, "rms_norm_eps")?,
            rope_theta,
            rope_scaling,
            max_position_embeddings,
            tie_word_embeddings: f.flag("tie_word_embeddings")?.unwrap_or(false),
            qkv_bias: family == Family::Qwen2,
            torch_dtype,
            bos_token_id,
            eos_token_ids,
        };
        cfg.validate()?;
        Ok(cfg)
    }

    /// Reads and parses `path`.
    ///
    /// # Errors
    /// [`Error::Io`]; those of [`from_json`](Self::from_json).
    pub fn from_file(path: impl AsRef<std::path::Path>) -> Result<Self> {
        let p = path.as_ref();
        let text = std::fs::read_to_string(p).map_err(|source| Error::Io { path: p.display().to_string(), source })?;
        Self::from_json(&text)
    }

    /// Checks that the sizes fit together and fit the kernels.
    ///
    /// # Errors
    /// [`Error::UnsupportedConfig`] naming the first field that does not.
    pub fn validate(&self) -> Result<()> {
        let pos =
            |field: &'static str, v: usize| if v == 0 { Err(unsupported(field, v, "at least 1")) } else { Ok(()) };
        pos("hidden_size", self.hidden_size)?;
        pos("intermediate_size", self.intermediate_size)?;
        pos("num_hidden_layers", self.num_hidden_layers)?;
        pos("num_attention_heads", self.num_attention_heads)?;
        pos("num_key_value_heads", self.num_key_value_heads)?;
        pos("vocab_size", self.vocab_size)?;
        if !self.num_attention_heads.is_multiple_of(self.num_key_value_heads)
            || self.num_attention_heads / self.num_key_value_heads > 16
        {
            return Err(unsupported(
                "num_key_value_heads",
                self.num_key_value_heads,
                "a divisor of num_attention_heads, at most 16 query heads per key/value head",
            ));
        }
        if self.head_dim == 0 || !self.head_dim.is_multiple_of(8) || self.head_dim > 256 {
            return Err(unsupported("head_dim", self.head_dim, "a multiple of 8 up to 256"));
        }
        if !(self.rms_norm_eps.is_finite() && self.rms_norm_eps > 0.0) {
            return Err(unsupported("rms_norm_eps", self.rms_norm_eps, "a finite number above 0"));
        }
        if !(self.rope_theta.is_finite() && self.rope_theta > 1.0) {
            return Err(unsupported("rope_theta", self.rope_theta, "a finite number above 1"));
        }
        if self.vocab_size > 1 << 30 {
            return Err(unsupported("vocab_size", self.vocab_size, "below 2^30"));
        }
        if self.num_hidden_layers > Self::MAX_LAYERS {
            return Err(unsupported("num_hidden_layers", self.num_hidden_layers, "at most 4,096"));
        }
        if self.max_position_embeddings == 0 || self.max_position_embeddings > i32::MAX as usize {
            return Err(unsupported("max_position_embeddings", self.max_position_embeddings, "from 1 to 2^31 - 1"));
        }
        if let Some(s) = &self.rope_scaling {
            if s.validate().is_err() {
                return Err(unsupported("rope_scaling", format!("{s:?}"), Llama3Scaling::EXPECTED));
            }
        }
        // Every product's width within the kernels' 32-bit sizes, and the weights within
        // what a machine can address: checked before anything is allocated.
        let limit = i32::MAX as usize;
        let nq_d = self.num_attention_heads.checked_mul(self.head_dim);
        let qkv = self.num_key_value_heads.checked_mul(2).and_then(|k| k.checked_mul(self.head_dim)).zip(nq_d);
        for (field, value, width) in [
            ("hidden_size", self.hidden_size, Some(self.hidden_size)),
            ("intermediate_size", self.intermediate_size, self.intermediate_size.checked_mul(2)),
            ("num_attention_heads", self.num_attention_heads, nq_d),
            ("num_key_value_heads", self.num_key_value_heads, qkv.and_then(|(kv, q)| kv.checked_add(q))),
        ] {
            if width.is_none_or(|w| w > limit) {
                return Err(unsupported(field, value, "sizes whose projections are below 2^31 wide"));
            }
        }
        if self.parameters().is_none_or(|p| p > isize::MAX as usize / 4) {
            return Err(unsupported(
                "hidden_size",
                self.hidden_size,
                "a model whose weights this machine can address (the parameter count overflows)",
            ));
        }
        Ok(())
    }

    /// The most decoder layers [`validate`](Self::validate) accepts.
    pub const MAX_LAYERS: usize = 4096;

    /// The weights' element count (embedding, LM head unless tied, layers, norm), or `None`
    /// where it overflows.
    pub(crate) fn parameters(&self) -> Option<usize> {
        let h = self.hidden_size;
        let d = self.head_dim;
        let qkv = self.num_attention_heads.checked_add(self.num_key_value_heads.checked_mul(2)?)?.checked_mul(d)?;
        let o = self.num_attention_heads.checked_mul(d)?;
        let layer = qkv
            .checked_add(o)?
            .checked_add(self.intermediate_size.checked_mul(3)?)?
            .checked_mul(h)?
            .checked_add(h.checked_mul(2)?)?
            .checked_add(qkv)?;
        let embed = self.vocab_size.checked_mul(h)?.checked_mul(if self.tie_word_embeddings { 1 } else { 2 })?;
        layer.checked_mul(self.num_hidden_layers)?.checked_add(embed)?.checked_add(h)
    }

    /// Llama-3.2-1B's config (hidden 2048, 16 layers, 32/8 heads, vocabulary 128,256, tied
    /// embeddings, Llama 3 rope scaling), in bf16.
    pub fn llama_3_2_1b() -> Self {
        Config {
            family: Family::Llama,
            hidden_size: 2048,
            intermediate_size: 8192,
            num_hidden_layers: 16,
            num_attention_heads: 32,
            num_key_value_heads: 8,
            head_dim: 64,
            vocab_size: 128_256,
            rms_norm_eps: 1e-5,
            rope_theta: 500_000.0,
            rope_scaling: Some(Llama3Scaling {
                factor: 32.0,
                low_freq_factor: 1.0,
                high_freq_factor: 4.0,
                original_max_position_embeddings: 8192,
            }),
            max_position_embeddings: 131_072,
            tie_word_embeddings: true,
            qkv_bias: false,
            torch_dtype: Some(DType::BF16),
            bos_token_id: Some(128_000),
            eos_token_ids: vec![128_001, 128_008, 128_009],
        }
    }

    /// Llama-3.1-8B's config (hidden 4096, 32 layers, 32/8 heads of 128, vocabulary 128,256,
    /// untied embeddings, Llama 3 rope scaling), in bf16: the common shape with heads of 128
    /// (the `attention_d128` kernels), for benchmarks with random weights.
    pub fn llama_3_1_8b() -> Self {
        Config {
            hidden_size: 4096,
            intermediate_size: 14_336,
            num_hidden_layers: 32,
            head_dim: 128,
            rope_scaling: Some(Llama3Scaling {
                factor: 8.0,
                low_freq_factor: 1.0,
                high_freq_factor: 4.0,
                original_max_position_embeddings: 8192,
            }),
            tie_word_embeddings: false,
            ..Self::llama_3_2_1b()
        }
    }

    /// Qwen2.5-0.5B's config (hidden 896, 24 layers, 14/2 heads, q/k/v biases, rope theta
    /// 10^6, tied embeddings), in bf16.
    pub fn qwen2_5_0_5b() -> Self {
        Config {
            family: Family::Qwen2,
            hidden_size: 896,
            intermediate_size: 4864,
            num_hidden_layers: 24,
            num_attention_heads: 14,
            num_key_value_heads: 2,
            head_dim: 64,
            vocab_size: 151_936,
            rms_norm_eps: 1e-6,
            rope_theta: 1_000_000.0,
            rope_scaling: None,
            max_position_embeddings: 32_768,
            tie_word_embeddings: true,
            qkv_bias: true,
            torch_dtype: Some(DType::BF16),
            bos_token_id: None,
            eos_token_ids: vec![151_643, 151_645],
        }
    }

    /// A config by name: `llama-3.2-1b`, `llama-3.1-8b`, `qwen2.5-0.5b`, or `tiny-llama` /
    /// `tiny-qwen2` (2 layers, hidden 64: for tests on the CPU).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another name, listing these.
    pub fn named(name: &str) -> Result<Self> {
        Ok(match name {
            "llama-3.2-1b" => Self::llama_3_2_1b(),
            "llama-3.1-8b" => Self::llama_3_1_8b(),
            "qwen2.5-0.5b" => Self::qwen2_5_0_5b(),
            "tiny-llama" => Self::tiny(Family::Llama),
            "tiny-qwen2" => Self::tiny(Family::Qwen2),
            other => {
                return Err(Error::invalid(
                    "config name",
                    other,
                    "llama-3.2-1b, llama-3.1-8b, qwen2.5-0.5b, tiny-llama or tiny-qwen2",
                ))
            }
        })
    }

    /// A small config of the family, for tests: 2 layers, hidden 64, 4/2 heads of 16,
    /// vocabulary 97.
    pub fn tiny(family: Family) -> Self {
        let base = match family {
            Family::Llama => Self::llama_3_2_1b(),
            Family::Qwen2 => Self::qwen2_5_0_5b(),
        };
        Config {
            hidden_size: 64,
            intermediate_size: 96,
            num_hidden_layers: 2,
            num_attention_heads: 4,
            num_key_value_heads: 2,
            head_dim: 16,
            vocab_size: 97,
            bos_token_id: Some(1),
            eos_token_ids: vec![2],
            ..base
        }
    }

    /// Query heads times head size: the width of the attention output.
    pub fn q_width(&self) -> usize {
        self.num_attention_heads * self.head_dim
    }
}
