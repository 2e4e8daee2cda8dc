//! Llama 3.x and Qwen2 decoders written with the capture-ready layers of [`crate::decode`].
//!
//! The code follows candle-transformers' `llama.rs` and `qwen2.rs` (the same config fields,
//! the same weight names) where the layers allow; the table in `docs/models.md` lists each
//! place it differs, and why.

mod config;
mod rounds;
mod state;
mod weights;

use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};

pub use config::{Config, Family};
pub use rounds::PrefillRounds;
pub use state::DecodeState;
use weights::Source;

use crate::decode::gpu::AttInto;
use crate::decode::{self, AttentionKernel, Launch, Prologue, RopeLayout, RopeTable};
use crate::error::{Error, Result};

/// A class of the decode step's kernels, for [`Model::run_part`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Part {
    /// RMSNorm + QKV projection, every layer.
    Qkv,
    /// Bias + RoPE + KV-cache write, every layer (the unfused route's kernel).
    RopeWrite,
    /// Attention, every layer (the unfused route's kernel).
    Attention,
    /// Bias + RoPE + KV-cache write + attention in one kernel, every layer
    /// ([`decode::qkv_attention`]: what the fused step runs).
    RopeAttention,
    /// Output projection + residual add, every layer.
    OProj,
    /// RMSNorm + gate/up projection + SwiGLU, every layer.
    GateUp,
    /// Down projection + residual add, every layer.
    Down,
    /// Final RMSNorm + LM head.
    LmHead,
    /// The logits copy and the sampler.
    Sample,
}

impl Part {
    /// The fused step's parts, in step order. ([`Part::RopeWrite`] and [`Part::Attention`]
    /// are the unfused route's two kernels in place of [`Part::RopeAttention`].)
    pub const ALL: [Part; 7] =
        [Part::Qkv, Part::RopeAttention, Part::OProj, Part::GateUp, Part::Down, Part::LmHead, Part::Sample];
}

/// One decoder layer's weights. The q/k/v projections are one matrix (and the gate and up
/// projections another), concatenated when the checkpoint is loaded: one matrix-vector
/// product instead of three (two) per token.
#[derive(Debug, crate::Resources)]
struct Layer {
    input_norm: Tensor,
    /// `[(q_heads + 2 kv_heads) * head_dim, hidden]`.
    qkv: Tensor,
    qkv_bias: Option<Tensor>,
    /// `[hidden, q_heads * head_dim]`.
    o: Tensor,
    post_norm: Tensor,
    /// `[2 * intermediate, hidden]`.
    gate_up: Tensor,
    /// `[hidden, intermediate]`.
    down: Tensor,
}

/// Which kernels a step runs (`Model::forward_with`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// The fused kernels; cuBLAS products past `decode::matvec_rows` rows.
    Fused,
    /// The fused kernels with cuBLAS products at every batch (the tensor-core products'
    /// baseline, 2 to 8 rows).
    CublasProducts,
    /// candle's ops.
    Unfused,
}

/// The fused step's intermediates under programmatic dependent launch, allocated before its
/// first kernel and reused by every layer. In a capture they are graph memory like any
/// intermediate, but their allocation nodes come before the step's kernels (and their free
/// nodes after them), so that no allocation or free node sits between two kernels: a
/// programmatic edge joins two kernel nodes only. Each kernel writes all of its output before
/// the next reads it (the `out` of `gemv` and `AttInto`).
struct Workspace {
    qkv: Tensor,
    scratch: Tensor,
    att: Tensor,
    /// The residual stream's two buffers: the output projection writes the first, the down
    /// projection the second.
    res: [Tensor; 2],
    gu: Tensor,
    /// The LM head's output.
    logits: Tensor,
}

impl Workspace {
    /// For `n` token rows of `state`'s rows (the LM head takes each row's last).
    fn new(m: &Model, state: &DecodeState, n: usize) -> Result<Self> {
        let cfg = &m.cfg;
        let (dev, dt) = (&m.device, m.dtype);
        let new = |cols: usize| crate::raw::uninit((n, cols), dt, dev);
        let qkv_width = (cfg.num_attention_heads + 2 * cfg.num_key_value_heads) * cfg.head_dim;
        let heads = (n, cfg.num_attention_heads, 1, cfg.head_dim);
        let scratch_len =
            decode::gpu::attention_scratch_len(heads, (cfg.num_key_value_heads, state.max_seq())).unwrap_or(0).max(1);
        Ok(Self {
            qkv: new(qkv_width)?,
            scratch: crate::raw::uninit(scratch_len, DType::F32, dev)?,
            att: new(cfg.q_width())?,
            res: [new(cfg.hidden_size)?, new(cfg.hidden_size)?],
            gu: new(cfg.intermediate_size)?,
            logits: crate::raw::uninit((state.batch(), cfg.vocab_size), dt, dev)?,
        })
    }
}

