//! The raw layer: every `unsafe` call into cudarc's `sys`/`result` modules lives here, as a
//! thin function with a `# Safety` section, each block with a `// SAFETY:` comment.
//!
//! Handles cross this boundary as integers (`usize`/`u64`); turning an integer back into a
//! driver handle is a plain cast, and only the driver ever dereferences it.
//!
//! Rules these functions rely on come from NVIDIA's driver API reference:
//! <https://docs.nvidia.com/cuda/cuda-driver-api/>.

#![allow(unsafe_code)]

#[cfg(feature = "cublas")]
pub(crate) mod blas;
pub(crate) mod code;
pub(crate) mod coll;
pub(crate) mod cuda;
pub(crate) mod graph;
pub(crate) mod half;
pub(crate) mod handles;
pub(crate) mod interop;
#[cfg(feature = "nccl")]
pub(crate) mod nccl;
pub(crate) mod site;

use std::ffi::{c_void, CString};
use std::mem::MaybeUninit;

use cudarc::driver::{result, sys};

use code::DriverCode;
use handles::{CaptureMode, CaptureStatus, CondKind, NodeCounts};

type R<T> = Result<T, DriverCode>;

fn code(r: sys::CUresult) -> R<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(DriverCode(r as u32))
    }
}

fn err(e: result::DriverError) -> DriverCode {
    DriverCode(e.0 as u32)
}

fn stream(s: usize) -> sys::CUstream {
    s as sys::CUstream
}

/// Whether `libcuda` can be loaded. Never panics (cudarc's loader panics when the library is
/// missing, so every other function here must only be called after this returned `true`).
///
/// With the `dynamic-loading` feature (the default) this tries to load the library. Without
/// it, the application's cudarc features decide how libcuda is found; when they link it
/// (`dynamic-linking`, as candle does) the program could not have started without it, so it
/// is present. An application that turns capture-core's default features off but loads CUDA
/// at run time should enable capture-core's `dynamic-loading` too, so that a missing library
/// is detected here instead of panicking inside cudarc.
pub(crate) fn driver_present() -> bool {
    #[cfg(feature = "dynamic-loading")]
    {
        // SAFETY: `is_culib_present` only tries to dlopen the library; it has no preconditions.
        unsafe { sys::is_culib_present() }
    }
    #[cfg(not(feature = "dynamic-loading"))]
    {
        true
    }
}

/// # Safety
/// `ptr` must be a live device allocation of at least `bytes` bytes in the current context.
pub(crate) unsafe fn mem_free(ptr: u64) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::free_sync(ptr) }.map_err(err)
}

/// Allocates `bytes` of device memory synchronously. The contents are undefined.
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn mem_alloc(bytes: usize) -> R<u64> {
    // SAFETY: the returned memory is untyped device memory; nothing is read from it here.
    unsafe { result::malloc_sync(bytes) }.map_err(err)
}

/// # Safety
/// `s` must be a live stream of the current context.
pub(crate) unsafe fn mem_alloc_async(bytes: usize, s: usize) -> R<u64> {
    // SAFETY: stream validity forwarded to the caller; the memory is untyped.
    unsafe { result::malloc_async(stream(s), bytes) }.map_err(err)
}

/// # Safety
/// `ptr` must be a live device allocation; `s` a live stream; nothing may use `ptr` after
/// the free in stream order.
pub(crate) unsafe fn mem_free_async(ptr: u64, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::free_async(ptr, stream(s)) }.map_err(err)
}

/// Allocates page-locked host memory (`cuMemHostAlloc`).
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn host_alloc(bytes: usize) -> R<usize> {
    // SAFETY: flags 0 = portable-less default; the memory is untyped bytes.
    unsafe { result::malloc_host(bytes, 0) }.map(|p| p as usize).map_err(err)
}

/// # Safety
/// `ptr` must come from [`host_alloc`] and not be used afterwards.
pub(crate) unsafe fn host_free(ptr: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::free_host(ptr as *mut c_void) }.map_err(err)
}

/// Allocates managed memory attached globally.
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn managed_alloc(bytes: usize) -> R<u64> {
    // SAFETY: the memory is untyped; CU_MEM_ATTACH_GLOBAL makes it accessible from any stream.
    unsafe { result::malloc_managed(bytes, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL) }.map_err(err)
}

