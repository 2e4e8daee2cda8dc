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

mod branch;
mod loops;

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

impl Stream<Capturing<'_>> {
    /// A condition handle in the graph being recorded, noted in the capture's book (a capture
    /// diff tells handles apart from host values by it).
    pub(crate) fn new_cond_handle(&mut self, op: &'static str, site: CallSite) -> Result<u64> {
        let handle = self.run(op, site, |b, s| b.cond_handle(s))?;
        self.ext.borrow_mut().cond_handles.push(handle);
        Ok(handle)
    }
}
#[cfg(test)]
mod tests;
