//! The CUDA backend: cudarc's context, behind [`Backend`]. Every driver call it makes is one of
//! [`crate::raw::cuda`]'s, where the `unsafe` and its safety argument live.

use std::sync::Arc;

use cudarc::driver::CudaContext;

#[cfg(feature = "cublas")]
use super::Gemm;
use super::{
    Advice, Backend, CaptureMode, CaptureStatus, CondKind, DevPtr, DeviceKind, DotError, GraphMemUsage, HostCopy,
    HostPtr, InstFlags, LaunchParams, NodeCounts, RawEvent, RawExec, RawFunction, RawGraph, RawModule, RawStream,
};
use crate::raw::code::DriverCode;
use crate::raw::cuda::CudaDriver;

/// The CUDA backend: a device of the driver, through cudarc.
pub(crate) struct CudaBackend {
    pub(crate) drv: CudaDriver,
    name: String,
    total: usize,
}

impl CudaBackend {
    /// A backend on cudarc's context `ctx`, whose device is called `name` and has `total` bytes.
    pub(crate) fn new(ctx: Arc<CudaContext>, name: String, total: usize) -> Self {
        Self { drv: CudaDriver { ctx }, name, total }
    }

    /// cudarc's context.
    pub(crate) fn ctx(&self) -> &Arc<CudaContext> {
        &self.drv.ctx
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
        self.drv.ctx.ordinal()
    }
    fn total_mem(&self) -> usize {
        self.total
    }
    fn mem_info(&self) -> Result<(usize, usize), DriverCode> {
        self.drv.mem_info()
    }
    fn stream_create(&self) -> Result<RawStream, DriverCode> {
        self.drv.stream_create()
    }
    fn stream_destroy(&self, s: RawStream) -> Result<(), DriverCode> {
        self.drv.stream_destroy(s)
    }
    fn stream_synchronize(&self, s: RawStream) -> Result<(), DriverCode> {
        self.drv.stream_synchronize(s)
    }
    fn stream_query(&self, s: RawStream) -> Result<bool, DriverCode> {
        self.drv.stream_query(s)
    }
    fn ctx_synchronize(&self) -> Result<(), DriverCode> {
        self.drv.ctx_synchronize()
    }
    fn mem_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        self.drv.mem_alloc(bytes)
    }
    fn mem_alloc_async(&self, bytes: usize, s: RawStream) -> Result<DevPtr, DriverCode> {
        self.drv.mem_alloc_async(bytes, s)
    }
    fn mem_free(&self, p: DevPtr) -> Result<(), DriverCode> {
        self.drv.mem_free(p)
    }
    fn mem_free_async(&self, p: DevPtr, s: RawStream) -> Result<(), DriverCode> {
        self.drv.mem_free_async(p, s)
    }
    fn host_alloc(&self, bytes: usize) -> Result<HostPtr, DriverCode> {
        self.drv.host_alloc(bytes)
    }
    fn host_free(&self, p: HostPtr) -> Result<(), DriverCode> {
        self.drv.host_free(p)
    }
    fn managed_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        self.drv.managed_alloc(bytes)
    }
    fn mem_advise(&self, p: DevPtr, bytes: usize, advice: Advice) -> Result<(), DriverCode> {
        self.drv.mem_advise(p, bytes, advice)
    }
    fn mem_prefetch_async(&self, p: DevPtr, bytes: usize, to_device: bool, s: RawStream) -> Result<(), DriverCode> {
        self.drv.mem_prefetch_async(p, bytes, to_device, s)
    }
    fn host_write(&self, dst: HostPtr, offset: usize, src: &[u8]) {
        self.drv.host_write(dst, offset, src)
    }
    fn host_read(&self, src: HostPtr, offset: usize, dst: &mut [u8]) {
        self.drv.host_read(src, offset, dst)
    }
    fn host_zero(&self, dst: HostPtr, bytes: usize) {
        self.drv.host_zero(dst, bytes)
    }
    fn managed_host_ptr(&self, p: DevPtr) -> HostPtr {
        self.drv.managed_host_ptr(p)
    }
    fn memcpy_htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), DriverCode> {
        self.drv.memcpy_htod(dst, src)
    }
    fn memcpy_dtoh(&self, dst: &mut [u8], src: DevPtr) -> Result<(), DriverCode> {
        self.drv.memcpy_dtoh(dst, src)
    }
    fn memset_d8(&self, dst: DevPtr, value: u8, bytes: usize) -> Result<(), DriverCode> {
        self.drv.memset_d8(dst, value, bytes)
    }
    fn memcpy_htod_async(&self, dst: DevPtr, src: HostPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        self.drv.memcpy_htod_async(dst, src, bytes, s)
    }
    fn memcpy_dtoh_async(&self, dst: HostPtr, src: DevPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        self.drv.memcpy_dtoh_async(dst, src, bytes, s)
    }
    fn memcpy_dtod_async(&self, dst: DevPtr, src: DevPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        self.drv.memcpy_dtod_async(dst, src, bytes, s)
    }
    fn memset_d8_async(&self, dst: DevPtr, value: u8, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        self.drv.memset_d8_async(dst, value, bytes, s)
    }
    fn event_create(&self, timing: bool) -> Result<RawEvent, DriverCode> {
        self.drv.event_create(timing)
    }
    fn event_destroy(&self, e: RawEvent) -> Result<(), DriverCode> {
        self.drv.event_destroy(e)
    }
    fn event_record(&self, e: RawEvent, s: RawStream) -> Result<(), DriverCode> {
        self.drv.event_record(e, s)
    }
    fn stream_wait_event(&self, s: RawStream, e: RawEvent) -> Result<(), DriverCode> {
        self.drv.stream_wait_event(s, e)
    }
    fn event_query(&self, e: RawEvent) -> Result<bool, DriverCode> {
        self.drv.event_query(e)
    }
    fn event_synchronize(&self, e: RawEvent) -> Result<(), DriverCode> {
        self.drv.event_synchronize(e)
    }
    fn event_elapsed_ms(&self, start: RawEvent, end: RawEvent) -> Result<f32, DriverCode> {
        self.drv.event_elapsed_ms(start, end)
    }
    fn module_load(&self, ptx: &str) -> Result<RawModule, DriverCode> {
        self.drv.module_load(ptx)
    }
    fn module_unload(&self, m: RawModule) -> Result<(), DriverCode> {
        self.drv.module_unload(m)
    }
    fn module_function(&self, m: RawModule, name: &str) -> Result<RawFunction, DriverCode> {
        self.drv.module_function(m, name)
    }
    #[inline]
    fn launch(&self, f: RawFunction, p: LaunchParams<'_>, s: RawStream) -> Result<(), DriverCode> {
        self.drv.launch(f, p, s)
    }
    #[cfg(feature = "cublas")]
    fn blas_create(&self) -> Result<usize, DriverCode> {
        self.drv.blas_create()
    }
    #[cfg(feature = "cublas")]
    fn blas_destroy(&self, h: usize) -> Result<(), DriverCode> {
        self.drv.blas_destroy(h)
    }
    #[cfg(feature = "cublas")]
    fn blas_bind(&self, h: usize, s: RawStream, ws: DevPtr, bytes: usize) -> Result<(), DriverCode> {
        self.drv.blas_bind(h, s, ws, bytes)
    }
    #[cfg(feature = "cublas")]
    fn blas_sgemm(&self, h: usize, s: RawStream, ws: DevPtr, bytes: usize, g: &Gemm) -> Result<(), DriverCode> {
        self.drv.blas_sgemm(h, s, ws, bytes, g)
    }
    fn begin_capture(&self, s: RawStream, mode: CaptureMode) -> Result<(), DriverCode> {
        self.drv.begin_capture(s, mode)
    }
    fn end_capture(&self, s: RawStream) -> Result<RawGraph, DriverCode> {
        self.drv.end_capture(s)
    }
    fn cond_handle(&self, s: RawStream) -> Result<u64, DriverCode> {
        self.drv.cond_handle(s)
    }
    fn cond_add(&self, s: RawStream, handle: u64, kind: CondKind, bodies: u32) -> Result<Vec<RawGraph>, DriverCode> {
        self.drv.cond_add(s, handle, kind, bodies)
    }
    fn capture_into(&self, side: RawStream, g: RawGraph, mode: CaptureMode) -> Result<(), DriverCode> {
        self.drv.capture_into(side, g, mode)
    }
    fn end_into(&self, side: RawStream) -> Result<(), DriverCode> {
        self.drv.end_into(side)
    }
    fn capture_status(&self, s: RawStream) -> Result<CaptureStatus, DriverCode> {
        self.drv.capture_status(s)
    }
    fn graph_nodes(&self, g: RawGraph) -> Result<NodeCounts, DriverCode> {
        self.drv.graph_nodes(g)
    }
    fn graph_host_copies(&self, g: RawGraph) -> Result<Vec<HostCopy>, DriverCode> {
        self.drv.graph_host_copies(g)
    }
    fn graph_instantiate_with(
        &self,
        g: RawGraph,
        flags: InstFlags,
        upload: Option<RawStream>,
    ) -> Result<RawExec, DriverCode> {
        self.drv.graph_instantiate_with(g, flags, upload)
    }
    fn graph_upload(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
        self.drv.graph_upload(e, s)
    }
    fn graph_launch(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
        self.drv.graph_launch(e, s)
    }
    fn graph_exec_update(&self, e: RawExec, g: RawGraph) -> Result<bool, DriverCode> {
        self.drv.graph_exec_update(e, g)
    }
    fn graph_exec_destroy(&self, e: RawExec) -> Result<(), DriverCode> {
        self.drv.graph_exec_destroy(e)
    }
    fn graph_destroy(&self, g: RawGraph) -> Result<(), DriverCode> {
        self.drv.graph_destroy(g)
    }
    fn graph_mem_usage(&self) -> Result<GraphMemUsage, DriverCode> {
        let [used, used_high, reserved, reserved_high] = self.drv.graph_mem_usage()?;
        Ok(GraphMemUsage { used, used_high, reserved, reserved_high })
    }
    fn graph_mem_reset_high(&self) -> Result<(), DriverCode> {
        self.drv.graph_mem_reset_high()
    }
    fn graph_mem_trim(&self) -> Result<(), DriverCode> {
        self.drv.graph_mem_trim()
    }
    fn graph_snapshot(
        &self,
        g: RawGraph,
    ) -> Result<(super::snapshot::RawSnapshot, super::snapshot::NodeOps), DriverCode> {
        use super::snapshot::{KernelNode, NodeKind, ParamValue, RawNode, RawSnapshot};
        use crate::raw::inspect::NodeInfo;
        let (infos, (edges, programmatic)) = self.drv.graph_snapshot(g)?;
        // Host memory the driver does not know is pageable.
        let pageable = |host: bool, addr: u64| host && self.drv.locate(addr).is_none();
        let nodes = infos
            .into_iter()
            .map(|n| match n {
                NodeInfo::Kernel(k) => RawNode::Kernel(KernelNode {
                    name: k.name,
                    grid: k.grid,
                    block: k.block,
                    shared_mem_bytes: k.shared,
                    params: k.params.map(|ps| {
                        ps.into_iter()
                            .map(|bytes| ParamValue { bytes, ty: None, target: None, words: Vec::new() })
                            .collect()
                    }),
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
        // The nodes' operations come from the capture's own notes (`CaptureOptions::trace_nodes`).
        Ok((RawSnapshot { nodes, edges, programmatic }, Vec::new()))
    }
    fn locate(&self, addr: u64) -> Option<super::snapshot::Located> {
        use super::snapshot::{Located, MemKind};
        let (base, ty, managed) = self.drv.locate(addr)?;
        let kind = if managed {
            MemKind::Managed
        } else if crate::raw::inspect::is_host_type(ty) {
            MemKind::Pinned
        } else {
            MemKind::Device
        };
        Some(Located { base, kind })
    }
    fn capture_node_count(&self, s: RawStream) -> Result<usize, DriverCode> {
        self.drv.capture_node_count(s)
    }
    fn graph_dot(&self, g: RawGraph) -> Result<String, DotError> {
        use std::sync::atomic::{AtomicUsize, Ordering};
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        const OP: &str = "cuGraphDebugDotPrint";
        // The driver writes the picture to a file: a private temporary one, read back and removed.
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("capture-core-graph-{}-{n}.dot", std::process::id()));
        let printed = self.drv.graph_debug_dot(g, &path);
        let text = printed.map_err(|code| DotError::Driver { op: OP, code }).and_then(|()| {
            std::fs::read_to_string(&path).map_err(|source| DotError::Io { path: path.display().to_string(), source })
        });
        let _ = std::fs::remove_file(&path);
        text
    }
}
