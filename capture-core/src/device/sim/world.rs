//! A simulated world of several devices in one process: collectives that really move host
//! memory between the simulated devices' address spaces.
//!
//! Each rank hands in the calls of one NCCL group (eagerly, or a replay reaching a run of
//! collective nodes of one group); [`execute`] matches them across ranks the way NCCL does —
//! the k-th collective of every rank of a communicator together, each send with the
//! receive of its peer in order — checks they agree, and performs them. Reductions run in
//! the element type, in rank order (NCCL's order differs, so floating-point sums can differ
//! in the last bits from a GPU's).
#![cfg_attr(not(feature = "nccl"), allow(dead_code))]

use std::collections::BTreeMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::SimDevice;
use crate::raw::coll::{Call, CollNode, Dtype, Op};

/// Why a simulated group could not run.
#[derive(Clone, Debug)]
pub(crate) enum WorldError {
    /// The ranks' calls do not match (what NCCL would hang on, or compute garbage with).
    Mismatch(String),
    /// A buffer address outside its device's allocations.
    Fault(String),
    /// The peers of a rank-per-process communicator did not come within its timeout; the
    /// rank's communicator is now aborted.
    Timeout { rank: usize, waited: Duration },
    /// The rank's communicator was aborted (after an earlier timeout).
    Aborted { rank: usize },
}

fn read(dev: &SimDevice, addr: u64, bytes: usize) -> Result<Vec<u8>, WorldError> {
    dev.world_read(addr, bytes).map_err(|_| WorldError::Fault(format!("{bytes} bytes at {addr:#x}")))
}

fn write(dev: &SimDevice, addr: u64, data: &[u8]) -> Result<(), WorldError> {
    dev.world_write(addr, data).map_err(|_| WorldError::Fault(format!("{} bytes at {addr:#x}", data.len())))
}

/// The elements of `T` in `bytes`, copied into a vector of `T` (a byte vector need not be
/// aligned for `T`, so it is not cast in place: Miri caught that).
fn elements<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    let size = std::mem::size_of::<T>().max(1);
    let mut v = vec![T::zeroed(); bytes.len() / size];
    let n = v.len() * size;
    bytemuck::cast_slice_mut::<T, u8>(&mut v).copy_from_slice(&bytes[..n]);
    v
}

macro_rules! fold {
    ($t:ty, $parts:expr, $op:expr, $n:expr, $add:ident, $mul:ident) => {{
        // Copied out (not cast in place): a byte vector need not be aligned for `$t`.
        let parts: Vec<Vec<$t>> = $parts.iter().map(|p| elements::<$t>(p)).collect();
        let mut out: Vec<$t> = parts[0].clone();
        for p in &parts[1..] {
            for (o, v) in out.iter_mut().zip(p.iter()) {
                *o = match $op {
                    Op::Sum | Op::Avg => $add(*o, *v),
                    Op::Prod => $mul(*o, *v),
                    Op::Max => {
                        if *v > *o {
                            *v
                        } else {
                            *o
                        }
                    }
                    Op::Min => {
                        if *v < *o {
                            *v
                        } else {
                            *o
                        }
                    }
                };
            }
        }
        if $op == Op::Avg {
            // n is at most 64 (a world's size), so it fits every element type.
            let n = $n as $t;
            for o in out.iter_mut() {
                *o /= n;
            }
        }
        bytemuck::cast_slice::<$t, u8>(&out).to_vec()
    }};
}

// Integer sums and products wrap, as on the GPU; floats follow IEEE arithmetic.
fn fadd<T: std::ops::Add<Output = T>>(a: T, b: T) -> T {
    a + b
}
fn fmul<T: std::ops::Mul<Output = T>>(a: T, b: T) -> T {
    a * b
}
macro_rules! wrapping {
    ($($t:ty: $add:ident, $mul:ident);*) => {$(
        fn $add(a: $t, b: $t) -> $t {
            a.wrapping_add(b)
        }
        fn $mul(a: $t, b: $t) -> $t {
            a.wrapping_mul(b)
        }
    )*};
}
wrapping!(i32: add_i32, mul_i32; u32: add_u32, mul_u32; i64: add_i64, mul_i64; u64: add_u64, mul_u64; u8: add_u8, mul_u8);