/// Writes `src` into host-visible memory at `dst + offset`.
///
/// # Safety
/// `dst` must be a live pinned or managed allocation of at least `offset + src.len()` bytes,
/// and no device operation may be writing it concurrently.
pub(crate) unsafe fn host_write(dst: usize, offset: usize, src: &[u8]) {
    // SAFETY: bounds and exclusivity are forwarded to the caller; the regions cannot overlap
    // because `src` is a Rust slice and `dst` is driver-allocated memory.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), (dst as *mut u8).add(offset), src.len()) }
}

/// Reads host-visible memory at `src + offset` into `dst`.
///
/// # Safety
/// As [`host_write`], for reading.
pub(crate) unsafe fn host_read(src: usize, offset: usize, dst: &mut [u8]) {
    // SAFETY: as in `host_write`.
    unsafe { std::ptr::copy_nonoverlapping((src as *const u8).add(offset), dst.as_mut_ptr(), dst.len()) }
}

/// Zeroes `bytes` of host-visible memory at `dst`.
///
/// # Safety
/// As [`host_write`], for `bytes` bytes.
pub(crate) unsafe fn host_zero(dst: usize, bytes: usize) {
    // SAFETY: bounds and exclusivity are forwarded to the caller.
    unsafe { std::ptr::write_bytes(dst as *mut u8, 0, bytes) }
}

/// Synchronous host-to-device copy.
///
/// # Safety
/// `dst` must be a live device allocation with room for `src.len()` bytes.
pub(crate) unsafe fn memcpy_htod(dst: u64, src: &[u8]) -> R<()> {
    // SAFETY: forwarded to the caller; the copy is complete when this returns.
    unsafe { result::memcpy_htod_sync(dst, src) }.map_err(err)
}

/// Synchronous device-to-host copy.
///
/// # Safety
/// `src` must be a live device allocation of at least `dst.len()` bytes.
pub(crate) unsafe fn memcpy_dtoh(dst: &mut [u8], src: u64) -> R<()> {
    // SAFETY: forwarded to the caller; the copy is complete when this returns.
    unsafe { result::memcpy_dtoh_sync(dst, src) }.map_err(err)
}

/// # Safety
/// `dst` must be a live device allocation of at least `bytes` bytes.
// Only the probe-conformance tests use the synchronous memset (the driver rule for a
// sync memset during capture); the library's own memsets are stream-ordered.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) unsafe fn memset_d8(dst: u64, value: u8, bytes: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::memset_d8_sync(dst, value, bytes) }.map_err(err)
}

/// # Safety
/// `dst`, `src` (pinned host memory) must stay live until the copy completes — at every
/// replay, if captured; `s` must be a live stream.
pub(crate) unsafe fn memcpy_htod_async(dst: u64, src: usize, bytes: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    code(unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, bytes, stream(s)) })
}

/// # Safety
/// As [`memcpy_htod_async`].
pub(crate) unsafe fn memcpy_dtoh_async(dst: usize, src: u64, bytes: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    code(unsafe { sys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, bytes, stream(s)) })
}

/// # Safety
/// Both allocations live until the copy completes; `s` a live stream.
pub(crate) unsafe fn memcpy_dtod_async(dst: u64, src: u64, bytes: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::memcpy_dtod_async(dst, src, bytes, stream(s)) }.map_err(err)
}

/// # Safety
/// `dst` lives until the memset completes; `s` a live stream.
pub(crate) unsafe fn memset_d8_async(dst: u64, value: u8, bytes: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::memset_d8_async(dst, value, bytes, stream(s)) }.map_err(err)
}

/// Creates a non-blocking stream in the current context.
pub(crate) fn stream_create() -> R<usize> {
    result::stream::create(result::stream::StreamKind::NonBlocking).map(|s| s as usize).map_err(err)
}

/// # Safety
/// `s` must be a live stream not used afterwards.
pub(crate) unsafe fn stream_destroy(s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::stream::destroy(stream(s)) }.map_err(err)
}

/// # Safety
/// `s` must be a live stream.
pub(crate) unsafe fn stream_synchronize(s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::stream::synchronize(stream(s)) }.map_err(err)
}

/// Ok(true) when the stream has no pending work.
///
/// # Safety
/// `s` must be a live stream.
pub(crate) unsafe fn stream_query(s: usize) -> R<bool> {
    // SAFETY: forwarded to the caller.
    match unsafe { sys::cuStreamQuery(stream(s)) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => Err(DriverCode(other as u32)),
    }
}

