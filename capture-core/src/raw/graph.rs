//! Raw graph calls for issue #11, parts 4 and 5: the driver's DOT picture of a graph,
//! instantiation with flags, and the graph handles as cudarc's types.
//!
//! NVIDIA's references for the rules below:
//! <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html> (`cuGraphDebugDotPrint`,
//! `cuGraphInstantiateWithParams`, `cuGraphInstantiateWithFlags`).

use std::ffi::CString;
use std::mem::MaybeUninit;
use std::path::Path;

use cudarc::driver::sys;

use super::{code, stream, R};
use crate::raw::code::DriverCode;

/// The graph handle as cudarc's type. Only a cast: nothing is dereferenced.
pub(crate) fn graph_handle(g: usize) -> sys::CUgraph {
    g as sys::CUgraph
}

/// The executable-graph handle as cudarc's type. Only a cast: nothing is dereferenced.
pub(crate) fn exec_handle(e: usize) -> sys::CUgraphExec {
    e as sys::CUgraphExec
}

/// The `CUgraphInstantiate_flags` bits: auto-free-on-launch, upload, device launch, use node
/// priority.
pub(crate) fn instantiate_flag_bits(auto_free: bool, upload: bool, device_launch: bool, node_priority: bool) -> u64 {
    use sys::CUgraphInstantiate_flags as F;
    let mut bits = 0u64;
    for (on, f) in [
        (auto_free, F::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
        (upload, F::CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD),
        (device_launch, F::CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH),
        (node_priority, F::CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY),
    ] {
        if on {
            bits |= u64::from(f.0);
        }
    }
    bits
}

/// Instantiates `g` with `flags` (`cuGraphInstantiateWithParams`); with the upload flag the
/// executable graph is uploaded into `upload` once instantiated.
///
/// # Safety
/// `g` must be a live graph of the current context; `upload`, when given, a live stream of
/// it. The upload flag requires `upload` (the driver refuses it otherwise).
pub(crate) unsafe fn graph_instantiate_with(g: usize, flags: u64, upload: Option<usize>) -> R<usize> {
    let mut params = MaybeUninit::<sys::CUDA_GRAPH_INSTANTIATE_PARAMS>::zeroed();
    let p = params.as_mut_ptr();
    // SAFETY: `p` points at a zeroed struct we own; only plain fields are written through it.
    // `result_out` (an enum the driver writes) is never read back here, so a value newer than
    // cudarc's enum cannot be observed as an invalid discriminant.
    unsafe {
        std::ptr::addr_of_mut!((*p).flags).write(flags);
        std::ptr::addr_of_mut!((*p).hUploadStream).write(upload.map_or(std::ptr::null_mut(), stream));
    }
    let mut exec: sys::CUgraphExec = std::ptr::null_mut();
    // SAFETY: `exec` and `params` are writable and outlive the call; handles forwarded to the
    // caller.
    code(unsafe { sys::cuGraphInstantiateWithParams(&mut exec, g as sys::CUgraph, p) })?;
    Ok(exec as usize)
}

/// Writes the driver's DOT description of `g` to `path` (`cuGraphDebugDotPrint`, every
/// debug flag: kernel names and parameters, copy, memset and memory-node parameters, handles).
///
/// # Safety
/// `g` must be a live graph.
pub(crate) unsafe fn graph_debug_dot(g: usize, path: &Path) -> R<()> {
    let text = path.to_str().ok_or(DriverCode::INVALID_VALUE)?;
    let c = CString::new(text).map_err(|_| DriverCode::INVALID_VALUE)?;
    let verbose = sys::CUgraphDebugDot_flags::CU_GRAPH_DEBUG_DOT_FLAGS_VERBOSE as u32;
    // SAFETY: `c` is a NUL-terminated path that outlives the call; `g` forwarded to the caller.
    code(unsafe { sys::cuGraphDebugDotPrint(g as sys::CUgraph, c.as_ptr(), verbose) })
}
