//! Device-side control flow: a loop or a branch decided on the GPU, recorded into the graph
//! as a conditional WHILE or IF node (CUDA 12.4 or later), so one launch runs up to K steps
//! and stops when a device-side condition says so — with no host round trip per step.
//!
//! The loop's body is recorded through the same type-state as everything else: it is a
//! `Stream<Capturing>`, so what a capture forbids stays uncallable there, and what a
//! conditional body cannot hold (memory nodes: `alloc_async`, `free_async`) is
//! [`Error::NotInConditionalBody`]. The condition is kept by kernels the crate ships
//! ([`kernels::CONTROL_PTX`](crate::kernels::CONTROL_PTX)): a step counter reaching the
//! bound, or a token equal to a stop id. Every loop has a bound, so a body that never
//! stops still ends.
//!
//! A condition nobody sets keeps its default, assigned at the start of each launch: 1 for a
//! loop (so its body runs at least once; the library's test kernel at the end of each step
//! then decides), 0 for a branch (whose kernel sets it from the flag just before the node).
//!
//! - [`Stream::while_loop`](crate::Stream::while_loop): one step per WHILE iteration, stops
//!   exactly at its bound ([`Until::Bound`]), its stop token ([`Until::Token`]) or a flag a
//!   kernel of the body raises ([`Until::Flag`]).
//! - [`Stream::while_loop_unrolled`](crate::Stream::while_loop_unrolled): several steps per
//!   iteration, which is what pays for the node on short steps (measured on an H100 in
//!   `docs/benchmarks.md`); an early stop is tested once per iteration, and the body's
//!   kernels read the stop flag to make the steps after it change nothing.
//! - [`Stream::if_nonzero`](crate::Stream::if_nonzero) and
//!   [`Stream::if_else`](crate::Stream::if_else): a branch on a `u32` in device memory.
//!
//! Condition handles never reach user code: each is made inside the capture that uses it,
//! so none can be set from another graph. A body the driver invalidates loses the whole
//! capture (the driver would crash destroying that graph, so the library leaks it).
//!
//! ```
//! use capture_core::control::{LoopCounter, Until};
//! use capture_core::{kernels, Context, LaunchConfig, Result};
//! # fn main() -> Result<()> {
//! let ctx = Context::simulated(); // or Context::open(0)?
//! kernels::register_chain_kernels(ctx.sim().expect("simulated"));
//! let incr = ctx.load_module(kernels::CHAIN_PTX)?.kernel("incr_f32")?;
//! let mut stream = ctx.new_stream()?;
//! let x = stream.alloc_zeros::<f32>(256)?;
//! let counter = LoopCounter::new(&mut stream)?;
//! let (graph, report) = {
//!     let mut g = stream.capture()?;
//!     g.stream().while_loop(&counter, 16, Until::Bound, |body| {
//!         body.launch(&incr, LaunchConfig::for_num_elems(256), (&x, 256u32))
//!     })?;
//!     g.finish()?
//! };
//! assert_eq!(report.nodes.conditional, 1);
//! graph.launch(&mut stream)?; // one launch, 16 steps
//! assert_eq!(counter.steps(&mut stream)?, 16);
//! assert_eq!(stream.download(&x)?[0], 16.0);
//! # Ok(()) }
//! ```

use crate::buffer::DeviceBuffer;
use crate::context::Context;
use crate::device::{CondKind, DeviceKind};
use crate::error::{CallSite, Error, Result};
use crate::module::{Kernel, LaunchConfig};
use crate::state::{Capturing, Idle, StreamState};
use crate::stream::{Owner, Stream};

/// The driver API version conditional WHILE and IF nodes need (CUDA 12.4).
pub const CONDITIONAL_DRIVER_VERSION: i32 = 12040;

/// The driver API version an IF node with an ELSE body needs (CUDA 12.8).
pub const IF_ELSE_DRIVER_VERSION: i32 = 12080;