/// Synchronizes the current context.
pub(crate) fn ctx_synchronize() -> R<()> {
    result::ctx::synchronize().map_err(err)
}

/// (free, total) bytes on the current context's device.
pub(crate) fn mem_info() -> R<(usize, usize)> {
    result::mem_get_info().map_err(err)
}

/// Creates an event; `timing` false adds `CU_EVENT_DISABLE_TIMING`.
pub(crate) fn event_create(timing: bool) -> R<usize> {
    let flags = if timing { sys::CUevent_flags::CU_EVENT_DEFAULT } else { sys::CUevent_flags::CU_EVENT_DISABLE_TIMING };
    result::event::create(flags).map(|e| e as usize).map_err(err)
}

/// # Safety
/// `e` must be a live event not used afterwards.
pub(crate) unsafe fn event_destroy(e: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::event::destroy(e as sys::CUevent) }.map_err(err)
}

/// # Safety
/// `e` and `s` must be live and of the current context.
pub(crate) unsafe fn event_record(e: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::event::record(e as sys::CUevent, stream(s)) }.map_err(err)
}

/// # Safety
/// `e` and `s` must be live.
pub(crate) unsafe fn stream_wait_event(s: usize, e: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::stream::wait_event(stream(s), e as sys::CUevent, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
        .map_err(err)
}

/// Ok(true) when complete.
///
/// # Safety
/// `e` must be live.
pub(crate) unsafe fn event_query(e: usize) -> R<bool> {
    // SAFETY: forwarded to the caller.
    match unsafe { sys::cuEventQuery(e as sys::CUevent) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => Err(DriverCode(other as u32)),
    }
}

/// # Safety
/// `e` must be live.
pub(crate) unsafe fn event_synchronize(e: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::event::synchronize(e as sys::CUevent) }.map_err(err)
}

/// # Safety
/// Both events must be live, created with timing, and recorded.
pub(crate) unsafe fn event_elapsed_ms(start: usize, end: usize) -> R<f32> {
    // SAFETY: forwarded to the caller.
    unsafe { result::event::elapsed(start as sys::CUevent, end as sys::CUevent) }.map_err(err)
}

/// Loads a PTX module from text.
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn module_load(ptx: &str) -> R<usize> {
    let image = CString::new(ptx).map_err(|_| DriverCode::INVALID_VALUE)?;
    // SAFETY: `image` is a NUL-terminated PTX string that outlives the call.
    unsafe { result::module::load_data(image.as_ptr() as *const c_void) }.map(|m| m as usize).map_err(err)
}

/// # Safety
/// `m` must be a live module whose functions are no longer launched or in live graphs.
pub(crate) unsafe fn module_unload(m: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::module::unload(m as sys::CUmodule) }.map_err(err)
}

/// # Safety
/// `m` must be a live module.
pub(crate) unsafe fn module_function(m: usize, name: &str) -> R<usize> {
    let cname = CString::new(name).map_err(|_| DriverCode::INVALID_VALUE)?;
    // SAFETY: `m` is live (caller), `cname` is NUL-terminated and outlives the call.
    unsafe { result::module::get_function(m as sys::CUmodule, cname) }.map(|f| f as usize).map_err(err)
}

/// Launches `f` with one 8-byte slot per parameter.
///
/// # Safety
/// `f` must be a live function whose parameters are, in order, at most 8 bytes each and
/// described by `slots` (validated against the PTX signature by the caller); every device
/// address in `slots` must stay live until the kernel completes — at every replay, if
/// captured; `s` must be a live stream.
#[inline]
pub(crate) unsafe fn launch(
    f: usize,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: u32,
    s: usize,
    slots: &mut [u64],
) -> R<()> {
    const MAX: usize = handles::MAX_KERNEL_ARGS;
    if slots.len() > MAX {
        return Err(DriverCode::INVALID_VALUE);
    }
    let mut ptrs = [std::ptr::null_mut::<c_void>(); MAX];
    for (p, slot) in ptrs.iter_mut().zip(slots.iter_mut()) {
        *p = slot as *mut u64 as *mut c_void;
    }
    // SAFETY: each pointer in `ptrs` points at a live u64 slot for the duration of the call
    // (the driver copies parameter values at launch); the rest is forwarded to the caller.
    unsafe { result::launch_kernel(f as sys::CUfunction, grid, block, shared, stream(s), &mut ptrs[..slots.len()]) }
        .map_err(err)
}

