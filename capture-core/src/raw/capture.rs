//! Captures and graphs: beginning and ending a capture, conditional nodes, reading a graph's
//! nodes, launching, updating and destroying graphs.

#![allow(unsafe_code)]

#[allow(unused_imports)]
use super::*;

pub(super) fn mode(m: CaptureMode) -> sys::CUstreamCaptureMode {
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
pub(super) unsafe fn capture_point(
    s: usize,
) -> R<(sys::CUgraph, *const sys::CUgraphNode, *const sys::CUgraphEdgeData, usize)> {
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
pub(super) fn is_pageable_host(addr: u64) -> bool {
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
