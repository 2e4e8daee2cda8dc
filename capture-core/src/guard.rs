//! The RAII capture guard. Instantiation and in-place update are in `guard/finish.rs`.

mod finish;

pub(crate) use finish::Ended;

use std::cell::RefCell;
use std::ops::{Deref, DerefMut};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::book::{AllocPolicy, Book, CaptureBook, NodeMarks};
use crate::device::{CaptureMode, CaptureStatus, DevPtr, RawExec, RawGraph};
use crate::error::{CallSite, DriverCode, Error, Result};
use crate::graph::{Graph, InstantiateFlags};
use crate::report::CaptureReport;
use crate::snapshot::GraphSnapshot;
use crate::state::{Capturing, Idle, StreamState};
use crate::stream::{BeginCapture, Owner, Stream};

/// Options for [`Stream::capture_with`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CaptureOptions {
    /// The capture mode (default [`CaptureMode::Global`]).
    pub mode: CaptureMode,
    /// The allocation policy (default [`AllocPolicy::Warn`]).
    pub alloc_policy: AllocPolicy,
    /// A watchdog deadline: a capture open longer than this is reported (a log warning
    /// naming the last operation it recorded, and [`CaptureReport::watchdog`]). Default none.
    pub deadline: Option<std::time::Duration>,
    /// How [`CaptureGuard::finish`] instantiates the graph (default
    /// [`InstantiateFlags::new`]: auto-free-on-launch).
    pub instantiate: InstantiateFlags,
    /// Keep the capture's operations, with call sites, for the graph's picture
    /// ([`Graph::to_dot`](crate::Graph::to_dot) lists them next to the driver's nodes).
    /// Off by default on a GPU: it costs tens of nanoseconds per captured operation. The
    /// simulated device always keeps them.
    pub trace_ops: bool,
    /// Note which graph nodes each operation recorded, so that a
    /// [`GraphSnapshot`](crate::diff::GraphSnapshot) names the operation and call site of
    /// each node ([`CaptureGuard::finish_snapshot`], the capture diff). Implies
    /// [`trace_ops`](Self::trace_ops). Off by default on a GPU: it costs two driver calls per
    /// captured operation. The simulated device always labels its nodes.
    pub trace_nodes: bool,
}

impl CaptureOptions {
    /// Global mode, allocations warned about.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets the capture mode.
    pub fn mode(mut self, mode: CaptureMode) -> Self {
        self.mode = mode;
        self
    }
    /// Sets a watchdog deadline.
    pub fn deadline(mut self, deadline: std::time::Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }
    /// Sets the allocation policy.
    pub fn alloc_policy(mut self, policy: AllocPolicy) -> Self {
        self.alloc_policy = policy;
        self
    }
    /// Keeps the capture's operations for the graph's picture ([`trace_ops`](Self::trace_ops)).
    pub fn trace_ops(mut self) -> Self {
        self.trace_ops = true;
        self
    }
    /// Notes which graph nodes each operation recorded ([`trace_nodes`](Self::trace_nodes)).
    pub fn trace_nodes(mut self) -> Self {
        self.trace_nodes = true;
        self.trace_ops = true;
        self
    }
    /// Sets the instantiate flags ([`InstantiateFlags`]): upload, auto-free-on-launch,
    /// device launch, node priorities.
    pub fn instantiate(mut self, flags: InstantiateFlags) -> Self {
        self.instantiate = flags;
        self
    }
}

/// How [`CaptureGuard::finish_update`] brought a graph up to date.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum GraphUpdate {
    /// Same topology: the executable graph was updated in place.
    InPlace,
    /// The topology changed: a new executable graph was instantiated.
    Reinstantiated,
}

