//! Raw graph inspection for the capture diff (issue #25): a graph's nodes with their
//! parameters, its edges, the allocation an address falls in, and how many nodes a capture
//! has recorded so far.
//!
//! NVIDIA's references: <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html>
//! (`cuGraphGetNodes`, `cuGraphGetEdges_v2`, `cuGraphKernelNodeGetParams`, …),
//! <https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__EXEC.html> (`cuFuncGetParamInfo`,
//! CUDA 12.4+, `cuFuncGetName`), and `cuPointerGetAttribute` for address ranges.

use std::collections::HashMap;
use std::ffi::{c_void, CStr};
use std::mem::MaybeUninit;

use cudarc::driver::sys;

use super::capture::capture_point;
use super::{code, R};

/// A kernel node as the driver holds it.
pub(crate) struct KernelInfo {
    pub name: String,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared: u32,
    /// Each parameter's bytes; `None` when the driver cannot tell their sizes.
    pub params: Option<Vec<Vec<u8>>>,
}

/// A node as the driver holds it, addresses raw.
pub(crate) enum NodeInfo {
    Kernel(KernelInfo),
    /// dst, src, bytes, the source may be host memory, the destination may be host memory.
    Copy {
        dst: u64,
        src: u64,
        bytes: usize,
        src_host: bool,
        dst_host: bool,
    },
    Memset {
        dst: u64,
        value: u32,
        element_size: u32,
        width: usize,
        height: usize,
    },
    MemAlloc {
        ptr: u64,
        bytes: usize,
    },
    MemFree {
        ptr: u64,
    },
    Event,
    Host,
    Conditional,
    Other(String),
}

/// The graph's nodes, in `cuGraphGetNodes` order (the order the capture created them).
///
/// # Safety
/// `g` must be a live graph.
unsafe fn nodes_of(g: sys::CUgraph) -> R<Vec<sys::CUgraphNode>> {
    let mut n = 0usize;
    // SAFETY: a null node array asks only for the count, written to `n`.
    code(unsafe { sys::cuGraphGetNodes(g, std::ptr::null_mut(), &mut n) })?;
    if n == 0 {
        return Ok(Vec::new());
    }
    let mut nodes: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); n];
    // SAFETY: `nodes` has room for `n` handles; the driver writes at most `n`.
    code(unsafe { sys::cuGraphGetNodes(g, nodes.as_mut_ptr(), &mut n) })?;
    nodes.truncate(n);
    Ok(nodes)
}