/// A Llama or Qwen2 decoder whose step reads every position from device memory.
#[derive(Debug, crate::Resources)]
pub struct Model {
    cfg: Config,
    dtype: DType,
    device: Device,
    max_seq: usize,
    embed: Tensor,
    layers: Vec<Layer>,
    norm: Tensor,
    lm_head: Tensor,
    rope: RopeTable,
    /// The step's products and attention under programmatic dependent launch (on where the GPU
    /// has it: [`set_programmatic_launch`](Self::set_programmatic_launch)).
    programmatic: bool,
    /// Prefill rounds' attention in the tiled kernels (on by default:
    /// [`set_tiled_attention`](Self::set_tiled_attention)).
    tiled: bool,
    /// How a prefill cuts its prompts into rounds ([`set_prefill_rounds`](Self::set_prefill_rounds)).
    rounds: PrefillRounds,
}

impl Model {
    /// Random weights of `cfg`'s shapes in `dtype`, with a KV cache of `max_seq` positions
    /// per sequence. The same `seed` gives the same weights on the same device.
    ///
    /// # Errors
    /// As [`Config::validate`]; [`Error::InvalidArgument`] for `max_seq` or `dtype`;
    /// [`Error::HostMemory`] on the CPU for weights larger than the memory and swap the process can have;
    /// candle's error if an allocation fails.
    pub fn random(cfg: &Config, dtype: DType, max_seq: usize, device: &Device, seed: u64) -> Result<Self> {
        if let Device::Cuda(_) = device {
            device.set_seed(seed)?;
        }
        Self::build(cfg, dtype, max_seq, device, &Source::Random { seed })
    }

    /// Weights from safetensors files in the Hugging Face layout (memory-mapped), converted
    /// to `dtype`. The files must not change while they are loaded.
    ///
    /// # Errors
    /// [`Error::MissingWeight`], [`Error::WeightShape`] or [`Error::WeightDtype`] naming the
    /// first tensor that does not match `cfg`; [`Error::Io`] for a file that cannot be read;
    /// [`Error::HostMemory`] as [`random`](Self::random).
    pub fn from_safetensors(
        cfg: &Config,
        files: &[PathBuf],
        dtype: DType,
        max_seq: usize,
        device: &Device,
    ) -> Result<Self> {
        let src = Source::files(files, cfg.torch_dtype)?;
        Self::build(cfg, dtype, max_seq, device, &src)
    }

    /// `config.json` and every `*.safetensors` file of a Hugging Face model directory.
    ///
    /// # Errors
    /// As [`Config::from_file`] and [`from_safetensors`](Self::from_safetensors).
    pub fn from_dir(dir: impl AsRef<Path>, dtype: DType, max_seq: usize, device: &Device) -> Result<Self> {
        let dir = dir.as_ref();
        let cfg = Config::from_file(dir.join("config.json"))?;
        let files = Source::dir_files(dir)?;
        Self::from_safetensors(&cfg, &files, dtype, max_seq, device)
    }

