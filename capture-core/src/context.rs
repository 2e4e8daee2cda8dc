//! The context: which device, and the per-context capture registry. `Context` is the public
//! facade over the low [`Handle`] that buffers, events and modules hold.

use std::fmt;
use std::sync::Arc;

use cudarc::driver::{CudaContext, CudaFunction, CudaModule};

use crate::device::sim::world::RankDevice;
use crate::device::sim::SimDevice;
use crate::device::DeviceKind;
use crate::error::{CallSite, DriverCode, Error, Result};
use crate::event::Event;
use crate::handle::{open_cuda, wrap_cuda, Dev, Handle};
use crate::module::{Kernel, Module};
use crate::registry::Registry;

/// A device context: the GPU (through cudarc) or the simulated device. Cheap to clone.
///
/// ```
/// use capture_core::Context;
/// let ctx = Context::open_default();
/// println!("running on {} ({})", ctx.name(), ctx.kind());
/// ```
#[derive(Clone)]
pub struct Context {
    pub(crate) h: Handle,
}

impl fmt::Debug for Context {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Context").field("kind", &self.kind()).field("name", &self.name()).finish()
    }
}

impl Context {
    fn from_dev(dev: Dev, fallback: Option<String>) -> Self {
        Self { h: Handle::new(dev, fallback, None) }
    }

    /// Opens CUDA device `ordinal` (its primary context).
    ///
    /// # Errors
    /// [`Error::NoDriver`] when `libcuda` cannot be loaded, [`Error::NoDevice`] when there is
    /// no such device, [`Error::Driver`] when the driver refuses. Never panics.
    pub fn open(ordinal: usize) -> Result<Self> {
        Ok(Self::from_dev(Dev::Cuda(open_cuda(ordinal)?), None))
    }

    /// A simulated world of `devices` devices in one process (2 to 8 make sense; 1 is
    /// allowed): one context per device, ordinals 0.., sharing capture rules the way the
    /// GPUs of one process do (a Global capture on one prohibits unsafe calls on all).
    /// [`Comm::init_all`](crate::collective::Comm::init_all) makes a communicator over them
    /// whose collectives move host memory between the devices.
    ///
    /// # Errors
    /// [`Error::InvalidWorld`] for 0 devices or more than 64.
    #[cfg(feature = "nccl")]
    #[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
    pub fn simulated_world(devices: usize) -> Result<Vec<Self>> {
        if devices == 0 || devices > 64 {
            return Err(Error::InvalidWorld {
                reason: format!("a simulated world of {devices} devices was asked for; ask for 1 to 64 (2 to 8 is what one host has)"),
            });
        }
        static NEXT_WORLD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        let world = NEXT_WORLD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let first = Self::simulated_in(world, 0, None);
        let domain = first.h.inner.domain;
        let mut all = vec![first];
        for i in 1..devices {
            all.push(Self::simulated_in(world, i, Some(domain)));
        }
        Ok(all)
    }

    #[cfg(feature = "nccl")]
    fn simulated_in(world: u64, index: usize, domain: Option<usize>) -> Self {
        Self { h: Handle::new(Dev::Sim(Box::new(SimDevice::in_world(world, index))), None, domain) }
    }

    /// Opens the simulated device: host memory, the same API and capture rules as the H100.
    pub fn simulated() -> Self {
        Self::from_dev(Dev::Sim(Box::new(SimDevice::new())), None)
    }

    /// GPU 0 when one is present, otherwise the simulated device;
    /// [`fallback_reason`](Self::fallback_reason) says why the GPU was not used.
    pub fn open_default() -> Self {
        match Self::open(0) {
            Ok(c) => c,
            Err(e) => {
                log::info!("no usable GPU ({e}); using the simulated device");
                Self::from_dev(Dev::Sim(Box::new(SimDevice::new())), Some(e.to_string()))
            }
        }
    }