fn mode(m: CaptureMode) -> sys::CUstreamCaptureMode {
    match m {
        CaptureMode::Global => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        CaptureMode::ThreadLocal => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        CaptureMode::Relaxed => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
    }
}

/// # Safety
/// `s` must be a live stream that is not the legacy NULL stream.
pub(crate) unsafe fn begin_capture(s: usize, m: CaptureMode) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::stream::begin_capture(stream(s), mode(m)) }.map_err(err)
}

/// Ends capture and returns the graph (0 when the driver returned none).
///
/// # Safety
/// `s` must be a live stream.
pub(crate) unsafe fn end_capture(s: usize) -> R<usize> {
    // SAFETY: forwarded to the caller.
    unsafe { result::stream::end_capture(stream(s)) }.map(|g| g as usize).map_err(err)
}

/// # Safety
/// `s` must be a live stream.
pub(crate) unsafe fn capture_status(s: usize) -> R<CaptureStatus> {
    // SAFETY: forwarded to the caller.
    let st = unsafe { result::stream::is_capturing(stream(s)) }.map_err(err)?;
    Ok(match st {
        sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => CaptureStatus::None,
        sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE => CaptureStatus::Active,
        _ => CaptureStatus::Invalidated,
    })
}

/// The graph `s` is capturing into, its current dependencies (`n` nodes and edge data,
/// the driver's arrays, valid until the capture changes).
///
/// # Safety
/// `s` must be a live stream.
unsafe fn capture_point(s: usize) -> R<(sys::CUgraph, *const sys::CUgraphNode, *const sys::CUgraphEdgeData, usize)> {
    let mut status = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let mut id = 0u64;
    let mut graph: sys::CUgraph = std::ptr::null_mut();
    let mut deps: *const sys::CUgraphNode = std::ptr::null();
    let mut edges: *const sys::CUgraphEdgeData = std::ptr::null();
    let mut n = 0usize;
    // SAFETY: every out-pointer is valid; `s` is live (caller).
    code(unsafe {
        sys::cuStreamGetCaptureInfo_v3(stream(s), &mut status, &mut id, &mut graph, &mut deps, &mut edges, &mut n)
    })?;
    if status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE {
        return Err(DriverCode::STREAM_CAPTURE_INVALIDATED);
    }
    Ok((graph, deps, edges, n))
}

/// Creates a condition handle in the graph `s` is capturing into, without
/// `CU_GRAPH_COND_ASSIGN_DEFAULT`: the driver assigns it nothing at launch (that assignment
/// cost about 2 µs a launch on an H100, measured), so a kernel must set it before its node
/// reads it.
///
/// # Safety
/// `s` must be a live stream of the current context.
pub(crate) unsafe fn cond_handle(s: usize) -> R<u64> {
    // SAFETY: forwarded.
    let (graph, ..) = unsafe { capture_point(s) }?;
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: writes the current context.
    code(unsafe { sys::cuCtxGetCurrent(&mut ctx) })?;
    let mut handle: sys::CUgraphConditionalHandle = 0;
    // SAFETY: `graph` is the capture's graph (the driver's, live while the capture is).
    code(unsafe { sys::cuGraphConditionalHandleCreate(&mut handle, graph, ctx, 0, 0) })?;
    Ok(handle)
}

