//! A decode loop three ways (issue #12, part 3): a step of a cuBLAS GEMM and ten kernels that
//! reads its position from device memory and writes a token, run until the token equals a
//! stop id —
//!
//! - (a) host-driven: one graph launch per token, then a synchronize and a read of the
//!   token to decide whether to go on;
//! - (b) host-driven without the check: one launch per token, one synchronize at the end
//!   (it must be told how many tokens to run: the floor for a host loop);
//! - (c) one launch of a graph holding a WHILE loop that stops on the device at the stop
//!   token (`Stream<Capturing>::while_loop` with `Until::Token`).
//!
//! All three give bit-identical hidden states and positions, checked. The token here is the
//! step count (as the bits of an `f32`, written by `incr_f32`), so the loop stops after
//! `STOP` tokens; a model would write its argmax. Per-token times are printed for each
//! `K` (a GPU measurement only on a GPU; on the simulated device they time the simulator).
//!
//! ```text
//! cargo run --release --example 08_device_loop [-- K1,K2,...]
//! ```

use std::time::Instant;

use capture_core::control::{LoopCounter, Until};
use capture_core::{kernels, Blas, Context, DeviceBuffer, Kernel, LaunchConfig, Result, Stream, Transpose};

const D: usize = 256;

struct Step {
    blas: Blas,
    w: DeviceBuffer<f32>,
    bias: DeviceBuffer<f32>,
    scale: Kernel,
    axpy: Kernel,
    incr: Kernel,
    add: Kernel,
}

/// The state a run starts from: hidden, scratch, position (per element), token.
struct State {
    hidden: DeviceBuffer<f32>,
    scratch: DeviceBuffer<f32>,
    pos: DeviceBuffer<f32>,
    token: DeviceBuffer<u32>,
}

impl State {
    fn new(s: &mut Stream) -> Result<Self> {
        Ok(Self {
            hidden: s.upload_new(&(0..D).map(|i| (i % 7) as f32 * 0.25).collect::<Vec<f32>>())?,
            scratch: s.alloc_zeros(D)?,
            pos: s.alloc_zeros(D)?,
            token: s.alloc_zeros(1)?,
        })
    }
}

/// One decode step: 1 GEMM and 10 kernels.
fn step<'a, S: capture_core::Records<'a>>(st: &'a Step, x: &'a State, s: &mut Stream<S>) -> Result<()> {
    let cfg = LaunchConfig::for_num_elems(D as u32);
    let n = D as u32;
    st.blas.sgemm(s, Transpose::No, Transpose::No, (D, 1, D), 1.0, (&st.w, D), (&x.hidden, D), 0.0, (&x.scratch, D))?;
    s.launch(&st.scale, cfg, (&x.scratch, &x.hidden, 0.5f32, n))?; // hidden = scratch / 2
    s.launch(&st.axpy, cfg, (&x.hidden, &x.pos, 0.01f32, n))?; // hidden += pos / 100
    for _ in 0..5 {
        s.launch(&st.incr, cfg, (&x.hidden, n))?;
    }
    s.launch(&st.add, cfg, (&x.hidden, &st.bias, &x.hidden, n))?; // hidden += bias
    s.launch(&st.incr, cfg, (&x.pos, n))?; // position += 1
    s.launch(&st.incr, LaunchConfig::for_num_elems(1), (&x.token, 1u32)) // the token
}