    fn build(cfg: &Config, dtype: DType, max_seq: usize, device: &Device, src: &Source) -> Result<Self> {
        cfg.validate()?;
        if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
            return Err(Error::invalid("model dtype", format!("{dtype:?}"), "f32, f16 or bf16"));
        }
        // validate checked that the count does not overflow.
        let bytes = (cfg.parameters().unwrap_or(usize::MAX) as u64).saturating_mul(dtype.size_in_bytes() as u64);
        crate::decode::host::fits_host("the model's weights", bytes, device)?;
        if max_seq == 0 || max_seq > cfg.max_position_embeddings.max(1) {
            return Err(Error::invalid(
                "max_seq",
                max_seq,
                format!("from 1 to the config's max_position_embeddings ({})", cfg.max_position_embeddings),
            ));
        }
        let (h, d, nq, nk, inter, v) = (
            cfg.hidden_size,
            cfg.head_dim,
            cfg.num_attention_heads,
            cfg.num_key_value_heads,
            cfg.intermediate_size,
            cfg.vocab_size,
        );
        let lin = |name: &str, out: usize, inp: usize| {
            src.get(name, &[out, inp], dtype, device, 1.0 / (inp as f64).sqrt(), 0.0)
        };
        let norm = |name: &str| src.get(name, &[h], dtype, device, 0.05, 1.0);
        let embed = src.get("model.embed_tokens.weight", &[v, h], dtype, device, 2.0 / (h as f64).sqrt(), 0.0)?;
        let mut layers = Vec::with_capacity(cfg.num_hidden_layers);
        for i in 0..cfg.num_hidden_layers {
            let p = format!("model.layers.{i}");
            let q = lin(&format!("{p}.self_attn.q_proj.weight"), nq * d, h)?;
            let k = lin(&format!("{p}.self_attn.k_proj.weight"), nk * d, h)?;
            let vv = lin(&format!("{p}.self_attn.v_proj.weight"), nk * d, h)?;
            let qkv_bias = if cfg.qkv_bias {
                let b =
                    |n: &str, len: usize| src.get(&format!("{p}.self_attn.{n}.bias"), &[len], dtype, device, 0.02, 0.0);
                Some(Tensor::cat(&[b("q_proj", nq * d)?, b("k_proj", nk * d)?, b("v_proj", nk * d)?], 0)?)
            } else {
                None
            };
            let gate = lin(&format!("{p}.mlp.gate_proj.weight"), inter, h)?;
            let up = lin(&format!("{p}.mlp.up_proj.weight"), inter, h)?;
            layers.push(Layer {
                input_norm: norm(&format!("{p}.input_layernorm.weight"))?,
                qkv: Tensor::cat(&[q, k, vv], 0)?,
                qkv_bias,
                o: lin(&format!("{p}.self_attn.o_proj.weight"), h, nq * d)?,
                post_norm: norm(&format!("{p}.post_attention_layernorm.weight"))?,
                gate_up: Tensor::cat(&[gate, up], 0)?,
                down: lin(&format!("{p}.mlp.down_proj.weight"), h, inter)?,
            });
        }
        let norm_w = norm("model.norm.weight")?;
        let lm_head = if cfg.tie_word_embeddings || !src.has("lm_head.weight") {
            if !cfg.tie_word_embeddings {
                return Err(Error::MissingWeight { name: "lm_head.weight".into() });
            }
            embed.clone()
        } else {
            lin("lm_head.weight", v, h)?
        };
        let layout = RopeLayout::Halves;
        let rope = RopeTable::new(d, max_seq, cfg.rope_theta, cfg.rope_scaling.as_ref(), layout, device)?;
        Ok(Self {
            cfg: cfg.clone(),
            dtype,
            device: device.clone(),
            max_seq,
            embed,
            layers,
            norm: norm_w,
            lm_head,
            rope,
            // Plain launches where the compute capability cannot be read: the overlap is an
            // optimisation, and `set_programmatic_launch` reports such an error.
            programmatic: match device {
                Device::Cuda(d) => crate::raw::programmatic_launch_supported(d).unwrap_or(false),
                _ => false,
            },
            tiled: true,
            rounds: PrefillRounds::default(),
        })
    }

    /// The config.
    pub fn config(&self) -> &Config {
        &self.cfg
    }
    /// The weights' dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The device.
    pub fn device(&self) -> &Device {
        &self.device
    }
    /// KV-cache positions per sequence.
    pub fn max_seq(&self) -> usize {
        self.max_seq
    }
    /// Bytes of weights (the embedding counted once when tied).
    pub fn weight_bytes(&self) -> usize {
        let mut n = self.embed.elem_count() + self.norm.elem_count();
        if !self.cfg.tie_word_embeddings {
            n += self.lm_head.elem_count();
        }
        for l in &self.layers {
            n += l.input_norm.elem_count() + l.qkv.elem_count() + l.o.elem_count() + l.post_norm.elem_count();
            n += l.gate_up.elem_count() + l.down.elem_count() + l.qkv_bias.as_ref().map_or(0, |b| b.elem_count());
        }
        n * self.dtype.size_in_bytes()
    }

    /// Whether the fused step's products (the projections and the LM head, at up to
    /// [`decode::matvec_rows`] rows a step) and its attention use programmatic dependent
    /// launch. It is on by default where the GPU has it (compute capability 9.0 and later);
    /// `on` false launches them as before. Returns whether it is in effect: false on the CPU
    /// and on older GPUs, which launch as before whatever `on` says.
    ///
    /// Under it each of those kernels may start while the kernel before it drains: its blocks
    /// take the multiprocessors' free slots, issue their first loads of what no other kernel
    /// of the step writes (the weights; attention's cached keys and values), and wait for the
    /// kernel before (`griddepcontrol.wait`) before they read anything it wrote or write
    /// anything. Results are those of the plain launch, bit for bit; only the overlap changes.
    /// It applies to the steps captured or run after the call, and to prefill chunks of at
    /// most `matvec_rows` tokens (a short prompt, a long one's last chunk). The step then
    /// allocates its layers' intermediates before its first kernel and reuses them in every
    /// layer, so that in a capture no allocation or free node sits between two of its
    /// kernels (a programmatic edge joins two kernel nodes only; measured, an allocation node
    /// between two kernels leaves their edge a full one). On an H100, Llama-3.2-1B's captured
    /// step at batch 1, position 64 took 1.058 ms a token instead of 1.148, and at batch 8,
    /// position 2,000, 1.330 instead of 1.461 (`docs/benchmarks-llama.md`, run 44).
    ///
    /// Turn it off to compare the two launches (`llama_bench --paths fused,plain-launch`).
    ///
    /// # Errors
    /// candle's error if the device's compute capability cannot be read.
    pub fn set_programmatic_launch(&mut self, on: bool) -> Result<bool> {
        self.programmatic = on
            && match &self.device {
                Device::Cuda(d) => crate::raw::programmatic_launch_supported(d)?,
                _ => false,
            };
        Ok(self.programmatic)
    }

    /// Whether the attention of a prefill's rounds runs in the tiled kernels on CUDA, in bf16
    /// or f16 with heads of 64 or 128: on by default. A round takes them with 16 or more tokens
    /// a row and either 2,048 or more query rows in all ([`decode::attention`]'s rule) or, at
    /// heads of 64, no row past 1,024 positions after it (measured faster there whatever the
    /// round's size); the other rounds take the per-token kernel. Each block of them reads a
    /// key head's cached keys and values once for 64 query rows, on tensor cores; off, each
    /// token's heads read them again in the per-token kernel the decode steps use. Results agree within the element type's rounding (so do
    /// the KV cache entries the prefill writes from them); the decode steps' kernels do not
    /// change. Returns whether it is in effect: false on the CPU and for other types or head
    /// sizes, which take the per-token path whatever `on` says. A state of more than 65,535
    /// rows × key/value heads also takes the per-token kernel, though this returns true.
    ///
    /// Turn it off to compare the two (`llama_bench --ragged`).
    pub fn set_tiled_attention(&mut self, on: bool) -> bool {
        self.tiled = on;
        self.tiled_attention()
    }

    /// Whether the tiled kernels are in effect for a prefill's attention
    /// ([`set_tiled_attention`](Self::set_tiled_attention)): whether a round may take them.
    pub fn tiled_attention(&self) -> bool {
        // `Config::validate` made the key heads at least 1 and a divisor of the query heads.
        let (heads, kv) = (self.cfg.num_attention_heads, self.cfg.num_key_value_heads);
        // Whether the kernels take this model's shapes at a round's smallest size for them (16
        // tokens, one row); which rounds take them is the rule's (`forward_with`).
        self.tiled
            && matches!(self.device, Device::Cuda(_))
            && crate::decode::ops::tiled_fits(heads / kv, self.cfg.head_dim, self.dtype, 16, kv)
    }

    /// How [`prefill_rows`](Self::prefill_rows) cuts its prompts into rounds from now on
    /// ([`PrefillRounds`]: at most 2,048 token rows a round and 2,048 tokens a row by default).
    /// Fewer token rows a round bound the prefill's memory tighter and read the weights more
    /// times. The rounds' sizes change how the products are cut, so the first tokens' logits
    /// agree within the element type's rounding across settings, not bit for bit.
    pub fn set_prefill_rounds(&mut self, rounds: PrefillRounds) {
        self.rounds = rounds;
    }

    /// How a prefill cuts its prompts into rounds ([`set_prefill_rounds`](Self::set_prefill_rounds)).
    pub fn prefill_rounds(&self) -> PrefillRounds {
        self.rounds
    }

    /// Whether programmatic dependent launch is in effect for the fused step's products and
    /// attention (the default where the GPU has it:
    /// [`set_programmatic_launch`](Self::set_programmatic_launch)). Steps of more rows than
    /// [`decode::matvec_rows`] take cuBLAS's products and launch plainly either way.
    pub fn programmatic_launch(&self) -> bool {
        self.programmatic
    }

    /// A decode state for `batch` sequences: KV caches, positions, sampler, all zero and
    /// inactive.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero batch or one past [`Sampler::MAX_BATCH`]
    /// (checked before anything is allocated); [`Error::HostMemory`] on the CPU for caches
    /// and logits larger than the process can have; candle's error if allocation fails.
    ///
    /// [`Sampler::MAX_BATCH`]: crate::decode::Sampler::MAX_BATCH
    pub fn new_state(&self, batch: usize) -> Result<DecodeState> {
        DecodeState::new(self, batch)
    }

    /// One decode step for every row of `state`: reads each row's token and position from
    /// the device, writes its KV cache at that position, draws the next token into
    /// `state.tokens()`, advances the position, and copies the logits into
    /// `state.logits()`. Capturable as it is: nothing here reads a host value that changes
    /// between steps.
    ///
    /// # Errors
    /// candle's, or [`Error::BadOperands`] if `state` was made for another model.
    pub fn step(&self, state: &DecodeState) -> Result<()> {
        self.forward(state.tokens(), state, 1, usize::MAX, true)
    }

    /// The same step with candle's unfused ops where the fused kernels stand (the residual
    /// add and RMSNorm apart, SwiGLU as silu and mul of two views): the "before fusion"
    /// baseline of the benchmark. Same results up to rounding.
    ///
    /// # Errors
    /// As [`step`](Self::step).
    pub fn step_unfused(&self, state: &DecodeState) -> Result<()> {
        self.forward_with(state.tokens(), state, 1, usize::MAX, true, Route::Unfused)
    }

    /// The fused step as it ran from 3 rows on before the tensor-core products: cuBLAS
    /// products, with the residual add fused into the next RMSNorm and SwiGLU in one kernel
    /// (nine kernels a layer, RoPE and the cache write inside attention), at every batch. The benchmark's baseline for batches of 3 to 8
    /// rows; same results up to rounding.
    ///
    /// # Errors
    /// As [`step`](Self::step).
    #[doc(hidden)]
    pub fn step_cublas(&self, state: &DecodeState) -> Result<()> {
        self.forward_with(state.tokens(), state, 1, usize::MAX, true, Route::CublasProducts)
    }

    /// Runs one class of the decode step's operations alone, on scratch inputs of the step's
    /// shapes for `state`'s batch at its positions: the pieces a breakdown times as
    /// sub-graphs.
    ///
    /// # Errors
    /// candle's.
    pub fn run_part(&self, state: &DecodeState, part: Part) -> Result<()> {
        let cfg = &self.cfg;
        let b = state.batch();
        let h = Tensor::zeros((b, cfg.hidden_size), self.dtype, &self.device)?;
        let eps = cfg.rms_norm_eps;
        let zeros = |c: usize| Tensor::zeros((b, c), self.dtype, &self.device);
        match part {
            Part::Qkv => {
                for l in &self.layers {
                    decode::matvec(&h, &l.qkv, Prologue::RmsNorm(&l.input_norm, eps), None)?;
                }
            }
            Part::OProj => {
                let att = zeros(cfg.q_width())?;
                for l in &self.layers {
                    decode::matvec(&att, &l.o, Prologue::None, Some(&h))?;
                }
            }
            Part::GateUp => {
                for l in &self.layers {
                    decode::matvec_swiglu(&h, &l.gate_up, Prologue::RmsNorm(&l.post_norm, eps))?;
                }
            }
            Part::Down => {
                let m = zeros(cfg.intermediate_size)?;
                for l in &self.layers {
                    decode::matvec(&m, &l.down, Prologue::None, Some(&h))?;
                }
            }
            Part::LmHead => {
                decode::matvec(&h, &self.lm_head, Prologue::RmsNorm(&self.norm, eps), None)?;
            }
            Part::Attention => {
                let q = Tensor::zeros((b, cfg.num_attention_heads, 1, cfg.head_dim), self.dtype, &self.device)?;
                for c in state.caches() {
                    decode::attention(&q, c, state.pos(), 0.125)?;
                }
            }
            Part::RopeWrite | Part::RopeAttention => {
                let qkv = Tensor::zeros(
                    (b, (cfg.num_attention_heads + 2 * cfg.num_key_value_heads) * cfg.head_dim),
                    self.dtype,
                    &self.device,
                )?;
                for (c, l) in state.caches().iter().zip(&self.layers) {
                    let (bias, a, heads) = (l.qkv_bias.as_ref(), Some(state.active()), cfg.num_attention_heads);
                    if part == Part::RopeWrite {
                        decode::qkv_rope_write(&qkv, bias, &self.rope, state.pos(), a, c, state.overflow(), heads)?;
                    } else {
                        let scale = 1.0 / (cfg.head_dim as f32).sqrt();
                        decode::qkv_attention(
                            &qkv,
                            bias,
                            &self.rope,
                            state.pos(),
                            a,
                            c,
                            state.overflow(),
                            heads,
                            scale,
                        )?;
                    }
                }
            }
            Part::Sample => {
                let logits = Tensor::zeros((b, cfg.vocab_size), self.dtype, &self.device)?;
                state.keep_logits(&logits)?;
                state.sampler().sample(&logits, state.tokens(), state.pos(), Some(state.active()), 0)?;
            }
        }
        Ok(())
    }

    /// Runs `tokens_per_row` tokens of every row (`tokens`: u32 `[batch * tokens_per_row]`,
    /// row-major) from each row's device position; with `sample`, draws each row's next
    /// token from its last logits and advances its position by `tokens_per_row`.
    pub(crate) fn forward(
        &self,
        tokens: &Tensor,
        state: &DecodeState,
        tokens_per_row: usize,
        keys: usize,
        sample: bool,
    ) -> Result<()> {
        self.forward_with(tokens, state, tokens_per_row, keys, sample, Route::Fused)
    }

    /// `keys`: the most keys a row's attention reads (its prefix and these tokens), where the
    /// caller knows the rows' positions on the host; `usize::MAX` where it does not.
    fn forward_with(
        &self,
        tokens: &Tensor,
        state: &DecodeState,
        tokens_per_row: usize,
        keys: usize,
        sample: bool,
        route: Route,
    ) -> Result<()> {
        let fused = route != Route::Unfused;
        let b = state.batch();
        let cfg = &self.cfg;
        let n = b * tokens_per_row;
        if state.caches().len() != self.layers.len() {
            return Err(Error::operands("Model::step", "the state was made for a model with another number of layers"));
        }
        let eps = cfg.rms_norm_eps;
        let scale = 1.0 / (cfg.head_dim as f32).sqrt();
        // Under programmatic launch the fused matrix-vector route's intermediates, allocated
        // before the step's first kernel (`Workspace`).
        let kernel_rows = decode::matvec_rows(self.dtype);
        let ws = match self.programmatic && route == Route::Fused && n <= kernel_rows {
            true => Some(Workspace::new(self, state, n)?),
            false => None,
        };
        // Programmatic dependent launch, when set, for that route's products and attention.
        let launch = if ws.is_some() { Launch::Programmatic } else { Launch::Plain };
        let x = self.embed.index_select(tokens, 0)?; // [n, hidden]
        let last_rows = |h: Tensor| -> Result<Tensor> {
            if tokens_per_row == 1 {
                return Ok(h);
            }
            Ok(h.reshape((b, tokens_per_row, cfg.hidden_size))?
                .narrow(1, tokens_per_row - 1, 1)?
                .reshape((b, cfg.hidden_size))?)
        };
        // The fused routes form the queries, and write the cache, inside the attention kernel
        // (one token a row); the unfused route keeps the two kernels.
        // The per-token kernel with the tiled ones off; the tiled ones for a round whose rows'
        // prefixes are all short (faster there whatever the round's size); else the rule.
        let (heads, kv) = (cfg.num_attention_heads, cfg.num_key_value_heads);
        let kernel = if !self.tiled {
            AttentionKernel::PerToken
        } else if decode::gpu::attention_tiled_short(cfg.head_dim, keys)
            && decode::ops::tiled_fits(heads / kv, cfg.head_dim, self.dtype, tokens_per_row, b * kv)
        {
            AttentionKernel::Tiled
        } else {
            AttentionKernel::Auto
        };
        let attend_into = |i: usize, l: &Layer, qkv: &Tensor, into: Option<&AttInto<'_>>| -> Result<Tensor> {
            let cache = &state.caches()[i];
            let heads = cfg.num_attention_heads;
            let (bias, pos, active, overflow) =
                (l.qkv_bias.as_ref(), state.pos(), Some(state.active()), state.overflow());
            let out = if fused {
                decode::ops::qkv_attention_into(
                    qkv, bias, &self.rope, pos, active, cache, overflow, heads, scale, into, launch, kernel,
                )?
            } else {
                let q = decode::qkv_rope_write(qkv, bias, &self.rope, pos, active, cache, overflow, heads)?;
                decode::attention_using(&q, cache, pos, scale, kernel)?
            };
            Ok(out.reshape((n, cfg.q_width()))?)
        };
        let attend = |i: usize, l: &Layer, qkv: &Tensor| attend_into(i, l, qkv, None);
        // Whether the LM head computed each row's argmax (the fused kernel path).
        let mut amax = false;
        let logits = if route == Route::CublasProducts || (fused && n > kernel_rows) {
            // Larger batches and prefill: cuBLAS products, with the residual add fused into
            // the next RMSNorm and SwiGLU in one kernel: nine kernels a layer in decode (RoPE
            // and the cache write inside attention), ten in prefill.
            let (mut res, mut h) = decode::add_rms_norm(&x, None, &self.layers[0].input_norm, eps)?;
            for (i, l) in self.layers.iter().enumerate() {
                let att = attend(i, l, &h.matmul(&l.qkv.t()?)?)?;
                let o = att.matmul(&l.o.t()?)?;
                let (r, hh) = decode::add_rms_norm(&res, Some(&o), &l.post_norm, eps)?;
                let m = decode::silu_mul(&hh.matmul(&l.gate_up.t()?)?)?;
                let d = m.matmul(&l.down.t()?)?;
                let next_norm = self.layers.get(i + 1).map_or(&self.norm, |l| &l.input_norm);
                (res, h) = decode::add_rms_norm(&r, Some(&d), next_norm, eps)?;
            }
            if !sample {
                return Ok(());
            }
            last_rows(h)?.matmul(&self.lm_head.t()?)?
        } else if fused {
            // Up to `matvec_rows` rows (decode): five kernels a layer: norm + QKV, RoPE + cache
            // write + attention, output projection + residual, norm + gate/up + SwiGLU, down +
            // residual (tensor-core kernels for 2 to 8 rows of f16 or bf16, else matrix-vector
            // ones for 1 or 2).
            // Programmatic dependent launch, when set, for the products and attention
            // (`launch`), with the layers' intermediates allocated before the first kernel
            // (`Workspace`).
            let mv = |x: &Tensor, w: &Tensor, p: Prologue<'_>, r: Option<&Tensor>, out: Option<&Tensor>| {
                Ok::<_, Error>(decode::ops::matvec_with(x, w, p, r, None, launch, out)?.0)
            };
            // Under it, the embedding's output lives to the end of the step: freed after layer
            // 0's output projection, it would put a free node between two kernels.
            let _x = ws.as_ref().map(|_| x.clone());
            let mut res = x;
            for (i, l) in self.layers.iter().enumerate() {
                let qkv = mv(&res, &l.qkv, Prologue::RmsNorm(&l.input_norm, eps), None, ws.as_ref().map(|w| &w.qkv))?;
                let into = ws.as_ref().map(|w| AttInto { scratch: &w.scratch, out: &w.att });
                let att = attend_into(i, l, &qkv, into.as_ref())?;
                // The residual stream alternates between two buffers: each product reads one
                // and writes the other.
                res = mv(&att, &l.o, Prologue::None, Some(&res), ws.as_ref().map(|w| &w.res[0]))?;
                let post = Prologue::RmsNorm(&l.post_norm, eps);
                let m = decode::ops::matvec_swiglu_with(&res, &l.gate_up, post, launch, ws.as_ref().map(|w| &w.gu))?;
                res = mv(&m, &l.down, Prologue::None, Some(&res), ws.as_ref().map(|w| &w.res[1]))?;
            }
            if !sample {
                return Ok(());
            }
            let head = Prologue::RmsNorm(&self.norm, eps);
            let last = last_rows(res)?;
            let out = ws.as_ref().map(|w| &w.logits);
            let (logits, have) =
                decode::ops::matvec_with(&last, &self.lm_head, head, None, Some(state.argmax_slot()), launch, out)?;
            amax = have;
            logits
        } else {
            // candle's ops: the residual add and RMSNorm apart, SwiGLU as silu and mul of
            // two views, cuBLAS products.
            let mut res = x;
            for (i, l) in self.layers.iter().enumerate() {
                let h = candle_nn::ops::rms_norm(&res, &l.input_norm, eps as f32)?;
                let att = attend(i, l, &h.matmul(&l.qkv.t()?)?)?;
                res = (res + att.matmul(&l.o.t()?)?)?;
                let h = candle_nn::ops::rms_norm(&res, &l.post_norm, eps as f32)?;
                let gu = h.matmul(&l.gate_up.t()?)?;
                let i = cfg.intermediate_size;
                let m = (gu.narrow(1, 0, i)?.silu()? * gu.narrow(1, i, i)?)?;
                res = (res + m.matmul(&l.down.t()?)?)?;
            }
            if !sample {
                return Ok(());
            }
            let h = candle_nn::ops::rms_norm(&last_rows(res)?, &self.norm, eps as f32)?;
            h.matmul(&self.lm_head.t()?)?
        };
        state.keep_logits(&logits)?;
        let slot = amax.then(|| state.argmax_slot());
        state.sampler().sample_with(
            &logits,
            state.tokens(),
            state.pos(),
            Some(state.active()),
            tokens_per_row as u32,
            slot,
        )
    }

    /// Prefills row `row` of `state` with `prompt`: [`prefill_rows`](Self::prefill_rows) on
    /// that row alone. Resets the row, writes its KV cache for positions `0..prompt.len()`,
    /// draws its first generated token into `state.tokens()` and marks it active.
    ///
    /// # Errors
    /// [`Error::PromptTooLong`] for a prompt longer than the cache; [`Error::InvalidArgument`]
    /// for an empty prompt, a row outside the batch, or a token id outside the vocabulary;
    /// [`Error::BadOperands`] for a state made for another model: all before any work.
    pub fn prefill(&self, state: &DecodeState, row: usize, prompt: &[u32]) -> Result<()> {
        self.prefill_rows(&state.rows(row, 1)?, &[prompt])
    }

    /// Prefills rows `0..prompts.len()` of `state`, row `i` with `prompts[i]`, all rows in
    /// the same launches (eagerly). Each of those rows is reset, its KV cache written for
    /// positions `0..len`, its first generated token drawn into `state.tokens()` with its
    /// sampler's parameters, and it is marked active at position `len`. Rows past them are not
    /// touched (a caller decoding a padded batch marks them inactive).
    ///
    /// The prompts but their last tokens go first, in rounds: a round takes the rows from the
    /// first to the last that have tokens left, as many tokens as the shortest of them has
    /// left, within [`prefill_rounds`](Self::prefill_rounds)' bounds (by default at most
    /// 2,048 a row, and 2,048 token rows a round where the span has no more rows than that:
    /// one token a row beyond), and the rows in that span with nothing left sit it
    /// out (inactive: computed, their caches not written). So rows that finish early in the
    /// middle of the span cost compute until the rows around them finish: two long prompts
    /// around many short ones take as many token rows as if all were long. Prompts in order of
    /// length, shortest first (as [`Generator`](crate::generate::Generator) places its
    /// requests), waste none: the rows left are always the last. Then the last
    /// tokens go through one decode step ([`step`](Self::step)) over these rows, which draws
    /// every row's first token: the first token comes from the kernels the later steps take at
    /// this many rows (a padded bucket's graph may take others).
    ///
    /// # Errors
    /// As [`prefill`](Self::prefill) for each prompt (against the state's cache length);
    /// [`Error::InvalidArgument`] for more prompts than rows or none; [`Error::BadOperands`]
    /// for a state made for another model: all before any work. candle's errors after.
    pub fn prefill_rows(&self, state: &DecodeState, prompts: &[&[u32]]) -> Result<()> {
        if prompts.is_empty() || prompts.len() > state.batch() {
            return Err(Error::invalid("prompts", prompts.len(), format!("1 to the state's {} rows", state.batch())));
        }
        let cfg = &self.cfg;
        let fits = state.caches().len() == self.layers.len()
            && state
                .caches()
                .iter()
                .all(|c| c.k().dims()[1] == cfg.num_key_value_heads && c.k().dims()[3] == cfg.head_dim);
        if !fits {
            return Err(Error::operands("Model::prefill_rows", "the state was made for a model of other shapes"));
        }
        let cache = state.max_seq().min(self.max_seq);
        for p in prompts {
            self.check_prompt(p)?;
            if p.len() > cache {
                return Err(Error::PromptTooLong { len: p.len(), max_seq: cache });
            }
        }
        let b = prompts.len();
        let state = state.rows(0, b)?;
        let mut done = vec![0usize; b];
        let left = |row: usize, done: &[usize]| prompts[row].len() - 1 - done[row];
        loop {
            let busy: Vec<usize> = (0..b).filter(|&row| left(row, &done) > 0).collect();
            let (Some(&lo), Some(&hi)) = (busy.first(), busy.last()) else { break };
            let rows = hi - lo + 1;
            let n = self.rounds.tokens(rows, busy.iter().map(|&row| left(row, &done)).min().unwrap_or(1));
            let span = state.rows(lo, rows)?;
            let mut toks = vec![0u32; rows * n];
            let mut pos = vec![0u32; rows];
            let mut active = vec![false; rows];
            for &row in &busy {
                let r = row - lo;
                toks[r * n..(r + 1) * n].copy_from_slice(&prompts[row][done[row]..done[row] + n]);
                (pos[r], active[r]) = (done[row] as u32, true);
            }
            span.set_rows(&pos, &active)?;
            let keys = busy.iter().map(|&row| done[row]).max().unwrap_or(0) + n;
            self.forward(&Tensor::new(toks.as_slice(), &self.device)?, &span, n, keys, false)?;
            for &row in &busy {
                done[row] += n;
            }
        }
        let last: Vec<u32> = prompts.iter().map(|p| p[p.len() - 1]).collect();
        let pos: Vec<u32> = prompts.iter().map(|p| p.len() as u32 - 1).collect();
        state.set_rows(&pos, &vec![true; b])?;
        state.set_tokens(&last)?;
        self.step(&state)
    }

    /// A prompt's checks, before any work.
    fn check_prompt(&self, prompt: &[u32]) -> Result<()> {
        if prompt.is_empty() {
            return Err(Error::invalid("prompt length", 0, "at least 1 token"));
        }
        if prompt.len() > self.max_seq {
            return Err(Error::PromptTooLong { len: prompt.len(), max_seq: self.max_seq });
        }
        if let Some(&t) = prompt.iter().find(|&&t| t as usize >= self.cfg.vocab_size) {
            return Err(Error::invalid("token id", t, format!("below the vocabulary size {}", self.cfg.vocab_size)));
        }
        Ok(())
    }
}