/// One thread: the condition kernels read and write a few words.
const ONE: LaunchConfig = LaunchConfig { grid: (1, 1, 1), block: (1, 1, 1), shared_mem_bytes: 0 };

/// A loop's step counter and stop flag in device memory, and the kernels that keep its
/// condition: made before the capture (it allocates and loads a module), borrowed by the
/// graph.
pub struct LoopCounter {
    ctx: Context,
    step: DeviceBuffer<u32>,
    stopped: DeviceBuffer<u32>,
    k: LoopKernels,
}

/// The condition kernels of [`kernels::CONTROL_PTX`](crate::kernels::CONTROL_PTX).
struct LoopKernels {
    zero: Kernel,
    zero2: Kernel,
    add: Kernel,
    step_below: Kernel,
    until_token: Kernel,
    steps: Kernel,
    steps_until: Kernel,
    stop_on_token: Kernel,
    from_zero_flag: Kernel,
}

impl std::fmt::Debug for LoopCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopCounter").field("device", &self.ctx.ordinal()).finish()
    }
}

impl LoopCounter {
    /// A counter on `stream`'s device.
    ///
    /// # Errors
    /// [`Error::ConditionalNodesUnsupported`] on a driver older than CUDA 12.4;
    /// [`Error::Driver`] (allocation, module load).
    #[track_caller]
    pub fn new(stream: &mut Stream<Idle>) -> Result<Self> {
        let ctx = stream.ctx.clone();
        check_driver(&ctx, "a WHILE loop", CONDITIONAL_DRIVER_VERSION)?;
        if let Some(sim) = ctx.sim() {
            crate::kernels::register_control_kernels(sim);
        }
        let m = ctx.load_module(crate::kernels::CONTROL_PTX)?;
        Ok(Self {
            k: LoopKernels {
                zero: m.kernel("zero_u32")?,
                zero2: m.kernel("zero2_u32")?,
                add: m.kernel("add_u32")?,
                step_below: m.kernel("cond_step_below")?,
                until_token: m.kernel("cond_until_token")?,
                steps: m.kernel("cond_steps")?,
                steps_until: m.kernel("cond_steps_until")?,
                stop_on_token: m.kernel("stop_on_token")?,
                from_zero_flag: m.kernel("cond_from_zero_flag")?,
            },
            step: stream.alloc_zeros::<u32>(1)?,
            stopped: stream.alloc_zeros::<u32>(1)?,
            ctx,
        })
    }

    /// The steps the last run of the loop made (read after the graph's launch). In a loop
    /// of several steps per iteration that stopped early, this counts the steps run after
    /// the stop in the stop's iteration too.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn steps(&self, stream: &mut Stream<Idle>) -> Result<u32> {
        Ok(stream.download(&self.step)?[0])
    }

    /// The loop's stop flag: 0 until the stop token was seen, then 1, in a loop of several
    /// steps per iteration stopping on [`Until::Token`]. The steps after the stop in the
    /// stop's iteration still run: a kernel of the body that must change nothing then reads
    /// this flag (launch it with `counter.stop_flag()` as an argument) and returns early.
    pub fn stop_flag(&self) -> &DeviceBuffer<u32> {
        &self.stopped
    }
}

/// The kernel that steers a branch from device data: made before the capture (it loads a
/// module), borrowed by the graph.
pub struct Branch {
    ctx: Context,
    from_flag: Kernel,
}

impl std::fmt::Debug for Branch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Branch").field("device", &self.ctx.ordinal()).finish()
    }
}

impl Branch {
    /// The branch kernel on `ctx`'s device.
    ///
    /// # Errors
    /// [`Error::ConditionalNodesUnsupported`] on a driver older than CUDA 12.4;
    /// [`Error::Driver`] (module load).
    pub fn new(ctx: &Context) -> Result<Self> {
        check_driver(ctx, "an IF branch", CONDITIONAL_DRIVER_VERSION)?;
        if let Some(sim) = ctx.sim() {
            crate::kernels::register_control_kernels(sim);
        }
        let m = ctx.load_module(crate::kernels::CONTROL_PTX)?;
        Ok(Self { ctx: ctx.clone(), from_flag: m.kernel("cond_from_flag")? })
    }
}

