//! NCCL through cudarc's `nccl::result` layer, loaded at run time like the driver.
//!
//! Rules from NCCL's user guide
//! (<https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/>): one thread driving several
//! devices issues their collectives inside `ncclGroupStart`/`ncclGroupEnd`; a collective is
//! a kernel on the given stream, so it is recorded by a stream capture like any other.

use std::ffi::c_void;

use cudarc::nccl::{result, sys};

use crate::raw::coll::{Call, Dtype, Op};

/// An NCCL error: the `ncclResult_t` value and NCCL's text for it.
pub(crate) struct NcclFail {
    pub code: u32,
    pub text: String,
}

type R<T> = Result<T, NcclFail>;

fn fail(e: result::NcclError) -> NcclFail {
    let code = e.0 as u32;
    // SAFETY: `ncclGetErrorString` returns a static, NUL-terminated string for any code.
    let text = unsafe {
        let p = sys::ncclGetErrorString(e.0);
        if p.is_null() {
            String::new()
        } else {
            std::ffi::CStr::from_ptr(p).to_string_lossy().into_owned()
        }
    };
    NcclFail { code, text }
}

/// Whether libnccl can be loaded (tries to `dlopen` it; no other precondition). Without
/// `dynamic-loading` the application linked it, so it is.
pub(crate) fn present() -> bool {
    #[cfg(feature = "dynamic-loading")]
    {
        // SAFETY: `is_culib_present` only tries to dlopen the library.
        unsafe { sys::is_culib_present() }
    }
    #[cfg(not(feature = "dynamic-loading"))]
    {
        true
    }
}

/// NCCL's version code (e.g. 22703 for 2.27.3).
pub(crate) fn version() -> R<i32> {
    result::get_nccl_version().map_err(fail)
}

/// One communicator per device ordinal in `ordinals`, rank `i` on `ordinals[i]`. The safe
/// layer has checked that each ordinal is a present device, listed once, and that no capture
/// prohibits allocation.
pub(crate) fn init_all(ordinals: &[i32]) -> R<Vec<usize>> {
    // SAFETY: the caller's checks above; NCCL writes one handle per ordinal.
    unsafe { comm_init_all(ordinals) }
}

/// Releases a communicator its owner gives up (its `Drop`, or the registry after a
/// capture), once: destroyed when it is ready, aborted when it is in error or an operation is
/// still in progress — where `ncclCommDestroy` would return early, leaking it and leaving
/// the calling thread inside an NCCL group. A failure is logged.
pub(crate) fn release(comm: usize) {
    if let Err((op, f)) = release_checked(comm) {
        log::error!("capture-core: {op} failed: {} ({})", f.code, f.text);
    }
}

/// [`release`], reporting the outcome: NCCL's destroy error, or the state that made it an
/// abort instead.
pub(crate) fn release_checked(comm: usize) -> Result<(), (&'static str, NcclFail)> {
    let aborted = "ncclCommDestroy (aborted instead)";
    match state(comm) {
        // SAFETY: `comm` is live and its only owner gives it up here.
        Ok(true) => unsafe { comm_destroy(comm) }.map_err(|f| ("ncclCommDestroy", f)),
        Ok(false) => {
            abort(comm);
            Err((aborted, NcclFail { code: 7, text: "an operation is still in progress".into() }))
        }
        Err(f) => {
            abort(comm);
            Err((aborted, f))
        }
    }
}

/// Issues a checked group: `ncclGroupStart`, each `(call, comm, stream)`, `ncclGroupEnd`.
/// The safe layer has checked every call: communicator and stream of the same device, made
/// by this crate and live (borrowed by the caller), buffers of that device, live for the
/// call's lifetime (borrowed), lengths matching the count and the world size.
pub(crate) fn issue_group(calls: &[(Call, usize, usize)]) -> Result<(), (&'static str, NcclFail)> {
    group_start().map_err(|f| ("ncclGroupStart", f))?;
    let mut first = None;
    for (call, comm, stream) in calls {
        // SAFETY: the checks listed above.
        if let Err(f) = unsafe { issue(call, *comm, *stream) } {
            first.get_or_insert((call.name(), f));
        }
    }
    // The group is always closed, so NCCL's per-thread group state stays consistent.
    let end = group_end();
    match (first, end) {
        (Some(e), _) => Err(e),
        (None, Err(f)) => Err(("ncclGroupEnd", f)),
        (None, Ok(())) => Ok(()),
    }
}

