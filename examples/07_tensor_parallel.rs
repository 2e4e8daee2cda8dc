//! A tensor-parallel decode step on two devices (issue #10, part 4): an MLP block split
//! Megatron-style — the first GEMM column-parallel (each rank holds half of W1's rows), an
//! elementwise op on each rank's half of the intermediate, the second GEMM row-parallel (each
//! rank holds half of W2's columns), then an all-reduce that sums the two partial outputs.
//! Both ranks' streams are captured together once (`MultiCapture`) and the step replayed
//! `STEPS` times with fresh inputs; every output is compared with a single-device eager run
//! of the same (unsplit) weights, and the step is timed eager vs replayed.
//!
//! ```text
//! cargo run --release --example 07_tensor_parallel [-- STEPS [TOKENS]]
//! ```
//! Two GPUs when present (NCCL; keep `NCCL_NVLS_ENABLE=0`), else a simulated world of two
//! devices. The elementwise op is `scale_f32` (×0.5) from the shipped kernels: the split is
//! the same for any elementwise activation.

// Ranks index several parallel vectors (streams, communicators, buffers) at once.
#![allow(clippy::needless_range_loop)]

use std::time::Instant;

use capture_core::collective::{Comm, Group, MultiCapture, ReduceOp};
use capture_core::{
    kernels, AllocPolicy, Blas, CaptureOptions, Context, DeviceBuffer, DeviceKind, Kernel, LaunchConfig, PinnedBuffer,
    Result, Stream, Transpose,
};

const H: usize = 1024; // model width
const F: usize = 4096; // MLP width

/// Deterministic weights in [-0.05, 0.05).
fn weights(len: usize, seed: u64) -> Vec<f32> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            ((x >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
        })
        .collect()
}

fn input(step: usize, b: usize) -> Vec<f32> {
    (0..H * b).map(|i| (((i * 31 + step * 17) % 101) as f32 - 50.0) / 50.0).collect()
}

/// One rank's shard and work buffers.
struct Rank {
    blas: Blas,
    scale: Kernel,
    w1: DeviceBuffer<f32>, // [F/2 x H], column-major
    w2: DeviceBuffer<f32>, // [H x F/2], column-major
    x_host: PinnedBuffer<f32>,
    x: DeviceBuffer<f32>, // [H x B]
    z: DeviceBuffer<f32>, // [F/2 x B]
    p: DeviceBuffer<f32>, // [H x B], partial output, then (all-reduced) the output
    b: usize,             // tokens (B)
}

/// The rank's part of the step, on either stream state: x <- pinned input; z = W1_r x;
/// z *= 0.5; p = W2_r z. The all-reduce follows, in the group.
fn shard_step<'a, S: capture_core::Records<'a>>(s: &mut Stream<S>, r: &'a Rank) -> Result<()> {
    let (f, b) = (F / 2, r.b);
    s.upload_async(&r.x, &r.x_host)?;
    r.blas.sgemm(s, Transpose::No, Transpose::No, (f, b, H), 1.0, (&r.w1, f), (&r.x, H), 0.0, (&r.z, f))?;
    s.launch(&r.scale, LaunchConfig::for_num_elems((f * b) as u32), (&r.z, &r.z, 0.5f32, (f * b) as u32))?;
    r.blas.sgemm(s, Transpose::No, Transpose::No, (H, b, f), 1.0, (&r.w2, H), (&r.z, f), 0.0, (&r.p, H))
}

