//! Communicators: one rank per device, made and destroyed outside any capture.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

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
        const DTYPE: crate::device::coll::Dtype;
    }
}

macro_rules! elem {
    ($($t:ty => $d:ident),*) => {$(
        impl sealed::Sealed for $t {
            const DTYPE: crate::device::coll::Dtype = crate::device::coll::Dtype::$d;
        }
        impl NcclElem for $t {}
    )*};
}
elem!(f32 => F32, f64 => F64, i32 => I32, u32 => U32, i64 => I64, u64 => U64, u8 => U8);
elem!(crate::half::F16 => F16, crate::half::Bf16 => Bf16);

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
    pub(crate) fn raw(self) -> crate::device::coll::Op {
        use crate::device::coll::Op;
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
/// Made for every device of one process at once with [`Comm::init_all`], from idle
/// streams: creating a communicator allocates device memory, which would invalidate a
/// capture, so it is not possible from a capturing stream (a compile error). A graph that
/// records a collective borrows the communicator, so it cannot be dropped while the graph
/// lives; dropping it destroys it (`ncclCommDestroy`), deferred until the end of any capture
/// active on its device then.
pub struct Comm {
    pub(crate) ctx: Context,
    /// The NCCL handle on a GPU; 0 on the simulated device.
    pub(crate) raw: usize,
    pub(crate) rank: usize,
    pub(crate) nranks: usize,
    /// Unique in the process: which ranks belong together.
    pub(crate) id: u64,
}

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
            .map(|(rank, (ctx, raw))| Comm { ctx, raw, rank, nranks: n, id })
            .collect())
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

impl Drop for Comm {
    fn drop(&mut self) {
        if self.raw == 0 {
            return;
        }
        // Destroying frees device memory: after any capture on the device has ended.
        if let Some(crate::registry::Deferred::NcclComm(c)) =
            self.ctx.reg().defer(crate::registry::Deferred::NcclComm(self.raw))
        {
            crate::raw::nccl::destroy(c);
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
