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

type BResult<T> = Result<T, Box<dyn Error>>;

/// Elements of the buffer each chain increments (one block of 256 threads).
const ELEMS: u32 = 256;

// ----- raw driver path ------------------------------------------------------------------

fn ck(r: sys::CUresult, what: &str) -> BResult<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {r:?}").into())
    }
}

/// The raw path: one stream, the same PTX loaded as a second module, its own buffer.
/// Every call is a plain `sys` call with its result checked.
struct Raw {
    cu: Arc<CudaContext>,
    stream: sys::CUstream,
    module: sys::CUmodule,
    func: sys::CUfunction,
    ptr: u64,
}

impl Raw {
    fn new(cu: Arc<CudaContext>, ptr: u64) -> BResult<Self> {
        cu.bind_to_thread()?;
        let image = CString::new(kernels::CHAIN_PTX)?;
        let mut module = null_mut();
        // SAFETY: `image` is NUL-terminated PTX text that outlives the call; the context is current.
        ck(unsafe { sys::cuModuleLoadData(&mut module, image.as_ptr() as *const c_void) }, "cuModuleLoadData")?;
        let name = CString::new("incr_f32")?;
        let mut func = null_mut();
        // SAFETY: `module` was just loaded; `name` is NUL-terminated.
        ck(unsafe { sys::cuModuleGetFunction(&mut func, module, name.as_ptr()) }, "cuModuleGetFunction")?;
        let mut stream = null_mut();
        // SAFETY: writes a new stream handle; flags as capture-core's streams (non-blocking).
        ck(
            unsafe { sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32) },
            "cuStreamCreate",
        )?;
        Ok(Self { cu, stream, module, func, ptr })
    }

    /// `incr_f32(ptr, n)`, 1 block of 256 threads: the same launch as the library's.
    #[inline]
    fn launch(&self, n: u32) -> BResult<()> {
        let mut p = self.ptr;
        let mut n = n;
        let mut params = [&mut p as *mut u64 as *mut c_void, &mut n as *mut u32 as *mut c_void];
        // SAFETY: `func` takes (u64, u32), both pointed at by `params`, which outlive the call
        // (the driver copies parameter values at launch); `ptr` is a live 256-float buffer.
        ck(
            unsafe {
                sys::cuLaunchKernel(self.func, 1, 1, 1, ELEMS, 1, 1, 0, self.stream, params.as_mut_ptr(), null_mut())
            },
            "cuLaunchKernel",
        )
    }

    /// What capture-core's CUDA backend does before each driver call.
    #[inline]
    fn bind(&self) -> BResult<()> {
        Ok(self.cu.bind_to_thread()?)
    }

    fn sync(&self) -> BResult<()> {
        // SAFETY: live stream.
        ck(unsafe { sys::cuStreamSynchronize(self.stream) }, "cuStreamSynchronize")
    }

    fn begin(&self) -> BResult<()> {
        // SAFETY: live, non-legacy stream; Global mode as the library's default.
        ck(
            unsafe {
                sys::cuStreamBeginCapture_v2(self.stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
            },
            "cuStreamBeginCapture_v2",
        )
    }

    fn end(&self) -> BResult<sys::CUgraph> {
        let mut g = null_mut();
        // SAFETY: the stream is capturing; the graph handle is written on success.
        ck(unsafe { sys::cuStreamEndCapture(self.stream, &mut g) }, "cuStreamEndCapture")?;
        Ok(g)
    }

    fn instantiate(&self, g: sys::CUgraph) -> BResult<sys::CUgraphExec> {
        let mut e = null_mut();
        let flags = u64::from(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.0);
        // SAFETY: `g` is a live graph; same flags as capture-core.
        ck(unsafe { sys::cuGraphInstantiateWithFlags(&mut e, g, flags) }, "cuGraphInstantiateWithFlags")?;
        Ok(e)
    }

    fn graph_launch(&self, e: sys::CUgraphExec) -> BResult<()> {
        // SAFETY: live exec and stream.
        ck(unsafe { sys::cuGraphLaunch(e, self.stream) }, "cuGraphLaunch")
    }

    /// In-place update; an error unless the driver updated it in place.
    fn exec_update(&self, e: sys::CUgraphExec, g: sys::CUgraph) -> BResult<()> {
        let mut info = std::mem::MaybeUninit::<sys::CUgraphExecUpdateResultInfo>::zeroed();
        // SAFETY: live handles; `info` is writable for the call.
        ck(unsafe { sys::cuGraphExecUpdate_v2(e, g, info.as_mut_ptr()) }, "cuGraphExecUpdate_v2")
    }

    fn destroy_graph(&self, g: sys::CUgraph) -> BResult<()> {
        // SAFETY: live graph, not used afterwards.
        ck(unsafe { sys::cuGraphDestroy(g) }, "cuGraphDestroy")
    }

    fn destroy_exec(&self, e: sys::CUgraphExec) -> BResult<()> {
        // SAFETY: live exec, not used afterwards.
        ck(unsafe { sys::cuGraphExecDestroy(e) }, "cuGraphExecDestroy")
    }

    /// Captures a chain of `n` launches (the first with element count `first`); returns the graph.
    fn capture_chain(&self, n: usize, first: u32, bind: bool) -> BResult<sys::CUgraph> {
        self.begin()?;
        for i in 0..n {
            if bind {
                self.bind()?;
            }
            self.launch(if i == 0 { first } else { ELEMS })?;
        }
        self.end()
    }

    /// `cuGraphGetNodes` twice and `cuGraphNodeGetType` per node: what `finish()` does to count nodes.
    fn count_node_types(&self, g: sys::CUgraph) -> BResult<usize> {
        let mut n = 0usize;
        // SAFETY: a null array asks for the count only.
        ck(unsafe { sys::cuGraphGetNodes(g, null_mut(), &mut n) }, "cuGraphGetNodes")?;
        let mut nodes: Vec<sys::CUgraphNode> = vec![null_mut(); n];
        // SAFETY: room for `n` handles.
        ck(unsafe { sys::cuGraphGetNodes(g, nodes.as_mut_ptr(), &mut n) }, "cuGraphGetNodes")?;
        let mut kernels = 0;
        for node in nodes.iter().take(n) {
            let mut t = std::mem::MaybeUninit::<sys::CUgraphNodeType>::uninit();
            // SAFETY: `node` belongs to the live graph; `t` is written on success.
            ck(unsafe { sys::cuGraphNodeGetType(*node, t.as_mut_ptr()) }, "cuGraphNodeGetType")?;
            // SAFETY: written by the successful call above.
            if unsafe { t.assume_init() } == sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL {
                kernels += 1;
            }
        }
        Ok(kernels)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: both were created in `new` and are no longer used.
        unsafe {
            let _ = sys::cuStreamDestroy_v2(self.stream);
            let _ = sys::cuModuleUnload(self.module);
        }
    }
}

