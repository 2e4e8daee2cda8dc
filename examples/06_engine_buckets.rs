//! A serving engine's start-up and hot path (issue #11): one graph per batch-size bucket
//! in a `GraphFamily` that shares the device's graph-memory pool, batches padded to the
//! next bucket, and the figures the issue asks for, side by side in one run:
//!
//! - device memory of the whole family against its largest bucket alone, and against the
//!   same graphs with their own (unshared) scratch;
//! - family capture time per graph against capturing the graphs one by one;
//! - CPU cost of bucket selection plus padding bookkeeping per replay;
//! - the replayed outputs against an eager run of the same work (bit-equal).
//!
//! Runs on the GPU when present, otherwise on the simulated device (it says which).
//!
//! ```text
//! cargo run --release --example 06_engine_buckets [-- ROW_FLOATS ROUNDS]
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use capture_core::engine::GraphFamily;
use capture_core::{
    kernels, AllocPolicy, CaptureOptions, Capturing, Context, DeviceBuffer, Kernel, LaunchConfig, OwnedGraph, Records,
    Result, Stream,
};

const BUCKETS: [usize; 8] = [1, 2, 4, 8, 16, 32, 64, 128];

struct Model {
    row: usize,
    scale: Kernel,
    add: Kernel,
    x: DeviceBuffer<f32>,
    y: DeviceBuffer<f32>,
}

/// The step for `rows` rows: y = 3x through three intermediates from the graph pool (at most
/// two live at once).
fn step<'a>(s: &mut Stream<Capturing<'a>>, m: &'a Model, rows: usize) -> Result<()> {
    let n = rows * m.row;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let a = s.alloc_async::<f32>(n)?;
    s.launch(&m.scale, cfg, (&m.x, &a, 2.0f32, n as u32))?; // a = 2x
    let c = s.alloc_async::<f32>(n)?;
    s.launch(&m.add, cfg, (&a, &m.x, &c, n as u32))?; // c = 3x
    s.free_async(a)?;
    let d = s.alloc_async::<f32>(n)?;
    s.launch(&m.scale, cfg, (&c, &d, 0.5f32, n as u32))?; // d = 1.5x
    s.free_async(c)?;
    s.launch(&m.scale, cfg, (&d, &m.y, 2.0f32, n as u32))?; // y = 3x
    s.free_async(d)
}

/// The same work with scratch the caller owns (an engine without a shared pool), eager or
/// captured.
fn step_unshared<'a, S: Records<'a>>(
    s: &mut Stream<S>,
    m: &'a Model,
    scratch: &'a [DeviceBuffer<f32>; 2],
    rows: usize,
) -> Result<()> {
    let n = rows * m.row;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let [a, c] = scratch;
    s.launch(&m.scale, cfg, (&m.x, a, 2.0f32, n as u32))?;
    s.launch(&m.add, cfg, (a, &m.x, c, n as u32))?;
    s.launch(&m.scale, cfg, (c, a, 0.5f32, n as u32))?;
    s.launch(&m.scale, cfg, (a, &m.y, 2.0f32, n as u32))
}

fn mib(b: u64) -> f64 {
    b as f64 / (1u64 << 20) as f64
}

fn in_use(ctx: &Context) -> Result<u64> {
    let (free, total) = ctx.mem_info()?;
    Ok((total - free) as u64)
}

