//! Backends: the CUDA driver (through cudarc) and the simulated device.
//!
//! Both implement `Backend`, a driver-shaped interface on plain handles. The safe types
//! above (`Stream`, `DeviceBuffer`, `Graph`, …) hold handles and call through it; neither
//! they nor this trait contain `unsafe`. All `unsafe` lives in `crate::raw`, which also holds
//! the CUDA backend's driver calls (`raw/cuda.rs`) and the handles both backends speak
//! (`raw/handles.rs`); the CUDA backend itself is `cuda.rs`, the simulator `sim.rs` and `sim/`.

mod cuda;
pub mod sim;
pub(crate) mod snapshot;

pub(crate) use cuda::CudaBackend;

use crate::raw::code::DriverCode;
#[cfg(feature = "cublas")]
pub(crate) use crate::raw::handles::Gemm;
pub(crate) use crate::raw::handles::{
    Advice, CaptureStatus, CondKind, DevPtr, HostCopy, HostPtr, InstFlags, LaunchParams, RawEvent, RawExec,
    RawFunction, RawGraph, RawModule,
};
pub use crate::raw::handles::{CaptureMode, NodeCounts, RawStream};

/// Which device a [`Context`](crate::Context) runs on.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DeviceKind {
    /// A CUDA GPU, through the driver.
    Cuda,
    /// The simulated device: host memory, the H100's capture rules.
    Simulated,
}

impl std::fmt::Display for DeviceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            DeviceKind::Cuda => "CUDA GPU",
            DeviceKind::Simulated => "simulated device",
        })
    }
}

/// The device's graph-memory pool: the memory CUDA keeps for graph allocations (memory
/// nodes, `alloc_async` on a capturing stream). It is one pool per device, shared by every
/// graph: physical memory is reused across graphs launched one after another, so a family
/// of graphs needs about as much as its largest member. Read it with
/// [`Context::graph_memory`](crate::Context::graph_memory).
///
/// On the simulated device the pool is modelled: a graph's footprint is the peak of its
/// live graph allocations in capture order, and a launch grows the reservation to the
/// largest footprint launched since the last trim.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct GraphMemUsage {
    /// Bytes currently associated with graphs.
    pub used: u64,
    /// High-water mark of `used` since the last reset.
    pub used_high: u64,
    /// Bytes reserved for graph allocations (what the pool holds of the device's memory).
    pub reserved: u64,
    /// High-water mark of `reserved` since the last reset.
    pub reserved_high: u64,
}

/// Why a backend could not draw a graph ([`Backend::graph_dot`]); the caller turns it into an
/// [`Error`](crate::Error).
#[derive(Debug)]
pub(crate) enum DotError {
    /// The driver (or the simulated device) refused `op`.
    Driver { op: &'static str, code: DriverCode },
    /// The driver's DOT file at `path` could not be read back.
    Io { path: String, source: std::io::Error },
}

/// The driver-shaped interface both backends implement.
pub(crate) trait Backend: Send + Sync + 'static {
    fn kind(&self) -> DeviceKind;
    fn name(&self) -> String;
    fn ordinal(&self) -> usize;
    /// (free, total) bytes.
    fn mem_info(&self) -> Result<(usize, usize), DriverCode>;
    fn total_mem(&self) -> usize;

    fn stream_create(&self) -> Result<RawStream, DriverCode>;
    fn stream_destroy(&self, s: RawStream) -> Result<(), DriverCode>;
    fn stream_synchronize(&self, s: RawStream) -> Result<(), DriverCode>;
    /// Ok(true) when all work is done.
    fn stream_query(&self, s: RawStream) -> Result<bool, DriverCode>;
    fn ctx_synchronize(&self) -> Result<(), DriverCode>;

    fn mem_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode>;
    fn mem_alloc_async(&self, bytes: usize, s: RawStream) -> Result<DevPtr, DriverCode>;
    fn mem_free(&self, p: DevPtr) -> Result<(), DriverCode>;
    fn mem_free_async(&self, p: DevPtr, s: RawStream) -> Result<(), DriverCode>;
    fn host_alloc(&self, bytes: usize) -> Result<HostPtr, DriverCode>;
    fn host_free(&self, p: HostPtr) -> Result<(), DriverCode>;
    fn managed_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode>;