    /// Wraps an existing cudarc context, so a cudarc or candle code base can adopt this
    /// crate one function at a time.
    ///
    /// # Errors
    /// [`Error::Driver`] if the device cannot be queried.
    pub fn from_cudarc(ctx: Arc<CudaContext>) -> Result<Self> {
        Ok(Self::from_dev(Dev::Cuda(wrap_cuda(ctx)?), None))
    }

    /// The cudarc context behind this one (`None` on the simulated device).
    pub fn cudarc(&self) -> Option<&Arc<CudaContext>> {
        self.h.cudarc()
    }

    /// The simulated device behind this context (`None` on a GPU): register host
    /// implementations of kernels there.
    pub fn sim(&self) -> Option<&SimDevice> {
        self.h.sim()
    }

    /// The device ordinal.
    pub fn ordinal(&self) -> usize {
        self.h.b().ordinal()
    }

    /// Blocks until all work on every stream of the context is done (`cuCtxSynchronize`).
    ///
    /// This is a context-wide operation, outside the stream type-state. On an H100 it fails
    /// and invalidates the capture whenever any stream of the context is capturing, in every
    /// mode and from any thread; so while a capture is active it is refused with
    /// [`Error::CaptureActive`] without calling the driver, and the capture stays intact.
    ///
    /// # Errors
    /// [`Error::CaptureActive`]; [`Error::Driver`].
    #[track_caller]
    pub fn synchronize(&self) -> Result<()> {
        let site = CallSite::caller();
        // The driver refuses it during any capture of the context, from any thread.
        crate::registry::fail_fast::check_any(self.h.inner.domain, "Context::synchronize", site)?;
        self.h.b().ctx_synchronize().map_err(|code| self.fail("Context::synchronize", site, code))
    }

    /// GPU or simulated device.
    pub fn kind(&self) -> DeviceKind {
        self.h.b().kind()
    }

    /// The device's name.
    pub fn name(&self) -> String {
        self.h.b().name()
    }

    /// Why [`open_default`](Self::open_default) fell back to the simulated device, if it did.
    pub fn fallback_reason(&self) -> Option<&str> {
        self.h.inner.fallback.as_deref()
    }

    /// (free, total) device memory in bytes.
    ///
    /// # Errors
    /// [`Error::Driver`] if the driver refuses (e.g. during a Global-mode capture).
    pub fn mem_info(&self) -> Result<(usize, usize)> {
        self.h.mem_info()
    }

    /// The device's graph-memory pool: bytes used and reserved for graph allocations
    /// (memory nodes) by every graph of the device, with their high-water marks. See
    /// [`GraphMemUsage`](crate::GraphMemUsage).
    ///
    /// # Errors
    /// [`Error::Driver`] (`cuDeviceGetGraphMemAttribute`).
    pub fn graph_memory(&self) -> Result<crate::device::GraphMemUsage> {
        self.h.b().graph_mem_usage().map_err(|code| Error::Driver { op: "cuDeviceGetGraphMemAttribute", code })
    }

    /// Resets the graph-memory pool's high-water marks to the current figures.
    ///
    /// # Errors
    /// [`Error::Driver`] (`cuDeviceSetGraphMemAttribute`).
    pub fn reset_graph_memory_high(&self) -> Result<()> {
        self.h.b().graph_mem_reset_high().map_err(|code| Error::Driver { op: "cuDeviceSetGraphMemAttribute", code })
    }

    /// Returns the graph-memory pool's memory that no executing or scheduled graph uses to
    /// the device (`cuDeviceGraphMemTrim`). Graphs keep working: a later launch reserves
    /// what it needs again.
    ///
    /// # Errors
    /// [`Error::Driver`] (`cuDeviceGraphMemTrim`).
    pub fn trim_graph_memory(&self) -> Result<()> {
        self.h.b().graph_mem_trim().map_err(|code| Error::Driver { op: "cuDeviceGraphMemTrim", code })
    }

    /// Loads a PTX module. Kernel names and parameter lists are read from the PTX so that
    /// launches are checked before they reach the driver.
    ///
    /// # Errors
    /// [`Error::InvalidPtx`] if the text has no entry points or the driver rejects it.
    pub fn load_module(&self, ptx: &str) -> Result<Module> {
        Module::load(&self.h, ptx)
    }

