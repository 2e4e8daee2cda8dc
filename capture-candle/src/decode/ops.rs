//! The decode ops: checks, then the CUDA kernel or the CPU reference.

use candle_core::{DType, Device, Tensor};

use super::gpu::Launch;
use super::{cpu, gpu, KvCache, RopeLayout, RopeTable};
use crate::error::{Error, Result};

/// Where an op runs.
pub(crate) enum On {
    Cpu,
    Cuda,
}

pub(crate) fn on(op: &'static str, t: &Tensor) -> Result<On> {
    match t.device() {
        Device::Cpu => Ok(On::Cpu),
        Device::Cuda(_) => Ok(On::Cuda),
        d => Err(Error::operands(op, format!("runs on CUDA or the CPU, not on {:?}", d.location()))),
    }
}

pub(crate) fn float(op: &'static str, what: &str, t: &Tensor) -> Result<()> {
    match t.dtype() {
        DType::F32 | DType::F16 | DType::BF16 => Ok(()),
        d => Err(Error::operands(op, format!("{what} is {d:?}; the decode ops take f32, f16 or bf16"))),
    }
}

pub(crate) fn same(op: &'static str, what: &str, t: &Tensor, like: &Tensor) -> Result<()> {
    if t.dtype() != like.dtype() {
        return Err(Error::operands(op, format!("{what} is {:?}, the other operands {:?}", t.dtype(), like.dtype())));
    }
    if !t.device().same_device(like.device()) {
        return Err(Error::operands(op, format!("{what} is on another device")));
    }
    contiguous(op, what, t)
}

pub(crate) fn contiguous(op: &'static str, what: &str, t: &Tensor) -> Result<()> {
    if !t.is_contiguous() {
        return Err(Error::operands(op, format!("{what} must be contiguous (call .contiguous() first)")));
    }
    Ok(())
}

/// A size the kernels take as a 32-bit value.
pub(crate) fn fits_u32(op: &'static str, what: &str, n: usize) -> Result<()> {
    if n > i32::MAX as usize {
        return Err(Error::operands(op, format!("{what} = {n} is above the kernels' 2^31 limit")));
    }
    Ok(())
}

/// A `[rows]` u32 tensor on `like`'s device.
pub(crate) fn rows_u32(op: &'static str, what: &str, t: &Tensor, rows: usize, like: &Tensor) -> Result<()> {
    if t.dtype() != DType::U32 || t.dims() != [rows] {
        return Err(Error::operands(op, format!("{what} must be u32 [{rows}], got {:?} {:?}", t.dtype(), t.dims())));
    }
    if !t.device().same_device(like.device()) {
        return Err(Error::operands(op, format!("{what} is on another device")));
    }
    contiguous(op, what, t)
}

/// `qkv_rope_write`'s operand checks (also [`qkv_attention`]'s): the token rows a batch row
/// and the width of a qkv row.
#[allow(clippy::too_many_arguments)]
fn rope_write_checks(
    op: &'static str,
    qkv: &Tensor,
    bias: Option<&Tensor>,
    rope: &RopeTable,
    pos: &Tensor,
    active: Option<&Tensor>,
    cache: &KvCache,
    overflow: &Tensor,
    q_heads: usize,
) -> Result<(usize, usize)> {
    let (nk, dim, s, batch) = (cache.kv_heads(), cache.head_dim(), cache.max_seq(), cache.batch());
    float(op, "qkv", qkv)?;
    contiguous(op, "qkv", qkv)?;
    same(op, "the KV cache", cache.k(), qkv)?;
    let width = q_heads.checked_add(2 * nk).and_then(|h| h.checked_mul(dim)).unwrap_or(usize::MAX);
    let rows_total = qkv.elem_count() / width.max(1);
    if q_heads == 0 || rows_total * width != qkv.elem_count() || qkv.dims().last() != Some(&width) {
        return Err(Error::operands(
            op,
            format!(
                "qkv {:?} must end in (q_heads + 2*kv_heads) * head_dim = ({q_heads} + 2*{nk}) * {dim} = {width}",
                qkv.dims()
            ),
        ));
    }
    if !rows_total.is_multiple_of(batch) {
        return Err(Error::operands(
            op,
            format!("qkv has {rows_total} token rows, not a multiple of the cache's batch {batch}"),
        ));
    }
    if !q_heads.is_multiple_of(nk) {
        return Err(Error::operands(op, format!("{q_heads} query heads are not a multiple of {nk} key/value heads")));
    }
    if rope.dim() != dim || rope.max_seq() < s {
        return Err(Error::operands(
            op,
            format!(
                "the rope table is for head_dim {} and {} positions; the cache needs {dim} and {s}",
                rope.dim(),
                rope.max_seq()
            ),
        ));
    }
    if let Some(b) = bias {
        same(op, "the bias", b, qkv)?;
        if b.elem_count() != width {
            return Err(Error::operands(op, format!("the bias has {} elements, not {width}", b.elem_count())));
        }
    }
    rows_u32(op, "pos", pos, batch, qkv)?;
    rows_u32(op, "overflow", overflow, batch, qkv)?;
    if let Some(a) = active {
        rows_u32(op, "active", a, batch, qkv)?;
    }
    let tokens = rows_total / batch;
    fits_u32(op, "token rows", rows_total)?;
    fits_u32(op, "qkv width", width)?;
    Ok((tokens, width))
}

