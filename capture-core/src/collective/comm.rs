//! Communicators: one rank per device, made and destroyed outside any capture.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::id::CommId;
use crate::context::Context;
use crate::device::DeviceKind;
use crate::error::{Error, Result};
use crate::state::{CommInit, StreamState};
use crate::stream::Stream;

/// The element types collectives take.
/// Sealed: `f32`, `f64`, `i32`, `u32`, `i64`, `u64`, `u8`, [`F16`](crate::collective::F16) and
/// [`Bf16`](crate::collective::Bf16).
pub trait NcclElem: bytemuck::Pod + sealed::Sealed {}

pub(crate) mod sealed {
    pub trait Sealed {
        const DTYPE: crate::raw::coll::Dtype;
    }
}

macro_rules! elem {
    ($($t:ty => $d:ident),*) => {$(
        impl sealed::Sealed for $t {
            const DTYPE: crate::raw::coll::Dtype = crate::raw::coll::Dtype::$d;
        }
        impl NcclElem for $t {}
    )*};
}
elem!(f32 => F32, f64 => F64, i32 => I32, u32 => U32, i64 => I64, u64 => U64, u8 => U8);
elem!(crate::raw::half::F16 => F16, crate::raw::half::Bf16 => Bf16);

/// A reduction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReduceOp {
    /// Sum.
    Sum,
    /// Product.
    Prod,
    /// Maximum.
    Max,
    /// Minimum.
    Min,
    /// Mean (sum divided by the number of ranks).
    Avg,
}

impl ReduceOp {
    pub(crate) fn raw(self) -> crate::raw::coll::Op {
        use crate::raw::coll::Op;
        match self {
            ReduceOp::Sum => Op::Sum,
            ReduceOp::Prod => Op::Prod,
            ReduceOp::Max => Op::Max,
            ReduceOp::Min => Op::Min,
            ReduceOp::Avg => Op::Avg,
        }
    }
}

/// One rank of an NCCL communicator: the device it is on, its rank, the world's size.
///
/// Made for every device of one process at once with [`Comm::init_all`], or one rank per
/// process with [`Comm::init_rank`], from idle streams: creating a communicator allocates
/// device memory, which would invalidate a capture, so it is not possible from a capturing
/// stream (a compile error). A graph that
/// records a collective borrows the communicator, so it cannot be dropped while the graph
/// lives; dropping it destroys it (`ncclCommDestroy`), deferred until every capture that
/// forbids it has ended: a destroy during a Global-mode capture on *any* GPU of the process
/// (or a ThreadLocal one on its thread) returns success but invalidates that capture,
/// measured on an H100 (`docs/probe/nccl.md`).
pub struct Comm {
    pub(crate) ctx: Context,
    /// The NCCL handle on a GPU; 0 on the simulated device.
    pub(crate) raw: usize,
    pub(crate) rank: usize,
    pub(crate) nranks: usize,
    /// Unique in the process: which ranks belong together.
    pub(crate) id: u64,
    /// For [`Comm::init_rank`]'s communicators (the other ranks elsewhere): the timeout and
    /// the abort flag, shared with the nodes of graphs that use it.
    pub(crate) link: Option<Arc<crate::raw::coll::Link>>,
    /// NCCL communicators are not thread-safe: a `Comm` moves between threads (`Send`) but
    /// is not shared (`!Sync`) — two threads could otherwise both abort it.
    _not_sync: std::marker::PhantomData<std::cell::Cell<()>>,
}

static_assertions::assert_impl_all!(Comm: Send);
static_assertions::assert_not_impl_any!(Comm: Sync);

impl fmt::Debug for Comm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Comm")
            .field("id", &self.id)
            .field("rank", &self.rank)
            .field("of", &self.nranks)
            .field("device", &self.ctx.ordinal())
            .finish()
    }
}

