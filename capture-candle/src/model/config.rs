//! Model configs, read from a Hugging Face `config.json`.

use candle_core::DType;
use serde::Deserialize;

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
    /// `num_key_value_heads`.
    pub num_key_value_heads: usize,
    /// `head_dim` (default `hidden_size / num_attention_heads`).
    pub head_dim: usize,
    /// `vocab_size`.
    pub vocab_size: usize,
    /// `rms_norm_eps`.
    pub rms_norm_eps: f64,
    /// `rope_theta`.
    pub rope_theta: f64,
    /// `rope_scaling` of type `llama3`, if any.
    pub rope_scaling: Option<Llama3Scaling>,
    /// `max_position_embeddings`.
    pub max_position_embeddings: usize,
    /// `tie_word_embeddings`: the LM head is the embedding matrix.
    pub tie_word_embeddings: bool,
    /// Biases on the q, k and v projections (Qwen2).
    pub qkv_bias: bool,
    /// `torch_dtype`, if given: the dtype of the checkpoint's tensors.
    pub torch_dtype: Option<DType>,
    /// `bos_token_id`.
    pub bos_token_id: Option<u32>,
    /// `eos_token_id` (one or several).
    pub eos_token_ids: Vec<u32>,
}

#[derive(Deserialize)]
struct Raw {
    model_type: Option<String>,
    hidden_size: Option<usize>,
    intermediate_size: Option<usize>,
    num_hidden_layers: Option<usize>,
    num_attention_heads: Option<usize>,
    num_key_value_heads: Option<usize>,
    head_dim: Option<usize>,
    vocab_size: Option<usize>,
    rms_norm_eps: Option<f64>,
    rope_theta: Option<f64>,
    rope_scaling: Option<serde_json::Value>,
    max_position_embeddings: Option<usize>,
    tie_word_embeddings: Option<bool>,
    hidden_act: Option<String>,
    attention_bias: Option<bool>,
    mlp_bias: Option<bool>,
    use_sliding_window: Option<bool>,
    torch_dtype: Option<String>,
    bos_token_id: Option<serde_json::Value>,
    eos_token_id: Option<serde_json::Value>,
}

fn need<T>(v: Option<T>, field: &str) -> Result<T> {
    v.ok_or_else(|| Error::Config(format!("the field `{field}` is missing")))
}

fn unsupported(field: &'static str, value: impl std::fmt::Display, supported: &'static str) -> Error {
    Error::UnsupportedConfig { field, value: value.to_string(), supported }
}

fn token_ids(v: &Option<serde_json::Value>, field: &str) -> Result<Vec<u32>> {
    let bad = || Error::Config(format!("`{field}` must be a token id or a list of them"));
    match v {
        None | Some(serde_json::Value::Null) => Ok(Vec::new()),
        Some(serde_json::Value::Number(n)) => {
            Ok(vec![n.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(bad)?])
        }
        Some(serde_json::Value::Array(a)) => {
            a.iter().map(|x| x.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(bad)).collect()
        }
        Some(_) => Err(bad()),
    }
}