// ----- statistics and results -----------------------------------------------------------

#[derive(Copy, Clone, Debug)]
struct Stat {
    med: f64,
    p10: f64,
    p90: f64,
    reps: usize,
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

fn stat(xs: &[f64]) -> Stat {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    Stat { med: quantile(&s, 0.5), p10: quantile(&s, 0.1), p90: quantile(&s, 0.9), reps: s.len() }
}

struct Row {
    meas: &'static str,
    n: usize,
    imp: &'static str,
    st: Stat,
}

#[derive(Default)]
struct Results {
    rows: Vec<Row>,
}

impl Results {
    fn push(&mut self, meas: &'static str, n: usize, imp: &'static str, xs: &[f64]) {
        if !xs.is_empty() {
            self.rows.push(Row { meas, n, imp, st: stat(xs) });
        }
    }
    fn get(&self, meas: &str, n: usize, imp: &str) -> Option<Stat> {
        self.rows.iter().find(|r| r.meas == meas && r.n == n && r.imp == imp).map(|r| r.st)
    }
    fn csv(&self) -> String {
        let mut s = String::from("measurement,n,impl,median_us,p10_us,p90_us,reps\n");
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{},{},{},{:.4},{:.4},{:.4},{}",
                r.meas, r.n, r.imp, r.st.med, r.st.p10, r.st.p90, r.st.reps
            );
        }
        s
    }
}

