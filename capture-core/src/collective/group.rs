//! Collective groups: every rank's calls of one step, checked against each other, then
//! issued together.

use std::collections::BTreeMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::book::Book;
use crate::collective::comm::{Comm, NcclElem, ReduceOp};
use crate::context::Context;
use crate::device::{DeviceKind, RawStream};
use crate::error::{CallSite, Error, Result};
use crate::interop::DeviceMemory;
use crate::raw::coll::{Call, CollNode};
use crate::state::{Capturing, Idle, Records, StreamState};
use crate::stream::Stream;

struct Pending {
    ctx: Context,
    stream: RawStream,
    book: Option<Book>,
    comm_raw: usize,
    comm_id: u64,
    rank: usize,
    nranks: usize,
    call: Call,
    op: &'static str,
    site: CallSite,
    link: Option<std::sync::Arc<crate::raw::coll::Link>>,
}

/// The collective calls of one step, for every rank: NCCL's group (`ncclGroupStart` …
/// `ncclGroupEnd`), which one thread driving several GPUs must use.
///
/// Add each rank's calls with its stream — idle (the calls run now) or capturing (they are
/// recorded into that rank's graph) — then [`launch`](Self::launch) the group. Each call is
/// checked as it is added (the communicator covers the stream's device, the buffers are of
/// that device and long enough), and at `launch` the ranks are checked against each other:
/// every rank of a communicator issues the same collectives with the same counts, types,
/// operations and roots, and every send has its receive. A mismatch is
/// [`Error::CollectiveMismatch`] and nothing is issued: NCCL would wait forever.
///
/// Everything a call uses is borrowed for `'g`; with a capturing stream `'g` is the
/// capture's lifetime, so the graph keeps the communicator and buffers alive. Dropping a
/// group without `launch` issues nothing.
#[must_use = "a Group issues nothing until `launch` is called"]
pub struct Group<'g> {
    ops: Vec<Pending>,
    _borrows: PhantomData<&'g ()>,
}

impl fmt::Debug for Group<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Group").field("calls", &self.ops.len()).finish()
    }
}

impl Default for Group<'_> {
    fn default() -> Self {
        Self::new()
    }
}

/// The NCCL element type of `T`.
fn dtype<T: NcclElem>() -> crate::raw::coll::Dtype {
    <T as crate::collective::comm::sealed::Sealed>::DTYPE
}

fn elems<M: DeviceMemory + ?Sized>(m: &M) -> (u64, usize, crate::interop::MemCtx) {
    let r = m.mem_ref();
    (r.ptr, r.len, r.ctx)
}

impl<'g> Group<'g> {
    /// An empty group.
    pub fn new() -> Self {
        Self { ops: Vec::new(), _borrows: PhantomData }
    }

    #[allow(clippy::too_many_arguments)]
    fn push<S: StreamState>(
        &mut self,
        stream: &mut Stream<S>,
        comm: &Comm,
        op: &'static str,
        site: CallSite,
        bufs: &[(u64, crate::interop::MemCtx)],
        call: Call,
    ) -> Result<&mut Self> {
        S::check_live(&stream.ext, op)?;
        comm.check_usable()?;
        if !comm.ctx.same(&stream.ctx) {
            return Err(Error::CommDeviceMismatch {
                op,
                rank: comm.rank,
                comm_device: comm.ctx.ordinal(),
                stream_device: stream.ctx.ordinal(),
            });
        }
        for (_, mctx) in bufs {
            if !mctx.matches(&stream.ctx.h) {
                return Err(Error::ContextMismatch { op, what: "buffer" });
            }
        }
        self.ops.push(Pending {
            ctx: stream.ctx.clone(),
            stream: stream.raw,
            book: S::book(&stream.ext),
            comm_raw: comm.raw,
            comm_id: comm.id,
            rank: comm.rank,
            nranks: comm.nranks,
            call,
            op,
            site,
            link: comm.link.clone(),
        });
        Ok(self)
    }