    fn mem_advise(&self, p: DevPtr, bytes: usize, advice: Advice) -> Result<(), DriverCode>;
    fn mem_prefetch_async(&self, p: DevPtr, bytes: usize, to_device: bool, s: RawStream) -> Result<(), DriverCode>;
    /// Copy host bytes into a pinned/managed host-visible allocation (a plain host write).
    fn host_write(&self, dst: HostPtr, offset: usize, src: &[u8]);
    /// Copy a pinned/managed host-visible allocation's bytes out (a plain host read).
    fn host_read(&self, src: HostPtr, offset: usize, dst: &mut [u8]);
    /// Zeroes the first `bytes` of a pinned/managed host-visible allocation in place (no
    /// host buffer of that size is made).
    fn host_zero(&self, dst: HostPtr, bytes: usize);
    fn managed_host_ptr(&self, p: DevPtr) -> HostPtr;

    fn memcpy_htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), DriverCode>;
    fn memcpy_dtoh(&self, dst: &mut [u8], src: DevPtr) -> Result<(), DriverCode>;
    // Only the probe-conformance tests use the synchronous memset (the driver rule for a
    // sync memset during capture); the library's own memsets are stream-ordered.
    #[cfg_attr(not(test), allow(dead_code))]
    fn memset_d8(&self, dst: DevPtr, value: u8, bytes: usize) -> Result<(), DriverCode>;
    fn memcpy_htod_async(&self, dst: DevPtr, src: HostPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode>;
    fn memcpy_dtoh_async(&self, dst: HostPtr, src: DevPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode>;
    fn memcpy_dtod_async(&self, dst: DevPtr, src: DevPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode>;
    fn memset_d8_async(&self, dst: DevPtr, value: u8, bytes: usize, s: RawStream) -> Result<(), DriverCode>;

    fn event_create(&self, timing: bool) -> Result<RawEvent, DriverCode>;
    fn event_destroy(&self, e: RawEvent) -> Result<(), DriverCode>;
    fn event_record(&self, e: RawEvent, s: RawStream) -> Result<(), DriverCode>;
    fn stream_wait_event(&self, s: RawStream, e: RawEvent) -> Result<(), DriverCode>;
    /// Ok(true) when complete.
    fn event_query(&self, e: RawEvent) -> Result<bool, DriverCode>;
    fn event_synchronize(&self, e: RawEvent) -> Result<(), DriverCode>;
    fn event_elapsed_ms(&self, start: RawEvent, end: RawEvent) -> Result<f32, DriverCode>;

    fn module_load(&self, ptx: &str) -> Result<RawModule, DriverCode>;
    fn module_unload(&self, m: RawModule) -> Result<(), DriverCode>;
    fn module_function(&self, m: RawModule, name: &str) -> Result<RawFunction, DriverCode>;
    fn launch(&self, f: RawFunction, p: LaunchParams<'_>, s: RawStream) -> Result<(), DriverCode>;

    /// Creates a BLAS handle.
    #[cfg(feature = "cublas")]
    fn blas_create(&self) -> Result<usize, DriverCode>;
    #[cfg(feature = "cublas")]
    fn blas_destroy(&self, h: usize) -> Result<(), DriverCode>;
    /// Binds the handle to `s` with workspace `ws` (`bytes`).
    #[cfg(feature = "cublas")]
    fn blas_bind(&self, h: usize, s: RawStream, ws: DevPtr, bytes: usize) -> Result<(), DriverCode>;
    /// A GEMM on the handle's bound stream.
    #[cfg(feature = "cublas")]
    fn blas_sgemm(&self, h: usize, s: RawStream, ws: DevPtr, bytes: usize, g: &Gemm) -> Result<(), DriverCode>;

    fn begin_capture(&self, s: RawStream, mode: CaptureMode) -> Result<(), DriverCode>;
    /// Creates a condition handle in the graph `s` is capturing into, with no value assigned
    /// at launch (no `CU_GRAPH_COND_ASSIGN_DEFAULT`): a kernel must set it before its node
    /// reads it, which the crate's every conditional node has.
    fn cond_handle(&self, s: RawStream) -> Result<u64, DriverCode>;
    /// Adds a conditional node of `kind` on `handle` with `bodies` body graphs at the current
    /// end of `s`'s capture (the stream's later work depends on it); returns the body graphs,
    /// which [`capture_into`](Self::capture_into) fills.
    fn cond_add(&self, s: RawStream, handle: u64, kind: CondKind, bodies: u32) -> Result<Vec<RawGraph>, DriverCode>;
    /// Begins capturing `side` (idle) into body graph `g` of a conditional node.
    fn capture_into(&self, side: RawStream, g: RawGraph, mode: CaptureMode) -> Result<(), DriverCode>;
    /// Ends a [`capture_into`](Self::capture_into): the body graph holds what was recorded.
    fn end_into(&self, side: RawStream) -> Result<(), DriverCode>;
    /// Ends the capture. Ok(None) when the driver returns no graph.
    fn end_capture(&self, s: RawStream) -> Result<RawGraph, DriverCode>;
    fn capture_status(&self, s: RawStream) -> Result<CaptureStatus, DriverCode>;
    fn graph_nodes(&self, g: RawGraph) -> Result<NodeCounts, DriverCode>;
    /// The graph's copy nodes whose host side is pageable (unpinned) memory.
    fn graph_host_copies(&self, g: RawGraph) -> Result<Vec<HostCopy>, DriverCode>;
    /// Instantiates with the default flags (auto-free-on-launch, as this crate always has).
    #[cfg_attr(not(test), allow(dead_code))]
    fn graph_instantiate(&self, g: RawGraph) -> Result<RawExec, DriverCode> {
        self.graph_instantiate_with(g, InstFlags { auto_free: true, ..InstFlags::default() }, None)
    }
    /// Instantiates with `flags`; `upload` is the stream the upload flag uploads into.
    fn graph_instantiate_with(
        &self,
        g: RawGraph,
        flags: InstFlags,
        upload: Option<RawStream>,
    ) -> Result<RawExec, DriverCode>;
    /// The graph as Graphviz DOT text.
    fn graph_dot(&self, g: RawGraph) -> Result<String, DotError>;
    /// The graph described node by node, addresses raw (see [`snapshot`]); the simulated
    /// device also labels each node with the library operation that recorded it.
    fn graph_snapshot(&self, g: RawGraph) -> Result<(snapshot::RawSnapshot, snapshot::NodeOps), DriverCode>;
    /// The allocation `addr` falls in, if the device knows one.
    fn locate(&self, addr: u64) -> Option<snapshot::Located>;
    /// How many nodes the graph `s` is capturing into holds now (to tell which nodes an
    /// operation recorded).
    fn capture_node_count(&self, s: RawStream) -> Result<usize, DriverCode>;
    fn graph_upload(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode>;
    fn graph_launch(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode>;
    /// Updates `e` in place from `g`; `Ok(false)` when the topology differs.
    fn graph_exec_update(&self, e: RawExec, g: RawGraph) -> Result<bool, DriverCode>;
    fn graph_exec_destroy(&self, e: RawExec) -> Result<(), DriverCode>;
    fn graph_destroy(&self, g: RawGraph) -> Result<(), DriverCode>;

    /// The device's graph-memory pool figures.
    fn graph_mem_usage(&self) -> Result<GraphMemUsage, DriverCode>;
    /// Resets the pool's high-water marks.
    fn graph_mem_reset_high(&self) -> Result<(), DriverCode>;
    /// Returns pool memory no executing or scheduled graph uses.
    fn graph_mem_trim(&self) -> Result<(), DriverCode>;
}