fn us(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

fn fmt_stat(s: &Stat) -> String {
    format!("{:>10.3} [{:>9.3}, {:>9.3}]", s.med, s.p10, s.p90)
}

/// Prints one measurement: per N, each implementation's median [p10, p90] and lib/raw.
fn print_table(res: &Results, meas: &'static str, unit: &str, ns: &[usize], imps: &[&'static str]) {
    let mut head = format!("\n{meas} ({unit}; median [p10, p90])\n{:>7}", "N");
    for i in imps {
        let _ = write!(head, " {:>33}", i);
    }
    head.push_str("   lib/raw");
    println!("{head}");
    for &n in ns {
        let mut line = format!("{n:>7}");
        for i in imps {
            match res.get(meas, n, i) {
                Some(s) => {
                    let _ = write!(line, " {:>33}", fmt_stat(&s));
                }
                None => {
                    let _ = write!(line, " {:>33}", "-");
                }
            }
        }
        if let (Some(l), Some(r)) = (res.get(meas, n, "lib"), res.get(meas, n, "raw")) {
            let _ = write!(line, "   {:>7.4}", l.med / r.med);
        }
        println!("{line}");
    }
    let _ = std::io::stdout().flush();
}

// ----- the interleaved runner -----------------------------------------------------------

/// One implementation's repetition: returns its timed values (µs), in a fixed order.
type Body<'x> = Box<dyn FnMut(usize) -> BResult<Vec<f64>> + 'x>;

/// Runs `warm` then `reps` repetitions of every body, alternating the order (forward on even
/// repetitions, backward on odd), and returns `[body][value] -> samples`.
fn interleave(warm: usize, reps: usize, bodies: &mut [Body<'_>]) -> BResult<Vec<Vec<Vec<f64>>>> {
    let mut out: Vec<Vec<Vec<f64>>> = (0..bodies.len()).map(|_| Vec::new()).collect();
    for rep in 0..warm + reps {
        let order: Vec<usize> =
            if rep % 2 == 0 { (0..bodies.len()).collect() } else { (0..bodies.len()).rev().collect() };
        for b in order {
            let vals = (bodies[b])(rep)?;
            if rep >= warm {
                if out[b].is_empty() {
                    out[b] = vec![Vec::with_capacity(reps); vals.len()];
                }
                for (slot, v) in out[b].iter_mut().zip(vals) {
                    slot.push(v);
                }
            }
        }
    }
    Ok(out)
}

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

fn eager(a: &Args, res: &mut Results, lib: &Lib<'_>, s: &mut Stream, raw: Option<&Raw>, n: usize) -> BResult<()> {
    let lib_body: Body<'_> = Box::new(|_| {
        s.synchronize()?;
        let t0 = Instant::now();
        lib.chain(s, n, ELEMS)?;
        let enq = us(t0);
        s.synchronize()?;
        Ok(vec![us(t0) / n as f64, enq / n as f64])
    });
    let raw_body = |bind: bool| -> Body<'_> {
        let r = raw.expect("raw");
        Box::new(move |_| {
            r.sync()?;
            let t0 = Instant::now();
            for _ in 0..n {
                if bind {
                    r.bind()?;
                }
                r.launch(ELEMS)?;
            }
            let enq = us(t0);
            r.sync()?;
            Ok(vec![us(t0) / n as f64, enq / n as f64])
        })
    };
    let mut b = bodies(lib_body, raw.map(|_| (raw_body(false), raw_body(true))));
    let (w, reps) = a.reps_other(n);
    let out = interleave(w, reps, &mut b)?;
    for (imp, vals) in IMPS.iter().zip(&out) {
        res.push("eager", n, imp, &vals[0]);
        res.push("eager_enqueue", n, imp, &vals[1]);
    }
    Ok(())
}