/// The name of a kernel node's function (or library kernel).
///
/// # Safety
/// `func` and `kern` come from a live kernel node's parameters (either may be null).
unsafe fn kernel_name(func: sys::CUfunction, kern: sys::CUkernel) -> String {
    let mut p: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: `p` is writable; the handles are live (caller). The driver returns a pointer to
    // a NUL-terminated name it owns for the handle's lifetime, copied out below.
    let r = unsafe {
        if !func.is_null() {
            sys::cuFuncGetName(&mut p, func)
        } else if !kern.is_null() {
            sys::cuKernelGetName(&mut p, kern)
        } else {
            return "(unknown kernel)".to_owned();
        }
    };
    if r != sys::CUresult::CUDA_SUCCESS || p.is_null() {
        return "(unnamed kernel)".to_owned();
    }
    // SAFETY: the driver returned a valid NUL-terminated string (checked non-null above).
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

/// Each parameter's (offset, size), from `cuFuncGetParamInfo` (or `cuKernelGetParamInfo`):
/// asked index by index until the driver says there is no such parameter. `None` when it
/// cannot tell (a driver before CUDA 12.4).
///
/// # Safety
/// As [`kernel_name`].
unsafe fn param_layout(func: sys::CUfunction, kern: sys::CUkernel) -> Option<Vec<(usize, usize)>> {
    // A kernel takes at most 32 KiB of parameters: at most 32,768 one-byte parameters.
    const MAX_PARAMS: usize = 32 * 1024;
    let mut out = Vec::new();
    for i in 0..MAX_PARAMS {
        let (mut off, mut size) = (0usize, 0usize);
        // SAFETY: out-pointers are valid; handles live (caller).
        let r = unsafe {
            if !func.is_null() {
                sys::cuFuncGetParamInfo(func, i, &mut off, &mut size)
            } else if !kern.is_null() {
                sys::cuKernelGetParamInfo(kern, i, &mut off, &mut size)
            } else {
                return None;
            }
        };
        match r {
            sys::CUresult::CUDA_SUCCESS => out.push((off, size)),
            // Past the last parameter (at index 0: a kernel without parameters).
            sys::CUresult::CUDA_ERROR_INVALID_VALUE => return Some(out),
            _ => return None,
        }
    }
    Some(out)
}

/// The driver's `cuGraphNodeGetParams` (not in cudarc's CUDA 13.0 bindings), where the
/// installed driver exports it.
type NodeGetParams = unsafe extern "C" fn(sys::CUgraphNode, *mut sys::CUgraphNodeParams) -> sys::CUresult;

fn node_get_params() -> Option<NodeGetParams> {
    static F: std::sync::OnceLock<Option<NodeGetParams>> = std::sync::OnceLock::new();
    *F.get_or_init(|| {
        // SAFETY: opens the driver library cudarc has already loaded (its initialisers ran);
        // the handle is leaked below so the symbol stays valid for the process.
        let lib = unsafe { libloading::Library::new("libcuda.so.1") }.ok()?;
        // SAFETY: the symbol's C signature is `CUresult cuGraphNodeGetParams(CUgraphNode,
        // CUgraphNodeParams*)` (cuda.h), which `NodeGetParams` spells.
        let f = unsafe { lib.get::<NodeGetParams>(b"cuGraphNodeGetParams\0") }.ok().map(|s| *s);
        std::mem::forget(lib);
        f
    })
}

/// A kernel node's cluster dimensions, for naming a node whose parameters cannot be read.
///
/// # Safety
/// `node` must be a kernel node of a live graph.
unsafe fn cluster_dims(node: sys::CUgraphNode) -> Option<(u32, u32, u32)> {
    let mut v = MaybeUninit::<sys::CUkernelNodeAttrValue>::zeroed();
    // SAFETY: `node` is a kernel node (caller); `v` is written on success.
    let r = unsafe {
        sys::cuGraphKernelNodeGetAttribute(
            node,
            sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
            v.as_mut_ptr(),
        )
    };
    // SAFETY: on success the driver wrote the cluster dimensions (zeroed before).
    (r == sys::CUresult::CUDA_SUCCESS).then(|| unsafe {
        let c = v.assume_init().clusterDim;
        (c.x, c.y, c.z)
    })
}

/// The parameters of a kernel launched with one packed buffer (`extra` holding
/// `CU_LAUNCH_PARAM_BUFFER_POINTER` and `CU_LAUNCH_PARAM_BUFFER_SIZE`, as cuBLAS launches its
/// Hopper kernels): the buffer's bytes, as one by-value block; `None` when `extra` says
/// neither.
///
/// # Safety
/// `extra` must be null or a kernel node's `extra` array as the driver returned it: pairs of
/// key and value ending with `CU_LAUNCH_PARAM_END`, owned by the node while it lives.
unsafe fn packed_params(extra: *mut *mut std::ffi::c_void) -> Option<Vec<u8>> {
    // The keys are the small integers cuda.h defines as pointers.
    const END: usize = sys::CU_LAUNCH_PARAM_END_AS_INT as usize;
    const POINTER: usize = sys::CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT as usize;
    const SIZE: usize = sys::CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT as usize;
    // A launch array is a handful of pairs; more means it is not one.
    const MAX_PAIRS: usize = 64;
    if extra.is_null() {
        return None;
    }
    let (mut buf, mut size): (*const u8, *const usize) = (std::ptr::null(), std::ptr::null());
    for i in 0..MAX_PAIRS {
        // SAFETY: the array holds pairs up to its END key (caller), read one slot at a time
        // and never past END.
        let key = unsafe { *extra.add(2 * i) } as usize;
        if key == END {
            break;
        }
        // SAFETY: a key other than END is followed by its value.
        let value = unsafe { *extra.add(2 * i + 1) };
        match key {
            POINTER => buf = value as *const u8,
            SIZE => size = value as *const usize,
            _ => {}
        }
    }
    if buf.is_null() || size.is_null() {
        return None;
    }
    // SAFETY: the SIZE value points at the buffer's size (a size_t), and the POINTER value at
    // that many bytes, both owned by the node (caller).
    let n = unsafe { *size };
    // A kernel takes at most 32 KiB of parameters.
    (n <= 32 * 1024).then(|| unsafe { std::slice::from_raw_parts(buf, n) }.to_vec())
}

/// A kernel node's launch and parameters.
///
/// # Safety
/// `node` must be a kernel node of a live graph.
unsafe fn kernel_info(node: sys::CUgraphNode) -> R<KernelInfo> {
    let mut p = MaybeUninit::<sys::CUDA_KERNEL_NODE_PARAMS>::zeroed();
    // SAFETY: `node` is a kernel node (caller); `p` is written on success.
    let r = unsafe { sys::cuGraphKernelNodeGetParams_v2(node, p.as_mut_ptr()) };
    let p = if r == sys::CUresult::CUDA_ERROR_LOSSY_QUERY {
        // The node holds what this struct cannot say (seen on an H100 for cuBLAS's kernels
        // in candle's bf16 and f16 matmuls): ask through the generic node parameters, whose
        // kernel struct (v3) has the same fields, where the driver has that entry point.
        let Some(get) = node_get_params() else { return Err(code(r).unwrap_err()) };
        let mut g = MaybeUninit::<sys::CUgraphNodeParams>::zeroed();
        // SAFETY: `node` is live (caller); `g` is written on success; `get` is the driver's
        // `cuGraphNodeGetParams`, whose C signature `node_get_params` declares.
        code(unsafe { get(node, g.as_mut_ptr()) })?;
        // SAFETY: initialised by the successful call (and zeroed before it); the node is a
        // kernel node, so the union's `kernel` member is the one the driver wrote.
        let k = unsafe { g.assume_init().__bindgen_anon_1.kernel };
        sys::CUDA_KERNEL_NODE_PARAMS {
            func: k.func,
            gridDimX: k.gridDimX,
            gridDimY: k.gridDimY,
            gridDimZ: k.gridDimZ,
            blockDimX: k.blockDimX,
            blockDimY: k.blockDimY,
            blockDimZ: k.blockDimZ,
            sharedMemBytes: k.sharedMemBytes,
            kernelParams: k.kernelParams,
            extra: k.extra,
            kern: k.kern,
            ctx: k.ctx,
        }
    } else {
        code(r)?;
        // SAFETY: initialised by the successful call (and zeroed before it).
        unsafe { p.assume_init() }
    };
    // SAFETY: the handles come from the node's parameters.
    let name = unsafe { kernel_name(p.func, p.kern) };
    let params = if p.kernelParams.is_null() {
        // SAFETY: `extra` is the node's own launch array (or null), as the driver gave it.
        unsafe { packed_params(p.extra) }.map(|b| vec![b])
    } else {
        // SAFETY: as above.
        unsafe { param_layout(p.func, p.kern) }.map(|layout| {
            layout
                .iter()
                .enumerate()
                .map(|(i, &(_, size))| {
                    // SAFETY: `kernelParams` is the driver's array of one pointer per parameter
                    // (non-null, checked above), `layout` has one entry per parameter, and
                    // each points at `size` bytes the driver owns while the node lives.
                    unsafe {
                        let arg = *p.kernelParams.add(i) as *const u8;
                        if arg.is_null() {
                            Vec::new()
                        } else {
                            std::slice::from_raw_parts(arg, size).to_vec()
                        }
                    }
                })
                .collect()
        })
    };
    Ok(KernelInfo {
        name,
        grid: (p.gridDimX, p.gridDimY, p.gridDimZ),
        block: (p.blockDimX, p.blockDimY, p.blockDimZ),
        shared: p.sharedMemBytes,
        params,
    })
}

/// One node's description.
///
/// # Safety
/// `node` must be a node of a live graph.
unsafe fn node_info(node: sys::CUgraphNode) -> R<NodeInfo> {
    let mut t = MaybeUninit::<sys::CUgraphNodeType>::uninit();
    // SAFETY: `node` is live; `t` is written on success.
    code(unsafe { sys::cuGraphNodeGetType(node, t.as_mut_ptr()) })?;
    // SAFETY: initialised by the successful call above.
    let t = unsafe { t.assume_init() };
    use sys::CUgraphNodeType as T;
    Ok(match t {
        // SAFETY: a kernel node of a live graph. A kernel the driver cannot describe is
        // listed without parameters (what it reads cannot be proved), not a failed snapshot.
        T::CU_GRAPH_NODE_TYPE_KERNEL => NodeInfo::Kernel(unsafe { kernel_info(node) }.unwrap_or_else(|c| KernelInfo {
            // SAFETY: a kernel node of a live graph.
            name: match unsafe { cluster_dims(node) } {
                Some(d) => format!("(a kernel the driver cannot describe: {c}; clusters of {d:?})"),
                None => format!("(a kernel the driver cannot describe: {c})"),
            },
            grid: (0, 0, 0),
            block: (0, 0, 0),
            shared: 0,
            params: None,
        })),
        T::CU_GRAPH_NODE_TYPE_MEMCPY => {
            let mut p = MaybeUninit::<sys::CUDA_MEMCPY3D>::zeroed();
            // SAFETY: a memcpy node; `p` is written on success.
            code(unsafe { sys::cuGraphMemcpyNodeGetParams(node, p.as_mut_ptr()) })?;
            // SAFETY: initialised by the successful call (and zeroed before it).
            let p = unsafe { p.assume_init() };
            use sys::CUmemorytype as M;
            let addr = |t: M, h: u64, d: u64| if t == M::CU_MEMORYTYPE_HOST { h } else { d };
            // A unified address may be host memory too (pageable, when the driver does not
            // know it).
            let maybe_host = |t: M| matches!(t, M::CU_MEMORYTYPE_HOST | M::CU_MEMORYTYPE_UNIFIED);
            NodeInfo::Copy {
                dst: addr(p.dstMemoryType, p.dstHost as u64, p.dstDevice) + p.dstXInBytes as u64,
                src: addr(p.srcMemoryType, p.srcHost as u64, p.srcDevice) + p.srcXInBytes as u64,
                bytes: p.WidthInBytes * p.Height.max(1) * p.Depth.max(1),
                src_host: maybe_host(p.srcMemoryType),
                dst_host: maybe_host(p.dstMemoryType),
            }
        }
        T::CU_GRAPH_NODE_TYPE_MEMSET => {
            let mut p = MaybeUninit::<sys::CUDA_MEMSET_NODE_PARAMS>::zeroed();
            // SAFETY: a memset node; `p` is written on success.
            code(unsafe { sys::cuGraphMemsetNodeGetParams(node, p.as_mut_ptr()) })?;
            // SAFETY: initialised by the successful call (and zeroed before it).
            let p = unsafe { p.assume_init() };
            NodeInfo::Memset {
                dst: p.dst,
                value: p.value,
                element_size: p.elementSize,
                width: p.width,
                height: p.height,
            }
        }
        T::CU_GRAPH_NODE_TYPE_MEM_ALLOC => {
            let mut p = MaybeUninit::<sys::CUDA_MEM_ALLOC_NODE_PARAMS>::zeroed();
            // SAFETY: an allocation node; `p` is written on success.
            code(unsafe { sys::cuGraphMemAllocNodeGetParams(node, p.as_mut_ptr()) })?;
            // SAFETY: initialised by the successful call (and zeroed before it). Only the
            // plain fields are read; `accessDescs` points into the driver and is not touched.
            let p = unsafe { p.assume_init() };
            NodeInfo::MemAlloc { ptr: p.dptr, bytes: p.bytesize }
        }
        T::CU_GRAPH_NODE_TYPE_MEM_FREE => {
            let mut ptr: sys::CUdeviceptr = 0;
            // SAFETY: a free node; `ptr` is written on success.
            code(unsafe { sys::cuGraphMemFreeNodeGetParams(node, &mut ptr) })?;
            NodeInfo::MemFree { ptr }
        }
        T::CU_GRAPH_NODE_TYPE_EVENT_RECORD | T::CU_GRAPH_NODE_TYPE_WAIT_EVENT | T::CU_GRAPH_NODE_TYPE_EMPTY => {
            NodeInfo::Event
        }
        T::CU_GRAPH_NODE_TYPE_HOST => NodeInfo::Host,
        T::CU_GRAPH_NODE_TYPE_CONDITIONAL => NodeInfo::Conditional,
        other => NodeInfo::Other(format!("{other:?}")),
    })
}

/// The graph's edges as (from, to) indices, and which of them are programmatic
/// (`CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC`: programmatic dependent launch's, between two
/// kernel nodes).
pub(crate) type Edges = (Vec<(usize, usize)>, Vec<(usize, usize)>);

/// The graph's nodes, in creation order, and its edges as (from, to) indices into them.
///
/// # Safety
/// `g` must be a live graph of the current context.
pub(crate) unsafe fn graph_snapshot(g: usize) -> R<(Vec<NodeInfo>, Edges)> {
    let graph = g as sys::CUgraph;
    // SAFETY: forwarded.
    let nodes = unsafe { nodes_of(graph) }?;
    let mut infos = Vec::with_capacity(nodes.len());
    for &n in &nodes {
        // SAFETY: a node of the live graph.
        infos.push(unsafe { node_info(n) }?);
    }
    let index: HashMap<usize, usize> = nodes.iter().enumerate().map(|(i, n)| (*n as usize, i)).collect();
    let mut m = 0usize;
    // SAFETY: null arrays ask only for the count, written to `m`.
    code(unsafe {
        sys::cuGraphGetEdges_v2(graph, std::ptr::null_mut(), std::ptr::null_mut(), std::ptr::null_mut(), &mut m)
    })?;
    let mut edges = Vec::new();
    let mut programmatic = Vec::new();
    if m > 0 {
        let mut from: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); m];
        let mut to: Vec<sys::CUgraphNode> = vec![std::ptr::null_mut(); m];
        // Edge data is asked for too: without it the driver refuses a graph with edges of
        // non-default data (CUDA_ERROR_LOSSY_QUERY), such as the programmatic-launch edges
        // cuBLAS's Hopper kernels record (seen on an H100 in candle's bf16 and f16 matmuls).
        // SAFETY: `CUgraphEdgeData` is plain integers, valid zeroed.
        let mut data: Vec<sys::CUgraphEdgeData> = vec![unsafe { std::mem::zeroed() }; m];
        // SAFETY: the three arrays have room for `m` entries; the driver writes at most `m`.
        code(unsafe { sys::cuGraphGetEdges_v2(graph, from.as_mut_ptr(), to.as_mut_ptr(), data.as_mut_ptr(), &mut m) })?;
        let prog = sys::CUgraphDependencyType::CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC as u8;
        for ((f, t), d) in from.iter().zip(&to).zip(&data).take(m) {
            if let (Some(&a), Some(&b)) = (index.get(&(*f as usize)), index.get(&(*t as usize))) {
                edges.push((a, b));
                if d.type_ == prog {
                    programmatic.push((a, b));
                }
            }
        }
    }
    Ok((infos, (edges, programmatic)))
}

