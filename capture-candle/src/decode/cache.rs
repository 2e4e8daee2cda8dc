//! The static KV cache.

use candle_core::{DType, Device, Tensor};

use super::ops;
use crate::error::{Error, Result};

/// One layer's keys and values, `[batch, kv_heads, max_seq, head_dim]` each, allocated once
/// and written in place at each row's device position (by [`qkv_rope_write`](super::qkv_rope_write)
/// or [`write`](Self::write)): a captured step writes the slot of whatever position the
/// device holds when it replays, touching only the new slots.
///
/// Cloning is cheap and shares the tensors (candle tensors are reference-counted).
#[derive(Clone, Debug, crate::Resources)]
pub struct KvCache {
    k: Tensor,
    v: Tensor,
    /// u32 `[batch, kv_heads * 256]`: the attention kernel's chunk counters (kept at 0).
    counters: Tensor,
}

impl KvCache {
    /// A zeroed cache.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a zero size, a dtype other than f32, f16 or bf16, or
    /// sizes whose bytes overflow this machine's addresses; [`Error::BadOperands`] for a batch
    /// or a row of keys (`kv_heads * head_dim`) past the kernels' 2^31 limit;
    /// [`Error::HostMemory`] on the CPU for a cache larger than the memory and swap the
    /// process can have; candle's error if the allocation fails.
    pub fn new(
        batch: usize,
        kv_heads: usize,
        max_seq: usize,
        head_dim: usize,
        dtype: DType,
        device: &Device,
    ) -> Result<Self> {
        for (what, v) in [("batch", batch), ("kv_heads", kv_heads), ("max_seq", max_seq), ("head_dim", head_dim)] {
            if v == 0 {
                return Err(Error::invalid(what, v, "at least 1"));
            }
        }
        if max_seq > i32::MAX as usize {
            return Err(Error::invalid("max_seq", max_seq, "below 2^31"));
        }
        if !head_dim.is_multiple_of(2) {
            return Err(Error::invalid("head_dim", head_dim, "an even number"));
        }
        if !matches!(dtype, DType::F32 | DType::F16 | DType::BF16) {
            return Err(Error::invalid("KV cache dtype", format!("{dtype:?}"), "f32, f16 or bf16"));
        }
        // The kernels index a row of keys (kv_heads * head_dim) and the rows in 32 bits, and
        // the whole cache must be addressable: checked before anything is allocated.
        for (what, v) in [("batch", batch), ("kv_heads * head_dim", kv_heads.saturating_mul(head_dim))] {
            ops::fits_u32("KvCache::new", what, v)?;
        }
        let bytes = [batch, kv_heads, max_seq, head_dim, dtype.size_in_bytes()]
            .iter()
            .try_fold(1usize, |acc, &n| acc.checked_mul(n))
            .filter(|&b| b <= isize::MAX as usize);
        if bytes.is_none() {
            return Err(Error::invalid(
                "KV cache size",
                format!("{batch} x {kv_heads} x {max_seq} x {head_dim} {dtype:?}"),
                "a cache whose bytes this machine can address",
            ));
        }
        ops::fits_u32("KvCache::new", "kv_heads counters", kv_heads.saturating_mul(super::gpu::COUNTER_TOKENS))?;
        let both = bytes.map_or(u64::MAX, |b| (b as u64).saturating_mul(2));
        super::host::fits_host("a KV cache (keys and values)", both, device)?;
        let k = Tensor::zeros((batch, kv_heads, max_seq, head_dim), dtype, device)?;
        let v = Tensor::zeros((batch, kv_heads, max_seq, head_dim), dtype, device)?;
        let counters = Tensor::zeros((batch, kv_heads * super::gpu::COUNTER_TOKENS), DType::U32, device)?;
        Ok(Self { k, v, counters })
    }

    /// The keys.
    pub fn k(&self) -> &Tensor {
        &self.k
    }
    /// The values.
    pub fn v(&self) -> &Tensor {
        &self.v
    }
    pub(crate) fn counters(&self) -> &Tensor {
        &self.counters
    }
    /// Rows (sequences).
    pub fn batch(&self) -> usize {
        self.k.dims()[0]
    }
    /// Key/value heads.
    pub fn kv_heads(&self) -> usize {
        self.k.dims()[1]
    }
    /// Positions per row.
    pub fn max_seq(&self) -> usize {
        self.k.dims()[2]
    }
    /// Elements per head.
    pub fn head_dim(&self) -> usize {
        self.k.dims()[3]
    }