fn capture_instantiate(
    a: &Args,
    res: &mut Results,
    lib: &Lib<'_>,
    s: &mut Stream,
    raw: Option<&Raw>,
    n: usize,
) -> BResult<()> {
    let lib_body: Body<'_> = Box::new(|_| {
        s.synchronize()?;
        let t0 = Instant::now();
        let mut g = s.capture()?;
        lib.chain(&mut g, n, ELEMS)?;
        let t1 = Instant::now();
        let (graph, _report) = g.finish()?;
        let t2 = Instant::now();
        drop(graph);
        Ok(vec![(t1 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6, (t2 - t0).as_secs_f64() * 1e6])
    });
    let raw_body = |bind: bool| -> Body<'_> {
        let r = raw.expect("raw");
        Box::new(move |_| {
            r.sync()?;
            let t0 = Instant::now();
            r.begin()?;
            for _ in 0..n {
                if bind {
                    r.bind()?;
                }
                r.launch(ELEMS)?;
            }
            let t1 = Instant::now();
            let g = r.end()?;
            let e = r.instantiate(g)?;
            let t2 = Instant::now();
            r.destroy_exec(e)?;
            r.destroy_graph(g)?;
            Ok(vec![(t1 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6, (t2 - t0).as_secs_f64() * 1e6])
        })
    };
    let mut b = bodies(lib_body, raw.map(|_| (raw_body(false), raw_body(true))));
    let (w, reps) = a.reps_other(n);
    let out = interleave(w, reps, &mut b)?;
    for (imp, vals) in IMPS.iter().zip(&out) {
        res.push("record_ci", n, imp, &vals[0]);
        res.push("instantiate", n, imp, &vals[1]);
        res.push("capture_instantiate", n, imp, &vals[2]);
    }
    Ok(())
}

/// Recording alone, with many repetitions: begin capture + N captured launches (timed), then
/// end + destroy (not timed; the library drops its guard). The bookkeeping per captured op
/// is the paired difference library − raw, repetition by repetition, over N.
fn bookkeeping(a: &Args, res: &mut Results, lib: &Lib<'_>, s: &mut Stream, raw: Option<&Raw>, n: usize) -> BResult<()> {
    let lib_body: Body<'_> = Box::new(|_| {
        let t0 = Instant::now();
        let mut g = s.capture()?;
        lib.chain(&mut g, n, ELEMS)?;
        let t = us(t0);
        drop(g);
        Ok(vec![t])
    });
    let raw_body = |bind: bool| -> Body<'_> {
        let r = raw.expect("raw");
        Box::new(move |_| {
            let t0 = Instant::now();
            r.begin()?;
            for _ in 0..n {
                if bind {
                    r.bind()?;
                }
                r.launch(ELEMS)?;
            }
            let t = us(t0);
            r.destroy_graph(r.end()?)?;
            Ok(vec![t])
        })
    };
    let mut b = bodies(lib_body, raw.map(|_| (raw_body(false), raw_body(true))));
    let (w, reps) = a.reps(Fam::Bookkeeping, n);
    let out = interleave(w, reps, &mut b);
    drop(b);
    let out = out?;
    let _ = s.context().take_abandoned_reports();
    for (imp, vals) in IMPS.iter().zip(&out) {
        res.push("record", n, imp, &vals[0]);
    }
    if out.len() == 3 {
        for (k, imp) in [(0usize, "lib"), (2, "raw+bind")] {
            let d: Vec<f64> = out[k][0].iter().zip(&out[1][0]).map(|(l, r)| (l - r) / n as f64).collect();
            res.push("bookkeeping_per_op", n, imp, &d);
        }
    }
    Ok(())
}

/// Capture only: begin + N + end + destroy the graph. The library's way to end a capture
/// without instantiating is dropping the guard (its abandon path, which also destroys the graph).
fn capture_only(
    a: &Args,
    res: &mut Results,
    lib: &Lib<'_>,
    s: &mut Stream,
    raw: Option<&Raw>,
    n: usize,
) -> BResult<()> {
    let lib_body: Body<'_> = Box::new(|_| {
        s.synchronize()?;
        let t0 = Instant::now();
        let mut g = s.capture()?;
        lib.chain(&mut g, n, ELEMS)?;
        drop(g);
        Ok(vec![us(t0)])
    });
    let raw_body: Option<(Body<'_>, Body<'_>)> = raw.map(|r| {
        let b: Body<'_> = Box::new(move |_| {
            r.sync()?;
            let t0 = Instant::now();
            let g = r.capture_chain(n, ELEMS, false)?;
            r.destroy_graph(g)?;
            Ok(vec![us(t0)])
        });
        (b, Box::new(|_| Ok(vec![])) as Body<'_>)
    });
    let mut b = bodies(lib_body, raw_body);
    let (w, reps) = a.reps_other(n);
    let out = interleave(w, reps, &mut b);
    drop(b);
    for (imp, vals) in IMPS.iter().zip(&out?) {
        if let Some(v) = vals.first() {
            res.push("capture", n, imp, v);
        }
    }
    // The abandoned captures' reports are kept by the context (at most 64): clear them.
    let _ = s.context().take_abandoned_reports();
    Ok(())
}

