//! The simulated device: host memory behind the driver-shaped `Backend` interface, with the
//! capture rules measured on an H100 (driver 580, CUDA 13).
//!
//! # What it models
//! - **Capture state machine** per stream: none → active → (invalidated) → ended, with the
//!   Global / ThreadLocal / Relaxed modes and the capturing thread.
//! - **Loud operations** — synchronize or query of the capturing stream, context synchronize
//!   (from any thread), and event query/synchronize on an event recorded inside a capture —
//!   fail with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` (`CUDA_ERROR_CAPTURED_EVENT` for
//!   events) and invalidate the capture, in every mode. A capturing stream waiting on an
//!   event recorded outside the capture fails with `CUDA_ERROR_STREAM_CAPTURE_ISOLATION` and
//!   invalidates it.
//! - **Prohibited calls** — synchronous, managed and pinned allocation, synchronous and
//!   pinned frees, and synchronize/query of *another* stream or of an ordinary event — fail
//!   with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` and invalidate every capture that prohibits
//!   them: any Global-mode capture, and a ThreadLocal-mode capture begun on the calling
//!   thread. Relaxed-mode captures allow them.
//! - **Graph frees** — `cuMemFreeAsync` on a capturing stream of memory the capture did not
//!   allocate fails with `CUDA_ERROR_INVALID_VALUE`, is not recorded, and leaves the capture
//!   valid.
//! - **Silent operations** — synchronous copies and memsets, and work on a stream that is not
//!   capturing — run *now*, return success, and are not recorded: every replay then misses
//!   them, exactly the stale-data bug real hardware has. (The library's report names them.)
//! - **Deferred reads** — an async copy from pinned host memory re-reads that memory at every
//!   replay; a copy or kernel that touches freed memory fails with
//!   `CUDA_ERROR_ILLEGAL_ADDRESS`.
//! - **Fork/join**: a stream that waits on an event recorded inside a capture joins it; if it
//!   has not been waited on by the capture again when the capture ends, ending fails with
//!   `CUDA_ERROR_STREAM_CAPTURE_UNJOINED`.
//! - **Memory** of the advertised size ([`SIM_TOTAL_MEM`], an H100's 80 GiB), paged and
//!   backed lazily by host memory: a page is allocated when first written, untouched pages
//!   read as zeros, so allocating more than this host has works as it does on the GPU.
//!   Asking for more than the device has, or more pinned memory than [`SIM_HOST_MEM`], is
//!   `CUDA_ERROR_OUT_OF_MEMORY`; so is a page the host cannot back — never an abort.
//! - **Graphs**: copies, memsets and memory nodes really execute at every replay; kernel nodes
//!   are recorded and run the host implementation registered for that kernel name with
//!   [`SimDevice::register_kernel`], if any.
//! - **Dependencies and pictures**: each node depends on the previous node of its stream; a
//!   forked stream's first node on the fork's event node; a join's event node on the joined
//!   stream's last node. [`Graph::to_dot`](crate::Graph::to_dot) draws these nodes and edges,
//!   each node labelled with the library operation and call site that recorded it. Event
//!   record and wait are nodes here (counted as `other`), where the driver records none and
//!   draws an edge.
//! - **Instantiate flags** ([`InstantiateFlags`](crate::InstantiateFlags)): without
//!   auto-free-on-launch, relaunching a graph whose allocation (made behind the library's
//!   back, [`SimDevice::foreign_alloc_async`]) is still live from the last launch fails with
//!   `CUDA_ERROR_INVALID_VALUE`, as `cuGraphLaunch` does, until it is freed
//!   ([`SimDevice::foreign_free_async`]); device launch is refused with auto-free-on-launch,
//!   memory nodes or copies from pageable host memory (`CUDA_ERROR_INVALID_VALUE`); the upload
//!   flag needs a stream and is counted ([`SimDevice::graph_uploads`]); node priorities are
//!   accepted and change nothing. Launching from the device is not modelled.
//!
//! # What it does not model
//! - Timing and concurrency: every operation completes before the call returns, so a stream
//!   is never busy (`stream_query` is always ready outside capture) and races cannot occur.
//! - Kernels without a registered host implementation do nothing (they are still recorded,
//!   validated against their PTX signature, and counted).
//! - PTX is parsed for its entry points and parameter lists only; it is never compiled.
//! - Graph memory nodes are backed by host memory reserved at capture time and kept until
//!   the graph is destroyed; their contents persist between replays (on hardware they may
//!   not — do not rely on either).
//! - Operations this crate never issues: host-function nodes, async copies from pageable
//!   host memory, the legacy NULL stream and blocking streams (on which synchronous copies
//!   fail with `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`), stream priorities, peer access, multiple devices, cooperative
//!   launches, graph update, conditional nodes and child-graph nodes.
//! - Sticky errors: an illegal address fails the one operation, not the whole context.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::ThreadId;