// Captures begin on a stream; the stream (below) knows nothing of guards.
impl<S: StreamState> Stream<S> {
    /// Starts recording a CUDA graph (Global mode, allocations warned about). Everything
    /// issued on the guard's stream until [`CaptureGuard::finish`] is recorded, not run.
    ///
    /// On a context wrapped from cudarc, cudarc's per-buffer event tracking is off while any
    /// capture of the context is active, and restored to its previous value when the last
    /// one ends (finish, drop, `?` or panic): a captured launch must not wait on an event
    /// recorded before the capture (`CUDA_ERROR_STREAM_CAPTURE_ISOLATION`). cudarc keeps no
    /// events for a `CudaSlice` allocated while tracking is off, so allocate before
    /// capturing. A leaked guard (`mem::forget`) leaves tracking off until
    /// [`Context::end_dangling_captures`](crate::Context::end_dangling_captures) ends its capture.
    ///
    /// # Errors
    /// [`Error::AlreadyCapturing`] if the stream is already capturing (e.g. a cudarc stream
    /// wrapped twice), [`Error::Driver`].
    #[track_caller]
    pub fn capture<'s, 'a>(&'s mut self) -> Result<CaptureGuard<'s, 'a>>
    where
        S: BeginCapture,
    {
        CaptureGuard::start(S::as_idle(self), CaptureOptions::default(), CallSite::caller())
    }

    /// [`capture`](Self::capture) with options: capture mode and allocation policy.
    ///
    /// # Errors
    /// As [`capture`](Self::capture).
    #[track_caller]
    pub fn capture_with<'s, 'a>(&'s mut self, options: CaptureOptions) -> Result<CaptureGuard<'s, 'a>>
    where
        S: BeginCapture,
    {
        CaptureGuard::start(S::as_idle(self), options, CallSite::caller())
    }

    /// Records the work `f` issues into a graph. `f` runs under `catch_unwind`: if it panics,
    /// the capture is ended and discarded (the stream is idle again) and the panic resumes;
    /// if it returns an error, the capture is discarded and the error returned.
    ///
    /// # Errors
    /// Whatever `f` returns, and those of [`capture`](Self::capture) and
    /// [`CaptureGuard::finish`].
    #[track_caller]
    pub fn capture_scope<'a, R>(
        &mut self,
        options: CaptureOptions,
        f: impl FnOnce(&mut Stream<Capturing<'a>>) -> Result<R>,
    ) -> Result<(Graph<'a>, CaptureReport, R)>
    where
        S: BeginCapture,
    {
        let mut guard = CaptureGuard::start(S::as_idle(self), options, CallSite::caller())?;
        let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(guard.stream())));
        match out {
            Ok(Ok(r)) => {
                let (g, report) = guard.finish()?;
                Ok((g, report, r))
            }
            Ok(Err(e)) => {
                drop(guard);
                Err(e)
            }
            Err(panic) => {
                drop(guard);
                std::panic::resume_unwind(panic)
            }
        }
    }
}

/// Records work on a borrowed stream into a CUDA graph.
///
/// Get one from [`Stream::capture`]; issue work through it (it dereferences to
/// [`Stream<Capturing<'a>>`](Stream)); call [`finish`](Self::finish) for the [`Graph`].
/// On every other path — an early `?`, a panic, an invalidated capture — dropping it ends
/// the capture, discards the partial graph, leaves the stream idle and usable, logs a
/// warning with the capture's report (naming any capture-time allocations), and keeps the
/// report for [`Context::take_abandoned_reports`](crate::Context::take_abandoned_reports).
///
/// While the guard lives the idle stream is mutably borrowed, so it cannot be used. The
/// guard is not `Send`: a capture ends on the thread that began it.
///
/// If the guard is leaked (`mem::forget`), the stream stays in capture mode: later work on
/// it fails with driver errors (nothing unsound happens — every buffer the capture borrowed
/// stays borrowed forever, since the borrow never ends), and the stream is destroyed when
/// it drops. The capture also stays in the fail-fast registry, so in Global mode this
/// crate's synchronous operations keep returning [`Error::CaptureActive`] — a leaked
/// capture is loud, not silent — until you recover with
/// [`Context::end_dangling_captures`](crate::Context::end_dangling_captures), called on
/// the thread that began the capture: it ends and discards the capture, and every later
/// operation through the leaked guard's streams (forks included) is
/// [`Error::CaptureEnded`].
///
/// The guard checks, at [`finish`](Self::finish) and when dropped, that it still holds the
/// capturing stream it began with. If that stream was swapped with another guard's
/// (`std::mem::swap(g1.stream(), g2.stream())`), the next access through either guard
/// marks both captures, their streams refuse further work, and both end with
/// [`Error::CaptureStreamSwapped`] (dropped: [`CaptureReport::stream_swapped`]) instead of
/// graphs holding each other's work.
pub struct CaptureGuard<'s, 'a> {
    idle: &'s mut Stream<Idle>,
    cap: Stream<Capturing<'a>>,
    /// The guard's own book: `cap.ext` until someone swaps `cap` away.
    book: Book,
    done: bool,
}

static_assertions::assert_not_impl_any!(CaptureGuard<'static, 'static>: Send, Sync);
static_assertions::assert_not_impl_any!(Stream<Capturing<'static>>: Send, Sync);

impl<'s, 'a> CaptureGuard<'s, 'a> {
    pub(crate) fn start(idle: &'s mut Stream<Idle>, opts: CaptureOptions, site: CallSite) -> Result<Self> {
        // Flags the driver would refuse at instantiation are refused before any work is recorded.
        opts.instantiate.validate()?;
        let b = idle.ctx.b();
        match b.capture_status(idle.raw) {
            Ok(CaptureStatus::None) => {}
            Ok(_) => return Err(Error::AlreadyCapturing),
            Err(code) => return Err(Error::Driver { op: "cuStreamIsCapturing", code }),
        }
        let id = idle.ctx.reg().begin();
        if let Err(code) = b.begin_capture(idle.raw, opts.mode) {
            idle.ctx.reg().end(id, b);
            return Err(if code == DriverCode(401) {
                Error::AlreadyCapturing
            } else {
                Error::Driver { op: "cuStreamBeginCapture", code }
            });
        }
        crate::registry::fail_fast::register(idle.ctx.h.inner.domain, id, opts.mode, site);
        crate::interop::tracking::enter(&idle.ctx.h);
        let book = Rc::new(RefCell::new(CaptureBook {
            id,
            mode: opts.mode,
            policy: opts.alloc_policy,
            began_at: site,
            started: Instant::now(),
            ops: 0,
            last_op: None,
            allocations: Vec::new(),
            graph_allocs: Vec::new(),
            invalidated_by: None,
            cause_code: None,
            forks: Vec::new(),
            pooled: Vec::new(),
            events: Vec::new(),
            deadline: opts.deadline,
            watch: opts.deadline.map(|d| crate::watchdog::watch(id, site, d)),
            ended: Arc::new(AtomicBool::new(false)),
            swapped: false,
            origin: idle.raw,
            trace: Vec::new(),
            picture: opts.trace_ops || opts.trace_nodes || idle.ctx.sim().is_some(),
            collectives: 0,
            comm_links: Vec::new(),
            in_body: 0,
            poisoned: Arc::new(AtomicBool::new(false)),
            broken: false,
            open_bodies: Arc::new(std::sync::atomic::AtomicU32::new(0)),
            loop_flags: Vec::new(),
            instantiate: opts.instantiate,
            node_marks: (opts.trace_nodes && idle.ctx.sim().is_none()).then(NodeMarks::default),
            cond_handles: Vec::new(),
        }));
        {
            let bk = book.borrow();
            idle.ctx.reg().attach(
                id,
                crate::registry::Dangling {
                    raw: idle.raw,
                    thread: std::thread::current().id(),
                    ended: bk.ended.clone(),
                    poisoned: bk.poisoned.clone(),
                    open_bodies: bk.open_bodies.clone(),
                    watch: bk.watch.clone(),
                },
            );
        }
        let cap = Stream::with_ext(idle.ctx.clone(), idle.raw, Owner::View, book.clone());
        Ok(Self { idle, cap, book, done: false })
    }

    /// Whether `cap` is still the stream this guard began with; if not, marks both captures
    /// involved so their streams refuse further work. Returns true when swapped.
    fn check_swap(&self) -> bool {
        if self.cap.raw == self.idle.raw && Rc::ptr_eq(&self.cap.ext, &self.book) {
            return false;
        }
        // `try_`: marking must never panic (no borrow is held across user code, so these
        // succeed in practice).
        for book in [&self.book, &self.cap.ext] {
            if let Ok(mut b) = book.try_borrow_mut() {
                b.swapped = true;
            }
        }
        true
    }

    /// What the guard holds instead of its own stream, for the error.
    fn found(&self) -> String {
        let other = self.cap.ext.borrow();
        if Rc::ptr_eq(&self.cap.ext, &self.book) {
            format!("a forked stream of its own capture ({:#x}) in place of its origin stream", self.cap.raw.0)
        } else {
            format!("the capturing stream of capture #{}", other.id)
        }
    }

    /// The capturing stream.
    pub fn stream(&mut self) -> &mut Stream<Capturing<'a>> {
        self.check_swap();
        &mut self.cap
    }

    /// Whether the watchdog has reported this capture as past its deadline.
    pub fn watchdog_fired(&self) -> bool {
        self.book.borrow().watch.as_ref().is_some_and(|w| w.fired_after().is_some())
    }

    /// This capture's id (unique within its context).
    pub fn id(&self) -> u64 {
        self.book.borrow().id
    }

    /// Whether the capture was already ended from outside the guard (by
    /// [`Context::end_dangling_captures`](crate::Context::end_dangling_captures)). Then
    /// there is nothing left to end; the spare streams go back to the context.
    fn ended_elsewhere(&mut self) -> bool {
        let mut book = self.book.borrow_mut();
        if !book.has_ended() {
            return false;
        }
        self.done = true;
        for s in book.pooled.drain(..) {
            self.idle.ctx.reg().return_spare_stream(s);
        }
        true
    }

    /// Ends the capture: the graph memory still allocated is freed inside the graph, the
    /// driver's graph is taken, and the registry is updated. Returns the driver's outcome
    /// and the report.
    fn end(&mut self) -> (Result<RawGraph, DriverCode>, CaptureReport) {
        self.done = true;
        let ctx = self.idle.ctx.clone();
        let b = ctx.b();
        let raw = self.idle.raw;
        // Free graph allocations that were not freed, inside the graph, so no launch leaks.
        let swapped = self.check_swap();
        let mut freed_at_end = 0;
        if matches!(b.capture_status(raw), Ok(CaptureStatus::Active)) {
            let pending: Vec<DevPtr> =
                self.book.borrow().graph_allocs.iter().filter(|(_, f)| !f).map(|(p, _)| *p).collect();
            let any = !pending.is_empty();
            freed_at_end = pending.len();
            for p in pending {
                if let Err(code) = b.mem_free_async(p, raw) {
                    log::error!("capture-core: freeing graph memory at the end of capture failed: {code}");
                }
            }
            if let Some(sim) = ctx.sim().filter(|_| any) {
                sim.label_nodes(raw, "end of capture: frees graph memory the capture left allocated", None);
            }
        }
        let outcome = b.end_capture(raw);
        let (poisoned, broken, unjoined) = {
            let book = self.book.borrow();
            (book.poisoned.load(Ordering::Acquire), book.broken, book.forks.iter().find(|f| !f.2).map(|f| f.0))
        };
        let outcome = match outcome {
            Ok(g) if poisoned && g.0 != 0 => {
                log::error!(
                    "capture-core: a conditional body of capture #{} failed to record; its graph is leaked \
                     (the driver left it holding a discarded body: destroying it would crash)",
                    self.id()
                );
                Err(DriverCode::STREAM_CAPTURE_INVALIDATED)
            }
            Ok(g) if broken && g.0 != 0 => {
                // A conditional body failed to record: the graph is discarded, not launched.
                if let Err(code) = b.graph_destroy(g) {
                    log::error!("capture-core: destroying the graph of a broken capture failed: {code}");
                }
                Err(DriverCode::STREAM_CAPTURE_INVALIDATED)
            }
            // A fork never joined back, which the driver did not refuse: on two H200s, a fork
            // that issued an NCCL collective in a group and was left unjoined ended without
            // UNJOINED. Its work is not ordered before the graph's end: refused all the same.
            Ok(g) if unjoined.is_some() => {
                log::warn!(
                    "capture-core: capture #{} ended although the fork made at {} was never joined (the driver \
                     did not refuse it): its graph is discarded",
                    self.id(),
                    unjoined.map_or_else(String::new, |site| site.to_string())
                );
                if g.0 != 0 {
                    if let Err(code) = b.graph_destroy(g) {
                        log::error!("capture-core: destroying the graph of an unjoined capture failed: {code}");
                    }
                }
                Err(DriverCode::STREAM_CAPTURE_UNJOINED)
            }
            o => o,
        };
        crate::interop::tracking::leave(&ctx.h);
        crate::registry::fail_fast::unregister(ctx.h.inner.domain, self.id());
        let entry = ctx.reg().end(self.id(), b);
        let mut book = self.book.borrow_mut();
        // Forks of this capture refuse work from now on (their streams record into nothing).
        book.ended.store(true, Ordering::Release);
        if let Some(w) = &book.watch {
            crate::watchdog::unwatch(w);
        }
        for s in book.pooled.drain(..) {
            ctx.reg().return_spare_stream(s);
        }
        let (eager, failures) = entry.map(|e| (e.eager, e.failures)).unwrap_or_default();
        let invalidated_by = match outcome {
            // The registry holds failures in the order they happened, on any stream.
            Err(c) if c.is_capture_error() => failures.first().cloned().or_else(|| book.invalidated_by.clone()),
            _ => None,
        };
        let duration = book.started.elapsed();
        let watchdog = book.deadline.map(|deadline| crate::report::WatchdogReport {
            deadline,
            exceeded: duration > deadline,
            fired_after: book.watch.as_ref().and_then(|w| w.fired_after()),
        });
        let report = CaptureReport {
            watchdog,
            capture_id: book.id,
            mode: book.mode,
            began_at: book.began_at,
            operations: book.ops,
            nodes: Default::default(),
            allocations: book.allocations.clone(),
            duration,
            invalidated_by,
            last_op: book.last_op.clone(),
            ran_eagerly: eager,
            unpinned_host_copies: Vec::new(),
            outcome: outcome.err(),
            abandoned: false,
            stream_swapped: swapped,
            freed_at_end,
        };
        (outcome, report)
    }

    /// Discards the graph of a capture whose stream was swapped; logs the report.
    fn swapped_error(&self, outcome: Result<RawGraph, DriverCode>, report: &CaptureReport) -> Error {
        if let Ok(g) = outcome {
            if g.0 != 0 {
                if let Err(code) = self.idle.ctx.b().graph_destroy(g) {
                    log::error!("capture-core: destroying the graph of a swapped capture failed: {code}");
                }
            }
        }
        log::warn!("capture-core: capture discarded, its guard's stream was swapped:\n{report}");
        Error::CaptureStreamSwapped { capture: report.capture_id, found: self.found() }
    }

    /// The error for a capture the driver refused to end; logs the report.
    fn end_error(&self, code: DriverCode, report: &CaptureReport) -> Error {
        log::warn!("capture-core: capture failed:\n{report}");
        let book = self.book.borrow();
        match code {
            DriverCode::STREAM_CAPTURE_UNJOINED => {
                let site = book.forks.iter().find(|f| !f.2).map(|f| f.0).unwrap_or(book.began_at);
                Error::UnjoinedFork { fork_site: site }
            }
            c if c.is_capture_error() => Error::CaptureInvalidated {
                cause: report.invalidated_by.clone(),
                cause_code: if report.invalidated_by == book.invalidated_by { book.cause_code } else { None },
                last_op: report.last_op.clone(),
                code: c,
            },
            c => Error::Driver { op: "cuStreamEndCapture", code: c },
        }
    }

    /// Ends the capture and instantiates the graph.
    ///
    /// # Errors
    /// [`Error::CaptureInvalidated`] naming the operation that invalidated it,
    /// [`Error::UnjoinedFork`], [`Error::EmptyCapture`], [`Error::CaptureActive`] when
    /// another Global capture (or ThreadLocal capture on this thread) is still active — the
    /// driver refuses to instantiate then: finish that one first, or use
    /// [`CaptureMode::Relaxed`](crate::CaptureMode::Relaxed) — or [`Error::Driver`] from
    /// instantiation. On error the stream is idle again and usable, and the report is
    /// logged.
    #[track_caller]
    pub fn finish(self) -> Result<(Graph<'a>, CaptureReport)> {
        let site = CallSite::caller();
        self.end_capture()?.instantiate(site)
    }

    /// Ends the capture and describes its graph node by node, without instantiating it;
    /// the graph is then destroyed. Two snapshots of the same step, captured with different
    /// host inputs, are what [`diff`](crate::diff::diff) compares
    /// ([`Stream::capture_diff`] does both captures and the comparison).
    ///
    /// Each node is named by the library operation that recorded it and its call site: always
    /// on the simulated device, on a GPU when the capture was begun with
    /// [`CaptureOptions::trace_nodes`].
    ///
    /// ```
    /// # use capture_core::*;
    /// # fn main() -> Result<()> {
    /// # let ctx = Context::simulated();
    /// # kernels::register_chain_kernels(ctx.sim().unwrap());
    /// let mut stream = ctx.new_stream()?;
    /// let module = ctx.load_module(kernels::CHAIN_PTX)?;
    /// let incr = module.kernel("incr_f32")?;
    /// let x = stream.alloc_zeros::<f32>(256)?;
    /// let mut g = stream.capture_with(CaptureOptions::new().trace_nodes())?;
    /// g.launch(&incr, LaunchConfig::for_num_elems(256), (&x, 256u32))?;
    /// let (snapshot, _report) = g.finish_snapshot()?;
    /// assert_eq!(snapshot.nodes.len(), 1);
    /// assert_eq!(snapshot.nodes[0].op.as_ref().unwrap().op, "Stream::launch");
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`finish`](Self::finish), less instantiation's; [`Error::Driver`] if the driver
    /// cannot describe the graph.
    pub fn finish_snapshot(self) -> Result<(GraphSnapshot, CaptureReport)> {
        let mut ended = self.end_capture()?;
        let snap = ended.describe()?;
        let report = ended.report.take().ok_or(Error::EmptyCapture)?;
        // Dropping `ended` destroys the graph.
        Ok((snap, report))
    }