/// The fused decode-attention input stage: adds the bias (if any) to a fused QKV
/// projection, applies the rotary embedding at each row's device position to the query and
/// key heads, writes keys and values into `cache` at those positions, and returns the
/// queries as `[batch, q_heads, tokens, head_dim]`.
///
/// `qkv` is `[batch, tokens, (q_heads + 2*kv_heads) * head_dim]` (or the same flattened to
/// two dimensions, `[batch * tokens, …]`), the query heads first, then the keys, then the
/// values. `pos` (u32 `[batch]`) is the position of each row's first token; token `t` goes
/// to position `pos + t`. A position at or past the cache's end writes nothing to the cache
/// and sets that row's `overflow` (u32 `[batch]`) to 1; read it after the step. Rows whose
/// `active` (u32 `[batch]`, optional) is 0 write nothing to the cache.
///
/// One kernel on CUDA, whatever the number of heads.
///
/// # Errors
/// [`Error::BadOperands`] when shapes, dtypes or devices do not fit together; candle's
/// error if the launch fails.
#[allow(clippy::too_many_arguments)]
pub fn qkv_rope_write(
    qkv: &Tensor,
    bias: Option<&Tensor>,
    rope: &RopeTable,
    pos: &Tensor,
    active: Option<&Tensor>,
    cache: &KvCache,
    overflow: &Tensor,
    q_heads: usize,
) -> Result<Tensor> {
    const OP: &str = "qkv_rope_write";
    let (tokens, width) = rope_write_checks(OP, qkv, bias, rope, pos, active, cache, overflow, q_heads)?;
    let (nk, dim, s, batch) = (cache.kv_heads(), cache.head_dim(), cache.max_seq(), cache.batch());
    let q = match on(OP, qkv)? {
        // `rope_write` writes every element of q: one thread per pair of every query head
        // of every token row.
        On::Cuda => crate::raw::uninit((batch, q_heads, tokens, dim), qkv.dtype(), qkv.device())?,
        On::Cpu => Tensor::zeros((batch, q_heads, tokens, dim), qkv.dtype(), qkv.device())?,
    };
    let a = gpu::RopeWrite {
        src: qkv,
        stride: width as u32,
        col0: 0,
        bias,
        table: rope.table(),
        pos,
        active,
        rows: batch as u32,
        tokens: tokens as u32,
        dim: dim as u32,
        nq: q_heads as u32,
        nk: nk as u32,
        nv: nk as u32,
        max_seq: s as u32,
        interleaved: rope.layout() == RopeLayout::Interleaved,
        q_out: Some(&q),
        k_cache: Some(cache.k()),
        v_cache: Some(cache.v()),
        overflow,
    };
    match on(OP, qkv)? {
        On::Cuda => gpu::rope_write(&a)?,
        On::Cpu => cpu::rope_write(&a)?,
    }
    Ok(q)
}