use super::{
    Advice, Backend, CaptureMode, CaptureStatus, DevPtr, DeviceKind, HostPtr, InstFlags, LaunchParams, NodeCounts,
    RawEvent, RawExec, RawFunction, RawGraph, RawModule, RawStream,
};
use crate::raw::code::DriverCode;
use crate::raw::site::CallSite;

mod capture;
pub(crate) mod dot;
mod graphs;
mod kernels;
mod memory;
mod snapshot;
mod state;
#[cfg(test)]
mod tests;
pub(crate) mod world;

use crate::ptx::{self, KernelSignature};
#[allow(unused_imports)]
use capture::{CapState, Capture, SimEvent, SimStream};
#[allow(unused_imports)]
use graphs::{Exec, Graph, GraphPool, Node, NodeLabel, COND_ITERATION_LIMIT};
#[allow(unused_imports)]
use kernels::{sgemm_host, SGEMM};
pub use kernels::{HostKernel, KernelCall, KernelFault};
#[allow(unused_imports)]
use memory::{Alloc, AllocKind, Memory, PAGE};
#[allow(unused_imports)]
use state::State;

const ILLEGAL_STATE: DriverCode = DriverCode(401);

/// The simulated device. Create a context on it with
/// [`Context::simulated`](crate::Context::simulated); reach it from a context with
/// [`Context::sim`](crate::Context::sim) to register host implementations of kernels.
pub struct SimDevice {
    state: Mutex<State>,
    total: usize,
    /// (world id, device index) when the device is one of a simulated world.
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    world: Option<(u64, usize)>,
}

impl fmt::Debug for SimDevice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SimDevice").field("total_mem", &self.total).finish_non_exhaustive()
    }
}

/// The simulated device's memory size: an H100's 80 GiB.
pub const SIM_TOTAL_MEM: usize = 80 << 30;

/// The most pinned host memory the simulated device hands out in all (2 TiB, a large
/// host's RAM); beyond it `alloc_pinned` fails with `OUT_OF_MEMORY`, as `cuMemHostAlloc`
/// does. Pinned memory, like device memory, is backed lazily.
pub const SIM_HOST_MEM: usize = 2 << 40;

impl SimDevice {
    pub(crate) fn new() -> Self {
        let sim = Self { state: Mutex::new(State::default()), total: SIM_TOTAL_MEM, world: None };
        sim.register_kernel(SGEMM, sgemm_host);
        sim
    }

    /// Device `index` of the simulated world `world`.
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub(crate) fn in_world(world: u64, index: usize) -> Self {
        let mut sim = Self::new();
        sim.world = Some((world, index));
        sim
    }

    /// (world id, device index), when the device belongs to a simulated world.
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub(crate) fn world(&self) -> Option<(u64, usize)> {
        self.world
    }

    /// Reads device memory for a collective.
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub(crate) fn world_read(&self, addr: u64, bytes: usize) -> Result<Vec<u8>, DriverCode> {
        let mut v = vec![0u8; bytes];
        self.st().mem.read(addr, &mut v)?;
        Ok(v)
    }

    /// Writes device memory for a collective.
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub(crate) fn world_write(&self, addr: u64, data: &[u8]) -> Result<(), DriverCode> {
        self.st().mem.write(addr, data)
    }

