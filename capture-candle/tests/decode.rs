//! The capture-ready decode layers (issue #21 part 1) against plain candle references, on
//! candle's CPU device (CI) and on CUDA (the `_gpu` twins, run on the GPU machine): rotary
//! embedding at device positions in both layouts, the fused QKV + rope + KV-cache write,
//! attention over each row's prefix with grouped-query heads, residual + RMSNorm, SwiGLU,
//! and sampling whose random state lives in device memory. Each in f32, f16 and bf16.

mod common;

use candle_core::{DType, Device, IndexOp, Tensor, D};
use capture_candle::decode::{self, AttentionKernel, KvCache, RopeLayout, RopeTable, Sampler, SamplingParams};
use capture_candle::Error;
use common::*;

const DTYPES: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

/// candle-nn's rope on `[1, H, T, D]` with the table rows `p .. p + T`.
fn reference_rope(x: &Tensor, table: &RopeTable, p: usize, layout: RopeLayout) -> Tensor {
    let x = &x.contiguous().unwrap();
    let (_, _, t, d) = x.dims4().unwrap();
    let rows = table.table().narrow(0, p, t).unwrap();
    let cos = rows.narrow(1, 0, d / 2).unwrap().contiguous().unwrap();
    let sin = rows.narrow(1, d / 2, d / 2).unwrap().contiguous().unwrap();
    match layout {
        RopeLayout::Halves => candle_nn::rotary_emb::rope(x, &cos, &sin).unwrap(),
        _ => candle_nn::rotary_emb::rope_i(x, &cos, &sin).unwrap(),
    }
}

fn rope_at_device_positions(dev: &Device) {
    let (b, t, h, d, s) = (3, 2, 4, 16, 40);
    for layout in [RopeLayout::Halves, RopeLayout::Interleaved] {
        let table = RopeTable::new(d, s, 10_000.0, None, layout, dev).unwrap();
        let cpu_table = RopeTable::new(d, s, 10_000.0, None, layout, &Device::Cpu).unwrap();
        let pos = [0u32, 7, 31];
        for dtype in DTYPES {
            let x = rand(&[b, t, h * d], dtype, dev, 1);
            let got = decode::rope(&x, h, &table, &u32t(&pos, dev)).unwrap();
            assert_eq!(got.dims(), [b, h, t, d]);
            let x32 = x.to_device(&Device::Cpu).unwrap().to_dtype(DType::F32).unwrap();
            for (row, &p) in pos.iter().enumerate() {
                let xr = x32
                    .i(row)
                    .unwrap()
                    .reshape((t, h, d))
                    .unwrap()
                    .transpose(0, 1)
                    .unwrap()
                    .unsqueeze(0)
                    .unwrap()
                    .contiguous()
                    .unwrap();
                let want = reference_rope(&xr, &cpu_table, p as usize, layout);
                let e = rel_err(&f32s(&got.i(row).unwrap()), &f32s(&want));
                assert!(e < tol(dtype), "{layout:?} {dtype:?} row {row}: rel err {e}");
            }
        }
    }
}

#[test]
fn rope_at_device_positions_matches_candle_rope() {
    rope_at_device_positions(&Device::Cpu);
}
/// The kernels run from the cubins the build compiled for this GPU, not from PTX that the
/// driver compiles when a process loads it (tens of seconds on a fresh machine): a build told
/// the GPU (`CUDA_COMPUTE_CAP`, as scripts/cuda-build-env.sh sets it) holds cubins; where they
/// are for this device's architecture, both modules load from them; `CAPTURE_CANDLE_JIT=1`
/// asks for the PTX. A kernel launched from whichever loaded is right (the rest of this file
/// runs on it too).
#[test]
#[ignore = "needs a CUDA device"]
fn kernels_load_from_the_cubin_built_for_this_gpu() {
    use capture_candle::decode::{kernel_code, KernelCode, PtxWhy, CUBIN_ARCH};
    let Some(dev) = gpu() else { return };
    let cuda = dev.as_cuda_device().unwrap();
    let code = kernel_code(cuda).unwrap();
    let (major, minor) = cuda.cuda_stream().context().compute_capability().unwrap();
    let this = format!("sm_{major}{minor}");
    eprintln!("device {this}, cubins for {CUBIN_ARCH:?}: {code:?}");
    if std::env::var_os("CAPTURE_CANDLE_JIT").is_some_and(|v| v == "1") {
        assert_eq!(code, KernelCode::Ptx(PtxWhy::Asked));
    } else {
        match CUBIN_ARCH {
            None => {
                assert_eq!(option_env!("CUDA_COMPUTE_CAP"), None, "built for a GPU, yet with no cubin");
                assert_eq!(code, KernelCode::Ptx(PtxWhy::NotBuilt));
            }
            Some(arch) if arch.trim_end_matches(['a', 'f']) == this => assert_eq!(code, KernelCode::Sass { arch }),
            // Another architecture: the driver decides (a cubin for 8.0 runs on 8.6).
            Some(arch) => match code {
                KernelCode::Sass { arch: a } => assert_eq!(a, arch),
                other => assert_eq!(other, KernelCode::Ptx(PtxWhy::OtherGpu { built: arch })),
            },
        }
    }
    // A kernel from whichever module loaded: the rope against candle's.
    rope_at_device_positions(&dev);
}

#[test]
#[ignore = "needs a CUDA device"]
fn rope_at_device_positions_matches_candle_rope_gpu() {
    if let Some(d) = gpu() {
        rope_at_device_positions(&d);
    }
}

#[test]
fn llama3_scaling_follows_the_published_formula() {
    let s = decode::Llama3Scaling {
        factor: 32.0,
        low_freq_factor: 1.0,
        high_freq_factor: 4.0,
        original_max_position_embeddings: 8192,
    };
    let plain = RopeTable::inv_freq(64, 500_000.0, None);
    let scaled = RopeTable::inv_freq(64, 500_000.0, Some(&s));
    // High frequencies (short wavelengths) are kept, the lowest divided by the factor.
    assert_eq!(scaled[0], plain[0]);
    assert!((scaled[31] - plain[31] / 32.0).abs() < 1e-12 * plain[31]);
    // In between, a smooth mix of the two.
    for (p, q) in plain.iter().zip(&scaled) {
        assert!(*q <= *p && *q >= p / 32.0 - 1e-18);
    }
}

/// The fused op: queries roped out, keys roped and values copied into the cache at each
/// row's position, nothing written for an inactive row or past the cache.
fn qkv_rope_write(dev: &Device) {
    // Heads of 8, and heads of 64 (10 query, 2 key and 2 value heads: on CUDA 8 heads a
    // block, a second block part full).
    for (nq, d) in [(4, 8), (10, 64)] {
        qkv_rope_write_shape(dev, nq, d);
    }
}