/// A reduction of 16-bit floats: widened to f32, reduced there, rounded back.
fn half(parts: &[Vec<u8>], op: Op, n: usize, widen: fn(u16) -> f32, narrow: fn(f32) -> u16) -> Vec<u8> {
    let widened: Vec<Vec<u8>> = parts
        .iter()
        .map(|p| {
            let v: Vec<f32> = elements::<u16>(p).into_iter().map(widen).collect();
            bytemuck::cast_slice::<f32, u8>(&v).to_vec()
        })
        .collect();
    let r = fold!(f32, widened, op, n, fadd, fmul);
    let v: Vec<u16> = elements::<f32>(&r).into_iter().map(narrow).collect();
    bytemuck::cast_slice::<u16, u8>(&v).to_vec()
}

/// Reduces equal-length byte vectors of `dtype` elementwise, in rank order.
fn reduce(parts: &[Vec<u8>], dtype: Dtype, op: Op) -> Result<Vec<u8>, WorldError> {
    let n = parts.len();
    Ok(match dtype {
        Dtype::F32 => fold!(f32, parts, op, n, fadd, fmul),
        Dtype::F64 => fold!(f64, parts, op, n, fadd, fmul),
        Dtype::I32 => fold!(i32, parts, op, n, add_i32, mul_i32),
        Dtype::U32 => fold!(u32, parts, op, n, add_u32, mul_u32),
        Dtype::I64 => fold!(i64, parts, op, n, add_i64, mul_i64),
        Dtype::U64 => fold!(u64, parts, op, n, add_u64, mul_u64),
        Dtype::U8 => fold!(u8, parts, op, n, add_u8, mul_u8),
        Dtype::Bf16 => {
            half(parts, op, n, |b| crate::raw::half::Bf16(b).to_f32(), |x| crate::raw::half::Bf16::from_f32(x).0)
        }
        // A sum of two halves rounded once, as NCCL computes it for two ranks; with more ranks
        // the simulated device rounds once at the end, NCCL after each step.
        Dtype::F16 => {
            half(parts, op, n, |b| crate::raw::half::F16(b).to_f32(), |x| crate::raw::half::F16::from_f32(x).0)
        }
    })
}

/// A rank's device as the world sees it: the simulated device behind a context, which a round
/// of collectives keeps alive while it waits for the other ranks.
pub(crate) trait RankDevice: Send + Sync {
    /// The simulated device (`None` on a GPU).
    fn sim(&self) -> Option<&SimDevice>;
    /// Another holder of the same device.
    fn clone_box(&self) -> Box<dyn RankDevice>;
}

/// One rank's calls in a group, on its device.
pub(crate) struct RankCalls<'d> {
    pub ctx: &'d dyn RankDevice,
    pub nodes: Vec<CollNode>,
}

/// Performs one group's calls: at once when every rank is here ([`execute`]); for a
/// communicator made by `Comm::init_rank`, whose other ranks are in other threads, by
/// meeting them ([`meet`]).
pub(crate) fn perform(ranks: &[RankCalls<'_>]) -> Result<(), WorldError> {
    if ranks.iter().any(|r| r.nodes.iter().any(|n| n.link.is_some())) {
        meet(ranks)
    } else {
        execute(ranks)
    }
}

/// The ranks of rank-per-process communicators: who has joined, and the rounds of
/// collectives under way (the k-th group of every rank meets the others' k-th).
struct Meeting {
    nranks: usize,
    /// rank -> its device (one rank per device).
    joined: BTreeMap<usize, (u64, usize)>,
    complete: bool,
    /// Local communicators alive; the meeting is forgotten when the last is dropped.
    live: usize,
    /// round -> rank -> (its device, its calls).
    pending: BTreeMap<u64, BTreeMap<usize, RankRound>>,
    /// round -> (outcome, ranks still to read it).
    done: BTreeMap<u64, (Result<(), WorldError>, usize)>,
    /// (from, to) -> messages sent and not yet received.
    channels: BTreeMap<(usize, usize), std::collections::VecDeque<Message>>,
}

/// One rank's part of a round: its device (kept alive while the round waits) and its calls.
type RankRound = (Box<dyn RankDevice>, Vec<CollNode>);

/// A point-to-point message in flight: element count, type, bytes.
type Message = (usize, Dtype, Vec<u8>);

static MEETINGS: Mutex<BTreeMap<u64, Meeting>> = Mutex::new(BTreeMap::new());
static MET: Condvar = Condvar::new();

fn meetings() -> MutexGuard<'static, BTreeMap<u64, Meeting>> {
    MEETINGS.lock().unwrap_or_else(|p| p.into_inner())
}

