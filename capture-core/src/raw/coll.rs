//! Collective calls as plain data: what the safe layer checked and hands to NCCL (on a GPU)
//! or to the simulated world (on the simulated device).
#![cfg_attr(not(feature = "nccl"), allow(dead_code))]

/// Element types of collectives (not public API: named only by the sealed `NcclElem`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum Dtype {
    I32,
    U32,
    I64,
    U64,
    F16,
    Bf16,
    F32,
    F64,
    U8,
}

impl Dtype {
    /// Bytes per element.
    pub(crate) fn size(self) -> usize {
        match self {
            Dtype::U8 => 1,
            Dtype::F16 | Dtype::Bf16 => 2,
            Dtype::I32 | Dtype::U32 | Dtype::F32 => 4,
            Dtype::I64 | Dtype::U64 | Dtype::F64 => 8,
        }
    }
}

/// Reductions.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Sum,
    Prod,
    Max,
    Min,
    Avg,
}

/// One NCCL call: device addresses, element count, type, and the rank arguments.
#[derive(Copy, Clone, Debug, PartialEq)]
pub(crate) enum Call {
    AllReduce { send: u64, recv: u64, count: usize, dtype: Dtype, op: Op },
    Broadcast { send: u64, recv: u64, count: usize, dtype: Dtype, root: i32 },
    Reduce { send: u64, recv: u64, count: usize, dtype: Dtype, op: Op, root: i32 },
    AllGather { send: u64, recv: u64, count: usize, dtype: Dtype },
    ReduceScatter { send: u64, recv: u64, count: usize, dtype: Dtype, op: Op },
    Send { send: u64, count: usize, dtype: Dtype, peer: i32 },
    Recv { recv: u64, count: usize, dtype: Dtype, peer: i32 },
}

impl Call {
    /// The NCCL function's name.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Call::AllReduce { .. } => "ncclAllReduce",
            Call::Broadcast { .. } => "ncclBroadcast",
            Call::Reduce { .. } => "ncclReduce",
            Call::AllGather { .. } => "ncclAllGather",
            Call::ReduceScatter { .. } => "ncclReduceScatter",
            Call::Send { .. } => "ncclSend",
            Call::Recv { .. } => "ncclRecv",
        }
    }
    /// Whether it is point-to-point (send or receive).
    pub(crate) fn is_p2p(&self) -> bool {
        matches!(self, Call::Send { .. } | Call::Recv { .. })
    }
}

/// A collective as one rank's simulated graph records it.
#[derive(Clone, Debug)]
pub(crate) struct CollNode {
    /// The communicator (unique in the process).
    pub comm: u64,
    /// This rank, and the communicator's size.
    pub rank: usize,
    pub nranks: usize,
    /// The group the call was issued in (unique in the process): a rank's consecutive
    /// nodes of one group run together.
    pub group: u64,
    pub call: Call,
    /// For a communicator whose other ranks are in other processes (or threads): what the
    /// rank shares with its own `Comm` — the timeout and the abort flag.
    pub link: Option<std::sync::Arc<Link>>,
}

/// What a rank of a communicator made by `Comm::init_rank` shares between its `Comm` and
/// the nodes of its graphs: how long to wait for the peers, whether the communicator was
/// aborted (after a timeout), and how many rounds of collectives it has taken part in
/// (the simulated world meets the ranks' k-th rounds together).
#[derive(Debug)]
pub(crate) struct Link {
    pub rank: usize,
    timeout_ns: std::sync::atomic::AtomicU64,
    aborted: std::sync::atomic::AtomicBool,
    pub rounds: std::sync::atomic::AtomicU64,
    /// While `ncclCommAbort` runs on its own thread: the receiver that reports its end
    /// (the thread drops its sender when the abort returns).
    aborting: std::sync::Mutex<Option<std::sync::mpsc::Receiver<()>>>,
}

impl Link {
    pub(crate) fn new(rank: usize, timeout: std::time::Duration) -> Self {
        let l = Self {
            rank,
            timeout_ns: std::sync::atomic::AtomicU64::new(0),
            aborted: std::sync::atomic::AtomicBool::new(false),
            rounds: std::sync::atomic::AtomicU64::new(0),
            aborting: std::sync::Mutex::new(None),
        };
        l.set_timeout(timeout);
        l
    }
    pub(crate) fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_nanos(self.timeout_ns.load(std::sync::atomic::Ordering::Relaxed))
    }
    pub(crate) fn set_timeout(&self, t: std::time::Duration) {
        let ns = u64::try_from(t.as_nanos()).unwrap_or(u64::MAX);
        self.timeout_ns.store(ns, std::sync::atomic::Ordering::Relaxed);
    }
    pub(crate) fn is_aborted(&self) -> bool {
        self.aborted.load(std::sync::atomic::Ordering::Acquire)
    }
    /// Marks it aborted; `true` for the first caller only (who then aborts the handle).
    pub(crate) fn abort(&self) -> bool {
        !self.aborted.swap(true, std::sync::atomic::Ordering::AcqRel)
    }
    /// Keeps the receiver that reports the end of the abort running on another thread.
    pub(crate) fn set_aborting(&self, done: std::sync::mpsc::Receiver<()>) {
        if let Ok(mut slot) = self.aborting.lock() {
            *slot = Some(done);
        }
    }
    /// Waits up to `limit` for an abort running on another thread to return; `false` if it
    /// is still running then. `true` at once when none runs.
    pub(crate) fn wait_aborted(&self, limit: std::time::Duration) -> bool {
        let Some(done) = self.aborting.lock().ok().and_then(|mut slot| slot.take()) else {
            return true;
        };
        !matches!(done.recv_timeout(limit), Err(std::sync::mpsc::RecvTimeoutError::Timeout))
    }
}