/// # Safety
/// Each ordinal must name a present device; no capture may be active (initialisation
/// allocates device memory).
unsafe fn comm_init_all(ordinals: &[i32]) -> R<Vec<usize>> {
    let mut comms: Vec<sys::ncclComm_t> = vec![std::ptr::null_mut(); ordinals.len()];
    let n = i32::try_from(ordinals.len()).map_err(|_| NcclFail { code: 4, text: "too many ranks".into() })?;
    // SAFETY: `comms` has room for `n` handles; `ordinals` holds `n` device ordinals.
    unsafe { result::comm_init_all(comms.as_mut_ptr(), n, ordinals.as_ptr()) }.map_err(fail)?;
    Ok(comms.into_iter().map(|c| c as usize).collect())
}

/// # Safety
/// `comm` must be a live communicator, not used afterwards; no capture may be active.
unsafe fn comm_destroy(comm: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::comm_destroy(comm as sys::ncclComm_t) }.map(|_| ()).map_err(fail)
}

/// A new communicator id (`ncclGetUniqueId`): 128 bytes naming a bootstrap address of this
/// process, to be handed to every rank.
pub(crate) fn unique_id() -> R<[u8; 128]> {
    let id = result::get_uniqueid().map_err(fail)?;
    Ok(id.internal.map(|c| c as u8))
}

/// NCCL's "not set" value for a config field (`NCCL_CONFIG_UNDEF_INT`).
const UNDEF: i32 = i32::MIN;

/// Starts making rank `rank` of `nranks` of the communicator `id`, nonblocking (NCCL's
/// `blocking = 0` config): the handle comes back at once, and [`state`] says when it is
/// ready — so a peer that never joins is a timeout, not a hang. The caller has bound the
/// rank's device's context to this thread (NCCL takes the current device), checked `rank <
/// nranks`, and that no capture prohibits allocation.
pub(crate) fn init_rank(nranks: i32, id: &[u8; 128], rank: i32) -> R<usize> {
    let version = u32::try_from(version()?).unwrap_or(0);
    let mut uid = sys::ncclUniqueId { internal: [0; 128] };
    for (d, s) in uid.internal.iter_mut().zip(id) {
        *d = *s as std::ffi::c_char;
    }
    let mut comm: sys::ncclComm_t = std::ptr::null_mut();
    // SAFETY: every field of the config is an integer or a pointer, for which all zero bits
    // are valid; the fields are then set as NCCL_CONFIG_INITIALIZER does (size, magic,
    // version, every other field "not set"), except `blocking`. The library reads at most
    // `size` bytes and only the fields its own version has (`version` is the library's). `comm`
    // receives the handle; `uid` and `config` outlive the call.
    unsafe {
        let mut config: sys::ncclConfig_t = std::mem::zeroed();
        config.size = std::mem::size_of::<sys::ncclConfig_t>();
        config.magic = 0xcafe_beef;
        config.version = version;
        config.blocking = 0;
        config.cgaClusterSize = UNDEF;
        config.minCTAs = UNDEF;
        config.maxCTAs = UNDEF;
        config.splitShare = UNDEF;
        config.trafficClass = UNDEF;
        config.collnetEnable = UNDEF;
        config.CTAPolicy = UNDEF;
        config.shrinkShare = UNDEF;
        config.nvlsCTAs = UNDEF;
        config.nChannelsPerNetPeer = UNDEF;
        config.nvlinkCentricSched = UNDEF;
        config.graphUsageMode = UNDEF;
        config.numRmaCtx = UNDEF;
        config.maxP2pPeers = UNDEF;
        result::comm_init_rank_config(&mut comm, nranks, uid, rank, &mut config).map_err(fail)?;
    }
    Ok(comm as usize)
}