    /// Ends and discards the captures of this context that were begun on the calling thread
    /// and are still open — the recovery for a guard that was leaked with `mem::forget`
    /// (issue #13, item 6). Returns the ids of the captures it ended.
    ///
    /// A leaked [`CaptureGuard`](crate::CaptureGuard) leaves its stream capturing forever;
    /// in Global mode every synchronous operation of the context is then refused with
    /// [`Error::CaptureActive`]. This ends each such capture with the driver, destroys what
    /// it recorded, releases its fail-fast registration (so synchronous work is allowed
    /// again) and marks it ended: from then on every operation through the leaked guard's
    /// streams, forks included, is [`Error::CaptureEnded`] and reaches no driver. Nothing
    /// is unsound: the buffers the leaked capture borrowed stay borrowed (the borrow of a
    /// forgotten guard never ends), and no graph was made from them.
    ///
    /// Only captures begun on this thread are ended: CUDA ends a Global or ThreadLocal
    /// capture only on the thread that began it, so call this on the thread that leaked the
    /// guard. **It cannot tell a leaked guard from a live one**: a live guard of this
    /// thread whose capture it ends gets [`Error::CaptureEnded`] from
    /// [`finish`](crate::CaptureGuard::finish) and from every later operation, and its drop
    /// does nothing more. Call it where no guard of yours is open (for example at the top
    /// of a request loop, or after a `mem::forget` you know of).
    pub fn end_dangling_captures(&self) -> Vec<u64> {
        let b = self.b();
        let mut ended = Vec::new();
        for (id, d) in self.reg().active_on(std::thread::current().id()) {
            // Marked first: operations through the leaked streams stop here, before the
            // stream leaves capture mode (where they would silently run eagerly).
            d.ended.store(true, std::sync::atomic::Ordering::Release);
            match b.end_capture(d.raw) {
                // A failed conditional body left the graph unsafe to destroy, or a body is
                // still being recorded into it (this was called from inside one): leaked.
                Ok(g)
                    if g.0 != 0
                        && (d.poisoned.load(std::sync::atomic::Ordering::Acquire)
                            || d.open_bodies.load(std::sync::atomic::Ordering::Acquire) > 0) =>
                {
                    log::error!(
                        "capture-core: the graph of dangling capture #{id} is leaked (a conditional body failed, or is \
                         still being recorded)"
                    );
                }
                Ok(g) if g.0 != 0 => {
                    if let Err(code) = b.graph_destroy(g) {
                        log::error!("capture-core: destroying the graph of a dangling capture failed: {code}");
                    }
                }
                Ok(_) => {}
                // Invalidated or unjoined: the capture is over either way.
                Err(code) => log::debug!("capture-core: ending dangling capture #{id}: {code}"),
            }
            // cudarc's event tracking was switched off for this capture: count it ended.
            crate::interop::tracking::leave(&self.h);
            crate::registry::fail_fast::unregister(self.h.inner.domain, id);
            if let Some(w) = &d.watch {
                crate::watchdog::unwatch(w);
            }
            self.reg().end(id, b);
            log::warn!("capture-core: ended dangling capture #{id} (its guard was leaked); its work was discarded");
            ended.push(id);
        }
        ended
    }

    /// How many abandoned-capture reports a context keeps until they are taken with
    /// [`take_abandoned_reports`](Self::take_abandoned_reports). When more captures are
    /// abandoned in between, the oldest reports are dropped (so a program that abandons
    /// captures in a loop and never looks cannot grow without bound), and
    /// [`abandoned_reports_dropped`](Self::abandoned_reports_dropped) counts them.
    /// Every abandoned capture is also logged as a warning when its guard drops, whether or
    /// not its report is kept.
    pub const ABANDONED_REPORTS_KEPT: usize = 64;

