//! CUDA launches of the decode kernels (`kernels/decode.cu`): one function per kernel, each
//! checking nothing itself (the public ops in [`super::ops`] check shapes and types first)
//! and building the argument list in the kernel's order.

use candle_core::cuda_backend::cudarc::driver::LaunchConfig;
use candle_core::{CudaDevice, DType, Device, Result, Tensor};

use crate::raw::{self, device_address, Arg};

/// The kernels' PTX (compute_80), built from `kernels/decode.cu` by
/// `scripts/build-candle-ptx.sh`.
pub(crate) const PTX: &str = include_str!("../../kernels/decode.ptx");
const MODULE: &str = "capture_candle_decode";

fn cuda(t: &Tensor) -> Result<CudaDevice> {
    match t.device() {
        Device::Cuda(d) => Ok(d.clone()),
        d => candle_core::bail!("expected a CUDA tensor, got one on {:?}", d.location()),
    }
}

fn suffix(dtype: DType) -> Result<&'static str> {
    Ok(match dtype {
        DType::F32 => "f32",
        DType::F16 => "f16",
        DType::BF16 => "bf16",
        d => candle_core::bail!("capture-candle decode kernels take f32, f16 or bf16, not {d:?}"),
    })
}

fn addr(t: Option<&Tensor>) -> Result<Arg> {
    Ok(Arg::U64(match t {
        Some(t) => device_address(t)?,
        None => 0,
    }))
}

fn go(dev: &CudaDevice, name: &str, dtype: DType, cfg: LaunchConfig, args: &[Arg]) -> Result<()> {
    let f = format!("{name}_{}", suffix(dtype)?);
    raw::launch(dev, MODULE, PTX, &f, cfg, args)
}

/// What `rope_write` is told besides its tensors.
pub(crate) struct RopeWrite<'a> {
    pub src: &'a Tensor,
    pub stride: u32,
    pub col0: u32,
    pub bias: Option<&'a Tensor>,
    pub table: &'a Tensor,
    pub pos: &'a Tensor,
    pub active: Option<&'a Tensor>,
    pub rows: u32,
    pub tokens: u32,
    pub dim: u32,
    pub nq: u32,
    pub nk: u32,
    pub nv: u32,
    pub max_seq: u32,
    pub interleaved: bool,
    pub q_out: Option<&'a Tensor>,
    pub k_cache: Option<&'a Tensor>,
    pub v_cache: Option<&'a Tensor>,
    pub overflow: &'a Tensor,
}

pub(crate) fn rope_write(a: &RopeWrite<'_>) -> Result<()> {
    let dev = cuda(a.src)?;
    let cfg = LaunchConfig {
        grid_dim: (a.rows * a.tokens, a.nq + a.nk + a.nv, 1),
        block_dim: (a.dim / 2, 1, 1),
        shared_mem_bytes: 0,
    };
    let args = [
        addr(Some(a.src))?,
        Arg::U32(a.stride),
        Arg::U32(a.col0),
        addr(a.bias)?,
        addr(Some(a.table))?,
        addr(Some(a.pos))?,
        addr(a.active)?,
        Arg::U32(a.tokens),
        Arg::U32(a.dim),
        Arg::U32(a.nq),
        Arg::U32(a.nk),
        Arg::U32(a.nv),
        Arg::U32(a.max_seq),
        Arg::U32(a.interleaved as u32),
        addr(a.q_out)?,
        addr(a.k_cache)?,
        addr(a.v_cache)?,
        addr(Some(a.overflow))?,
    ];
    go(&dev, "rope_write", a.src.dtype(), cfg, &args)
}

/// Keys per attention chunk (one block each).
pub(crate) const CHUNK: u32 = 128;
/// Threads per attention block.
const ATTN_THREADS: u32 = 128;

