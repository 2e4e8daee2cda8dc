//! The decode ops on candle's CPU device: plain loops in f32 over host copies, the reference
//! the CUDA kernels are tested against. Writes into existing tensors (the KV cache, the
//! positions, the generators) go through [`Write`], an in-place op that handles views.

use candle_core::backend::BackendStorage;
use candle_core::{CpuStorage, DType, InplaceOp1, Layout, Result, Tensor};
use half::{bf16, f16};

pub(crate) fn f32s(t: &Tensor) -> Result<Vec<f32>> {
    t.to_dtype(DType::F32)?.flatten_all()?.to_vec1::<f32>()
}

pub(crate) fn u32s(t: &Tensor) -> Result<Vec<u32>> {
    t.flatten_all()?.to_vec1::<u32>()
}

fn round(v: f32, dtype: DType) -> f32 {
    match dtype {
        DType::BF16 => bf16::from_f32(v).to_f32(),
        DType::F16 => f16::from_f32(v).to_f32(),
        _ => v,
    }
}

/// Element writes into a tensor (a view of one is fine), by index into its elements.
pub(crate) enum Write {
    Float(Vec<(usize, f32)>),
    U32(Vec<(usize, u32)>),
}

impl InplaceOp1 for Write {
    fn name(&self) -> &'static str {
        "capture-candle-write"
    }
    fn cpu_fwd(&self, s: &mut CpuStorage, l: &Layout) -> Result<()> {
        let o = l.start_offset();
        match (self, s) {
            (Write::Float(w), CpuStorage::F32(d)) => w.iter().for_each(|&(i, v)| d[o + i] = v),
            (Write::Float(w), CpuStorage::BF16(d)) => w.iter().for_each(|&(i, v)| d[o + i] = bf16::from_f32(v)),
            (Write::Float(w), CpuStorage::F16(d)) => w.iter().for_each(|&(i, v)| d[o + i] = f16::from_f32(v)),
            (Write::U32(w), CpuStorage::U32(d)) => w.iter().for_each(|&(i, v)| d[o + i] = v),
            (_, s) => candle_core::bail!("capture-candle: cannot write into a {:?} tensor here", s.dtype()),
        }
        Ok(())
    }
}

fn from_f32(v: Vec<f32>, shape: &[usize], dtype: DType, dev: &candle_core::Device) -> Result<Tensor> {
    Tensor::from_vec(v, shape, dev)?.to_dtype(dtype)
}

/// The CPU form of `rope_write` (see `kernels/decode.cu`).
pub(crate) fn rope_write(a: &super::gpu::RopeWrite<'_>) -> Result<()> {
    let src = f32s(a.src)?;
    let bias = a.bias.map(f32s).transpose()?;
    let table = f32s(a.table)?;
    let pos = u32s(a.pos)?;
    let active = a.active.map(u32s).transpose()?;
    let (t_n, dim, half) = (a.tokens as usize, a.dim as usize, a.dim as usize / 2);
    let (nq, nk, nv, s) = (a.nq as usize, a.nk as usize, a.nv as usize, a.max_seq as usize);
    let dtype = a.src.dtype();
    let mut q = vec![0f32; a.rows as usize * nq * t_n * dim];
    let (mut kw, mut vw, mut ow) = (Vec::new(), Vec::new(), Vec::new());
    for b in 0..a.rows as usize {
        for t in 0..t_n {
            let p = pos[b] as usize + t;
            let over = p >= s;
            if over {
                ow.push((b, 1u32));
            }
            let pc = p.min(s - 1);
            let row = b * t_n + t;
            for head in 0..nq + nk + nv {
                let base = row * a.stride as usize + a.col0 as usize + head * dim;
                for i in 0..half {
                    let (i1, i2) = if a.interleaved { (2 * i, 2 * i + 1) } else { (i, i + half) };
                    let (mut x1, mut x2) = (src[base + i1], src[base + i2]);
                    if let Some(bias) = &bias {
                        x1 += bias[head * dim + i1];
                        x2 += bias[head * dim + i2];
                    }
                    if head < nq + nk {
                        let (c, sn) = (table[pc * dim + i], table[pc * dim + half + i]);
                        (x1, x2) = (x1 * c - x2 * sn, x1 * sn + x2 * c);
                    }
                    if head < nq {
                        let o = ((b * nq + head) * t_n + t) * dim;
                        q[o + i1] = x1;
                        q[o + i2] = x2;
                        continue;
                    }
                    if over || active.as_ref().is_some_and(|a| a[b] == 0) {
                        continue;
                    }
                    let (w, h, nh) =
                        if head < nq + nk { (&mut kw, head - nq, nk) } else { (&mut vw, head - nq - nk, nv) };
                    let o = ((b * nh + h) * s + p) * dim;
                    w.push((o + i1, round(x1, dtype)));
                    w.push((o + i2, round(x2, dtype)));
                }
            }
        }
    }
    if let Some(out) = a.q_out {
        let q = from_f32(q, &[a.rows as usize, nq, t_n, dim], dtype, out.device())?;
        out.slice_set(&q, 0, 0)?;
    }
    if let Some(k) = a.k_cache {
        k.inplace_op1(&Write::Float(kw))?;
    }
    if let Some(v) = a.v_cache {
        v.inplace_op1(&Write::Float(vw))?;
    }
    a.overflow.inplace_op1(&Write::U32(ow))
}