    /// [`finish`](Self::finish), with the graph also described node by node (see
    /// [`finish_snapshot`](Self::finish_snapshot)): for a diff whose graphs must be kept, or
    /// run once (graph memory a step leaves allocated exists only once its graph has run).
    ///
    /// # Errors
    /// As [`finish`](Self::finish) and [`finish_snapshot`](Self::finish_snapshot).
    #[track_caller]
    pub fn finish_with_snapshot(self) -> Result<(Graph<'a>, GraphSnapshot, CaptureReport)> {
        let site = CallSite::caller();
        let ended = self.end_capture()?;
        let snap = ended.describe()?;
        let (graph, report) = ended.instantiate(site)?;
        Ok((graph, snap, report))
    }

    /// Ends the capture and takes the driver's graph, without instantiating it: the first
    /// half of [`finish`](Self::finish). Several captures that must all end before any is
    /// instantiated (the driver refuses to instantiate while another Global capture is
    /// active) go through this ([`MultiCapture`](crate::collective::MultiCapture)).
    pub(crate) fn end_capture(mut self) -> Result<Ended<'s, 'a>> {
        if self.ended_elsewhere() {
            return Err(Error::CaptureEnded { op: "CaptureGuard::finish", capture: self.id() });
        }
        let (outcome, mut report) = self.end();
        let ctx = self.idle.ctx.clone();
        let b = ctx.b();
        if report.stream_swapped {
            return Err(self.swapped_error(outcome, &report));
        }
        let graph = match outcome {
            // The driver returns no graph for a capture that recorded nothing.
            Ok(RawGraph(0)) => return Err(Error::EmptyCapture),
            Ok(g) => g,
            Err(code) => return Err(self.end_error(code, &report)),
        };
        let nodes = match b.graph_nodes(graph) {
            Ok(n) => n,
            Err(code) => {
                let _ = b.graph_destroy(graph);
                return Err(Error::Driver { op: "cuGraphGetNodes", code });
            }
        };
        if nodes.total == 0 {
            let _ = b.graph_destroy(graph);
            return Err(Error::EmptyCapture);
        }
        report.nodes = nodes;
        if nodes.memcpy > 0 {
            report.unpinned_host_copies = b.graph_host_copies(graph).unwrap_or_default();
        }
        Ok(Ended { guard: self, graph: Some(graph), report: Some(report) })
    }
}

