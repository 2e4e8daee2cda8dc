//! The CUDA backend: cudarc's context plus the FFI wrappers of [`crate::raw`].
//!
//! # Module invariant (the `SAFETY:` comments below refer to it)
//! Every handle that reaches a method here (stream, event, module, function, graph, exec,
//! device or host pointer) was created by this backend and not yet released: the safe type
//! that owns it (`Stream`, `Event`, `Module`, `Graph`, `DeviceBuffer`, `PinnedBuffer`, …) is the
//! only holder, releases it exactly once in `Drop`, and its borrows keep everything a
//! pending operation or a live graph uses alive. Byte counts are checked against the owning
//! buffers' lengths by the safe layer before the call. The context is bound to the calling
//! thread before each call.

use std::sync::Arc;

use cudarc::driver::CudaContext;

use crate::device::{
    Advice, Backend, CaptureMode, CaptureStatus, DevPtr, DeviceKind, GraphMemUsage, HostPtr, InstFlags, LaunchParams,
    NodeCounts, RawEvent, RawExec, RawFunction, RawGraph, RawModule, RawStream,
};
use crate::error::{DriverCode, Error, Result};
use crate::raw;

pub(crate) struct CudaBackend {
    pub(crate) ctx: Arc<CudaContext>,
    name: String,
    total: usize,
}

fn derr(e: cudarc::driver::DriverError) -> DriverCode {
    DriverCode(e.0 as u32)
}

impl CudaBackend {
    /// Opens device `ordinal`. Never panics: a missing driver is `Error::NoDriver`.
    pub(crate) fn open(ordinal: usize) -> Result<Self> {
        if !raw::driver_present() {
            return Err(Error::NoDriver);
        }
        let count = CudaContext::device_count().map_err(|e| Error::Driver { op: "cuDeviceGetCount", code: derr(e) })?;
        let count = usize::try_from(count).unwrap_or(0);
        if ordinal >= count {
            return Err(Error::NoDevice { ordinal, count });
        }
        let ctx =
            CudaContext::new(ordinal).map_err(|e| Error::Driver { op: "cuDevicePrimaryCtxRetain", code: derr(e) })?;
        Self::wrap(ctx)
    }

    /// Wraps an existing cudarc context.
    pub(crate) fn wrap(ctx: Arc<CudaContext>) -> Result<Self> {
        let name = ctx.name().map_err(|e| Error::Driver { op: "cuDeviceGetName", code: derr(e) })?;
        let total = ctx.total_mem().map_err(|e| Error::Driver { op: "cuDeviceTotalMem", code: derr(e) })?;
        Ok(Self { ctx, name, total })
    }

    #[inline]
    fn bind(&self) -> Result<(), DriverCode> {
        self.ctx.bind_to_thread().map_err(derr)
    }

    /// Binds only for the special stream handles (NULL, `CU_STREAM_LEGACY`,
    /// `CU_STREAM_PER_THREAD`), which mean "the current context's stream". A stream made by
    /// `cuStreamCreate` belongs to its context, and the driver launches into that context
    /// whatever is current: measured on an H100 (driver 580, CUDA 13) by `examples/bench.rs`'s
    /// context probe, kernel and graph launches with another context current, or none, eager
    /// and during a capture, return success and run (issue #5). Skipping the
    /// `cuCtxGetCurrent` there saves 20-50 ns per launch on the hot paths.
    #[inline]
    fn bind_for_stream(&self, s: RawStream) -> Result<(), DriverCode> {
        if s.0 <= 2 {
            self.bind()
        } else {
            Ok(())
        }
    }
}

