//! Everything a decode step reads and writes besides the weights, allocated once.

use candle_core::{DType, Tensor};

use super::Model;
use crate::decode::{KvCache, Sampler};
use crate::error::{Error, Result};

/// Per-sequence device state for `batch` rows: the input token, the position, whether the
/// row is active, the overflow flag, each layer's KV cache, the sampler and the last
/// logits. A captured step reads and writes only these, so replaying it decodes the next
/// token of every row.
///
/// [`rows`](Self::rows) gives a view of some rows sharing the same memory: a smaller batch
/// bucket, or one sequence to prefill. Cloning is cheap and shares the tensors.
#[derive(Clone, Debug, crate::Resources)]
pub struct DecodeState {
    tokens: Tensor,
    pos: Tensor,
    active: Tensor,
    overflow: Tensor,
    /// i64 `[batch]`: the LM head's packed argmax of each row, read and cleared by the sampler.
    argmax: Tensor,
    caches: Vec<KvCache>,
    sampler: Sampler,
    /// `[full batch, vocab]`, and the first row of this view.
    logits: Tensor,
    row0: usize,
    batch: usize,
    /// Positions each row's KV cache holds.
    max_seq: usize,
}

impl DecodeState {
    pub(crate) fn new(model: &Model, batch: usize) -> Result<Self> {
        // The sampler's limit, checked before any cache is allocated.
        if batch == 0 || batch > Sampler::MAX_BATCH {
            return Err(Error::invalid("batch", batch, format!("from 1 to {}", Sampler::MAX_BATCH)));
        }
        let cfg = model.config();
        let dev = model.device();
        // Every layer's cache and the logits, on the CPU, before any is allocated.
        let elem = model.dtype().size_in_bytes() as u64;
        let cache = [batch, cfg.num_key_value_heads, model.max_seq(), cfg.head_dim, 2, cfg.num_hidden_layers]
            .iter()
            .try_fold(elem, |acc, &n| acc.checked_mul(n as u64));
        let logits = (batch as u64).checked_mul(cfg.vocab_size as u64).and_then(|n| n.checked_mul(elem));
        let bytes = cache.zip(logits).and_then(|(c, l)| c.checked_add(l)).unwrap_or(u64::MAX);
        crate::decode::host::fits_host("a decode state (KV caches and logits)", bytes, dev)?;
        let zeros = || Tensor::zeros(batch, DType::U32, dev);
        let caches = (0..cfg.num_hidden_layers)
            .map(|_| KvCache::new(batch, cfg.num_key_value_heads, model.max_seq(), cfg.head_dim, model.dtype(), dev))
            .collect::<Result<Vec<_>>>()?;
        Ok(Self {
            tokens: zeros()?,
            pos: zeros()?,
            active: zeros()?,
            overflow: zeros()?,
            argmax: Tensor::zeros(batch, DType::I64, dev)?,
            caches,
            sampler: Sampler::new(batch, dev)?,
            logits: Tensor::zeros((batch, cfg.vocab_size), model.dtype(), dev)?,
            row0: 0,
            batch,
            max_seq: model.max_seq(),
        })
    }

    /// Rows.
    pub fn batch(&self) -> usize {
        self.batch
    }
    /// Each row's input token (u32 `[batch]`), overwritten by the step with the next one.
    pub fn tokens(&self) -> &Tensor {
        &self.tokens
    }
    /// Each row's position: where its input token goes (u32 `[batch]`).
    pub fn pos(&self) -> &Tensor {
        &self.pos
    }
    /// 1 for rows that decode, 0 for rows that change nothing (padding, finished).
    pub fn active(&self) -> &Tensor {
        &self.active
    }
    /// Set to 1 for a row whose position reached the end of its cache.
    pub fn overflow(&self) -> &Tensor {
        &self.overflow
    }
    /// Positions each row's KV cache holds (the model's `max_seq` when the state was made): a
    /// step at a position past them sets the row's overflow flag.
    pub fn max_seq(&self) -> usize {
        self.max_seq
    }
    /// Each layer's KV cache.
    pub fn caches(&self) -> &[KvCache] {
        &self.caches
    }
    /// The sampler.
    pub fn sampler(&self) -> &Sampler {
        &self.sampler
    }
    /// The sampler's generator state, u32 `[batch, 4]`: seed (low, high), counter (low,
    /// high). For tests and tools; [`Sampler::set`] is the way to seed a row.
    pub fn sampler_state(&self) -> &Tensor {
        self.sampler.state()
    }
    /// The last step's logits of these rows, `[batch, vocab]`.
    ///
    /// # Errors
    /// candle's.
    pub fn logits(&self) -> Result<Tensor> {
        Ok(self.logits.narrow(0, self.row0, self.batch)?)
    }

    pub(crate) fn argmax_slot(&self) -> &Tensor {
        &self.argmax
    }

    pub(crate) fn keep_logits(&self, logits: &Tensor) -> Result<()> {
        Ok(self.logits.slice_set(logits, 0, self.row0)?)
    }

