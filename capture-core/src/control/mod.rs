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

/// The driver API version conditional WHILE nodes need (CUDA 12.4).
pub const CONDITIONAL_DRIVER_VERSION: i32 = 12040;

/// A loop's step counter in device memory and the kernels that keep its condition: made
/// before the capture (it allocates and loads a module), borrowed by the graph.
pub struct LoopCounter {
    ctx: Context,
    step: DeviceBuffer<u32>,
    zero: Kernel,
    step_below: Kernel,
    until_token: Kernel,
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
        if ctx.kind() == DeviceKind::Cuda {
            let found =
                crate::raw::driver_version().map_err(|code| Error::Driver { op: "cuDriverGetVersion", code })?;
            if found < CONDITIONAL_DRIVER_VERSION {
                return Err(Error::ConditionalNodesUnsupported { found });
            }
        }
        if let Some(sim) = ctx.sim() {
            crate::kernels::register_control_kernels(sim);
        }
        let m = ctx.load_module(crate::kernels::CONTROL_PTX)?;
        let step = stream.alloc_zeros::<u32>(1)?;
        Ok(Self {
            zero: m.kernel("zero_u32")?,
            step_below: m.kernel("cond_step_below")?,
            until_token: m.kernel("cond_until_token")?,
            step,
            ctx,
        })
    }

    /// The steps the last run of the loop made (read after the graph's launch).
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn steps(&self, stream: &mut Stream<Idle>) -> Result<u32> {
        Ok(stream.download(&self.step)?[0])
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
        check_driver(ctx)?;
        if let Some(sim) = ctx.sim() {
            crate::kernels::register_control_kernels(sim);
        }
        let m = ctx.load_module(crate::kernels::CONTROL_PTX)?;
        Ok(Self { ctx: ctx.clone(), from_flag: m.kernel("cond_from_flag")? })
    }
}

/// `Err(ConditionalNodesUnsupported)` on a GPU whose driver predates CUDA 12.4.
fn check_driver(ctx: &Context) -> Result<()> {
    if ctx.kind() == DeviceKind::Cuda {
        let found = crate::raw::driver_version().map_err(|code| Error::Driver { op: "cuDriverGetVersion", code })?;
        if found < CONDITIONAL_DRIVER_VERSION {
            return Err(Error::ConditionalNodesUnsupported { found });
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
}

impl<'a> Stream<Capturing<'a>> {
    /// Records a loop run on the device: `body` is recorded once, into a WHILE node, and each
    /// launch of the graph runs it until `until` says stop, at most `max_steps` times. The
    /// counter is reset at the start of the loop; [`LoopCounter::steps`] reads how many steps
    /// ran. The body runs at least once.
    ///
    /// # Errors
    /// [`Error::InvalidLoop`] for a bound of 0; [`Error::ContextMismatch`] for a counter or
    /// token of another device; [`Error::NotInConditionalBody`] for a memory node in the
    /// body; the body's own errors; [`Error::Driver`] (e.g. `CUDA_ERROR_NOT_SUPPORTED` where
    /// the driver refuses what the body recorded). On any error the body's recording is
    /// ended — with its condition kernel, so the loop stays bounded — and the capture goes
    /// on: drop it (an early `?` does) rather than finish a graph with half a body.
    #[track_caller]
    pub fn while_loop<F>(&mut self, counter: &'a LoopCounter, max_steps: u32, until: Until<'a>, body: F) -> Result<()>
    where
        F: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let site = CallSite::caller();
        let op = "Stream::while_loop";
        Capturing::check_live(&self.ext, op)?;
        if max_steps == 0 {
            return Err(Error::InvalidLoop {
                reason: "a bound of 0 steps: the body runs at least once; give 1 or more".into(),
            });
        }
        if !counter.ctx.same(&self.ctx) {
            return Err(Error::ContextMismatch { op, what: "loop counter" });
        }
        if let Until::Token { token, .. } = until {
            if !token.ctx.same(&self.ctx) {
                return Err(Error::ContextMismatch { op, what: "token buffer" });
            }
        }
        let one = LaunchConfig { grid: (1, 1, 1), block: (1, 1, 1), shared_mem_bytes: 0 };
        self.launch(&counter.zero, one, (&counter.step,))?;
        // Default 1: the body runs once before the first test (the test ends each step).
        let handle = self.run(op, site, |b, s| b.cond_handle(s, 1))?;
        let graphs = self.run(op, site, |b, s| b.cond_add(s, handle, CondKind::While, 1))?;
        let Some(&graph) = graphs.first() else {
            return Err(Error::InvalidLoop { reason: "the driver gave the loop no body graph".into() });
        };
        self.record_body(op, site, graph, body, |inner| match until {
            Until::Bound => inner.launch(&counter.step_below, one, (&counter.step, max_steps, handle)),
            Until::Token { token, stop } => {
                inner.launch(&counter.until_token, one, (token, stop, &counter.step, max_steps, handle))
            }
        })
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
        let op = "Stream::if_nonzero";
        Capturing::check_live(&self.ext, op)?;
        if !branch.ctx.same(&self.ctx) {
            return Err(Error::ContextMismatch { op, what: "branch kernels" });
        }
        if !flag.ctx.same(&self.ctx) {
            return Err(Error::ContextMismatch { op, what: "flag buffer" });
        }
        // Default 0; the kernel sets it from the flag just before the node.
        let handle = self.run(op, site, |b, s| b.cond_handle(s, 0))?;
        let one = LaunchConfig { grid: (1, 1, 1), block: (1, 1, 1), shared_mem_bytes: 0 };
        self.launch(&branch.from_flag, one, (flag, handle))?;
        let graphs = self.run(op, site, |b, s| b.cond_add(s, handle, CondKind::If, 1))?;
        let Some(&graph) = graphs.first() else {
            return Err(Error::InvalidLoop { reason: "the driver gave the branch no body graph".into() });
        };
        self.record_body(op, site, graph, then, |_| Ok(()))
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
        let ended = self.ctx.b().end_into(side).map_err(|code| self.ctx.fail(op, site, code));
        drop(inner);
        recorded?;
        tailed?;
        ended
    }
}