fn median(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> Result<()> {
    env_logger::Builder::new().filter_level(log::LevelFilter::Warn).parse_default_env().init();
    let mut args = std::env::args().skip(1).map(|a| a.parse::<usize>());
    let row = args.next().and_then(|r| r.ok()).unwrap_or(1 << 16).max(1);
    let rounds = args.next().and_then(|r| r.ok()).unwrap_or(5).max(1);
    let largest = *BUCKETS.last().expect("buckets");

    let ctx = capture_examples::open_device();
    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let model = Arc::new(Model {
        row,
        scale: module.kernel("scale_f32")?,
        add: module.kernel("add_f32")?,
        x: stream.alloc_zeros::<f32>(largest * row)?,
        y: stream.alloc_zeros::<f32>(largest * row)?,
    });
    println!(
        "buckets {BUCKETS:?}, rows of {row} f32 ({:.2} MiB per row per intermediate), {rounds} rounds",
        mib((row * 4) as u64)
    );

    // 1. Memory: the largest bucket alone, the whole family, and the same graphs unshared.
    let mut alone = Vec::new();
    let mut family_pool = Vec::new();
    let mut unshared = Vec::new();
    let mut family_per_graph = Vec::new();
    let mut one_by_one_per_graph = Vec::new();
    let mut last_family = None;
    for _ in 0..rounds {
        stream.synchronize()?;
        ctx.trim_graph_memory()?;
        ctx.reset_graph_memory_high()?;
        let (f, _) = GraphFamily::builder(&[largest]).capture(&mut stream, model.clone(), step)?;
        alone.push(ctx.graph_memory()?.reserved);
        drop(f);
        stream.synchronize()?;
        ctx.trim_graph_memory()?;
        ctx.reset_graph_memory_high()?;

        let t = Instant::now();
        let (family, summary) = GraphFamily::builder(&BUCKETS).capture(&mut stream, model.clone(), step)?;
        family_per_graph.push(t.elapsed().as_secs_f64() * 1e6 / BUCKETS.len() as f64);
        family_pool.push(summary.pool_reserved);
        if last_family.is_none() {
            println!("{summary}");
        }
        last_family = Some(family);

        // One by one: each bucket's graph captured on its own, with the same warm-up replay,
        // starting from the same trimmed pool as the family did.
        stream.synchronize()?;
        ctx.trim_graph_memory()?;
        let t = Instant::now();
        let mut graphs = Vec::new();
        for &b in &BUCKETS {
            let opts = CaptureOptions::new().alloc_policy(AllocPolicy::Allow);
            let (g, _) = OwnedGraph::capture_with(&mut stream, opts, model.clone(), |s, m| step(s, m, b))?;
            g.launch(&mut stream)?;
            stream.synchronize()?;
            graphs.push(g);
        }
        one_by_one_per_graph.push(t.elapsed().as_secs_f64() * 1e6 / BUCKETS.len() as f64);
        drop(graphs);

        // Unshared: every bucket owns its two scratch buffers (cuMemAlloc), as an engine
        // without a shared pool does.
        stream.synchronize()?;
        let before = in_use(&ctx)?;
        let mut owned = Vec::new();
        for &b in &BUCKETS {
            let scratch = [stream.alloc_zeros::<f32>(b * row)?, stream.alloc_zeros::<f32>(b * row)?];
            owned.push(scratch);
        }
        let mut graphs = Vec::new();
        for (i, &b) in BUCKETS.iter().enumerate() {
            let mut g = stream.capture()?;
            step_unshared(&mut g, &model, &owned[i], b)?;
            graphs.push(g.finish()?.0);
        }
        for g in &graphs {
            g.launch(&mut stream)?;
        }
        stream.synchronize()?;
        unshared.push(in_use(&ctx)? - before);
        drop(graphs);
        drop(owned);
    }
    let family = last_family.as_mut().expect("captured");
    let (l, f, u) = (
        alone.iter().copied().max().unwrap_or(0),
        family_pool.iter().copied().max().unwrap_or(0),
        unshared.iter().copied().max().unwrap_or(0),
    );
    println!("memory (largest over {rounds} rounds):");
    println!("  largest bucket ({largest}) alone, graph pool:  {:>9.1} MiB", mib(l));
    println!(
        "  whole family, one shared graph pool:     {:>9.1} MiB  ({:.3}x the largest alone)",
        mib(f),
        f as f64 / l.max(1) as f64
    );
    println!(
        "  same graphs, each with its own scratch:  {:>9.1} MiB  ({:.3}x the largest alone)",
        mib(u),
        u as f64 / l.max(1) as f64
    );
    let (fam, obo) = (median(&mut family_per_graph), median(&mut one_by_one_per_graph));
    println!("capture per graph (median of {rounds}): family {fam:.1} µs, one by one {obo:.1} µs ({:.2}x)", obo / fam);

    // 2. Bucket selection and padding bookkeeping, per replay (CPU only).
    let sizes: Vec<usize> = (0..1024).map(|i| 1 + (i * 37) % largest).collect();
    let mut sel_ns = Vec::new();
    for _ in 0..rounds {
        let t = Instant::now();
        let mut acc = 0usize;
        for _ in 0..1000 {
            for &s in &sizes {
                let sel = black_box(&*family).select(black_box(s))?;
                acc += sel.padding;
            }
        }
        black_box(acc);
        sel_ns.push(t.elapsed().as_nanos() as f64 / (1000 * sizes.len()) as f64);
    }
    let sel = median(&mut sel_ns);
    println!("bucket selection + padding count per replay: {sel:.1} ns (median of {rounds}; budget 1000 ns)");

    // 3. Replay through the family vs the bucket's graph directly, and outputs vs eager.
    let n = 2000;
    let mut ratio = Vec::new();
    for _ in 0..rounds {
        let g = family.graph(16).expect("bucket 16");
        stream.synchronize()?;
        let t = Instant::now();
        for _ in 0..n {
            g.launch(&mut stream)?;
        }
        let direct = t.elapsed();
        stream.synchronize()?;
        let t = Instant::now();
        for _ in 0..n {
            family.launch(&mut stream, 13)?;
        }
        let via = t.elapsed();
        stream.synchronize()?;
        ratio.push(via.as_secs_f64() / direct.as_secs_f64().max(1e-12));
    }
    println!(
        "host time per replay, family.launch(13) / graph(16).launch: {:.3} (median of {rounds})",
        median(&mut ratio)
    );

    let mut ok = true;
    for size in [1usize, 3, 5, 17, 100, 128] {
        let sel = family.select(size)?;
        let rows: Vec<f32> = (0..size * row).map(|i| ((i * 7) % 101) as f32 * 0.25).collect();
        let mut input = sel.pad(&rows, row, 0.0)?;
        input.resize(largest * row, 0.0);
        stream.upload(&model.x, &input)?;
        family.launch(&mut stream, size)?;
        let replayed = stream.download(&model.y)?;
        let scratch = [stream.alloc_zeros::<f32>(sel.bucket * row)?, stream.alloc_zeros::<f32>(sel.bucket * row)?];
        step_unshared(&mut stream, &model, &scratch, sel.bucket)?;
        let eager = stream.download(&model.y)?;
        let same = replayed[..size * row].iter().zip(&eager[..size * row]).all(|(a, b)| a.to_bits() == b.to_bits());
        ok &= same;
    }
    println!("replayed outputs bit-equal to the eager run for sizes 1, 3, 5, 17, 100, 128: {ok}");
    println!("{}", family.stats());
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
