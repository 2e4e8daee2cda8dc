//! On-device sampling whose random state lives in device memory.

use candle_core::{DType, Device, Tensor};

use super::ops;
use crate::error::{Error, Result};

/// How a row's next token is chosen.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SamplingParams {
    /// 0 for greedy (the most likely token); otherwise the logits are divided by it.
    pub temperature: f32,
    /// Keep the `top_k` most likely tokens (0: all).
    pub top_k: usize,
    /// Then keep the fewest most likely tokens whose probability adds up to `top_p` (1: all).
    pub top_p: f32,
}

impl SamplingParams {
    /// Greedy decoding.
    pub const GREEDY: Self = Self { temperature: 0.0, top_k: 0, top_p: 1.0 };

    /// Sampling at `temperature` with top-k and top-p filtering.
    ///
    /// # Errors
    /// As [`validate`](Self::validate).
    pub fn new(temperature: f32, top_k: usize, top_p: f32) -> Result<Self> {
        let p = Self { temperature, top_k, top_p };
        p.validate()?;
        Ok(p)
    }

    /// # Errors
    /// [`Error::InvalidArgument`] for a temperature that is not finite or is negative (or
    /// above 100), a `top_p` outside `(0, 1]`, or a `top_k` above 2^24.
    pub fn validate(&self) -> Result<()> {
        if !self.temperature.is_finite() || self.temperature < 0.0 || self.temperature > 100.0 {
            return Err(Error::invalid("temperature", self.temperature, "a finite number from 0 (greedy) to 100"));
        }
        if !(self.top_p > 0.0 && self.top_p <= 1.0) {
            return Err(Error::invalid("top_p", self.top_p, "a number in (0, 1]"));
        }
        if self.top_k > 1 << 24 {
            return Err(Error::invalid("top_k", self.top_k, "at most 2^24 (0 keeps every token)"));
        }
        Ok(())
    }
}

/// Per-row sampling parameters and random generators, in device memory.
///
/// The generator is counter-based: a token is drawn from a hash of the row's seed and its
/// counter, and the kernel advances the counter in device memory. A captured sampling step
/// therefore draws anew at every replay, and the same seed gives the same tokens by replay
/// as eagerly. Draws use fixed-point probabilities (exact sums, the same draw on every
/// run); a token less likely than 2^-24 times the most likely one is never drawn.
///
/// On CUDA a row is drawn by many blocks: each part of the vocabulary keeps its 64 largest
/// logits (or, when no top-k applies, its exact weight sum, and with top-p its weights by
/// distance from the row's maximum), then one block a row merges them and draws, scanning
/// only the part that holds the draw when no top-k applies. The draw is the one a single
/// block scanning the whole row makes, bit for bit; when ties reach past the candidates (or
/// top-p alone meets more equal-distance logits than fit in shared memory, or a vocabulary
/// of more than 8,388,608), that block does scan the whole row. This needs about 324 KiB of
/// device scratch a row (10.1 MiB at 32 rows), allocated with the sampler.
#[derive(Clone, Debug, crate::Resources)]
pub struct Sampler {
    /// `[batch, 3]` f32: temperature, top_p, top_k.
    params: Tensor,
    /// `[batch, 4]` u32: seed (low, high), counter (low, high).
    rng: Tensor,
    /// u32 `[batch, SP_WORDS]` on CUDA (`[batch, 2]` elsewhere): the multi-block draw's
    /// candidates, sums and argmax slot.
    scratch: Tensor,
}

impl Sampler {
    /// The most rows a sampler takes: on CUDA its kernels run a row of their grid a row of
    /// logits (65,535 at most), and the same limit holds on every device, so a batch that
    /// works on one works on all.
    pub const MAX_BATCH: usize = 65_535;

    /// `batch` rows, greedy, seed 0. On CUDA this allocates the multi-block draw's scratch
    /// too: 331,784 bytes a row (10.1 MiB at batch 32).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero batch or one past [`Sampler::MAX_BATCH`]; candle's
    /// error if allocation fails.
    pub fn new(batch: usize, device: &Device) -> Result<Self> {
        if batch == 0 || batch > Self::MAX_BATCH {
            return Err(Error::invalid("sampler batch", batch, "from 1 to 65,535"));
        }
        let p = SamplingParams::GREEDY;
        let params = Tensor::from_vec(
            (0..batch).flat_map(|_| [p.temperature, p.top_p, p.top_k as f32]).collect::<Vec<_>>(),
            (batch, 3),
            device,
        )?;
        let rng = Tensor::zeros((batch, 4), DType::U32, device)?;
        let words = if device.is_cuda() { super::gpu::SP_WORDS } else { 2 };
        let scratch = Tensor::zeros((batch, words), DType::U32, device)?;
        Ok(Self { params, rng, scratch })
    }

    /// The generator state, u32 `[batch, 4]`: seed (low, high), counter (low, high).
    pub fn state(&self) -> &Tensor {
        &self.rng
    }

    /// Rows.
    pub fn batch(&self) -> usize {
        self.params.dims()[0]
    }

    /// Sets row `row`'s parameters and seeds its generator (counter 0). An eager upload:
    /// call it between replays, never inside a captured step.
    ///
    /// # Errors
    /// As [`SamplingParams::validate`]; [`Error::InvalidArgument`] for a row outside the
    /// batch.
    pub fn set(&self, row: usize, params: &SamplingParams, seed: u64) -> Result<()> {
        params.validate()?;
        if row >= self.batch() {
            return Err(Error::invalid("sampler row", row, format!("below the batch, {}", self.batch())));
        }
        let dev = self.params.device();
        let p = Tensor::from_vec(vec![params.temperature, params.top_p, params.top_k as f32], (1, 3), dev)?;
        self.params.slice_set(&p, 0, row)?;
        let g = Tensor::from_vec(vec![seed as u32, (seed >> 32) as u32, 0, 0], (1, 4), dev)?;
        self.rng.slice_set(&g, 0, row)?;
        Ok(())
    }