/// The allocation `addr` falls in: (base, memory type, managed), or `None` for an
/// address the driver does not know (pageable host memory, or no memory at all).
pub(crate) fn locate(addr: u64) -> Option<(u64, u32, bool)> {
    fn attr<T: Copy + Default>(a: sys::CUpointer_attribute, addr: u64) -> Option<T> {
        let mut v = T::default();
        // SAFETY: `v` has room for the attribute's value (the caller picks `T` to match: a
        // `CUdeviceptr`, a `size_t`, an unsigned int or a bool-sized int); the driver only
        // looks the address up, it never dereferences it.
        let r = unsafe { sys::cuPointerGetAttribute(&mut v as *mut T as *mut c_void, a, addr) };
        (r == sys::CUresult::CUDA_SUCCESS).then_some(v)
    }
    use sys::CUpointer_attribute as A;
    let ty: u32 = attr(A::CU_POINTER_ATTRIBUTE_MEMORY_TYPE, addr)?;
    let base: u64 = attr(A::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, addr)?;
    let managed: u32 = attr(A::CU_POINTER_ATTRIBUTE_IS_MANAGED, addr).unwrap_or(0);
    Some((base, ty, managed != 0))
}

/// Whether `ty` (a `CUmemorytype` as returned by [`locate`]) is host memory.
pub(crate) fn is_host_type(ty: u32) -> bool {
    ty == sys::CUmemorytype::CU_MEMORYTYPE_HOST as u32
}

/// How many nodes the graph `s` is capturing into holds now.
///
/// # Safety
/// `s` must be a live stream.
pub(crate) unsafe fn capture_node_count(s: usize) -> R<usize> {
    // SAFETY: forwarded.
    let (graph, ..) = unsafe { capture_point(s) }?;
    let mut n = 0usize;
    // SAFETY: a null node array asks only for the count.
    code(unsafe { sys::cuGraphGetNodes(graph, std::ptr::null_mut(), &mut n) })?;
    Ok(n)
}