/// Adds a conditional node on `handle` at the current end of `s`'s capture — depending on
/// the capture's current dependencies, which then become the node — and returns its body
/// graphs (owned by the node).
///
/// # Safety
/// `s` must be a live, capturing stream of the current context; `handle` made by
/// [`cond_handle`] in the same graph.
pub(crate) unsafe fn cond_add(s: usize, handle: u64, kind: CondKind, bodies: u32) -> R<Vec<usize>> {
    // SAFETY: forwarded.
    let (graph, deps, edges, n) = unsafe { capture_point(s) }?;
    let mut ctx: sys::CUcontext = std::ptr::null_mut();
    // SAFETY: writes the current context.
    code(unsafe { sys::cuCtxGetCurrent(&mut ctx) })?;
    // SAFETY: all-zero bytes are a valid value of this plain C struct (integers, pointers,
    // a union of such); the fields the node needs are set below.
    let mut p: sys::CUgraphNodeParams = unsafe { std::mem::zeroed() };
    p.type_ = sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
    p.__bindgen_anon_1.conditional = sys::CUDA_CONDITIONAL_NODE_PARAMS {
        handle,
        type_: match kind {
            CondKind::If => sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF,
            CondKind::While => sys::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE,
        },
        size: bodies,
        phGraph_out: std::ptr::null_mut(),
        ctx,
    };
    let mut node: sys::CUgraphNode = std::ptr::null_mut();
    // SAFETY: `deps`/`edges` are the driver's arrays of `n` entries for this capture, valid
    // until the capture changes; `p` is a conditional node's parameters.
    code(unsafe { sys::cuGraphAddNode_v2(&mut node, graph, deps, edges, n, &mut p) })?;
    // SAFETY: on success the driver set `phGraph_out` to its array of `bodies` graphs.
    let out = unsafe { p.__bindgen_anon_1.conditional.phGraph_out };
    let graphs: Vec<usize> = if out.is_null() {
        Vec::new()
    } else {
        // SAFETY: `out` holds `bodies` graph handles (checked non-null).
        unsafe { std::slice::from_raw_parts(out, bodies as usize) }.iter().map(|g| *g as usize).collect()
    };
    let flags = sys::CUstreamUpdateCaptureDependencies_flags::CU_STREAM_SET_CAPTURE_DEPENDENCIES as u32;
    // SAFETY: `node` is a node of the capture's graph; one dependency, no edge data.
    code(unsafe { sys::cuStreamUpdateCaptureDependencies_v2(stream(s), &mut node, std::ptr::null(), 1, flags) })?;
    Ok(graphs)
}

/// The driver's API version (e.g. 13000 for CUDA 13.0).
pub(crate) fn driver_version() -> R<i32> {
    let mut v = 0;
    // SAFETY: writes one int.
    code(unsafe { sys::cuDriverGetVersion(&mut v) })?;
    Ok(v)
}

/// Begins capturing `s` into `g` (a conditional node's body graph).
///
/// # Safety
/// `s` must be a live, idle stream; `g` a live body graph.
pub(crate) unsafe fn capture_into(s: usize, g: usize, m: CaptureMode) -> R<()> {
    // SAFETY: forwarded; no dependencies are given (the body starts empty).
    code(unsafe {
        sys::cuStreamBeginCaptureToGraph(stream(s), g as sys::CUgraph, std::ptr::null(), std::ptr::null(), 0, mode(m))
    })
}

/// Counts a graph's nodes by type.
///
/// # Safety
/// `g` must be a live graph.
pub(crate) unsafe fn graph_nodes(g: usize) -> R<NodeCounts> {
    let graph = g as sys::CUgraph;
    let mut n = 0usize;
    // SAFETY: a null node array asks only for the count, written to `n`.
    code(unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut n) })?;
    if n == 0 {
        // An array argument with a count of 0 is INVALID_VALUE: an empty graph has no nodes.
        return Ok(NodeCounts::default());
    }
    let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); n];
    // SAFETY: `nodes` has room for `n` handles; the driver writes at most `n`.
    code(unsafe { sys::cuGraphGetNodes(graph, nodes.as_mut_ptr(), &mut n) })?;
    let mut c = NodeCounts { total: n, ..NodeCounts::default() };
    for node in nodes.iter().take(n) {
        let mut t = MaybeUninit::<sys::CUgraphNodeType>::uninit();
        // SAFETY: `node` is a node of the live graph; `t` is written on success.
        code(unsafe { sys::cuGraphNodeGetType(*node, t.as_mut_ptr()) })?;
        // SAFETY: initialised by the successful call above.
        let t = unsafe { t.assume_init() };
        use sys::CUgraphNodeType as T;
        match t {
            T::CU_GRAPH_NODE_TYPE_KERNEL => c.kernels += 1,
            T::CU_GRAPH_NODE_TYPE_MEMCPY => c.memcpy += 1,
            T::CU_GRAPH_NODE_TYPE_MEMSET => c.memset += 1,
            T::CU_GRAPH_NODE_TYPE_HOST => c.host += 1,
            T::CU_GRAPH_NODE_TYPE_MEM_ALLOC => c.mem_alloc += 1,
            T::CU_GRAPH_NODE_TYPE_MEM_FREE => c.mem_free += 1,
            T::CU_GRAPH_NODE_TYPE_CONDITIONAL => c.conditional += 1,
            _ => c.other += 1,
        }
    }
    Ok(c)
}