impl Config {
    /// Parses a `config.json`.
    ///
    /// # Errors
    /// [`Error::Config`] for text that is not such a config or lacks a field;
    /// [`Error::UnsupportedConfig`] for a `model_type`, `hidden_act`, `rope_scaling` type or
    /// option these models do not implement, naming the field.
    pub fn from_json(text: &str) -> Result<Self> {
        let r: Raw = serde_json::from_str(text).map_err(|e| Error::Config(e.to_string()))?;
        let family = match r.model_type.as_deref() {
            Some("llama") => Family::Llama,
            Some("qwen2") => Family::Qwen2,
            Some(other) => return Err(unsupported("model_type", other, "llama, qwen2")),
            None => return Err(Error::Config("the field `model_type` is missing".into())),
        };
        if let Some(act) = r.hidden_act.as_deref() {
            if act != "silu" {
                return Err(unsupported("hidden_act", act, "silu"));
            }
        }
        if r.mlp_bias == Some(true) {
            return Err(unsupported("mlp_bias", true, "false"));
        }
        if family == Family::Llama && r.attention_bias == Some(true) {
            return Err(unsupported("attention_bias", true, "false"));
        }
        if r.use_sliding_window == Some(true) {
            return Err(unsupported("use_sliding_window", true, "false"));
        }
        let rope_scaling = match &r.rope_scaling {
            None | Some(serde_json::Value::Null) => None,
            Some(v) => {
                let kind = v.get("rope_type").or_else(|| v.get("type")).and_then(|t| t.as_str()).unwrap_or("");
                if kind != "llama3" {
                    return Err(unsupported("rope_scaling.rope_type", kind, "llama3 (or no rope_scaling)"));
                }
                let num = |k: &str| {
                    v.get(k)
                        .and_then(|x| x.as_f64())
                        .ok_or_else(|| Error::Config(format!("`rope_scaling.{k}` is missing")))
                };
                let s = Llama3Scaling {
                    factor: num("factor")?,
                    low_freq_factor: num("low_freq_factor")?,
                    high_freq_factor: num("high_freq_factor")?,
                    original_max_position_embeddings: num("original_max_position_embeddings")? as usize,
                };
                if !(s.factor >= 1.0 && s.high_freq_factor > s.low_freq_factor && s.low_freq_factor > 0.0) {
                    return Err(unsupported(
                        "rope_scaling",
                        format!("{s:?}"),
                        "factor >= 1 and high_freq_factor > low_freq_factor > 0",
                    ));
                }
                Some(s)
            }
        };
        let torch_dtype = match r.torch_dtype.as_deref() {
            None => None,
            Some("bfloat16") => Some(DType::BF16),
            Some("float16") => Some(DType::F16),
            Some("float32") => Some(DType::F32),
            Some(other) => return Err(unsupported("torch_dtype", other, "bfloat16, float16, float32")),
        };
        let hidden_size = need(r.hidden_size, "hidden_size")?;
        let num_attention_heads = need(r.num_attention_heads, "num_attention_heads")?;
        let cfg = Config {
            family,
            hidden_size,
            intermediate_size: need(r.intermediate_size, "intermediate_size")?,
            num_hidden_layers: need(r.num_hidden_layers, "num_hidden_layers")?,
            num_attention_heads,
            num_key_value_heads: r.num_key_value_heads.unwrap_or(num_attention_heads),
            head_dim: r.head_dim.unwrap_or(hidden_size / num_attention_heads.max(1)),
            vocab_size: need(r.vocab_size, "vocab_size")?,
            rms_norm_eps: need(r.rms_norm_eps, "rms_norm_eps")?,
            rope_theta: r.rope_theta.unwrap_or(10_000.0),
            rope_scaling,
            max_position_embeddings: r.max_position_embeddings.unwrap_or(4096),
            tie_word_embeddings: r.tie_word_embeddings.unwrap_or(false),
            qkv_bias: family == Family::Qwen2,
            torch_dtype,
            bos_token_id: token_ids(&r.bos_token_id, "bos_token_id")?.first().copied(),
            eos_token_ids: token_ids(&r.eos_token_id, "eos_token_id")?,
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
        Ok(())
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

    /// A config by name: `llama-3.2-1b`, `qwen2.5-0.5b`, or `tiny-llama` / `tiny-qwen2`
    /// (2 layers, hidden 64: for tests on the CPU).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for another name, listing these.
    pub fn named(name: &str) -> Result<Self> {
        Ok(match name {
            "llama-3.2-1b" => Self::llama_3_2_1b(),
            "qwen2.5-0.5b" => Self::qwen2_5_0_5b(),
            "tiny-llama" => Self::tiny(Family::Llama),
            "tiny-qwen2" => Self::tiny(Family::Qwen2),
            other => {
                return Err(Error::invalid(
                    "config name",
                    other,
                    "llama-3.2-1b, qwen2.5-0.5b, tiny-llama or tiny-qwen2",
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