/// The rotary embedding alone, at device positions: `x` is `[batch, tokens, heads *
/// head_dim]` (or `[batch, tokens, heads, head_dim]`); returns `[batch, heads, tokens,
/// head_dim]`, token `t` of row `b` rotated for position `pos[b] + t` (clamped to the
/// table's last row).
///
/// # Errors
/// [`Error::BadOperands`] for shapes or dtypes that do not fit; candle's error if the launch
/// fails.
pub fn rope(x: &Tensor, heads: usize, table: &RopeTable, pos: &Tensor) -> Result<Tensor> {
    const OP: &str = "rope";
    float(OP, "x", x)?;
    contiguous(OP, "x", x)?;
    let dim = table.dim();
    let batch = pos.elem_count();
    let width = heads.checked_mul(dim).filter(|&w| w <= i32::MAX as usize);
    let row = width.and_then(|w| w.checked_mul(batch));
    let (Some(width), Some(row)) = (width, row) else {
        return Err(Error::operands(
            OP,
            format!("{heads} heads of {dim} over {batch} rows are above the kernels' 2^31 limit"),
        ));
    };
    if heads == 0 || batch == 0 || !x.elem_count().is_multiple_of(row) {
        return Err(Error::operands(
            OP,
            format!("x {:?} must be [batch = {batch}, tokens, {heads} * {dim}]", x.dims()),
        ));
    }
    rows_u32(OP, "pos", pos, batch, x)?;
    let tokens = x.elem_count() / row;
    fits_u32(OP, "token rows", batch * tokens)?;
    let overflow = Tensor::zeros(batch, DType::U32, x.device())?;
    let q = match on(OP, x)? {
        // Every element is written, as for `qkv_rope_write`'s queries.
        On::Cuda => crate::raw::uninit((batch, heads, tokens, dim), x.dtype(), x.device())?,
        On::Cpu => Tensor::zeros((batch, heads, tokens, dim), x.dtype(), x.device())?,
    };
    let a = gpu::RopeWrite {
        src: x,
        stride: width as u32,
        col0: 0,
        bias: None,
        table: table.table(),
        pos,
        active: None,
        rows: batch as u32,
        tokens: tokens as u32,
        dim: dim as u32,
        nq: heads as u32,
        nk: 0,
        nv: 0,
        max_seq: table.max_seq() as u32,
        interleaved: table.layout() == RopeLayout::Interleaved,
        q_out: Some(&q),
        k_cache: None,
        v_cache: None,
        overflow: &overflow,
    };
    match on(OP, x)? {
        On::Cuda => gpu::rope_write(&a)?,
        On::Cpu => cpu::rope_write(&a)?,
    }
    Ok(q)
}

/// Attention of queries `q` (`[batch, q_heads, tokens, head_dim]`) over each row's valid
/// prefix of `cache`: query `t` of row `b` sees positions `0 ..= pos[b] + t` (grouped-query:
/// query head `h` reads key/value head `h / (q_heads / kv_heads)`), scaled by `scale`.
/// Returns `[batch, tokens, q_heads * head_dim]`, ready for the output projection.
///
/// On CUDA, one kernel: each row's prefix is cut into up to 64 chunks (of a multiple of 64
/// positions, sized on the device from the row's length), one block per chunk, key/value
/// head and group of up to 4 of its query heads; blocks past the prefix return at once, so
/// the work grows with the position and not with the cache's length; the last block of each
/// key/value head combines the chunks. It uses the cache's counters: do not run two attentions over one cache at once on
/// different streams.
///
/// With 16 or more tokens a row and 2,048 or more query rows in all (tokens a row × rows ×
/// query heads: a prefill's round), in bf16 or f16 with heads of 64 or 128, it runs a tiled
/// kernel instead: each block takes 64 query rows (a key/value head's query heads of
/// consecutive tokens), streams the keys and values of their longest prefix once through
/// shared memory, and computes scores and weighted values on tensor cores, flash-attention
/// style (the probabilities rounded to the element type before the values' products), for a
/// batch of up to 65,535 rows × key/value heads (more take the per-token kernel). With fewer
/// query rows its few blocks each stream a whole prefix alone, and the per-token kernel is
/// faster over long prefixes (measured: `docs/benchmarks-llama.md`); [`attention_using`]
/// takes either kernel by name. Its results agree with the per-token kernel's within the
/// element type's rounding, not bit for bit. A value that is not finite in the cache past a token's prefix, but within 64 query
/// rows' longest, makes that token's output NaN here (as in flash attention), not there.
///
/// # Errors
/// [`Error::BadOperands`] for shapes or dtypes that do not fit, more than 16 query heads
/// per key/value head, or on CUDA more than 65,535 tokens a row in one call;
/// [`Error::InvalidArgument`] for a scale that is not finite; candle's error if a launch fails.
pub fn attention(q: &Tensor, cache: &KvCache, pos: &Tensor, scale: f32) -> Result<Tensor> {
    attention_using(q, cache, pos, scale, AttentionKernel::Auto)
}

/// Which CUDA kernel [`attention_using`] runs. On the CPU there is one implementation, and
/// every choice takes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AttentionKernel {
    /// [`attention`]'s rule: the tiled kernel where it applies and the launch has 2,048 or more
    /// query rows (tokens a row × rows × query heads), the per-token kernel elsewhere.
    #[default]
    Auto,
    /// The per-token kernel (the decode steps'), whatever the size: each token's heads read
    /// their prefix again. Its results are the decode steps' bit for bit.
    PerToken,
    /// The tiled kernel, or [`Error::BadOperands`] where it does not apply (see
    /// [`attention`]: bf16 or f16, heads of 64 or 128, at most 16 query heads a key head, 16
    /// or more tokens a row, at most 65,535 rows × key heads).
    Tiled,
}

