//! The per-context capture registry: which captures are active, what ran eagerly while they
//! were, what failed (a likely invalidation cause), resources whose release must wait until
//! no capture is active, and spare streams for `fork()`.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

use crate::device::{Backend, DevPtr, HostPtr, RawStream};
use crate::error::OpSite;
use crate::report::CaptureReport;

/// How many abandoned-capture reports a context keeps until they are taken (the public
/// figure is `Context::ABANDONED_REPORTS_KEPT`).
pub(crate) const ABANDONED_REPORTS_KEPT: usize = 64;

pub(crate) enum Deferred {
    Device(DevPtr),
    Host(HostPtr),
    Stream(RawStream),
    /// An NCCL communicator handle.
    #[cfg(feature = "nccl")]
    NcclComm(usize),
}

pub(crate) struct Entry {
    pub id: u64,
    pub eager: Vec<OpSite>,
    pub failures: Vec<OpSite>,
    /// What it takes to end the capture without its guard.
    pub dangling: Option<Dangling>,
}

/// What [`Context::end_dangling_captures`](crate::Context::end_dangling_captures) needs to
/// end a capture whose guard is gone: the guard's own book is thread-bound (`Rc`), so
/// the registry keeps these shareable parts.
pub(crate) struct Dangling {
    pub raw: RawStream,
    pub thread: std::thread::ThreadId,
    pub ended: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// A conditional body failed to record: the graph must not be destroyed (see
    /// `CaptureBook::poisoned`).
    pub poisoned: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Conditional bodies being recorded (see `CaptureBook::open_bodies`).
    pub open_bodies: std::sync::Arc<std::sync::atomic::AtomicU32>,
    pub watch: Option<std::sync::Arc<crate::watchdog::Watch>>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    active: Vec<Entry>,
    deferred: Vec<Deferred>,
    spare_streams: Vec<RawStream>,
    abandoned: std::collections::VecDeque<CaptureReport>,
    /// Abandoned reports dropped because `abandoned` was full.
    abandoned_dropped: u64,
}

#[derive(Default)]
pub(crate) struct Registry {
    active: AtomicUsize,
    inner: Mutex<Inner>,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether any capture of this context is active (one relaxed load: the fast path of
    /// every eager operation).
    #[inline]
    pub fn any_active(&self) -> bool {
        self.active.load(Ordering::Relaxed) != 0
    }

    pub fn begin(&self) -> u64 {
        let mut g = self.lock();
        g.next_id += 1;
        let id = g.next_id;
        g.active.push(Entry { id, eager: Vec::new(), failures: Vec::new(), dangling: None });
        self.active.fetch_add(1, Ordering::Relaxed);
        id
    }

    /// Ends capture `id`; returns its entry, and releases deferred resources when no capture
    /// remains active.
    pub fn end(&self, id: u64, b: &dyn Backend) -> Option<Entry> {
        let mut g = self.lock();
        let pos = g.active.iter().position(|e| e.id == id)?;
        let e = g.active.remove(pos);
        self.active.fetch_sub(1, Ordering::Relaxed);
        if g.active.is_empty() {
            for d in std::mem::take(&mut g.deferred) {
                let r = match d {
                    Deferred::Device(p) => b.mem_free(p),
                    Deferred::Host(p) => b.host_free(p),
                    Deferred::Stream(s) => b.stream_destroy(s),
                    #[cfg(feature = "nccl")]
                    Deferred::NcclComm(c) => {
                        // A capture on another device may still forbid it (Global mode is
                        // process-wide): then it waits for that one too.
                        fail_fast::release_comm_or_defer(0, c);
                        Ok(())
                    }
                };
                if let Err(code) = r {
                    log::error!("capture-core: releasing a resource deferred past a capture failed: {code}");
                }
            }
        }
        Some(e)
    }

    /// Records how to end capture `id` without its guard.
    pub fn attach(&self, id: u64, d: Dangling) {
        if let Some(e) = self.lock().active.iter_mut().find(|e| e.id == id) {
            e.dangling = Some(d);
        }
    }

    /// The active captures begun on `thread`, with what it takes to end them.
    pub fn active_on(&self, thread: std::thread::ThreadId) -> Vec<(u64, Dangling)> {
        self.lock()
            .active
            .iter()
            .filter_map(|e| {
                let d = e.dangling.as_ref().filter(|d| d.thread == thread)?;
                Some((
                    e.id,
                    Dangling {
                        raw: d.raw,
                        thread: d.thread,
                        ended: d.ended.clone(),
                        poisoned: d.poisoned.clone(),
                        open_bodies: d.open_bodies.clone(),
                        watch: d.watch.clone(),
                    },
                ))
            })
            .collect()
    }

    /// Something ran eagerly on another stream while captures were active.
    pub fn note_eager(&self, op: OpSite) {
        let mut g = self.lock();
        for e in &mut g.active {
            e.eager.push(op.clone());
        }
    }

    /// An operation failed with a capture error while captures were active.
    pub fn note_failure(&self, op: OpSite) {
        let mut g = self.lock();
        for e in &mut g.active {
            e.failures.push(op.clone());
        }
    }

    /// Defers a release if a capture is active; returns it back if not.
    pub fn defer(&self, d: Deferred) -> Option<Deferred> {
        let mut g = self.lock();
        if g.active.is_empty() {
            Some(d)
        } else {
            g.deferred.push(d);
            None
        }
    }

    pub fn take_spare_stream(&self) -> Option<RawStream> {
        self.lock().spare_streams.pop()
    }

    pub fn return_spare_stream(&self, s: RawStream) {
        self.lock().spare_streams.push(s);
    }

    pub fn drain_spare_streams(&self) -> Vec<RawStream> {
        std::mem::take(&mut self.lock().spare_streams)
    }

    pub fn push_abandoned(&self, r: CaptureReport) {
        let mut g = self.lock();
        if g.abandoned.len() >= ABANDONED_REPORTS_KEPT {
            g.abandoned.pop_front();
            g.abandoned_dropped += 1;
        }
        g.abandoned.push_back(r);
    }

    pub fn take_abandoned(&self) -> Vec<CaptureReport> {
        std::mem::take(&mut self.lock().abandoned).into()
    }

    pub fn abandoned_dropped(&self) -> u64 {
        self.lock().abandoned_dropped
    }
}

/// The process-wide record of active captures and the synchronous calls they prohibit: a
/// Global-mode capture for all threads, a ThreadLocal-mode capture for its own thread, and
/// every capture (any mode, any thread) for context synchronize, as measured on an H100
/// (`docs/probe/`). While
/// one is active, this crate's synchronous operations return [`Error::CaptureActive`]
/// instead of calling the driver — which would fail and invalidate the capture, or on some
/// systems hang.
///
/// The simulated device is its own "process": each simulated context has its own domain,
/// so simulated captures never block work on other simulated devices (or the GPU).
pub(crate) mod fail_fast {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Mutex;
    use std::thread::ThreadId;