impl Comm {
    /// A communicator over the devices of `streams`' contexts, rank `i` on `streams[i]`'s
    /// device: on GPUs `ncclCommInitAll`; on a [simulated world](Context::simulated_world)
    /// the world's own. Each stream only proves, by being idle, that no capture is under
    /// way on it.
    ///
    /// # Errors
    /// [`Error::InvalidWorld`] for no streams, two on one device, a mix of GPUs and
    /// simulated devices, simulated devices not of one world, or more ranks than devices;
    /// [`Error::NcclUnavailable`] when libnccl cannot be loaded; [`Error::CaptureActive`]
    /// while a capture prohibits it; [`Error::Nccl`].
    #[track_caller]
    pub fn init_all<S: StreamState + CommInit>(streams: &mut [&mut Stream<S>]) -> Result<Vec<Comm>> {
        let site = crate::error::CallSite::caller();
        let ctxs: Vec<Context> = streams.iter().map(|s| s.ctx.clone()).collect();
        let bad = |reason: String| Err(Error::InvalidWorld { reason });
        if ctxs.is_empty() {
            return bad("no streams were given; give one idle stream per device, rank i on the i-th".into());
        }
        let ordinals: Vec<usize> = ctxs.iter().map(Context::ordinal).collect();
        for (i, o) in ordinals.iter().enumerate() {
            if ordinals[..i].contains(o) {
                return bad(format!("two ranks are on device {o}; one rank per device"));
            }
        }
        for c in &ctxs {
            c.fail_fast("Comm::init_all", site)?;
        }
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        let n = ctxs.len();
        let kind = ctxs[0].kind();
        if ctxs.iter().any(|c| c.kind() != kind) {
            return bad("the streams mix GPUs and simulated devices; a communicator is over one kind".into());
        }
        let raws = match kind {
            DeviceKind::Simulated => {
                let worlds: Vec<Option<(u64, usize)>> = ctxs.iter().map(|c| c.sim().and_then(|s| s.world())).collect();
                let first = worlds[0].map(|w| w.0);
                if n > 1 && (first.is_none() || worlds.iter().any(|w| w.map(|w| w.0) != first)) {
                    return bad(
                        "simulated devices of different worlds (or not of a world): make them together with `Context::simulated_world(n)`"
                            .into(),
                    );
                }
                vec![0; n]
            }
            _ => {
                if !crate::raw::nccl::present() {
                    return Err(Error::NcclUnavailable);
                }
                let present = cudarc::driver::CudaContext::device_count().map_or(0, |n| n.max(0) as usize);
                if n > present {
                    return bad(format!("{n} ranks were asked for and {present} GPU(s) are present"));
                }
                let devs: Vec<i32> = ordinals.iter().map(|&o| o as i32).collect();
                // The ordinals are present devices, each once, and no capture prohibits
                // allocation (checked above).
                crate::raw::nccl::init_all(&devs).map_err(|f| Error::Nccl {
                    op: "ncclCommInitAll",
                    code: f.code,
                    text: f.text,
                })?
            }
        };
        Ok(ctxs
            .into_iter()
            .zip(raws)
            .enumerate()
            .map(|(rank, (ctx, raw))| Comm { ctx, raw, rank, nranks: n, id, link: None, _not_sync: Default::default() })
            .collect())
    }

