//! A decode loop four ways (issue #12, parts 3 and 4): a step of a cuBLAS GEMM and ten kernels
//! that reads its position from device memory and writes a token, run until the token is a
//! stop id —
//!
//! - (a) host-driven: one graph launch per token, then a synchronize and a read of the
//!   token to decide whether to go on;
//! - (b) host-driven without the check: one launch per token, one synchronize at the end
//!   (it must be told how many tokens to run: the floor for a host loop);
//! - (c1) one launch of a graph holding a WHILE loop of one step per iteration, stopping on
//!   the device at the stop token (`Stream<Capturing>::while_loop`);
//! - (cU) the same loop with U steps per iteration (8 unless given)
//!   (`Stream<Capturing>::while_loop_unrolled`), sharing the node's cost.
//!
//! The step's last three kernels (`examples/kernels/decode_loop.cu`) commit its result, move
//! the position and write the token only while the stop flag is down, and the token kernel
//! raises it at the stop id (`Until::Flag`): so the steps that (cU) runs past the stop, in
//! the stop's iteration, change nothing. Each `K` (the loop's bound) runs twice: the stop
//! token at `K` (a whole number of iterations), and at `K - 3` (inside an iteration, so (cU)
//! runs up to U - 1 gated steps more). All four end in bit-identical hidden states,
//! positions and tokens, checked. The token here counts steps; a model would write its
//! argmax. Times are per token produced.
//!
//! Times are per token, medians of 7 runs with their range, the four ways alternated in
//! each run (a GPU measurement only on a GPU; on the simulated device they time the
//! simulator).
//!
//! Last, what a launch costs besides its steps (medians of 200 launches, each waited for):
//! a graph of one tiny kernel against a WHILE loop running it once (the loop node's fixed
//! cost), one step against one step and a read of its token ((a)'s round trip), and a step
//! of a graph of 64 steps straight — the floor no loop can beat, so (a)'s time per token
//! over it bounds what any device-side loop can gain on (a).
//!
//! ```text
//! cargo run --release --example 08_device_loop [-- K1,K2,... [U]]
//! ```

use std::time::Instant;

use capture_core::control::{LoopCounter, Until};
use capture_core::{kernels, Blas, Context, DeviceBuffer, Kernel, LaunchConfig, Result, Stream, Transpose};

const D: usize = 256;
const RUNS: usize = 7;
/// The step's three gated kernels, compiled from `examples/kernels/decode_loop.cu`.
const DECODE_PTX: &str = include_str!("kernels/decode_loop.ptx");

struct Step {
    blas: Blas,
    w: DeviceBuffer<f32>,
    bias: DeviceBuffer<f32>,
    scale: Kernel,
    axpy: Kernel,
    incr: Kernel,
    commit: Kernel,
    advance: Kernel,
    emit: Kernel,
}

/// A run's state: hidden, scratch and work vectors, position (per element), token, stop flag.
struct State {
    hidden: DeviceBuffer<f32>,
    scratch: DeviceBuffer<f32>,
    work: DeviceBuffer<f32>,
    pos: DeviceBuffer<f32>,
    token: DeviceBuffer<u32>,
    stopped: DeviceBuffer<u32>,
}

fn start_hidden() -> Vec<f32> {
    (0..D).map(|i| (i % 7) as f32 * 0.25).collect()
}

impl State {
    fn new(s: &mut Stream) -> Result<Self> {
        Ok(Self {
            hidden: s.upload_new(&start_hidden())?,
            scratch: s.alloc_zeros(D)?,
            work: s.alloc_zeros(D)?,
            pos: s.alloc_zeros(D)?,
            token: s.alloc_zeros(1)?,
            stopped: s.alloc_zeros(1)?,
        })
    }

    /// Back to the start (hidden, position, token, flag), on the stream.
    fn reset(&self, s: &mut Stream) -> Result<()> {
        s.upload(&self.hidden, &start_hidden())?;
        s.memset_async(&self.pos, 0)?;
        s.memset_async(&self.token, 0)?;
        s.memset_async(&self.stopped, 0)
    }

