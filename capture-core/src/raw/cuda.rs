//! The CUDA driver calls the CUDA backend makes ([`crate::device`]'s `CudaBackend`), each bound to
//! cudarc's context and each `unsafe` block with its `SAFETY:` argument.
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

use crate::raw;
use crate::raw::code::DriverCode;
#[cfg(feature = "cublas")]
use crate::raw::handles::Gemm;
use crate::raw::handles::{
    Advice, CaptureMode, CaptureStatus, CondKind, DevPtr, HostCopy, HostPtr, InstFlags, LaunchParams, NodeCounts,
    RawEvent, RawExec, RawFunction, RawGraph, RawModule, RawStream,
};

fn derr(e: cudarc::driver::DriverError) -> DriverCode {
    DriverCode(e.0 as u32)
}

/// cudarc's context, and the driver calls on it.
pub(crate) struct CudaDriver {
    pub(crate) ctx: Arc<CudaContext>,
}

impl CudaDriver {
    #[inline]
    fn bind(&self) -> Result<(), DriverCode> {
        self.ctx.bind_to_thread().map_err(derr)
    }

    /// Binds only for the special stream handles (NULL, `CU_STREAM_LEGACY`,
    /// `CU_STREAM_PER_THREAD`), which mean "the current context's stream". A stream made by
    /// `cuStreamCreate` belongs to its context, and the driver launches into that context
    /// whatever is current: measured on an H100 (driver 580, CUDA 13) by `examples/bench/`'s
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