    /// Rank `rank` of a communicator of `world_size` ranks named by `id`, on `stream`'s
    /// device: one rank per process (`ncclCommInitRankConfig`, nonblocking). Every rank
    /// calls it with the same `id` and `world_size`; it returns once all have joined.
    ///
    /// `timeout` bounds every wait for the other ranks: here, in a [`Group::launch`]
    /// (NCCL connects to a peer on the first call that needs it), and in [`Comm::wait`]. A
    /// peer that does not come within it is [`Error::CollectiveTimeout`], never a hang: the
    /// communicator is aborted and later calls give [`Error::CommAborted`]. Inside a capture
    /// with a watchdog deadline ([`CaptureOptions::deadline`](crate::CaptureOptions::deadline)),
    /// a group's wait also ends when the watchdog fires.
    ///
    /// What this process cannot see is not checked here: that the other processes issue
    /// the same collectives in the same order (in one process, [`Group`] checks every rank
    /// against the others). A mismatch shows as a timeout.
    ///
    /// On the simulated device the ranks are threads of one process, each with a simulated
    /// device of its own, and collectives meet across threads. Give each thread its own
    /// [`Context::simulated`] to stand for a process of its own: devices of one
    /// [`simulated_world`](Context::simulated_world) share one process's capture rules (a
    /// Global-mode capture on one refuses allocation on the others, as on GPUs of one
    /// process).
    ///
    /// [`Group::launch`]: crate::collective::Group::launch
    /// [`Group`]: crate::collective::Group
    ///
    /// # Errors
    /// [`Error::InvalidWorld`] for a world of no ranks, a rank outside it, a zero timeout,
    /// an id of the other kind of device, or (simulated) two ranks on one device;
    /// [`Error::CollectiveTimeout`]; [`Error::NcclUnavailable`]; [`Error::CaptureActive`]
    /// while a capture prohibits it; [`Error::Nccl`].
    #[track_caller]
    pub fn init_rank<S: StreamState + CommInit>(
        stream: &mut Stream<S>,
        id: &CommId,
        rank: usize,
        world_size: usize,
        timeout: Duration,
    ) -> Result<Comm> {
        let site = crate::error::CallSite::caller();
        let ctx = stream.ctx.clone();
        let bad = |reason: String| Err(Error::InvalidWorld { reason });
        if world_size == 0 || world_size > i32::MAX as usize {
            return bad(format!("a world of {world_size} ranks: give the number of processes taking part"));
        }
        if rank >= world_size {
            return bad(format!("rank {rank} is not in a world of {world_size} ranks (0 to {})", world_size - 1));
        }
        if timeout.is_zero() {
            return bad("a timeout of zero: give how long a rank may wait for the others (seconds, say)".into());
        }
        ctx.fail_fast("Comm::init_rank", site)?;
        let link = Arc::new(crate::raw::coll::Link::new(rank, timeout));
        if ctx.kind() == DeviceKind::Simulated {
            if !id.is_simulated() {
                return bad("an id made for GPUs was given to a simulated device: make it with `CommId::new` on a simulated context".into());
            }
            let key = id.key();
            // A device of a world, or a lone one (its fail-fast domain is its own).
            let device = ctx.sim().and_then(|s| s.world()).unwrap_or((u64::MAX, ctx.h.inner.domain));
            crate::device::sim::world::join(key, world_size, rank, device, timeout).map_err(|e| match e {
                crate::device::sim::world::WorldError::Timeout { rank, waited } => {
                    Error::CollectiveTimeout { op: "Comm::init_rank", rank, waited }
                }
                crate::device::sim::world::WorldError::Mismatch(reason)
                | crate::device::sim::world::WorldError::Fault(reason) => Error::InvalidWorld { reason },
                crate::device::sim::world::WorldError::Aborted { rank } => Error::CommAborted { rank },
            })?;
            return Ok(Comm {
                ctx,
                raw: 0,
                rank,
                nranks: world_size,
                id: key,
                link: Some(link),
                _not_sync: Default::default(),
            });
        }
        if id.is_simulated() {
            return bad(
                "an id made for simulated devices was given to a GPU: make it with `CommId::new` on a GPU context"
                    .into(),
            );
        }
        if !crate::raw::nccl::present() {
            return Err(Error::NcclUnavailable);
        }
        // `ncclCommInitRankConfig` (nonblocking communicators) came with NCCL 2.14.
        let version = nccl_version()?;
        if version < 21400 {
            return bad(format!(
                "NCCL {version} has no nonblocking communicators (2.14 or later is needed for `init_rank`'s timeouts)"
            ));
        }
        // The environment can force every communicator blocking, which would make a peer
        // that never comes a hang instead of a timeout.
        if std::env::var("NCCL_COMM_BLOCKING").is_ok_and(|v| v.trim() == "1") {
            return bad("NCCL_COMM_BLOCKING=1 is set: it makes NCCL block without limit, and `init_rank`'s timeouts impossible; unset it".into());
        }
        // NCCL takes the current device: bind this rank's.
        cudarc::driver::CudaContext::new(ctx.ordinal())
            .and_then(|c| c.bind_to_thread())
            .map_err(|e| Error::Driver { op: "cuCtxSetCurrent", code: crate::error::DriverCode(e.0 as u32) })?;
        let raw = crate::raw::nccl::init_rank(world_size as i32, id.as_bytes(), rank as i32)
            .map_err(|f| Error::Nccl { op: "ncclCommInitRankConfig", code: f.code, text: f.text })?;
        // A failed set-up is aborted: no graph can hold its work, so the abort is waited for.
        settle(raw, &link, rank, "Comm::init_rank", None).inspect_err(|_| finish_abort(&link, rank))?;
        static NEXT: AtomicU64 = AtomicU64::new(1 << 32);
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        Ok(Comm { ctx, raw, rank, nranks: world_size, id, link: Some(link), _not_sync: Default::default() })
    }