/// `Err(ConditionalNodesUnsupported)` on a GPU whose driver is older than `needed`.
fn check_driver(ctx: &Context, form: &'static str, needed: i32) -> Result<()> {
    if ctx.kind() == DeviceKind::Cuda {
        let found = crate::raw::driver_version().map_err(|code| Error::Driver { op: "cuDriverGetVersion", code })?;
        if found < needed {
            return Err(Error::ConditionalNodesUnsupported { form, needed, found });
        }
    }
    Ok(())
}

/// When a loop stops, besides its bound.
#[derive(Copy, Clone, Debug)]
#[non_exhaustive]
pub enum Until<'a> {
    /// At the bound: the body runs exactly `max_steps` times.
    Bound,
    /// When the body has written `stop` to `token` (tested after each step), or at the bound.
    Token {
        /// The token the body writes each step.
        token: &'a DeviceBuffer<u32>,
        /// The id that ends the loop.
        stop: u32,
    },
    /// When a kernel of the body has written a non-zero value to `flag` (the loop zeroes it
    /// when it starts, and tests it after each iteration), or at the bound. For a body whose
    /// own kernel decides — the one that writes the token, say — with no extra kernel per
    /// step.
    Flag {
        /// The stop flag the body raises.
        flag: &'a DeviceBuffer<u32>,
    },
}