    /// Records a collective on `s` if it is capturing (`Ok(true)`); `Ok(false)` when the
    /// stream is idle and the caller runs it.
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub(crate) fn record_collective(&self, s: RawStream, node: crate::raw::coll::CollNode) -> Result<bool, DriverCode> {
        let mut st = self.st();
        if !st.streams.contains_key(&s.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        st.record(s.0, Node::Collective(Arc::new(node)))
    }

    /// Runs executable graph `e` on `s` from node `from` up to its next collective: returns
    /// where to continue and the run of consecutive collective nodes of one group found
    /// there (empty once the graph is done). Part of a launch of every rank's graph
    /// together; launch bookkeeping happens at its start and end.
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    pub(crate) fn launch_segment(
        &self,
        e: RawExec,
        s: RawStream,
        from: usize,
    ) -> Result<(usize, Vec<crate::raw::coll::CollNode>), DriverCode> {
        let mut st = self.st();
        let exec = st.execs.get(&e.0).ok_or(DriverCode::INVALID_HANDLE)?;
        if from == 0 && !exec.live.is_empty() && !exec.auto_free {
            return Err(DriverCode::INVALID_VALUE);
        }
        let nodes = exec.nodes.clone();
        if !st.streams.contains_key(&s.0) || st.active_capture_of(s.0).is_some() {
            return Err(DriverCode::INVALID_HANDLE);
        }
        if from == 0 {
            let footprint = st.exec_footprint.get(&e.0).copied().unwrap_or(0);
            let pool = &mut st.pool;
            pool.reserved = pool.reserved.max(footprint);
            pool.reserved_high = pool.reserved_high.max(pool.reserved);
            pool.used_high = pool.used_high.max(footprint);
        }
        let mut i = from;
        while i < nodes.len() {
            if let Node::Collective(first) = &nodes[i] {
                let mut run = vec![(**first).clone()];
                i += 1;
                while let Some(Node::Collective(c)) = nodes.get(i) {
                    if c.group != first.group {
                        break;
                    }
                    run.push((**c).clone());
                    i += 1;
                }
                return Ok((i, run));
            }
            st.run(&nodes[i])?;
            i += 1;
        }
        if let Some(x) = st.execs.get_mut(&e.0) {
            x.live = x.unfreed.clone();
        }
        Ok((i, Vec::new()))
    }

    fn st(&self) -> MutexGuard<'_, State> {
        // A poisoned lock means a host kernel panicked; the state is still consistent
        // (every mutation completes before user code runs), so carry on.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records (or, outside a capture, performs) a copy of `data` to `dst` on stream `s` that
    /// the library did not issue, and labels it so: the model behind
    /// `SimDevice::foreign_memcpy_htod`.
    pub(crate) fn foreign_host_copy(&self, s: RawStream, dst: DevPtr, data: Vec<u8>) -> Result<(), DriverCode> {
        let mut st = self.st();
        st.record_or_run(s.0, Node::HostCopy { dst: dst.0, data })?;
        st.label_foreign(s.0, "cudarc memcpy_htod from a Vec (issued behind the library's back)");
        Ok(())
    }

    /// Labels the nodes recorded since the last label on stream `s` as `op`, issued behind the
    /// library's back.
    pub(crate) fn label_foreign_op(&self, s: RawStream, op: &'static str) {
        self.st().label_foreign(s.0, op);
    }

    /// How many times a graph was uploaded (`Graph::upload`, or instantiation with
    /// [`InstantiateFlags::upload`](crate::InstantiateFlags::upload)).
    pub fn graph_uploads(&self) -> usize {
        self.st().uploads
    }

    /// Labels the nodes recorded since the last label in the capture of stream `s` with the
    /// library operation that recorded them (called after each successful operation on a
    /// capturing stream, so each operation's nodes get exactly its label).
    pub(crate) fn label_nodes(&self, s: RawStream, op: &'static str, site: Option<CallSite>) {
        let mut st = self.st();
        let Some(cap) = st.active_capture_of(s.0) else { return };
        if let Some(c) = st.captures.get_mut(&cap) {
            for l in &mut c.labels[c.labeled..] {
                *l = Some(NodeLabel { op, site });
            }
            c.labeled = c.labels.len();
        }
    }

    /// Registers a host implementation for the kernel named `name`: launches and graph
    /// replays of that kernel run it. Replaces any earlier one.
    pub fn register_kernel<F>(&self, name: &str, f: F)
    where
        F: Fn(&mut KernelCall<'_>) -> Result<(), KernelFault> + Send + Sync + 'static,
    {
        self.st().kernels.insert(name.to_owned(), Arc::new(f));
    }

    /// A synchronous allocation: a prohibited call during capture, then the driver's checks.
    fn sync_alloc(&self, bytes: usize, kind: AllocKind) -> Result<u64, DriverCode> {
        let mut st = self.st();
        st.prohibited()?;
        if bytes == 0 {
            return Err(DriverCode::INVALID_VALUE);
        }
        if st.mem.used.saturating_add(bytes) > self.total {
            return Err(DriverCode::OUT_OF_MEMORY);
        }
        Ok(st.mem.alloc(bytes, kind))
    }

    /// Kernels that were run (launched eagerly or replayed) without a host implementation.
    pub fn unmodelled_kernels(&self) -> Vec<String> {
        let mut v: Vec<_> = self.st().unmodelled.iter().cloned().collect();
        v.sort();
        v
    }

    /// Bytes currently allocated (device, pinned, managed and graph memory).
    pub fn bytes_in_use(&self) -> usize {
        let st = self.st();
        st.mem.used + st.mem.host_used
    }

    /// Number of live streams, events, modules, graphs and executable graphs (for leak tests).
    pub fn live_handles(&self) -> usize {
        let s = self.st();
        s.streams.len() + s.events.len() + s.modules.len() + s.graphs.len() + s.execs.len()
    }

    /// Number of live streams: those of the program's `Stream`s, and the spare streams the
    /// context keeps for forks and for the bodies of loops and branches (for leak tests).
    pub fn live_streams(&self) -> usize {
        self.st().streams.len()
    }

    /// Number of live allocations in the simulated address space, of every kind: device,
    /// pinned, managed and graph memory, and the cell behind each conditional node's
    /// condition handle (for leak tests: graph allocations and condition cells are not in
    /// [`bytes_in_use`](Self::bytes_in_use)).
    pub fn live_allocations(&self) -> usize {
        self.st().mem.allocs.len()
    }
}

impl Backend for SimDevice {
    fn kind(&self) -> DeviceKind {
        DeviceKind::Simulated
    }
    fn name(&self) -> String {
        "simulated device (host memory, H100 capture rules)".to_owned()
    }
    fn ordinal(&self) -> usize {
        self.world.map_or(0, |(_, i)| i)
    }
    fn mem_info(&self) -> Result<(usize, usize), DriverCode> {
        let st = self.st();
        let used = st.mem.used + st.pool.reserved;
        Ok((self.total.saturating_sub(used), self.total))
    }
    fn total_mem(&self) -> usize {
        self.total
    }
    fn stream_create(&self) -> Result<RawStream, DriverCode> {
        SimDevice::stream_create(self)
    }
    fn stream_destroy(&self, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::stream_destroy(self, s)
    }
    fn stream_synchronize(&self, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::stream_synchronize(self, s)
    }
    fn stream_query(&self, s: RawStream) -> Result<bool, DriverCode> {
        SimDevice::stream_query(self, s)
    }
    fn ctx_synchronize(&self) -> Result<(), DriverCode> {
        SimDevice::ctx_synchronize(self)
    }
    fn event_create(&self, timing: bool) -> Result<RawEvent, DriverCode> {
        SimDevice::event_create(self, timing)
    }
    fn event_destroy(&self, e: RawEvent) -> Result<(), DriverCode> {
        SimDevice::event_destroy(self, e)
    }
    fn event_record(&self, e: RawEvent, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::event_record(self, e, s)
    }
    fn stream_wait_event(&self, s: RawStream, e: RawEvent) -> Result<(), DriverCode> {
        SimDevice::stream_wait_event(self, s, e)
    }
    fn event_query(&self, e: RawEvent) -> Result<bool, DriverCode> {
        SimDevice::event_query(self, e)
    }
    fn event_synchronize(&self, e: RawEvent) -> Result<(), DriverCode> {
        SimDevice::event_synchronize(self, e)
    }
    fn event_elapsed_ms(&self, start: RawEvent, end: RawEvent) -> Result<f32, DriverCode> {
        SimDevice::event_elapsed_ms(self, start, end)
    }
    fn begin_capture(&self, s: RawStream, mode: CaptureMode) -> Result<(), DriverCode> {
        SimDevice::begin_capture(self, s, mode)
    }
    fn cond_handle(&self, s: RawStream) -> Result<u64, DriverCode> {
        SimDevice::cond_handle(self, s)
    }
    fn cond_add(
        &self,
        s: RawStream,
        handle: u64,
        kind: crate::device::CondKind,
        bodies: u32,
    ) -> Result<Vec<RawGraph>, DriverCode> {
        SimDevice::cond_add(self, s, handle, kind, bodies)
    }
    fn capture_into(&self, side: RawStream, g: RawGraph, mode: CaptureMode) -> Result<(), DriverCode> {
        SimDevice::capture_into(self, side, g, mode)
    }
    fn end_into(&self, side: RawStream) -> Result<(), DriverCode> {
        SimDevice::end_into(self, side)
    }
    fn end_capture(&self, s: RawStream) -> Result<RawGraph, DriverCode> {
        SimDevice::end_capture(self, s)
    }
    fn capture_status(&self, s: RawStream) -> Result<CaptureStatus, DriverCode> {
        SimDevice::capture_status(self, s)
    }
    fn mem_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        SimDevice::mem_alloc(self, bytes)
    }
    fn mem_alloc_async(&self, bytes: usize, s: RawStream) -> Result<DevPtr, DriverCode> {
        SimDevice::mem_alloc_async(self, bytes, s)
    }
    fn mem_free(&self, p: DevPtr) -> Result<(), DriverCode> {
        SimDevice::mem_free(self, p)
    }
    fn mem_free_async(&self, p: DevPtr, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::mem_free_async(self, p, s)
    }
    fn host_alloc(&self, bytes: usize) -> Result<HostPtr, DriverCode> {
        SimDevice::host_alloc(self, bytes)
    }
    fn host_free(&self, p: HostPtr) -> Result<(), DriverCode> {
        SimDevice::host_free(self, p)
    }
    fn managed_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        SimDevice::managed_alloc(self, bytes)
    }
    fn mem_advise(&self, p: DevPtr, bytes: usize, advice: Advice) -> Result<(), DriverCode> {
        SimDevice::mem_advise(self, p, bytes, advice)
    }
    fn mem_prefetch_async(&self, p: DevPtr, bytes: usize, to_device: bool, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::mem_prefetch_async(self, p, bytes, to_device, s)
    }
    fn host_write(&self, dst: HostPtr, offset: usize, src: &[u8]) {
        SimDevice::host_write(self, dst, offset, src)
    }
    fn host_read(&self, src: HostPtr, offset: usize, dst: &mut [u8]) {
        SimDevice::host_read(self, src, offset, dst)
    }
    fn host_zero(&self, dst: HostPtr, bytes: usize) {
        SimDevice::host_zero(self, dst, bytes)
    }
    fn managed_host_ptr(&self, p: DevPtr) -> HostPtr {
        SimDevice::managed_host_ptr(self, p)
    }
    fn memcpy_htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), DriverCode> {
        SimDevice::memcpy_htod(self, dst, src)
    }
    fn memcpy_dtoh(&self, dst: &mut [u8], src: DevPtr) -> Result<(), DriverCode> {
        SimDevice::memcpy_dtoh(self, dst, src)
    }
    fn memset_d8(&self, dst: DevPtr, value: u8, bytes: usize) -> Result<(), DriverCode> {
        SimDevice::memset_d8(self, dst, value, bytes)
    }
    fn memcpy_htod_async(&self, dst: DevPtr, src: HostPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::memcpy_htod_async(self, dst, src, bytes, s)
    }
    fn memcpy_dtoh_async(&self, dst: HostPtr, src: DevPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::memcpy_dtoh_async(self, dst, src, bytes, s)
    }
    fn memcpy_dtod_async(&self, dst: DevPtr, src: DevPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::memcpy_dtod_async(self, dst, src, bytes, s)
    }
    fn memset_d8_async(&self, dst: DevPtr, value: u8, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::memset_d8_async(self, dst, value, bytes, s)
    }
    fn module_load(&self, text: &str) -> Result<RawModule, DriverCode> {
        SimDevice::module_load(self, text)
    }
    fn module_unload(&self, m: RawModule) -> Result<(), DriverCode> {
        SimDevice::module_unload(self, m)
    }
    fn module_function(&self, m: RawModule, name: &str) -> Result<RawFunction, DriverCode> {
        SimDevice::module_function(self, m, name)
    }
    fn launch(&self, f: RawFunction, p: LaunchParams<'_>, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::launch(self, f, p, s)
    }
    #[cfg(feature = "cublas")]
    fn blas_create(&self) -> Result<usize, DriverCode> {
        SimDevice::blas_create(self)
    }
    #[cfg(feature = "cublas")]
    fn blas_destroy(&self, h: usize) -> Result<(), DriverCode> {
        SimDevice::blas_destroy(self, h)
    }
    #[cfg(feature = "cublas")]
    fn blas_bind(&self, h: usize, s: RawStream, ws: DevPtr, bytes: usize) -> Result<(), DriverCode> {
        SimDevice::blas_bind(self, h, s, ws, bytes)
    }
    #[cfg(feature = "cublas")]
    fn blas_sgemm(&self, h: usize, s: RawStream, ws: DevPtr, bytes: usize, g: &super::Gemm) -> Result<(), DriverCode> {
        SimDevice::blas_sgemm(self, h, s, ws, bytes, g)
    }
    fn graph_nodes(&self, g: RawGraph) -> Result<NodeCounts, DriverCode> {
        SimDevice::graph_nodes(self, g)
    }
    fn graph_host_copies(&self, g: RawGraph) -> Result<Vec<super::HostCopy>, DriverCode> {
        SimDevice::graph_host_copies(self, g)
    }
    fn graph_instantiate_with(
        &self,
        g: RawGraph,
        flags: InstFlags,
        upload: Option<RawStream>,
    ) -> Result<RawExec, DriverCode> {
        SimDevice::graph_instantiate_with(self, g, flags, upload)
    }
    fn graph_dot(&self, g: RawGraph) -> Result<String, super::DotError> {
        SimDevice::graph_dot(self, g)
    }
    fn graph_snapshot(
        &self,
        g: RawGraph,
    ) -> Result<(super::snapshot::RawSnapshot, super::snapshot::NodeOps), DriverCode> {
        SimDevice::graph_snapshot(self, g)
    }
    fn locate(&self, addr: u64) -> Option<super::snapshot::Located> {
        SimDevice::locate(self, addr)
    }
    fn capture_node_count(&self, s: RawStream) -> Result<usize, DriverCode> {
        SimDevice::capture_node_count(self, s)
    }
    fn graph_upload(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::graph_upload(self, e, s)
    }
    fn graph_launch(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
        SimDevice::graph_launch(self, e, s)
    }
    fn graph_exec_update(&self, e: RawExec, g: RawGraph) -> Result<bool, DriverCode> {
        SimDevice::graph_exec_update(self, e, g)
    }
    fn graph_exec_destroy(&self, e: RawExec) -> Result<(), DriverCode> {
        SimDevice::graph_exec_destroy(self, e)
    }
    fn graph_destroy(&self, g: RawGraph) -> Result<(), DriverCode> {
        SimDevice::graph_destroy(self, g)
    }
    fn graph_mem_usage(&self) -> Result<super::GraphMemUsage, DriverCode> {
        SimDevice::graph_mem_usage(self)
    }
    fn graph_mem_reset_high(&self) -> Result<(), DriverCode> {
        SimDevice::graph_mem_reset_high(self)
    }
    fn graph_mem_trim(&self) -> Result<(), DriverCode> {
        SimDevice::graph_mem_trim(self)
    }
}
