//! A small decoder written with candle-nn, random weights: token and learned position
//! embeddings, `layers` pre-norm blocks (RmsNorm, multi-head attention over a fixed-size KV
//! cache, RmsNorm, SwiGLU MLP), a final RmsNorm and an LM head.
//!
//! The decode step reads the token id and the position from device tensors and writes the
//! KV cache, the logits and the greedy next token into tensors made beforehand, so one
//! captured step replays correctly for every position: nothing about the position is known
//! on the host when the step is recorded.

use candle_core::{DType, Device, Module, Result, Tensor, D};
use candle_nn::{Embedding, Linear, RmsNorm};

/// Sizes of the model.
#[derive(Copy, Clone, Debug, capture_candle::Resources)]
pub struct Config {
    pub vocab: usize,
    pub hidden: usize,
    pub heads: usize,
    pub mlp: usize,
    pub layers: usize,
    /// KV-cache length: the most tokens one sequence can hold.
    pub max_seq: usize,
}

impl Config {
    fn head_dim(&self) -> usize {
        self.hidden / self.heads
    }
}

#[derive(capture_candle::Resources)]
struct Block {
    norm1: RmsNorm,
    wq: Linear,
    wk: Linear,
    wv: Linear,
    wo: Linear,
    norm2: RmsNorm,
    w_gate: Linear,
    w_up: Linear,
    w_down: Linear,
}

/// The weights.
#[derive(capture_candle::Resources)]
pub struct Model {
    cfg: Config,
    tok_emb: Embedding,
    pos_emb: Tensor,
    blocks: Vec<Block>,
    norm_f: RmsNorm,
    lm_head: Linear,
}

/// Everything a decode step reads and writes besides the weights, allocated once.
#[derive(capture_candle::Resources)]
pub struct State {
    /// The input token id, `[1]` u32.
    pub token: Tensor,
    /// The input position, `[1]` u32.
    pub pos: Tensor,
    /// `0..max_seq`, u32: compared with `pos` on the device.
    positions: Tensor,
    /// `-inf`, `[heads, 1, max_seq]`, for masked attention scores.
    neg_inf: Tensor,
    /// Per layer, `[heads, max_seq, head_dim]`.
    k_cache: Vec<Tensor>,
    v_cache: Vec<Tensor>,
    /// The step's output logits, `[1, vocab]` f32.
    pub logits: Tensor,
    /// The greedy next token, `[1]` u32.
    pub next: Tensor,
}

fn linear(out: usize, inp: usize, dev: &Device) -> Result<Linear> {
    let w = Tensor::randn(0f32, (1.0 / inp as f64).sqrt() as f32, (out, inp), dev)?;
    Ok(Linear::new(w, None))
}

fn norm(hidden: usize, dev: &Device) -> Result<RmsNorm> {
    let w = (Tensor::randn(0f32, 0.1, hidden, dev)? + 1.0)?;
    Ok(RmsNorm::new(w, 1e-5))
}

impl Model {
    /// Random weights (candle's generator on `dev`; seed it first for repeatable runs).
    pub fn random(cfg: Config, dev: &Device) -> Result<Self> {
        let tok_emb = Embedding::new(Tensor::randn(0f32, 1.0, (cfg.vocab, cfg.hidden), dev)?, cfg.hidden);
        let pos_emb = Tensor::randn(0f32, 0.5, (cfg.max_seq, cfg.hidden), dev)?;
        let mut blocks = Vec::new();
        for _ in 0..cfg.layers {
            blocks.push(Block {
                norm1: norm(cfg.hidden, dev)?,
                wq: linear(cfg.hidden, cfg.hidden, dev)?,
                wk: linear(cfg.hidden, cfg.hidden, dev)?,
                wv: linear(cfg.hidden, cfg.hidden, dev)?,
                wo: linear(cfg.hidden, cfg.hidden, dev)?,
                norm2: norm(cfg.hidden, dev)?,
                w_gate: linear(cfg.mlp, cfg.hidden, dev)?,
                w_up: linear(cfg.mlp, cfg.hidden, dev)?,
                w_down: linear(cfg.hidden, cfg.mlp, dev)?,
            });
        }
        Ok(Self {
            cfg,
            tok_emb,
            pos_emb,
            blocks,
            norm_f: norm(cfg.hidden, dev)?,
            lm_head: linear(cfg.vocab, cfg.hidden, dev)?,
        })
    }