    /// `recv = op(send of every rank)`, on every rank. `send` and `recv` have the same
    /// length (they may be the same buffer for an in-place reduction: pass it twice).
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], [`Error::CommDeviceMismatch`], [`Error::ContextMismatch`],
    /// [`Error::CaptureEnded`] for a fork of an ended capture.
    #[track_caller]
    pub fn all_reduce<T, S, A, B>(
        &mut self,
        stream: &mut Stream<S>,
        comm: &'g Comm,
        send: &'g A,
        recv: &'g B,
        op: ReduceOp,
    ) -> Result<&mut Self>
    where
        T: NcclElem,
        S: Records<'g>,
        A: DeviceMemory<Elem = T> + ?Sized,
        B: DeviceMemory<Elem = T> + ?Sized,
    {
        let (s, sn, sc) = elems(send);
        let (r, rn, rc) = elems(recv);
        if sn != rn {
            return Err(Error::LengthMismatch { op: "Group::all_reduce", dst: rn, src: sn });
        }
        let call = Call::AllReduce { send: s, recv: r, count: sn, dtype: dtype::<T>(), op: op.raw() };
        self.push(stream, comm, "Group::all_reduce", CallSite::caller(), &[(s, sc), (r, rc)], call)
    }

    /// `recv = send of rank `root``, on every rank.
    ///
    /// # Errors
    /// As [`all_reduce`](Self::all_reduce); [`Error::InvalidWorld`] for a root outside the
    /// communicator.
    #[track_caller]
    pub fn broadcast<T, S, A, B>(
        &mut self,
        stream: &mut Stream<S>,
        comm: &'g Comm,
        send: &'g A,
        recv: &'g B,
        root: usize,
    ) -> Result<&mut Self>
    where
        T: NcclElem,
        S: Records<'g>,
        A: DeviceMemory<Elem = T> + ?Sized,
        B: DeviceMemory<Elem = T> + ?Sized,
    {
        check_rank("Group::broadcast", "root", root, comm)?;
        let (s, sn, sc) = elems(send);
        let (r, rn, rc) = elems(recv);
        if sn != rn {
            return Err(Error::LengthMismatch { op: "Group::broadcast", dst: rn, src: sn });
        }
        let call = Call::Broadcast { send: s, recv: r, count: sn, dtype: dtype::<T>(), root: root as i32 };
        self.push(stream, comm, "Group::broadcast", CallSite::caller(), &[(s, sc), (r, rc)], call)
    }

    /// `recv = op(send of every rank)` on rank `root` only (`recv` is still given on every
    /// rank, as NCCL takes it).
    ///
    /// # Errors
    /// As [`broadcast`](Self::broadcast).
    #[track_caller]
    #[allow(clippy::too_many_arguments)]
    pub fn reduce<T, S, A, B>(
        &mut self,
        stream: &mut Stream<S>,
        comm: &'g Comm,
        send: &'g A,
        recv: &'g B,
        op: ReduceOp,
        root: usize,
    ) -> Result<&mut Self>
    where
        T: NcclElem,
        S: Records<'g>,
        A: DeviceMemory<Elem = T> + ?Sized,
        B: DeviceMemory<Elem = T> + ?Sized,
    {
        check_rank("Group::reduce", "root", root, comm)?;
        let (s, sn, sc) = elems(send);
        let (r, rn, rc) = elems(recv);
        if sn != rn {
            return Err(Error::LengthMismatch { op: "Group::reduce", dst: rn, src: sn });
        }
        let call = Call::Reduce { send: s, recv: r, count: sn, dtype: dtype::<T>(), op: op.raw(), root: root as i32 };
        self.push(stream, comm, "Group::reduce", CallSite::caller(), &[(s, sc), (r, rc)], call)
    }

    /// `recv = send of rank 0, send of rank 1, …`: `recv` is `world_size` times `send`.
    ///
    /// # Errors
    /// As [`all_reduce`](Self::all_reduce).
    #[track_caller]
    pub fn all_gather<T, S, A, B>(
        &mut self,
        stream: &mut Stream<S>,
        comm: &'g Comm,
        send: &'g A,
        recv: &'g B,
    ) -> Result<&mut Self>
    where
        T: NcclElem,
        S: Records<'g>,
        A: DeviceMemory<Elem = T> + ?Sized,
        B: DeviceMemory<Elem = T> + ?Sized,
    {
        let (s, sn, sc) = elems(send);
        let (r, rn, rc) = elems(recv);
        if rn != sn.saturating_mul(comm.nranks) {
            return Err(Error::LengthMismatch { op: "Group::all_gather", dst: rn, src: sn * comm.nranks });
        }
        let call = Call::AllGather { send: s, recv: r, count: sn, dtype: dtype::<T>() };
        self.push(stream, comm, "Group::all_gather", CallSite::caller(), &[(s, sc), (r, rc)], call)
    }

    /// `recv = part `rank` of op(send of every rank)`: `send` is `world_size` times `recv`.
    ///
    /// # Errors
    /// As [`all_reduce`](Self::all_reduce).
    #[track_caller]
    pub fn reduce_scatter<T, S, A, B>(
        &mut self,
        stream: &mut Stream<S>,
        comm: &'g Comm,
        send: &'g A,
        recv: &'g B,
        op: ReduceOp,
    ) -> Result<&mut Self>
    where
        T: NcclElem,
        S: Records<'g>,
        A: DeviceMemory<Elem = T> + ?Sized,
        B: DeviceMemory<Elem = T> + ?Sized,
    {
        let (s, sn, sc) = elems(send);
        let (r, rn, rc) = elems(recv);
        if sn != rn.saturating_mul(comm.nranks) {
            return Err(Error::LengthMismatch { op: "Group::reduce_scatter", dst: rn * comm.nranks, src: sn });
        }
        let call = Call::ReduceScatter { send: s, recv: r, count: rn, dtype: dtype::<T>(), op: op.raw() };
        self.push(stream, comm, "Group::reduce_scatter", CallSite::caller(), &[(s, sc), (r, rc)], call)
    }

    /// Sends `send` to rank `peer` (which receives it with [`recv`](Self::recv) in the same
    /// group).
    ///
    /// # Errors
    /// As [`broadcast`](Self::broadcast).
    #[track_caller]
    pub fn send<T, S, A>(
        &mut self,
        stream: &mut Stream<S>,
        comm: &'g Comm,
        send: &'g A,
        peer: usize,
    ) -> Result<&mut Self>
    where
        T: NcclElem,
        S: Records<'g>,
        A: DeviceMemory<Elem = T> + ?Sized,
    {
        check_rank("Group::send", "peer", peer, comm)?;
        let (s, sn, sc) = elems(send);
        let call = Call::Send { send: s, count: sn, dtype: dtype::<T>(), peer: peer as i32 };
        self.push(stream, comm, "Group::send", CallSite::caller(), &[(s, sc)], call)
    }

    /// Receives into `recv` what rank `peer` sends in the same group.
    ///
    /// # Errors
    /// As [`broadcast`](Self::broadcast).
    #[track_caller]
    pub fn recv<T, S, B>(
        &mut self,
        stream: &mut Stream<S>,
        comm: &'g Comm,
        recv: &'g B,
        peer: usize,
    ) -> Result<&mut Self>
    where
        T: NcclElem,
        S: Records<'g>,
        B: DeviceMemory<Elem = T> + ?Sized,
    {
        check_rank("Group::recv", "peer", peer, comm)?;
        let (r, rn, rc) = elems(recv);
        let call = Call::Recv { recv: r, count: rn, dtype: dtype::<T>(), peer: peer as i32 };
        self.push(stream, comm, "Group::recv", CallSite::caller(), &[(r, rc)], call)
    }

    /// Checks the ranks' calls against each other and issues the group: run now on idle
    /// streams, recorded on capturing ones.
    ///
    /// # Errors
    /// [`Error::CollectiveMismatch`] (nothing issued); [`Error::CaptureActive`] when an idle
    /// stream's calls would run while a capture prohibits it; [`Error::Nccl`];
    /// [`Error::NotModelled`] where the simulated device finds a buffer outside its memory.
    #[track_caller]
    pub fn launch(self) -> Result<()> {
        if self.ops.is_empty() {
            return Ok(());
        }
        check_matching(&self.ops)?;
        if self.ops.iter().any(|o| o.book.is_some()) && self.ops.iter().any(|o| o.book.is_none()) {
            return Err(Error::CollectiveMismatch {
                reason: "some ranks' streams are capturing and others are idle: capture every rank's stream (MultiCapture) or none".into(),
            });
        }
        for o in &self.ops {
            if o.link.as_ref().is_some_and(|l| l.is_aborted()) {
                return Err(Error::CommAborted { rank: o.rank });
            }
        }
        // NCCL runs a group blocking or not as its communicators are: a mix would let a
        // blocking communicator's wait for an absent peer hang with no timeout.
        if self.ops.iter().any(|o| o.link.is_some()) && self.ops.iter().any(|o| o.link.is_none()) {
            return Err(Error::CollectiveMismatch {
                reason: "the group mixes communicators of `Comm::init_rank` (with timeouts) and of `Comm::init_all`: issue each kind in a group of its own".into(),
            });
        }
        let kind = self.ops[0].ctx.kind();
        match kind {
            DeviceKind::Simulated => launch_sim(&self.ops)?,
            _ => {
                let calls: Vec<(Call, usize, usize)> =
                    self.ops.iter().map(|o| (o.call, o.comm_raw, o.stream.0)).collect();
                if self.ops[0].book.is_none() {
                    for o in &self.ops {
                        o.ctx.fail_fast(o.op, o.site)?;
                    }
                }
                crate::raw::nccl::issue_group(&calls).map_err(|(op, f)| Error::Nccl {
                    op,
                    code: f.code,
                    text: f.text,
                })?;
                // A rank-per-process communicator is nonblocking: NCCL may still be
                // connecting to the peers; wait for it, up to its timeout.
                let mut seen: Vec<(usize, &std::sync::Arc<crate::raw::coll::Link>)> = Vec::new();
                for o in &self.ops {
                    if let Some(link) = &o.link {
                        if !seen.iter().any(|(raw, _)| *raw == o.comm_raw) {
                            seen.push((o.comm_raw, link));
                        }
                    }
                }
                for (i, (raw, link)) in seen.iter().enumerate() {
                    let o = self.ops.iter().find(|o| o.comm_raw == *raw).map_or(0, |o| o.rank);
                    let watch = self.ops.iter().find_map(|o| o.book.as_ref()).and_then(|b| b.borrow().watch.clone());
                    if let Err(e) = crate::collective::comm::settle(*raw, link, o, "Group::launch", watch.as_deref()) {
                        // The group failed: its other communicators are left mid-operation;
                        // abort them too, so none is used or destroyed in that state.
                        for (other, l) in &seen[i + 1..] {
                            crate::collective::comm::abort_detached(*other, l);
                        }
                        return Err(e);
                    }
                }
            }
        }
        for o in &self.ops {
            match &o.book {
                Some(book) => {
                    <Capturing<'_> as StreamState>::on_op(book, &o.ctx, o.op, o.site);
                    let mut b = book.borrow_mut();
                    if o.nranks > 1 {
                        b.collectives += 1;
                    }
                    if let Some(l) = &o.link {
                        if !b.comm_links.iter().any(|x| std::sync::Arc::ptr_eq(x, l)) {
                            b.comm_links.push(l.clone());
                        }
                    }
                }
                None => <Idle as StreamState>::on_op(&(), &o.ctx, o.op, o.site),
            }
        }
        Ok(())
    }
}