    pub(crate) fn mem_info(&self) -> Result<(usize, usize), DriverCode> {
        self.bind()?;
        raw::mem_info()
    }
    pub(crate) fn stream_create(&self) -> Result<RawStream, DriverCode> {
        self.bind()?;
        raw::stream_create().map(RawStream)
    }
    pub(crate) fn stream_destroy(&self, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::stream_destroy(s.0) }
    }
    pub(crate) fn stream_synchronize(&self, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::stream_synchronize(s.0) }
    }
    pub(crate) fn stream_query(&self, s: RawStream) -> Result<bool, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::stream_query(s.0) }
    }
    pub(crate) fn ctx_synchronize(&self) -> Result<(), DriverCode> {
        self.bind()?;
        raw::ctx_synchronize()
    }
    pub(crate) fn mem_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_alloc(bytes) }.map(DevPtr)
    }
    pub(crate) fn mem_alloc_async(&self, bytes: usize, s: RawStream) -> Result<DevPtr, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_alloc_async(bytes, s.0) }.map(DevPtr)
    }
    pub(crate) fn mem_free(&self, p: DevPtr) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_free(p.0) }
    }
    pub(crate) fn mem_free_async(&self, p: DevPtr, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_free_async(p.0, s.0) }
    }
    pub(crate) fn host_alloc(&self, bytes: usize) -> Result<HostPtr, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::host_alloc(bytes) }.map(HostPtr)
    }
    pub(crate) fn host_free(&self, p: HostPtr) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::host_free(p.0) }
    }
    pub(crate) fn managed_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::managed_alloc(bytes) }.map(DevPtr)
    }
    pub(crate) fn mem_advise(&self, p: DevPtr, bytes: usize, advice: Advice) -> Result<(), DriverCode> {
        self.bind()?;
        let dev = i32::try_from(self.ctx.ordinal()).map_err(|_| DriverCode::INVALID_DEVICE)?;
        let (preferred, to) = match advice {
            Advice::PreferDevice => (true, Some(dev)),
            Advice::AccessedByHost => (false, None),
        };
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_advise(p.0, bytes, preferred, to) }
    }
    pub(crate) fn mem_prefetch_async(
        &self,
        p: DevPtr,
        bytes: usize,
        to_device: bool,
        s: RawStream,
    ) -> Result<(), DriverCode> {
        self.bind()?;
        let dev = i32::try_from(self.ctx.ordinal()).map_err(|_| DriverCode::INVALID_DEVICE)?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::mem_prefetch_async(p.0, bytes, to_device.then_some(dev), s.0) }
    }
    pub(crate) fn host_write(&self, dst: HostPtr, offset: usize, src: &[u8]) {
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::host_write(dst.0, offset, src) }
    }
    pub(crate) fn host_read(&self, src: HostPtr, offset: usize, dst: &mut [u8]) {
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::host_read(src.0, offset, dst) }
    }
    pub(crate) fn host_zero(&self, dst: HostPtr, bytes: usize) {
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::host_zero(dst.0, bytes) }
    }
    pub(crate) fn managed_host_ptr(&self, p: DevPtr) -> HostPtr {
        // Managed memory has one address, valid on host and device.
        HostPtr(p.0 as usize)
    }
    pub(crate) fn memcpy_htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memcpy_htod(dst.0, src) }
    }
    pub(crate) fn memcpy_dtoh(&self, dst: &mut [u8], src: DevPtr) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memcpy_dtoh(dst, src.0) }
    }
    // Only the probe-conformance tests use the synchronous memset (see `raw::memset_d8`).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) fn memset_d8(&self, dst: DevPtr, value: u8, bytes: usize) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memset_d8(dst.0, value, bytes) }
    }
    pub(crate) fn memcpy_htod_async(
        &self,
        dst: DevPtr,
        src: HostPtr,
        bytes: usize,
        s: RawStream,
    ) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memcpy_htod_async(dst.0, src.0, bytes, s.0) }
    }
    pub(crate) fn memcpy_dtoh_async(
        &self,
        dst: HostPtr,
        src: DevPtr,
        bytes: usize,
        s: RawStream,
    ) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memcpy_dtoh_async(dst.0, src.0, bytes, s.0) }
    }
    pub(crate) fn memcpy_dtod_async(
        &self,
        dst: DevPtr,
        src: DevPtr,
        bytes: usize,
        s: RawStream,
    ) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memcpy_dtod_async(dst.0, src.0, bytes, s.0) }
    }
    pub(crate) fn memset_d8_async(&self, dst: DevPtr, value: u8, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::memset_d8_async(dst.0, value, bytes, s.0) }
    }
    pub(crate) fn event_create(&self, timing: bool) -> Result<RawEvent, DriverCode> {
        self.bind()?;
        raw::event_create(timing).map(RawEvent)
    }
    pub(crate) fn event_destroy(&self, e: RawEvent) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::event_destroy(e.0) }
    }
    pub(crate) fn event_record(&self, e: RawEvent, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::event_record(e.0, s.0) }
    }
    pub(crate) fn stream_wait_event(&self, s: RawStream, e: RawEvent) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::stream_wait_event(s.0, e.0) }
    }
    pub(crate) fn event_query(&self, e: RawEvent) -> Result<bool, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::event_query(e.0) }
    }
    pub(crate) fn event_synchronize(&self, e: RawEvent) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::event_synchronize(e.0) }
    }
    pub(crate) fn event_elapsed_ms(&self, start: RawEvent, end: RawEvent) -> Result<f32, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::event_elapsed_ms(start.0, end.0) }
    }
    pub(crate) fn module_load(&self, ptx: &str) -> Result<RawModule, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::module_load(ptx) }.map(RawModule)
    }
    pub(crate) fn module_unload(&self, m: RawModule) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::module_unload(m.0) }
    }
    pub(crate) fn module_function(&self, m: RawModule, name: &str) -> Result<RawFunction, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::module_function(m.0, name) }.map(RawFunction)
    }
    #[inline]
    pub(crate) fn launch(&self, f: RawFunction, p: LaunchParams<'_>, s: RawStream) -> Result<(), DriverCode> {
        self.bind_for_stream(s)?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::launch(f.0, p.grid, p.block, p.shared_mem_bytes, s.0, p.slots) }
    }
    #[cfg(feature = "cublas")]
    pub(crate) fn blas_create(&self) -> Result<usize, DriverCode> {
        self.bind()?;
        if !raw::blas::present() {
            return Err(DriverCode(DriverCode::BLAS_STATUS_BASE | 1));
        }
        // SAFETY: context bound; the library is present.
        unsafe { raw::blas::create() }
    }
    #[cfg(feature = "cublas")]
    pub(crate) fn blas_destroy(&self, h: usize) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::blas::destroy(h) }
    }
    #[cfg(feature = "cublas")]
    pub(crate) fn blas_bind(&self, h: usize, s: RawStream, ws: DevPtr, bytes: usize) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::blas::bind(h, s.0, ws.0, bytes) }
    }
    #[cfg(feature = "cublas")]
    pub(crate) fn blas_sgemm(
        &self,
        h: usize,
        s: RawStream,
        ws: DevPtr,
        bytes: usize,
        g: &Gemm,
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
    pub(crate) fn begin_capture(&self, s: RawStream, mode: CaptureMode) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::begin_capture(s.0, mode) }
    }
    pub(crate) fn end_capture(&self, s: RawStream) -> Result<RawGraph, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::end_capture(s.0) }.map(RawGraph)
    }
    pub(crate) fn cond_handle(&self, s: RawStream) -> Result<u64, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant; the driver's capture info checks that `s` is capturing.
        unsafe { raw::cond_handle(s.0) }
    }
    pub(crate) fn cond_add(
        &self,
        s: RawStream,
        handle: u64,
        kind: CondKind,
        bodies: u32,
    ) -> Result<Vec<RawGraph>, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant; the handle came from `cond_handle` on this capture (the
        // safe layer's order), and the driver checks the stream is capturing.
        let g = unsafe { raw::cond_add(s.0, handle, kind, bodies) }?;
        Ok(g.into_iter().map(RawGraph).collect())
    }
    pub(crate) fn capture_into(&self, side: RawStream, g: RawGraph, mode: CaptureMode) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant; `g` came from `cond_node` of a live capture.
        unsafe { raw::capture_into(side.0, g.0, mode) }
    }
    pub(crate) fn end_into(&self, side: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant. Ending a capture into an existing graph returns that
        // graph, which its conditional node owns: nothing to destroy here.
        unsafe { raw::end_capture(side.0) }.map(|_| ())
    }
    pub(crate) fn capture_status(&self, s: RawStream) -> Result<CaptureStatus, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::capture_status(s.0) }
    }
    pub(crate) fn graph_nodes(&self, g: RawGraph) -> Result<NodeCounts, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_nodes(g.0) }
    }
    /// The graph's nodes in creation order and its edges (see [`raw::inspect`]).
    pub(crate) fn graph_snapshot(
        &self,
        g: RawGraph,
    ) -> Result<(Vec<raw::inspect::NodeInfo>, raw::inspect::Edges), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (the graph is live).
        unsafe { raw::inspect::graph_snapshot(g.0) }
    }
    /// The allocation `addr` falls in: (base, memory type, managed).
    pub(crate) fn locate(&self, addr: u64) -> Option<(u64, u32, bool)> {
        self.bind().ok()?;
        raw::inspect::locate(addr)
    }
    /// How many nodes the graph `s` is capturing into holds now.
    pub(crate) fn capture_node_count(&self, s: RawStream) -> Result<usize, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (the stream is live).
        unsafe { raw::inspect::capture_node_count(s.0) }
    }
    pub(crate) fn graph_host_copies(&self, g: RawGraph) -> Result<Vec<HostCopy>, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        let v = unsafe { raw::graph_host_copies(g.0) }?;
        Ok(v.into_iter().map(|(bytes, to_device)| HostCopy { bytes, to_device }).collect())
    }
    pub(crate) fn graph_instantiate_with(
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
    pub(crate) fn graph_debug_dot(&self, g: RawGraph, path: &std::path::Path) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (the graph is live).
        unsafe { raw::graph::graph_debug_dot(g.0, path) }
    }
    pub(crate) fn graph_upload(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_upload(e.0, s.0) }
    }
    pub(crate) fn graph_launch(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
        self.bind_for_stream(s)?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_launch(e.0, s.0) }
    }
    pub(crate) fn graph_exec_update(&self, e: RawExec, g: RawGraph) -> Result<bool, DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_exec_update(e.0, g.0) }
    }
    pub(crate) fn graph_exec_destroy(&self, e: RawExec) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_exec_destroy(e.0) }
    }
    pub(crate) fn graph_destroy(&self, g: RawGraph) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: module invariant (handles live, sizes checked by the caller).
        unsafe { raw::graph_destroy(g.0) }
    }
    pub(crate) fn graph_mem_usage(&self) -> Result<[u64; 4], DriverCode> {
        self.bind()?;
        // SAFETY: the device handle comes from cudarc's live context.
        unsafe { raw::graph_mem_usage(self.ctx.cu_device()) }
    }
    pub(crate) fn graph_mem_reset_high(&self) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: the device handle comes from cudarc's live context.
        unsafe { raw::graph_mem_reset_high(self.ctx.cu_device()) }
    }
    pub(crate) fn graph_mem_trim(&self) -> Result<(), DriverCode> {
        self.bind()?;
        // SAFETY: the device handle comes from cudarc's live context.
        unsafe { raw::graph_mem_trim(self.ctx.cu_device()) }
    }
}

/// Turns cudarc's per-allocation event tracking on or off for `ctx`.
///
/// Called only by `crate::interop::tracking`: off when the first capture of a context begins, back
/// to the value it had when the last one ends.
pub(crate) fn set_event_tracking(ctx: &CudaContext, on: bool) {
    if on {
        // SAFETY: re-enabling restores the state the context had before the capture. cudarc's
        // caveat (slices created while tracking was off keep no events) is documented on
        // `Stream::capture`: allocate before capturing, which this crate requires anyway.
        unsafe { ctx.enable_event_tracking() }
    } else {
        // SAFETY: while a capture is active nothing it records runs, so the events cudarc
        // would record or wait on order nothing; a wait on an event recorded before the
        // capture would instead break it (CUDA_ERROR_STREAM_CAPTURE_ISOLATION). Buffers the
        // capture uses are borrowed by the graph, so none is freed while a replay may use
        // it; the capture ends (and tracking is restored) before the graph first runs, and
        // `Graph::launch` orders replays on the caller's stream.
        unsafe { ctx.disable_event_tracking() }
    }
}
