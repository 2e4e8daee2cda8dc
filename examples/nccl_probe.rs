//! Collectives capturability probe (issue #10, part 2), in the spirit of seed 003: for each
//! collective × element type × message size × capture mode, on two devices of this process,
//! does the capture succeed, does every replay with **fresh input data** give the right
//! result (a stale graph fails here), and what do capture and replay cost.
//!
//! ```text
//! cargo run --release --example nccl_probe [-- --csv PATH] [--sizes 4096,1048576,67108864] [--rounds R]
//! ```
//! On two GPUs (NCCL through cudarc; keep `NCCL_NVLS_ENABLE=0`), else on a simulated world
//! of two devices (it says which). Inputs reach the graph through pinned buffers copied in
//! the graph (`upload_async`), so each replay reads what the host wrote just before it.

// Ranks index several parallel vectors (streams, communicators, buffers) at once.
#![allow(clippy::needless_range_loop)]

use std::io::Write;
use std::time::Instant;

use capture_core::collective::{Comm, Group, MultiCapture, NcclElem, ReduceOp};
use capture_core::{CaptureMode, CaptureOptions, Context, DeviceBuffer, DeviceKind, PinnedBuffer, Result, Stream};

const COLLECTIVES: [&str; 6] = ["all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce", "send_recv"];

struct Row {
    collective: &'static str,
    dtype: &'static str,
    bytes: usize,
    mode: CaptureMode,
    captured: std::result::Result<(), String>,
    fresh_ok: Option<bool>,
    capture_us: f64,
    replay_us: f64,
    eager_us: f64,
}

