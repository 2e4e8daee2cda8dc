//! Benchmarks capture-core against the raw CUDA driver (cudarc's `sys` layer), side by side
//! in one process, on chains of N tiny dependent kernels (`incr_f32` from `CHAIN_PTX`).
//!
//! ```text
//! cargo build --release --example bench -p capture-examples
//! target/release/examples/bench [--csv PATH] [--reps R] [--ns 10,100,1000,10000] [--quick] [--only FAMILY,...]
//! ```
//!
//! What is measured, for N = 10, 100, 1,000, 10,000 (each a chain of N `incr_f32` launches,
//! 1 block of 256 threads, on a 256-float buffer):
//!
//! | measurement | timed region | unit |
//! | --- | --- | --- |
//! | `eager` | N launches + stream synchronize, divided by N | µs per kernel |
//! | `eager_enqueue` | the N launch calls alone (before the synchronize), divided by N | µs per kernel |
//! | `record` | begin capture + N captured launches (a family of its own, with many repetitions) | µs |
//! | `instantiate` | end capture + instantiate (library: `CaptureGuard::finish`) | µs |
//! | `capture_instantiate` | begin + N launches + end + instantiate, one region (`record_ci`: its first part) | µs |
//! | `capture` | begin + N launches + end capture + graph destroy, no instantiate (library: the guard is dropped, its abandon path) | µs |
//! | `bookkeeping_per_op` | (library `record` − raw `record`) / N, paired repetition by repetition | µs per op |
//! | `replay_sync` | graph launch + stream synchronize, per launch | µs |
//! | `replay_nosync` | K graph launches back to back + one synchronize, divided by K | µs |
//! | `replay_enqueue` | the K graph-launch calls alone, divided by K | µs |
//! | `update` / `update_step` | re-capture with one changed kernel parameter + `finish_update` (in-place `cuGraphExecUpdate`); `_step`: only the part after the last captured launch | µs |
//! | `reinstantiate` / `reinstantiate_step` | the same re-capture + `finish` (a new instantiate) + dropping the old graph | µs |
//!
//! Implementations (`impl` column): `lib` (capture-core), `raw` (cudarc `sys` calls, nothing
//! else), and the diagnostic `raw+bind` (raw, plus the `CudaContext::bind_to_thread` that
//! capture-core's CUDA backend makes before every driver call), so that the library's
//! overhead can be split into the bind and the rest.
//!
//! **Clock.** Everything timed here is host-side API cost (enqueueing a launch, recording
//! into a graph, instantiating, updating) or a host-observed round trip (launch + sync), so
//! the clock is the host's monotonic clock (`Instant`), read after a synchronize where GPU
//! work is included. CUDA events would time only the GPU side, which is the same for both
//! implementations by construction (they enqueue identical kernels and identical graphs).
//!
//! **Interleaving.** For each (measurement family, N), each repetition runs every
//! implementation once, in alternating order (lib, raw, raw+bind; then raw+bind, raw, lib),
//! after warm-up repetitions, so that clock or thermal drift affects all equally. The stream
//! is synchronized (idle) before each timed region. Repetitions: 300 (30 at N = 10,000) for
//! eager, capture and update families, 500/100 for `record`, 30/20 for replay (`--reps`
//! overrides). Reported: median, p10 and p90 over the repetitions.
//!
//! Without a CUDA driver or GPU it says so and exits 0.

use std::error::Error;
use std::ffi::{c_void, CString};
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::ptr::null_mut;
use std::sync::Arc;
use std::time::Instant;

use capture_core::{kernels, Context, DeviceBuffer, DeviceKind, Graph, GraphUpdate, Kernel, LaunchConfig, Stream};
use cudarc::driver::{sys, CudaContext};

mod capture;
mod probe;
mod raw;
mod replay;
mod stats;

use capture::{bookkeeping, capture_instantiate, capture_only, eager};
use probe::{context_probe, diagnostics};
use raw::{ck, Raw};
use replay::{replay, update};
use stats::*;

type BResult<T> = Result<T, Box<dyn Error>>;