impl<'a> Deref for CaptureGuard<'_, 'a> {
    type Target = Stream<Capturing<'a>>;
    fn deref(&self) -> &Stream<Capturing<'a>> {
        self.check_swap();
        &self.cap
    }
}

impl<'a> DerefMut for CaptureGuard<'_, 'a> {
    fn deref_mut(&mut self) -> &mut Stream<Capturing<'a>> {
        self.check_swap();
        &mut self.cap
    }
}

impl Drop for CaptureGuard<'_, '_> {
    fn drop(&mut self) {
        if self.done || self.ended_elsewhere() {
            return;
        }
        let (outcome, mut report) = self.end();
        match outcome {
            Ok(g) if g.0 != 0 => {
                if let Err(code) = self.idle.ctx.b().graph_destroy(g) {
                    log::error!("capture-core: destroying an abandoned graph failed: {code}");
                }
            }
            _ => {}
        }
        report.abandoned = true;
        if report.allocation_count() > 0 {
            log::warn!(
                "capture-core: capture #{} abandoned with {} capture-time allocation(s), {} bytes:\n{report}",
                report.capture_id,
                report.allocation_count(),
                report.allocation_bytes()
            );
        } else {
            log::warn!("capture-core: capture #{} abandoned (dropped without finish()):\n{report}", report.capture_id);
        }
        self.idle.ctx.reg().push_abandoned(report);
    }
}