/// Waits on [`MET`] until `ready` or `deadline`; `false` on the deadline.
fn wait_until(
    mut g: MutexGuard<'static, BTreeMap<u64, Meeting>>,
    deadline: Instant,
    mut ready: impl FnMut(&mut BTreeMap<u64, Meeting>) -> bool,
) -> (MutexGuard<'static, BTreeMap<u64, Meeting>>, bool) {
    loop {
        if ready(&mut g) {
            return (g, true);
        }
        let now = Instant::now();
        if now >= deadline {
            return (g, false);
        }
        g = MET.wait_timeout(g, deadline - now).unwrap_or_else(|p| p.into_inner()).0;
    }
}

/// Rank `rank` of communicator `comm` (of `nranks`) joins, from device `device` (a world and
/// its index in it), and waits up to `timeout` for every other rank: `Comm::init_rank` on
/// the simulated device.
pub(crate) fn join(
    comm: u64,
    nranks: usize,
    rank: usize,
    device: (u64, usize),
    timeout: Duration,
) -> Result<(), WorldError> {
    let started = Instant::now();
    let mut g = meetings();
    let m = g.entry(comm).or_insert_with(|| Meeting {
        nranks,
        joined: BTreeMap::new(),
        complete: false,
        live: 0,
        pending: BTreeMap::new(),
        done: BTreeMap::new(),
        channels: BTreeMap::new(),
    });
    if m.complete {
        return Err(WorldError::Mismatch(
            "this CommId has made its communicator already: make a new CommId for each communicator".into(),
        ));
    }
    if m.nranks != nranks {
        return Err(WorldError::Mismatch(format!(
            "rank {rank} asks for {nranks} ranks, an earlier rank for {}: give every rank the same world size",
            m.nranks
        )));
    }
    if m.joined.contains_key(&rank) {
        return Err(WorldError::Mismatch(format!("rank {rank} joined twice: give each process its own rank")));
    }
    if let Some((other, _)) = m.joined.iter().find(|(_, d)| **d == device) {
        return Err(WorldError::Mismatch(format!("ranks {other} and {rank} are on one device: one rank per device")));
    }
    m.joined.insert(rank, device);
    m.live += 1;
    if m.joined.len() == nranks {
        m.complete = true;
        MET.notify_all();
        return Ok(());
    }
    let (mut g, ok) = wait_until(g, started + timeout, |g| g.get(&comm).is_some_and(|m| m.complete));
    if ok {
        return Ok(());
    }
    if let Some(m) = g.get_mut(&comm) {
        m.joined.remove(&rank);
        m.live -= 1;
        if m.live == 0 {
            g.remove(&comm);
        }
    }
    Err(WorldError::Timeout { rank, waited: started.elapsed() })
}

/// A local communicator of `comm` was dropped.
pub(crate) fn leave(comm: u64) {
    let mut g = meetings();
    if let Some(m) = g.get_mut(&comm) {
        m.live = m.live.saturating_sub(1);
        if m.live == 0 {
            g.remove(&comm);
        }
    }
}