    use crate::device::CaptureMode;
    use crate::error::{CallSite, Error, OpSite};

    struct Active {
        domain: usize,
        capture: u64,
        mode: CaptureMode,
        thread: ThreadId,
        began_at: CallSite,
    }

    static COUNT: AtomicUsize = AtomicUsize::new(0);
    static ACTIVE: Mutex<Vec<Active>> = Mutex::new(Vec::new());

    fn lock() -> std::sync::MutexGuard<'static, Vec<Active>> {
        ACTIVE.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn register(domain: usize, capture: u64, mode: CaptureMode, began_at: CallSite) {
        lock().push(Active { domain, capture, mode, thread: std::thread::current().id(), began_at });
        COUNT.fetch_add(1, Ordering::Release);
    }

    pub(crate) fn unregister(domain: usize, capture: u64) {
        let mut g = lock();
        if let Some(i) = g.iter().position(|a| a.domain == domain && a.capture == capture) {
            g.remove(i);
            COUNT.fetch_sub(1, Ordering::Release);
        }
        // Released while the lock is held, so no capture can begin in between.
        #[cfg(feature = "nccl")]
        if domain == 0 && !g.iter().any(|a| a.domain == 0) {
            let comms = std::mem::take(&mut *COMMS.lock().unwrap_or_else(|p| p.into_inner()));
            for c in comms {
                crate::raw::nccl::release(c);
            }
        }
    }

    /// NCCL communicators whose destruction waits for the end of every GPU capture.
    #[cfg(feature = "nccl")]
    static COMMS: Mutex<Vec<usize>> = Mutex::new(Vec::new());

    /// Destroying an NCCL communicator during a Global-mode capture (from any thread) or a
    /// ThreadLocal one (from its thread) returns success but invalidates the capture —
    /// measured on an H100 (`examples/nccl_outside.rs`, `docs/probe/nccl.md`), whichever
    /// device either is on. So while one is active in `domain`, the release is kept and done
    /// when the last capture there ends; otherwise it is done now, with the lock held, so
    /// that no capture can begin in between.
    #[cfg(feature = "nccl")]
    pub(crate) fn release_comm_or_defer(domain: usize, comm: usize) {
        let g = lock();
        let me = std::thread::current().id();
        let blocked = g.iter().any(|a| {
            a.domain == domain
                && match a.mode {
                    CaptureMode::Global => true,
                    CaptureMode::ThreadLocal => a.thread == me,
                    CaptureMode::Relaxed => false,
                }
        });
        if blocked {
            COMMS.lock().unwrap_or_else(|p| p.into_inner()).push(comm);
        } else {
            crate::raw::nccl::release(comm);
        }
    }

    /// `Err(CaptureActive)` if a capture in `domain` prohibits a synchronous call from this
    /// thread (Global: any thread; ThreadLocal: its own). One atomic load when none is active.
    #[inline]
    pub(crate) fn check(domain: usize, op: &'static str, site: CallSite) -> Result<(), Error> {
        check_with(domain, op, site, false)
    }

    /// As [`check`], for calls the driver refuses during *any* capture, from any thread, in
    /// every mode (context synchronize).
    #[inline]
    pub(crate) fn check_any(domain: usize, op: &'static str, site: CallSite) -> Result<(), Error> {
        check_with(domain, op, site, true)
    }

    fn check_with(domain: usize, op: &'static str, site: CallSite, any_mode: bool) -> Result<(), Error> {
        if COUNT.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        let me = std::thread::current().id();
        let g = lock();
        let hit = g.iter().find(|a| {
            a.domain == domain
                && (any_mode
                    || match a.mode {
                        CaptureMode::Global => true,
                        CaptureMode::ThreadLocal => a.thread == me,
                        CaptureMode::Relaxed => false,
                    })
        });
        match hit {
            None => Ok(()),
            Some(a) => Err(Error::CaptureActive {
                op: OpSite { op, site },
                capture: a.capture,
                mode: a.mode,
                began_at: a.began_at,
            }),
        }
    }
}
