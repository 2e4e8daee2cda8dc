//! An all-reduce alone at decode sizes, eager vs replayed from a captured graph, on two
//! devices of this process (issue #10, part 5). Each iteration is one all-reduce on both
//! ranks and a synchronize of both streams; the medians and the 10th/90th percentiles of the
//! per-iteration host time are printed. `bench/torch_nccl_allreduce.py` measures PyTorch's
//! `torch.distributed` all-reduce eager and inside `torch.cuda.graph` the same way.
//!
//! With `--processes`, each rank is a process of its own (this program run again per rank,
//! `Comm::init_rank`), as under `torchrun`; only rank 0 prints.
//!
//! ```text
//! cargo run --release --example nccl_bench [-- ITERS] [--processes]
//! ```

// Ranks index several parallel vectors (streams, communicators, buffers) at once.
#![allow(clippy::needless_range_loop)]

use std::time::Instant;

use capture_core::collective::{Comm, CommId, Group, MultiCapture, ReduceOp};
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
    let args: Vec<String> = std::env::args().collect();
    let iters: usize = args.iter().skip(1).find_map(|s| s.parse().ok()).unwrap_or(500).max(10);
    if let Ok(spec) = std::env::var("NCCL_BENCH_RANK") {
        // A rank of `--processes`: "<rank> <id>".
        let (rank, id) = spec.split_once(' ').expect("rank and id");
        let rank: usize = rank.parse().expect("rank");
        let id: CommId = id.parse()?;
        let ctx = Context::open(rank)?;
        let mut stream = ctx.new_stream()?;
        let comm = Comm::init_rank(&mut stream, &id, rank, 2, std::time::Duration::from_secs(120))?;
        return run(iters, &mut [stream], &[comm], rank == 0);
    }
    if args.iter().any(|a| a == "--processes") {
        let ctx = Context::open(0)?;
        Context::open(1)?;
        let id = CommId::new(&ctx)?;
        println!("one rank per process (Comm::init_rank), 2 processes");
        let exe = std::env::current_exe().expect("own path");
        let children: Vec<_> = (0..2)
            .map(|r| {
                std::process::Command::new(&exe)
                    .arg(iters.to_string())
                    .env("NCCL_BENCH_RANK", format!("{r} {id}"))
                    .spawn()
                    .expect("spawn a rank")
            })
            .collect();
        for mut c in children {
            let st = c.wait().expect("wait for a rank");
            assert!(st.success(), "a rank failed: {st}");
        }
        return Ok(());
    }
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
    println!("one process drives both ranks (Comm::init_all)");
    run(iters, &mut streams, &comms, true)
}

/// The measurement, over the ranks of this process (`streams[i]` with `comms[i]`).
fn run(iters: usize, streams: &mut [Stream], comms: &[Comm], print: bool) -> Result<()> {
    let local = streams.len();
    if print {
        println!("all_reduce f32 (sum) on 2 ranks, {iters} iterations; µs per iteration: median [p10, p90]");
        println!("{:>10} {:>26} {:>26} {:>8}", "bytes", "eager", "graph replay", "speed-up");
    }
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
            for r in 0..local {
                g.all_reduce(&mut streams[r], &comms[r], &send[r], &recv[r], ReduceOp::Sum)?;
            }
            g.launch()?;
            sync(streams)?;
            if i >= 20 {
                eager.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        let (graphs, _) = {
            let mut cap = MultiCapture::begin(streams, CaptureOptions::new())?;
            let mut g = Group::new();
            for r in 0..local {
                g.all_reduce(cap.stream(r).expect("rank"), &comms[r], &send[r], &recv[r], ReduceOp::Sum)?;
            }
            g.launch()?;
            cap.finish()?
        };
        let mut replay = Vec::with_capacity(iters);
        for i in 0..iters + 20 {
            let t = Instant::now();
            graphs.launch(streams)?;
            sync(streams)?;
            if i >= 20 {
                replay.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
        let got = streams[local - 1].download(&recv[local - 1])?;
        assert!(got.iter().all(|&v| v == 2.0), "all_reduce result");
        let (e, e10, e90) = percentiles(&mut eager);
        let (r, r10, r90) = percentiles(&mut replay);
        if print {
            println!(
                "{bytes:>10} {:>26} {:>26} {:>7.2}x",
                format!("{e:.1} [{e10:.1}, {e90:.1}]"),
                format!("{r:.1} [{r10:.1}, {r90:.1}]"),
                e / r
            );
        }
    }
    Ok(())
}
