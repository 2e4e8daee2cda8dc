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
//! The library sets every condition itself just before its node, each time the graph
//! reaches it: 1 for a loop (so its body runs at least once; the library's test kernel at
//! the end of each iteration then decides; a loop nested in another's body starts afresh in
//! each outer iteration), the flag's value for a branch. So handles are made without a value
//! the driver assigns at each launch, which would cost about 2 µs a launch (measured on an
//! H100); the simulated device gives a handle 0 until a kernel sets it, so a node whose
//! condition nothing set would never run its body there, and a test would see it.
//!
//! A loop's [`LoopCounter`] counts one loop at a time: a loop nested in another needs its
//! own, and two graphs sharing a counter must not run at once (on two streams they would
//! race on its count; on one stream they take turns).
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
use crate::state::{Capturing, Idle, LoopSetup, StreamState};
use crate::stream::{Owner, Stream};

/// The driver API version conditional WHILE and IF nodes need (CUDA 12.4).
pub const CONDITIONAL_DRIVER_VERSION: i32 = 12040;

/// The driver API version an IF node with an ELSE body needs (CUDA 12.8).
pub const IF_ELSE_DRIVER_VERSION: i32 = 12080;

/// The most steps one iteration of [`Stream::while_loop_unrolled`] may record.
pub const MAX_PER_ITERATION: u32 = 1024;

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
    /// Set while a loop on this counter is being recorded: a loop nested in it must not
    /// reset the same counter (the outer loop would then never reach its bound).
    recording: std::sync::atomic::AtomicBool,
}

/// Clears [`LoopCounter::recording`] when the loop's recording ends, on every path.
struct Recording<'c>(&'c std::sync::atomic::AtomicBool);

impl Drop for Recording<'_> {
    fn drop(&mut self) {
        self.0.store(false, std::sync::atomic::Ordering::Release);
    }
}

/// A stop flag in use by a loop being recorded in this capture: the capture's book lists
/// them while their loops are recorded, so a loop nested in another cannot share its flag.
struct FlagInUse {
    book: crate::book::Book,
    ptr: crate::device::DevPtr,
}

impl FlagInUse {
    fn take(book: &crate::book::Book, ptr: crate::device::DevPtr) -> Result<Self> {
        let mut b = book.borrow_mut();
        if b.loop_flags.contains(&ptr) {
            return Err(Error::InvalidLoop {
                reason: "this stop flag is already the flag of the loop this one is nested in: its start would \
                         lower the outer loop's raised flag, so the outer loop would miss its stop; give the \
                         nested loop a flag of its own"
                    .into(),
            });
        }
        b.loop_flags.push(ptr);
        Ok(Self { book: book.clone(), ptr })
    }
}

impl Drop for FlagInUse {
    fn drop(&mut self) {
        if let Ok(mut b) = self.book.try_borrow_mut() {
            b.loop_flags.retain(|p| *p != self.ptr);
        }
    }
}