/// Whether `addr` is host memory the driver does not know (pageable: not pinned, not
/// managed, not device memory): `cuPointerGetAttribute` refuses such addresses.
fn is_pageable_host(addr: u64) -> bool {
    let mut ty = MaybeUninit::<u32>::uninit();
    // SAFETY: `ty` has room for the attribute (a `CUmemorytype`, an unsigned int); the driver
    // only looks the address up, it does not dereference it.
    let r = unsafe {
        sys::cuPointerGetAttribute(
            ty.as_mut_ptr() as *mut c_void,
            sys::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            addr,
        )
    };
    addr != 0 && r == sys::CUresult::CUDA_ERROR_INVALID_VALUE
}

/// The graph's copy nodes whose host side is pageable memory, as (bytes, to_device). Such a
/// node re-reads (or writes) that host address at every replay, long after the `Vec` it
/// pointed into may be gone: what a cudarc `memcpy_htod` from a `Vec` issued on a capturing
/// stream records.
///
/// # Safety
/// `g` must be a live graph.
pub(crate) unsafe fn graph_host_copies(g: usize) -> R<Vec<(usize, bool)>> {
    let graph = g as sys::CUgraph;
    let mut n = 0usize;
    // SAFETY: a null node array asks only for the count, written to `n`.
    code(unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut n) })?;
    let mut out = Vec::new();
    if n == 0 {
        return Ok(out);
    }
    let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); n];
    // SAFETY: `nodes` has room for `n` handles; the driver writes at most `n`.
    code(unsafe { sys::cuGraphGetNodes(graph, nodes.as_mut_ptr(), &mut n) })?;
    for node in nodes.iter().take(n) {
        let mut t = MaybeUninit::<sys::CUgraphNodeType>::uninit();
        // SAFETY: `node` is a node of the live graph; `t` is written on success.
        code(unsafe { sys::cuGraphNodeGetType(*node, t.as_mut_ptr()) })?;
        // SAFETY: initialised by the successful call above.
        if unsafe { t.assume_init() } != sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_MEMCPY {
            continue;
        }
        let mut p = MaybeUninit::<sys::CUDA_MEMCPY3D>::zeroed();
        // SAFETY: `node` is a memcpy node of the live graph; `p` is written on success.
        code(unsafe { sys::cuGraphMemcpyNodeGetParams(*node, p.as_mut_ptr()) })?;
        // SAFETY: initialised by the successful call above (and zeroed before it).
        let p = unsafe { p.assume_init() };
        use sys::CUmemorytype as M;
        let side = |ty: M, host: u64, dev: u64| match ty {
            M::CU_MEMORYTYPE_HOST => Some(host),
            M::CU_MEMORYTYPE_UNIFIED => Some(dev),
            _ => None,
        };
        let bytes = p.WidthInBytes * p.Height.max(1) * p.Depth.max(1);
        if side(p.srcMemoryType, p.srcHost as u64, p.srcDevice).is_some_and(is_pageable_host) {
            out.push((bytes, true));
        } else if side(p.dstMemoryType, p.dstHost as u64, p.dstDevice).is_some_and(is_pageable_host) {
            out.push((bytes, false));
        }
    }
    Ok(out)
}

/// # Safety
/// `e` and `s` must be live; everything the graph reads must be live until it completes.
pub(crate) unsafe fn graph_launch(e: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::graph::launch(e as sys::CUgraphExec, stream(s)) }.map_err(err)
}

/// # Safety
/// `e` and `s` must be live.
pub(crate) unsafe fn graph_upload(e: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::graph::upload(e as sys::CUgraphExec, stream(s)) }.map_err(err)
}

/// # Safety
/// `e` must be live and not used afterwards.
pub(crate) unsafe fn graph_exec_destroy(e: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::graph::exec_destroy(e as sys::CUgraphExec) }.map_err(err)
}

/// # Safety
/// `g` must be live and not used afterwards.
pub(crate) unsafe fn graph_destroy(g: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::graph::destroy(g as sys::CUgraph) }.map_err(err)
}