    /// The timeout of a communicator of [`init_rank`](Self::init_rank) (`None` for one of
    /// [`init_all`](Self::init_all), whose ranks are all launched together).
    pub fn timeout(&self) -> Option<Duration> {
        self.link.as_ref().map(|l| l.timeout())
    }

    /// Sets the timeout of a communicator of [`init_rank`](Self::init_rank): NCCL's own
    /// set-up takes a second or more, so a communicator is often made with a long timeout,
    /// then given the short one its steps should keep.
    ///
    /// # Errors
    /// [`Error::InvalidWorld`] for a zero timeout, or a communicator of
    /// [`init_all`](Self::init_all) (which has none).
    pub fn set_timeout(&mut self, timeout: Duration) -> Result<()> {
        match &self.link {
            _ if timeout.is_zero() => Err(Error::InvalidWorld {
                reason: "a timeout of zero: give how long a rank may wait for the others".into(),
            }),
            Some(l) => {
                l.set_timeout(timeout);
                Ok(())
            }
            None => Err(Error::InvalidWorld {
                reason: "a communicator of `init_all` has no timeout: all of its ranks are in this process and launched together".into(),
            }),
        }
    }

    /// Waits until everything queued on `stream` so far is done — a replayed step's
    /// collectives included — for at most the communicator's timeout (given to
    /// [`init_rank`](Self::init_rank) or [`set_timeout`](Self::set_timeout)). The timeout
    /// bounds the whole wait, the stream's other work included: give one longer than a
    /// step. Past it, the communicator is aborted, which stops its kernels, and the result
    /// is [`Error::CollectiveTimeout`]; the stream is then idle and usable. An error NCCL
    /// reports meanwhile (a peer that failed) ends the wait at once, as [`Error::Nccl`], the
    /// communicator aborted too. For a communicator of [`init_all`](Self::init_all) (every rank in this
    /// process, launched together) it is [`Stream::synchronize`].
    ///
    /// # Errors
    /// [`Error::CommDeviceMismatch`] for a stream of another device;
    /// [`Error::CaptureActive`] while a capture forbids a synchronous wait (as
    /// [`Stream::synchronize`]); [`Error::CollectiveTimeout`]; [`Error::CommAborted`];
    /// [`Error::Driver`].
    #[track_caller]
    pub fn wait(&self, stream: &mut Stream<crate::state::Idle>) -> Result<()> {
        let site = crate::error::CallSite::caller();
        self.check_device("Comm::wait", &stream.ctx)?;
        self.check_usable()?;
        // A wait (and an abort) would invalidate a capture that forbids synchronous calls.
        self.ctx.fail_fast("Comm::wait", site)?;
        let link = match &self.link {
            Some(l) if self.raw != 0 => l,
            _ => return stream.synchronize(),
        };
        let started = Instant::now();
        let mut spins = 0u32;
        loop {
            match stream.ctx.b().stream_query(stream.raw) {
                Ok(true) => return Ok(()),
                Ok(false) => {}
                Err(code) => return Err(Error::Driver { op: "cuStreamQuery", code }),
            }
            if spins % 64 == 63 {
                if let Err(f) = crate::raw::nccl::state(self.raw) {
                    abort_detached(self.raw, link);
                    drain(stream);
                    return Err(Error::Nccl { op: "ncclCommGetAsyncError", code: f.code, text: f.text });
                }
            }
            if started.elapsed() >= link.timeout() {
                abort_detached(self.raw, link);
                drain(stream);
                return Err(Error::CollectiveTimeout { op: "Comm::wait", rank: self.rank, waited: started.elapsed() });
            }
            backoff(&mut spins);
        }
    }

