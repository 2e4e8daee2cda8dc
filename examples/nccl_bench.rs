//! An all-reduce alone at decode sizes, eager vs replayed from a captured graph, on two
//! devices of this process (issue #10, part 5). Each iteration is one all-reduce on both
//! ranks and a synchronize of both streams; the medians and the 10th/90th percentiles of the
//! per-iteration host time are printed. `bench/torch_nccl_allreduce.py` measures PyTorch's
//! `torch.distributed` all-reduce eager and inside `torch.cuda.graph` the same way.
//!
//! ```text
//! cargo run --release --example nccl_bench [-- ITERS]
//! ```

// Ranks index several parallel vectors (streams, communicators, buffers) at once.
#![allow(clippy::needless_range_loop)]

use std::time::Instant;

use capture_core::collective::{Comm, Group, MultiCapture, ReduceOp};
use capture_core::{CaptureOptions, Context, DeviceBuffer, Result, Stream};

const SIZES: [usize; 5] = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20];

fn percentiles(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.1), at(0.9))
}

fn sync(streams: &mut [Stream]) -> Result<()> {
    for s in streams.iter_mut() {
        s.synchronize()?;
    }
    Ok(())
}

fn main() -> Result<()> {
    let iters: usize = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(500).max(10);
    let ctxs = match (Context::open(0), Context::open(1)) {
        (Ok(a), Ok(b)) => vec![a, b],
        _ => {
            println!(
                "devices: simulated world of 2 (fewer than two GPUs here): host-side timings, not a GPU measurement"
            );
            Context::simulated_world(2)?
        }
    };
    let mut streams = ctxs.iter().map(Context::new_stream).collect::<Result<Vec<_>>>()?;
    let comms = Comm::init_all(&mut streams.iter_mut().collect::<Vec<_>>())?;
    println!("all_reduce f32 (sum) on 2 ranks, {iters} iterations; µs per iteration: median [p10, p90]");
    println!("{:>10} {:>26} {:>26} {:>8}", "bytes", "eager", "graph replay", "speed-up");
    for bytes in SIZES {
        let n = bytes / 4;
        let send: Vec<DeviceBuffer<f32>> =
            streams.iter_mut().map(|s| s.upload_new(&vec![1.0f32; n])).collect::<Result<_>>()?;
        let recv: Vec<DeviceBuffer<f32>> =
            streams.iter_mut().map(|s| s.alloc_zeros::<f32>(n)).collect::<Result<_>>()?;
        let mut eager = Vec::with_capacity(iters);
        for i in 0..iters + 20 {
            let t = Instant::now();
            let mut g = Group::new();
            for r in 0..2 {
                g.all_reduce(&mut streams[r], &comms[r], &send[r], &recv[r], ReduceOp::Sum)?;
            }
            g.launch()?;
            sync(&mut streams)?;
            if i >= 20 {
                eager.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        let (graphs, _) = {
            let mut cap = MultiCapture::begin(&mut streams, CaptureOptions::new())?;
            let mut g = Group::new();
            for r in 0..2 {
                g.all_reduce(cap.stream(r).expect("rank"), &comms[r], &send[r], &recv[r], ReduceOp::Sum)?;
            }
            g.launch()?;
            cap.finish()?
        };
        let mut replay = Vec::with_capacity(iters);
        for i in 0..iters + 20 {
            let t = Instant::now();
            graphs.launch(&mut streams)?;
            sync(&mut streams)?;
            if i >= 20 {
                replay.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        let got = streams[1].download(&recv[1])?;
        assert!(got.iter().all(|&v| v == 2.0), "all_reduce result");
        let (e, e10, e90) = percentiles(&mut eager);
        let (r, r10, r90) = percentiles(&mut replay);
        println!(
            "{bytes:>10} {:>26} {:>26} {:>7.2}x",
            format!("{e:.1} [{e10:.1}, {e90:.1}]"),
            format!("{r:.1} [{r10:.1}, {r90:.1}]"),
            e / r
        );
    }
    Ok(())
}