fn qkv_rope_write_shape(dev: &Device, nq: usize, d: usize) {
    let (b, t, nk, s) = (3, 2, 2, 10);
    let table = RopeTable::new(d, s, 10_000.0, None, RopeLayout::Halves, dev).unwrap();
    for dtype in DTYPES {
        let cache = KvCache::new(b, nk, s, d, dtype, dev).unwrap();
        let w = (nq + 2 * nk) * d;
        let qkv = rand(&[b, t, w], dtype, dev, 2);
        let bias = rand(&[w], dtype, dev, 3);
        let pos = u32t(&[0, 4, 9], dev); // row 2: token 1 lands at 10, past the cache
        let active = u32t(&[1, 0, 1], dev);
        let overflow = u32t(&[0, 0, 0], dev);
        let q = decode::qkv_rope_write(&qkv, Some(&bias), &table, &pos, Some(&active), &cache, &overflow, nq).unwrap();
        assert_eq!(overflow.to_vec1::<u32>().unwrap(), [0, 0, 1], "{dtype:?}");
        let x = (qkv
            .to_device(&Device::Cpu)
            .unwrap()
            .to_dtype(DType::F32)
            .unwrap()
            .broadcast_add(&bias.to_device(&Device::Cpu).unwrap().to_dtype(DType::F32).unwrap()))
        .unwrap();
        let cpu_table = RopeTable::new(d, s, 10_000.0, None, RopeLayout::Halves, &Device::Cpu).unwrap();
        let (kc, vc) = (f32s(cache.k()), f32s(cache.v()));
        for (row, p) in [0usize, 4, 9].into_iter().enumerate() {
            let heads = |from: usize, n: usize| {
                x.i(row)
                    .unwrap()
                    .narrow(1, from * d, n * d)
                    .unwrap()
                    .reshape((t, n, d))
                    .unwrap()
                    .transpose(0, 1)
                    .unwrap()
                    .unsqueeze(0)
                    .unwrap()
                    .contiguous()
                    .unwrap()
            };
            let tt = if p + t > s { s - p } else { t };
            let want_q = reference_rope(&heads(0, nq).narrow(2, 0, tt).unwrap(), &cpu_table, p, RopeLayout::Halves);
            let e = rel_err(&f32s(&q.i(row).unwrap().narrow(1, 0, tt).unwrap().contiguous().unwrap()), &f32s(&want_q));
            assert!(e < tol(dtype), "{dtype:?} q row {row}: {e}");
            let want_k =
                f32s(&reference_rope(&heads(nq, nk).narrow(2, 0, tt).unwrap(), &cpu_table, p, RopeLayout::Halves));
            let want_v = f32s(&heads(nq + nk, nk).narrow(2, 0, tt).unwrap().contiguous().unwrap());
            for h in 0..nk {
                for pp in 0..s {
                    let written = row != 1 && pp >= p && pp < p + tt;
                    for e in 0..d {
                        let at = ((row * nk + h) * s + pp) * d + e;
                        if written {
                            let i = (h * tt + (pp - p)) * d + e;
                            let tolv = 0.02 * want_k[i].abs().max(1.0);
                            assert!(
                                (kc[at] - want_k[i]).abs() <= tolv,
                                "{dtype:?} k row {row} head {h} pos {pp}: {} vs {}",
                                kc[at],
                                want_k[i]
                            );
                            assert!((vc[at] - want_v[i]).abs() <= 0.02 * want_v[i].abs().max(1.0), "{dtype:?} v");
                        } else {
                            assert_eq!(
                                (kc[at], vc[at]),
                                (0.0, 0.0),
                                "{dtype:?} row {row} pos {pp}: written but should not be"
                            );
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn qkv_rope_write_writes_only_the_new_slots() {
    qkv_rope_write(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn qkv_rope_write_writes_only_the_new_slots_gpu() {
    if let Some(d) = gpu() {
        qkv_rope_write(&d);
    }
}

/// Plain attention with candle ops: repeat the KV heads, scores over the prefix, causal
/// within the new tokens, softmax, weighted values.
fn reference_attention(q: &Tensor, k: &Tensor, v: &Tensor, pos: &[u32], scale: f64) -> Vec<f32> {
    let (b, nq, t, d) = q.dims4().unwrap();
    let nk = k.dims()[1];
    let cpu = |x: &Tensor| x.to_device(&Device::Cpu).unwrap().to_dtype(DType::F32).unwrap();
    let (q, k, v) = (cpu(q), cpu(k), cpu(v));
    let mut out = Vec::new();
    for (row, &p) in pos.iter().enumerate().take(b) {
        let mut rows = Vec::new();
        for tt in 0..t {
            // A token past the cache attends to the whole cache.
            let len = (p as usize + tt + 1).min(k.dims()[2]);
            let mut heads = Vec::new();
            for h in 0..nq {
                let kh = h / (nq / nk);
                let qv = q.i((row, h, tt)).unwrap().reshape((1, d)).unwrap();
                let kk = k.i((row, kh)).unwrap().narrow(0, 0, len).unwrap();
                let vv = v.i((row, kh)).unwrap().narrow(0, 0, len).unwrap();
                let sc = (qv.matmul(&kk.t().unwrap()).unwrap() * scale).unwrap();
                let p = candle_nn::ops::softmax(&sc, D::Minus1).unwrap();
                heads.push(p.matmul(&vv).unwrap().flatten_all().unwrap());
            }
            rows.push(Tensor::cat(&heads, 0).unwrap());
        }
        out.extend(f32s(&Tensor::cat(&rows, 0).unwrap()));
    }
    out
}

/// Attention against the plain computation: small heads, and the largest shape the kernel
/// takes, 16 query heads a key head of 256 (on CUDA, four blocks of 4 query heads share each
/// key head); one and several tokens a row, prefixes of one chunk and of several; heads of 128
/// over a cache of 8,256 (on CUDA in 16-bit types, up to 32 chunks a prefix).
fn attention(dev: &Device) {
    let shapes = [
        ((3, 8, 2, 16, 300), [(1usize, [0u32, 129, 298]), (3, [5, 127, 200])]),
        ((3, 32, 2, 256, 300), [(1, [3, 130, 299]), (2, [0, 64, 290])]),
        ((3, 4, 1, 128, 8256), [(1, [8200, 7990, 4000]), (1, [8255, 0, 300])]),
    ];
    for ((b, nq, nk, d, s), cases) in shapes {
        for (t, pos) in cases {
            for dtype in DTYPES {
                let cache = KvCache::new(b, nk, s, d, dtype, dev).unwrap();
                cache.k().slice_set(&rand(&[b, nk, s, d], dtype, dev, 4), 0, 0).unwrap();
                cache.v().slice_set(&rand(&[b, nk, s, d], dtype, dev, 5), 0, 0).unwrap();
                let q = rand(&[b, nq, t, d], dtype, dev, 6);
                let scale = 1.0 / (d as f64).sqrt();
                let got = decode::attention(&q, &cache, &u32t(&pos, dev), scale as f32).unwrap();
                assert_eq!(got.dims(), [b, t, nq * d]);
                let want = reference_attention(&q, cache.k(), cache.v(), &pos, scale);
                let e = rel_err(&f32s(&got), &want);
                assert!(e < tol(dtype) * 2.0, "d={d} nq={nq} t={t} {dtype:?}: rel err {e}");
            }
        }
    }
}

/// Every head ratio and head size the op takes, in every dtype: each launch fits the
/// block's resources (issue #31: Llama's layout, 4 query heads a key head of 64, once failed
/// in f32 with CUDA_ERROR_INVALID_VALUE).
fn attention_shapes(dev: &Device) {
    for g in [1usize, 2, 3, 4, 7, 8, 16] {
        for d in [64usize, 128, 256] {
            for dtype in DTYPES {
                let (b, nk, s) = (1, 2, 300);
                let cache = KvCache::new(b, nk, s, d, dtype, dev).unwrap();
                cache.k().slice_set(&rand(&[b, nk, s, d], dtype, dev, 4), 0, 0).unwrap();
                cache.v().slice_set(&rand(&[b, nk, s, d], dtype, dev, 5), 0, 0).unwrap();
                let q = rand(&[b, g * nk, 1, d], dtype, dev, 6);
                let scale = 1.0 / (d as f64).sqrt();
                let pos = [290u32];
                let got = decode::attention(&q, &cache, &u32t(&pos, dev), scale as f32)
                    .unwrap_or_else(|e| panic!("g={g} d={d} {dtype:?}: {e}"));
                let want = reference_attention(&q, cache.k(), cache.v(), &pos, scale);
                let e = rel_err(&f32s(&got), &want);
                assert!(e < tol(dtype) * 2.0, "g={g} d={d} {dtype:?}: rel err {e}");
            }
        }
    }
}

/// Many tokens a row (a prefill's rounds: on CUDA in bf16 and f16 with heads of 64 or 128, the
/// tiled kernel where asked for, and under the default rule at 2,048 query rows) against the
/// plain computation: 1 to 16 query heads a key head, blocks of 64
/// query rows cut inside a token's heads (3 and 7 heads a key head), a last block and a last
/// warp part full, prefixes up to the cache's end, a row whose last tokens pass it (they
/// attend to the whole cache), a round of 128 tokens, and 15 tokens (the per-token kernel,
/// just below the tiled one's threshold). Each at the usual scale (nearly even weights over
/// these random keys) and at scale 1 (peaked: the running max moves from tile to tile), and
/// each (token, head) row on its own as well as the whole output; each through
/// `attention_using` with the default rule, the per-token kernel and the tiled one (on CUDA,
/// refused with `BadOperands` in f32 and at 15 tokens).
fn attention_many_tokens(dev: &Device) {
    #[allow(clippy::type_complexity)]
    let cases: [((usize, usize, usize, usize, usize), usize, &[u32]); 8] = [
        ((3, 8, 2, 64, 300), 16, &[0, 129, 284]),
        ((1, 12, 4, 64, 400), 50, &[333]),
        ((2, 12, 4, 128, 600), 37, &[5, 563]),
        ((1, 2, 2, 64, 200), 70, &[100]),
        ((1, 16, 1, 128, 300), 20, &[250]),
        ((2, 7, 1, 64, 64), 16, &[60, 0]),
        ((2, 8, 2, 64, 700), 128, &[0, 300]),
        ((2, 8, 2, 64, 300), 15, &[3, 200]),
    ];
    for ((b, nq, nk, d, s), t, pos) in cases {
        for dtype in DTYPES {
            let cache = KvCache::new(b, nk, s, d, dtype, dev).unwrap();
            cache.k().slice_set(&rand(&[b, nk, s, d], dtype, dev, 14), 0, 0).unwrap();
            cache.v().slice_set(&rand(&[b, nk, s, d], dtype, dev, 15), 0, 0).unwrap();
            let q = rand(&[b, nq, t, d], dtype, dev, 16);
            // What the tiled kernel takes (on the CPU every choice runs the one implementation).
            let tiled_takes = dtype != DType::F32 && t >= 16 && (d == 64 || d == 128);
            for (scale, kernel) in [1.0 / (d as f64).sqrt(), 1.0].into_iter().flat_map(|s| {
                [AttentionKernel::Auto, AttentionKernel::PerToken, AttentionKernel::Tiled].map(move |k| (s, k))
            }) {
                let what = format!("b={b} nq={nq} nk={nk} d={d} t={t} pos={pos:?} scale {scale} {dtype:?} {kernel:?}");
                let got = decode::attention_using(&q, &cache, &u32t(pos, dev), scale as f32, kernel);
                if kernel == AttentionKernel::Tiled && dev.is_cuda() && !tiled_takes {
                    let e = got.unwrap_err();
                    assert!(matches!(e, Error::BadOperands { .. }), "{what}: {e}");
                    assert!(e.to_string().contains("AttentionKernel::Auto"), "{what}: {e}");
                    continue;
                }
                let got = got.unwrap();
                assert_eq!(got.dims(), [b, t, nq * d]);
                let (got, want) = (f32s(&got), reference_attention(&q, cache.k(), cache.v(), pos, scale));
                let e = rel_err(&got, &want);
                assert!(e < tol(dtype) * 2.0, "{what}: rel err {e}");
                for (i, (g, w)) in got.chunks(d).zip(want.chunks(d)).enumerate() {
                    let e = rel_err(g, w);
                    assert!(e < tol(dtype) * 4.0, "{what}: (token, head) row {i}: rel err {e}");
                }
            }
        }
    }
}

#[test]
fn attention_of_many_tokens_a_row_matches_plain_attention() {
    attention_many_tokens(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn attention_of_many_tokens_a_row_matches_plain_attention_gpu() {
    if let Some(d) = gpu() {
        attention_many_tokens(&d);
    }
}

#[test]
fn attention_fits_every_head_ratio_and_size() {
    attention_shapes(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn attention_fits_every_head_ratio_and_size_gpu() {
    if let Some(d) = gpu() {
        attention_shapes(&d);
    }
}

#[test]
fn attention_over_the_valid_prefix_matches_plain_attention() {
    attention(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn attention_over_the_valid_prefix_matches_plain_attention_gpu() {
    if let Some(d) = gpu() {
        attention(&d);
    }
}

/// `qkv_attention` against `qkv_rope_write` then `attention`, bit for bit: the results, both caches
/// and `overflow`. On CUDA it is one kernel (the queries formed in each block, the new key and
/// value used where they land and written once); on the CPU the same two ops. Both rope layouts,
/// with and without a bias, 1, 4 and 7 query heads a key head (7: two groups of blocks hold the new
/// key), heads narrower than the kernel's width (72, 136), the new key at the start of the prefix,
/// at key 11 of a group (the second half of a group in the kernels that take 16 keys a group), at
/// the first key of a later chunk (250 and 500: the GPU call's cache of 3,000 gives chunks of 250
/// keys at up to 16 blocks a chunk) and inside one, an inactive row (row 5: it writes nothing and
/// reads the cache as it is) and a row past the cache (the last: nothing written, the queries
/// rotated at the last row). `pos` holds 7 positions below `s`; the eighth row is at `s`. `nk` key
/// heads; the 8 rows `reps` times over (on CUDA, more blocks a chunk take other kernels:
/// `attention_rope_d128pf` up to 128, `attention_rope_d128` past it).
fn qkv_attention(dev: &Device, dims: &[usize], s: usize, below: [u32; 7], nk: usize, reps: usize) {
    let b = 8 * reps;
    let mut eight = [s as u32; 8];
    eight[..7].copy_from_slice(&below);
    let pos: Vec<u32> = eight.repeat(reps);
    let active = [1u32, 1, 1, 1, 1, 0, 1, 1].repeat(reps);
    let want_overflow = [0u32, 0, 0, 0, 0, 0, 0, 1].repeat(reps);
    for dtype in DTYPES {
        for &d in dims {
            for g in [1usize, 4, 7] {
                for (layout, with_bias) in [(RopeLayout::Halves, true), (RopeLayout::Interleaved, false)] {
                    let nq = g * nk;
                    let w = (nq + 2 * nk) * d;
                    let table = RopeTable::new(d, s, 10_000.0, None, layout, dev).unwrap();
                    let qkv = rand(&[b, w], dtype, dev, 7);
                    let bias = with_bias.then(|| rand(&[w], dtype, dev, 8));
                    let scale = 1.0 / (d as f32).sqrt();
                    let run = |fused: bool| {
                        let cache = KvCache::new(b, nk, s, d, dtype, dev).unwrap();
                        cache.k().slice_set(&rand(&[b, nk, s, d], dtype, dev, 4), 0, 0).unwrap();
                        cache.v().slice_set(&rand(&[b, nk, s, d], dtype, dev, 5), 0, 0).unwrap();
                        let (p, a, overflow) = (u32t(&pos, dev), u32t(&active, dev), u32t(&vec![0; b], dev));
                        let out = if fused {
                            decode::qkv_attention(
                                &qkv,
                                bias.as_ref(),
                                &table,
                                &p,
                                Some(&a),
                                &cache,
                                &overflow,
                                nq,
                                scale,
                            )
                        } else {
                            decode::qkv_rope_write(&qkv, bias.as_ref(), &table, &p, Some(&a), &cache, &overflow, nq)
                                .and_then(|q| decode::attention(&q, &cache, &p, scale))
                        }
                        .unwrap_or_else(|e| panic!("d={d} g={g} {layout:?} {dtype:?} fused={fused}: {e}"));
                        let bits = |t: &Tensor| f32s(t).iter().map(|x| x.to_bits()).collect::<Vec<u32>>();
                        (bits(&out), bits(cache.k()), bits(cache.v()), overflow.to_vec1::<u32>().unwrap())
                    };
                    let (fused, apart) = (run(true), run(false));
                    let what = format!("d={d} g={g} nk={nk} b={b} {layout:?} bias={with_bias} {dtype:?}");
                    assert_eq!(fused.3, want_overflow, "{what}: overflow");
                    assert_eq!(fused.3, apart.3, "{what}: overflow");
                    assert!(fused.0 == apart.0, "{what}: the attention output differs");
                    assert!(fused.1 == apart.1, "{what}: the key cache differs");
                    assert!(fused.2 == apart.2, "{what}: the value cache differs");
                }
            }
        }
    }
}

#[test]
fn qkv_attention_equals_rope_write_then_attention() {
    qkv_attention(&Device::Cpu, &[64], 600, [0, 11, 250, 256, 500, 400, 587], 2, 1);
}
#[test]
#[ignore = "needs a CUDA device"]
fn qkv_attention_equals_rope_write_then_attention_gpu() {
    if let Some(d) = gpu() {
        qkv_attention(&d, &[64, 72, 128, 136, 256], 3000, [0, 11, 250, 256, 500, 2047, 2987], 2, 1);
        // Heads of 128 at 160 and 320 blocks a chunk (the 3-a-multiprocessor kernels; 136 takes
        // the d256 kernels), and at 8 and 16 over a cache of 8,256 (the kernels that load
        // ahead, up to 32 chunks of at most 258 keys; at 7,936 the new key is the first of the
        // 32nd chunk of 256).
        qkv_attention(&d, &[128, 136], 3000, [0, 11, 250, 256, 500, 2047, 2987], 4, 5);
        qkv_attention(&d, &[128], 8256, [0, 11, 258, 7936, 7990, 8100, 8255], 1, 1);
        // 16 rows at 8 key heads (Llama-3.1-8B's batch 16): 128 blocks a chunk, the most the
        // kernels that load ahead take (2 chunks of up to 300 keys), and 256 (7 query heads a
        // key head: two head groups) on the 3-a-multiprocessor kernels.
        qkv_attention(&d, &[128], 600, [0, 11, 250, 256, 500, 400, 587], 8, 2);
    }
}

/// `shape`'s elements of a fresh random tensor, from element `skip` of a flat one: `skip`
/// not a multiple of 8 puts the view off 16-byte alignment (the kernels' element path).
fn rand_at(shape: &[usize], skip: usize, dtype: DType, dev: &Device, seed: u64) -> Tensor {
    let n: usize = shape.iter().product();
    rand(&[skip + n], dtype, dev, seed).narrow(0, skip, n).unwrap().reshape(shape).unwrap()
}

fn norm_and_swiglu(dev: &Device) {
    // (rows, columns, offset): whole 16-byte words held one a thread; 2 or 3 a thread (9,000
    // columns); 4 a thread (16,384 in f32, 32,768 in f16 and bf16); one word past what the
    // block holds (16,388 in f32, 32,776 in 16-bit types: element by element), more (40,000);
    // columns not in whole words (203); rows off 16-byte alignment; no rows.
    let shapes = [
        (3, 200, 0),
        (5, 2048, 0),
        (2, 9000, 0),
        (2, 16_384, 0),
        (1, 16_388, 0),
        (1, 32_768, 0),
        (1, 32_776, 0),
        (2, 40_000, 0),
        (3, 203, 0),
        (3, 200, 1),
        (0, 64, 0),
    ];
    for dtype in DTYPES {
        for (i, &(r, c, skip)) in shapes.iter().enumerate() {
            let seed = 7 + 10 * i as u64;
            let x = rand_at(&[r, c], skip, dtype, dev, seed);
            let dx = rand_at(&[r, c], skip, dtype, dev, seed + 1);
            let w = rand_at(&[c], skip, dtype, dev, seed + 2).affine(0.1, 1.0).unwrap();
            let (sum, y) = decode::add_rms_norm(&x, Some(&dx), &w, 1e-5).unwrap();
            let cpu = |t: &Tensor| t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F32).unwrap();
            let want_sum = (cpu(&x) + cpu(&dx)).unwrap();
            let want_y = candle_nn::ops::rms_norm(&want_sum, &cpu(&w), 1e-5).unwrap();
            let at = format!("{dtype:?} [{r}, {c}] at {skip}");
            assert!(rel_err(&f32s(&sum), &f32s(&want_sum)) < tol(dtype), "{at} sum");
            assert!(rel_err(&f32s(&y), &f32s(&want_y)) < tol(dtype), "{at} norm");
            let (same, y0) = decode::add_rms_norm(&x, None, &w, 1e-5).unwrap();
            assert_eq!(f32s(&same), f32s(&x));
            let want0 = candle_nn::ops::rms_norm(&cpu(&x), &cpu(&w), 1e-5).unwrap();
            assert!(rel_err(&f32s(&y0), &f32s(&want0)) < tol(dtype), "{at} norm without residual");
            // The same row twice gives the same bits.
            let (sum2, y2) = decode::add_rms_norm(&x, Some(&dx), &w, 1e-5).unwrap();
            assert_eq!((f32s(&sum2), f32s(&y2)), (f32s(&sum), f32s(&y)), "{at} rerun");
        }

        // (rows, intermediate, offset): whole words, more words than the grid's threads (600 x
        // 8,192: several passes), not whole words (95), off alignment.
        let swiglu = [(4, 96, 0), (3, 8192, 0), (600, 8192, 0), (4, 95, 0), (4, 96, 1)];
        for (i, &(r, inter, skip)) in swiglu.iter().enumerate() {
            let gu = rand_at(&[r, 2 * inter], skip, dtype, dev, 100 + i as u64);
            let got = decode::silu_mul(&gu).unwrap();
            let cpu = |t: &Tensor| t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F32).unwrap();
            let g = cpu(&gu.narrow(1, 0, inter).unwrap());
            let u = cpu(&gu.narrow(1, inter, inter).unwrap());
            let want = (candle_nn::ops::silu(&g).unwrap() * u).unwrap();
            assert!(rel_err(&f32s(&got), &f32s(&want)) < tol(dtype), "{dtype:?} swiglu [{r}, {inter}] at {skip}");
        }
    }
}

#[test]
fn residual_rms_norm_and_swiglu_match_candle() {
    norm_and_swiglu(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn residual_rms_norm_and_swiglu_match_candle_gpu() {
    if let Some(d) = gpu() {
        norm_and_swiglu(&d);
    }
}

/// Logits with a clear order: token i has logit `scale * i`, so the top-k and top-p sets
/// are known.
fn ordered_logits(b: usize, v: usize, dtype: DType, dev: &Device, scale: f32) -> Tensor {
    let x: Vec<f32> = (0..b * v).map(|i| (i % v) as f32 * scale).collect();
    Tensor::from_vec(x, (b, v), &Device::Cpu).unwrap().to_dtype(dtype).unwrap().to_device(dev).unwrap()
}

fn sampling(dev: &Device) {
    let (b, v) = (4, 1000);
    for dtype in DTYPES {
        // Spaced 1/64 apart; f16 and bf16 round several neighbours to one value, so the
        // checks below compare ranks of the values the row actually holds.
        let logits = ordered_logits(b, v, dtype, dev, 1.0 / 64.0);
        let sampler = Sampler::new(b, dev).unwrap();
        let tokens = u32t(&[0; 4], dev);
        let pos = u32t(&[5, 6, 7, 8], dev);
        let active = u32t(&[1, 1, 1, 0], dev);
        // Row 0 greedy; row 1 top-k 3; row 2 top-p 0.05 at a low temperature; row 3 inactive.
        sampler.set(1, &SamplingParams::new(1.0, 3, 1.0).unwrap(), 11).unwrap();
        sampler.set(2, &SamplingParams::new(0.5, 0, 0.05).unwrap(), 12).unwrap();
        sampler.set(3, &SamplingParams::new(1.0, 0, 1.0).unwrap(), 13).unwrap();
        let mut seen1 = std::collections::BTreeSet::new();
        for step in 0..60u32 {
            sampler.sample(&logits, &tokens, &pos, Some(&active), 1).unwrap();
            let t = tokens.to_vec1::<u32>().unwrap();
            let top = f32s(&logits.i(0).unwrap());
            let best = top.iter().copied().fold(f32::MIN, f32::max);
            let first_best = top.iter().position(|x| *x == best).unwrap() as u32;
            assert_eq!(t[0], first_best, "{dtype:?}: greedy takes the first largest");
            // The three largest distinct values (rounding may tie several tokens on each).
            let mut distinct: Vec<f32> = top.clone();
            distinct.sort_by(|a, b| b.total_cmp(a));
            distinct.dedup();
            let third = distinct[2];
            assert!(top[t[1] as usize] >= third, "{dtype:?}: top-k 3 keeps the three largest (token {})", t[1]);
            seen1.insert(t[1]);
            // At temperature 0.5 the top ~3% of the spacing's mass is in the few largest.
            assert!(
                top[t[2] as usize] >= distinct[8],
                "{dtype:?}: top-p 0.05 keeps only the few largest (token {})",
                t[2]
            );
            assert_eq!(t[3], 0, "an inactive row is not written");
            assert_eq!(pos.to_vec1::<u32>().unwrap(), [6 + step, 7 + step, 8 + step, 8]);
        }
        assert!(seen1.len() >= 2, "{dtype:?}: top-k 3 draws more than one value in 60 draws ({seen1:?})");
        assert_eq!(sampler.counter(0).unwrap(), 0, "greedy draws nothing");
        assert_eq!(sampler.counter(1).unwrap(), 60, "each draw advances the row's counter on the device");
        assert_eq!(sampler.counter(3).unwrap(), 0, "an inactive row's generator stays");
    }
}

#[test]
fn sampling_keeps_top_k_and_top_p_and_advances_on_the_device() {
    sampling(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn sampling_keeps_top_k_and_top_p_and_advances_on_the_device_gpu() {
    if let Some(d) = gpu() {
        sampling(&d);
    }
}

/// Draws a sequence of `n` tokens from fixed logits with `seed`.
fn draws(dev: &Device, seed: u64, n: usize) -> Vec<u32> {
    let logits = rand(&[1, 500], DType::F32, dev, 20);
    let logits = (logits * 3.0).unwrap();
    let s = Sampler::new(1, dev).unwrap();
    s.set(0, &SamplingParams::new(1.0, 50, 0.9).unwrap(), seed).unwrap();
    let (tok, pos) = (u32t(&[0], dev), u32t(&[0], dev));
    (0..n)
        .map(|_| {
            s.sample(&logits, &tok, &pos, None, 1).unwrap();
            tok.to_vec1::<u32>().unwrap()[0]
        })
        .collect()
}

fn seeds(dev: &Device) {
    let a = draws(dev, 1, 40);
    assert_eq!(a, draws(dev, 1, 40), "the same seed draws the same tokens");
    assert_ne!(a, draws(dev, 2, 40), "another seed draws others");
    let distinct: std::collections::BTreeSet<_> = a.iter().collect();
    assert!(distinct.len() > 5, "draws vary from step to step: {a:?}");
}

#[test]
fn the_same_seed_draws_the_same_tokens() {
    seeds(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn the_same_seed_draws_the_same_tokens_gpu() {
    if let Some(d) = gpu() {
        seeds(&d);
        // The kernel and the CPU reference draw the same tokens (the same fixed-point
        // algorithm; exp may differ in the last bit, so allow a rare boundary difference).
        let (g, c) = (draws(&d, 3, 64), draws(&Device::Cpu, 3, 64));
        let same = g.iter().zip(&c).filter(|(a, b)| a == b).count();
        assert!(same >= 62, "GPU and CPU draws: {same}/64 equal\n{g:?}\n{c:?}");
    }
}

/// Logits of `kind` for `rows` rows of `v`: 0 smooth random, 1 one flat value (every token
/// tied), 2 ascending by index (the largest all in the last part), 3 coarse values (many
/// ties at every threshold), 4 random with NaN and -inf among them, 5 a few tokens far
/// ahead of a flat rest.
fn logits_of(kind: u32, rows: usize, v: usize, seed: u64) -> Vec<f32> {
    let r = values(rows * v, seed);
    (0..rows * v)
        .map(|i| match kind {
            0 => r[i] * 6.0,
            1 => 0.25,
            2 => (i % v) as f32 / v as f32 * 20.0,
            3 => (r[i] * 8.0).round(),
            4 if i % 97 == 3 => f32::NAN,
            4 if i % 89 == 5 => f32::NEG_INFINITY,
            4 => r[i] * 4.0,
            _ => {
                if (i % v) % 9973 == 17 {
                    12.0 + r[i]
                } else {
                    r[i] * 0.01
                }
            }
        })
        .collect()
}

/// Two samplers over the same rows, one drawing by the multi-block path (`Sampler::sample`),
/// the other by the single-block kernel that scans whole rows, each with its own tokens and
/// positions (every position starting at `pos`).
struct Twin {
    multi: Sampler,
    single: Sampler,
    tokens: [Tensor; 2],
    pos: [Tensor; 2],
}

impl Twin {
    fn new(rows: usize, pos: u32, dev: &Device) -> Self {
        let t = || u32t(&vec![0; rows], dev);
        let p = || u32t(&vec![pos; rows], dev);
        Self {
            multi: Sampler::new(rows, dev).unwrap(),
            single: Sampler::new(rows, dev).unwrap(),
            tokens: [t(), t()],
            pos: [p(), p()],
        }
    }

    fn set(&self, row: usize, p: &SamplingParams, seed: u64) {
        self.multi.set(row, p, seed).unwrap();
        self.single.set(row, p, seed).unwrap();
    }

    /// One draw each: the multi-block path's tokens, then the whole-row scan's.
    fn draw(&self, logits: &Tensor, active: Option<&Tensor>) -> (Vec<u32>, Vec<u32>) {
        self.multi.sample(logits, &self.tokens[0], &self.pos[0], active, 1).unwrap();
        self.single.sample_single_block(logits, &self.tokens[1], &self.pos[1], active, 1).unwrap();
        (self.tokens[0].to_vec1().unwrap(), self.tokens[1].to_vec1().unwrap())
    }

    /// The same positions and generator states on both sides.
    fn assert_same_state(&self) {
        assert_eq!(self.pos[0].to_vec1::<u32>().unwrap(), self.pos[1].to_vec1::<u32>().unwrap());
        assert_eq!(self.multi.state().to_vec2::<u32>().unwrap(), self.single.state().to_vec2::<u32>().unwrap());
    }
}

/// The multi-block draw against the single-block kernel that scans whole rows: the same
/// tokens, positions and generator counters, bit for bit, step after step, for every
/// filter, vocabulary shape and kind of logits (including those that make the multi-block
/// path fall back to a whole-row scan).
fn multi_block_sampling(dev: &Device) {
    let params = [
        SamplingParams::GREEDY,
        SamplingParams::new(0.8, 50, 0.95).unwrap(),
        SamplingParams::new(1.0, 0, 1.0).unwrap(),
        SamplingParams::new(1.0, 0, 0.9).unwrap(),
        SamplingParams::new(0.7, 100, 1.0).unwrap(),
        SamplingParams::new(1.3, 64, 0.5).unwrap(),
        SamplingParams::new(0.6, 0, 0.3).unwrap(),
        SamplingParams::new(2.0, 7, 1.0).unwrap(),
    ];
    let rows = params.len();
    for (v, dtypes) in [
        (1000, &DTYPES[..]),
        (70_001, &DTYPES[..]),
        (128_256, &DTYPES[..]),
        (152_064, &[DType::BF16][..]),
        (300_000, &[DType::F32][..]),
    ] {
        for &dtype in dtypes {
            for kind in 0..6 {
                let x = logits_of(kind, rows, v, v as u64 + kind as u64);
                let logits = Tensor::from_vec(x, (rows, v), &Device::Cpu)
                    .unwrap()
                    .to_dtype(dtype)
                    .unwrap()
                    .to_device(dev)
                    .unwrap();
                let twin = Twin::new(rows, 3, dev);
                for (r, p) in params.iter().enumerate() {
                    twin.set(r, p, 100 + r as u64);
                }
                let mut act = vec![1u32; rows];
                act[rows - 1] = kind % 2; // an inactive row in odd kinds
                let active = u32t(&act, dev);
                for step in 0..6 {
                    let (ga, gb) = twin.draw(&logits, Some(&active));
                    if ga != gb {
                        let host = f32s(&logits);
                        let rows_off: Vec<String> = (0..rows)
                            .filter(|&r| ga[r] != gb[r])
                            .map(|r| {
                                let at = |t: u32| host.get(r * v + t as usize).copied().unwrap_or(f32::NAN);
                                format!(
                                    "row {r} {:?}: multi {} ({}) single {} ({})",
                                    params[r],
                                    ga[r],
                                    at(ga[r]),
                                    gb[r],
                                    at(gb[r])
                                )
                            })
                            .collect();
                        panic!(
                            "V {v} {dtype:?} kind {kind} step {step}: multi-block against single-block\n{}",
                            rows_off.join("\n")
                        );
                    }
                    twin.assert_same_state();
                }
            }
        }
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn multi_block_sampling_draws_what_a_whole_row_scan_draws_gpu() {
    if let Some(d) = gpu() {
        multi_block_sampling(&d);
    }
}

/// Rows whose parameters change between steps (greedy, top-k, top-p alone, neither, and
/// back) and rows that sit out a step: the multi-block draw keeps state between its kernels
/// (the argmax slot, top-p alone's histogram), so each step must leave it as the next
/// expects, whatever that step drew with. Against the whole-row scan, bit for bit.
fn sampling_switched_between_steps(dev: &Device) {
    let modes = [
        SamplingParams::new(1.0, 0, 0.9).unwrap(),
        SamplingParams::new(0.8, 50, 0.95).unwrap(),
        SamplingParams::new(0.6, 0, 0.3).unwrap(),
        SamplingParams::GREEDY,
        SamplingParams::new(1.0, 0, 1.0).unwrap(),
        SamplingParams::new(1.0, 0, 0.9).unwrap(),
    ];
    let (rows, v) = (5, 128_256);
    for kind in [0u32, 5] {
        let x = logits_of(kind, rows, v, 900 + kind as u64);
        let logits = Tensor::from_vec(x, (rows, v), &Device::Cpu).unwrap().to_dtype(DType::BF16).unwrap();
        let logits = logits.to_device(dev).unwrap();
        let twin = Twin::new(rows, 0, dev);
        for step in 0..12 {
            for r in 0..rows {
                // Row r takes mode (r + step) % 6, and a seed of its own at each step.
                twin.set(r, &modes[(r + step) % modes.len()], (100 * step + r) as u64);
            }
            let act: Vec<u32> = (0..rows).map(|r| u32::from((r + step) % 4 != 3)).collect();
            let (ga, gb) = twin.draw(&logits, Some(&u32t(&act, dev)));
            assert_eq!(ga, gb, "kind {kind} step {step}: multi-block against single-block");
        }
        twin.assert_same_state();
    }
}

#[test]
#[ignore = "needs a CUDA device"]
fn sampling_switched_between_steps_draws_what_a_whole_row_scan_draws_gpu() {
    if let Some(d) = gpu() {
        sampling_switched_between_steps(&d);
    }
}

/// A vocabulary of 20,000,000 logits: parts of 156,256, past the 65,536 whose top-p
/// histogram a part keeps exactly, so top-p alone takes the whole-row scan, and the other
/// modes take their longest paths. In row 0 a part's 32-bit halves would wrap (nearly every
/// logit in the bin next to the maximum), and top-p's threshold lies among 5,000 logits two
/// units below the maximum.
fn sampling_a_vocabulary_past_the_histogram(dev: &Device) {
    let params = [
        SamplingParams::new(1.0, 0, 0.99999).unwrap(),
        SamplingParams::new(1.0, 0, 0.9).unwrap(),
        SamplingParams::new(0.8, 50, 0.95).unwrap(),
        SamplingParams::new(1.0, 0, 1.0).unwrap(),
    ];
    let (rows, v) = (params.len(), 20_000_000);
    let r = values(v, 31);
    let mut x = Vec::with_capacity(rows * v);
    x.extend((0..v).map(|i| if i % 4000 == 7 { -1.0 + r[i] * 0.01 } else { 0.94 + r[i].abs() * 0.06 }));
    x.extend(logits_of(0, rows - 1, v, 32));
    let logits = Tensor::from_vec(x, (rows, v), dev).unwrap();
    let twin = Twin::new(rows, 0, dev);
    for (row, p) in params.iter().enumerate() {
        twin.set(row, p, 60 + row as u64);
    }
    let mut row0 = std::collections::BTreeSet::new();
    for step in 0..4 {
        let (ga, gb) = twin.draw(&logits, None);
        assert_eq!(ga, gb, "step {step}: multi-block against single-block");
        row0.insert(ga[0]);
    }
    assert!(row0.len() > 1, "row 0 draws vary: {row0:?}");
    twin.assert_same_state();
}

#[test]
#[ignore = "needs a CUDA device"]
fn sampling_a_vocabulary_past_the_histogram_draws_what_a_whole_row_scan_draws_gpu() {
    if let Some(d) = gpu() {
        sampling_a_vocabulary_past_the_histogram(&d);
    }
}

/// The single-block kernel (the multi-block draw's reference, and its fallback where a
/// filter's threshold falls below what the parts listed) against the CPU reference over the
/// real vocabulary: the same fixed-point algorithm, so the same tokens, but for a rare draw at
/// a boundary where the two `exp`s differ in the last bit. Top-p alone with a wide nucleus is
/// the case the multi-block path hands to this scan.
fn whole_row_scan_against_the_cpu(dev: &Device) {
    let params = [
        SamplingParams::new(0.8, 50, 0.95).unwrap(),
        SamplingParams::new(1.0, 0, 0.9).unwrap(),
        SamplingParams::new(1.0, 0, 0.5).unwrap(),
        SamplingParams::new(0.7, 1000, 1.0).unwrap(),
    ];
    let (rows, v, steps) = (params.len(), 128_256, 4);
    let (mut same, mut all) = (0usize, 0usize);
    for dtype in [DType::F32, DType::BF16] {
        for kind in [0u32, 3, 4] {
            let host = Tensor::from_vec(logits_of(kind, rows, v, 7 + kind as u64), (rows, v), &Device::Cpu)
                .unwrap()
                .to_dtype(dtype)
                .unwrap();
            let run = |d: &Device| -> Vec<u32> {
                let logits = host.to_device(d).unwrap();
                let s = Sampler::new(rows, d).unwrap();
                for (r, p) in params.iter().enumerate() {
                    s.set(r, p, 40 + r as u64).unwrap();
                }
                let (tok, pos) = (u32t(&vec![0; rows], d), u32t(&vec![0; rows], d));
                let mut out = Vec::new();
                for _ in 0..steps {
                    s.sample_single_block(&logits, &tok, &pos, None, 1).unwrap();
                    out.extend(tok.to_vec1::<u32>().unwrap());
                }
                out
            };
            let (g, c) = (run(dev), run(&Device::Cpu));
            let distinct: std::collections::BTreeSet<_> = g.iter().collect();
            assert!(distinct.len() > rows, "{dtype:?} kind {kind}: draws vary ({g:?})");
            same += g.iter().zip(&c).filter(|(a, b)| a == b).count();
            all += g.len();
        }
    }
    assert!(same * 32 >= all * 31, "whole-row scan against the CPU: {same}/{all} draws equal");
}

#[test]
#[ignore = "needs a CUDA device"]
fn the_whole_row_scan_draws_what_the_cpu_draws_gpu() {
    if let Some(d) = gpu() {
        whole_row_scan_against_the_cpu(&d);
    }
}

#[test]
fn bad_sampling_parameters_are_typed_errors() {
    for (t, k, p) in
        [(f32::NAN, 0, 1.0), (-1.0, 0, 1.0), (f32::INFINITY, 0, 1.0), (1.0, 0, 0.0), (1.0, 0, 1.5), (1.0, 1 << 25, 1.0)]
    {
        let e = SamplingParams::new(t, k, p).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert!(e.to_string().contains("expected"), "{e}");
    }
    let s = Sampler::new(2, &Device::Cpu).unwrap();
    assert!(matches!(s.set(2, &SamplingParams::GREEDY, 0), Err(Error::InvalidArgument { .. })));
}

/// A sampler of no rows, or of more rows than the sampling kernels' grid takes, is a typed
/// error that says the range, not a panic or an allocation of the whole batch first.
#[test]
fn a_sampler_batch_out_of_range_is_a_typed_error() {
    for batch in [0, Sampler::MAX_BATCH + 1, usize::MAX] {
        let e = Sampler::new(batch, &Device::Cpu).unwrap_err();
        assert!(matches!(e, Error::InvalidArgument { .. }), "{e}");
        assert!(e.to_string().contains("from 1 to 65,535"), "{e}");
    }
    assert!(Sampler::new(Sampler::MAX_BATCH, &Device::Cpu).is_ok());
}

/// `qkv_attention` refuses what attention cannot take before it writes anything: too many
/// query heads a key head, a scale that is not finite. The cache and `overflow` stay as they
/// were (row 1 stands past the cache, where a write would set its flag), and the error names
/// the op.
#[test]
fn qkv_attention_checks_before_it_writes() {
    let dev = Device::Cpu;
    let (b, nk, d, s) = (2, 1, 8, 16);
    let cache = KvCache::new(b, nk, s, d, DType::F32, &dev).unwrap();
    let table = RopeTable::new(d, s, 10_000.0, None, RopeLayout::Halves, &dev).unwrap();
    let (pos, of) = (u32t(&[3, 16], &dev), u32t(&[0, 0], &dev));
    for (heads, scale) in [(17, 0.5f32), (4, f32::NAN), (4, f32::INFINITY)] {
        let qkv = rand(&[b, (heads + 2 * nk) * d], DType::F32, &dev, 9);
        let e = decode::qkv_attention(&qkv, None, &table, &pos, None, &cache, &of, heads, scale).unwrap_err();
        assert!(
            matches!(e, Error::BadOperands { .. } | Error::InvalidArgument { .. }),
            "{heads} heads, scale {scale}: {e}"
        );
        if heads == 17 {
            assert!(e.to_string().contains("qkv_attention"), "{e}");
        }
        assert!(f32s(cache.k()).iter().chain(f32s(cache.v()).iter()).all(|&x| x == 0.0), "the cache was written");
        assert_eq!(of.to_vec1::<u32>().unwrap(), [0, 0]);
    }
}

/// On CUDA, one call of `qkv_attention` takes at most 65,535 tokens a row (attention's grid's
/// second dimension). Past that it is refused before the cache is written (before, the cache
/// was written and attention's launch then failed); at the limit it runs.
#[test]
#[ignore = "needs a CUDA device"]
fn qkv_attention_refuses_more_tokens_than_a_grid_holds_gpu() {
    let Some(dev) = gpu() else { return };
    let (nk, heads, d, s) = (1, 1, 8, 16);
    let cache = KvCache::new(1, nk, s, d, DType::F32, &dev).unwrap();
    let table = RopeTable::new(d, s, 10_000.0, None, RopeLayout::Halves, &dev).unwrap();
    let (pos, of) = (u32t(&[0], &dev), u32t(&[0], &dev));
    let qkv = |t: usize| Tensor::ones((1, t, (heads + 2 * nk) * d), DType::F32, &dev).unwrap();
    let e = decode::qkv_attention(&qkv(65_536), None, &table, &pos, None, &cache, &of, heads, 0.5).unwrap_err();
    assert!(matches!(e, Error::BadOperands { .. }) && e.to_string().contains("split the call"), "{e}");
    assert!(f32s(cache.k()).iter().chain(f32s(cache.v()).iter()).all(|&x| x == 0.0), "the cache was written");
    assert_eq!(of.to_vec1::<u32>().unwrap(), [0]);
    let out = decode::qkv_attention(&qkv(65_535), None, &table, &pos, None, &cache, &of, heads, 0.5).unwrap();
    assert_eq!(out.dims(), [1, 65_535, heads * d]);
}

#[test]
fn mismatched_operands_are_typed_errors() {
    let dev = Device::Cpu;
    let cache = KvCache::new(2, 2, 8, 4, DType::F32, &dev).unwrap();
    let table = RopeTable::new(4, 8, 10_000.0, None, RopeLayout::Halves, &dev).unwrap();
    let (pos, of) = (u32t(&[0, 0], &dev), u32t(&[0, 0], &dev));
    // Wrong width, wrong dtype, wrong position shape.
    let bad = [
        decode::qkv_rope_write(
            &Tensor::zeros((2, 1, 20), DType::F32, &dev).unwrap(),
            None,
            &table,
            &pos,
            None,
            &cache,
            &of,
            2,
        ),
        decode::qkv_rope_write(
            &Tensor::zeros((2, 1, 24), DType::F16, &dev).unwrap(),
            None,
            &table,
            &pos,
            None,
            &cache,
            &of,
            4,
        ),
        decode::qkv_rope_write(
            &Tensor::zeros((2, 1, 24), DType::F32, &dev).unwrap(),
            None,
            &table,
            &u32t(&[0], &dev),
            None,
            &cache,
            &of,
            4,
        ),
    ];
    for r in bad {
        let e = r.unwrap_err();
        assert!(matches!(e, Error::BadOperands { .. }), "{e}");
    }
    let q = Tensor::zeros((2, 40, 1, 4), DType::F32, &dev).unwrap();
    let e = decode::attention(&q, &cache, &pos, 1.0).unwrap_err();
    assert!(e.to_string().contains("at most 16"), "{e}");
    let e = decode::silu_mul(&Tensor::zeros((2, 5), DType::F32, &dev).unwrap()).unwrap_err();
    assert!(matches!(e, Error::BadOperands { .. }), "{e}");
    let e = decode::add_rms_norm(
        &Tensor::zeros((2, 4), DType::U32, &dev).unwrap(),
        None,
        &Tensor::zeros(4, DType::U32, &dev).unwrap(),
        1e-5,
    )
    .unwrap_err();
    assert!(matches!(e, Error::BadOperands { .. }), "{e}");
    assert!(matches!(KvCache::new(0, 1, 1, 2, DType::F32, &dev), Err(Error::InvalidArgument { .. })));
    assert!(matches!(RopeTable::new(3, 8, 1e4, None, RopeLayout::Halves, &dev), Err(Error::InvalidArgument { .. })));
}

/// `KvCache::write` (no rope) writes at each row's position and flags a write past the end.
fn cache_write(dev: &Device) {
    let cache = KvCache::new(2, 1, 4, 2, DType::F32, dev).unwrap();
    let k = Tensor::new(&[[[1f32, 2.0]], [[3.0, 4.0]]], dev).unwrap();
    let v = (&k * 10.0).unwrap();
    let of = u32t(&[0, 0], dev);
    cache.write(&k, &v, &u32t(&[1, 4], dev), None, &of).unwrap();
    assert_eq!(of.to_vec1::<u32>().unwrap(), [0, 1]);
    let kc = f32s(cache.k());
    assert_eq!(&kc[..8], &[0., 0., 1., 2., 0., 0., 0., 0.]);
    assert!(kc[8..].iter().all(|x| *x == 0.0), "nothing is written past the cache");
    assert_eq!(&f32s(cache.v())[..8], &[0., 0., 10., 20., 0., 0., 0., 0.]);
}

#[test]
fn kv_cache_write_touches_only_the_new_slot() {
    cache_write(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn kv_cache_write_touches_only_the_new_slot_gpu() {
    if let Some(d) = gpu() {
        cache_write(&d);
    }
}

/// The fused projection against candle's ops: each prologue, with and without the residual,
/// at 1 row (the matrix-vector kernel), 2 (the tensor-core kernel for f16 and bf16 without a
/// SwiGLU prologue, else the matrix-vector kernel), 3, 5 and 8 (the tensor-core kernel for f16
/// and bf16 without a SwiGLU prologue; the fallback otherwise) and 9 (the fallback), in each
/// dtype.
fn matvec(dev: &Device) {
    use capture_candle::decode::Prologue;
    // Shapes that take 1, 2 and 4 warps per row pair on CUDA.
    for (n, k, dtype) in DTYPES.iter().map(|&d| (72, 256, d)).chain([(40, 2048, DType::BF16), (24, 4096, DType::F16)]) {
        let w = rand(&[n, k], dtype, dev, 30);
        let nw = rand(&[k], dtype, dev, 31).affine(0.1, 1.0).unwrap();
        for m in [1usize, 2, 3, 5, 8, 9] {
            let x = rand(&[m, k], dtype, dev, 32);
            let x2 = rand(&[m, 2 * k], dtype, dev, 33);
            let r = rand(&[m, n], dtype, dev, 34);
            let cpu = |t: &Tensor| t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F32).unwrap();
            let wt = cpu(&w).t().unwrap();
            let cases: [(Prologue<'_>, &Tensor, Tensor); 3] = [
                (Prologue::None, &x, cpu(&x)),
                (Prologue::RmsNorm(&nw, 1e-5), &x, candle_nn::ops::rms_norm(&cpu(&x), &cpu(&nw), 1e-5).unwrap()),
                (
                    Prologue::SwiGlu,
                    &x2,
                    (candle_nn::ops::silu(&cpu(&x2.narrow(1, 0, k).unwrap())).unwrap()
                        * cpu(&x2.narrow(1, k, k).unwrap()))
                    .unwrap(),
                ),
            ];
            for (pro, input, fx) in cases {
                for res in [None, Some(&r)] {
                    let got = decode::matvec(input, &w, pro, res).unwrap();
                    let mut want = fx.matmul(&wt).unwrap();
                    if let Some(r) = res {
                        want = (want + cpu(r)).unwrap();
                    }
                    let e = rel_err(&f32s(&got), &f32s(&want));
                    assert!(e < tol(dtype) * 2.0, "{dtype:?} m={m} {pro:?} residual={}: rel err {e}", res.is_some());
                }
            }
        }
        // A view that starts off a 16-byte boundary (one row into a [3, k] tensor of an odd
        // number of elements per row is still aligned; one element in is not) is computed too.
        let big = rand(&[1, k + 1], dtype, dev, 35);
        let odd = big.narrow(1, 1, k).unwrap().contiguous().unwrap();
        let view = big.flatten_all().unwrap().narrow(0, 1, k).unwrap().reshape((1, k)).unwrap();
        let a = decode::matvec(&view, &w, Prologue::None, None).unwrap();
        let b = decode::matvec(&odd, &w, Prologue::None, None).unwrap();
        let e = rel_err(&f32s(&a), &f32s(&b));
        assert!(e < tol(dtype) * 2.0, "{dtype:?}: a misaligned view gives {e}");
        let e = decode::matvec(&rand(&[2, 100], dtype, dev, 1), &w, Prologue::None, None).unwrap_err();
        assert!(matches!(e, Error::BadOperands { .. }), "{e}");
    }
}

/// The gate/up projection with SwiGLU fused in against candle's ops (the product, then
/// silu(gate) * up), with and without the RMSNorm before it, at 1 row (the matrix-vector
/// kernel), 2 (the tensor-core kernel for f16 and bf16, the matrix-vector kernel for f32), 3
/// and 8 (the tensor-core kernel for f16 and bf16) and 9 (the fallback), in each dtype; a
/// weight with an odd number of rows is refused.
fn matvec_swiglu(dev: &Device) {
    use capture_candle::decode::Prologue;
    // (inter, k): one warp a gate/up pair, two, and four (short rows share warps on CUDA).
    for (inter, k, dtype) in DTYPES.iter().map(|&d| (40, 256, d)).chain([
        (24, 2048, DType::BF16),
        (64, 1024, DType::F16),
        (16, 200, DType::BF16),
    ]) {
        let gate = rand(&[inter, k], dtype, dev, 40);
        let up = rand(&[inter, k], dtype, dev, 41);
        let w = Tensor::cat(&[&gate, &up], 0).unwrap();
        let nw = rand(&[k], dtype, dev, 42).affine(0.1, 1.0).unwrap();
        let cpu = |t: &Tensor| t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F32).unwrap();
        for m in [1usize, 2, 3, 8, 9] {
            let x = rand(&[m, k], dtype, dev, 43);
            let cases: [(Prologue<'_>, Tensor); 2] = [
                (Prologue::None, cpu(&x)),
                (Prologue::RmsNorm(&nw, 1e-5), candle_nn::ops::rms_norm(&cpu(&x), &cpu(&nw), 1e-5).unwrap()),
            ];
            for (pro, fx) in cases {
                let got = decode::matvec_swiglu(&x, &w, pro).unwrap();
                assert_eq!(got.dims(), [m, inter]);
                let g = fx.matmul(&cpu(&gate).t().unwrap()).unwrap();
                let u = fx.matmul(&cpu(&up).t().unwrap()).unwrap();
                let want = (candle_nn::ops::silu(&g).unwrap() * u).unwrap();
                let e = rel_err(&f32s(&got), &f32s(&want));
                assert!(e < tol(dtype) * 2.0, "{dtype:?} inter={inter} k={k} m={m} {pro:?}: rel err {e}");
            }
        }
        let odd = rand(&[2 * inter + 1, k], dtype, dev, 44);
        let e = decode::matvec_swiglu(&rand(&[1, k], dtype, dev, 45), &odd, Prologue::None).unwrap_err();
        assert!(matches!(e, Error::BadOperands { .. }) && e.to_string().contains("odd"), "{e}");
        let e = decode::matvec_swiglu(&rand(&[1, k + 8], dtype, dev, 45), &w, Prologue::None).unwrap_err();
        assert!(matches!(e, Error::BadOperands { .. }), "{e}");
    }
}

#[test]
fn matvec_swiglu_matches_candle() {
    matvec_swiglu(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn matvec_swiglu_matches_candle_gpu() {
    if let Some(d) = gpu() {
        matvec_swiglu(&d);
    }
}

#[test]
fn matvec_with_fused_norm_swiglu_and_residual_matches_candle() {
    matvec(&Device::Cpu);
}
#[test]
#[ignore = "needs a CUDA device"]
fn matvec_with_fused_norm_swiglu_and_residual_matches_candle_gpu() {
    if let Some(d) = gpu() {
        matvec(&d);
    }
}

/// An RMSNorm projection of `rows` rows of bf16 (`glu`: with SwiGLU, `n` outputs from `2n`
/// weight rows) over K = `k`, checked against candle's ops: x, the weight, the norm weight.
fn rms_projection_checked(
    dev: &Device,
    rows: usize,
    n: usize,
    k: usize,
    glu: bool,
    seed: u64,
) -> (Tensor, Tensor, Tensor) {
    use capture_candle::decode::Prologue;
    let cpu = |t: &Tensor| t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F32).unwrap();
    let w = rand(&[if glu { 2 * n } else { n }, k], DType::BF16, dev, seed);
    let nw = rand(&[k], DType::BF16, dev, seed + 1).affine(0.1, 1.0).unwrap();
    let x = rand(&[rows, k], DType::BF16, dev, seed + 2);
    let fx = candle_nn::ops::rms_norm(&cpu(&x), &cpu(&nw), 1e-5).unwrap();
    let pro = Prologue::RmsNorm(&nw, 1e-5);
    let (got, want) = if glu {
        let g = fx.matmul(&cpu(&w.narrow(0, 0, n).unwrap()).t().unwrap()).unwrap();
        let u = fx.matmul(&cpu(&w.narrow(0, n, n).unwrap()).t().unwrap()).unwrap();
        (decode::matvec_swiglu(&x, &w, pro).unwrap(), (candle_nn::ops::silu(&g).unwrap() * u).unwrap())
    } else {
        (decode::matvec(&x, &w, pro, None).unwrap(), fx.matmul(&cpu(&w).t().unwrap()).unwrap())
    };
    let e = rel_err(&f32s(&got), &f32s(&want));
    assert!(e < tol(DType::BF16) * 2.0, "{rows} rows, n={n} k={k} glu={glu}: rel err {e}");
    (x, w, nw)
}

/// The tensor-core projection with an RMSNorm at sizes whose shared memory passes 48 KB only
/// with the kernel's static part, against candle's ops: 3 rows, 2,112 outputs; K = 2176 plain
/// (the staged f(x) and 16 warps' sums take 48,960 bytes) and K = 2168 with SwiGLU (8 warps:
/// 48,816); the kernel's own 384 bytes come on top; and the matrix-vector kernel with x staged
/// whole in 48 KB: 1 row of bf16 at K = 24,576 and 2 rows of f32 at K = 6,144 (2 rows of bf16
/// take the tensor-core kernel). Counting only the dynamic part, the launches would fail.
#[test]
#[ignore = "needs a CUDA device"]
fn matvec_at_the_48_kb_shared_memory_line_gpu() {
    use capture_candle::decode::Prologue;
    let Some(dev) = gpu() else { return };
    for (n, k, glu) in [(2112, 2176, false), (2112, 2168, true)] {
        rms_projection_checked(&dev, 3, n, k, glu, 60);
    }
    // The matrix-vector kernel with x staged whole in the 48 KB, and the kernel's own shared
    // memory on top.
    let cpu = |t: &Tensor| t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F32).unwrap();
    for (rows, k, dtype) in [(1, 24_576, DType::BF16), (2, 6144, DType::F32)] {
        let w = rand(&[64, k], dtype, &dev, 63);
        let x = rand(&[rows, k], dtype, &dev, 64);
        let got = decode::matvec(&x, &w, Prologue::None, None).unwrap();
        let want = cpu(&x).matmul(&cpu(&w).t().unwrap()).unwrap();
        let e = rel_err(&f32s(&got), &f32s(&want));
        assert!(e < tol(dtype) * 2.0, "{rows} rows of {dtype:?}, k {k}: rel err {e}");
    }
}

/// RMSNorm projections of 8 rows around the tensor-core kernel's 96 KB of shared memory,
/// against candle's ops, and which kernels run: a captured graph of the op and a copy has 2
/// kernels where the tensor-core kernel takes it, more where the norm kernel and cuBLAS do.
/// QKV at hidden 2,048 (3,072 outputs) and 5,120 (7,168: 97,344 bytes) fit; 528 outputs
/// (blocks of 512 threads) and gate/up at hidden 5,120 and K = 8,192 do not (gpu.rs
/// `MMV_MAX_SMEM`: the kernel measured slower there than cuBLAS).
#[test]
#[ignore = "needs a CUDA device"]
fn matvec_past_96_kb_takes_the_norm_kernel_and_cublas_gpu() {
    use capture_candle::decode::Prologue;
    let Some(dev) = gpu() else { return };
    let cases = [
        (3072, 2048, false, true),
        (7168, 5120, false, true),
        (528, 5120, false, false),
        (264, 5120, true, false),
        (528, 8192, false, false),
        (264, 8192, true, false),
    ];
    for (n, k, glu, fused) in cases {
        let (x, w, nw) = rms_projection_checked(&dev, 8, n, k, glu, 70);
        let mut cs = capture_candle::CandleStream::new(&dev).unwrap();
        let y = Tensor::zeros((8, n), DType::BF16, &dev).unwrap();
        let op = move |(x, w, nw, y): &(Tensor, Tensor, Tensor, Tensor)| -> capture_candle::Result<()> {
            let pro = Prologue::RmsNorm(nw, 1e-5);
            let out = if glu { decode::matvec_swiglu(x, w, pro)? } else { decode::matvec(x, w, pro, None)? };
            Ok(y.slice_set(&out, 0, 0)?)
        };
        let res = (x, w, nw, y);
        cs.warm_up(|| op(&res).map_err(candle_core::Error::wrap)).unwrap();
        let (_graph, report) = cs.capture_owned(res, op).unwrap();
        assert_eq!(report.nodes.kernels == 2, fused, "n={n} k={k} glu={glu}\n{report}");
    }
}