fn check_rank(op: &'static str, what: &str, r: usize, comm: &Comm) -> Result<()> {
    if r >= comm.nranks {
        return Err(Error::InvalidWorld {
            reason: format!("`{op}`: {what} {r} is not a rank of a communicator of {} ranks", comm.nranks),
        });
    }
    Ok(())
}

/// Every rank of each communicator issues the same collectives (kind, count, type, op,
/// root) in the same order, once each rank; sends and receives pair up.
fn check_matching(ops: &[Pending]) -> Result<()> {
    // Per communicator: its size, whether its other ranks are elsewhere (made by
    // `Comm::init_rank`: only this process's ranks can be checked here), each rank's calls.
    type ByRank<'a> = BTreeMap<usize, Vec<&'a Pending>>;
    let mut by_comm: BTreeMap<u64, (usize, bool, ByRank<'_>)> = BTreeMap::new();
    for o in ops {
        by_comm
            .entry(o.comm_id)
            .or_insert_with(|| (o.nranks, o.link.is_some(), BTreeMap::new()))
            .2
            .entry(o.rank)
            .or_default()
            .push(o);
    }
    let sig = |c: &Call| -> String {
        match *c {
            Call::AllReduce { count, dtype, op, .. } => format!("all_reduce of {count} x {dtype:?} ({op:?})"),
            Call::Broadcast { count, dtype, root, .. } => format!("broadcast of {count} x {dtype:?} from rank {root}"),
            Call::Reduce { count, dtype, op, root, .. } => {
                format!("reduce of {count} x {dtype:?} ({op:?}) to rank {root}")
            }
            Call::AllGather { count, dtype, .. } => format!("all_gather of {count} x {dtype:?} per rank"),
            Call::ReduceScatter { count, dtype, op, .. } => {
                format!("reduce_scatter to {count} x {dtype:?} per rank ({op:?})")
            }
            Call::Send { .. } | Call::Recv { .. } => String::new(),
        }
    };
    for (comm, (nranks, partial, ranks)) in &by_comm {
        let colls: BTreeMap<usize, Vec<String>> = ranks
            .iter()
            .map(|(r, v)| (*r, v.iter().filter(|o| !o.call.is_p2p()).map(|o| sig(&o.call)).collect()))
            .collect();
        let any = colls.values().any(|v| !v.is_empty());
        if any {
            if ranks.len() != *nranks && !partial {
                let missing: Vec<usize> = (0..*nranks).filter(|r| !ranks.contains_key(r)).collect();
                return Err(Error::CollectiveMismatch {
                    reason: format!("communicator #{comm}: rank(s) {missing:?} issued no call in the group; every rank takes part in a collective"),
                });
            }
            let (r0, first) = colls.iter().next().map(|(r, v)| (*r, v.clone())).unwrap_or_default();
            for (r, v) in &colls {
                if *v != first {
                    return Err(Error::CollectiveMismatch {
                        reason: format!(
                            "communicator #{comm}: rank {r0} issues [{}], rank {r} issues [{}]",
                            first.join(", "),
                            v.join(", ")
                        ),
                    });
                }
            }
        }
        // Point-to-point: rank a's sends to b, in order, pair with b's receives from a.
        let mut sends: BTreeMap<(usize, usize), Vec<String>> = BTreeMap::new();
        let mut recvs: BTreeMap<(usize, usize), Vec<String>> = BTreeMap::new();
        for (r, v) in ranks {
            for o in v {
                match o.call {
                    Call::Send { count, dtype, peer, .. } => {
                        sends.entry((*r, peer as usize)).or_default().push(format!("{count} x {dtype:?}"))
                    }
                    Call::Recv { count, dtype, peer, .. } => {
                        recvs.entry((peer as usize, *r)).or_default().push(format!("{count} x {dtype:?}"))
                    }
                    _ => {}
                }
            }
        }
        for key in sends.keys().chain(recvs.keys()) {
            // A peer in another process is checked there.
            if *partial && !(ranks.contains_key(&key.0) && ranks.contains_key(&key.1)) {
                continue;
            }
            let (s, r) = (sends.get(key), recvs.get(key));
            if s != r {
                return Err(Error::CollectiveMismatch {
                    reason: format!(
                        "communicator #{comm}: rank {} sends [{}] to rank {}, which receives [{}]",
                        key.0,
                        s.map(|v| v.join(", ")).unwrap_or_default(),
                        key.1,
                        r.map(|v| v.join(", ")).unwrap_or_default()
                    ),
                });
            }
        }
    }
    Ok(())
}

static NEXT_GROUP: AtomicU64 = AtomicU64::new(1);

/// The simulated device: record each rank's calls into its capture, or run them now.
fn launch_sim(ops: &[Pending]) -> Result<()> {
    let group = NEXT_GROUP.fetch_add(1, Ordering::Relaxed);
    let node = |o: &Pending| CollNode {
        comm: o.comm_id,
        rank: o.rank,
        nranks: o.nranks,
        group,
        call: o.call,
        link: o.link.clone(),
    };
    if ops[0].book.is_some() {
        for o in ops {
            let sim = o.ctx.sim().ok_or(Error::ContextMismatch { op: o.op, what: "stream" })?;
            match sim.record_collective(o.stream, node(o)) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(Error::CollectiveMismatch {
                        reason: "a stream stopped capturing during the group".into(),
                    })
                }
                Err(code) => return Err(o.ctx.fail(o.op, o.site, code)),
            }
        }
        return Ok(());
    }
    for o in ops {
        o.ctx.fail_fast(o.op, o.site)?;
    }
    // Eager: per device, its calls (in order), then the world performs them together.
    let mut per_dev: Vec<(&Context, Vec<CollNode>)> = Vec::new();
    for o in ops {
        match per_dev.iter_mut().find(|(c, _)| c.same(&o.ctx)) {
            Some((_, v)) => v.push(node(o)),
            None => per_dev.push((&o.ctx, vec![node(o)])),
        }
    }
    let ranks: Vec<_> = per_dev
        .iter()
        .map(|(ctx, nodes)| crate::device::sim::world::RankCalls { ctx: *ctx, nodes: nodes.clone() })
        .collect();
    crate::device::sim::world::perform(&ranks).map_err(|e| world_error(e, "Group::launch"))
}

pub(crate) fn world_error(e: crate::device::sim::world::WorldError, op: &'static str) -> Error {
    use crate::device::sim::world::WorldError;
    match e {
        WorldError::Timeout { rank, waited } => Error::CollectiveTimeout { op, rank, waited },
        WorldError::Aborted { rank } => Error::CommAborted { rank },
        WorldError::Mismatch(reason) => Error::CollectiveMismatch { reason },
        WorldError::Fault(what) => {
            Error::NotModelled { what: format!("a collective touched memory outside its buffers: {what}") }
        }
    }
}