    /// Rows `start .. start + len` of this cache, sharing its memory: prefill one sequence
    /// of a batch, or run a smaller batch bucket, through a view.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for rows outside the cache.
    pub fn rows(&self, start: usize, len: usize) -> Result<Self> {
        if len == 0 || start.checked_add(len).is_none_or(|end| end > self.batch()) {
            return Err(Error::invalid(
                "cache rows",
                format!("{start}..{}", start.saturating_add(len)),
                format!("a non-empty range within 0..{}", self.batch()),
            ));
        }
        Ok(Self {
            k: self.k.narrow(0, start, len)?,
            v: self.v.narrow(0, start, len)?,
            counters: self.counters.narrow(0, start, len)?,
        })
    }

    /// Zeroes every row (the positions, not the cache, decide what attention reads: this is
    /// for tidiness and tests).
    ///
    /// # Errors
    /// candle's.
    pub fn clear(&self) -> Result<()> {
        self.k.slice_set(&self.k.zeros_like()?, 0, 0)?;
        self.v.slice_set(&self.v.zeros_like()?, 0, 0)?;
        Ok(())
    }

    /// Writes `k` and `v` (`[batch, tokens, kv_heads * head_dim]` each, no rotary embedding
    /// applied here) at each row's position `pos` (u32 `[batch]`) onwards: O(tokens) work,
    /// whatever `max_seq`. Positions past the end write nothing and set `overflow[row]`;
    /// rows whose `active` is 0 write nothing.
    ///
    /// # Errors
    /// [`Error::BadOperands`] for shapes or dtypes that do not fit.
    pub fn write(
        &self,
        k: &Tensor,
        v: &Tensor,
        pos: &Tensor,
        active: Option<&Tensor>,
        overflow: &Tensor,
    ) -> Result<()> {
        const OP: &str = "KvCache::write";
        let (b, nk, s, dim) = (self.batch(), self.kv_heads(), self.max_seq(), self.head_dim());
        for (what, t) in [("k", k), ("v", v)] {
            ops::same(OP, what, t, &self.k)?;
            if t.elem_count() % (b * nk * dim) != 0 || t.dims().last() != Some(&(nk * dim)) {
                return Err(Error::operands(OP, format!("{what} {:?} must be [{b}, tokens, {nk} * {dim}]", t.dims())));
            }
        }
        if k.dims() != v.dims() {
            return Err(Error::operands(OP, format!("k {:?} and v {:?} differ", k.dims(), v.dims())));
        }
        ops::rows_u32(OP, "pos", pos, b, k)?;
        ops::rows_u32(OP, "overflow", overflow, b, k)?;
        if let Some(a) = active {
            ops::rows_u32(OP, "active", a, b, k)?;
        }
        let tokens = k.elem_count() / (b * nk * dim);
        ops::fits_u32(OP, "tokens", tokens)?;
        ops::fits_u32(OP, "rows * tokens", b.saturating_mul(tokens))?;
        // The table is not read for value heads: a one-row stand-in of the right dim.
        let table = Tensor::zeros((1, dim), DType::F32, k.device())?;
        for (src, cache) in [(k, &self.k), (v, &self.v)] {
            let a = super::gpu::RopeWrite {
                src,
                stride: (nk * dim) as u32,
                col0: 0,
                bias: None,
                table: &table,
                pos,
                active,
                rows: b as u32,
                tokens: tokens as u32,
                dim: dim as u32,
                nq: 0,
                nk: 0,
                nv: nk as u32,
                max_seq: s as u32,
                interleaved: false,
                q_out: None,
                k_cache: None,
                v_cache: Some(cache),
                overflow,
            };
            match ops::on(OP, k)? {
                ops::On::Cuda => super::gpu::rope_write(&a)?,
                ops::On::Cpu => super::cpu::rope_write(&a)?,
            }
        }
        Ok(())
    }
}
