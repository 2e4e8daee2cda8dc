//! CUDA launches of the decode kernels (`kernels/decode.cu`): one function per kernel, each
//! checking nothing itself (the public ops in [`super::ops`] check shapes and types first)
//! and building the argument list in the kernel's order.

use candle_core::{CudaDevice, DType, Device, Result, Tensor};
use cudarc::driver::LaunchConfig;

use crate::raw::{self, device_address, Arg};

use super::code::{self, DECODE, DECODE_PDL};

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
    raw::launch(dev, &code::function(dev, &DECODE, &f)?, cfg, args, false)
}

/// How a kernel that can take part in programmatic dependent launch is launched.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Launch {
    /// A plain launch: the kernel starts when its predecessor on the stream has finished.
    #[default]
    Plain,
    /// Where the GPU has it (compute capability 9.0 and later), the kernel of
    /// `decode_pdl.ptx` with the programmatic-serialization attribute: it starts while its
    /// predecessor drains, issues its first loads of what no other kernel of the step writes
    /// (weights, cached keys and values), and waits for it. Elsewhere, plain.
    Programmatic,
}

/// `go` for a kernel that `decode_pdl.ptx` also holds (the fused attention, gemv, mmv),
/// launched as `launch` says.
fn go_as(dev: &CudaDevice, name: &str, dtype: DType, cfg: LaunchConfig, args: &[Arg], launch: Launch) -> Result<()> {
    if launch == Launch::Programmatic && raw::programmatic_launch_supported(dev)? {
        let f = format!("{name}_{}", suffix(dtype)?);
        return raw::launch(dev, &code::function(dev, &DECODE_PDL, &f)?, cfg, args, true);
    }
    go(dev, name, dtype, cfg, args)
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

/// Threads a `rope_write` block aims at: `dim / 2` a head, as many heads as fit. A block a
/// head (32 threads at heads of 64) made Llama-3.2-1B's prefill launch 48 blocks a token:
/// measured on an H200 (run 196, docs/gpu-runs/2026-12-02c-issue32/), a prefill of 8 rows of
/// 16 to 2,000 tokens took 60.9 and 61.1 ms (medians, alternated twice) against 63.9 and 64.3
/// with a block a head (158.0 and 158.2 against 164.5 and 165.4 at 32 rows), and its
/// `rope_write`s 2.5 ms by Nsight
/// Compute (6.5 ms with a block a head, run 191).
const ROPE_THREADS: u32 = 256;

pub(crate) fn rope_write(a: &RopeWrite<'_>) -> Result<()> {
    let dev = cuda(a.src)?;
    let heads = a.nq + a.nk + a.nv;
    let per = (ROPE_THREADS / (a.dim / 2).max(1)).clamp(1, heads.max(1));
    let cfg = LaunchConfig {
        grid_dim: (a.rows * a.tokens, heads.div_ceil(per), 1),
        block_dim: (a.dim / 2, per, 1),
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

/// Threads per attention block: `ATT_WARPS` (4) warps in the kernel.
const ATT_THREADS: u32 = 128;
/// Query heads an attention block takes (`ATT_HEADS`): a key head's `g` query heads are
/// `ceil(g / 4)` head groups, each its own blocks.
const ATT_HEADS: usize = 4;
/// Tokens a row per call that a cache's own counters cover: a decode step's one, and a
/// prefill's rounds in the per-token kernel up to 256 tokens a row; a call of more tokens a
/// row zeroes counters of its own (`attention`). A round of more than 256 tokens a row takes
/// the tiled kernels, which use none, wherever they take the shapes (bf16 and f16, heads of 64
/// or 128) and the launch has 2,048 or more query rows (or, from `Model::prefill_rows`, a
/// short prefix: `ATT_TILED_SHORT_KEYS_D64`).
pub(crate) const COUNTER_TOKENS: usize = 256;
/// Most chunks the prefix is cut into (the grid's depth; `ATT_MAX_SPLITS`: the combining
/// block holds a weight per chunk and head in shared memory).
const ATT_MAX_SPLITS: usize = 64;
/// Blocks the grid aims at for a prefix as long as the cache, at most: one wave of an H100's
/// 132 multiprocessors holding 4 attention blocks each (`attention_d64`/`d128` in 16-bit
/// types; the d256 and f32 kernels hold 2, so two waves). Rounded down: fewer, longer chunks.
///
/// Measured on an H100 (bench/attention_probe.cu, every split count; docs/gpu-runs/
/// 2026-11-26b-issue32/run18-attention-splits.txt and run19), µs a layer against the rule
/// before (about 1,056 blocks): 51.7 against 57.2 at batch 8, position 8,000; 51.1 against
/// 56.1 at batch 32, position 2,000; 179.9 against 185.0 at batch 32, position 8,000; and
/// 15.0 against 16.0 at batch 1, position 8,000 (with [`ATT_MOST_SPLITS`]). Level elsewhere.
/// Past one wave the last blocks run alone, and each chunk's partials and their combination
/// cost more than the parallelism gains.
const ATT_BLOCKS: usize = 528;
/// Blocks the grid aims at for the fused 16-bit kernels with heads of 128
/// (`attention_rope_d128_{bf16,f16}`, which hold 3 a multiprocessor: at 4 they spilled; see
/// the entry points in kernels/decode.cu), and for the plain ones at that width, which follow
/// the same rule so that the two give the same bits: one wave of 3 on 132 multiprocessors.
/// Launches of at most [`ATT_AHEAD_MAX_BLOCKS`] blocks a chunk take the kernels that load
/// ahead, on [`ATT_AHEAD_BLOCKS`], instead.
///
/// Measured on an H200 at Llama-3.1-8B's shape (32 layers, 8 key heads of 128; `llama_bench
/// --config llama-3.1-8b`, docs/gpu-runs/2026-11-29b-d128/, run 153), ms a fused step against
/// 4 blocks a multiprocessor (spilling) on [`ATT_BLOCKS`]: 5.01-5.03 against 5.17-5.18 at batch
/// 1, position 8,000; 6.91 against 7.15 at batch 8, 8,000; 6.59-6.61 against 6.95-6.96 at batch
/// 32, 2,000; 12.33-12.36 against 13.64-13.69 at batch 32, 8,000. The same kernels on grids of
/// 528 (1.3 waves) were slower at batch 32 and at batch 8, 2,000 (run 152); the spilling ones
/// on 396 slower than on 528 at batch 8 and at batch 32, 8,000; on 264, faster alone at batch
/// 8 but slower in the step.
const ATT_D128_BLOCKS: usize = 396;
/// Most chunks a prefix is cut into (the grid's depth; at most `ATT_MAX_SPLITS`). At batch
/// 1, position 8,000 (8 key heads) 16 chunks of 500 keys took 14.8 µs, 33 of 250 15.7 and 64
/// of 125 19.8 (same runs): combining more partials costs more than it spreads.
const ATT_MOST_SPLITS: usize = 16;
const _: () = assert!(ATT_MOST_SPLITS <= ATT_MAX_SPLITS, "the kernel combines at most ATT_MAX_SPLITS chunks");
/// Most chunks for 16-bit heads of 128: at batch 1 and 8 key heads, 16 chunks are 128 blocks
/// of 4 warps, one a multiprocessor. With 32 (and the kernels that load ahead,
/// [`ATT_AHEAD_MAX_BLOCKS`]) Llama-3.1-8B's fused step at batch 1, position 8,000 took
/// 4.799-4.803 ms against 5.008-5.016 on an H200 (run 157; 32 chunks with the 3-a-multiprocessor
/// kernel: 4.874-4.884).
const ATT_MOST_SPLITS_D128: usize = 32;
const _: () = assert!(ATT_MOST_SPLITS_D128 <= ATT_MAX_SPLITS, "the kernel combines at most ATT_MAX_SPLITS chunks");
/// The most blocks a chunk (rows x key heads x head groups x tokens) at which 16-bit heads of
/// 128 take the fused kernels that load the next group ahead (`attention_rope_d128pf_*`, 2 a
/// multiprocessor), on grids of [`ATT_AHEAD_BLOCKS`]: decode batches of up to 16 rows at 8 key
/// heads. Measured on an H200 at Llama-3.1-8B's shape, ms a fused step against the
/// 3-a-multiprocessor kernels on [`ATT_D128_BLOCKS`]: batch 8, 6.812-6.825 against 6.900-6.903
/// at position 8,000 and 5.237-5.244 against 5.322-5.332 at 2,000 (run 157); batch 16 (128
/// blocks a chunk: 2 chunks against 3), 8.786-8.813 against 8.834-8.850 at 8,000 and
/// 5.674-5.676 against 5.694-5.698 at 2,000, level at 64 (run 160, two rounds each); batch 32
/// (256 blocks a chunk), 12.853-12.875 against 12.327-12.363 at 8,000 (run 153): slower.
const ATT_AHEAD_MAX_BLOCKS: usize = 128;
/// Blocks the grid aims at for the kernels that load ahead (2 a multiprocessor, 132
/// multiprocessors).
const ATT_AHEAD_BLOCKS: usize = 264;
/// Threads per block of the 8-warp kernels (`attention_d64w8`, `attention_rope_d64w8`:
/// `ATT_WARPS_WIDE`).
const ATT_WIDE_THREADS: u32 = 256;
/// Blocks the 8-warp kernels' grid aims at (as [`ATT_BLOCKS`] for the 4-warp ones): two of
/// them a multiprocessor (128 registers a thread) on an H100's 132, one wave, with as many
/// warps as 528 blocks of 4.
///
/// Measured on an H200 (bench/attention_chain_probe.cu, docs/gpu-runs/2026-11-28c-issue32/):
/// - in the batch-1 chain of 16 layers (QKV, RoPE + attention, O, gate/up, down under PDL; 128
///   attention blocks either way) the layer took 42.6 against 43.3 µs at position 64, 46.2
///   against 48.7 at 2,000 and 50.9 against 53.7 at 8,000 (run 90): each warp takes half as
///   many groups of keys;
/// - attention alone at batch 8, on 512 blocks (two waves of the 8-warp kernel), was slower from
///   position 2,000: 17.0 against 14.5 µs (run 90); on 256 blocks (half as many chunks) it was
///   faster everywhere: 3.10 against 3.70 at position 64, 13.45 against 14.5 at 2,000, 37.1
///   against 38.1–38.3 at 8,000; batch 32 on 256 blocks (one chunk): 4.43 against 4.66, 34.6
///   against 37.4, 130.2 against 132.4 (run 96).
///
/// (These figures predate the kernels' tensor-core values: where a block's chunk has at most
/// 1,024 keys they run the probabilities-times-values products on tensor cores, with the
/// probabilities rounded to the element type; see `ATT_TCV_MAX_KEYS` in kernels/decode.cu.)
const ATT_WIDE_BLOCKS: usize = 264;

/// Whether an attention launch with `per_chunk` blocks a chunk (rows x key heads x head
/// groups x tokens) at width `width` takes the 8-warp kernel: 16-bit types (`elem` bytes),
/// heads of at most 64, and `per_chunk` at most [`ATT_WIDE_BLOCKS`] (every decode batch up to
/// 32 at Llama-3.2-1B's shape; not a prefill chunk of 256 tokens). Its grid then aims at
/// [`ATT_WIDE_BLOCKS`] ([`attention_grid`]). The fused and the plain kernels follow the same
/// rule, so that the two give the same bits.
fn attention_wide(width: usize, elem: usize, per_chunk: usize) -> bool {
    width == 64 && elem == 2 && per_chunk <= ATT_WIDE_BLOCKS
}
/// Whether a launch at width `width` in `elem`-byte elements with `t` tokens a row takes the
/// rules of the 16-bit decode kernels for heads of 128 ([`ATT_D128_BLOCKS`],
/// [`ATT_MOST_SPLITS_D128`], [`ATT_AHEAD_MAX_BLOCKS`]): one token a row, as the fused kernels
/// (`attention_rope_d128`/`d128pf`) take, and their plain peers (`attention_d128`), which
/// must give the same bits. Plain launches of several tokens a row (a prefill chunk, a draft
/// to verify) keep [`ATT_BLOCKS`] and [`ATT_MOST_SPLITS`], the rules they had before the
/// d128 kernels had their own; those were measured on decode steps only.
fn attention_d128_16bit(width: usize, elem: usize, t: usize) -> bool {
    width == 128 && elem == 2 && t == 1
}
/// Whether a fused launch with `per_chunk` blocks a chunk takes the d128 kernels that load
/// ahead ([`ATT_AHEAD_MAX_BLOCKS`]): 16-bit heads of 128, one token a row
/// ([`attention_d128_16bit`]). The plain kernels take the same chunks ([`attention_aim`]), so
/// that fused and plain give the same bits.
fn attention_ahead(width: usize, elem: usize, t: usize, per_chunk: usize) -> bool {
    attention_d128_16bit(width, elem, t) && per_chunk <= ATT_AHEAD_MAX_BLOCKS
}
/// The shortest chunk, in keys (the kernel rounds chunks up to a multiple of 64: 16 keys for
/// each of its 4 warps; the 8-warp kernels leave half their warps idle on a chunk of 64).
/// Against 128 keys (same sweep), 256 saves 4.0 µs a layer at batch 1, position 8,000 and 3.1
/// at batch 8, position 2,000, and is level elsewhere: a chunk's fixed cost (its partial sums
/// and their combination) over fewer, longer chunks.
const ATT_MIN_CHUNK: usize = 256;

/// The attention kernel for `g` query heads per key head of `dim` elements of `elem` bytes
/// over a cache of `max_seq`, `t` tokens a row: its width (the entry point
/// `attention_d{64,128,256}`), the head groups (blocks per key head) and the most chunks the
/// prefix may be cut into ([`ATT_MOST_SPLITS`], [`ATT_MOST_SPLITS_D128`] where
/// [`attention_d128_16bit`]); `None` for a shape it does not take (`dim` not a multiple of 8
/// or above 256, `g` 0 or above 16). Every launch fits the static shared memory (at most about
/// 31 KB, `attention_rope_d256_f32`; 25 KB without the fused input stage); there is no
/// dynamic part.
pub(crate) fn attention_split(
    g: usize,
    dim: usize,
    elem: usize,
    t: usize,
    max_seq: usize,
) -> Option<(usize, usize, usize)> {
    if g == 0 || g > 16 || dim == 0 || !dim.is_multiple_of(8) || dim > 256 {
        return None;
    }
    let width = if dim <= 64 {
        64
    } else if dim <= 128 {
        128
    } else {
        256
    };
    let cap = if attention_d128_16bit(width, elem, t) { ATT_MOST_SPLITS_D128 } else { ATT_MOST_SPLITS };
    let most = cap.min(max_seq.div_ceil(ATT_MIN_CHUNK)).max(1);
    Some((width, g.div_ceil(ATT_HEADS), most))
}

/// The blocks a launch's grid aims at ([`attention_grid`]) for `per_chunk` blocks a chunk at
/// width `width` in `elem`-byte elements, `t` tokens a row: [`ATT_WIDE_BLOCKS`] for the 8-warp
/// kernels ([`attention_wide`]), [`ATT_AHEAD_BLOCKS`] for the d128 kernels that load ahead
/// ([`attention_ahead`]), [`ATT_D128_BLOCKS`] for the other launches of
/// [`attention_d128_16bit`], else [`ATT_BLOCKS`] (the most: the scratch is sized for it).
fn attention_aim(width: usize, elem: usize, t: usize, per_chunk: usize) -> usize {
    if attention_wide(width, elem, per_chunk) {
        ATT_WIDE_BLOCKS
    } else if attention_ahead(width, elem, t, per_chunk) {
        ATT_AHEAD_BLOCKS
    } else if attention_d128_16bit(width, elem, t) {
        ATT_D128_BLOCKS
    } else {
        ATT_BLOCKS
    }
}

/// The grid's depth (chunks at most) and longest chunk for `blocks` blocks per chunk (rows x
/// key heads x head groups x tokens): as many chunks as keep the grid within `aim` blocks
/// ([`attention_aim`]; never fewer than 1 chunk) at a prefix of `max_seq` (at least 1), at
/// most `most`; the kernel sizes the chunks from the actual length on the device, so a shorter
/// prefix runs fewer of them.
fn attention_grid(blocks: usize, most: usize, max_seq: usize, aim: usize) -> (usize, usize) {
    let nsplit = (aim / blocks.max(1)).clamp(1, most);
    (nsplit, max_seq.div_ceil(nsplit))
}

/// The input stage `attention` takes over with `fuse` (the `attention_rope_*` entry points,
/// one token a row): `rope_write`'s operands but the queries, which the kernel forms itself.
pub(crate) struct AttRope<'a> {
    pub qkv: &'a Tensor,
    pub bias: Option<&'a Tensor>,
    pub table: &'a Tensor,
    pub active: Option<&'a Tensor>,
    pub interleaved: bool,
    pub overflow: &'a Tensor,
}

/// A tensor the caller allocated for a kernel to write (before the step's kernels, so that
/// no allocation node sits between two of them in a capture): contiguous, of `dtype`, on a
/// 16-byte boundary, of `len` elements (`at_least`: `len` or more).
fn given(op: &str, what: &str, t: &Tensor, dtype: DType, len: usize, at_least: bool) -> Result<()> {
    let size_ok = if at_least { t.elem_count() >= len } else { t.elem_count() == len };
    if t.dtype() != dtype || !size_ok || device_address(t)? % 16 != 0 {
        candle_core::bail!(
            "{op}: the {what} must be a contiguous {dtype:?} tensor of {}{len} elements on a 16-byte boundary (got {:?} {:?})",
            if at_least { "at least " } else { "" },
            t.dtype(),
            t.shape()
        );
    }
    Ok(())
}

/// An output the caller allocated ([`given`]), of exactly `len` elements: the kernel writes
/// every one of them.
fn written_in_full(op: &str, t: &Tensor, dtype: DType, len: usize) -> Result<()> {
    given(op, "output", t, dtype, len, false)
}

/// Elements of the f32 scratch `attention` needs for these sizes (its partial results per
/// chunk), or `None` for a shape it does not take: for the chunks of a grid of [`ATT_BLOCKS`]
/// with 16-bit elements' most chunks, which are at least as many as any launch's (whichever
/// kernel and type the launch takes, this is enough).
pub(crate) fn attention_scratch_len(
    (b, nq, t, dim): (usize, usize, usize, usize),
    (nk, max_seq): (usize, usize),
) -> Option<usize> {
    // 16-bit elements: the most chunks any type takes.
    let (_, nhg, most) = attention_split(nq / nk.max(1), dim, 2, t, max_seq)?;
    let (nsplit, _) = attention_grid(b * nk * nhg * t, most, max_seq, ATT_BLOCKS);
    Some(b * nq * t * nsplit * (dim + 4))
}

/// Where `attention` writes, when the caller allocated it: the f32 scratch (at least
/// [`attention_scratch_len`] elements) and the output (`[B, T, nq*dim]`'s elements).
pub(crate) struct AttInto<'a> {
    pub scratch: &'a Tensor,
    pub out: &'a Tensor,
}

/// Query rows (a key head's query heads of consecutive tokens) a block of the tiled kernels
/// takes (`ATT_TILE_ROWS` in kernels/decode.cu: 16 a warp), and its threads
/// (`ATT_TILE_THREADS`: 4 warps).
///
/// Measured against 32 rows a warp (two row tiles of 16 sharing each fragment of the keys
/// and values; 128 rows a block, 252 registers a thread against 149 by ptxas, so 2 blocks a
/// multiprocessor against 3) for heads of 64 on an H200, alternated twice (run 195,
/// docs/gpu-runs/2026-12-02c-issue32/): the 32-row warps' prefill was level at batch 8 with
/// prompts up to 1,024 tokens and 1-2.4% slower in the other cells (batches 8 and 32, up to
/// 1,024 and 2,000), the ranges overlapping.
const ATT_TILE_ROWS: usize = 64;
const ATT_TILE_THREADS: u32 = 128;
/// The fewest tokens a row for which [`attention`] takes the tiled kernels (when asked to and
/// [`attention_tiled_fits`]): a prefill's rounds, not a decode step or a short draft.
pub(crate) const ATT_TILED_MIN_TOKENS: usize = 16;

/// Whether a launch of `t` tokens a row, `g` query heads a key head of `dim` in `elem`-byte
/// elements, over `b * nk` (row, key head) pairs, fits the tiled kernels
/// (`attention_tiled_d{64,128}_*`): 16-bit types, heads of exactly 64 or 128, at least
/// [`ATT_TILED_MIN_TOKENS`] tokens a row, and a grid whose second dimension holds `b * nk`.
pub(crate) fn attention_tiled_fits(g: usize, dim: usize, elem: usize, t: usize, bnk: usize) -> bool {
    elem == 2 && (dim == 64 || dim == 128) && (1..=16).contains(&g) && t >= ATT_TILED_MIN_TOKENS && bnk <= 65_535
}

/// The fewest query rows (tokens a row × rows × query heads) a launch needs for the default
/// rule to take the tiled kernels. Each tiled block streams its keys in one serial chain, so
/// with few blocks a long prefix costs its whole length in one block; the per-token kernel
/// spreads the same keys over blocks per token and per chunk. Measured on an H200 (run 200,
/// `llama_bench --attention`, eager launches): at Llama-3.2-1B's heads (32 over 8, of 64)
/// the per-token kernel was faster at 512 and 1,024 query rows over prefixes of 2,048 and
/// 8,000 (20.2 against 29.9 µs, 51.1 against 99.5; 28.0 against 30.1, 88.1 against 99.6), the
/// tiled one from 2,048 (48.3 against 30.2 µs, 1.6×, at 64 tokens over 2,048); at
/// Llama-3.1-8B's (32 over 8, of 128) the per-token one at 512 (34.8 against 68.5 µs) and the
/// tiled one at 2,048 (78.8 against 66.1).
pub(crate) const ATT_TILED_MIN_QUERY_ROWS: usize = 2048;

/// At heads of 64, the most keys (a row's prefix and its round's tokens, the longest row's) for
/// which a caller that knows its rows' positions on the host (`Model::prefill_rows`) takes the
/// tiled kernels below [`ATT_TILED_MIN_QUERY_ROWS`]: measured on an H200 (run 203, eager), 16
/// to 48 tokens at Llama-3.2-1B's heads took 14.5-17.6 µs tiled against 18.8-22.2 per-token
/// from 80 to 1,072 keys (1.16-1.36×), and 24.0-24.2 against 20.6-23.0 at 1,552 and 1,568 (run
/// 204's repeat at 528 keys: level). At heads of 128 (Llama-3.1-8B's) the per-token kernel was
/// already ahead at 272 keys (13.3 against 14.1 µs), so there is no such bound.
pub(crate) const ATT_TILED_SHORT_KEYS_D64: usize = 1024;

/// Whether a launch whose longest row reads `keys` keys of `dim` takes the tiled kernels
/// whatever its query rows (see [`ATT_TILED_SHORT_KEYS_D64`]; where [`attention_tiled_fits`]).
pub(crate) fn attention_tiled_short(dim: usize, keys: usize) -> bool {
    dim == 64 && keys <= ATT_TILED_SHORT_KEYS_D64
}

/// Whether the default rule takes the tiled kernels for `t` tokens a row over `b` rows of `nq`
/// query heads (where [`attention_tiled_fits`]).
pub(crate) fn attention_tiled_pays(nq: usize, t: usize, b: usize) -> bool {
    t.saturating_mul(b).saturating_mul(nq) >= ATT_TILED_MIN_QUERY_ROWS
}

/// Attention of many tokens a row in the tiled kernels: a block takes 64 query rows of one
/// (row, key head) and streams the keys and values of their longest prefix once, through
/// shared memory, on tensor cores (kernels/decode.cu, `attention_tiled`). The same operands
/// and output as [`attention`]'s; no scratch, no counters. The caller checks
/// [`attention_tiled_fits`] and the operands' alignment.
fn attention_tiled(
    dev: &CudaDevice,
    q: &Tensor,
    (k, v, pos): (&Tensor, &Tensor, &Tensor),
    (b, nq, t, dim): (usize, usize, usize, usize),
    (nk, max_seq): (usize, usize),
    scale: f32,
) -> Result<Tensor> {
    let row_tiles = (t * (nq / nk)).div_ceil(ATT_TILE_ROWS);
    let (Ok(gx), Ok(gy)) = (u32::try_from(row_tiles), u32::try_from(b * nk)) else {
        candle_core::bail!("attention: {t} tokens x {nq} heads over {b} rows do not fit a grid");
    };
    // Every (row, token, head, element) is written: each block's 64 query rows in full.
    let out = raw::uninit((b, t, nq * dim), q.dtype(), q.device())?;
    let cfg = LaunchConfig { grid_dim: (gx, gy, 1), block_dim: (ATT_TILE_THREADS, 1, 1), shared_mem_bytes: 0 };
    let args = [
        addr(Some(q))?,
        addr(Some(k))?,
        addr(Some(v))?,
        addr(Some(pos))?,
        Arg::U32(t as u32),
        Arg::U32(nq as u32),
        Arg::U32(nk as u32),
        Arg::U32(max_seq as u32),
        Arg::F32(scale),
        addr(Some(&out))?,
    ];
    go(dev, &format!("attention_tiled_d{dim}"), q.dtype(), cfg, &args)?;
    Ok(out)
}

/// Decode attention in one kernel: partial results per chunk into an f32 scratch tensor, and
/// the last block of each (row, key head, token) combines them into `[B, T, nq*dim]`. With
/// `fuse` (t = 1), `q` is not read: the kernel forms the queries from `fuse.qkv` and writes the
/// new keys and values to `k` and `v`, as `rope_write` would before it. With `tiled`, a launch
/// without `fuse` or `into` that [`attention_tiled_fits`] runs in the tiled kernels instead
/// ([`attention_tiled`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    pos: &Tensor,
    counters: &Tensor,
    (b, nq, t, dim): (usize, usize, usize, usize),
    (nk, max_seq): (usize, usize),
    scale: f32,
    fuse: Option<&AttRope<'_>>,
    into: Option<&AttInto<'_>>,
    launch: Launch,
    tiled: bool,
) -> Result<Tensor> {
    let dev = cuda(q)?;
    if fuse.is_some() && t != 1 {
        candle_core::bail!("attention: the fused input stage takes one token a row (got {t})");
    }
    // The fused kernel does not read q (it reads qkv an element at a time).
    let reads_q = fuse.is_none();
    for (what, x) in [("q", q), ("the keys", k), ("the values", v)] {
        if (what != "q" || reads_q) && device_address(x)? % 16 != 0 {
            candle_core::bail!("attention: {what} must start on a 16-byte boundary (a view at an odd offset?)");
        }
    }
    let g = nq / nk;
    let elem = q.dtype().size_in_bytes();
    if tiled && fuse.is_none() && into.is_none() && attention_tiled_fits(g, dim, elem, t, b * nk) {
        return attention_tiled(&dev, q, (k, v, pos), (b, nq, t, dim), (nk, max_seq), scale);
    }
    let Some((width, nhg, most)) = attention_split(g, dim, elem, t, max_seq) else {
        candle_core::bail!("attention: {g} query heads per key head of {dim} are not a shape the kernel takes");
    };
    let Ok(grid_x) = u32::try_from(b * nk * nhg) else {
        candle_core::bail!("attention: {b} rows x {nk} key heads x {nhg} head groups do not fit a grid");
    };
    let per_chunk = b * nk * nhg * t;
    let wide = attention_wide(width, elem, per_chunk);
    let (nsplit, max_chunk) = attention_grid(per_chunk, most, max_seq, attention_aim(width, elem, t, per_chunk));
    // The counters the last block of each (row, head, token) finds: the cache's own (kept
    // at 0 by the kernel), or fresh zeros for a call with more token rows than they cover.
    let fresh;
    let counters = if counters.elem_count() >= b * nk * t {
        counters
    } else {
        fresh = Tensor::zeros(b * nk * t, DType::U32, q.device())?;
        &fresh
    };
    // The combining block reads only the chunks inside each query's prefix, which are the
    // ones written; `out` is written in full (every row, head, token and element: by the
    // one block of a prefix in one chunk, else by the combining block). Partials: dim
    // values, then the chunk's max and sum, 2 floats of padding (16-byte rows).
    let part_len = b * nq * t * nsplit * (dim + 4);
    let (part, out) = match into {
        Some(i) => {
            given("attention", "scratch", i.scratch, DType::F32, part_len, true)?;
            written_in_full("attention", i.out, q.dtype(), b * t * nq * dim)?;
            (i.scratch.clone(), i.out.reshape((b, t, nq * dim))?)
        }
        None => (
            raw::uninit((b, nq, t, nsplit, dim + 4), DType::F32, q.device())?,
            raw::uninit((b, t, nq * dim), q.dtype(), q.device())?,
        ),
    };
    let cfg = LaunchConfig {
        grid_dim: (grid_x, t as u32, nsplit as u32),
        block_dim: (if wide { ATT_WIDE_THREADS } else { ATT_THREADS }, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut args = vec![
        addr(Some(q))?,
        addr(Some(k))?,
        addr(Some(v))?,
        addr(Some(pos))?,
        Arg::U32(t as u32),
        Arg::U32(nq as u32),
        Arg::U32(nk as u32),
        Arg::U32(max_seq as u32),
        Arg::U32(dim as u32),
        Arg::U32(nsplit as u32),
        Arg::U32(max_chunk as u32),
        Arg::U32(ATT_MIN_CHUNK as u32),
        Arg::F32(scale),
        addr(Some(&part))?,
        addr(Some(counters))?,
        addr(Some(&out))?,
    ];
    // Only the fused kernels have PDL hooks.
    let launch = if fuse.is_some() { launch } else { Launch::Plain };
    let w8 = if wide { "w8" } else { "" };
    let name = match fuse {
        None => format!("attention_d{width}{w8}"),
        Some(f) => {
            args.extend([
                addr(Some(f.qkv))?,
                addr(f.bias)?,
                addr(Some(f.table))?,
                addr(f.active)?,
                Arg::U32(f.interleaved as u32),
                addr(Some(k))?,
                addr(Some(v))?,
                addr(Some(f.overflow))?,
            ]);
            let ahead = if attention_ahead(width, elem, t, per_chunk) { "pf" } else { "" };
            format!("attention_rope_d{width}{w8}{ahead}")
        }
    };
    go_as(&dev, &name, q.dtype(), cfg, &args, launch)?;
    Ok(out)
}

/// RMSNorm with the residual add; returns (sum, normalised). Without `delta`, the sum is `x`.
pub(crate) fn add_rms_norm(x: &Tensor, delta: Option<&Tensor>, w: &Tensor, eps: f32) -> Result<(Tensor, Tensor)> {
    let dev = cuda(x)?;
    let (rows, cols) = x.dims2()?;
    if rows > i32::MAX as usize || cols > i32::MAX as usize {
        candle_core::bail!("add_rms_norm: [{rows}, {cols}] is above the kernel's 2^31 limit");
    }
    // The kernel writes every element of `y` (and of `sum` when `delta` is given): one
    // block per row, a thread for each 16-byte word of the row (it holds up to 4 words, and
    // strides over single elements where the row is not in whole aligned words).
    let y = raw::uninit((rows, cols), x.dtype(), x.device())?;
    let sum = match delta {
        Some(_) => raw::uninit((rows, cols), x.dtype(), x.device())?,
        None => x.clone(),
    };
    if rows == 0 {
        return Ok((sum, y)); // nothing to launch: a grid of no blocks is not a launch
    }
    let words = cols.div_ceil(16 / x.dtype().size_in_bytes());
    let threads = (words as u32).next_multiple_of(32).clamp(32, 1024);
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

/// Rows of `x` the GEMV kernel takes (`GEMV_MAX_M`).
pub(crate) const GEMV_MAX_M: usize = 2;
/// Multiprocessors the grid is sized for (an H100's 132). A GPU with more runs the grid in
/// one wave all the same; with fewer, the blocks past its capacity wait for a free slot.
const GEMV_SMS: usize = 132;
/// Threads a multiprocessor holds at the kernel's register budget (64 registers a thread:
/// `__launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS)` = (512, 2) in the kernel).
const GEMV_THREADS_PER_SM: usize = 1024;

/// The GEMV's launch for `n` outputs over `k` inputs, of `elem` bytes an element (`glu`: the
/// gate/up kernel, whose warps stream a gate row and an up row, `2k` a task): threads a
/// block, the warps that share each row (`ks`), and the grid.
///
/// - 512 threads a block for long rows (k >= 4096: the down projection), else 256: each block
///   stages f(x) once, so fewer, larger blocks spend less on the staging.
/// - `ks`: warps per row, doubled while there are fewer than 3,072 row tasks (about 23 warps a
///   multiprocessor) and each slice keeps at least 4 loads a lane.
/// - The grid: every group of rows its own block, up to what the GPU holds at once; past that
///   the blocks stride.
///
/// Measured on an H100 against other block sizes and `ks` (bench/gemv_probe.cu, docs/benchmarks-llama.md).
pub(crate) fn gemv_launch(n: usize, k: usize, elem: usize, glu: bool) -> (u32, u32, u32) {
    let threads = if k >= 4096 { 512 } else { 256 };
    let row = if glu { 2 * k } else { k };
    let steps = row.div_ceil(32 * (16 / elem));
    let mut ks = 1usize;
    while ks < 8 && n * ks < 3072 && steps / (ks * 2) >= 4 {
        ks *= 2;
    }
    let rows = threads / 32 / ks;
    let grid = n.div_ceil(rows).clamp(1, GEMV_SMS * (GEMV_THREADS_PER_SM / threads));
    (threads as u32, ks as u32, grid as u32)
}

/// Rows of `x` the tensor-core kernel takes (`mmv1_*`: 8 * NT with NT = 1).
pub(crate) const MMV_MAX_M: usize = 8;
/// Rows of `x` from which a 16-bit product takes the tensor-core kernel rather than the GEMV.
///
/// Measured on an H200 (docs/gpu-runs/2026-11-28c-issue32/): at position 64 the Llama-3.2-1B
/// step took 1.026–1.033 ms at batch 2 on the GEMV (whose blocks form f(x) and sum for each
/// row of x), and 0.917–0.921 ms at batch 8 on the tensor-core kernel, whose cost hardly grows
/// with the rows up to 8 (run 92); batch 2 on it, 0.829–0.840 (run 94). At 1 row the tensor-core
/// kernel was faster at position 64 (0.824 against 0.833–0.846 ms) but slower at 2,000
/// (0.924–0.925 against 0.905–0.915) and level at 8,000 (run 95): 1 row stays on the GEMV.
pub(crate) const MMV_MIN_M: usize = 2;

/// Whether a product of `m` rows of x over `w` `[n, k]` (`glu`: `n` gate/up pairs) in `mode`
/// (0 none, 1 RMSNorm, 2 SwiGLU prologue) takes the tensor-core kernel: f16 or bf16, from
/// [`MMV_MIN_M`] to [`MMV_MAX_M`] rows, no SwiGLU prologue, `k` a multiple of 8 and its
/// shared memory within [`MMV_MAX_SMEM`]. The planner and the launch both ask this.
pub(crate) fn takes_mmv(m: usize, n: usize, k: usize, dtype: DType, mode: u32, glu: bool) -> bool {
    (MMV_MIN_M..=MMV_MAX_M).contains(&m)
        && matches!(dtype, DType::F16 | DType::BF16)
        && mode != 2
        && k.is_multiple_of(8)
        && mmv_launch(n, k, glu, mode == 1).3 <= MMV_MAX_SMEM
}
/// Dynamic shared memory the tensor-core kernel may ask for (what every GPU from compute 8.0
/// gives a block: 99 KB on compute 8.6 and 8.9); past it the norm kernel and cuBLAS take the
/// product. With an RMSNorm staged, K up to about 5,000 fits (hidden 5,120: QKV's launch
/// takes 97,344 bytes, gate/up's 101,952 does not).
///
/// Not raised to the device's limit (227 KB a block on an H100), by measurement: at hidden
/// 5,120 and 8 rows the kernel took 37.2 µs for QKV (7,168 outputs, 97 KB) and 123.1 µs for
/// gate/up (13,824 outputs, 102 KB, a launch only the probe can make), against 29.9 and 102.9
/// for cuBLAS's bare products (bench/mmv_probe.cu, docs/gpu-runs/2026-11-26b-issue32/
/// run18-mmv-sweep.txt). Gate/up stays on the norm kernel and cuBLAS.
pub(crate) const MMV_MAX_SMEM: usize = 96 * 1024;
/// 16-byte words of padding a staged row (`MMV_PAD`).
const MMV_PAD: usize = 4;

/// The tensor-core kernel's launch for `n` outputs over `k` inputs (`glu`: gate/up pairs;
/// `staged`: f(x) formed in shared memory, mode 1): threads a block, the warps that share a
/// tile (`ks`), the grid, and the dynamic shared memory.
///
/// - 512 threads a block where the 16-row tiles are fewer than the multiprocessors, else 256.
/// - `ks`: the block's warps, halved while a slice would have fewer than 2 rounds of loads (4
///   chunks of 32 columns) or the warps would pass 128 a multiprocessor.
/// - The grid: every group of tiles its own block, up to 2 blocks a multiprocessor (1 of 512
///   threads); past that the blocks stride.
/// - Except an RMSNorm staged without GLU, with at least as many tiles as multiprocessors (QKV,
///   the LM head): every block forms f(x) once, so fewer, larger blocks pay for it fewer
///   times. 512 threads; `ks` 8 (2 tiles a block) up to 528 tiles, else 4 (4 tiles); a grid
///   of up to 2 blocks per multiprocessor (at 111 registers one 512-thread block is resident
///   on each, so the blocks run in two waves). At 3 and 8 rows this took QKV from 9.37 / 11.46
///   µs to 7.73 / 8.78 and the LM head from 179.4 / 183.9 to 175.9 / 180.0 (the sweep's best
///   launches, run18). Where its shared memory would pass [`MMV_MAX_SMEM`] (hidden 5,120:
///   16 warps' sums) the launch above is kept, as before.
/// - Shared memory: the staged f(x) and norm weight (9 rows of `k / 8 + MMV_PAD` 16-byte
///   words), then the warps' sums (`16 * 9` f32 a warp, twice for GLU).
///
/// Measured on an H100 against other block sizes, `ks` and grids (bench/mmv_probe.cu).
pub(crate) fn mmv_launch(n: usize, k: usize, glu: bool, staged: bool) -> (u32, u32, u32, usize) {
    let tiles = n.div_ceil(16);
    let chunks = k.div_ceil(32);
    let smem = |threads: usize| {
        let stage = if staged { 9 * (k / 8 + MMV_PAD) * 16 } else { 0 };
        stage + threads / 32 * if glu { 2 } else { 1 } * 16 * 9 * 4
    };
    let norm_only = staged && !glu && tiles >= GEMV_SMS && smem(512) <= MMV_MAX_SMEM;
    let threads = if tiles < GEMV_SMS || norm_only { 512 } else { 256 };
    let warps = threads / 32;
    let mut ks = match (norm_only, tiles <= 4 * GEMV_SMS) {
        (true, true) => 8,
        (true, false) => 4,
        (false, _) => warps,
    };
    while ks > 1 && (chunks < 4 * ks || (!norm_only && tiles * ks > GEMV_SMS * 128)) {
        ks /= 2;
    }
    let groups = tiles.div_ceil(warps / ks);
    let grid = groups.clamp(1, GEMV_SMS * if threads == 512 && !norm_only { 1 } else { 2 });
    (threads as u32, ks as u32, grid as u32, smem(threads))
}

/// The GEMV's entry point for `mode` (with `glu`, the gate/up kernel): the plain kernel's
/// modes 0 and 1 and the gate/up kernel's mode 1 have kernels of their own (`gemv_m0`,
/// `gemv_m1`, `gemv_glu_m1`), compiled without the other modes' code; the same sums in the
/// same order as `gemv`/`gemv_glu`, which read the mode and take the rest (mode 2, SwiGLU,
/// and the gate/up kernel without a norm). On an H200 the Llama-3.2-1B step at batch 1 took
/// 2.2% less time at position 64 and 0.6-1.3% less at 2,000 and 8,000 (run 163; the figures
/// are at the entry points in kernels/decode.cu).
fn gemv_entry(glu: bool, mode: u32) -> &'static str {
    match (glu, mode) {
        (false, 0) => "gemv_m0",
        (false, 1) => "gemv_m1",
        (true, 1) => "gemv_glu_m1",
        (true, _) => "gemv_glu",
        (false, _) => "gemv",
    }
}

/// `y = f(x) . w^T (+ residual)` in one kernel; `mode` 0 plain, 1 RMSNorm with `nw`, 2
/// SwiGLU. With `glu`, `w` is a fused gate/up weight `[2n, k]` and `y = silu(gate) * up` (no
/// residual, no amax). `mmv` in decode.cu where [`takes_mmv`] says (f16, bf16, 2 to 8 rows,
/// modes 0 and 1), else `gemv` (up to 2 rows). The caller checks the rows, K % 8 == 0, the
/// alignment and the shared memory.
#[allow(clippy::too_many_arguments)]
pub(crate) fn gemv(
    x: &Tensor,
    w: &Tensor,
    (m, n, k): (usize, usize, usize),
    mode: u32,
    nw: Option<&Tensor>,
    eps: f32,
    residual: Option<&Tensor>,
    amax: Option<&Tensor>,
    glu: bool,
    launch: Launch,
    out: Option<&Tensor>,
) -> Result<Tensor> {
    let dev = cuda(x)?;
    if device_address(w)? % 16 != 0 {
        candle_core::bail!("gemv: the weight must start on a 16-byte boundary");
    }
    if glu && (residual.is_some() || amax.is_some()) {
        candle_core::bail!("gemv: the gate/up kernel takes no residual and no argmax");
    }
    // Every element of y is written: the warps stride over all rows of W, and each row's
    // output is written for all M rows of x (both kernels).
    let y = match out {
        Some(o) => {
            written_in_full("gemv", o, x.dtype(), m * n)?;
            o.reshape((m, n))?
        }
        None => raw::uninit((m, n), x.dtype(), x.device())?,
    };
    let tc = takes_mmv(m, n, k, x.dtype(), mode, glu);
    if !tc && m > GEMV_MAX_M {
        candle_core::bail!(
            "gemv: {m} rows: the GEMV takes at most {GEMV_MAX_M}, the tensor-core kernel {MMV_MIN_M} to {MMV_MAX_M} rows of f16 or bf16, with no SwiGLU prologue"
        );
    }
    let (cfg, ks, name) = if tc {
        let (threads, ks, grid, smem) = mmv_launch(n, k, glu, mode == 1);
        let cfg = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (threads, 1, 1), shared_mem_bytes: smem as u32 };
        let name = match (glu, mode == 1) {
            (false, false) => "mmv1",
            (false, true) => "mmv1_st",
            (true, false) => "mmv1_glu",
            (true, true) => "mmv1_glu_st",
        };
        (cfg, ks, name)
    } else {
        let (threads, ks, grid) = gemv_launch(n, k, x.dtype().size_in_bytes(), glu);
        let cfg = LaunchConfig {
            grid_dim: (grid, 1, 1),
            block_dim: (threads, 1, 1),
            shared_mem_bytes: (m * k * x.dtype().size_in_bytes()) as u32,
        };
        (cfg, ks, gemv_entry(glu, mode))
    };
    let head = [
        addr(Some(x))?,
        addr(Some(w))?,
        Arg::U32(m as u32),
        Arg::U32(n as u32),
        Arg::U32(k as u32),
        Arg::U32(mode),
        addr(nw)?,
        Arg::F32(eps),
    ];
    let args: Vec<Arg> = if glu {
        head.into_iter().chain([addr(Some(&y))?, Arg::U32(ks)]).collect()
    } else {
        head.into_iter().chain([addr(residual)?, addr(Some(&y))?, Arg::U32(ks), addr(amax)?]).collect()
    };
    go_as(&dev, name, x.dtype(), cfg, &args, launch)?;
    Ok(y)
}

/// `silu(x[:, :I]) * x[:, I:]`.
pub(crate) fn silu_mul(x: &Tensor) -> Result<Tensor> {
    let dev = cuda(x)?;
    let (rows, two_i) = x.dims2()?;
    let inter = two_i / 2;
    if inter > i32::MAX as usize {
        candle_core::bail!("silu_mul: {inter} columns are above the kernel's 2^31 limit");
    }
    let n = (rows * inter) as u64;
    // The grid-stride loop writes every one of the `n` elements (a 16-byte word a thread where
    // the rows are in whole aligned words).
    let out = raw::uninit((rows, inter), x.dtype(), x.device())?;
    let per_word = (16 / x.dtype().size_in_bytes()) as u64;
    let blocks = (n.div_ceil(256 * per_word)).min(132 * 16) as u32;
    let cfg = LaunchConfig { grid_dim: (blocks.max(1), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
    let args = [addr(Some(x))?, Arg::U32(inter as u32), Arg::U64(n), addr(Some(&out))?];
    go(&dev, "silu_mul", x.dtype(), cfg, &args)?;
    Ok(out)
}

/// One token per row of `logits` into `tokens`, advancing `pos` and the generators.
#[allow(clippy::too_many_arguments)]
/// Rows of logits a sampling part covers at most before parts grow longer (`SP_PARTS` parts
/// of at least this many cover 262,144 logits).
const SAMPLE_PART: usize = 2048;
/// `SP_PARTS`, `SP_C`, `SP_BINS` and `SP_WORDS` in kernels/decode.cu: most parts a row is cut
/// into, candidates a part keeps, top-p alone's histogram bins, and u32 words of a row's
/// sampling scratch (324 KiB: 256 KiB of it top-p alone's running weights, a u64 a part and bin).
const SP_PARTS: usize = 128;
const SP_C: usize = 64;
const SP_BINS: usize = 256;
/// `SP_PART_THREADS` in kernels/decode.cu: `sample_max`'s and `sample_part`'s threads a block
/// (`sample_part` takes one bin of top-p alone's histogram a thread).
const SP_PART_THREADS: u32 = 256;
pub(crate) const SP_WORDS: usize = SP_GATHER + 2;
/// Where top-p alone's gather (its count of keys and bin) starts in a row of scratch
/// (`SP_GATHER` in kernels/decode.cu).
const SP_GATHER: usize = SP_HIST + 2 * SP_BINS + 2 * SP_PARTS * SP_BINS;
/// Where top-p alone's histogram starts in a row of scratch (`SP_HIST` in kernels/decode.cu).
const SP_HIST: usize = 2 + 2 * SP_PARTS + 2 * SP_PARTS + 2 * SP_PARTS * SP_C;

/// Parts a row of `vocab` logits is cut into, and logits a part (a multiple of 8).
fn sample_parts(vocab: usize) -> (usize, usize) {
    let parts = vocab.div_ceil(SAMPLE_PART).clamp(1, SP_PARTS);
    (parts, vocab.div_ceil(parts).div_ceil(8) * 8)
}

/// Sampling across many blocks a row: the argmax when the LM head gave none, each part's
/// candidates and weight sums, top-p alone's keys in its threshold bin, then one block a row
/// draws (`sample_scan`'s draw, bit for bit). `scratch` is u32 `[rows, SP_WORDS]`, zeroed
/// when allocated.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sample(
    logits: &Tensor,
    params: &Tensor,
    rng: &Tensor,
    tokens: &Tensor,
    pos: &Tensor,
    active: Option<&Tensor>,
    advance: u32,
    amax: Option<&Tensor>,
    scratch: &Tensor,
) -> Result<()> {
    let dev = cuda(logits)?;
    let (rows, vocab) = logits.dims2()?;
    let (parts, chunk) = sample_parts(vocab);
    let grid = LaunchConfig {
        grid_dim: (parts as u32, rows as u32, 1),
        block_dim: (SP_PART_THREADS, 1, 1),
        shared_mem_bytes: 0,
    };
    if amax.is_none() {
        let args =
            [addr(Some(logits))?, Arg::U32(vocab as u32), Arg::U32(chunk as u32), addr(active)?, addr(Some(scratch))?];
        go(&dev, "sample_max", logits.dtype(), grid, &args)?;
    }
    let args = [
        addr(Some(logits))?,
        Arg::U32(vocab as u32),
        Arg::U32(chunk as u32),
        addr(Some(params))?,
        addr(active)?,
        addr(amax)?,
        addr(Some(scratch))?,
    ];
    go(&dev, "sample_part", logits.dtype(), grid, &args)?;
    // Top-p alone's keys in its threshold bin, listed by every part (rows that draw otherwise
    // return at once: the rows' modes are device data, so the node is always there).
    go(&dev, "sample_gather", logits.dtype(), grid, &args)?;
    let cfg = LaunchConfig { grid_dim: (rows as u32, 1, 1), block_dim: (1024, 1, 1), shared_mem_bytes: 0 };
    let args = [
        addr(Some(logits))?,
        Arg::U32(vocab as u32),
        Arg::U32(parts as u32),
        Arg::U32(chunk as u32),
        addr(Some(params))?,
        addr(Some(rng))?,
        addr(Some(tokens))?,
        addr(Some(pos))?,
        addr(active)?,
        Arg::U32(advance),
        addr(amax)?,
        addr(Some(scratch))?,
    ];
    go(&dev, "sample_pick", logits.dtype(), cfg, &args)
}

/// The single-block sampler (`sample` in the kernels: one block scans its whole row), the
/// reference the multi-block path is tested against.
#[allow(clippy::too_many_arguments)]
pub(crate) fn sample_single_block(
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
        addr(None)?,
    ];
    go(&dev, "sample", logits.dtype(), cfg, &args)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The GPU a GPU test runs on; `None` (the test passes vacuously) where there is none,
    /// unless `CAPTURE_REQUIRE_GPU` is set.
    fn test_gpu() -> Option<Device> {
        match Device::new_cuda(0) {
            Ok(d) => Some(d),
            Err(e) => {
                assert!(
                    std::env::var_os("CAPTURE_REQUIRE_GPU").is_none(),
                    "CAPTURE_REQUIRE_GPU is set but no GPU: {e}"
                );
                None
            }
        }
    }

    /// Every GEMV entry point `gemv` launches, for every mode and dtype, is in both PTX files
    /// (a misspelt or missing one would fail only at launch, on a GPU), and modes 0 and 1 take
    /// the kernels compiled for them.
    #[test]
    fn gemv_entry_points_exist() {
        for glu in [false, true] {
            for mode in 0..3 {
                let name = gemv_entry(glu, mode);
                assert_eq!(name.ends_with("_m0"), mode == 0 && !glu, "{name}");
                assert_eq!(name.ends_with("_m1"), mode == 1, "{name}");
                for suf in ["f32", "f16", "bf16"] {
                    for (file, ptx) in [("decode.ptx", DECODE.ptx), ("decode_pdl.ptx", DECODE_PDL.ptx)] {
                        let entry = format!(".entry {name}_{suf}(");
                        assert!(ptx.contains(&entry), "{file} has no {name}_{suf}");
                    }
                }
            }
        }
    }

    /// The sampler's parts cover the row with none empty, each a multiple of 8 logits, no
    /// more than `SP_PARTS` of them, and no part longer than `SAMPLE_PART` (one pass of
    /// `sample_part`'s 256 threads, 8 logits each) while the row fits `SP_PARTS` such parts.
    #[test]
    fn sampling_parts_cover_the_row() {
        for vocab in
            [1, 7, 8, 64, 1000, 2048, 2049, 32_000, 70_001, 128_256, 151_936, 152_064, 262_144, 262_145, 1 << 20]
        {
            let (parts, chunk) = sample_parts(vocab);
            assert!((1..=SP_PARTS).contains(&parts), "{vocab}: {parts} parts");
            assert_eq!(chunk % 8, 0, "{vocab}: chunk {chunk}");
            assert!(parts * chunk >= vocab, "{vocab}: {parts} x {chunk} leaves logits out");
            assert!((parts - 1) * chunk < vocab, "{vocab}: the last part is empty");
            if vocab <= SP_PARTS * SAMPLE_PART {
                assert!(chunk <= SAMPLE_PART, "{vocab}: chunk {chunk}");
            }
        }
        assert_eq!(SP_WORDS % 2, 0, "rows of scratch keep the u64 slot 8-byte aligned");
    }

    /// The scratch layout's sizes here are the kernels' (a row's words are counted from them).
    #[test]
    fn sampling_scratch_sizes_match_the_kernels() {
        let src = include_str!("../../kernels/decode.cu");
        for (name, value) in [
            ("SP_PARTS", SP_PARTS),
            ("SP_C", SP_C),
            ("SP_BINS", SP_BINS),
            ("SP_PART_THREADS", SP_PART_THREADS as usize),
        ] {
            let line = src
                .lines()
                .find(|l| l.starts_with(&format!("#define {name} ")))
                .unwrap_or_else(|| panic!("decode.cu defines no {name}"));
            let defined: usize = line.split_whitespace().nth(2).and_then(|v| v.parse().ok()).unwrap();
            assert_eq!(defined, value, "{name}: decode.cu {defined}, gpu.rs {value}");
        }
        for word in ["SP_SUMS 2", "SP_INFO (SP_SUMS + 2 * SP_PARTS)", "SP_HIST (SP_IDX + SP_PARTS * SP_C)"] {
            assert!(src.contains(&format!("#define {word}")), "decode.cu's layout changed: {word}");
        }
        assert!(src.contains("#define SP_PHIST (SP_HIST + 2 * SP_BINS)"), "decode.cu's row of scratch changed");
        assert!(
            src.contains("#define SP_GATHER (SP_PHIST + 2 * SP_PARTS * SP_BINS)"),
            "decode.cu's row of scratch changed"
        );
        assert!(src.contains("#define SP_WORDS (SP_GATHER + 2)"), "decode.cu's row of scratch changed");
    }

    /// The multi-block draw leaves its row of scratch as the next step expects: the argmax
    /// slot, top-p alone's histogram and its gather's count and bin zero after every step, whatever each row drew with
    /// (top-p alone, top-k/top-p, neither, greedy, a row sitting out). A histogram left
    /// behind would not change a token (the draw checks its total against the parts' sums
    /// and falls back to the whole-row scan) but would cost every later step that scan; a
    /// gather's count left behind would misplace the next step's list of keys.
    #[test]
    #[ignore = "needs a CUDA device"]
    fn sampling_leaves_its_scratch_cleared_gpu() {
        let Some(dev) = test_gpu() else { return };
        let (rows, vocab) = (4, 128_256);
        let logits: Vec<f32> = (0..rows * vocab).map(|i| ((i as f32 * 0.618).fract() - 0.5) * 12.0).collect();
        let logits = Tensor::from_vec(logits, (rows, vocab), &dev).unwrap().to_dtype(DType::BF16).unwrap();
        let scratch = Tensor::zeros((rows, SP_WORDS), DType::U32, &dev).unwrap();
        let rng = Tensor::zeros((rows, 4), DType::U32, &dev).unwrap();
        let (tokens, pos) =
            (Tensor::zeros(rows, DType::U32, &dev).unwrap(), Tensor::zeros(rows, DType::U32, &dev).unwrap());
        // temperature, top_p, top_k
        let modes = [[1.0f32, 0.9, 0.0], [0.8, 0.95, 50.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.3, 0.0]];
        let hist = SP_HIST..SP_HIST + 2 * SP_BINS;
        for step in 0..10 {
            let p: Vec<f32> = (0..rows).flat_map(|r| modes[(r + step) % modes.len()]).collect();
            let params = Tensor::from_vec(p, (rows, 3), &dev).unwrap();
            let active =
                Tensor::from_vec((0..rows).map(|r| u32::from((r + step) % 3 != 2)).collect::<Vec<u32>>(), rows, &dev)
                    .unwrap();
            sample(&logits, &params, &rng, &tokens, &pos, Some(&active), 1, None, &scratch).unwrap();
            let words = scratch.to_vec2::<u32>().unwrap();
            for (r, w) in words.iter().enumerate() {
                assert_eq!(&w[..2], &[0, 0], "step {step} row {r}: the argmax slot was not cleared");
                let left = w[hist.clone()].iter().filter(|&&x| x != 0).count();
                assert_eq!(left, 0, "step {step} row {r}: {left} words of the histogram left");
                assert_eq!(&w[SP_GATHER..], &[0, 0], "step {step} row {r}: top-p alone's gather was not cleared");
            }
        }
        let state = rng.to_vec2::<u32>().unwrap();
        assert!(state.iter().any(|g| g[2] > 1), "no row drew more than once: {state:?}");
    }

    /// A gather count left in the scratch (a step whose draw never ran) does not move the
    /// next step's list of keys: `sample_part` starts the count at 0. The same draws, row
    /// for row, as from a clean scratch, in every mode, top-p alone among them.
    #[test]
    #[ignore = "needs a CUDA device"]
    fn a_gather_count_left_over_does_not_change_the_draw_gpu() {
        let Some(dev) = test_gpu() else { return };
        let (rows, vocab) = (5, 128_256);
        let logits: Vec<f32> = (0..rows * vocab).map(|i| ((i as f32 * 0.618).fract() - 0.5) * 12.0).collect();
        let logits = Tensor::from_vec(logits, (rows, vocab), &dev).unwrap().to_dtype(DType::BF16).unwrap();
        let modes = [[1.0f32, 0.9, 0.0], [0.8, 0.95, 50.0], [1.0, 1.0, 0.0], [0.0, 1.0, 0.0], [0.6, 0.3, 0.0]];
        let p: Vec<f32> = modes.iter().flatten().copied().collect();
        let params = Tensor::from_vec(p, (rows, 3), &dev).unwrap();
        let zeros = |n: usize| Tensor::zeros(n, DType::U32, &dev).unwrap();
        let (clean, left) = (zeros(rows * SP_WORDS).reshape((rows, SP_WORDS)).unwrap(), zeros(rows * SP_WORDS));
        let left = left.reshape((rows, SP_WORDS)).unwrap();
        let (rng_a, rng_b) = (zeros(rows * 4).reshape((rows, 4)).unwrap(), zeros(rows * 4).reshape((rows, 4)).unwrap());
        let (tok_a, tok_b, pos_a, pos_b) = (zeros(rows), zeros(rows), zeros(rows), zeros(rows));
        // Where the gather lists its keys (`SP_KEYS` in kernels/decode.cu).
        let keys_at = 2 + 4 * SP_PARTS;
        assert_eq!(keys_at + 2 * SP_PARTS * SP_C, SP_HIST);
        for step in 0..6u32 {
            // A count of 1,000 + step in every row's gather word, as a step cut short would
            // leave, over a list of the largest logit's key (6.0, in part 0): a draw that took
            // them would land in part 0 nearly always.
            let count = Tensor::from_vec(vec![1000 + step; rows], (rows, 1), &dev).unwrap();
            left.slice_set(&count, 1, SP_GATHER).unwrap();
            let stale =
                Tensor::from_vec(vec![6.0f32.to_bits() | 0x8000_0000; rows * 1000], (rows, 1000), &dev).unwrap();
            left.slice_set(&stale, 1, keys_at).unwrap();
            left.slice_set(&stale.zeros_like().unwrap(), 1, keys_at + SP_PARTS * SP_C).unwrap();
            sample(&logits, &params, &rng_a, &tok_a, &pos_a, None, 1, None, &clean).unwrap();
            sample(&logits, &params, &rng_b, &tok_b, &pos_b, None, 1, None, &left).unwrap();
            let (a, b) = (tok_a.to_vec1::<u32>().unwrap(), tok_b.to_vec1::<u32>().unwrap());
            assert_eq!(a, b, "step {step}: the draws differ");
        }
        assert_eq!(rng_a.to_vec2::<u32>().unwrap(), rng_b.to_vec2::<u32>().unwrap());
    }

    /// The attention grid at the Llama-3.2-1B shape (8 key heads, 4 query heads each: one head
    /// group) and a cache of 8,256: one wave of 528 blocks at most, 16 chunks at most, never
    /// none; a short cache is cut into 256-key chunks at least; a prefill chunk of 256 tokens
    /// is one chunk deep.
    #[test]
    fn attention_grids() {
        let (_, nhg, most) = attention_split(4, 64, 2, 1, 8256).unwrap();
        assert_eq!((nhg, most), (1, 16));
        for (rows, want) in [(1, 16), (2, 16), (4, 16), (8, 8), (16, 4), (32, 2), (64, 1), (128, 1)] {
            let (nsplit, chunk) = attention_grid(rows * 8 * nhg, most, 8256, ATT_BLOCKS);
            assert_eq!(nsplit, want, "{rows} rows");
            assert!(nsplit * 8 * rows <= ATT_BLOCKS || nsplit == 1, "{rows} rows: {nsplit} chunks");
            assert!(nsplit * chunk >= 8256, "{rows} rows: {nsplit} x {chunk} leave keys out");
        }
        assert_eq!(attention_grid(8 * 256, most, 8256, ATT_BLOCKS).0, 1, "a 256-token prefill chunk");
        let (_, _, short) = attention_split(4, 64, 2, 1, 300).unwrap();
        assert_eq!(attention_grid(8, short, 300, ATT_BLOCKS), (2, 150));
        assert_eq!(attention_split(7, 64, 2, 1, 8256).unwrap().1, 2, "7 query heads a key head: 2 groups of 4");
    }

    /// The 16-bit kernels with heads of 128 at Llama-3.1-8B's shape (8 key heads, 4 query heads
    /// each) and a cache of 8,256: up to 16 rows the kernels that load ahead on grids of at most
    /// 264 blocks (32 chunks at one row), from 32 rows the 3-a-multiprocessor kernels on grids of
    /// at most 396; every grid within the scratch; f32 and heads of 256 keep the 528 rule and 16
    /// chunks.
    #[test]
    fn attention_d128_grids() {
        let (width, nhg, most) = attention_split(4, 128, 2, 1, 8256).unwrap();
        assert_eq!((width, nhg, most), (128, 1, 32));
        for (rows, ahead, want) in
            [(1, true, 32), (2, true, 16), (4, true, 8), (8, true, 4), (16, true, 2), (32, false, 1), (64, false, 1)]
        {
            let per_chunk = rows * 8 * nhg;
            assert!(!attention_wide(width, 2, per_chunk), "{rows} rows");
            assert_eq!(attention_ahead(width, 2, 1, per_chunk), ahead, "{rows} rows");
            let aim = attention_aim(width, 2, 1, per_chunk);
            assert_eq!(aim, if ahead { ATT_AHEAD_BLOCKS } else { ATT_D128_BLOCKS }, "{rows} rows");
            let (nsplit, chunk) = attention_grid(per_chunk, most, 8256, aim);
            assert_eq!(nsplit, want, "{rows} rows");
            assert!(nsplit * per_chunk <= aim || nsplit == 1, "{rows} rows: {nsplit} chunks");
            assert!(nsplit * chunk >= 8256, "{rows} rows: {nsplit} x {chunk} leave keys out");
            assert!(nsplit <= attention_grid(per_chunk, most, 8256, ATT_BLOCKS).0, "{rows} rows: the scratch");
        }
        assert_eq!(attention_split(4, 128, 4, 1, 8256).unwrap().2, 16, "f32: 16 chunks");
        assert_eq!(attention_aim(128, 4, 1, 8), ATT_BLOCKS, "f32");
        assert!(!attention_ahead(128, 4, 1, 8), "f32");
        assert_eq!(attention_aim(256, 2, 1, 8), ATT_BLOCKS, "heads of 256");
        assert_eq!(attention_split(4, 256, 2, 1, 8256).unwrap().2, 16, "heads of 256: 16 chunks");
        // Several tokens a row (plain kernels only): the 528 rule and 16 chunks, as before.
        assert_eq!(attention_split(4, 128, 2, 8, 8256).unwrap().2, 16, "8 tokens a row: 16 chunks");
        assert!(!attention_ahead(128, 2, 8, 64), "8 tokens a row");
        assert_eq!(attention_aim(128, 2, 8, 64), ATT_BLOCKS, "8 tokens a row");
        assert_eq!(attention_grid(64, 16, 8256, attention_aim(128, 2, 8, 64)).0, 8, "1 row x 8 tokens");
    }

    /// The 8-warp kernels at the Llama-3.2-1B shape and a cache of 8,256: every decode batch up
    /// to 32, on grids of at most 264 blocks (half as many chunks as the 4-warp kernels, so the
    /// scratch sized for those holds them), not 64 rows or a prefill chunk; only 16-bit heads
    /// of 64.
    #[test]
    fn attention_wide_grids() {
        let (width, nhg, most) = attention_split(4, 64, 2, 1, 8256).unwrap();
        for (rows, chunks) in [(1, 16), (2, 16), (4, 8), (8, 4), (16, 2), (32, 1)] {
            let per_chunk = rows * 8 * nhg;
            assert!(attention_wide(width, 2, per_chunk), "{rows} rows");
            let (nsplit, chunk) = attention_grid(per_chunk, most, 8256, attention_aim(width, 2, 1, per_chunk));
            assert_eq!(nsplit, chunks, "{rows} rows");
            assert!(nsplit * per_chunk <= ATT_WIDE_BLOCKS, "{rows} rows: {nsplit} chunks");
            assert!(nsplit * chunk >= 8256, "{rows} rows: {nsplit} x {chunk} leave keys out");
            assert!(nsplit <= attention_grid(per_chunk, most, 8256, ATT_BLOCKS).0, "{rows} rows: the scratch");
        }
        assert!(!attention_wide(width, 2, 64 * 8 * nhg), "64 rows");
        assert!(!attention_wide(width, 2, 8 * 256), "a 256-token prefill chunk");
        assert!(!attention_wide(64, 4, 128), "f32");
        assert!(!attention_wide(128, 2, 128), "heads of 128");
    }

    /// The tensor-core launches at the Llama-3.2-1B shapes are the sweep's best (run18), every
    /// launch's warps divide into whole tiles, and the sizes `tests/decode.rs` puts at the 48 KB
    /// line are still there.
    #[test]
    fn mmv_launches() {
        // (n, k, glu, staged) -> (threads, ks, grid)
        for ((n, k, glu, st), want) in [
            ((3072, 2048, false, true), (512, 8, 96)),     // QKV
            ((2048, 2048, false, false), (512, 16, 128)),  // output (+ residual)
            ((8192, 2048, true, true), (256, 8, 264)),     // gate/up
            ((2048, 8192, false, false), (512, 16, 128)),  // down (+ residual)
            ((128_256, 2048, false, true), (512, 4, 264)), // LM head
        ] {
            let (threads, ks, grid, _) = mmv_launch(n, k, glu, st);
            assert_eq!((threads, ks, grid), want, "n {n} k {k} glu {glu} staged {st}");
        }
        for n in [8, 100, 1000, 2112, 3072, 8192, 128_256] {
            for k in [64, 200, 2048, 8192] {
                for (glu, st) in [(false, false), (false, true), (true, false), (true, true)] {
                    let (threads, ks, grid, _) = mmv_launch(n, k, glu, st);
                    assert!(threads == 256 || threads == 512);
                    assert!(ks >= 1 && (threads / 32) % ks == 0, "n {n} k {k}: ks {ks} of {threads} threads");
                    assert!((1..=2 * GEMV_SMS as u32).contains(&grid), "n {n} k {k}: grid {grid}");
                }
            }
        }
        assert_eq!(mmv_launch(2112, 2176, false, true).3, 48_960);
        assert_eq!(mmv_launch(2112, 2168, true, true).3, 48_816);
        // Hidden 5,120: QKV and the LM head keep the 256-thread launch, within the bound;
        // gate/up passes it (the norm kernel and cuBLAS take it).
        for n in [7168, 152_064] {
            let (threads, _, _, smem) = mmv_launch(n, 5120, false, true);
            assert_eq!((threads, smem), (256, 97_344), "n {n}");
        }
        assert!(mmv_launch(13_824, 5120, true, true).3 > MMV_MAX_SMEM);
    }

    /// When the tiled kernels take a launch, and that their entry points and shape are the
    /// kernel source's: the host sizes the grid by `ATT_TILE_ROWS` rows a block, and a block
    /// that took fewer would leave output rows unwritten.
    #[test]
    fn tiled_attention_rule_and_entry_points() {
        assert!(attention_tiled_fits(4, 64, 2, 16, 64));
        assert!(attention_tiled_fits(16, 128, 2, 256, 65_535));
        assert!(attention_tiled_fits(1, 64, 2, 65_535, 1));
        assert!(!attention_tiled_fits(4, 64, 2, 15, 64), "fewer than 16 tokens a row");
        assert!(!attention_tiled_fits(4, 64, 4, 256, 64), "f32");
        for dim in [16, 72, 96, 136, 256] {
            assert!(!attention_tiled_fits(4, dim, 2, 256, 64), "heads of {dim}");
        }
        assert!(!attention_tiled_fits(17, 64, 2, 256, 64), "17 query heads a key head");
        assert!(!attention_tiled_fits(4, 64, 2, 256, 65_536), "a grid's second dimension");
        assert!(attention_tiled_pays(32, 64, 1) && attention_tiled_pays(32, 16, 4), "2,048 query rows");
        assert!(!attention_tiled_pays(32, 32, 1) && !attention_tiled_pays(14, 128, 1), "fewer");
        assert!(attention_tiled_pays(usize::MAX, usize::MAX, 2), "no overflow");
        assert!(attention_tiled_short(64, 1024) && !attention_tiled_short(64, 1025), "1,024 keys of 64");
        assert!(!attention_tiled_short(128, 16), "none at heads of 128");
        for name in [
            "attention_tiled_d64_bf16",
            "attention_tiled_d64_f16",
            "attention_tiled_d128_bf16",
            "attention_tiled_d128_f16",
        ] {
            assert!(DECODE.ptx.contains(&format!(".entry {name}(")), "decode.ptx has no {name}");
        }
        let cu = include_str!("../../kernels/decode.cu");
        for (name, v) in [("ATT_TILE_ROWS", ATT_TILE_ROWS as u32), ("ATT_TILE_THREADS", ATT_TILE_THREADS)] {
            let line = format!("#define {name} {v}");
            assert!(cu.lines().any(|l| l.trim_end() == line), "decode.cu has no `{line}`");
        }
    }

    /// On a GPU, the tiled kernels ran (their bits differ from the per-token kernel's: each
    /// probability is taken against another running maximum and summed in another order; the
    /// per-token kernel here is one chunk a prefix, its bits fixed) and agree with it within
    /// bf16's rounding, for 64 tokens a row over prefixes past 300.
    #[test]
    #[ignore = "needs a CUDA device"]
    fn tiled_attention_runs_and_agrees_with_the_per_token_kernel_gpu() {
        use crate::decode::{attention_using, AttentionKernel, KvCache};
        let Some(dev) = test_gpu() else { return };
        let (b, nq, nk, t, d, s) = (2, 16, 4, 64, 64, 512);
        let vals = |n: usize, k: f32| -> Tensor {
            let v: Vec<f32> = (0..n).map(|i| ((i as f32 * k).sin() * 1.7).fract()).collect();
            Tensor::from_vec(v, n, &dev).unwrap().to_dtype(DType::BF16).unwrap()
        };
        let cache = KvCache::new(b, nk, s, d, DType::BF16, &dev).unwrap();
        cache.k().slice_set(&vals(b * nk * s * d, 0.37).reshape((b, nk, s, d)).unwrap(), 0, 0).unwrap();
        cache.v().slice_set(&vals(b * nk * s * d, 0.53).reshape((b, nk, s, d)).unwrap(), 0, 0).unwrap();
        let q = vals(b * nq * t * d, 0.71).reshape((b, nq, t, d)).unwrap();
        let pos = Tensor::new(&[300u32, 448], &dev).unwrap();
        assert!(attention_tiled_fits(nq / nk, d, 2, t, b * nk), "the launch rule no longer takes this shape");
        assert!(attention_tiled_pays(nq, t, b), "the default rule no longer takes this shape");
        let f = |kernel: AttentionKernel| -> Vec<f32> {
            let out = attention_using(&q, &cache, &pos, 0.125, kernel).unwrap();
            out.to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1().unwrap()
        };
        let (tiled, per_token) = (f(AttentionKernel::Tiled), f(AttentionKernel::PerToken));
        assert_eq!(tiled, f(AttentionKernel::Auto), "the default rule did not take the tiled kernel");
        assert_ne!(tiled, per_token, "the same bits: the tiled kernel did not run");
        let (mut num, mut den) = (0f64, 0f64);
        for (x, y) in tiled.iter().zip(&per_token) {
            num += ((x - y) as f64).powi(2);
            den += (*y as f64).powi(2);
        }
        let e = (num / den).sqrt();
        assert!(e < 1e-2, "tiled against per-token: rel err {e}");
    }

    /// A cubin the driver refuses for the device (built for another GPU) gives the kernels
    /// from the PTX: `code::function`'s fallback, on a GPU. The cubin is this build's, with the
    /// architecture in its ELF header's `e_flags` set to one of another major version, which
    /// the driver cannot run here. Where the header's ABI version (byte 8) is 8, as CUDA 13's
    /// ptxas writes it, the architecture is `e_flags` bits 8-15 (0x5a for sm_90: byte 49);
    /// where it is 7 (older ptxas), bits 0-7 (byte 48). A kernel from the fallback gives the
    /// bits of the same kernel loaded as the crate loads it.
    #[test]
    #[ignore = "needs a CUDA device"]
    fn a_cubin_for_another_gpu_falls_back_to_the_ptx_gpu() {
        use super::code::{cubin, function, Cubin, Module};
        let Some(dev) = test_gpu() else { return };
        let cuda = dev.as_cuda_device().unwrap();
        let (Some(real), Some(arch)) = (DECODE.sass, code::CUBIN_ARCH) else {
            eprintln!("skipped: built without cubins, nothing to refuse");
            return;
        };
        let (major, _) = cuda.cuda_stream().context().compute_capability().unwrap();
        let mut other = real.to_vec();
        // A 64-bit little-endian ELF for EM_CUDA (190).
        assert_eq!((&other[..4], other[4], other[5], &other[18..20]), (&b"\x7fELF"[..], 2, 1, &[190, 0][..]));
        let at = match other[8] {
            7 => 48,
            8 => 49,
            v => panic!("a cubin header of ABI version {v}: this test knows 7 and 8"),
        };
        let sm: u8 = arch.trim_start_matches("sm_").trim_end_matches(['a', 'f']).parse().unwrap();
        assert_eq!(other[at], sm, "the header's architecture byte is {arch}'s");
        other[at] = if major == 8 { 90 } else { 80 };
        let module: &'static Module = Box::leak(Box::new(Module {
            name: "capture_candle_decode_other_gpu_test",
            ptx: DECODE.ptx,
            sass: Some(Box::leak(other.into_boxed_slice())),
        }));
        assert!(matches!(cubin(cuda, module).unwrap(), Cubin::Refused(_)), "the driver took the cubin");
        let x = Tensor::from_vec(
            (0..2 * 3 * 40).map(|i| (i as f32 * 0.37).sin() * 4.0).collect::<Vec<f32>>(),
            (3, 80),
            &dev,
        )
        .unwrap();
        let want = silu_mul(&x).unwrap().to_vec2::<f32>().unwrap();
        let out = raw::uninit((3, 40), DType::F32, &dev).unwrap();
        let cfg = LaunchConfig { grid_dim: (1, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 };
        let args = [addr(Some(&x)).unwrap(), Arg::U32(40), Arg::U64(120), addr(Some(&out)).unwrap()];
        let f = function(cuda, module, "silu_mul_f32").unwrap();
        raw::launch(cuda, &f, cfg, &args, false).unwrap();
        assert_eq!(out.to_vec2::<f32>().unwrap(), want);
    }
}