fn main() -> Result<()> {
    env_logger::Builder::new().filter_level(log::LevelFilter::Warn).parse_default_env().init();
    let ctxs = match (Context::open(0), Context::open(1)) {
        (Ok(a), Ok(b)) => vec![a, b],
        _ => {
            println!("devices: simulated world of 2 (fewer than two GPUs here)");
            let w = Context::simulated_world(2)?;
            for c in &w {
                kernels::register_chain_kernels(c.sim().expect("simulated"));
            }
            w
        }
    };
    let gpu = ctxs[0].kind() == DeviceKind::Cuda;
    let steps: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(if gpu { 200 } else { 10 });
    // Tokens in the decode step: the all-reduce moves H x b f32 (b = 1: 4 KiB).
    let b: usize = std::env::args().nth(2).and_then(|s| s.parse().ok()).unwrap_or(8).max(1);
    println!("H = {H}, F = {F}, {b} token(s): all-reduce of {} KiB per step", H * b * 4 / 1024);
    if gpu {
        println!("devices: {} x2, NCCL {}", ctxs[0].name(), capture_core::collective::nccl_version()?);
    }
    let (w1, w2) = (weights(F * H, 1), weights(H * F, 2));
    let mut streams = ctxs.iter().map(Context::new_stream).collect::<Result<Vec<_>>>()?;
    let comms = Comm::init_all(&mut streams.iter_mut().collect::<Vec<_>>())?;
    let f = F / 2;
    let mut ranks = Vec::new();
    for (i, s) in streams.iter_mut().enumerate() {
        // Rank i: rows i*f.. of W1 (column-major [F x H]: row j of column c at c*F + j),
        // columns i*f.. of W2 (column-major [H x F]: contiguous).
        let w1_shard: Vec<f32> = (0..H).flat_map(|c| w1[c * F + i * f..c * F + (i + 1) * f].to_vec()).collect();
        let w2_shard: Vec<f32> = w2[i * f * H..(i + 1) * f * H].to_vec();
        let module = s.context().load_module(kernels::CHAIN_PTX)?;
        ranks.push(Rank {
            blas: Blas::new(s, Blas::DEFAULT_WORKSPACE)?,
            scale: module.kernel("scale_f32")?,
            w1: s.upload_new(&w1_shard)?,
            w2: s.upload_new(&w2_shard)?,
            x_host: s.alloc_pinned::<f32>(H * b)?,
            x: s.alloc_zeros::<f32>(H * b)?,
            z: s.alloc_zeros::<f32>(f * b)?,
            p: s.alloc_zeros::<f32>(H * b)?,
            b,
        });
    }
    // The single-device reference, on device 0 with the whole weights.
    let s0 = &mut streams[0];
    let ref_blas = Blas::new(s0, Blas::DEFAULT_WORKSPACE)?;
    let ref_scale = s0.context().load_module(kernels::CHAIN_PTX)?.kernel("scale_f32")?;
    let (rw1, rw2) = (s0.upload_new(&w1)?, s0.upload_new(&w2)?);
    let (rx, rz, ry) = (s0.alloc_zeros::<f32>(H * b)?, s0.alloc_zeros::<f32>(F * b)?, s0.alloc_zeros::<f32>(H * b)?);
    let reference = |s: &mut Stream, x: &[f32]| -> Result<Vec<f32>> {
        s.upload(&rx, x)?;
        ref_blas.sgemm(s, Transpose::No, Transpose::No, (F, b, H), 1.0, (&rw1, F), (&rx, H), 0.0, (&rz, F))?;
        s.launch(&ref_scale, LaunchConfig::for_num_elems((F * b) as u32), (&rz, &rz, 0.5f32, (F * b) as u32))?;
        ref_blas.sgemm(s, Transpose::No, Transpose::No, (H, b, F), 1.0, (&rw2, H), (&rz, F), 0.0, (&ry, H))?;
        s.download(&ry)
    };

    // Eager tensor-parallel steps: warm-up (NCCL connects lazily) and the eager timing.
    let eager_step = |streams: &mut [Stream], ranks: &[Rank], step: usize| -> Result<()> {
        let x = input(step, b);
        let mut g = Group::new();
        for (i, (s, r)) in streams.iter_mut().zip(ranks).enumerate() {
            r.x_host.write(&x)?;
            shard_step(s, r)?;
            g.all_reduce(s, &comms[i], &r.p, &r.p, ReduceOp::Sum)?;
        }
        g.launch()?;
        for s in streams.iter_mut() {
            s.synchronize()?;
        }
        Ok(())
    };
    for step in 0..3 {
        eager_step(&mut streams, &ranks, step)?;
    }
    let t = Instant::now();
    for step in 0..steps {
        eager_step(&mut streams, &ranks, step)?;
    }
    let eager_us = t.elapsed().as_secs_f64() * 1e6 / steps as f64;

    // Capture both ranks' step together, once.
    let (graphs, reports) = {
        let opts = CaptureOptions::new().alloc_policy(AllocPolicy::Deny);
        let mut cap = MultiCapture::begin(&mut streams, opts)?;
        let mut g = Group::new();
        for (i, r) in ranks.iter().enumerate() {
            let s = cap.stream(i).expect("rank");
            shard_step(s, r)?;
            g.all_reduce(s, &comms[i], &r.p, &r.p, ReduceOp::Sum)?;
        }
        g.launch()?;
        cap.finish()?
    };
    println!("captured: {} + {} nodes", reports[0].nodes.total, reports[1].nodes.total);

    // Replay with fresh inputs; compare every step with the single-device eager run.
    let mut worst = 0f32;
    let mut replay_s = 0f64;
    for step in 0..steps {
        let x = input(1000 + step, b);
        for r in &ranks {
            r.x_host.write(&x)?;
        }
        let t = Instant::now();
        graphs.launch(&mut streams)?;
        for s in streams.iter_mut() {
            s.synchronize()?;
        }
        replay_s += t.elapsed().as_secs_f64();
        let want = reference(&mut streams[0], &x)?;
        // Normwise: the largest difference over the largest output (the two ways sum the
        // 4,096 products in different orders, so near-zero outputs differ relatively more).
        let scale = want.iter().fold(0f32, |m, w| m.max(w.abs())).max(f32::MIN_POSITIVE);
        for (i, r) in ranks.iter().enumerate() {
            let got = streams[i].download(&r.p)?;
            let diff = got.iter().zip(&want).fold(0f32, |m, (g, w)| m.max((g - w).abs()));
            worst = worst.max(diff / scale);
        }
    }
    let replay_us = replay_s * 1e6 / steps as f64;
    let tol = 1e-4;
    println!(
        "{steps} replayed steps with fresh inputs vs a single-device eager run: largest difference {worst:.2e} of the largest output (tolerance {tol:.0e}): {}",
        if worst <= tol { "ok" } else { "FAILED" }
    );
    println!(
        "step (launch + synchronize both): eager {eager_us:.1} µs, replay {replay_us:.1} µs, {:.2}x",
        eager_us / replay_us
    );
    if worst > tol {
        std::process::exit(1);
    }
    Ok(())
}