/// The element types probed, as f64 <-> element conversions for building inputs and checks.
trait Elem: NcclElem {
    const NAME: &'static str;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
}
impl Elem for f32 {
    const NAME: &'static str = "f32";
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}
impl Elem for i32 {
    const NAME: &'static str = "i32";
    fn from_f64(x: f64) -> Self {
        x as i32
    }
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Elem for capture_core::collective::F16 {
    const NAME: &'static str = "f16";
    fn from_f64(x: f64) -> Self {
        Self::from_f32(x as f32)
    }
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
}
impl Elem for capture_core::collective::Bf16 {
    const NAME: &'static str = "bf16";
    fn from_f64(x: f64) -> Self {
        Self::from_f32(x as f32)
    }
    fn to_f64(self) -> f64 {
        f64::from(self.to_f32())
    }
}

/// Rank r's input element i in round k: small integers, exact in every type (their sums over
/// two ranks too: below 256, exact even in bf16).
fn input(r: usize, i: usize, k: usize) -> f64 {
    ((r * 7 + i * 3 + k * 11) % 97) as f64
}

fn expected(coll: &str, n: usize, count: usize, r: usize, k: usize) -> Vec<f64> {
    let sum = |i: usize| (0..n).map(|q| input(q, i, k)).sum::<f64>();
    match coll {
        "all_reduce" => (0..count).map(sum).collect(),
        "reduce" => (0..count).map(|i| if r == 0 { sum(i) } else { f64::NAN }).collect(),
        "broadcast" => (0..count).map(|i| input(0, i, k)).collect(),
        "all_gather" => (0..n * count).map(|j| input(j / count, j % count, k)).collect(),
        "reduce_scatter" => (0..count).map(|i| sum(r * count + i)).collect(),
        "send_recv" => (0..count).map(|i| input((r + n - 1) % n, i, k)).collect(),
        _ => Vec::new(),
    }
}

struct Bufs<T> {
    pinned: Vec<PinnedBuffer<T>>,
    send: Vec<DeviceBuffer<T>>,
    recv: Vec<DeviceBuffer<T>>,
}

fn issue<'g, T: Elem, S: capture_core::Records<'g>>(
    g: &mut Group<'g>,
    coll: &str,
    s: &mut Stream<S>,
    comm: &'g Comm,
    b: &'g Bufs<T>,
    r: usize,
    n: usize,
) -> Result<()> {
    match coll {
        "all_reduce" => g.all_reduce(s, comm, &b.send[r], &b.recv[r], ReduceOp::Sum)?,
        "reduce" => g.reduce(s, comm, &b.send[r], &b.recv[r], ReduceOp::Sum, 0)?,
        "broadcast" => g.broadcast(s, comm, &b.send[r], &b.recv[r], 0)?,
        "all_gather" => g.all_gather(s, comm, &b.send[r], &b.recv[r])?,
        "reduce_scatter" => g.reduce_scatter(s, comm, &b.send[r], &b.recv[r], ReduceOp::Sum)?,
        _ => {
            g.send(s, comm, &b.send[r], (r + 1) % n)?;
            g.recv(s, comm, &b.recv[r], (r + n - 1) % n)?
        }
    };
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn probe<T: Elem>(
    coll: &'static str,
    bytes: usize,
    mode: CaptureMode,
    rounds: usize,
    streams: &mut [Stream],
    comms: &[Comm],
) -> Result<Row> {
    let n = streams.len();
    let count = (bytes / std::mem::size_of::<T>()).max(1);
    let (send_len, recv_len) = match coll {
        "all_gather" => (count, count * n),
        "reduce_scatter" => (count * n, count),
        _ => (count, count),
    };
    let mut b = Bufs::<T> { pinned: Vec::new(), send: Vec::new(), recv: Vec::new() };
    for s in streams.iter_mut() {
        b.pinned.push(s.alloc_pinned::<T>(send_len)?);
        b.send.push(s.alloc_zeros::<T>(send_len)?);
        b.recv.push(s.alloc_zeros::<T>(recv_len)?);
    }
    let write_inputs = |b: &Bufs<T>, k: usize| -> Result<()> {
        for (r, p) in b.pinned.iter().enumerate() {
            p.write(&(0..send_len).map(|i| T::from_f64(input(r, i, k))).collect::<Vec<_>>())?;
        }
        Ok(())
    };
    // Eager once (NCCL connects lazily), timed as the eager baseline.
    let mut eager = Vec::new();
    for k in 0..3 {
        write_inputs(&b, k)?;
        let t = Instant::now();
        for r in 0..n {
            streams[r].upload_async(&b.send[r], &b.pinned[r])?; // as the graph does
        }
        let mut g = Group::new();
        for r in 0..n {
            issue(&mut g, coll, &mut streams[r], &comms[r], &b, r, n)?;
        }
        g.launch()?;
        for s in streams.iter_mut() {
            s.synchronize()?;
        }
        eager.push(t.elapsed().as_secs_f64() * 1e6);
    }
    let mut row = Row {
        collective: coll,
        dtype: T::NAME,
        bytes,
        mode,
        captured: Ok(()),
        fresh_ok: None,
        capture_us: 0.0,
        replay_us: 0.0,
        eager_us: median(&mut eager),
    };
    let t = Instant::now();
    let captured = (|| {
        let mut cap = MultiCapture::begin(streams, CaptureOptions::new().mode(mode))?;
        let mut g = Group::new();
        for r in 0..n {
            let s = cap.stream(r).expect("rank");
            s.upload_async(&b.send[r], &b.pinned[r])?;
            issue(&mut g, coll, s, &comms[r], &b, r, n)?;
        }
        g.launch()?;
        cap.finish()
    })();
    row.capture_us = t.elapsed().as_secs_f64() * 1e6;
    let (graphs, _) = match captured {
        Ok(x) => x,
        Err(e) => {
            row.captured = Err(e.to_string());
            return Ok(row);
        }
    };
    let mut ok = true;
    let mut replay = Vec::new();
    for k in 10..10 + rounds {
        write_inputs(&b, k)?;
        let t = Instant::now();
        graphs.launch(streams)?;
        for s in streams.iter_mut() {
            s.synchronize()?;
        }
        replay.push(t.elapsed().as_secs_f64() * 1e6);
        for r in 0..n {
            let got = streams[r].download(&b.recv[r])?;
            let want = expected(coll, n, count, r, k);
            ok &= got.iter().zip(&want).all(|(g, w)| w.is_nan() || g.to_f64() == *w);
        }
    }
    row.fresh_ok = Some(ok);
    row.replay_us = median(&mut replay);
    Ok(row)
}

fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> Result<()> {
    env_logger::Builder::new().filter_level(log::LevelFilter::Error).parse_default_env().init();
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: &str| args.iter().position(|a| a == k).and_then(|i| args.get(i + 1)).cloned();
    let sizes: Vec<usize> = arg("--sizes")
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![4 << 10, 1 << 20, 64 << 20]);
    let rounds: usize = arg("--rounds").and_then(|r| r.parse().ok()).unwrap_or(5).max(1);
    let ctxs = match (Context::open(0), Context::open(1)) {
        (Ok(a), Ok(b)) => vec![a, b],
        _ => {
            println!("devices: simulated world of 2 (fewer than two GPUs here)");
            Context::simulated_world(2)?
        }
    };
    if ctxs[0].kind() == DeviceKind::Cuda {
        let v = capture_core::collective::nccl_version()?;
        println!("devices: {} and {}; NCCL {v}", ctxs[0].name(), ctxs[1].name());
    }
    let mut streams = ctxs.iter().map(Context::new_stream).collect::<Result<Vec<_>>>()?;
    let comms = Comm::init_all(&mut streams.iter_mut().collect::<Vec<_>>())?;
    let mut rows = Vec::new();
    for coll in COLLECTIVES {
        for &bytes in &sizes {
            for mode in [CaptureMode::Global, CaptureMode::ThreadLocal, CaptureMode::Relaxed] {
                rows.push(probe::<f32>(coll, bytes, mode, rounds, &mut streams, &comms)?);
                rows.push(probe::<i32>(coll, bytes, mode, rounds, &mut streams, &comms)?);
                rows.push(probe::<capture_core::collective::Bf16>(coll, bytes, mode, rounds, &mut streams, &comms)?);
                rows.push(probe::<capture_core::collective::F16>(coll, bytes, mode, rounds, &mut streams, &comms)?);
            }
        }
    }
    println!("| collective | type | bytes per rank | mode | capture | fresh-data replays | capture (µs) | replay (µs, median) | eager (µs, median) |");
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let mut csv = String::from("collective,dtype,bytes,mode,captured,fresh_ok,capture_us,replay_us,eager_us,error\n");
    for r in &rows {
        let cap = match &r.captured {
            Ok(()) => "ok".to_owned(),
            Err(e) => format!("FAILED: {e}"),
        };
        let fresh = match r.fresh_ok {
            Some(true) => "right",
            Some(false) => "STALE/WRONG",
            None => "-",
        };
        println!(
            "| {} | {} | {} | {:?} | {} | {} | {:.1} | {:.1} | {:.1} |",
            r.collective, r.dtype, r.bytes, r.mode, cap, fresh, r.capture_us, r.replay_us, r.eager_us
        );
        csv += &format!(
            "{},{},{},{:?},{},{},{:.2},{:.2},{:.2},\"{}\"\n",
            r.collective,
            r.dtype,
            r.bytes,
            r.mode,
            r.captured.is_ok(),
            r.fresh_ok.map_or("".into(), |b| b.to_string()),
            r.capture_us,
            r.replay_us,
            r.eager_us,
            r.captured.as_ref().err().map_or(String::new(), |e| e.replace('"', "'"))
        );
    }
    if let Some(path) = arg("--csv") {
        std::fs::File::create(&path)
            .and_then(|mut f| f.write_all(csv.as_bytes()))
            .map_err(|source| capture_core::Error::Io { op: "nccl_probe --csv", path: path.clone(), source })?;
    }
    let bad = rows.iter().filter(|r| r.captured.is_err() || r.fresh_ok == Some(false)).count();
    println!("{} combinations, {} failed capture or gave wrong data after fresh inputs", rows.len(), bad);
    Ok(())
}
