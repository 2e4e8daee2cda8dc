//! Capture-ready decode layers: every position, length and random state is read from device
//! memory, so one captured step replays correctly at every position.
//!
//! | layer | what it does | CUDA kernels |
//! |---|---|---|
//! | [`KvCache`] | static `[batch, kv_heads, max_seq, head_dim]` per layer, written at each row's device position | — |
//! | [`qkv_rope_write`] | bias + rotary embedding at device positions + KV-cache write, from a fused QKV projection | 1 |
//! | [`rope`] | the rotary embedding alone ([`RopeLayout::Halves`] is candle's `rope`, [`RopeLayout::Interleaved`] its `rope_i`; Llama 3 scaling in [`RopeTable`]) | 1 |
//! | [`attention`] | grouped-query attention over each row's valid prefix, split across the sequence | 1 |
//! | [`qkv_attention`] | [`qkv_rope_write`] then [`attention`]; one kernel for one token a row | 1 (2 for several tokens a row) |
//! | [`add_rms_norm`] | residual add + RMSNorm | 1 |
//! | [`silu_mul`] | SwiGLU of a fused gate/up projection | 1 |
//! | [`matvec`] | a projection at decode batch sizes, with RMSNorm or SwiGLU before it and the residual add after it | 1 |
//! | [`matvec_swiglu`] | SwiGLU's gate/up projection at decode batch sizes, with RMSNorm before it and the SwiGLU applied as it is written | 1 |
//! | [`Sampler`] | greedy, temperature, top-k, top-p; generator state in device memory, advancing at every replay; many blocks a row (each part of the vocabulary keeps its largest logits, one block a row draws) | 2 (3 without the LM head's argmax) |
//!
//! Each op runs on CUDA (the kernels of `kernels/decode.cu`, shipped as PTX) and on candle's
//! CPU device (plain loops, the reference the kernels are tested against), in f32, f16 and
//! bf16. They run eagerly as well as under capture: prefill and fallback use the same code.
//!
//! What the device reads instead of a host value, and why it matters: a position passed by
//! value, or folded into a `narrow` offset, becomes a constant of a captured graph; every
//! replay would then write the KV cache at the capture's position and rotate every token as
//! if it stood there. These ops take positions as u32 tensors, which the graph reads afresh
//! at each replay.

mod cache;
mod code;
mod cpu;
pub(crate) mod gpu;
pub(crate) mod host;
pub(crate) mod ops;
pub(crate) use gpu::Launch;
mod rope;
mod sampling;

pub use cache::KvCache;
pub use code::{kernel_code, KernelCode, PtxWhy, CUBIN_ARCH};
/// Rows up to which [`matvec`] runs as one fused kernel on CUDA in every dtype and with every
/// [`Prologue`] (the matrix-vector kernel); [`matvec_rows`] says how many for a dtype.
pub const MATVEC_ROWS: usize = gpu::GEMV_MAX_M;

pub use ops::{
    add_rms_norm, attention, attention_using, matvec, matvec_rows, matvec_swiglu, qkv_attention, qkv_rope_write, rope,
    silu_mul, AttentionKernel, Prologue,
};
pub use rope::{Llama3Scaling, RopeLayout, RopeTable};
pub use sampling::{Sampler, SamplingParams};

/// The generator's 64-bit hash (SplitMix64's finaliser), shared with the kernels.
pub(crate) fn mix(z: u64) -> u64 {
    cpu::mix64(z)
}

/// A 64-bit value from a seed and a name (for random weights on the CPU).
pub(crate) fn hash_seed(seed: u64, name: &str) -> u64 {
    name.bytes().fold(mix(seed), |h, b| mix(h ^ b as u64))
}