/// [`attention`] in the kernel `kernel` names (to compare the two, or to keep a prefill's
/// attention bit for bit the decode kernel's).
///
/// # Errors
/// As [`attention`]; with [`AttentionKernel::Tiled`] on CUDA, [`Error::BadOperands`] for a
/// shape or dtype the tiled kernel does not take.
pub fn attention_using(
    q: &Tensor,
    cache: &KvCache,
    pos: &Tensor,
    scale: f32,
    kernel: AttentionKernel,
) -> Result<Tensor> {
    const OP: &str = "attention";
    float(OP, "q", q)?;
    same(OP, "the KV cache", cache.k(), q)?;
    contiguous(OP, "q", q)?;
    let (b, nq, t, dim) = q
        .dims4()
        .map_err(|_| Error::operands(OP, format!("q {:?} must be [batch, q_heads, tokens, head_dim]", q.dims())))?;
    let (nk, s) = (cache.kv_heads(), cache.max_seq());
    if b != cache.batch() || dim != cache.head_dim() || nq % nk != 0 || nq / nk > 16 {
        return Err(Error::operands(
            OP,
            format!(
                "q {:?} does not fit the cache [{}, {nk}, {s}, {}] (same batch and head_dim; q_heads a multiple of kv_heads, at most 16 times)",
                q.dims(),
                cache.batch(),
                cache.head_dim()
            ),
        ));
    }
    rows_u32(OP, "pos", pos, b, q)?;
    fits_u32(OP, "tokens", t)?;
    let where_ = on(OP, q)?;
    attention_limits(OP, &where_, cache, (nq, t), scale, q.dtype())?;
    if kernel == AttentionKernel::Tiled && matches!(where_, On::Cuda) && !tiled_fits(nq / nk, dim, q.dtype(), t, b * nk)
    {
        return Err(Error::operands(
            OP,
            format!(
                "the tiled kernel takes bf16 or f16, heads of 64 or 128, at most 16 query heads a key head, 16 or more tokens a row and at most 65,535 rows x key heads (got {:?}, heads of {dim}, {} a key head, {t} tokens, {} rows x key heads): use AttentionKernel::Auto",
                q.dtype(),
                nq / nk,
                b * nk
            ),
        ));
    }
    Ok(match where_ {
        On::Cuda => gpu::attention(
            q,
            cache.k(),
            cache.v(),
            pos,
            cache.counters(),
            (b, nq, t, dim),
            (nk, s),
            scale,
            None,
            None,
            Launch::Plain,
            match kernel {
                AttentionKernel::Auto => gpu::attention_tiled_pays(nq, t, b),
                AttentionKernel::PerToken => false,
                AttentionKernel::Tiled => true,
            },
        )?,
        On::Cpu => cpu::attention(q, cache.k(), cache.v(), pos, (b, nq, t, dim), (nk, s), scale)?,
    })
}

/// Whether a CUDA launch of `tokens` tokens a row, `g` query heads a key head of `dim` in
/// `dtype`, over `rows_kv` rows × key heads, can take the tiled kernels.
pub(crate) fn tiled_fits(g: usize, dim: usize, dtype: DType, tokens: usize, rows_kv: usize) -> bool {
    gpu::attention_tiled_fits(g, dim, dtype.size_in_bytes(), tokens, rows_kv)
}

/// What [`attention`] and [`qkv_attention`] both refuse, past their operands' shapes: a scale
/// that is not finite, a grid too large, and on CUDA a head size or head ratio the kernel does
/// not take, or more token rows than a CUDA grid's second dimension holds (65,535).
/// [`qkv_attention`] checks them before it writes the cache, so a refused call leaves the
/// cache as it was.
fn attention_limits(
    op: &'static str,
    on: &On,
    cache: &KvCache,
    (q_heads, tokens): (usize, usize),
    scale: f32,
    dtype: DType,
) -> Result<()> {
    let (nk, dim, s) = (cache.kv_heads(), cache.head_dim(), cache.max_seq());
    if !scale.is_finite() {
        return Err(Error::invalid("attention scale", scale, "a finite number"));
    }
    fits_u32(op, "batch * kv_heads", cache.batch() * nk)?;
    let split = gpu::attention_split(q_heads / nk, dim, dtype.size_in_bytes(), tokens, s);
    let takes = dim % 8 == 0 && dim <= 256 && split.is_some();
    if matches!(on, On::Cuda) && !takes {
        return Err(Error::operands(
            op,
            format!("the CUDA kernel takes head_dim a multiple of 8 up to 256 (got {dim})"),
        ));
    }
    if let (On::Cuda, Some((_, head_groups, _))) = (on, split) {
        // The grid's first dimension: a block per row, key head and group of query heads.
        fits_u32(op, "batch * kv_heads * head groups", cache.batch() * nk * head_groups)?;
    }
    if matches!(on, On::Cuda) && tokens > ATT_MAX_TOKENS {
        return Err(Error::operands(
            op,
            format!(
                "the CUDA kernel takes at most {ATT_MAX_TOKENS} tokens a row in one call (got {tokens}; its grid's second dimension): split the call"
            ),
        ));
    }
    Ok(())
}