fn replay(a: &Args, res: &mut Results, lib: &Lib<'_>, s: &mut Stream, raw: Option<&Raw>, n: usize) -> BResult<()> {
    let k = (20_000 / n).clamp(2, 50);
    let (w, reps) = a.reps(Fam::Replay, n);
    let graph = lib.graph(s, n)?;
    let raw_ge = match raw {
        Some(r) => {
            let g = r.capture_chain(n, ELEMS, false)?;
            Some((g, r.instantiate(g)?))
        }
        None => None,
    };
    {
        let lib_body: Body<'_> = Box::new(|_| {
            s.synchronize()?;
            let t0 = Instant::now();
            for _ in 0..k {
                graph.launch(s)?;
                s.synchronize()?;
            }
            let sync = us(t0) / k as f64;
            let t0 = Instant::now();
            for _ in 0..k {
                graph.launch(s)?;
            }
            let enq = us(t0) / k as f64;
            s.synchronize()?;
            Ok(vec![sync, us(t0) / k as f64, enq])
        });
        let raw_body = raw.zip(raw_ge).map(|(r, (_, e))| {
            let b: Body<'_> = Box::new(move |_| {
                r.sync()?;
                let t0 = Instant::now();
                for _ in 0..k {
                    r.graph_launch(e)?;
                    r.sync()?;
                }
                let sync = us(t0) / k as f64;
                let t0 = Instant::now();
                for _ in 0..k {
                    r.graph_launch(e)?;
                }
                let enq = us(t0) / k as f64;
                r.sync()?;
                Ok(vec![sync, us(t0) / k as f64, enq])
            });
            (b, Box::new(|_| Ok(vec![])) as Body<'_>)
        });
        let mut b = bodies(lib_body, raw_body);
        let out = interleave(w, reps, &mut b)?;
        for (imp, vals) in IMPS.iter().zip(&out) {
            if vals.len() == 3 {
                res.push("replay_sync", n, imp, &vals[0]);
                res.push("replay_nosync", n, imp, &vals[1]);
                res.push("replay_enqueue", n, imp, &vals[2]);
            }
        }
    }
    if let (Some(r), Some((g, e))) = (raw, raw_ge) {
        r.destroy_exec(e)?;
        r.destroy_graph(g)?;
    }
    Ok(())
}