fn per_token(v: &mut [f64]) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() -> Result<()> {
    let ks: Vec<u32> = std::env::args()
        .nth(1)
        .map(|a| a.split(',').filter_map(|k| k.parse().ok()).collect())
        .unwrap_or_else(|| vec![16, 128, 1024]);
    let ctx = Context::open_default();
    println!("device: {} ({})", ctx.name(), ctx.kind());
    if let Some(sim) = ctx.sim() {
        kernels::register_chain_kernels(sim);
        println!("(the simulated device: outputs are checked; times measure the simulator, not a GPU)");
    }
    let mut s = ctx.new_stream()?;
    let m = ctx.load_module(kernels::CHAIN_PTX)?;
    let st = Step {
        blas: Blas::new(&mut s, Blas::DEFAULT_WORKSPACE)?,
        w: s.upload_new(&(0..D * D).map(|i| if i % (D + 1) == 0 { 1.0 } else { 0.001 }).collect::<Vec<f32>>())?,
        bias: s.upload_new(&(0..D).map(|i| i as f32 * 1e-3).collect::<Vec<f32>>())?,
        scale: m.kernel("scale_f32")?,
        axpy: m.kernel("axpy_f32")?,
        incr: m.kernel("incr_f32")?,
        add: m.kernel("add_f32")?,
    };
    let counter = LoopCounter::new(&mut s)?;
    println!("per token (µs, median of 5 runs): (a) launch + host check, (b) launch per token, (c) one WHILE launch");
    println!("{:>6} {:>10} {:>10} {:>10} {:>8} {:>8}", "K", "(a)", "(b)", "(c)", "a/c", "b/c");
    for &k in &ks {
        let stop = (k as f32).to_bits(); // the k-th token is the stop token
        let (a_state, b_state, c_state) = (State::new(&mut s)?, State::new(&mut s)?, State::new(&mut s)?);
        // Each GEMM shape once eagerly (CUDA loads kernels lazily), on a scratch state.
        let warm = State::new(&mut s)?;
        step(&st, &warm, &mut s)?;
        s.synchronize()?;
        let (one_a, _) = {
            let mut g = s.capture()?;
            step(&st, &a_state, g.stream())?;
            g.finish()?
        };
        let (one_b, _) = {
            let mut g = s.capture()?;
            step(&st, &b_state, g.stream())?;
            g.finish()?
        };
        let (looped, report) = {
            let mut g = s.capture()?;
            g.stream().while_loop(&counter, k, Until::Token { token: &c_state.token, stop }, |body| {
                step(&st, &c_state, body)
            })?;
            g.finish()?
        };
        assert_eq!(report.nodes.conditional, 1);
        let (mut ta, mut tb, mut tc) = (Vec::new(), Vec::new(), Vec::new());
        for run in 0..5 {
            for x in [&a_state, &b_state, &c_state] {
                s.upload(&x.hidden, &(0..D).map(|i| (i % 7) as f32 * 0.25).collect::<Vec<f32>>())?;
                s.memset_async(&x.pos, 0)?;
                s.memset_async(&x.token, 0)?;
            }
            s.synchronize()?;
            // (a)
            let t = Instant::now();
            let mut steps = 0u32;
            loop {
                one_a.launch(&mut s)?;
                steps += 1;
                if s.download(&a_state.token)?[0] == stop || steps == k {
                    break;
                }
            }
            ta.push(t.elapsed().as_secs_f64() * 1e6 / f64::from(steps));
            // (b)
            let t = Instant::now();
            for _ in 0..k {
                one_b.launch(&mut s)?;
            }
            s.synchronize()?;
            tb.push(t.elapsed().as_secs_f64() * 1e6 / f64::from(k));
            // (c)
            let t = Instant::now();
            looped.launch(&mut s)?;
            s.synchronize()?;
            tc.push(t.elapsed().as_secs_f64() * 1e6 / f64::from(k));
            if run == 0 {
                assert_eq!(steps, k, "(a) stopped at its token");
                assert_eq!(counter.steps(&mut s)?, k, "(c) stopped at its token");
                let a = (s.download(&a_state.hidden)?, s.download(&a_state.pos)?);
                let b = (s.download(&b_state.hidden)?, s.download(&b_state.pos)?);
                let c = (s.download(&c_state.hidden)?, s.download(&c_state.pos)?);
                assert!(a == b && b == c, "the three runs differ at K = {k}");
            }
        }
        let (a, b, c) = (per_token(&mut ta), per_token(&mut tb), per_token(&mut tc));
        println!("{k:>6} {a:>10.2} {b:>10.2} {c:>10.2} {:>7.2}x {:>7.2}x", a / c, b / c);
    }
    println!("outputs: (a), (b) and (c) bit-identical for every K");
    Ok(())
}