impl Backend for CudaBackend {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Cuda
    }
    fn name(&self) -> String {
        self.name.clone()
    }
    fn ordinal(&self) -> usize {
        self.ctx.ordinal()
    }
    fn mem_info(&self) -> Result<(usize, usize), DriverCode> {
        self.bind()?;
        raw::mem_info()
    }
    fn total_mem(&self) -> usize {
        self.total
    }

    fn stream_create(&self) -> Result<RawStream, DriverCode> {
        self.bind()?;
        raw::stream_create().map(RawStream)
    }
    fn stream_destroy(&self, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::stream_destroy(s.0) }
    }
    fn stream_synchronize(&self, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::stream_synchronize(s.0) }
    }
    fn stream_query(&self, s: RawStream) -> Result<bool, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::stream_query(s.0) }
    }
    fn ctx_synchronize(&self) -> Result<(), DriverCode> {
        self.bind()?;
        raw::ctx_synchronize()
    }

    fn mem_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_alloc(bytes) }.map(DevPtr)
    }
    fn mem_alloc_async(&self, bytes: usize, s: RawStream) -> Result<DevPtr, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_alloc_async(bytes, s.0) }.map(DevPtr)
    }
    fn mem_free(&self, p: DevPtr) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_free(p.0) }
    }
    fn mem_free_async(&self, p: DevPtr, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_free_async(p.0, s.0) }
    }
    fn host_alloc(&self, bytes: usize) -> Result<HostPtr, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::host_alloc(bytes) }.map(HostPtr)
    }
    fn host_free(&self, p: HostPtr) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::host_free(p.0) }
    }
    fn managed_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::managed_alloc(bytes) }.map(DevPtr)
    }
    fn mem_advise(&self, p: DevPtr, bytes: usize, advice: Advice) -> Result<(), DriverCode> {
        self.bind()?;
        let dev = i32::try_from(self.ctx.ordinal()).map_err(|_| DriverCode::INVALID_DEVICE)?;
        let (preferred, to) = match advice {
            Advice::PreferDevice => (true, Some(dev)),
            Advice::AccessedByHost => (false, None),
        };
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_advise(p.0, bytes, preferred, to) }
    }
    fn mem_prefetch_async(&self, p: DevPtr, bytes: usize, to_device: bool, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        let dev = i32::try_from(self.ctx.ordinal()).map_err(|_| DriverCode::INVALID_DEVICE)?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_prefetch_async(p.0, bytes, to_device.then_some(dev), s.0) }
    }
    fn host_write(&self, dst: HostPtr, offset: usize, src: &[u8]) {
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::host_write(dst.0, offset, src) }
    }
    fn host_read(&self, src: HostPtr, offset: usize, dst: &mut [u8]) {
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::host_read(src.0, offset, dst) }
    }
    fn host_zero(&self, dst: HostPtr, bytes: usize) {
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::host_zero(dst.0, bytes) }
    }
    fn managed_host_ptr(&self, p: DevPtr) -> HostPtr {
        // Managed memory has one address, valid on host and device.
        HostPtr(p.0 as usize)
    }

    fn memcpy_htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memcpy_htod(dst.0, src) }
    }
    fn memcpy_dtoh(&self, dst: &mut [u8], src: DevPtr) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memcpy_dtoh(dst, src.0) }
    }
    fn memset_d8(&self, dst: DevPtr, value: u8, bytes: usize) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memset_d8(dst.0, value, bytes) }
    }
    fn memcpy_htod_async(&self, dst: DevPtr, src: HostPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memcpy_htod_async(dst.0, src.0, bytes, s.0) }
    }
    fn memcpy_dtoh_async(&self, dst: HostPtr, src: DevPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memcpy_dtoh_async(dst.0, src.0, bytes, s.0) }
    }
    fn memcpy_dtod_async(&self, dst: DevPtr, src: DevPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memcpy_dtod_async(dst.0, src.0, bytes, s.0) }
    }
    fn memset_d8_async(&self, dst: DevPtr, value: u8, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memset_d8_async(dst.0, value, bytes, s.0) }
    }

    fn event_create(&self, timing: bool) -> Result<RawEvent, DriverCode> {
        self.bind()?;
        raw::event_create(timing).map(RawEvent)
    }
    fn event_destroy(&self, e: RawEvent) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::event_destroy(e.0) }
    }
    fn event_record(&self, e: RawEvent, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::event_record(e.0, s.0) }
    }
    fn stream_wait_event(&self, s: RawStream, e: RawEvent) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::stream_wait_event(s.0, e.0) }
    }
    fn event_query(&self, e: RawEvent) -> Result<bool, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::event_query(e.0) }
    }
    fn event_synchronize(&self, e: RawEvent) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::event_synchronize(e.0) }
    }
    fn event_elapsed_ms(&self, start: RawEvent, end: RawEvent) -> Result<f32, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::event_elapsed_ms(start.0, end.0) }
    }

    fn module_load(&self, ptx: &str) -> Result<RawModule, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::module_load(ptx) }.map(RawModule)
    }
    fn module_unload(&self, m: RawModule) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::module_unload(m.0) }
    }
    fn module_function(&self, m: RawModule, name: &str) -> Result<RawFunction, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::module_function(m.0, name) }.map(RawFunction)
    }
    #[inline]
    fn launch(&self, f: RawFunction, p: LaunchParams<'_>, s: RawStream) -> Result<(), DriverCode> {
        self.bind_for_stream(s)?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::launch(f.0, p.grid, p.block, p.shared_mem_bytes, s.0, p.slots) }
    }

    #[cfg(feature = "cublas")]
    fn blas_create(&self) -> Result<usize, DriverCode> {
        self.bind()?;
        if !raw::blas::present() {
            return Err(DriverCode(DriverCode::BLAS_STATUS_BASE | 1));
        }
        // SAFETY: context bound; the library is present.
        unsafe { raw::blas::create() }
    }
    #[cfg(feature = "cublas")]
    fn blas_destroy(&self, h: usize) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::blas::destroy(h) }
    }
    #[cfg(feature = "cublas")]
    fn blas_bind(&self, h: usize, s: RawStream, ws: DevPtr, bytes: usize) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::blas::bind(h, s.0, ws.0, bytes) }
    }
    #[cfg(feature = "cublas")]
    fn blas_sgemm(
        &self,
        h: usize,
        s: RawStream,
        ws: DevPtr,
        bytes: usize,
        g: &crate::device::Gemm,
    ) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller). The handle is
        // bound to `s` first so the GEMM is ordered on it; binding a stream resets cuBLAS's
        // workspace to its own pool (which allocates), so the workspace is set again after.
        unsafe {
            raw::blas::bind(h, s.0, ws.0, bytes)?;
            raw::blas::sgemm(h, g)
        }
    }

    fn begin_capture(&self, s: RawStream, mode: CaptureMode) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::begin_capture(s.0, mode) }
    }
    fn end_capture(&self, s: RawStream) -> Result<RawGraph, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::end_capture(s.0) }.map(RawGraph)
    }
    fn cond_handle(&self, s: RawStream) -> Result<u64, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant; the driver's capture info checks that `s` is capturing.
        unsafe { raw::cond_handle(s.0) }
    }
    fn cond_add(
        &self,
        s: RawStream,
        handle: u64,
        kind: crate::device::CondKind,
        bodies: u32,
    ) -> Result<Vec<RawGraph>, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant; the handle came from `cond_handle` on this capture (the
        // safe layer's order), and the driver checks the stream is capturing.
        let g = unsafe { raw::cond_add(s.0, handle, kind, bodies) }?;
        Ok(g.into_iter().map(RawGraph).collect())
    }
    fn capture_into(&self, side: RawStream, g: RawGraph, mode: CaptureMode) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant; `g` came from `cond_node` of a live capture.
        unsafe { raw::capture_into(side.0, g.0, mode) }
    }
    fn end_into(&self, side: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant. Ending a capture into an existing graph returns that
        // graph, which its conditional node owns: nothing to destroy here.
        unsafe { raw::end_capture(side.0) }.map(|_| ())
    }
    fn capture_status(&self, s: RawStream) -> Result<CaptureStatus, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::capture_status(s.0) }
    }
    fn graph_nodes(&self, g: RawGraph) -> Result<NodeCounts, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_nodes(g.0) }
    }
    fn graph_host_copies(&self, g: RawGraph) -> Result<Vec<crate::report::HostCopy>, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        let v = unsafe { raw::graph_host_copies(g.0) }?;
        Ok(v.into_iter().map(|(bytes, to_device)| crate::report::HostCopy { bytes, to_device }).collect())
    }
    fn graph_instantiate_with(
        &self,
        g: RawGraph,
        flags: InstFlags,
        upload: Option<RawStream>,
    ) -> Result<RawExec, DriverCode> {
        self.bind()?;
        let bits = raw::graph::instantiate_flag_bits(
            flags.auto_free,
            flags.upload && upload.is_some(),
            flags.device_launch,
            flags.node_priority,
        );
        // SAFETY: module invariant (handles live); the upload flag is set only with a stream.
        unsafe { raw::graph::graph_instantiate_with(g.0, bits, upload.map(|s| s.0)) }.map(RawExec)
    }
    fn graph_snapshot(
        &self,
        g: RawGraph,
    ) -> Result<(crate::device::snapshot::RawSnapshot, crate::device::snapshot::NodeOps), DriverCode> {
        use crate::device::snapshot::{KernelNode, NodeKind, ParamValue, RawNode, RawSnapshot};
        use raw::inspect::NodeInfo;
        self.bind()?;
        // SAFETY: module invariant (the graph is live).
        let (infos, edges) = unsafe { raw::inspect::graph_snapshot(g.0) }?;
        // Host memory the driver does not know is pageable.
        let pageable = |host: bool, addr: u64| host && raw::inspect::locate(addr).is_none();
        let nodes = infos
            .into_iter()
            .map(|n| match n {
                NodeInfo::Kernel(k) => RawNode::Kernel(KernelNode {
                    name: k.name,
                    grid: k.grid,
                    block: k.block,
                    shared_mem_bytes: k.shared,
                    params: k
                        .params
                        .map(|ps| ps.into_iter().map(|bytes| ParamValue { bytes, ty: None, target: None }).collect()),
                }),
                NodeInfo::Copy { dst, src, bytes, src_host, dst_host } => RawNode::Copy {
                    dst,
                    src,
                    bytes,
                    src_pageable: pageable(src_host, src),
                    dst_pageable: pageable(dst_host, dst),
                    host_data: None,
                },
                NodeInfo::Memset { dst, value, element_size, width, height } => {
                    RawNode::Memset { dst, value, element_size, width, height }
                }
                NodeInfo::MemAlloc { ptr, bytes } => RawNode::MemAlloc { ptr, bytes },
                NodeInfo::MemFree { ptr } => RawNode::MemFree { ptr },
                NodeInfo::Event => RawNode::Plain(NodeKind::Event),
                NodeInfo::Host => RawNode::Plain(NodeKind::Host),
                NodeInfo::Conditional => RawNode::Plain(NodeKind::Conditional),
                NodeInfo::Other(k) => RawNode::Plain(NodeKind::Other(k)),
            })
            .collect();
        Ok((RawSnapshot { nodes, edges }, Vec::new()))
    }
    fn locate(&self, addr: u64) -> Option<crate::device::snapshot::Located> {
        use crate::device::snapshot::{Located, MemKind};
        self.bind().ok()?;
        let (base, ty, managed) = raw::inspect::locate(addr)?;
        let kind = if managed {
            MemKind::Managed
        } else if raw::inspect::is_host_type(ty) {
            MemKind::Pinned
        } else {
            MemKind::Device
        };
        Some(Located { base, kind })
    }
    fn capture_node_count(&self, s: RawStream) -> Result<usize, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (the stream is live).
        unsafe { raw::inspect::capture_node_count(s.0) }
    }
    fn graph_dot(&self, g: RawGraph) -> Result<String> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        self.bind().map_err(|code| Error::Driver { op: "cuGraphDebugDotPrint", code })?;
        // The driver writes the picture to a file: a private temporary one, read back and removed.
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("capture-core-graph-{}-{n}.dot", std::process::id()));
        // SAFETY: module invariant (the graph is live).
        let printed = unsafe { raw::graph::graph_debug_dot(g.0, &path) };
        let text = printed.map_err(|code| Error::Driver { op: "cuGraphDebugDotPrint", code }).and_then(|()| {
            std::fs::read_to_string(&path).map_err(|source| Error::Io {
                op: "Graph::to_dot (reading the driver's DOT file)",
                path: path.display().to_string(),
                source,
            })
        });
        let _ = std::fs::remove_file(&path);
        text
    }
    fn graph_upload(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_upload(e.0, s.0) }
    }
    fn graph_launch(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
        self.bind_for_stream(s)?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_launch(e.0, s.0) }
    }
    fn graph_exec_update(&self, e: RawExec, g: RawGraph) -> Result<bool, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_exec_update(e.0, g.0) }
    }
    fn graph_exec_destroy(&self, e: RawExec) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_exec_destroy(e.0) }
    }
    fn graph_destroy(&self, g: RawGraph) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_destroy(g.0) }
    }
    fn graph_mem_usage(&self) -> Result<GraphMemUsage, DriverCode> {
        self.bind()?;
        // SAFETY: the device handle comes from cudarc's live context.
        let [used, used_high, reserved, reserved_high] = unsafe { raw::graph_mem_usage(self.ctx.cu_device()) }?;
        Ok(GraphMemUsage { used, used_high, reserved, reserved_high })
    }
    fn graph_mem_reset_high(&self) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: the device handle comes from cudarc's live context.
        unsafe { raw::graph_mem_reset_high(self.ctx.cu_device()) }
    }
    fn graph_mem_trim(&self) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: the device handle comes from cudarc's live context.
        unsafe { raw::graph_mem_trim(self.ctx.cu_device()) }
    }
}
