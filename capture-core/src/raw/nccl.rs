//! NCCL through cudarc's `nccl::result` layer, loaded at run time like the driver.
//!
//! Rules from NCCL's user guide
//! (<https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/>): one thread driving several
//! devices issues their collectives inside `ncclGroupStart`/`ncclGroupEnd`; a collective is
//! a kernel on the given stream, so it is recorded by a stream capture like any other.

use std::ffi::c_void;

use cudarc::nccl::{result, sys};

use crate::device::coll::{Call, Dtype, Op};

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

/// Destroys a communicator made by [`init_all`], once (its owner's `Drop`, or the registry
/// after a capture); a failure is logged.
pub(crate) fn destroy(comm: usize) {
    // SAFETY: `comm` came from `init_all` and its only owner gives it up here.
    if let Err(f) = unsafe { comm_destroy(comm) } {
        log::error!("capture-core: ncclCommDestroy failed: {} ({})", f.code, f.text);
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