impl<'a> Stream<Capturing<'a>> {
    /// Records a loop run on the device: `body` is recorded once, into a WHILE node, and each
    /// launch of the graph runs it until `until` says stop, at most `max_steps` times. The
    /// counter is reset at the start of the loop; [`LoopCounter::steps`] reads how many steps
    /// ran. The body runs at least once.
    ///
    /// Each iteration of a WHILE node costs a few microseconds on the GPU (about 2.5 µs on
    /// an H100): for short steps, [`while_loop_unrolled`](Self::while_loop_unrolled) records
    /// several steps per iteration.
    ///
    /// # Errors
    /// [`Error::InvalidLoop`] for a bound of 0; [`Error::ContextMismatch`] for a counter,
    /// token or flag of another device; [`Error::NotInConditionalBody`] for a memory node in
    /// the body; the body's own errors; [`Error::Driver`] (e.g. `CUDA_ERROR_NOT_SUPPORTED`
    /// where the driver refuses what the body recorded). On any error the body's recording
    /// is ended — with its condition kernel, so the loop stays bounded — and the capture
    /// goes on: drop it (an early `?` does) rather than finish a graph with half a body.
    /// A body whose recording the driver invalidated loses the whole capture
    /// ([`Error::CaptureInvalidated`] from `finish`).
    #[track_caller]
    pub fn while_loop<F>(&mut self, counter: &'a LoopCounter, max_steps: u32, until: Until<'a>, body: F) -> Result<()>
    where
        F: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let site = CallSite::caller();
        let mut body = Some(body);
        // One step per iteration and no remainder: the body is recorded exactly once.
        self.record_loop(site, "Stream::while_loop", counter, max_steps, 1, until, &mut |s| match body.take() {
            Some(f) => f(s),
            None => Ok(()),
        })
    }

    /// Records a loop of `per_iteration` steps per WHILE iteration: `body` is recorded
    /// `per_iteration` times into the node's body (and `max_steps % per_iteration` times
    /// more after it, under an IF when the loop can stop early), so the node's cost per
    /// iteration is shared by that many steps. With [`Until::Bound`] the body runs exactly
    /// `max_steps` times, as with [`while_loop`](Self::while_loop).
    ///
    /// **Stopping early is tested once per iteration.** With [`Until::Token`] the library
    /// raises [`LoopCounter::stop_flag`] after the step that wrote the stop token (a
    /// one-thread kernel after each step); with [`Until::Flag`] the body's own kernel
    /// raises the flag. Either way the steps left in that iteration still run: kernels
    /// whose effects must stop with the loop read the flag and return early — then every
    /// state the loop leaves is the state at its stop, as with one step per iteration.
    ///
    /// # Errors
    /// As [`while_loop`](Self::while_loop); [`Error::InvalidLoop`] for `per_iteration` of 0.
    /// A `per_iteration` above `max_steps` is taken as `max_steps`.
    #[track_caller]
    pub fn while_loop_unrolled<F>(
        &mut self,
        counter: &'a LoopCounter,
        max_steps: u32,
        per_iteration: u32,
        until: Until<'a>,
        mut body: F,
    ) -> Result<()>
    where
        F: FnMut(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let site = CallSite::caller();
        if per_iteration == 0 {
            return Err(Error::InvalidLoop {
                reason: "0 steps per iteration: give 1 (one step per WHILE iteration) or more".into(),
            });
        }
        self.record_loop(site, "Stream::while_loop_unrolled", counter, max_steps, per_iteration, until, &mut body)
    }

    /// The loop of [`while_loop`](Self::while_loop) and
    /// [`while_loop_unrolled`](Self::while_loop_unrolled).
    #[allow(clippy::too_many_arguments)]
    fn record_loop(
        &mut self,
        site: CallSite,
        op: &'static str,
        counter: &'a LoopCounter,
        max_steps: u32,
        per_iteration: u32,
        until: Until<'a>,
        body: &mut dyn FnMut(&mut Stream<Capturing<'a>>) -> Result<()>,
    ) -> Result<()> {
        Capturing::check_live(&self.ext, op)?;
        if max_steps == 0 {
            return Err(Error::InvalidLoop {
                reason: "a bound of 0 steps: the body runs at least once; give 1 or more".into(),
            });
        }
        if !counter.ctx.same(&self.ctx) {
            return Err(Error::ContextMismatch { op, what: "loop counter" });
        }
        match until {
            Until::Token { token, .. } if !token.ctx.same(&self.ctx) => {
                return Err(Error::ContextMismatch { op, what: "token buffer" })
            }
            Until::Flag { flag } if !flag.ctx.same(&self.ctx) => {
                return Err(Error::ContextMismatch { op, what: "stop flag" })
            }
            _ => {}
        }
        let k = &counter.k;
        let per = per_iteration.min(max_steps);
        if u64::from(max_steps) + u64::from(per) > u64::from(u32::MAX) {
            // The test kernels add a step count to the bound in 32 bits.
            return Err(Error::InvalidLoop {
                reason: format!(
                    "a bound of {max_steps} steps: give at most {} (u32::MAX - steps per iteration)",
                    u32::MAX - per
                ),
            });
        }
        let whole = max_steps - max_steps % per; // the steps the WHILE node runs at most
        let rest = max_steps % per; // recorded once more after the node
                                    // The flag an early stop raises, tested after each iteration.
        let flag = match until {
            Until::Bound => None,
            Until::Token { .. } if per == 1 => None, // tested with the step (cond_until_token)
            Until::Token { .. } => Some(&counter.stopped),
            Until::Flag { flag } => Some(flag),
        };
        match flag {
            Some(f) => self.launch(&k.zero2, ONE, (&counter.step, f))?,
            None => self.launch(&k.zero, ONE, (&counter.step,))?,
        }
        // One step, then (stopping on a token, several steps per iteration) the library's
        // flag raised if the step wrote the stop token.
        let mut one_step = |s: &mut Stream<Capturing<'a>>| -> Result<()> {
            body(s)?;
            match until {
                Until::Token { token, stop } if per > 1 => {
                    s.launch(&k.stop_on_token, ONE, (token, stop, &counter.stopped))
                }
                _ => Ok(()),
            }
        };
        // Default 1: the body runs once before the first test (the test ends each iteration).
        let handle = self.run(op, site, |b, s| b.cond_handle(s, 1))?;
        let graphs = self.run(op, site, |b, s| b.cond_add(s, handle, CondKind::While, 1))?;
        let Some(&graph) = graphs.first() else {
            return Err(Error::InvalidLoop { reason: "the driver gave the loop no body graph".into() });
        };
        self.record_body(
            op,
            site,
            graph,
            |inner| (0..per).try_for_each(|_| one_step(inner)),
            |inner| match (until, flag) {
                (Until::Token { token, stop }, None) => {
                    inner.launch(&k.until_token, ONE, (token, stop, &counter.step, whole, handle))
                }
                (_, Some(f)) => inner.launch(&k.steps_until, ONE, (f, &counter.step, per, whole, handle)),
                (_, None) if per == 1 => inner.launch(&k.step_below, ONE, (&counter.step, whole, handle)),
                (_, None) => inner.launch(&k.steps, ONE, (&counter.step, per, whole, handle)),
            },
        )?;
        if rest == 0 {
            return Ok(());
        }
        // The remainder: after a loop that cannot stop early, plainly; else under an IF
        // that runs only if nothing raised the flag.
        let mut tail = |s: &mut Stream<Capturing<'a>>| -> Result<()> {
            (0..rest).try_for_each(|_| one_step(s))?;
            s.launch(&k.add, ONE, (&counter.step, rest))
        };
        let Some(f) = flag else {
            return tail(self);
        };
        let handle = self.run(op, site, |b, s| b.cond_handle(s, 0))?;
        self.launch(&k.from_zero_flag, ONE, (f, handle))?;
        let graphs = self.run(op, site, |b, s| b.cond_add(s, handle, CondKind::If, 1))?;
        let Some(&graph) = graphs.first() else {
            return Err(Error::InvalidLoop { reason: "the driver gave the loop's remainder no body graph".into() });
        };
        self.record_body(op, site, graph, tail, |_| Ok(()))
    }

    /// Records a branch decided on the device: `then` is recorded once, into an IF node,
    /// and each launch of the graph runs it only when `flag` — a `u32` in device memory,
    /// read when the graph reaches the branch — is not 0.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`] for a branch kit or flag of another device;
    /// [`Error::NotInConditionalBody`] for a memory node in the body; the body's own errors;
    /// [`Error::Driver`]. On an error the body's recording is ended and the capture goes on:
    /// drop it rather than finish a graph with half a body.
    #[track_caller]
    pub fn if_nonzero<F>(&mut self, branch: &'a Branch, flag: &'a DeviceBuffer<u32>, then: F) -> Result<()>
    where
        F: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let site = CallSite::caller();
        let graphs = self.branch_node(site, "Stream::if_nonzero", branch, flag, 1)?;
        let Some(&graph) = graphs.first() else {
            return Err(Error::InvalidLoop { reason: "the driver gave the branch no body graph".into() });
        };
        self.record_body("Stream::if_nonzero", site, graph, then, |_| Ok(()))
    }

    /// Records a two-way branch decided on the device: an IF node with an ELSE body (CUDA
    /// 12.8 or later). Each launch runs `then` when `flag` is not 0, else `otherwise`.
    ///
    /// # Errors
    /// As [`if_nonzero`](Self::if_nonzero); [`Error::ConditionalNodesUnsupported`] on a
    /// driver older than CUDA 12.8. On an error in `then`, `otherwise` is not recorded.
    #[track_caller]
    pub fn if_else<F, G>(
        &mut self,
        branch: &'a Branch,
        flag: &'a DeviceBuffer<u32>,
        then: F,
        otherwise: G,
    ) -> Result<()>
    where
        F: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
        G: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let site = CallSite::caller();
        let op = "Stream::if_else";
        check_driver(&self.ctx, "an IF/ELSE branch", IF_ELSE_DRIVER_VERSION)?;
        let graphs = self.branch_node(site, op, branch, flag, 2)?;
        let (Some(&yes), Some(&no)) = (graphs.first(), graphs.get(1)) else {
            return Err(Error::InvalidLoop { reason: "the driver gave the branch fewer than two body graphs".into() });
        };
        self.record_body(op, site, yes, then, |_| Ok(()))?;
        self.record_body(op, site, no, otherwise, |_| Ok(()))
    }

    /// The IF node of a branch on `flag`, with `bodies` body graphs (returned, empty).
    fn branch_node(
        &mut self,
        site: CallSite,
        op: &'static str,
        branch: &'a Branch,
        flag: &'a DeviceBuffer<u32>,
        bodies: u32,
    ) -> Result<Vec<crate::device::RawGraph>> {
        Capturing::check_live(&self.ext, op)?;
        if !branch.ctx.same(&self.ctx) {
            return Err(Error::ContextMismatch { op, what: "branch kernels" });
        }
        if !flag.ctx.same(&self.ctx) {
            return Err(Error::ContextMismatch { op, what: "flag buffer" });
        }
        // Default 0; the kernel sets it from the flag just before the node.
        let handle = self.run(op, site, |b, s| b.cond_handle(s, 0))?;
        self.launch(&branch.from_flag, ONE, (flag, handle))?;
        self.run(op, site, |b, s| b.cond_add(s, handle, CondKind::If, bodies))
    }

    /// Records `body`, then `tail` (whatever happened to `body`), into a conditional node's
    /// body graph through a stream of its own that shares this capture's book.
    fn record_body<F, T>(
        &mut self,
        op: &'static str,
        site: CallSite,
        graph: crate::device::RawGraph,
        body: F,
        tail: T,
    ) -> Result<()>
    where
        F: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
        T: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let mode = self.ext.borrow().mode;
        let side = crate::stream::spare_stream(&self.ctx)?;
        if let Err(code) = self.ctx.b().capture_into(side, graph, mode) {
            self.ctx.reg().return_spare_stream(side);
            return Err(Error::Driver { op: "cuStreamBeginCaptureToGraph", code });
        }
        let mut inner = Stream::with_ext(self.ctx.clone(), side, Owner::Pooled, self.ext.clone());
        self.ext.borrow_mut().in_body += 1;
        let recorded = body(&mut inner);
        // The tail (a loop's test) goes in whatever happened: a loop whose body failed
        // half-way is still bounded, should its graph be finished anyway.
        let tailed = tail(&mut inner);
        self.ext.borrow_mut().in_body -= 1;
        let ended = self.ctx.b().end_into(side).map_err(|code| {
            // The driver discards an invalidated body but keeps it in the node: the whole
            // capture is lost, and its graph must never be destroyed (see `poisoned`).
            self.ext.borrow().poisoned.store(true, std::sync::atomic::Ordering::Release);
            self.ctx.fail(op, site, code)
        });
        drop(inner);
        recorded?;
        tailed?;
        ended
    }
}

#[cfg(test)]
mod tests {
    use crate::Error;

    #[test]
    fn an_old_driver_is_told_the_version_it_needs() {
        let e = Error::ConditionalNodesUnsupported {
            form: "an IF/ELSE branch",
            needed: super::IF_ELSE_DRIVER_VERSION,
            found: 12060,
        };
        let text = e.to_string();
        assert!(text.starts_with("an IF/ELSE branch needs a driver of API version 12080"), "{text}");
        assert!(text.contains("CUDA 12.8") && text.contains("this driver is 12060"), "{text}");
        let e = Error::ConditionalNodesUnsupported {
            form: "a WHILE loop",
            needed: super::CONDITIONAL_DRIVER_VERSION,
            found: 12020,
        };
        assert!(e.to_string().contains("CUDA 12.4"), "{e}");
    }
}