    /// Destroys the communicator now (`ncclCommDestroy`), reporting NCCL's result — where
    /// dropping it logs a failure and waits past any capture that forbids it. `stream`, a
    /// stream of its device, proves by being idle that no capture is under way on it.
    ///
    /// # Errors
    /// [`Error::CommDeviceMismatch`] for a stream of another device; [`Error::CaptureActive`]
    /// while a capture elsewhere forbids it (a Global-mode capture on any GPU of the process,
    /// or a ThreadLocal one on this thread: the destroy would invalidate it); [`Error::Nccl`].
    /// On an error other than `Nccl` the communicator is dropped as usual.
    #[track_caller]
    pub fn destroy<S: StreamState + CommInit>(mut self, stream: &mut Stream<S>) -> Result<()> {
        let site = crate::error::CallSite::caller();
        self.check_device("Comm::destroy", &stream.ctx)?;
        self.ctx.fail_fast("Comm::destroy", site)?;
        if self.raw == 0 || self.is_aborted() {
            return Ok(()); // simulated, or freed by the abort: the drop does the rest
        }
        // Dropped below with no handle: nothing more to free.
        let raw = std::mem::replace(&mut self.raw, 0);
        // A communicator in error (or with an operation still in progress) is aborted: NCCL's
        // destroy would return early, leaking it and leaving this thread inside an NCCL group.
        crate::raw::nccl::release_checked(raw).map_err(|(op, f)| Error::Nccl { op, code: f.code, text: f.text })
    }

    /// Whether the communicator was aborted after a timeout (it cannot be used again).
    pub fn is_aborted(&self) -> bool {
        self.link.as_ref().is_some_and(|l| l.is_aborted())
    }

    /// `Err(CommDeviceMismatch)` unless `ctx` is the communicator's device.
    fn check_device(&self, op: &'static str, ctx: &Context) -> Result<()> {
        if self.ctx.same(ctx) {
            return Ok(());
        }
        Err(Error::CommDeviceMismatch {
            op,
            rank: self.rank,
            comm_device: self.ctx.ordinal(),
            stream_device: ctx.ordinal(),
        })
    }

    pub(crate) fn check_usable(&self) -> Result<()> {
        if self.is_aborted() {
            return Err(Error::CommAborted { rank: self.rank });
        }
        Ok(())
    }

    /// This rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of ranks.
    pub fn world_size(&self) -> usize {
        self.nranks
    }

    /// The device's ordinal.
    pub fn device(&self) -> usize {
        self.ctx.ordinal()
    }
}

/// Spins briefly, then sleeps a little longer each time, up to 100 µs.
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::sleep(Duration::from_micros(u64::from((*spins - 63).min(100))));
    }
}

/// Waits until a nonblocking communicator's operations are issued (NCCL may connect to
/// the peers first), up to its timeout; past it, aborts it.
/// Within a capture that has a watchdog deadline
/// ([`CaptureOptions::deadline`](crate::CaptureOptions::deadline)), the wait also ends when
/// the watchdog fires, whichever comes first.
pub(crate) fn settle(
    raw: usize,
    link: &crate::raw::coll::Link,
    rank: usize,
    op: &'static str,
    watch: Option<&crate::watchdog::Watch>,
) -> Result<()> {
    let started = Instant::now();
    let mut spins = 0u32;
    loop {
        match crate::raw::nccl::state(raw) {
            Ok(true) => return Ok(()),
            Ok(false) => {}
            Err(f) => {
                abort_detached(raw, link);
                return Err(Error::Nccl { op: "ncclCommGetAsyncError", code: f.code, text: f.text });
            }
        }
        if started.elapsed() >= link.timeout() || watch.is_some_and(|w| w.fired_after().is_some()) {
            abort_detached(raw, link);
            return Err(Error::CollectiveTimeout { op, rank, waited: started.elapsed() });
        }
        backoff(&mut spins);
    }
}