/// The condition kernels of [`kernels::CONTROL_PTX`](crate::kernels::CONTROL_PTX).
struct LoopKernels {
    start: Kernel,
    start_flag: Kernel,
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
    pub fn new<S: StreamState + LoopSetup>(stream: &mut Stream<S>) -> Result<Self> {
        let ctx = stream.ctx.clone();
        check_driver(&ctx, "a WHILE loop", CONDITIONAL_DRIVER_VERSION)?;
        if let Some(sim) = ctx.sim() {
            crate::kernels::register_control_kernels(sim);
        }
        let m = ctx.load_module(crate::kernels::CONTROL_PTX)?;
        Ok(Self {
            k: LoopKernels {
                start: m.kernel("loop_start")?,
                start_flag: m.kernel("loop_start_flag")?,
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
            recording: std::sync::atomic::AtomicBool::new(false),
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

    /// The loop's stop flag, in a loop stopping on [`Until::Token`]: lowered (0) when the
    /// loop starts, raised (1) once the stop token was seen. In a loop of several steps per
    /// iteration the steps after the stop in the stop's iteration still run: a kernel of the
    /// body that must change nothing then reads this flag (launch it with
    /// `counter.stop_flag()` as an argument) and returns early.
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
    /// Each iteration of a WHILE node costs a few microseconds on the GPU (2.7–3.5 µs more
    /// than a graph launch per step, measured on an H100 with the test kernel): for short
    /// steps, [`while_loop_unrolled`](Self::while_loop_unrolled) records several steps per
    /// iteration. On the simulated device a WHILE node stops with `CUDA_ERROR_LAUNCH_TIMEOUT`
    /// at the launch after 2^22 iterations (its guard against runaway loops).
    ///
    /// # Errors
    /// [`Error::InvalidLoop`] for a bound of 0; [`Error::ContextMismatch`] for a counter,
    /// token or flag of another device; [`Error::InvalidLoop`] as well for a counter already
    /// counting a loop being recorded (this loop's enclosing one, or one on another thread),
    /// and for a body that swapped its stream for another; [`Error::NotInConditionalBody`]
    /// for a memory node in the body; the body's own errors; [`Error::Driver`] (e.g.
    /// `CUDA_ERROR_NOT_SUPPORTED` where the driver refuses what the body recorded). A body
    /// that fails, panics or swaps its stream still gets its test kernel (the loop stays
    /// bounded) and its recording is ended, but the capture is then lost:
    /// [`CaptureGuard::finish`](crate::CaptureGuard::finish) returns
    /// [`Error::CaptureInvalidated`] naming this loop, and the stream is idle and usable
    /// again once the guard is gone. A panic in the body goes on to the caller.
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
            Until::Token { token, .. } if !token.ctx.same(&self.ctx.h) => {
                return Err(Error::ContextMismatch { op, what: "token buffer" })
            }
            Until::Flag { flag } if !flag.ctx.same(&self.ctx.h) => {
                return Err(Error::ContextMismatch { op, what: "stop flag" })
            }
            _ => {}
        }
        if per_iteration > MAX_PER_ITERATION {
            return Err(Error::InvalidLoop {
                reason: format!(
                    "{per_iteration} steps per iteration: the body is recorded that many times; give at most \
                     {MAX_PER_ITERATION} (past a few dozen, the node's cost per step no longer shrinks)"
                ),
            });
        }
        if counter.recording.swap(true, std::sync::atomic::Ordering::AcqRel) {
            return Err(Error::InvalidLoop {
                reason: "this counter is already counting a loop being recorded — the loop this one is nested in, \
                         or one on another thread: give each loop that can run at once a LoopCounter of its own \
                         (resetting another loop's count would keep that loop from its bound)"
                    .into(),
            });
        }
        let _recording = Recording(&counter.recording);
        let k = &counter.k;
        let per = per_iteration.min(max_steps);
        // The tests of unrolled loops and of flag loops add a step count to the bound in 32
        // bits (`s + per <= limit`): keep that sum from wrapping.
        let adds = per > 1 || matches!(until, Until::Flag { .. });
        if adds && u64::from(max_steps) + u64::from(per) > u64::from(u32::MAX) {
            return Err(Error::InvalidLoop {
                reason: format!(
                    "a bound of {max_steps} steps with {per} per iteration (or a stop flag): give at most {} \
                     (u32::MAX - steps per iteration)",
                    u32::MAX - per
                ),
            });
        }
        // The steps the WHILE node runs at most, and the rest, recorded once after it.
        let (whole, rest) = (max_steps - max_steps % per, max_steps % per);
        // The flag an early stop raises, tested after each iteration.
        let flag = match until {
            Until::Bound => None,
            Until::Token { .. } => Some(&counter.stopped),
            Until::Flag { flag } => Some(flag),
        };
        // A loop nested in another must not share its stop flag: its start would lower the
        // outer loop's raised flag, and the outer loop would miss its stop.
        let _flag_in_use = match flag {
            Some(f) => Some(FlagInUse::take(&self.ext, f.ptr)?),
            None => None,
        };
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
        // The loop's start sets the condition to 1 (and zeroes the counter, lowers the flag)
        // every time the graph reaches it: the body runs once before the first test, and a
        // loop nested in another's body runs again in each of its iterations.
        let handle = self.run(op, site, |b, s| b.cond_handle(s))?;
        match flag {
            Some(f) => self.launch(&k.start_flag, ONE, (&counter.step, f, handle))?,
            None => self.launch(&k.start, ONE, (&counter.step, handle))?,
        }
        let graphs = self.run(op, site, |b, s| b.cond_add(s, handle, CondKind::While, 1))?;
        let Some(&graph) = graphs.first() else {
            return Err(self.broken(
                op,
                site,
                Error::InvalidLoop { reason: "the driver gave the loop no body graph".into() },
            ));
        };
        self.record_body(
            op,
            site,
            graph,
            |inner| (0..per).try_for_each(|_| one_step(inner)),
            |inner| match (until, flag) {
                (Until::Token { token, stop }, Some(f)) if per == 1 => {
                    inner.launch(&k.until_token, ONE, (token, stop, f, &counter.step, whole, handle))
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
        // A failure here leaves the loop short of its steps: the capture is lost too.
        let Some(f) = flag else {
            return tail(self).map_err(|e| self.broken(op, site, e));
        };
        let made = self.run(op, site, |b, s| b.cond_handle(s)).and_then(|handle| {
            self.launch(&k.from_zero_flag, ONE, (f, handle))?;
            self.run(op, site, |b, s| b.cond_add(s, handle, CondKind::If, 1))
        });
        let graph = match made.map(|graphs| graphs.first().copied()) {
            Ok(Some(graph)) => graph,
            Ok(None) => {
                let e = Error::InvalidLoop { reason: "the driver gave the loop's remainder no body graph".into() };
                return Err(self.broken(op, site, e));
            }
            Err(e) => return Err(self.broken(op, site, e)),
        };
        self.record_body(op, site, graph, tail, |_| Ok(()))
    }

    /// Joins into `side` every fork made since the book held `since` forks that was not
    /// joined back; `Err(UnjoinedFork)` naming the first, if any.
    fn join_forks_since(&self, since: usize, side: crate::device::RawStream) -> Result<()> {
        let unjoined: Vec<(CallSite, crate::device::RawStream)> =
            self.ext.borrow().forks.iter().skip(since).filter(|f| !f.2).map(|f| (f.0, f.1)).collect();
        let Some(&(first, _)) = unjoined.first() else {
            return Ok(());
        };
        let b = self.ctx.b();
        for (_, fork) in unjoined {
            let ev = crate::event::Event::new(&self.ctx)?;
            let joined = b.event_record(ev.raw, fork).and_then(|()| b.stream_wait_event(side, ev.raw));
            let mut book = self.ext.borrow_mut();
            book.events.push(ev);
            if let Some(f) = book.forks.iter_mut().find(|f| f.1 == fork && !f.2) {
                f.2 = joined.is_ok();
            }
            if let Err(code) = joined {
                log::error!("capture-core: joining a fork left open in a loop or branch body failed: {code}");
            }
        }
        Err(Error::UnjoinedFork { fork_site: first })
    }

    /// Marks the capture as holding a conditional node whose body failed to record (so
    /// `finish` refuses it: a WHILE body without its test would never end), and returns `e`.
    fn broken(&self, op: &'static str, site: CallSite, e: Error) -> Error {
        self.mark_broken(op, site);
        e
    }

    /// Marks the capture lost by a failed body of the loop or branch `op` at `site`.
    fn mark_broken(&self, op: &'static str, site: CallSite) {
        let mut book = self.ext.borrow_mut();
        book.broken = true;
        if book.invalidated_by.is_none() {
            book.invalidated_by = Some(crate::error::OpSite { op, site });
        }
    }

    /// Records a branch decided on the device: `then` is recorded once, into an IF node,
    /// and each launch of the graph runs it only when `flag` — a `u32` in device memory,
    /// read when the graph reaches the branch — is not 0.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`] for a branch kit or flag of another device;
    /// [`Error::NotInConditionalBody`] for a memory node in the body; the body's own errors;
    /// [`Error::Driver`]. As with loops, a body that fails loses the capture (`finish`
    /// returns [`Error::CaptureInvalidated`]).
    #[track_caller]
    pub fn if_nonzero<F>(&mut self, branch: &'a Branch, flag: &'a DeviceBuffer<u32>, then: F) -> Result<()>
    where
        F: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let site = CallSite::caller();
        let graphs = self.branch_node(site, "Stream::if_nonzero", branch, flag, 1)?;
        let Some(&graph) = graphs.first() else {
            let e = Error::InvalidLoop { reason: "the driver gave the branch no body graph".into() };
            return Err(self.broken("Stream::if_nonzero", site, e));
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
            let e = Error::InvalidLoop { reason: "the driver gave the branch fewer than two body graphs".into() };
            return Err(self.broken(op, site, e));
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
        if !flag.ctx.same(&self.ctx.h) {
            return Err(Error::ContextMismatch { op, what: "flag buffer" });
        }
        // The kernel sets it from the flag just before the node.
        let handle = self.run(op, site, |b, s| b.cond_handle(s))?;
        self.launch(&branch.from_flag, ONE, (flag, handle))?;
        self.run(op, site, |b, s| b.cond_add(s, handle, CondKind::If, bodies))
    }

    /// Records `body`, then `tail` (whatever happened to `body`), into a conditional node's
    /// body graph through a stream of its own that shares this capture's book. Any failure
    /// marks the capture broken (`finish` refuses it); a body the driver invalidated also
    /// marks it poisoned (its graph is leaked, never destroyed).
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
        let side = match crate::stream::spare_stream(&self.ctx) {
            Ok(s) => s,
            Err(e) => return Err(self.broken(op, site, e)),
        };
        if let Err(code) = self.ctx.b().capture_into(side, graph, mode) {
            self.ctx.reg().return_spare_stream(side);
            return Err(self.broken(op, site, Error::Driver { op: "cuStreamBeginCaptureToGraph", code }));
        }
        // A view: the body's stream goes back to the spares right after its capture ends.
        let mut inner = Stream::with_ext(self.ctx.clone(), side, Owner::View, self.ext.clone());
        let open_bodies = self.ext.borrow().open_bodies.clone();
        let forks_before = self.ext.borrow().forks.len();
        self.ext.borrow_mut().in_body += 1;
        open_bodies.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        // A panicking body must not leave the body's stream capturing nor the book counting
        // a body: caught here, cleaned up below, then resumed.
        let recorded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&mut inner)));
        // A body that swapped its stream for another capturing stream (`std::mem::swap`)
        // would have the test recorded elsewhere: the test goes on a view of the body's own
        // stream, and both captures involved are marked (their streams refuse work, and
        // `finish` refuses them).
        let swapped = inner.raw != side || !std::rc::Rc::ptr_eq(&inner.ext, &self.ext);
        // The tail (a loop's test) goes in whatever happened: a loop whose body failed
        // half-way stays bounded.
        let tailed = {
            let mut own = Stream::with_ext(self.ctx.clone(), side, Owner::View, self.ext.clone());
            tail(&mut own)
        };
        self.ext.borrow_mut().in_body -= 1;
        // Forks made in the body and not joined back: joined here, so that no stream is left
        // recording into the body after it ends (the H100's driver ends such a body without
        // a word), and the capture is lost (`UnjoinedFork`).
        let unjoined = self.join_forks_since(forks_before, side);
        let ended = self.ctx.b().end_into(side).map_err(|code| {
            // The driver discards an invalidated body but keeps it in the node: the whole
            // capture is lost, and its graph must never be destroyed (see `poisoned`).
            self.ext.borrow().poisoned.store(true, std::sync::atomic::Ordering::Release);
            self.ctx.fail(op, site, code)
        });
        open_bodies.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        self.ctx.reg().return_spare_stream(side);
        if swapped {
            self.mark_broken(op, site);
            for book in [&self.ext, &inner.ext] {
                if let Ok(mut b) = book.try_borrow_mut() {
                    b.swapped = true;
                    b.broken = true;
                }
            }
        }
        drop(inner);
        let outcome = match recorded {
            Ok(r) => r.and(tailed).and(unjoined).and(ended),
            Err(panic) => {
                self.ext.borrow_mut().broken = true;
                std::panic::resume_unwind(panic)
            }
        };
        if swapped {
            return Err(Error::InvalidLoop {
                reason: "the body swapped its stream for another (std::mem::swap): the capture is discarded".into(),
            });
        }
        outcome.map_err(|e| self.broken(op, site, e))
    }
}

#[cfg(test)]
mod tests;