/// Whether a communicator's last operations are done: `Ok(true)` ready, `Ok(false)` still
/// in progress (`ncclCommGetAsyncError`), or its error.
pub(crate) fn state(comm: usize) -> R<bool> {
    let mut r = sys::ncclResult_t::ncclSuccess;
    // SAFETY: `comm` is a live communicator (its owner borrows it); `r` receives the state.
    unsafe { sys::ncclCommGetAsyncError(comm as sys::ncclComm_t, &mut r) }.result().map_err(fail)?;
    match r.result() {
        Ok(result::NcclStatus::InProgress) => Ok(false),
        Ok(_) => Ok(true),
        Err(e) => Err(fail(e)),
    }
}

/// Aborts a communicator (`ncclCommAbort`): its kernels stop waiting, its resources are
/// freed, and the handle is dead. Its owner never uses or destroys it afterwards.
pub(crate) fn abort(comm: usize) {
    // SAFETY: `comm` is live and its owner gives it up here (it is marked aborted first).
    if let Err(e) = unsafe { result::comm_abort(comm as sys::ncclComm_t) } {
        let f = fail(e);
        log::error!("capture-core: ncclCommAbort failed: {} ({})", f.code, f.text);
    }
}

/// Starts a group of NCCL calls.
fn group_start() -> R<()> {
    result::group_start().map(|_| ()).map_err(fail)
}

/// Ends a group: NCCL launches the group's collectives.
fn group_end() -> R<()> {
    result::group_end().map(|_| ()).map_err(fail)
}

fn dtype(d: Dtype) -> sys::ncclDataType_t {
    use sys::ncclDataType_t as T;
    match d {
        Dtype::I32 => T::ncclInt32,
        Dtype::U32 => T::ncclUint32,
        Dtype::I64 => T::ncclInt64,
        Dtype::U64 => T::ncclUint64,
        Dtype::F16 => T::ncclFloat16,
        Dtype::Bf16 => T::ncclBfloat16,
        Dtype::F32 => T::ncclFloat32,
        Dtype::F64 => T::ncclFloat64,
        Dtype::U8 => T::ncclUint8,
    }
}

fn op(o: Op) -> sys::ncclRedOp_t {
    use sys::ncclRedOp_t as O;
    match o {
        Op::Sum => O::ncclSum,
        Op::Prod => O::ncclProd,
        Op::Max => O::ncclMax,
        Op::Min => O::ncclMin,
        Op::Avg => O::ncclAvg,
    }
}

/// Issues `call` on `comm` into `stream`.
///
/// # Safety
/// `comm` and `stream` must be live and of the same device; the buffers must be live
/// device allocations of that device, large enough for the call (the safe layer checks the
/// lengths), and stay live until the call completes (or, captured, while the graph lives).
unsafe fn issue(call: &Call, comm: usize, stream: usize) -> R<()> {
    let c = comm as sys::ncclComm_t;
    let s = stream as sys::cudaStream_t;
    let p = |a: u64| a as *const c_void;
    let m = |a: u64| a as *mut c_void;
    // SAFETY: forwarded to the caller.
    let r = unsafe {
        match *call {
            Call::AllReduce { send, recv, count, dtype: d, op: o } => {
                result::all_reduce(p(send), m(recv), count, dtype(d), op(o), c, s)
            }
            Call::Broadcast { send, recv, count, dtype: d, root } => {
                result::broadcast(p(send), m(recv), count, dtype(d), root, c, s)
            }
            Call::Reduce { send, recv, count, dtype: d, op: o, root } => {
                result::reduce(p(send), m(recv), count, dtype(d), op(o), root, c, s)
            }
            Call::AllGather { send, recv, count, dtype: d } => {
                result::all_gather(p(send), m(recv), count, dtype(d), c, s)
            }
            Call::ReduceScatter { send, recv, count, dtype: d, op: o } => {
                result::reduce_scatter(p(send), m(recv), count, dtype(d), op(o), c, s)
            }
            Call::Send { send, count, dtype: d, peer } => result::send(p(send), count, dtype(d), peer, c, s),
            Call::Recv { recv, count, dtype: d, peer } => result::recv(m(recv), count, dtype(d), peer, c, s),
        }
    };
    r.map(|_| ()).map_err(fail)
}