/// The most token rows one CUDA attention call takes: its grid's second dimension.
const ATT_MAX_TOKENS: usize = 65_535;

/// [`qkv_rope_write`] then [`attention`]: the decode step's attention from its fused QKV
/// projection, returning `[batch, tokens, q_heads * head_dim]`. The operands are those two
/// functions' (`scale` is attention's).
///
/// On CUDA with one token a row (decode) this is one kernel: each attention block forms its
/// own heads' rotated queries from `qkv`, and the blocks whose chunk of the prefix holds the
/// new position form the new key and value and use them; one of them writes them to the
/// cache. That saves `rope_write`'s launch and its round trip through memory (one graph node
/// a layer). The results, the cache and `overflow` are those of the two functions, bit for
/// bit. Otherwise (several tokens a row, the CPU) it runs the two functions.
///
/// # Errors
/// As [`qkv_rope_write`] and [`attention`].
#[allow(clippy::too_many_arguments)]
pub fn qkv_attention(
    qkv: &Tensor,
    bias: Option<&Tensor>,
    rope: &RopeTable,
    pos: &Tensor,
    active: Option<&Tensor>,
    cache: &KvCache,
    overflow: &Tensor,
    q_heads: usize,
    scale: f32,
) -> Result<Tensor> {
    qkv_attention_into(
        qkv,
        bias,
        rope,
        pos,
        active,
        cache,
        overflow,
        q_heads,
        scale,
        None,
        Launch::Plain,
        AttentionKernel::Auto,
    )
}

/// [`qkv_attention`], writing its scratch and output where `into` says when the one-kernel
/// path runs (CUDA, one token a row), and launching that kernel as `launch` says; otherwise
/// `into` and `launch` are not used, and `kernel` is [`attention_using`]'s. Either way the
/// result is the returned tensor.
#[allow(clippy::too_many_arguments)]
pub(crate) fn qkv_attention_into(
    qkv: &Tensor,
    bias: Option<&Tensor>,
    rope: &RopeTable,
    pos: &Tensor,
    active: Option<&Tensor>,
    cache: &KvCache,
    overflow: &Tensor,
    q_heads: usize,
    scale: f32,
    into: Option<&gpu::AttInto<'_>>,
    launch: Launch,
    kernel: AttentionKernel,
) -> Result<Tensor> {
    const OP: &str = "qkv_attention";
    let (tokens, _) = rope_write_checks(OP, qkv, bias, rope, pos, active, cache, overflow, q_heads)?;
    let (b, nk, dim, s) = (cache.batch(), cache.kv_heads(), cache.head_dim(), cache.max_seq());
    // Attention's own checks, before anything is written to the cache.
    if q_heads / nk > 16 {
        return Err(Error::operands(
            OP,
            format!("{q_heads} query heads over {nk} key/value heads: at most 16 a key head"),
        ));
    }
    let where_ = on(OP, qkv)?;
    attention_limits(OP, &where_, cache, (q_heads, tokens), scale, qkv.dtype())?;
    if matches!(where_, On::Cpu) || tokens != 1 {
        let q = qkv_rope_write(qkv, bias, rope, pos, active, cache, overflow, q_heads)?;
        return attention_using(&q, cache, pos, scale, kernel);
    }
    let f = gpu::AttRope {
        qkv,
        bias,
        table: rope.table(),
        active,
        interleaved: rope.layout() == RopeLayout::Interleaved,
        overflow,
    };
    Ok(gpu::attention(
        qkv,
        cache.k(),
        cache.v(),
        pos,
        cache.counters(),
        (b, q_heads, 1, dim),
        (nk, s),
        scale,
        Some(&f),
        into,
        launch,
        false,
    )?)
}