    /// Row `row`'s draw counter (a device read: not inside a capture).
    ///
    /// # Errors
    /// candle's.
    pub fn counter(&self, row: usize) -> Result<u64> {
        let g = self.rng.narrow(0, row, 1)?.flatten_all()?.to_vec1::<u32>()?;
        Ok(g[2] as u64 | (g[3] as u64) << 32)
    }

    /// Rows `start .. start + len`, sharing this sampler's memory.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for rows outside the batch.
    pub fn rows(&self, start: usize, len: usize) -> Result<Self> {
        if len == 0 || start.checked_add(len).is_none_or(|end| end > self.batch()) {
            return Err(Error::invalid(
                "sampler rows",
                format!("{start}..{}", start.saturating_add(len)),
                format!("within 0..{}", self.batch()),
            ));
        }
        Ok(Self {
            params: self.params.narrow(0, start, len)?,
            rng: self.rng.narrow(0, start, len)?,
            scratch: self.scratch.narrow(0, start, len)?,
        })
    }

    /// Draws one token per row of `logits` (`[batch, vocab]`) into `tokens` (u32 `[batch]`,
    /// the next step's input), advances `pos` (u32 `[batch]`) by `advance` and each drawing
    /// row's generator. Rows whose `active` is 0 change nothing. On CUDA, four kernels: the
    /// row's argmax, each part's candidates, top-p alone's keys in its threshold bin, the draw.
    ///
    /// # Errors
    /// [`Error::BadOperands`] for shapes or dtypes that do not fit.
    pub fn sample(
        &self,
        logits: &Tensor,
        tokens: &Tensor,
        pos: &Tensor,
        active: Option<&Tensor>,
        advance: u32,
    ) -> Result<()> {
        self.sample_with(logits, tokens, pos, active, advance, None)
    }

    /// [`sample`](Self::sample), with the LM head's packed argmax per row (i64 `[batch]`,
    /// from `matvec_with`): greedy rows take it instead of scanning, and every row's slot is
    /// cleared for the next step.
    pub(crate) fn sample_with(
        &self,
        logits: &Tensor,
        tokens: &Tensor,
        pos: &Tensor,
        active: Option<&Tensor>,
        advance: u32,
        amax: Option<&Tensor>,
    ) -> Result<()> {
        self.draw(logits, tokens, pos, active, advance, amax, false)
    }

    /// [`sample`](Self::sample) by the single-block kernel (one block scans its whole row),
    /// the reference the multi-block draw is tested against; the CPU reference on the CPU.
    /// Not for production use: it is slower and otherwise the same.
    ///
    /// # Errors
    /// As [`sample`](Self::sample).
    #[doc(hidden)]
    pub fn sample_single_block(
        &self,
        logits: &Tensor,
        tokens: &Tensor,
        pos: &Tensor,
        active: Option<&Tensor>,
        advance: u32,
    ) -> Result<()> {
        self.draw(logits, tokens, pos, active, advance, None, true)
    }

    /// Checks the operands, then draws on their device: on CUDA by the multi-block kernels
    /// (with the LM head's argmax when given) or, with `single_block`, the reference kernel.
    #[allow(clippy::too_many_arguments)]
    fn draw(
        &self,
        logits: &Tensor,
        tokens: &Tensor,
        pos: &Tensor,
        active: Option<&Tensor>,
        advance: u32,
        amax: Option<&Tensor>,
        single_block: bool,
    ) -> Result<()> {
        self.check(logits, tokens, pos, active)?;
        let (params, rng) = (&self.params, &self.rng);
        match ops::on("Sampler::sample", logits)? {
            ops::On::Cuda if single_block => {
                super::gpu::sample_single_block(logits, params, rng, tokens, pos, active, advance)?
            }
            ops::On::Cuda => {
                super::gpu::sample(logits, params, rng, tokens, pos, active, advance, amax, &self.scratch)?
            }
            ops::On::Cpu => super::cpu::sample(logits, params, rng, tokens, pos, active, advance)?,
        }
        Ok(())
    }

    /// The shapes, dtypes and device of a draw's operands.
    fn check(&self, logits: &Tensor, tokens: &Tensor, pos: &Tensor, active: Option<&Tensor>) -> Result<()> {
        const OP: &str = "Sampler::sample";
        ops::float(OP, "logits", logits)?;
        ops::contiguous(OP, "logits", logits)?;
        let (b, vocab) = logits
            .dims2()
            .map_err(|_| Error::operands(OP, format!("logits {:?} must be [batch, vocab]", logits.dims())))?;
        if b != self.batch() || vocab == 0 || vocab > u32::MAX as usize / 2 {
            return Err(Error::operands(
                OP,
                format!("logits {:?} do not fit a sampler of {} rows", logits.dims(), self.batch()),
            ));
        }
        if !self.params.device().same_device(logits.device()) {
            return Err(Error::operands(OP, "the logits are on another device than the sampler"));
        }
        for (what, t) in [("tokens", tokens), ("pos", pos)] {
            ops::rows_u32(OP, what, t, b, logits)?;
        }
        if let Some(a) = active {
            ops::rows_u32(OP, "active", a, b, logits)?;
        }
        Ok(())
    }
}