    fn read(&self, s: &mut Stream) -> Result<(Vec<f32>, Vec<f32>, u32)> {
        Ok((s.download(&self.hidden)?, s.download(&self.pos)?, s.download(&self.token)?[0]))
    }
}

/// One decode step: 1 GEMM and 10 kernels; the last three change nothing once stopped.
fn step<'a, S: capture_core::Records<'a>>(st: &'a Step, x: &'a State, stop: u32, s: &mut Stream<S>) -> Result<()> {
    let cfg = LaunchConfig::for_num_elems(D as u32);
    let n = D as u32;
    st.blas.sgemm(s, Transpose::No, Transpose::No, (D, 1, D), 1.0, (&st.w, D), (&x.hidden, D), 0.0, (&x.scratch, D))?;
    s.launch(&st.scale, cfg, (&x.scratch, &x.work, 0.5f32, n))?; // work = scratch / 2
    s.launch(&st.axpy, cfg, (&x.work, &x.pos, 0.01f32, n))?; // work += pos / 100
    for _ in 0..5 {
        s.launch(&st.incr, cfg, (&x.work, n))?;
    }
    s.launch(&st.commit, cfg, (&x.hidden, &x.work, &st.bias, n, &x.stopped))?; // hidden = work + bias
    s.launch(&st.advance, cfg, (&x.pos, n, &x.stopped))?; // position += 1
    s.launch(&st.emit, LaunchConfig::for_num_elems(1), (&x.token, stop, &x.stopped))
    // the token
}

/// Host implementations of the gated kernels, for the simulated device.
fn register_decode_kernels(sim: &capture_core::device::sim::SimDevice) {
    sim.register_kernel("commit_add_f32", |c| {
        if c.read::<u32>(c.ptr(4)?, 1)?[0] != 0 {
            return Ok(());
        }
        let n = c.u32(3)? as usize;
        let a: Vec<f32> = c.read(c.ptr(1)?, n)?;
        let b: Vec<f32> = c.read(c.ptr(2)?, n)?;
        c.write(c.ptr(0)?, &a.iter().zip(&b).map(|(x, y)| x + y).collect::<Vec<f32>>())
    });
    sim.register_kernel("advance_f32", |c| {
        if c.read::<u32>(c.ptr(2)?, 1)?[0] != 0 {
            return Ok(());
        }
        let n = c.u32(1)? as usize;
        let x: Vec<f32> = c.read(c.ptr(0)?, n)?;
        c.write(c.ptr(0)?, &x.iter().map(|v| v + 1.0).collect::<Vec<f32>>())
    });
    sim.register_kernel("emit_token", |c| {
        let flag = c.ptr(2)?;
        if c.read::<u32>(flag, 1)?[0] != 0 {
            return Ok(());
        }
        let t = c.read::<u32>(c.ptr(0)?, 1)?[0] + 1;
        c.write(c.ptr(0)?, &[t])?;
        if t == c.u32(1)? {
            c.write(flag, &[1u32])?;
        }
        Ok(())
    });
}

/// Median, min and max.
fn summary(v: &mut [f64]) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    (v[v.len() / 2], v[0], v[v.len() - 1])
}