/// RMSNorm with the residual add, in one kernel: returns `(x + delta, rms_norm(x + delta) *
/// weight)` (with no `delta`, `(x, rms_norm(x) * weight)`). `x` and `delta` are `[rows,
/// cols]`; the sum is rounded to the element type before it is normalised.
///
/// # Errors
/// [`Error::BadOperands`] for shapes or dtypes that do not fit; [`Error::InvalidArgument`]
/// for an `eps` that is not finite and positive.
pub fn add_rms_norm(x: &Tensor, delta: Option<&Tensor>, weight: &Tensor, eps: f64) -> Result<(Tensor, Tensor)> {
    const OP: &str = "add_rms_norm";
    float(OP, "x", x)?;
    contiguous(OP, "x", x)?;
    let (_, cols) = x.dims2().map_err(|_| Error::operands(OP, format!("x {:?} must be [rows, cols]", x.dims())))?;
    same(OP, "the weight", weight, x)?;
    if weight.dims() != [cols] {
        return Err(Error::operands(OP, format!("the weight is {:?}, not [{cols}]", weight.dims())));
    }
    if let Some(d) = delta {
        same(OP, "delta", d, x)?;
        if d.dims() != x.dims() {
            return Err(Error::operands(OP, format!("delta {:?} differs from x {:?}", d.dims(), x.dims())));
        }
    }
    if !(eps.is_finite() && eps > 0.0) {
        return Err(Error::invalid("rms_norm_eps", eps, "a finite number above 0"));
    }
    Ok(match on(OP, x)? {
        On::Cuda => gpu::add_rms_norm(x, delta, weight, eps as f32)?,
        On::Cpu => cpu::add_rms_norm(x, delta, weight, eps as f32)?,
    })
}

/// SwiGLU of a fused gate/up projection: `x` is `[rows, 2 * inter]` (gate, then up);
/// returns `silu(gate) * up`, `[rows, inter]`, in one kernel.
///
/// # Errors
/// [`Error::BadOperands`] for an odd last dimension or a dtype the kernels do not take.
pub fn silu_mul(x: &Tensor) -> Result<Tensor> {
    const OP: &str = "silu_mul";
    float(OP, "x", x)?;
    contiguous(OP, "x", x)?;
    let (_, c) = x.dims2().map_err(|_| Error::operands(OP, format!("x {:?} must be [rows, 2 * inter]", x.dims())))?;
    if c % 2 != 0 {
        return Err(Error::operands(
            OP,
            format!("the last dimension {c} is odd: it must hold the gate and the up halves"),
        ));
    }
    Ok(match on(OP, x)? {
        On::Cuda => gpu::silu_mul(x)?,
        On::Cpu => cpu::silu_mul(x)?,
    })
}

/// What [`matvec`] applies to its input before the product.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub enum Prologue<'a> {
    /// Nothing.
    None,
    /// RMSNorm with this weight and epsilon (the norm before a projection).
    RmsNorm(&'a Tensor, f64),
    /// SwiGLU of a fused gate/up input `[rows, 2 * K]` (before the down projection).
    SwiGlu,
}

/// A projection for decode: `y = f(x) . w^T`, plus `residual` when given, with the input
/// transform `f` ([`Prologue`]) and the residual add fused into one kernel.
///
/// `x` is `[rows, K]` (`[rows, 2K]` for [`Prologue::SwiGlu`]), `w` is `[N, K]` (a
/// `Linear`'s weight), `residual` is `[rows, N]`. On CUDA it is one kernel that streams `w`
/// once with 16-byte loads for up to [`matvec_rows`](super::matvec_rows) rows (decode of a
/// batch): a tensor-core kernel for 2 to 8 rows of f16 or bf16 with no prologue or an
/// RMSNorm one, else a matrix-vector kernel for 1 or 2 rows. Otherwise (prefill, larger
/// batches, the CPU) it is the same computation with this crate's transform kernels, a cuBLAS
/// product and an add. The transform's output is rounded to the element type either way.
///
/// # Errors
/// [`Error::BadOperands`] for shapes or dtypes that do not fit.
pub fn matvec(x: &Tensor, w: &Tensor, prologue: Prologue<'_>, residual: Option<&Tensor>) -> Result<Tensor> {
    Ok(matvec_with(x, w, prologue, residual, None, Launch::Plain, None)?.0)
}

/// What the checks of a projection decided: its sizes, and the fused kernel's mode, norm
/// weight and epsilon when a kernel takes it (else the fallback runs).
struct Plan<'a> {
    m: usize,
    n: usize,
    k: usize,
    kernel: Option<(u32, Option<&'a Tensor>, f32)>,
}