/// Re-capture with one changed kernel parameter (the first launch's element count flips
/// between 256 and 255): `finish_update` (in place) vs `finish` + drop of the old graph.
fn update(a: &Args, res: &mut Results, lib: &Lib<'_>, s: &mut Stream, raw: Option<&Raw>, n: usize) -> BResult<()> {
    let mut g_upd = lib.graph(s, n)?;
    let mut g_new = Some(lib.graph(s, n)?);
    let mut raw_state = match raw {
        Some(r) => {
            let gu = r.capture_chain(n, ELEMS, false)?;
            let eu = r.instantiate(gu)?;
            let gn = r.capture_chain(n, ELEMS, false)?;
            let en = r.instantiate(gn)?;
            Some([(gu, eu), (gn, en)])
        }
        None => None,
    };
    {
        let lib_body: Body<'_> = Box::new(|rep| {
            let first = ELEMS - (rep as u32 + 1) % 2;
            s.synchronize()?;
            let t0 = Instant::now();
            let mut g = s.capture()?;
            lib.chain(&mut g, n, first)?;
            let t1 = Instant::now();
            let (how, _report) = g.finish_update(&mut g_upd)?;
            let t2 = Instant::now();
            if how != GraphUpdate::InPlace {
                return Err(format!("finish_update did not update in place ({how:?})").into());
            }
            let upd = [(t2 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6];
            s.synchronize()?;
            let t0 = Instant::now();
            let mut g = s.capture()?;
            lib.chain(&mut g, n, first)?;
            let t1 = Instant::now();
            let (fresh, _report) = g.finish()?;
            g_new = Some(fresh); // drops the old graph (exec + graph destroy)
            let t2 = Instant::now();
            Ok(vec![upd[0], upd[1], (t2 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6])
        });
        let raw_body = raw.zip(raw_state.as_mut()).map(|(r, st)| {
            let b: Body<'_> = Box::new(move |rep| {
                let first = ELEMS - (rep as u32 + 1) % 2;
                r.sync()?;
                let t0 = Instant::now();
                r.begin()?;
                for i in 0..n {
                    r.launch(if i == 0 { first } else { ELEMS })?;
                }
                let t1 = Instant::now();
                let g = r.end()?;
                r.exec_update(st[0].1, g)?;
                r.destroy_graph(std::mem::replace(&mut st[0].0, g))?;
                let t2 = Instant::now();
                let upd = [(t2 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6];
                r.sync()?;
                let t0 = Instant::now();
                r.begin()?;
                for i in 0..n {
                    r.launch(if i == 0 { first } else { ELEMS })?;
                }
                let t1 = Instant::now();
                let g = r.end()?;
                let e = r.instantiate(g)?;
                let (og, oe) = std::mem::replace(&mut st[1], (g, e));
                r.destroy_exec(oe)?;
                r.destroy_graph(og)?;
                let t2 = Instant::now();
                Ok(vec![upd[0], upd[1], (t2 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6])
            });
            (b, Box::new(|_| Ok(vec![])) as Body<'_>)
        });
        let mut b = bodies(lib_body, raw_body);
        let (w, reps) = a.reps_other(n);
        let out = interleave(w, reps, &mut b)?;
        for (imp, vals) in IMPS.iter().zip(&out) {
            if vals.len() == 4 {
                res.push("update", n, imp, &vals[0]);
                res.push("update_step", n, imp, &vals[1]);
                res.push("reinstantiate", n, imp, &vals[2]);
                res.push("reinstantiate_step", n, imp, &vals[3]);
            }
        }
    }
    if let (Some(r), Some(st)) = (raw, raw_state) {
        for (g, e) in st {
            r.destroy_exec(e)?;
            r.destroy_graph(g)?;
        }
    }
    drop(g_new);
    Ok(())
}

/// Diagnostics: the cost of one `bind_to_thread` (ns), and of counting a graph's nodes by
/// type as `finish()` does (ns per node).
fn diagnostics(res: &mut Results, raw: &Raw, n: usize) -> BResult<()> {
    const M: usize = 10_000;
    let mut bind = Vec::new();
    for _ in 0..30 {
        let t0 = Instant::now();
        for _ in 0..M {
            raw.bind()?;
        }
        bind.push(us(t0) / M as f64);
    }
    res.push("diag_bind_call", 0, "raw", &bind);
    // The driver call alone: cuCtxGetCurrent and a compare (no cudarc error-state swap).
    let want = raw.cu.cu_ctx();
    let mut get = Vec::new();
    for _ in 0..30 {
        let t0 = Instant::now();
        for _ in 0..M {
            let mut c = null_mut();
            // SAFETY: writes one handle.
            ck(unsafe { sys::cuCtxGetCurrent(&mut c) }, "cuCtxGetCurrent")?;
            if std::hint::black_box(c) != want {
                return Err("context not current".into());
            }
        }
        get.push(us(t0) / M as f64);
    }
    res.push("diag_ctx_get_current_call", 0, "raw", &get);
    let g = raw.capture_chain(n, ELEMS, false)?;
    let mut count = Vec::new();
    for _ in 0..15 {
        let t0 = Instant::now();
        let k = raw.count_node_types(g)?;
        count.push(us(t0) / n as f64);
        if k != n {
            return Err(format!("graph has {k} kernel nodes, expected {n}").into());
        }
    }
    raw.destroy_graph(g)?;
    res.push("diag_node_type_per_node", n, "raw", &count);
    Ok(())
}

// ----- which context does the driver use? ------------------------------------------------

/// Whether stream-ordered work needs *this* context to be current: with another context
/// current on the thread, launches a kernel and a graph of this context onto a stream of this
/// context, eagerly and during a capture, and reports the driver's result codes and whether
/// the work ran. (If the driver takes the context from the stream, a per-operation
/// `bind_to_thread` is not needed for such operations.)
fn context_probe(raw: &Raw, s: &mut Stream, raw_buf: &DeviceBuffer<f32>) -> BResult<Vec<String>> {
    let mut out = Vec::new();
    let a = raw.cu.cu_ctx();
    let set = |c: sys::CUcontext| -> BResult<()> {
        // SAFETY: `c` is a live context.
        ck(unsafe { sys::cuCtxSetCurrent(c) }, "cuCtxSetCurrent")
    };
    let code = |r: BResult<()>| match r {
        Ok(()) => "CUDA_SUCCESS".to_owned(),
        Err(e) => e.to_string(),
    };
    s.memset_sync(raw_buf, 0)?;
    let g10 = raw.capture_chain(10, ELEMS, false)?;
    let e10 = raw.instantiate(g10)?;
    let mut dev = 0;
    // SAFETY: writes one int; context A is current.
    ck(unsafe { sys::cuCtxGetDevice(&mut dev) }, "cuCtxGetDevice")?;
    let mut b = null_mut();
    // SAFETY: creates a new context on the same device and makes it current.
    ck(unsafe { sys::cuCtxCreate_v4(&mut b, null_mut(), 0, dev) }, "cuCtxCreate_v4")?;
    set(b)?;
    out.push(format!("other context current: eager cuLaunchKernel on our stream -> {}", code(raw.launch(ELEMS))));
    out.push(format!(
        "other context current: cuGraphLaunch (10 kernels) on our stream -> {}",
        code(raw.graph_launch(e10))
    ));
    out.push(format!("other context current: cuStreamSynchronize(our stream) -> {}", code(raw.sync())));
    set(a)?;
    raw.sync()?;
    let mut capture_note = String::new();
    if raw.begin().is_ok() {
        set(b)?;
        let l = code(raw.launch(ELEMS));
        let mut st = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: live stream; writes the status.
        let q = unsafe { sys::cuStreamIsCapturing(raw.stream, &mut st) };
        set(a)?;
        match raw.end() {
            Ok(g) => {
                let r = raw.instantiate(g).and_then(|e| {
                    raw.graph_launch(e)?;
                    raw.sync()?;
                    raw.destroy_exec(e)
                });
                capture_note = format!(
                    "other context current during capture: cuLaunchKernel -> {l}; capture status {st:?} ({q:?}); end capture OK; replay -> {}",
                    code(r)
                );
                raw.destroy_graph(g)?;
            }
            Err(e) => {
                capture_note =
                    format!("other context current during capture: cuLaunchKernel -> {l}; end capture -> {e}")
            }
        }
    }
    out.push(capture_note);
    // A thread with no current context at all.
    let (f, st, p, e) = (raw.func as usize, raw.stream as usize, raw.ptr, e10 as usize);
    let fresh = std::thread::spawn(move || {
        let mut cur = null_mut();
        // SAFETY: writes one handle.
        let g = unsafe { sys::cuCtxGetCurrent(&mut cur) };
        let (mut pp, mut n) = (p, ELEMS);
        let mut params = [&mut pp as *mut u64 as *mut c_void, &mut n as *mut u32 as *mut c_void];
        let stream = st as sys::CUstream;
        // SAFETY: as in `Raw::launch`; the handles are live for the duration of this thread.
        let l = unsafe {
            sys::cuLaunchKernel(f as sys::CUfunction, 1, 1, 1, ELEMS, 1, 1, 0, stream, params.as_mut_ptr(), null_mut())
        };
        // SAFETY: live exec and stream.
        let gl = unsafe { sys::cuGraphLaunch(e as sys::CUgraphExec, stream) };
        // SAFETY: live stream.
        let sy = unsafe { sys::cuStreamSynchronize(stream) };
        format!(
            "thread with no current context (cuCtxGetCurrent -> {g:?}, null: {}): cuLaunchKernel -> {l:?}; cuGraphLaunch -> {gl:?}; cuStreamSynchronize -> {sy:?}",
            cur.is_null()
        )
    })
    .join()
    .map_err(|_| "probe thread panicked")?;
    out.push(fresh);
    // SAFETY: `b` is not current and not used afterwards.
    ck(unsafe { sys::cuCtxDestroy_v2(b) }, "cuCtxDestroy_v2")?;
    set(a)?;
    raw.destroy_exec(e10)?;
    raw.destroy_graph(g10)?;
    let v = s.download(raw_buf)?;
    out.push(format!("value after: {} (1 eager + 10 graph + 1 captured-then-replayed + 1 + 10 on the fresh thread = 23 if everything ran)", v[0]));
    Ok(out)
}

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