    /// Rows `start .. start + len`, sharing memory with `self`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for rows outside the batch.
    pub fn rows(&self, start: usize, len: usize) -> Result<Self> {
        if len == 0 || start.checked_add(len).is_none_or(|end| end > self.batch) {
            return Err(Error::invalid(
                "state rows",
                format!("{start}..{}", start.saturating_add(len)),
                format!("within 0..{}", self.batch),
            ));
        }
        let n = |t: &Tensor| t.narrow(0, start, len);
        Ok(Self {
            tokens: n(&self.tokens)?,
            pos: n(&self.pos)?,
            active: n(&self.active)?,
            overflow: n(&self.overflow)?,
            argmax: n(&self.argmax)?,
            caches: self.caches.iter().map(|c| c.rows(start, len)).collect::<Result<_>>()?,
            sampler: self.sampler.rows(start, len)?,
            logits: self.logits.clone(),
            row0: self.row0 + start,
            batch: len,
            max_seq: self.max_seq,
        })
    }

    /// Sets row `row`'s position and activity and clears its overflow flag (an eager
    /// upload, between steps). A row at or past [`max_seq`](Self::max_seq) has no room left:
    /// its steps only set its overflow flag.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a row outside the batch or a position of 2^31 or more
    /// (each step advances a position by one: near `u32::MAX` it would wrap to 0, and the
    /// row would write its cache again from the start).
    pub fn set_row(&self, row: usize, pos: u32, active: bool) -> Result<()> {
        if row >= self.batch {
            return Err(Error::invalid("state row", row, format!("below the batch, {}", self.batch)));
        }
        if pos > i32::MAX as u32 {
            return Err(Error::invalid("state position", pos, "below 2^31"));
        }
        let dev = self.pos.device();
        self.pos.slice_set(&Tensor::new(&[pos], dev)?, 0, row)?;
        self.active.slice_set(&Tensor::new(&[active as u32], dev)?, 0, row)?;
        self.overflow.slice_set(&Tensor::new(&[0u32], dev)?, 0, row)?;
        Ok(())
    }

    /// Sets every row's position and activity and clears every overflow flag (three eager
    /// uploads, between steps); `pos` and `active` have a value for each row.
    pub(crate) fn set_rows(&self, pos: &[u32], active: &[bool]) -> Result<()> {
        if pos.len() != self.batch || active.len() != self.batch {
            return Err(Error::invalid(
                "state rows",
                format!("{} positions, {} flags", pos.len(), active.len()),
                format!("one of each for each of the {} rows", self.batch),
            ));
        }
        let dev = self.pos.device();
        let act: Vec<u32> = active.iter().map(|&a| a as u32).collect();
        self.pos.slice_set(&Tensor::new(pos, dev)?, 0, 0)?;
        self.active.slice_set(&Tensor::new(act.as_slice(), dev)?, 0, 0)?;
        self.overflow.slice_set(&Tensor::zeros(self.batch, DType::U32, dev)?, 0, 0)?;
        Ok(())
    }

    /// Sets every row's input token (an eager upload); `tokens` has one for each row.
    pub(crate) fn set_tokens(&self, tokens: &[u32]) -> Result<()> {
        if tokens.len() != self.batch {
            return Err(Error::invalid(
                "state tokens",
                tokens.len(),
                format!("one for each of the {} rows", self.batch),
            ));
        }
        self.check_tokens(tokens)?;
        self.tokens.slice_set(&Tensor::new(tokens, self.tokens.device())?, 0, 0)?;
        Ok(())
    }

    /// Every token below the vocabulary (the logits' width).
    fn check_tokens(&self, tokens: &[u32]) -> Result<()> {
        let vocab = self.logits.dim(1)?;
        match tokens.iter().find(|&&t| t as usize >= vocab) {
            Some(&t) => Err(Error::invalid("token", t, format!("below the vocabulary size, {vocab}"))),
            None => Ok(()),
        }
    }

    /// Sets row `row`'s input token (an eager upload).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a row outside the batch or a token outside the
    /// vocabulary (on a GPU the embedding's lookup would otherwise fail a device assertion,
    /// which loses the CUDA context).
    pub fn set_token(&self, row: usize, token: u32) -> Result<()> {
        if row >= self.batch {
            return Err(Error::invalid("state row", row, format!("below the batch, {}", self.batch)));
        }
        self.check_tokens(&[token])?;
        self.tokens.slice_set(&Tensor::new(&[token], self.tokens.device())?, 0, row)?;
        Ok(())
    }

    /// Reads each row's token (waits for the device).
    ///
    /// # Errors
    /// candle's.
    pub fn read_tokens(&self) -> Result<Vec<u32>> {
        Ok(self.tokens.to_vec1::<u32>()?)
    }

    /// Reads each row's position (waits for the device).
    ///
    /// # Errors
    /// candle's.
    pub fn read_pos(&self) -> Result<Vec<u32>> {
        Ok(self.pos.to_vec1::<u32>()?)
    }

    /// Reads each row's overflow flag (waits for the device).
    ///
    /// # Errors
    /// candle's.
    pub fn read_overflow(&self) -> Result<Vec<bool>> {
        Ok(self.overflow.to_vec1::<u32>()?.into_iter().map(|v| v != 0).collect())
    }
}