/// Rows of `x` that [`matvec`] and [`matvec_swiglu`] run as one fused kernel on CUDA for
/// `dtype` (with no prologue or an RMSNorm one; [`Prologue::SwiGlu`] takes
/// [`MATVEC_ROWS`](super::MATVEC_ROWS)): 8 for f16 and bf16 (the tensor-core kernel from 2
/// rows), 2 otherwise.
pub fn matvec_rows(dtype: DType) -> usize {
    match dtype {
        DType::F16 | DType::BF16 => gpu::MMV_MAX_M,
        _ => gpu::GEMV_MAX_M,
    }
}

/// The checks [`matvec`] and [`matvec_swiglu`] share: `x` against the weight `w` `[N, K]`, the
/// prologue's operands, the residual `[rows, N]`, and whether the fused kernel can run (`glu`:
/// `w` holds gate rows then up rows, and the kernel writes N / 2 outputs).
fn plan<'a>(
    op: &'static str,
    x: &Tensor,
    w: &Tensor,
    prologue: Prologue<'a>,
    residual: Option<&Tensor>,
    glu: bool,
) -> Result<Plan<'a>> {
    float(op, "x", x)?;
    contiguous(op, "x", x)?;
    same(op, "the weight", w, x)?;
    let (m, xk) = x.dims2().map_err(|_| Error::operands(op, format!("x {:?} must be [rows, K]", x.dims())))?;
    let (n, k) = w.dims2().map_err(|_| Error::operands(op, format!("the weight {:?} must be [N, K]", w.dims())))?;
    let want_k = if matches!(prologue, Prologue::SwiGlu) { 2 * k } else { k };
    if xk != want_k {
        return Err(Error::operands(
            op,
            format!("x {:?} does not fit the weight {:?} (x needs {want_k} columns)", x.dims(), w.dims()),
        ));
    }
    if let Prologue::RmsNorm(nw, eps) = prologue {
        same(op, "the norm weight", nw, x)?;
        if nw.dims() != [k] {
            return Err(Error::operands(op, format!("the norm weight is {:?}, not [{k}]", nw.dims())));
        }
        if !(eps.is_finite() && eps > 0.0) {
            return Err(Error::invalid("rms_norm_eps", eps, "a finite number above 0"));
        }
    }
    if let Some(r) = residual {
        same(op, "the residual", r, x)?;
        if r.dims() != [m, n] {
            return Err(Error::operands(op, format!("the residual is {:?}, not [{m}, {n}]", r.dims())));
        }
    }
    fits_u32(op, "N", n)?;
    fits_u32(op, "K", k)?;
    // The matrix-vector kernel stages f(x) in shared memory (48 KB at most); the tensor-core
    // kernel stages it for an RMSNorm (gpu::mmv_launch says how much) and reads x in place
    // otherwise, and takes no SwiGLU prologue.
    // The fused kernels' mode, norm weight and epsilon for this prologue.
    let (mode, nw, eps) = match prologue {
        Prologue::None => (0, None, 1e-6),
        Prologue::RmsNorm(nw, eps) => (1, Some(nw), eps as f32),
        Prologue::SwiGlu => (2, None, 1e-6),
    };
    let mmv = gpu::takes_mmv(m, if glu { n / 2 } else { n }, k, x.dtype(), mode, glu);
    let gemv = !mmv && m <= gpu::GEMV_MAX_M && k % 8 == 0 && m * k * x.dtype().size_in_bytes() <= 48 * 1024;
    let fits = gemv || mmv;
    // The kernel reads x, w and the norm weight 16 bytes at a time: views that start off a
    // 16-byte boundary take the fallback path (a misaligned load would fault on the device).
    let cuda = matches!(on(op, x)?, On::Cuda);
    let aligned = |t: &Tensor| crate::raw::device_address(t).map(|a| a % 16 == 0).unwrap_or(false);
    let nw_aligned = match prologue {
        Prologue::RmsNorm(nw, _) => cuda && aligned(nw),
        _ => true,
    };
    let kernel = (cuda && fits && aligned(x) && aligned(w) && nw_aligned).then_some((mode, nw, eps));
    Ok(Plan { m, n, k, kernel })
}

/// `f(x)` for the fallback path: the prologue as its own kernel.
fn prologue_apart(x: &Tensor, prologue: Prologue<'_>) -> Result<Tensor> {
    Ok(match prologue {
        Prologue::None => x.clone(),
        Prologue::RmsNorm(nw, eps) => add_rms_norm(x, None, nw, eps)?.1,
        Prologue::SwiGlu => silu_mul(x)?,
    })
}