fn main() -> Result<()> {
    let ks: Vec<u32> = std::env::args()
        .nth(1)
        .map(|a| a.split(',').filter_map(|k| k.parse().ok()).filter(|&k| k >= 4).collect())
        .unwrap_or_else(|| vec![16, 128, 1024]);
    let per: u32 = std::env::args().nth(2).and_then(|a| a.parse().ok()).filter(|&u| u > 0).unwrap_or(8);
    let ctx = Context::open_default();
    println!("device: {} ({})", ctx.name(), ctx.kind());
    if let Some(sim) = ctx.sim() {
        kernels::register_chain_kernels(sim);
        register_decode_kernels(sim);
        println!("(the simulated device: outputs are checked; times measure the simulator, not a GPU)");
    }
    let mut s = ctx.new_stream()?;
    let m = ctx.load_module(kernels::CHAIN_PTX)?;
    let dm = ctx.load_module(DECODE_PTX)?;
    let st = Step {
        blas: Blas::new(&mut s, Blas::DEFAULT_WORKSPACE)?,
        w: s.upload_new(&(0..D * D).map(|i| if i % (D + 1) == 0 { 1.0 } else { 0.001 }).collect::<Vec<f32>>())?,
        bias: s.upload_new(&(0..D).map(|i| i as f32 * 1e-3).collect::<Vec<f32>>())?,
        scale: m.kernel("scale_f32")?,
        axpy: m.kernel("axpy_f32")?,
        incr: m.kernel("incr_f32")?,
        commit: dm.kernel("commit_add_f32")?,
        advance: dm.kernel("advance_f32")?,
        emit: dm.kernel("emit_token")?,
    };
    let counter = LoopCounter::new(&mut s)?;
    println!("per token, µs: median [min, max] of {RUNS} runs; (cU) has U = {per} steps per iteration");
    println!(
        "{:>5} {:>5} {:>22} {:>22} {:>22} {:>22} {:>7} {:>7} {:>7}",
        "K", "stop", "(a) launch+check", "(b) launch", "(c1) WHILE", "(cU) WHILE unrolled", "a/cU", "b/cU", "c1/cU"
    );
    for (k, stop) in ks.iter().flat_map(|&k| [(k, k), (k, k - 3)]) {
        let states = [State::new(&mut s)?, State::new(&mut s)?, State::new(&mut s)?, State::new(&mut s)?];
        // Each GEMM shape once eagerly (CUDA loads kernels lazily), on a scratch state.
        let warm = State::new(&mut s)?;
        step(&st, &warm, stop, &mut s)?;
        s.synchronize()?;
        let mut graphs = Vec::new();
        for (i, x) in states.iter().enumerate() {
            let mut g = s.capture()?;
            match i {
                0 | 1 => step(&st, x, stop, g.stream())?,
                2 => g.stream().while_loop(&counter, k, Until::Flag { flag: &x.stopped }, |b| step(&st, x, stop, b))?,
                _ => g.stream().while_loop_unrolled(&counter, k, per, Until::Flag { flag: &x.stopped }, |b| {
                    step(&st, x, stop, b)
                })?,
            }
            let (graph, report) = g.finish()?;
            graph.upload(&mut s)?; // not the first timed launch's work
            assert_eq!(report.nodes.conditional, usize::from(i >= 2) + usize::from(i == 3 && k % per.min(k) != 0));
            graphs.push(graph);
        }
        let mut times: [Vec<f64>; 4] = Default::default();
        for run in 0..RUNS {
            for x in &states {
                x.reset(&mut s)?;
            }
            s.synchronize()?;
            let mut steps = [0u32; 4];
            for (i, graph) in graphs.iter().enumerate() {
                let t = Instant::now();
                match i {
                    0 => loop {
                        graph.launch(&mut s)?;
                        steps[0] += 1;
                        if s.download(&states[0].token)?[0] == stop || steps[0] == k {
                            break;
                        }
                    },
                    1 => {
                        for _ in 0..stop {
                            graph.launch(&mut s)?;
                        }
                        s.synchronize()?;
                        steps[1] = stop;
                    }
                    _ => {
                        graph.launch(&mut s)?;
                        s.synchronize()?;
                    }
                }
                times[i].push(t.elapsed().as_secs_f64() * 1e6 / f64::from(stop));
                if i >= 2 {
                    steps[i] = counter.steps(&mut s)?; // read after the clock stopped
                }
            }
            if run == 0 {
                assert_eq!(steps[..3], [stop; 3], "(a), (b) and (c1) ran to the stop token");
                assert!(steps[3] >= stop && steps[3] < stop + per, "(cU) ended in the stop's iteration");
                let first = states[0].read(&mut s)?;
                assert_eq!(first.2, stop);
                for (i, x) in states.iter().enumerate().skip(1) {
                    assert!(x.read(&mut s)? == first, "way {i} differs from (a) at K = {k}");
                }
            }
        }
        let [a, b, c1, c8] = times.map(|mut t| summary(&mut t));
        let f = |(m, lo, hi): (f64, f64, f64)| format!("{m:.2} [{lo:.2}, {hi:.2}]");
        println!(
            "{k:>5} {stop:>5} {:>22} {:>22} {:>22} {:>22} {:>6.2}x {:>6.2}x {:>6.2}x",
            f(a),
            f(b),
            f(c1),
            f(c8),
            a.0 / c8.0,
            b.0 / c8.0,
            c1.0 / c8.0
        );
    }
    println!("outputs: (a), (b), (c1) and (cU) bit-identical for every K and stop");
    fixed_costs(&mut s, &st, &counter)
}