/// Decode attention: partial results per chunk into an f32 scratch tensor, then the combine
/// kernel into `[B, T, nq*dim]`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    pos: &Tensor,
    (b, nq, t, dim): (usize, usize, usize, usize),
    (nk, max_seq): (usize, usize),
    scale: f32,
) -> Result<Tensor> {
    let dev = cuda(q)?;
    let nsplit = (max_seq as u32).div_ceil(CHUNK);
    let g = (nq / nk) as u32;
    // Every element the combine kernel reads is written by the partial kernel: it reads only
    // the chunks inside each query's prefix, which are the ones the partial kernel writes.
    let part = raw::uninit((b, nq, t, nsplit as usize, dim + 2), DType::F32, q.device())?;
    let cfg = LaunchConfig {
        grid_dim: ((b * nk) as u32, t as u32, nsplit),
        block_dim: (ATTN_THREADS, 1, 1),
        shared_mem_bytes: g * (dim as u32 + CHUNK) * 4,
    };
    let args = [
        addr(Some(q))?,
        addr(Some(k))?,
        addr(Some(v))?,
        addr(Some(pos))?,
        Arg::U32(t as u32),
        Arg::U32(nq as u32),
        Arg::U32(nk as u32),
        Arg::U32(max_seq as u32),
        Arg::U32(dim as u32),
        Arg::U32(CHUNK),
        Arg::U32(nsplit),
        Arg::F32(scale),
        addr(Some(&part))?,
    ];
    go(&dev, "attn_partial", q.dtype(), cfg, &args)?;
    // The combine kernel writes every element of `out`: one block per (row, head, token),
    // one thread per element of the head.
    let out = raw::uninit((b, t, nq * dim), q.dtype(), q.device())?;
    let cfg =
        LaunchConfig { grid_dim: ((b * nq) as u32, t as u32, 1), block_dim: (dim as u32, 1, 1), shared_mem_bytes: 0 };
    let args = [
        addr(Some(&part))?,
        addr(Some(pos))?,
        Arg::U32(t as u32),
        Arg::U32(nq as u32),
        Arg::U32(max_seq as u32),
        Arg::U32(dim as u32),
        Arg::U32(CHUNK),
        Arg::U32(nsplit),
        addr(Some(&out))?,
    ];
    go(&dev, "attn_combine", q.dtype(), cfg, &args)?;
    Ok(out)
}

/// RMSNorm with the residual add; returns (sum, normalised). Without `delta`, the sum is `x`.
pub(crate) fn add_rms_norm(x: &Tensor, delta: Option<&Tensor>, w: &Tensor, eps: f32) -> Result<(Tensor, Tensor)> {
    let dev = cuda(x)?;
    let (rows, cols) = x.dims2()?;
    // The kernel writes every element of `y` (and of `sum` when `delta` is given): one
    // block per row, its threads striding over the columns.
    let y = raw::uninit((rows, cols), x.dtype(), x.device())?;
    let sum = match delta {
        Some(_) => raw::uninit((rows, cols), x.dtype(), x.device())?,
        None => x.clone(),
    };
    let threads = (cols.div_ceil(4) as u32).next_multiple_of(32).clamp(32, 1024);
    let cfg = LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: 0 };
    let args = [
        addr(Some(x))?,
        addr(delta)?,
        addr(Some(w))?,
        Arg::U32(cols as u32),
        Arg::F32(eps),
        addr(delta.map(|_| &sum))?,
        addr(Some(&y))?,
    ];
    go(&dev, "add_rms_norm", x.dtype(), cfg, &args)?;
    Ok((sum, y))
}

/// `silu(x[:, :I]) * x[:, I:]`.
pub(crate) fn silu_mul(x: &Tensor) -> Result<Tensor> {
    let dev = cuda(x)?;
    let (rows, two_i) = x.dims2()?;
    let inter = two_i / 2;
    let n = (rows * inter) as u64;
    // The grid-stride loop writes every one of the `n` elements.
    let out = raw::uninit((rows, inter), x.dtype(), x.device())?;
    let blocks = (n.div_ceil(256)).min(132 * 16) as u32;
    let cfg = LaunchConfig { grid_dim: (blocks.max(1), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let args = [addr(Some(x))?, Arg::U32(inter as u32), Arg::U64(n), addr(Some(&out))?];
    go(&dev, "silu_mul", x.dtype(), cfg, &args)?;
    Ok(out)
}

/// One token per row of `logits` into `tokens`, advancing `pos` and the generators.
pub(crate) fn sample(
    logits: &Tensor,
    params: &Tensor,
    rng: &Tensor,
    tokens: &Tensor,
    pos: &Tensor,
    active: Option<&Tensor>,
    advance: u32,
) -> Result<()> {
    let dev = cuda(logits)?;
    let (rows, vocab) = logits.dims2()?;
    let cfg = LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
    let args = [
        addr(Some(logits))?,
        Arg::U32(vocab as u32),
        addr(Some(params))?,
        addr(Some(rng))?,
        addr(Some(tokens))?,
        addr(Some(pos))?,
        addr(active)?,
        Arg::U32(advance),
    ];
    go(&dev, "sample", logits.dtype(), cfg, &args)
}