/// SwiGLU's gate/up projection for decode, with the SwiGLU fused in:
/// `silu(f(x) . gate^T) * (f(x) . up^T)`, `[rows, inter]`.
///
/// `w` is the fused gate/up weight `[2 * inter, K]`: the `inter` gate rows, then the `inter`
/// up rows (`Tensor::cat(&[gate, up], 0)`), the layout [`silu_mul`] takes the product of.
/// `x` and `prologue` are as in [`matvec`]. On CUDA with at most
/// [`matvec_rows`](super::matvec_rows) rows it is one kernel: each warp streams gate rows
/// and their up rows, and the SwiGLU is applied as the two sums are written, so the down
/// projection after it reads `inter` values and needs no prologue. Otherwise it is
/// [`matvec`] followed by [`silu_mul`]. Either way the gate and up sums are rounded to the
/// element type before the SwiGLU, as the two ops apart round them.
///
/// # Errors
/// [`Error::BadOperands`] for shapes or dtypes that do not fit, or a weight with an odd number
/// of rows.
pub fn matvec_swiglu(x: &Tensor, w: &Tensor, prologue: Prologue<'_>) -> Result<Tensor> {
    matvec_swiglu_with(x, w, prologue, Launch::Plain, None)
}

/// [`matvec_swiglu`], its kernel launched as `launch` says.
/// With `out`, the kernel writes there when it runs (else `out` is not used); the result is
/// the returned tensor.
pub(crate) fn matvec_swiglu_with(
    x: &Tensor,
    w: &Tensor,
    prologue: Prologue<'_>,
    launch: Launch,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    const OP: &str = "matvec_swiglu";
    let p = plan(OP, x, w, prologue, None, true)?;
    if p.n % 2 != 0 {
        return Err(Error::operands(
            OP,
            format!("the weight has {} rows, an odd number: it must hold the gate rows, then as many up rows", p.n),
        ));
    }
    if let Some((mode, nw, eps)) = p.kernel {
        return Ok(gpu::gemv(x, w, (p.m, p.n / 2, p.k), mode, nw, eps, None, None, true, launch, out)?);
    }
    let y = prologue_apart(x, prologue)?.matmul(&w.t()?)?;
    silu_mul(&y)
}

/// [`matvec`], and with `amax` (i64 `[rows]`, zero before the call) each output row's
/// largest value and first index packed as `key << 32 | !index` when the fused kernel ran
/// (the second value says whether it did). The sampler reads and clears it. The kernel is
/// launched as `launch` says, and with `out` writes there when it runs (else `out` is not
/// used); the result is the returned tensor.
pub(crate) fn matvec_with(
    x: &Tensor,
    w: &Tensor,
    prologue: Prologue<'_>,
    residual: Option<&Tensor>,
    amax: Option<&Tensor>,
    launch: Launch,
    out: Option<&Tensor>,
) -> Result<(Tensor, bool)> {
    const OP: &str = "matvec";
    let p = plan(OP, x, w, prologue, residual, false)?;
    if let Some((mode, nw, eps)) = p.kernel {
        let m = p.m;
        let amax = amax.filter(|a| a.dtype() == DType::I64 && a.dims() == [m] && a.is_contiguous());
        return Ok((
            gpu::gemv(x, w, (m, p.n, p.k), mode, nw, eps, residual, amax, false, launch, out)?,
            amax.is_some(),
        ));
    }
    let y = prologue_apart(x, prologue)?.matmul(&w.t()?)?;
    let y = match residual {
        Some(r) => (y + r)?,
        None => y,
    };
    Ok((y, false))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CUDA-only limits, checked without a GPU: a call past the grid's second dimension
    /// is refused with a message that says to split it; the CPU takes any number of tokens.
    #[test]
    fn attention_limits_refuse_more_tokens_than_a_grid_holds() {
        let cache = KvCache::new(1, 2, 16, 64, DType::F32, &candle_core::Device::Cpu).unwrap();
        let limits =
            |on: On, tokens: usize| attention_limits("attention", &on, &cache, (8, tokens), 0.125, DType::BF16);
        assert!(limits(On::Cuda, ATT_MAX_TOKENS).is_ok());
        let e = limits(On::Cuda, ATT_MAX_TOKENS + 1).unwrap_err().to_string();
        assert!(e.contains("65535 tokens a row") && e.contains("split the call"), "{e}");
        assert!(limits(On::Cpu, ATT_MAX_TOKENS + 1).is_ok());
        // The other limits still hold first: a scale that is not finite, a head size the kernel does not take.
        let e = attention_limits("attention", &On::Cuda, &cache, (8, 1), f32::NAN, DType::BF16).unwrap_err();
        assert!(e.to_string().contains("scale"), "{e}");
    }
}