/// This thread's ranks of one rank-per-process communicator hand in their calls of one
/// group. Collectives meet every rank's: the last rank to arrive performs every rank's, the
/// others wait for it. Point-to-point calls need only their peer, as in NCCL: a send leaves
/// its data in the channel to its peer, a receive takes the next message from its peer's
/// channel. Every wait lasts at most the communicator's timeout, after which the rank
/// withdraws and its communicator is aborted.
fn meet(ranks: &[RankCalls<'_>]) -> Result<(), WorldError> {
    let started = Instant::now();
    let first = ranks.iter().flat_map(|r| r.nodes.iter()).next().ok_or(WorldError::Mismatch("empty group".into()))?;
    let (comm, nranks) = (first.comm, first.nranks);
    if ranks.iter().any(|r| r.nodes.iter().any(|n| n.comm != comm || n.link.is_none())) {
        return Err(WorldError::Mismatch(
            "a group mixes a communicator made by `Comm::init_rank` with other communicators: on the simulated device, issue its calls in a group of their own".into(),
        ));
    }
    // Each local rank's link (the same for all of its nodes).
    let mut links: BTreeMap<usize, std::sync::Arc<crate::raw::coll::Link>> = BTreeMap::new();
    for n in ranks.iter().flat_map(|r| r.nodes.iter()) {
        if let Some(l) = &n.link {
            links.entry(n.rank).or_insert_with(|| l.clone());
        }
    }
    if let Some((rank, _)) = links.iter().find(|(_, l)| l.is_aborted()) {
        return Err(WorldError::Aborted { rank: *rank });
    }
    let timeout = links.values().map(|l| l.timeout()).min().unwrap_or_default();
    let deadline = started + timeout;
    let fail = |links: &BTreeMap<usize, std::sync::Arc<crate::raw::coll::Link>>| {
        for l in links.values() {
            l.abort();
        }
        WorldError::Timeout { rank: *links.keys().next().unwrap_or(&0), waited: started.elapsed() }
    };
    let colls: Vec<(&RankCalls<'_>, Vec<CollNode>)> = ranks
        .iter()
        .map(|r| (r, r.nodes.iter().filter(|n| !n.call.is_p2p()).cloned().collect::<Vec<_>>()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    if !colls.is_empty() {
        // The k-th group with collectives of every rank meets the others' k-th.
        let rounds: Vec<u64> =
            links.values().map(|l| l.rounds.fetch_add(1, std::sync::atomic::Ordering::AcqRel)).collect();
        let round = rounds[0];
        let mut g = meetings();
        let Some(m) = g.get_mut(&comm) else {
            return Err(WorldError::Mismatch(format!("communicator #{comm} is not known to the simulated world")));
        };
        let slot = m.pending.entry(round).or_default();
        for (r, nodes) in &colls {
            for n in nodes {
                slot.entry(n.rank).or_insert_with(|| (r.ctx.clone_box(), Vec::new())).1.push(n.clone());
            }
        }
        if slot.len() == nranks {
            let all = m.pending.remove(&round).unwrap_or_default();
            let calls: Vec<RankCalls<'_>> =
                all.iter().map(|(_, (ctx, nodes))| RankCalls { ctx: ctx.as_ref(), nodes: nodes.clone() }).collect();
            let out = execute(&calls);
            let readers = nranks - links.len();
            if readers > 0 {
                m.done.insert(round, (out.clone(), readers));
            }
            MET.notify_all();
            out?;
        } else {
            let (mut g, ok) = wait_until(g, deadline, |g| g.get(&comm).is_some_and(|m| m.done.contains_key(&round)));
            let Some(m) = g.get_mut(&comm) else {
                return Err(WorldError::Mismatch(format!("communicator #{comm} left the simulated world")));
            };
            if !ok {
                // Withdraw, and abort this thread's ranks.
                if let Some(slot) = m.pending.get_mut(&round) {
                    for rank in links.keys() {
                        slot.remove(rank);
                    }
                    if slot.is_empty() {
                        m.pending.remove(&round);
                    }
                }
                return Err(fail(&links));
            }
            let e = m.done.get_mut(&round).map(|(out, left)| {
                *left -= links.len().min(*left);
                (out.clone(), *left)
            });
            match e {
                Some((out, left)) => {
                    if left == 0 {
                        m.done.remove(&round);
                    }
                    out?;
                }
                None => return Err(WorldError::Mismatch("internal: a finished round vanished".into())),
            }
        }
    }
    // Point-to-point: every send of this thread's ranks first, then every receive.
    let p2p: Vec<(&RankCalls<'_>, &CollNode)> =
        ranks.iter().flat_map(|r| r.nodes.iter().filter(|n| n.call.is_p2p()).map(move |n| (r, n))).collect();
    if p2p.is_empty() {
        return Ok(());
    }
    let mut outgoing = Vec::new();
    for (r, n) in &p2p {
        if let Call::Send { send, count, dtype, peer } = n.call {
            let dev = r.ctx.sim().ok_or_else(|| WorldError::Mismatch("a rank's device is not simulated".into()))?;
            outgoing.push(((n.rank, peer as usize), (count, dtype, read(dev, send, count * dtype.size())?)));
        }
    }
    let mut g = meetings();
    {
        let Some(m) = g.get_mut(&comm) else {
            return Err(WorldError::Mismatch(format!("communicator #{comm} is not known to the simulated world")));
        };
        for (key, msg) in outgoing {
            m.channels.entry(key).or_default().push_back(msg);
        }
    }
    MET.notify_all();
    for (r, n) in &p2p {
        let Call::Recv { recv, count, dtype, peer } = n.call else { continue };
        let key = (peer as usize, n.rank);
        let (g2, ok) = wait_until(g, deadline, |g| {
            g.get(&comm).is_some_and(|m| m.channels.get(&key).is_some_and(|q| !q.is_empty()))
        });
        g = g2;
        if !ok {
            return Err(fail(&links));
        }
        let msg = g.get_mut(&comm).and_then(|m| m.channels.get_mut(&key)).and_then(|q| q.pop_front());
        let Some((c, d, data)) = msg else {
            return Err(WorldError::Mismatch("internal: a message vanished".into()));
        };
        if (c, d) != (count, dtype) {
            return Err(WorldError::Mismatch(format!(
                "communicator #{comm}: rank {peer} sends {c} x {d:?} to rank {}, which receives {count} x {dtype:?}",
                n.rank
            )));
        }
        let dev = r.ctx.sim().ok_or_else(|| WorldError::Mismatch("a rank's device is not simulated".into()))?;
        write(dev, recv, &data)?;
    }
    Ok(())
}

/// Performs one group's calls across the ranks that issued them.
pub(crate) fn execute(ranks: &[RankCalls<'_>]) -> Result<(), WorldError> {
    // Per communicator: each rank's collectives and point-to-point calls, in order.
    type PerRank<'a> = BTreeMap<usize, (&'a SimDevice, Vec<Call>, Vec<Call>)>;
    let mut comms: BTreeMap<u64, (usize, PerRank<'_>)> = BTreeMap::new();
    for r in ranks {
        let dev = r.ctx.sim().ok_or_else(|| WorldError::Mismatch("a rank's device is not simulated".into()))?;
        for n in &r.nodes {
            let entry = comms.entry(n.comm).or_insert_with(|| (n.nranks, BTreeMap::new()));
            let (_, colls, p2p) = entry.1.entry(n.rank).or_insert_with(|| (dev, Vec::new(), Vec::new()));
            if n.call.is_p2p() {
                p2p.push(n.call);
            } else {
                colls.push(n.call);
            }
        }
    }
    for (comm, (nranks, per_rank)) in &comms {
        let any_coll = per_rank.values().any(|(_, c, _)| !c.is_empty());
        if any_coll {
            if per_rank.len() != *nranks {
                return Err(WorldError::Mismatch(format!(
                    "communicator #{comm}: {} of its {nranks} ranks issued collectives in this group; every rank must take part",
                    per_rank.len()
                )));
            }
            let k = per_rank.values().next().map_or(0, |(_, c, _)| c.len());
            if per_rank.values().any(|(_, c, _)| c.len() != k) {
                return Err(WorldError::Mismatch(format!(
                    "communicator #{comm}: the ranks issued different numbers of collectives in this group"
                )));
            }
            for i in 0..k {
                let calls: Vec<(&SimDevice, Call)> = per_rank.values().map(|(d, c, _)| (*d, c[i])).collect();
                collective(*comm, &calls)?;
            }
        }
        point_to_point(*comm, per_rank)?;
    }
    Ok(())
}

fn shape(c: &Call) -> (std::mem::Discriminant<Call>, usize, Dtype, Option<Op>, i32) {
    let d = std::mem::discriminant(c);
    match *c {
        Call::AllReduce { count, dtype, op, .. } | Call::ReduceScatter { count, dtype, op, .. } => {
            (d, count, dtype, Some(op), -1)
        }
        Call::Reduce { count, dtype, op, root, .. } => (d, count, dtype, Some(op), root),
        Call::Broadcast { count, dtype, root, .. } => (d, count, dtype, None, root),
        Call::AllGather { count, dtype, .. } => (d, count, dtype, None, -1),
        Call::Send { count, dtype, peer, .. } | Call::Recv { count, dtype, peer, .. } => (d, count, dtype, None, peer),
    }
}

/// One collective over all ranks of a communicator, rank `i` at `calls[i]`.
fn collective(comm: u64, calls: &[(&SimDevice, Call)]) -> Result<(), WorldError> {
    let first = shape(&calls[0].1);
    if calls.iter().any(|(_, c)| shape(c) != first) {
        return Err(WorldError::Mismatch(format!(
            "communicator #{comm}: the ranks' calls differ ({}): the same collective with the same count, type, operation and root on every rank",
            calls.iter().map(|(_, c)| format!("{c:?}")).collect::<Vec<_>>().join(" / ")
        )));
    }
    let n = calls.len();
    match calls[0].1 {
        Call::AllReduce { count, dtype, op, .. } => {
            let bytes = count * dtype.size();
            let parts = calls
                .iter()
                .map(|(d, c)| match c {
                    Call::AllReduce { send, .. } => read(d, *send, bytes),
                    _ => unreachable_shape(),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let out = reduce(&parts, dtype, op)?;
            for (d, c) in calls {
                if let Call::AllReduce { recv, .. } = c {
                    write(d, *recv, &out)?;
                }
            }
        }
        Call::Reduce { count, dtype, op, root, .. } => {
            let bytes = count * dtype.size();
            let parts = calls
                .iter()
                .map(|(d, c)| match c {
                    Call::Reduce { send, .. } => read(d, *send, bytes),
                    _ => unreachable_shape(),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let out = reduce(&parts, dtype, op)?;
            if let (d, Call::Reduce { recv, .. }) = &calls[root as usize] {
                write(d, *recv, &out)?;
            }
        }
        Call::Broadcast { count, dtype, root, .. } => {
            let bytes = count * dtype.size();
            let data = match &calls[root as usize] {
                (d, Call::Broadcast { send, .. }) => read(d, *send, bytes)?,
                _ => return unreachable_shape(),
            };
            for (d, c) in calls {
                if let Call::Broadcast { recv, .. } = c {
                    write(d, *recv, &data)?;
                }
            }
        }
        Call::AllGather { count, dtype, .. } => {
            let bytes = count * dtype.size();
            let mut all = Vec::with_capacity(bytes * n);
            for (d, c) in calls {
                if let Call::AllGather { send, .. } = c {
                    all.extend(read(d, *send, bytes)?);
                }
            }
            for (d, c) in calls {
                if let Call::AllGather { recv, .. } = c {
                    write(d, *recv, &all)?;
                }
            }
        }
        Call::ReduceScatter { count, dtype, op, .. } => {
            let chunk = count * dtype.size();
            let parts = calls
                .iter()
                .map(|(d, c)| match c {
                    Call::ReduceScatter { send, .. } => read(d, *send, chunk * n),
                    _ => unreachable_shape(),
                })
                .collect::<Result<Vec<_>, _>>()?;
            let out = reduce(&parts, dtype, op)?;
            for (r, (d, c)) in calls.iter().enumerate() {
                if let Call::ReduceScatter { recv, .. } = c {
                    write(d, *recv, &out[r * chunk..(r + 1) * chunk])?;
                }
            }
        }
        Call::Send { .. } | Call::Recv { .. } => {}
    }
    Ok(())
}

fn unreachable_shape<T>() -> Result<T, WorldError> {
    Err(WorldError::Mismatch("internal: calls of one shape differ in kind".into()))
}

/// Matches each rank's sends with its peers' receives, in order, and copies.
fn point_to_point(comm: u64, per_rank: &BTreeMap<usize, (&SimDevice, Vec<Call>, Vec<Call>)>) -> Result<(), WorldError> {
    // (from, to) -> (address, count, type) of each message, in issue order.
    type Messages = BTreeMap<(usize, usize), Vec<(u64, usize, Dtype)>>;
    let mut sends: Messages = BTreeMap::new();
    let mut recvs: Messages = BTreeMap::new();
    for (rank, (_, _, p2p)) in per_rank {
        for c in p2p {
            match *c {
                Call::Send { send, count, dtype, peer } => {
                    sends.entry((*rank, peer as usize)).or_default().push((send, count, dtype))
                }
                Call::Recv { recv, count, dtype, peer } => {
                    recvs.entry((peer as usize, *rank)).or_default().push((recv, count, dtype))
                }
                _ => {}
            }
        }
    }
    let keys: std::collections::BTreeSet<(usize, usize)> = sends.keys().chain(recvs.keys()).copied().collect();
    for (from, to) in keys {
        let s = sends.get(&(from, to)).map_or(&[][..], |v| &v[..]);
        let r = recvs.get(&(from, to)).map_or(&[][..], |v| &v[..]);
        if s.len() != r.len() {
            return Err(WorldError::Mismatch(format!(
                "communicator #{comm}: rank {from} sends {} message(s) to rank {to}, which receives {}; every send needs its receive in the same group",
                s.len(),
                r.len()
            )));
        }
        let (Some((src_dev, _, _)), Some((dst_dev, _, _))) = (per_rank.get(&from), per_rank.get(&to)) else {
            return Err(WorldError::Mismatch(format!("communicator #{comm}: rank {from} or {to} is not in the group")));
        };
        for ((sa, sc, sd), (ra, rc, rd)) in s.iter().zip(r) {
            if sc != rc || sd != rd {
                return Err(WorldError::Mismatch(format!(
                    "communicator #{comm}: rank {from} sends {sc} x {sd:?} to rank {to}, which receives {rc} x {rd:?}"
                )));
            }
            let data = read(src_dev, *sa, sc * sd.size())?;
            write(dst_dev, *ra, &data)?;
        }
    }
    Ok(())
}