/// The CPU form of decode attention: softmax over each query's prefix, in f32.
#[allow(clippy::too_many_arguments)]
pub(crate) fn attention(
    q: &Tensor,
    k: &Tensor,
    v: &Tensor,
    pos: &Tensor,
    (b_n, nq, t_n, dim): (usize, usize, usize, usize),
    (nk, s): (usize, usize),
    scale: f32,
) -> Result<Tensor> {
    let (qv, kv, vv, pos) = (f32s(q)?, f32s(k)?, f32s(v)?, u32s(pos)?);
    let g = nq / nk;
    let mut out = vec![0f32; b_n * t_n * nq * dim];
    for (b, &p) in pos.iter().enumerate().take(b_n) {
        for h in 0..nq {
            let kh = h / g;
            for t in 0..t_n {
                let len = (p as usize + t + 1).min(s);
                let qo = ((b * nq + h) * t_n + t) * dim;
                let kb = (b * nk + kh) * s * dim;
                let scores: Vec<f32> =
                    (0..len).map(|j| (0..dim).map(|d| qv[qo + d] * scale * kv[kb + j * dim + d]).sum()).collect();
                let m = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
                let e: Vec<f32> = scores.iter().map(|s| (s - m).exp()).collect();
                let l: f32 = e.iter().sum();
                let oo = ((b * t_n + t) * nq + h) * dim;
                for d in 0..dim {
                    out[oo + d] = (0..len).map(|j| e[j] * vv[kb + j * dim + d]).sum::<f32>() / l;
                }
            }
        }
    }
    from_f32(out, &[b_n, t_n, nq * dim], q.dtype(), q.device())
}

pub(crate) fn add_rms_norm(x: &Tensor, delta: Option<&Tensor>, w: &Tensor, eps: f32) -> Result<(Tensor, Tensor)> {
    let (rows, cols) = x.dims2()?;
    let sum = match delta {
        Some(d) => (x + d)?,
        None => x.clone(),
    };
    let (s, wv) = (f32s(&sum)?, f32s(w)?);
    let mut y = vec![0f32; rows * cols];
    for r in 0..rows {
        let row = &s[r * cols..(r + 1) * cols];
        let inv = 1.0 / (row.iter().map(|v| v * v).sum::<f32>() / cols as f32 + eps).sqrt();
        for c in 0..cols {
            y[r * cols + c] = row[c] * inv * wv[c];
        }
    }
    Ok((sum, from_f32(y, &[rows, cols], x.dtype(), x.device())?))
}

pub(crate) fn silu_mul(x: &Tensor) -> Result<Tensor> {
    let (rows, two_i) = x.dims2()?;
    let inter = two_i / 2;
    let v = f32s(x)?;
    let mut out = vec![0f32; rows * inter];
    for r in 0..rows {
        for c in 0..inter {
            let (g, u) = (v[r * two_i + c], v[r * two_i + inter + c]);
            out[r * inter + c] = g / (1.0 + (-g).exp()) * u;
        }
    }
    from_f32(out, &[rows, inter], x.dtype(), x.device())
}

/// The generator's hash (the kernel's `mix64`).
pub(crate) fn mix64(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d049bb133111eb);
    z ^ (z >> 31)
}

fn key_of(f: f32) -> u32 {
    let f = if f.is_nan() { f32::NEG_INFINITY } else { f };
    let u = f.to_bits();
    if u & 0x8000_0000 != 0 {
        !u
    } else {
        u | 0x8000_0000
    }
}