/// What a launch costs besides its steps: one launch and synchronize of a graph of one
/// tiny kernel, of a WHILE loop running that kernel once, and of one decode step, plus (a)'s
/// read of the token. These set how far the (cU) ratios can go: at a bound of K, (cU) pays
/// its loop's fixed cost once for K tokens, (a) pays its round trip every token.
fn fixed_costs(s: &mut Stream, st: &Step, counter: &LoopCounter) -> Result<()> {
    const REPS: usize = 200;
    const FLOOR: u32 = 64;
    let x = State::new(s)?;
    let n = D as u32;
    let cfg = LaunchConfig::for_num_elems(n);
    let mut graphs = Vec::new();
    for i in 0..6 {
        let mut g = s.capture()?;
        match i {
            0 => g.stream().launch(&st.incr, cfg, (&x.work, n))?,
            1 => g.stream().while_loop(counter, 1, Until::Bound, |b| b.launch(&st.incr, cfg, (&x.work, n)))?,
            2 => g
                .stream()
                .while_loop(counter, 1, Until::Flag { flag: &x.stopped }, |b| b.launch(&st.incr, cfg, (&x.work, n)))?,
            3 => step(st, &x, u32::MAX, g.stream())?,
            4 => g.stream().while_loop(counter, 1, Until::Flag { flag: &x.stopped }, |b| step(st, &x, u32::MAX, b))?,
            // The floor of any loop: FLOOR steps straight, no loop node, no test.
            _ => (0..FLOOR).try_for_each(|_| step(st, &x, u32::MAX, g.stream()))?,
        }
        let (graph, _) = g.finish()?;
        graph.upload(s)?;
        graphs.push(graph);
    }
    let mut times: [Vec<f64>; 7] = Default::default();
    for _ in 0..REPS {
        for (i, graph) in graphs.iter().enumerate() {
            let t = Instant::now();
            graph.launch(s)?;
            s.synchronize()?;
            times[i].push(t.elapsed().as_secs_f64() * 1e6);
        }
        // (a)'s way: the step, then the token read (which waits for it).
        let t = Instant::now();
        graphs[3].launch(s)?;
        s.download(&x.token)?;
        times[6].push(t.elapsed().as_secs_f64() * 1e6);
    }
    let [k, wk, wkf, one, wone, floor, read] = times.map(|mut t| summary(&mut t).0);
    let floor = floor / f64::from(FLOOR);
    println!("one launch + synchronize, µs (medians of {REPS}):");
    println!(
        "  graph of 1 kernel {k:.2}; WHILE of it once {wk:.2} (+{:.2}), with a stop flag {wkf:.2} (+{:.2})",
        wk - k,
        wkf - k
    );
    println!("  graph of 1 step {one:.2}; WHILE of it once, stop flag {wone:.2} (+{:.2})", wone - one);
    println!("  graph of 1 step, then a read of its token (a's way) {read:.2} (+{:.2})", read - one);
    println!(
        "  graph of {FLOOR} steps straight (no loop node, no test), per step {floor:.2}: no loop runs a step faster, \
         so (a)'s time per token over this bounds what any loop can gain on (a)"
    );
    Ok(())
}