    /// The persistent step state, KV cache zeroed.
    pub fn new_state(&self, dev: &Device) -> Result<State> {
        let c = self.cfg;
        let cache = || Tensor::zeros((c.heads, c.max_seq, c.head_dim()), DType::F32, dev);
        Ok(State {
            token: Tensor::zeros(1, DType::U32, dev)?,
            pos: Tensor::zeros(1, DType::U32, dev)?,
            positions: Tensor::arange(0u32, c.max_seq as u32, dev)?,
            neg_inf: Tensor::full(f32::NEG_INFINITY, (c.heads, 1, c.max_seq), dev)?,
            k_cache: (0..c.layers).map(|_| cache()).collect::<Result<_>>()?,
            v_cache: (0..c.layers).map(|_| cache()).collect::<Result<_>>()?,
            logits: Tensor::zeros((1, c.vocab), DType::F32, dev)?,
            next: Tensor::zeros(1, DType::U32, dev)?,
        })
    }

    /// One decode step: reads `state.token` and `state.pos`, writes the KV cache at `pos`,
    /// `state.logits` and `state.next`. Every tensor it creates is dropped before it returns.
    pub fn step(&self, state: &State) -> Result<()> {
        self.step_at(state, &state.pos)
    }

    /// The same step with the position taken from the host, as a naive port would write it:
    /// the position is uploaded from a host value when the step is issued. Captured, the
    /// upload is served once (from candle's cache of small uploads) and every replay uses
    /// the position of the capture. This is the planted bug that replay validation catches.
    pub fn step_with_host_position(&self, state: &State, pos: u32) -> Result<()> {
        let pos = Tensor::new(&[pos], state.pos.device())?;
        self.step_at(state, &pos)
    }

    fn step_at(&self, state: &State, pos: &Tensor) -> Result<()> {
        let c = self.cfg;
        let (h, hd, s) = (c.heads, c.head_dim(), c.max_seq);
        // [1, hidden]
        let mut x = (self.tok_emb.forward(&state.token)? + self.pos_emb.index_select(pos, 0)?)?;
        // Attention mask and KV-cache write selector, from the device position.
        let valid = state.positions.broadcast_le(pos)?.reshape((1, 1, s))?.broadcast_as((h, 1, s))?;
        let one_hot = state.positions.broadcast_eq(pos)?.to_dtype(DType::F32)?.reshape((1, s, 1))?;
        let keep = one_hot.affine(-1.0, 1.0)?;
        for (i, b) in self.blocks.iter().enumerate() {
            let y = b.norm1.forward(&x)?;
            let heads = |t: Tensor| t.reshape((1, h, hd))?.transpose(0, 1)?.contiguous(); // [h, 1, hd]
            let q = heads(b.wq.forward(&y)?)?;
            let k = heads(b.wk.forward(&y)?)?;
            let v = heads(b.wv.forward(&y)?)?;
            // Write k and v at `pos`: cache * (1 - one_hot) + new * one_hot.
            for (cache, new) in [(&state.k_cache[i], &k), (&state.v_cache[i], &v)] {
                let updated = (cache.broadcast_mul(&keep)? + new.broadcast_mul(&one_hot)?)?;
                cache.slice_set(&updated, 0, 0)?;
            }
            let scores = (q.matmul(&state.k_cache[i].t()?)? * (1.0 / (hd as f64).sqrt()))?; // [h, 1, s]
            let scores = valid.where_cond(&scores, &state.neg_inf)?;
            let probs = candle_nn::ops::softmax_last_dim(&scores)?;
            let att = probs.matmul(&state.v_cache[i])?.transpose(0, 1)?.reshape((1, c.hidden))?;
            x = (x + b.wo.forward(&att)?)?;
            let y = b.norm2.forward(&x)?;
            let mlp = b.w_down.forward(&(b.w_gate.forward(&y)?.silu()? * b.w_up.forward(&y)?)?)?;
            x = (x + mlp)?;
        }
        let logits = self.lm_head.forward(&self.norm_f.forward(&x)?)?;
        let next = logits.argmax_keepdim(D::Minus1)?.reshape(1)?;
        state.logits.slice_set(&logits, 0, 0)?;
        state.next.slice_set(&next, 0, 0)
    }

    /// Zeroes the KV cache in place (a new sequence).
    pub fn reset(&self, state: &State) -> Result<()> {
        for t in state.k_cache.iter().chain(&state.v_cache) {
            t.slice_set(&t.zeros_like()?, 0, 0)?;
        }
        Ok(())
    }
}