/// The token the sampler draws from one row: the kernel's algorithm, sequentially.
pub(crate) fn sample_row(x: &[f32], temp: f32, top_p: f32, top_k: u32, seed: u64, counter: u64) -> u32 {
    let mut argmax = 0usize;
    for (i, &v) in x.iter().enumerate() {
        if key_of(v) > key_of(x[argmax]) {
            argmax = i;
        }
    }
    let xmax = x[argmax];
    if temp.is_nan() || temp <= 0.0 || xmax.is_nan() || xmax == f32::NEG_INFINITY || top_k == 1 {
        return argmax as u32;
    }
    let inv_t = 1.0 / temp;
    let w = |v: f32| ((v - xmax) * inv_t).exp() * 16_777_216.0;
    let mut keys: Vec<u32> = x.iter().map(|&v| key_of(v)).collect();
    keys.sort_unstable_by(|a, b| b.cmp(a));
    let kmin = if top_k > 0 && (top_k as usize) < x.len() { keys[top_k as usize - 1] } else { 0 };
    let total: u64 = x.iter().filter(|&&v| key_of(v) >= kmin).map(|&v| w(v) as u64).sum();
    let mut pmin = 0;
    if top_p > 0.0 && top_p < 1.0 && total > 0 {
        let target = ((top_p as f64 * total as f64).ceil() as u64).max(1);
        // Walk distinct keys from the top until their weight reaches the target.
        let mut order: Vec<(u32, u64)> =
            x.iter().filter(|&&v| key_of(v) >= kmin).map(|&v| (key_of(v), w(v) as u64)).collect();
        order.sort_unstable_by_key(|o| std::cmp::Reverse(o.0));
        let mut acc = 0u64;
        for (k, wt) in order {
            acc += wt;
            if acc >= target {
                pmin = k;
                break;
            }
        }
    }
    let keep = kmin.max(pmin);
    let kept: u64 = x.iter().filter(|&&v| key_of(v) >= keep).map(|&v| w(v) as u64).sum();
    if kept == 0 {
        return argmax as u32;
    }
    let u =
        (mix64(seed ^ mix64(counter.wrapping_add(0x9e37_79b9_7f4a_7c15))) >> 11) as f64 * (1.0 / (1u64 << 53) as f64);
    let r = ((u * kept as f64) as u64).min(kept - 1);
    let mut run = 0u64;
    for (i, &v) in x.iter().enumerate() {
        if key_of(v) < keep {
            continue;
        }
        run += w(v) as u64;
        if r < run {
            return i as u32;
        }
    }
    argmax as u32
}

pub(crate) fn sample(
    logits: &Tensor,
    params: &Tensor,
    rng: &Tensor,
    tokens: &Tensor,
    pos: &Tensor,
    active: Option<&Tensor>,
    advance: u32,
) -> Result<()> {
    let (rows, vocab) = logits.dims2()?;
    let (x, p, g, pv) = (f32s(logits)?, f32s(params)?, u32s(rng)?, u32s(pos)?);
    let active = active.map(u32s).transpose()?;
    let (mut tw, mut pw, mut gw) = (Vec::new(), Vec::new(), Vec::new());
    for b in 0..rows {
        if active.as_ref().is_some_and(|a| a[b] == 0) {
            continue;
        }
        let seed = g[b * 4] as u64 | (g[b * 4 + 1] as u64) << 32;
        let counter = g[b * 4 + 2] as u64 | (g[b * 4 + 3] as u64) << 32;
        let (temp, top_p, top_k) = (p[b * 3], p[b * 3 + 1], p[b * 3 + 2] as u32);
        let row = &x[b * vocab..(b + 1) * vocab];
        tw.push((b, sample_row(row, temp, top_p, top_k, seed, counter)));
        pw.push((b, pv[b].wrapping_add(advance)));
        let greedy = temp.is_nan() || temp <= 0.0 || top_k == 1 || !row.iter().any(|v| *v > f32::NEG_INFINITY);
        if !greedy {
            let c = counter.wrapping_add(1);
            gw.push((b * 4 + 2, c as u32));
            gw.push((b * 4 + 3, (c >> 32) as u32));
        }
    }
    tokens.inplace_op1(&Write::U32(tw))?;
    pos.inplace_op1(&Write::U32(pw))?;
    rng.inplace_op1(&Write::U32(gw))
}