    /// Capture reports of guards that were dropped without `finish()` (most recent last,
    /// at most [`ABANDONED_REPORTS_KEPT`](Self::ABANDONED_REPORTS_KEPT) kept), taken out of
    /// the context. Reports dropped for want of room are counted by
    /// [`abandoned_reports_dropped`](Self::abandoned_reports_dropped).
    pub fn take_abandoned_reports(&self) -> Vec<crate::report::CaptureReport> {
        self.h.inner.registry.take_abandoned()
    }

    /// How many abandoned-capture reports this context has dropped, over its whole life,
    /// because more than [`ABANDONED_REPORTS_KEPT`](Self::ABANDONED_REPORTS_KEPT) were
    /// waiting to be taken. Zero means [`take_abandoned_reports`](Self::take_abandoned_reports)
    /// has seen every abandoned capture. The count is cumulative: taking reports does not
    /// reset it (compare two readings to see what one stretch of work dropped).
    pub fn abandoned_reports_dropped(&self) -> u64 {
        self.h.inner.registry.abandoned_dropped()
    }

    #[inline]
    pub(crate) fn same(&self, other: &Context) -> bool {
        self.h.same(&other.h)
    }

    #[inline]
    pub(crate) fn b(&self) -> &dyn crate::device::Backend {
        self.h.b()
    }

    pub(crate) fn reg(&self) -> &Registry {
        self.h.reg()
    }

    /// `Err(CaptureActive)` if an active capture prohibits synchronous calls from here.
    #[inline]
    pub(crate) fn fail_fast(&self, op: &'static str, site: CallSite) -> Result<()> {
        self.h.fail_fast(op, site)
    }

    /// Maps a driver code to an error, noting it as a possible invalidation cause.
    pub(crate) fn fail(&self, op: &'static str, site: CallSite, code: DriverCode) -> Error {
        self.h.fail(op, site, code)
    }
}

// The registry, below, keeps this many; the public constant says so.
const _: () = assert!(Context::ABANDONED_REPORTS_KEPT == crate::registry::ABANDONED_REPORTS_KEPT);

impl RankDevice for Context {
    fn sim(&self) -> Option<&SimDevice> {
        self.h.sim()
    }
    fn clone_box(&self) -> Box<dyn RankDevice> {
        Box::new(self.clone())
    }
}

// A context's value types made from the public `Context`: their work is done on the handle,
// in their own files below.

impl Event {
    /// Creates an event with timing enabled.
    ///
    /// # Errors
    /// [`Error::Driver`] if the driver refuses.
    pub fn new(ctx: &Context) -> Result<Self> {
        Event::create(&ctx.h)
    }
}

impl Kernel {
    /// Wraps a cudarc function of `ctx`'s cudarc context, so it can be launched (and
    /// captured) through this crate. With `ptx` — the text the function's module was loaded
    /// from — launches are checked against the entry's parameter list like any kernel's;
    /// without it the parameter list is unknown and arguments are passed unchecked (each in
    /// an 8-byte slot, which the driver reads at the parameter's size): prefer giving it.
    ///
    /// cudarc does not say which context a `CudaFunction` belongs to, so a function of
    /// another context is reported by the driver at launch (`CUDA_ERROR_INVALID_HANDLE` or
    /// `CUDA_ERROR_INVALID_CONTEXT`), not here.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`] on the simulated device; [`Error::InvalidPtx`] if `ptx`
    /// cannot be read; [`Error::KernelNotFound`] if `ptx` has no entry `name`.
    pub fn from_cudarc(ctx: &Context, function: CudaFunction, name: &str, ptx: Option<&str>) -> Result<Self> {
        Self::from_cudarc_in(&ctx.h, function, name, ptx)
    }

    /// [`from_cudarc`](Self::from_cudarc) for the function `name` of a cudarc module.
    ///
    /// # Errors
    /// As [`from_cudarc`](Self::from_cudarc); [`Error::Driver`] if the module has no such
    /// function.
    pub fn from_cudarc_module(ctx: &Context, module: &Arc<CudaModule>, name: &str, ptx: Option<&str>) -> Result<Self> {
        Self::from_cudarc_module_in(&ctx.h, module, name, ptx)
    }
}