/// Updates an executable graph in place from a graph of the same topology. `Ok(false)` when
/// the topology differs (`CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE`): instantiate anew instead.
///
/// # Safety
/// `e` and `g` must be live; `e` must not be running a launch that reads parameters being
/// changed (the driver orders this with launches on streams).
pub(crate) unsafe fn graph_exec_update(e: usize, g: usize) -> R<bool> {
    let mut info = MaybeUninit::<sys::CUgraphExecUpdateResultInfo>::zeroed();
    // SAFETY: handles forwarded to the caller; `info` is writable and outlives the call.
    let r = unsafe { sys::cuGraphExecUpdate_v2(e as sys::CUgraphExec, g as sys::CUgraph, info.as_mut_ptr()) };
    match r {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE => Ok(false),
        other => Err(DriverCode(other as u32)),
    }
}

fn location(to_device: Option<i32>) -> sys::CUmemLocation {
    match to_device {
        Some(id) => sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id },
        None => sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST, id: 0 },
    }
}

/// Advises the driver about a managed range: `preferred` sets the preferred location,
/// otherwise "accessed by"; `to_device` names the device ordinal, `None` the host.
///
/// # Safety
/// `ptr..ptr+bytes` must be a live managed allocation.
pub(crate) unsafe fn mem_advise(ptr: u64, bytes: usize, preferred: bool, to_device: Option<i32>) -> R<()> {
    let advice = if preferred {
        sys::CUmem_advise::CU_MEM_ADVISE_SET_PREFERRED_LOCATION
    } else {
        sys::CUmem_advise::CU_MEM_ADVISE_SET_ACCESSED_BY
    };
    // SAFETY: forwarded to the caller; the location is passed by value.
    code(unsafe { sys::cuMemAdvise_v2(ptr, bytes, advice, location(to_device)) })
}

/// Prefetches a managed range to a device (`Some(ordinal)`) or the host, in stream order.
///
/// # Safety
/// The range must be a live managed allocation until the prefetch completes; `s` live.
pub(crate) unsafe fn mem_prefetch_async(ptr: u64, bytes: usize, to_device: Option<i32>, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    code(unsafe { sys::cuMemPrefetchAsync_v2(ptr, bytes, location(to_device), 0, stream(s)) })
}

/// The device's graph-memory pool figures: (used now, used high, reserved now, reserved high)
/// in bytes, from `cuDeviceGetGraphMemAttribute`.
///
/// # Safety
/// `device` must be a device handle from the driver.
pub(crate) unsafe fn graph_mem_usage(device: sys::CUdevice) -> R<[u64; 4]> {
    use sys::CUgraphMem_attribute as A;
    let mut out = [0u64; 4];
    for (slot, attr) in out.iter_mut().zip([
        A::CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT,
        A::CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
        A::CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
        A::CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH,
    ]) {
        // SAFETY: these four attributes are `cuuint64_t` values; `slot` is a live u64.
        code(unsafe { sys::cuDeviceGetGraphMemAttribute(device, attr, (slot as *mut u64).cast()) })?;
    }
    Ok(out)
}

/// Resets the device's graph-memory high-water marks (`USED_MEM_HIGH`, `RESERVED_MEM_HIGH`).
///
/// # Safety
/// `device` must be a device handle from the driver.
pub(crate) unsafe fn graph_mem_reset_high(device: sys::CUdevice) -> R<()> {
    use sys::CUgraphMem_attribute as A;
    for attr in [A::CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, A::CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH] {
        let mut zero = 0u64;
        // SAFETY: resetting a high-water mark takes a pointer to the value 0 (`cuuint64_t`).
        code(unsafe { sys::cuDeviceSetGraphMemAttribute(device, attr, (&mut zero as *mut u64).cast()) })?;
    }
    Ok(())
}

/// Returns graph memory not used by a graph that is executing or scheduled back to the OS.
///
/// # Safety
/// `device` must be a device handle from the driver.
pub(crate) unsafe fn graph_mem_trim(device: sys::CUdevice) -> R<()> {
    // SAFETY: forwarded to the caller.
    code(unsafe { sys::cuDeviceGraphMemTrim(device) })
}

// SAFETY: `F16` and `Bf16` are `repr(transparent)` wrappers of a `u16`: no padding, and every
// bit pattern is a valid value (NaNs included), so they are plain old data.
unsafe impl bytemuck::Zeroable for half::F16 {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for half::F16 {}
// SAFETY: as above.
unsafe impl bytemuck::Zeroable for half::Bf16 {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for half::Bf16 {}