/// Elements of the buffer each chain increments (one block of 256 threads).
const ELEMS: u32 = 256;

// ----- the library path -----------------------------------------------------------------

struct Lib<'k> {
    kernel: &'k Kernel,
    buf: &'k DeviceBuffer<f32>,
    cfg: LaunchConfig,
}

impl<'k> Lib<'k> {
    /// Records a chain of `n` launches (the first with element count `first`) on `s`.
    #[inline]
    fn chain<S: capture_core::Records<'k>>(&self, s: &mut Stream<S>, n: usize, first: u32) -> BResult<()> {
        for i in 0..n {
            s.launch(self.kernel, self.cfg, (self.buf, if i == 0 { first } else { ELEMS }))?;
        }
        Ok(())
    }

    fn graph(&self, s: &mut Stream, n: usize) -> BResult<Graph<'k>> {
        let mut g = s.capture()?;
        self.chain(&mut g, n, ELEMS)?;
        Ok(g.finish()?.0)
    }
}

// ----- configuration ------------------------------------------------------------------------

struct Args {
    csv: Option<String>,
    reps: Option<usize>,
    ns: Vec<usize>,
    quick: bool,
    sim: bool,
    only: Option<Vec<String>>,
}

fn parse_args() -> BResult<Args> {
    let mut a = Args { csv: None, reps: None, ns: vec![10, 100, 1000, 10000], quick: false, sim: false, only: None };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        match x.as_str() {
            "--csv" => a.csv = Some(it.next().ok_or("--csv needs a path")?),
            "--reps" => a.reps = Some(it.next().ok_or("--reps needs a number")?.parse()?),
            "--ns" => {
                a.ns = it.next().ok_or("--ns needs a list")?.split(',').map(str::parse).collect::<Result<_, _>>()?
            }
            "--quick" => a.quick = true,
            "--only" => a.only = Some(it.next().ok_or("--only needs a list")?.split(',').map(str::to_owned).collect()),
            // Checks the library half on the simulated device (no GPU needed; no timings).
            "--sim-selftest" => a.sim = true,
            "-h" | "--help" => {
                println!("usage: bench [--csv PATH] [--reps R] [--ns 10,100,1000,10000] [--quick] [--only eager,bookkeeping,capture_instantiate,capture,replay,update]");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}` (try --help)").into()),
        }
    }
    Ok(a)
}

impl Args {
    /// (warm-up, repetitions) for a family at chain length `n`: more repetitions where a
    /// repetition is cheap, so that small differences (a few %) stand out of the spread.
    fn reps(&self, family: Fam, n: usize) -> (usize, usize) {
        if self.quick {
            return (1, 3);
        }
        let warm = if n >= 10_000 { 2 } else { 5 };
        let r = match family {
            Fam::Replay => {
                if n >= 10_000 {
                    20
                } else {
                    30
                }
            }
            Fam::Bookkeeping => (1_000_000 / n).clamp(100, 500),
            Fam::Other => (300_000 / n).clamp(30, 300),
        };
        (warm, self.reps.unwrap_or(r))
    }
}

/// How a family's repetition count is chosen.
#[derive(Copy, Clone)]
enum Fam {
    Replay,
    Bookkeeping,
    Other,
}

impl Args {
    fn reps_other(&self, n: usize) -> (usize, usize) {
        self.reps(Fam::Other, n)
    }
}

// ----- measurement families -------------------------------------------------------------

/// Library body plus, on a GPU, the raw and raw+bind bodies.
fn bodies<'x>(lib: Body<'x>, raw: Option<(Body<'x>, Body<'x>)>) -> Vec<Body<'x>> {
    let mut v = vec![lib];
    if let Some((r, rb)) = raw {
        v.push(r);
        v.push(rb);
    }
    v
}

const IMPS: [&str; 3] = ["lib", "raw", "raw+bind"];

// ----- correctness check ----------------------------------------------------------------

/// Both paths compute the right thing: eager chains, graph replays, and an in-place update
/// with a changed parameter.
fn check(lib: &Lib<'_>, s: &mut Stream, raw: Option<&Raw>, raw_buf: &DeviceBuffer<f32>) -> BResult<()> {
    let n = 10;
    let expect = |v: &[f32], want: &dyn Fn(usize) -> f32, what: &str| -> BResult<()> {
        match v.iter().enumerate().find(|(i, x)| **x != want(*i)) {
            None => Ok(()),
            Some((i, x)) => Err(format!("check failed ({what}): element {i} is {x}, expected {}", want(i)).into()),
        }
    };
    // Library: eager chain, graph replay, in-place update with the first launch on 255 elements.
    s.memset_sync(lib.buf, 0)?;
    lib.chain(s, n, ELEMS)?;
    let mut graph = lib.graph(s, n)?;
    graph.launch(s)?;
    expect(&s.download(lib.buf)?, &|_| 20.0, "lib eager + replay")?;
    let mut g = s.capture()?;
    lib.chain(&mut g, n, ELEMS - 1)?;
    let (how, _) = g.finish_update(&mut graph)?;
    if how != GraphUpdate::InPlace {
        return Err(format!("check: finish_update gave {how:?}").into());
    }
    graph.launch(s)?;
    expect(&s.download(lib.buf)?, &|i| if i == ELEMS as usize - 1 { 29.0 } else { 30.0 }, "lib update")?;
    drop(graph);
    let Some(r) = raw else { return Ok(()) };
    // Raw: the same on its own buffer.
    s.memset_sync(raw_buf, 0)?;
    for _ in 0..n {
        r.launch(ELEMS)?;
    }
    let g = r.capture_chain(n, ELEMS, false)?;
    let e = r.instantiate(g)?;
    r.graph_launch(e)?;
    r.sync()?;
    expect(&s.download(raw_buf)?, &|_| 20.0, "raw eager + replay")?;
    let g2 = r.capture_chain(n, ELEMS - 1, false)?;
    r.exec_update(e, g2)?;
    r.graph_launch(e)?;
    r.sync()?;
    expect(&s.download(raw_buf)?, &|i| if i == ELEMS as usize - 1 { 29.0 } else { 30.0 }, "raw update")?;
    r.destroy_exec(e)?;
    r.destroy_graph(g)?;
    r.destroy_graph(g2)?;
    Ok(())
}

// ----- main -------------------------------------------------------------------------------

fn driver_version() -> String {
    let mut v = 0;
    // SAFETY: writes one int; the driver is loaded (checked by the caller).
    if unsafe { sys::cuDriverGetVersion(&mut v) } == sys::CUresult::CUDA_SUCCESS {
        format!("{}.{}", v / 1000, (v % 1000) / 10)
    } else {
        "?".into()
    }
}

/// Targets of issue #5, checked against the medians.
fn targets(res: &Results, ns: &[usize]) -> Vec<String> {
    let mut out = Vec::new();
    let worst = |meas: &str| -> Option<(f64, usize)> {
        ns.iter()
            .filter_map(|&n| Some(((res.get(meas, n, "lib")?.med / res.get(meas, n, "raw")?.med), n)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    };
    let mut line = |name: &str, ok: bool, detail: String| {
        out.push(format!("{:<44} {:<6} {detail}", name, if ok { "met" } else { "MISSED" }));
    };
    for (meas, limit, name) in [
        ("replay_sync", 1.02, "replay (sync) <= 1.02x raw, every N"),
        ("replay_nosync", 1.02, "replay (no sync) <= 1.02x raw, every N"),
        ("eager", 1.05, "eager launch <= 1.05x raw, every N"),
        ("capture_instantiate", 1.10, "capture+instantiate <= 1.10x raw, every N"),
    ] {
        if let Some((r, n)) = worst(meas) {
            line(name, r <= limit, format!("worst {r:.4}x at N={n}"));
        }
    }
    if let Some(&n) = ns.iter().max() {
        if let Some(b) = res.get("bookkeeping_per_op", n, "lib") {
            let ns_op = b.med * 1e3;
            let bind = res
                .get("bookkeeping_per_op", n, "raw+bind")
                .map(|b| format!(" (raw + bind_to_thread alone: {:.1} ns/op)", b.med * 1e3))
                .unwrap_or_default();
            line("bookkeeping <= 20 ns per captured op", ns_op <= 20.0, format!("{ns_op:.1} ns/op at N={n}{bind}"));
        }
    }
    for &n in ns {
        if let (Some(u), Some(r)) = (res.get("update_step", n, "lib"), res.get("reinstantiate_step", n, "lib")) {
            let full = match (res.get("update", n, "lib"), res.get("reinstantiate", n, "lib")) {
                (Some(uf), Some(rf)) => format!("; with the re-capture: {:.2}x", rf.med / uf.med),
                _ => String::new(),
            };
            let raw = match (res.get("update_step", n, "raw"), res.get("reinstantiate_step", n, "raw")) {
                (Some(ru), Some(rr)) => format!("; raw driver: {:.2}x", rr.med / ru.med),
                _ => String::new(),
            };
            let x = r.med / u.med;
            line(&format!("update >= 5x faster than re-instantiate, N={n}"), x >= 5.0, format!("{x:.2}x{full}{raw}"));
        }
    }
    out
}

fn run(a: &Args, ctx: Context) -> BResult<()> {
    let t_start = Instant::now();
    let cu = ctx.cudarc().cloned();
    println!(
        "bench: {} ({}), CUDA driver API {}, capture-core {}",
        ctx.name(),
        ctx.kind(),
        if cu.is_some() { driver_version() } else { "-".into() },
        env!("CARGO_PKG_VERSION")
    );
    let mut s = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let kernel = module.kernel("incr_f32")?;
    let buf = s.alloc_zeros::<f32>(ELEMS as usize)?;
    let raw_buf = s.alloc_zeros::<f32>(ELEMS as usize)?;
    let lib = Lib { kernel: &kernel, buf: &buf, cfg: LaunchConfig::for_num_elems(ELEMS) };
    let raw = match cu {
        // SAFETY: `raw_buf` outlives `raw` (declared before it, dropped after it).
        Some(cu) => Some(Raw::new(cu, unsafe { raw_buf.device_ptr() })?),
        None => None,
    };
    check(&lib, &mut s, raw.as_ref(), &raw_buf)?;
    println!("check: library and raw paths compute the expected values (eager, replay, in-place update)");

    let mut res = Results::default();
    let mut failures = Vec::new();
    type Family = fn(&Args, &mut Results, &Lib<'_>, &mut Stream, Option<&Raw>, usize) -> BResult<()>;
    let families: [(&str, Family); 6] = [
        ("eager", eager),
        ("bookkeeping", bookkeeping),
        ("capture_instantiate", capture_instantiate),
        ("capture", capture_only),
        ("replay", replay),
        ("update", update),
    ];
    for (name, f) in families {
        if a.only.as_ref().is_some_and(|o| !o.iter().any(|x| x == name)) {
            continue;
        }
        for &n in &a.ns {
            let t = Instant::now();
            if let Err(e) = f(a, &mut res, &lib, &mut s, raw.as_ref(), n) {
                println!("bench: {name} N={n} failed: {e}");
                failures.push(format!("{name} N={n}: {e}"));
            }
            eprintln!("  [{name} N={n}: {:.1} s]", t.elapsed().as_secs_f64());
        }
    }
    if let Some(r) = raw.as_ref() {
        if let Err(e) = diagnostics(&mut res, r, *a.ns.iter().max().unwrap_or(&1000)) {
            failures.push(format!("diagnostics: {e}"));
        }
    }

    let ns = &a.ns;
    print_table(&res, "eager", "us per kernel: N launches + sync, / N", ns, &IMPS);
    print_table(&res, "eager_enqueue", "us per kernel: the N launch calls alone", ns, &IMPS);
    print_table(&res, "record", "us: begin capture + N captured launches", ns, &IMPS);
    print_table(&res, "record_ci", "us: the same, inside the capture_instantiate repetitions", ns, &IMPS);
    print_table(&res, "bookkeeping_per_op", "us per op: (impl - raw) record / N, paired", ns, &IMPS);
    print_table(&res, "instantiate", "us: end capture + instantiate (lib: finish())", ns, &IMPS);
    print_table(&res, "capture_instantiate", "us: begin + N launches + end + instantiate", ns, &IMPS);
    print_table(&res, "capture", "us: begin + N + end + graph destroy (lib: guard dropped)", ns, &IMPS);
    print_table(&res, "replay_sync", "us per launch: graph launch + sync", ns, &IMPS[..2]);
    print_table(&res, "replay_nosync", "us per launch: K launches + one sync, / K", ns, &IMPS[..2]);
    print_table(&res, "replay_enqueue", "us per launch: the graph-launch call alone", ns, &IMPS[..2]);
    print_table(&res, "update", "us: re-capture + finish_update (in place)", ns, &IMPS[..2]);
    print_table(&res, "update_step", "us: finish_update alone (raw: end + cuGraphExecUpdate)", ns, &IMPS[..2]);
    print_table(&res, "reinstantiate", "us: re-capture + finish + drop old graph", ns, &IMPS[..2]);
    print_table(
        &res,
        "reinstantiate_step",
        "us: finish + drop old (raw: end + instantiate + destroy old)",
        ns,
        &IMPS[..2],
    );
    if let Some(d) = res.get("diag_bind_call", 0, "raw") {
        println!("\ndiagnostic: one CudaContext::bind_to_thread (context already current): {:.1} ns", d.med * 1e3);
    }
    if let Some(d) = res.get("diag_ctx_get_current_call", 0, "raw") {
        println!("diagnostic: one cuCtxGetCurrent + compare: {:.1} ns", d.med * 1e3);
    }
    if let Some(&n) = ns.iter().max() {
        if let Some(d) = res.get("diag_node_type_per_node", n, "raw") {
            println!(
                "diagnostic: counting nodes by type as finish() does (cuGraphGetNodes x2 + cuGraphNodeGetType per node), N={n}: {:.1} ns per node",
                d.med * 1e3
            );
        }
    }
    println!("\ntargets (lib vs raw, medians):");
    for t in targets(&res, ns) {
        println!("  {t}");
    }
    if let Some(path) = &a.csv {
        std::fs::write(path, res.csv())?;
        println!("\nwrote {} rows to {path}", res.rows.len());
    }
    // Last, after the CSV is written: it creates a second context.
    if let (Some(r), false) = (raw.as_ref(), a.quick) {
        match context_probe(r, &mut s, &raw_buf) {
            Ok(lines) => lines.iter().for_each(|l| println!("context probe: {l}")),
            Err(e) => println!("context probe failed: {e}"),
        }
    }
    println!("bench: done in {:.1} s", t_start.elapsed().as_secs_f64());
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!("{} measurement(s) failed: {failures:?}", failures.len()).into())
    }
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("bench: {e}");
            return ExitCode::FAILURE;
        }
    };
    let ctx = if args.sim {
        let ctx = Context::simulated();
        if let Some(sim) = ctx.sim() {
            kernels::register_chain_kernels(sim);
        }
        ctx
    } else {
        // cudarc panics when libcuda is missing: ask first.
        // SAFETY: only tries to dlopen the driver library.
        if !unsafe { sys::is_culib_present() } {
            println!("bench: no CUDA driver (libcuda.so) on this machine, so there is nothing to measure; run it on a machine with an NVIDIA GPU.");
            return ExitCode::SUCCESS;
        }
        match Context::open(0) {
            Ok(c) => c,
            Err(e) => {
                println!("bench: no usable CUDA GPU ({e}); nothing to measure.");
                return ExitCode::SUCCESS;
            }
        }
    };
    debug_assert!(args.sim || ctx.kind() == DeviceKind::Cuda);
    match run(&args, ctx) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("bench: {e}");
            ExitCode::FAILURE
        }
    }
}