/// Aborts a rank-per-process communicator once (the first caller), without waiting for the
/// abort to finish: `ncclCommAbort` raises NCCL's abort flags first — its kernels stop —
/// then waits until every graph holding its work is destroyed, and such a graph may belong
/// to the very caller (a replayed step, a capture under way). So it runs on a thread of its
/// own, which ends once those graphs are gone.
pub(crate) fn abort_detached(raw: usize, link: &crate::raw::coll::Link) {
    if !link.abort() {
        return;
    }
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let spawned = std::thread::Builder::new().name(ABORT_THREAD.into()).spawn(move || {
        crate::raw::nccl::abort(raw);
        drop(tx);
    });
    match spawned {
        Ok(_) => link.set_aborting(rx),
        Err(e) => {
            log::error!("capture-core: no thread for ncclCommAbort ({e}); aborting here");
            crate::raw::nccl::abort(raw);
        }
    }
}

/// The name of the thread an abort runs on.
pub(crate) const ABORT_THREAD: &str = "nccl-abort";

/// How long the owner of an aborted communicator waits for the abort to return: by then no
/// graph holds its work (graphs borrow their communicators), so the abort ends soon; one
/// still running after this is left, logged.
const ABORT_WAIT: Duration = Duration::from_secs(10);

/// Waits for the abort of `link`'s communicator to return (bounded), so none still runs
/// inside NCCL when the program goes on to exit: a process that exits while
/// `ncclCommAbort` runs on another thread can crash in the CUDA and NCCL teardown.
fn finish_abort(link: &crate::raw::coll::Link, rank: usize) {
    if !link.wait_aborted(ABORT_WAIT) {
        log::error!(
            "capture-core: ncclCommAbort of rank {rank} still runs after {ABORT_WAIT:?} (a graph holding its \
             work may be alive, e.g. one leaked); left running"
        );
    }
}

/// After an abort: waits for the stream's queued work (the aborted kernels return). A
/// failure is logged; the caller reports the timeout.
fn drain(stream: &mut Stream<crate::state::Idle>) {
    if let Err(e) = stream.synchronize() {
        log::error!("capture-core: synchronizing a stream after aborting its communicator failed: {e}");
    }
}

impl Drop for Comm {
    fn drop(&mut self) {
        if self.raw == 0 {
            if self.link.is_some() && self.ctx.kind() == DeviceKind::Simulated {
                crate::device::sim::world::leave(self.id);
            }
            return;
        }
        if self.is_aborted() {
            // `ncclCommAbort` frees it; the graphs holding its work are gone (they borrow
            // it), so the abort returns soon: wait for it.
            if let Some(link) = &self.link {
                finish_abort(link, self.rank);
            }
            return;
        }
        // Destroying frees device memory: after any capture on the device has ended.
        if let Some(crate::registry::Deferred::NcclComm(c)) =
            self.ctx.reg().defer(crate::registry::Deferred::NcclComm(self.raw))
        {
            // No capture on this device; one on another device may still forbid it.
            crate::registry::fail_fast::release_comm_or_defer(self.ctx.h.inner.domain, c);
        }
    }
}

/// The NCCL library's version (e.g. `22703` for 2.27.3).
///
/// # Errors
/// [`Error::NcclUnavailable`], [`Error::Nccl`].
pub fn nccl_version() -> Result<i32> {
    if !crate::raw::nccl::present() {
        return Err(Error::NcclUnavailable);
    }
    crate::raw::nccl::version().map_err(|f| Error::Nccl { op: "ncclGetVersion", code: f.code, text: f.text })
}
