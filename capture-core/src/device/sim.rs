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

pub(crate) mod dot;
pub(crate) mod world;
use crate::ptx::{self, KernelSignature};

const ILLEGAL_STATE: DriverCode = DriverCode(401);

/// A host implementation of a kernel for the simulated device.
pub type HostKernel = Arc<dyn Fn(&mut KernelCall<'_>) -> Result<(), KernelFault> + Send + Sync>;

/// A simulated kernel touched memory it does not own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFault {
    /// What went wrong.
    pub reason: String,
}

impl fmt::Display for KernelFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// One kernel launch as a host implementation sees it: its geometry, its arguments (one
/// 8-byte slot per parameter) and the device's memory.
pub struct KernelCall<'m> {
    /// Grid dimensions.
    pub grid: (u32, u32, u32),
    /// Block dimensions.
    pub block: (u32, u32, u32),
    slots: &'m [u64],
    mem: &'m mut Memory,
}

impl KernelCall<'_> {
    /// Number of arguments.
    pub fn arg_count(&self) -> usize {
        self.slots.len()
    }
    fn slot(&self, i: usize) -> Result<u64, KernelFault> {
        self.slots
            .get(i)
            .copied()
            .ok_or_else(|| KernelFault { reason: format!("argument {i} does not exist ({} given)", self.slots.len()) })
    }
    /// Argument `i` as a device address.
    pub fn ptr(&self, i: usize) -> Result<u64, KernelFault> {
        self.slot(i)
    }
    /// Argument `i` as a `u32`.
    pub fn u32(&self, i: usize) -> Result<u32, KernelFault> {
        Ok(self.slot(i)? as u32)
    }
    /// Argument `i` as an `f32`.
    pub fn f32(&self, i: usize) -> Result<f32, KernelFault> {
        Ok(f32::from_bits(self.slot(i)? as u32))
    }
    /// Reads `len` elements at device address `addr`.
    pub fn read<T: bytemuck::Pod>(&self, addr: u64, len: usize) -> Result<Vec<T>, KernelFault> {
        let mut out = Vec::new();
        out.try_reserve_exact(len)
            .map_err(|_| KernelFault { reason: format!("read of {len} elements: out of host memory") })?;
        out.resize(len, T::zeroed());
        self.mem
            .read(addr, bytemuck::cast_slice_mut(&mut out))
            .map_err(|_| KernelFault { reason: format!("read of {len} elements at {addr:#x} is out of bounds") })?;
        Ok(out)
    }
    /// Writes `data` at device address `addr`.
    pub fn write<T: bytemuck::Pod>(&mut self, addr: u64, data: &[T]) -> Result<(), KernelFault> {
        self.mem.write(addr, bytemuck::cast_slice(data)).map_err(|_| KernelFault {
            reason: format!("write of {} elements at {addr:#x} is out of bounds", data.len()),
        })
    }
}

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
enum AllocKind {
    Device,
    Host,
    Managed,
    Graph,
}

/// The simulated address space.
///
/// Allocations are paged and lazily backed: a page of host memory is allocated the first
/// time it is written (fallibly: a failed host allocation is `OUT_OF_MEMORY`, never an
/// abort), and reads of untouched pages give zeros. So the full advertised 80 GiB can be
/// allocated on a machine with less host memory, as long as the work touches less of it
/// (issue #13, item 1).
#[derive(Default)]
pub(crate) struct Memory {
    allocs: BTreeMap<u64, Alloc>,
    next: u64,
    /// Device memory in use (device, managed and graph allocations), as `mem_info` reports.
    used: usize,
    /// Pinned host memory in use (not device memory: not in `mem_info`).
    host_used: usize,
}

/// Bytes per page of simulated memory (the last page of an allocation may be shorter).
const PAGE: usize = 64 << 10;

struct Alloc {
    kind: AllocKind,
    len: usize,
    /// Backed pages by index; a missing page reads as zeros.
    pages: HashMap<usize, Box<[u8]>>,
}

impl Alloc {
    fn page_len(&self, i: usize) -> usize {
        PAGE.min(self.len - i * PAGE)
    }
    /// Page `i`, backed now if it was not.
    fn page_mut(&mut self, i: usize) -> Result<&mut [u8], DriverCode> {
        let n = self.page_len(i);
        match self.pages.entry(i) {
            std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(e) => {
                let mut v = Vec::new();
                v.try_reserve_exact(n).map_err(|_| DriverCode::OUT_OF_MEMORY)?;
                v.resize(n, 0);
                Ok(e.insert(v.into_boxed_slice()))
            }
        }
    }
    /// Calls `f(page, offset in page, offset in range, length)` for each page piece of
    /// `off..off + len`.
    fn pieces(
        off: usize,
        len: usize,
        mut f: impl FnMut(usize, usize, usize, usize) -> Result<(), DriverCode>,
    ) -> Result<(), DriverCode> {
        let mut done = 0;
        while done < len {
            let pos = off + done;
            let (i, o) = (pos / PAGE, pos % PAGE);
            let n = (PAGE - o).min(len - done);
            f(i, o, done, n)?;
            done += n;
        }
        Ok(())
    }
    fn read(&self, off: usize, dst: &mut [u8]) {
        let _ = Self::pieces(off, dst.len(), |i, o, d, n| {
            match self.pages.get(&i) {
                Some(p) => dst[d..d + n].copy_from_slice(&p[o..o + n]),
                None => dst[d..d + n].fill(0),
            }
            Ok(())
        });
    }
    fn write(&mut self, off: usize, src: &[u8]) -> Result<(), DriverCode> {
        Self::pieces(off, src.len(), |i, o, d, n| {
            self.page_mut(i)?[o..o + n].copy_from_slice(&src[d..d + n]);
            Ok(())
        })
    }
    fn set(&mut self, off: usize, value: u8, len: usize) -> Result<(), DriverCode> {
        if value == 0 && off == 0 && len == self.len {
            self.pages.clear();
            return Ok(());
        }
        Self::pieces(off, len, |i, o, _, n| {
            if value == 0 {
                if o == 0 && n == self.page_len(i) {
                    self.pages.remove(&i);
                    return Ok(());
                }
                if !self.pages.contains_key(&i) {
                    return Ok(());
                }
            }
            self.page_mut(i)?[o..o + n].fill(value);
            Ok(())
        })
    }
}

impl Memory {
    fn alloc(&mut self, bytes: usize, kind: AllocKind) -> u64 {
        if self.next == 0 {
            self.next = 0x7000_0000_0000;
        }
        let base = self.next;
        // 256-byte alignment like the driver, plus a guard gap so overruns are detected.
        self.next = base + ((bytes as u64 + 255) & !255) + 4096;
        match kind {
            AllocKind::Host => self.host_used += bytes,
            // Graph allocations are virtual; their device memory is the graph pool's (see
            // `GraphPool`), counted when a graph using them launches.
            AllocKind::Graph => {}
            AllocKind::Device | AllocKind::Managed => self.used += bytes,
        }
        self.allocs.insert(base, Alloc { kind, len: bytes, pages: HashMap::new() });
        base
    }
    fn free(&mut self, base: u64, kinds: &[AllocKind]) -> Result<(), DriverCode> {
        match self.allocs.get(&base) {
            Some(a) if kinds.contains(&a.kind) => {
                match a.kind {
                    AllocKind::Host => self.host_used -= a.len,
                    AllocKind::Graph => {}
                    AllocKind::Device | AllocKind::Managed => self.used -= a.len,
                }
                self.allocs.remove(&base);
                Ok(())
            }
            _ => Err(DriverCode::INVALID_VALUE),
        }
    }
    /// The allocation holding `addr..addr + len`, and the offset of `addr` in it.
    fn find(&self, addr: u64, len: usize) -> Result<(u64, usize), DriverCode> {
        let (base, a) = self.allocs.range(..=addr).next_back().ok_or(DriverCode::ILLEGAL_ADDRESS)?;
        let off = usize::try_from(addr - base).map_err(|_| DriverCode::ILLEGAL_ADDRESS)?;
        let end = off.checked_add(len).ok_or(DriverCode::ILLEGAL_ADDRESS)?;
        if end > a.len {
            return Err(DriverCode::ILLEGAL_ADDRESS);
        }
        Ok((*base, off))
    }
    fn at_mut(&mut self, addr: u64, len: usize) -> Result<(&mut Alloc, usize), DriverCode> {
        let (base, off) = self.find(addr, len)?;
        let a = self.allocs.get_mut(&base).ok_or(DriverCode::ILLEGAL_ADDRESS)?;
        Ok((a, off))
    }
    fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), DriverCode> {
        let (base, off) = self.find(addr, dst.len())?;
        let a = self.allocs.get(&base).ok_or(DriverCode::ILLEGAL_ADDRESS)?;
        a.read(off, dst);
        Ok(())
    }
    fn write(&mut self, addr: u64, src: &[u8]) -> Result<(), DriverCode> {
        let (a, off) = self.at_mut(addr, src.len())?;
        a.write(off, src)
    }
    fn copy(&mut self, dst: u64, src: u64, bytes: usize) -> Result<(), DriverCode> {
        // Both ends are checked first, so a bad copy changes nothing; then it goes a page
        // at a time (never a host buffer of the copy's full size).
        self.find(src, bytes)?;
        self.find(dst, bytes)?;
        let mut tmp = vec![0; bytes.min(PAGE)];
        let mut done = 0;
        while done < bytes {
            let n = tmp.len().min(bytes - done);
            self.read(src + done as u64, &mut tmp[..n])?;
            self.write(dst + done as u64, &tmp[..n])?;
            done += n;
        }
        Ok(())
    }
    fn set(&mut self, dst: u64, value: u8, bytes: usize) -> Result<(), DriverCode> {
        let (a, off) = self.at_mut(dst, bytes)?;
        a.set(off, value, bytes)
    }
    /// The length of the allocation at `base` of kind `kind`, if there is one.
    fn len_of(&self, base: u64, kind: AllocKind) -> Option<usize> {
        self.allocs.get(&base).filter(|a| a.kind == kind).map(|a| a.len)
    }
}

#[derive(Clone)]
enum Node {
    Kernel {
        name: String,
        grid: (u32, u32, u32),
        block: (u32, u32, u32),
        slots: Vec<u64>,
    },
    Copy {
        dst: u64,
        src: u64,
        bytes: usize,
    },
    /// A copy from pageable host memory (what a cudarc `memcpy_htod` from a `Vec` records):
    /// replays write the bytes the host held at capture time.
    HostCopy {
        dst: u64,
        data: Vec<u8>,
    },
    Memset {
        dst: u64,
        value: u8,
        bytes: usize,
    },
    MemAlloc {
        ptr: u64,
    },
    MemFree {
        ptr: u64,
    },
    Event,
    /// An NCCL call, recorded by this rank's capture: it runs only in a launch of every
    /// rank's graph together ([`world`]).
    #[cfg_attr(not(feature = "nccl"), allow(dead_code))]
    Collective(Arc<crate::raw::coll::CollNode>),
    /// A conditional node: its condition is the `u32` at `handle` (a cell of simulated
    /// memory), set by kernels (`cudaGraphSetConditional`); WHILE runs `bodies[0]` while it
    /// is non-zero, IF runs `bodies[0]` when it is, `bodies[1]` (if any) when not.
    Cond {
        kind: crate::device::CondKind,
        handle: u64,
        bodies: Vec<Arc<Vec<Node>>>,
    },
    /// Where a condition handle was made: sets it to 0. The driver assigns a handle made
    /// without a default nothing (a launch finds what the last one left, or anything), so a
    /// node must not read it before a kernel sets it; 0 here makes a node whose condition
    /// nothing set never run its body — a loop's body not even once — so a test catches a
    /// missing set. Not a node of the GPU's graph (not counted).
    CondReset {
        handle: u64,
    },
}

/// Iterations after which a simulated WHILE is taken to run forever (a body that never
/// clears its condition): the launch fails instead of hanging the test.
const COND_ITERATION_LIMIT: u64 = 1 << 22;

/// What recorded a node: the library operation and where it was issued (`None` for work the
/// library did not issue, such as a copy made through cudarc behind its back).
#[derive(Copy, Clone, Debug)]
pub(crate) struct NodeLabel {
    op: &'static str,
    site: Option<CallSite>,
}

#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum CapState {
    Active,
    Invalidated,
}

struct Capture {
    origin: usize,
    mode: CaptureMode,
    thread: ThreadId,
    state: CapState,
    nodes: Vec<Node>,
    /// Forked streams and whether their latest work has been joined back.
    forks: HashMap<usize, bool>,
    graph_allocs: Vec<u64>,
    /// Graph-allocated bytes live at this point of the capture, and their peak.
    graph_live: usize,
    graph_peak: usize,
    /// Graph allocations live at this point of the capture (address -> bytes).
    graph_live_allocs: HashMap<u64, usize>,
    /// Graph allocations freed earlier in the capture (address, bytes), which a later
    /// allocation of the same capture may get again, as the driver reuses addresses.
    graph_freed: Vec<(u64, usize)>,
    /// Each stream's last node: the next node recorded on it depends on it.
    tails: HashMap<usize, usize>,
    /// Dependency edges (from, to) between node indices.
    edges: Vec<(usize, usize)>,
    /// The stream each node was recorded on.
    stream_of: Vec<usize>,
    /// What recorded each node, once the library has said (see `SimDevice::label_nodes`).
    labels: Vec<Option<NodeLabel>>,
    /// Nodes before this index are labelled.
    labeled: usize,
    /// For a capture into a conditional node's body: (the capture holding the node, the
    /// node's index there, the body's index).
    into: Option<(u64, usize, usize)>,
}

#[derive(Default)]
struct SimStream {
    capture: Option<u64>,
}

#[derive(Default)]
struct SimEvent {
    /// (capture id, recorded by stream, the node recording it) if last recorded inside a
    /// capture.
    captured: Option<(u64, usize, usize)>,
}

struct Graph {
    nodes: Arc<Vec<Node>>,
    allocs: Vec<u64>,
    /// Peak graph-allocated bytes (what a launch needs from the graph pool).
    footprint: usize,
    origin: usize,
    edges: Vec<(usize, usize)>,
    stream_of: Vec<usize>,
    labels: Vec<Option<NodeLabel>>,
}

/// The device's graph-memory pool, modelled on the driver's: one per device, shared by all
/// graphs. Graphs launched one after another reuse its physical memory, so a launch grows the
/// reservation to the launching graph's footprint at most; a trim releases it (nothing runs
/// after a simulated launch returns).
#[derive(Default)]
struct GraphPool {
    reserved: usize,
    reserved_high: usize,
    used_high: usize,
}

/// An executable graph and what its flags make the device check at launch.
struct Exec {
    nodes: Arc<Vec<Node>>,
    /// `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`.
    auto_free: bool,
    /// Graph allocations the graph does not free itself.
    unfreed: Vec<u64>,
    /// Those of them a launch allocated and nothing has freed yet.
    live: Vec<u64>,
}

impl Exec {
    fn new(nodes: Arc<Vec<Node>>, auto_free: bool) -> Self {
        // In graph order: an address can be allocated again after it was freed.
        let mut live: Vec<u64> = Vec::new();
        for n in nodes.iter() {
            match n {
                Node::MemAlloc { ptr } => live.push(*ptr),
                Node::MemFree { ptr } => live.retain(|p| p != ptr),
                _ => {}
            }
        }
        Self { nodes, auto_free, unfreed: live, live: Vec::new() }
    }
}

#[derive(Default)]
struct State {
    mem: Memory,
    next_handle: usize,
    next_capture: u64,
    streams: HashMap<usize, SimStream>,
    events: HashMap<usize, SimEvent>,
    modules: HashMap<usize, Vec<KernelSignature>>,
    functions: HashMap<usize, String>,
    captures: HashMap<u64, Capture>,
    graphs: HashMap<usize, Graph>,
    /// Each executable graph's footprint in the graph pool.
    exec_footprint: HashMap<usize, usize>,
    pool: GraphPool,
    execs: HashMap<usize, Exec>,
    /// Graph uploads (`cuGraphUpload`, or instantiation with the upload flag).
    uploads: usize,
    kernels: HashMap<String, HostKernel>,
    unmodelled: HashSet<String>,
    #[cfg_attr(not(feature = "cublas"), allow(dead_code))]
    blas: HashSet<usize>,
    /// Body graphs of conditional nodes still being recorded: handle -> (capture, node
    /// index, body index).
    bodies: HashMap<usize, (u64, usize, usize)>,
}

impl State {
    fn handle(&mut self) -> usize {
        self.next_handle += 1;
        self.next_handle
    }
    fn active_capture_of(&self, s: usize) -> Option<u64> {
        self.streams.get(&s).and_then(|st| st.capture)
    }
    /// Invalidates every capture that prohibits "potentially unsafe" calls from this thread.
    fn prohibited(&mut self) -> Result<(), DriverCode> {
        let me = std::thread::current().id();
        let mut hit = false;
        for c in self.captures.values_mut() {
            let applies = match c.mode {
                CaptureMode::Global => true,
                CaptureMode::ThreadLocal => c.thread == me,
                CaptureMode::Relaxed => false,
            };
            if applies {
                c.state = CapState::Invalidated;
                hit = true;
            }
        }
        if hit {
            Err(DriverCode::STREAM_CAPTURE_UNSUPPORTED)
        } else {
            Ok(())
        }
    }
    fn invalidate(&mut self, cap: u64) {
        if let Some(c) = self.captures.get_mut(&cap) {
            c.state = CapState::Invalidated;
        }
    }
    /// Records `node` if `s` is capturing; `Ok(false)` when the caller should run it now.
    fn record(&mut self, s: usize, node: Node) -> Result<bool, DriverCode> {
        self.record_after(s, node, None)
    }
    /// Records `node` if `s` is capturing, depending on the last node of `s` and on `also`
    /// (the node that recorded an event the stream waits on).
    fn record_after(&mut self, s: usize, node: Node, also: Option<usize>) -> Result<bool, DriverCode> {
        let Some(cap) = self.active_capture_of(s) else { return Ok(false) };
        let c = self.captures.get_mut(&cap).ok_or(DriverCode::INVALID_HANDLE)?;
        if c.state == CapState::Invalidated {
            return Err(DriverCode::STREAM_CAPTURE_INVALIDATED);
        }
        if s != c.origin {
            c.forks.insert(s, false);
        }
        let idx = c.nodes.len();
        let prev = c.tails.insert(s, idx);
        for dep in [prev, also.filter(|d| Some(*d) != prev)].into_iter().flatten() {
            c.edges.push((dep, idx));
        }
        c.nodes.push(node);
        c.stream_of.push(s);
        c.labels.push(None);
        Ok(true)
    }
    fn run(&mut self, node: &Node) -> Result<(), DriverCode> {
        match node {
            Node::Kernel { name, grid, block, slots } => {
                let Some(k) = self.kernels.get(name).cloned() else {
                    self.unmodelled.insert(name.clone());
                    return Ok(());
                };
                let mut call = KernelCall { grid: *grid, block: *block, slots, mem: &mut self.mem };
                k(&mut call).map_err(|_| DriverCode::ILLEGAL_ADDRESS)
            }
            Node::Copy { dst, src, bytes, .. } => self.mem.copy(*dst, *src, *bytes),
            Node::HostCopy { dst, data } => self.mem.write(*dst, data),
            Node::Memset { dst, value, bytes } => self.mem.set(*dst, *value, *bytes),
            Node::MemAlloc { .. } | Node::MemFree { .. } | Node::Event => Ok(()),
            // A collective waits for its peers: alone, a GPU would wait forever.
            Node::Collective(_) => Err(ILLEGAL_STATE),
            Node::CondReset { handle } => self.mem.write(*handle, &0u32.to_le_bytes()),
            Node::Cond { kind, handle, bodies } => {
                let value = |mem: &Memory| -> Result<u32, DriverCode> {
                    let mut b = [0u8; 4];
                    mem.read(*handle, &mut b)?;
                    Ok(u32::from_le_bytes(b))
                };
                match kind {
                    crate::device::CondKind::If => {
                        let body = if value(&self.mem)? != 0 { bodies.first() } else { bodies.get(1) };
                        for n in body.map(|b| b.iter()).into_iter().flatten() {
                            self.run(n)?;
                        }
                    }
                    crate::device::CondKind::While => {
                        let mut i = 0u64;
                        while value(&self.mem)? != 0 {
                            i += 1;
                            if i > COND_ITERATION_LIMIT {
                                return Err(DriverCode::LAUNCH_TIMEOUT);
                            }
                            for n in bodies.first().map(|b| b.iter()).into_iter().flatten() {
                                self.run(n)?;
                            }
                        }
                    }
                }
                Ok(())
            }
        }
    }
    /// Lets go of one holder of a node list (a graph's, an executable graph's, a conditional
    /// node's body): when it was the last, the condition cells of its nodes are freed, and
    /// the bodies they hold let go of in turn.
    fn release(&mut self, nodes: Arc<Vec<Node>>) {
        if let Some(nodes) = Arc::into_inner(nodes) {
            self.release_nodes(nodes);
        }
    }
    /// Frees the condition cells made by `nodes` (a capture's, ended or discarded), and lets
    /// go of the bodies of its conditional nodes. A cell is made by one `CondReset` in one
    /// node list, so it goes when the last holder of that list does.
    fn release_nodes(&mut self, nodes: Vec<Node>) {
        for n in nodes {
            match n {
                Node::CondReset { handle, .. } => {
                    let _ = self.mem.free(handle, &[AllocKind::Graph]);
                }
                Node::Cond { bodies, .. } => bodies.into_iter().for_each(|b| self.release(b)),
                _ => {}
            }
        }
    }
    /// Frees a graph allocation a launch left live (outside any graph: `cuMemFreeAsync` or
    /// `cuMemFree`); false when `p` is not one. The memory stays reserved for the graph.
    fn free_live_graph_alloc(&mut self, p: u64) -> bool {
        for x in self.execs.values_mut() {
            if let Some(i) = x.live.iter().position(|q| *q == p) {
                x.live.swap_remove(i);
                return true;
            }
        }
        false
    }
    /// Labels the nodes just recorded on `s` (if capturing) as work issued outside the library.
    fn label_foreign(&mut self, s: usize, op: &'static str) {
        let Some(cap) = self.active_capture_of(s) else { return };
        if let Some(c) = self.captures.get_mut(&cap) {
            for l in &mut c.labels[c.labeled..] {
                *l = Some(NodeLabel { op, site: None });
            }
            c.labeled = c.labels.len();
        }
    }
    fn record_or_run(&mut self, s: usize, node: Node) -> Result<(), DriverCode> {
        if !self.streams.contains_key(&s) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        if self.record(s, node.clone())? {
            Ok(())
        } else {
            self.run(&node)
        }
    }
}

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

/// The kernel name under which the simulated device records a cuBLAS SGEMM.
const SGEMM: &str = "cublasSgemm";

/// Column-major `C = alpha * op(A) * op(B) + beta * C`, as cuBLAS computes it.
fn sgemm_host(c: &mut KernelCall<'_>) -> Result<(), KernelFault> {
    let (ta, tb) = (c.slot(0)? != 0, c.slot(1)? != 0);
    let (m, n, k) = (c.slot(2)? as usize, c.slot(3)? as usize, c.slot(4)? as usize);
    let alpha = c.f32(5)?;
    let (lda, ldb, beta, ldc) = (c.slot(7)? as usize, c.slot(9)? as usize, c.f32(10)?, c.slot(12)? as usize);
    let a: Vec<f32> = c.read(c.ptr(6)?, lda * if ta { m } else { k })?;
    let b: Vec<f32> = c.read(c.ptr(8)?, ldb * if tb { k } else { n })?;
    let mut out: Vec<f32> = c.read(c.ptr(11)?, ldc * n)?;
    for j in 0..n {
        for i in 0..m {
            let mut acc = 0.0f32;
            for p in 0..k {
                let av = if ta { a[p + i * lda] } else { a[i + p * lda] };
                let bv = if tb { b[j + p * ldb] } else { b[p + j * ldb] };
                acc += av * bv;
            }
            let o = &mut out[i + j * ldc];
            *o = alpha * acc + if beta == 0.0 { 0.0 } else { beta * *o };
        }
    }
    c.write(c.ptr(11)?, &out)
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
        let mut s = self.st();
        let h = s.handle();
        s.streams.insert(h, SimStream::default());
        Ok(RawStream(h))
    }
    fn stream_destroy(&self, s: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        if st.active_capture_of(s.0).is_some() {
            return Err(ILLEGAL_STATE);
        }
        st.streams.remove(&s.0).map(|_| ()).ok_or(DriverCode::INVALID_HANDLE)
    }
    fn stream_synchronize(&self, s: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        if !st.streams.contains_key(&s.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        if let Some(cap) = st.active_capture_of(s.0) {
            // The capturing stream itself: fails and invalidates in every mode.
            st.invalidate(cap);
            return Err(DriverCode::STREAM_CAPTURE_UNSUPPORTED);
        }
        // Another stream: a "potentially unsafe" call (Global: any thread; ThreadLocal: the
        // capturing thread).
        st.prohibited()
    }
    fn stream_query(&self, s: RawStream) -> Result<bool, DriverCode> {
        self.stream_synchronize(s).map(|()| true)
    }
    fn ctx_synchronize(&self) -> Result<(), DriverCode> {
        let mut st = self.st();
        if st.captures.is_empty() {
            return Ok(());
        }
        for c in st.captures.values_mut() {
            c.state = CapState::Invalidated;
        }
        Err(DriverCode::STREAM_CAPTURE_UNSUPPORTED)
    }

    fn mem_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        self.sync_alloc(bytes, AllocKind::Device).map(DevPtr)
    }
    fn mem_alloc_async(&self, bytes: usize, s: RawStream) -> Result<DevPtr, DriverCode> {
        let mut st = self.st();
        if bytes == 0 {
            return Err(DriverCode::INVALID_VALUE);
        }
        if st.mem.used.saturating_add(bytes) > self.total {
            return Err(DriverCode::OUT_OF_MEMORY);
        }
        match st.active_capture_of(s.0) {
            Some(cap) => {
                if st.captures.get(&cap).is_some_and(|c| c.state == CapState::Invalidated) {
                    return Err(DriverCode::STREAM_CAPTURE_INVALIDATED);
                }
                // Like the driver, a graph allocation may get the address of one freed earlier
                // in the same capture (seen on the H100).
                let reuse = st.captures.get(&cap).and_then(|c| c.graph_freed.iter().position(|&(_, len)| len >= bytes));
                let p = match reuse {
                    Some(i) => st.captures.get_mut(&cap).map_or(0, |c| c.graph_freed.swap_remove(i).0),
                    None => st.mem.alloc(bytes, AllocKind::Graph),
                };
                st.record(s.0, Node::MemAlloc { ptr: p })?;
                if let Some(c) = st.captures.get_mut(&cap) {
                    if reuse.is_none() {
                        c.graph_allocs.push(p);
                    }
                    c.graph_live_allocs.insert(p, bytes);
                    c.graph_live += bytes;
                    c.graph_peak = c.graph_peak.max(c.graph_live);
                }
                Ok(DevPtr(p))
            }
            None => {
                if !st.streams.contains_key(&s.0) {
                    return Err(DriverCode::INVALID_HANDLE);
                }
                Ok(DevPtr(st.mem.alloc(bytes, AllocKind::Device)))
            }
        }
    }
    fn mem_free(&self, p: DevPtr) -> Result<(), DriverCode> {
        let mut st = self.st();
        st.prohibited()?;
        if st.free_live_graph_alloc(p.0) {
            return Ok(());
        }
        st.mem.free(p.0, &[AllocKind::Device, AllocKind::Managed])
    }
    fn mem_free_async(&self, p: DevPtr, s: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        match st.active_capture_of(s.0) {
            Some(cap) => {
                // Only memory this capture allocated, and has not freed yet, can be freed in its
                // graph; anything else (a double free included) is INVALID_VALUE, not
                // recorded, and the capture stays valid.
                let live = st.captures.get(&cap).is_some_and(|c| c.graph_live_allocs.contains_key(&p.0));
                if !live {
                    return Err(DriverCode::INVALID_VALUE);
                }
                // Freed in the graph; the memory stays reserved until the graph is destroyed.
                st.record(s.0, Node::MemFree { ptr: p.0 })?;
                let len = st.mem.len_of(p.0, AllocKind::Graph).unwrap_or(0);
                if let Some(c) = st.captures.get_mut(&cap) {
                    let bytes = c.graph_live_allocs.remove(&p.0).unwrap_or(0);
                    c.graph_live = c.graph_live.saturating_sub(bytes);
                    c.graph_freed.push((p.0, len));
                }
                Ok(())
            }
            None => {
                if st.free_live_graph_alloc(p.0) {
                    return Ok(());
                }
                st.mem.free(p.0, &[AllocKind::Device])
            }
        }
    }
    fn host_alloc(&self, bytes: usize) -> Result<HostPtr, DriverCode> {
        let mut st = self.st();
        st.prohibited()?;
        if bytes == 0 {
            return Err(DriverCode::INVALID_VALUE);
        }
        if st.mem.host_used.saturating_add(bytes) > SIM_HOST_MEM {
            return Err(DriverCode::OUT_OF_MEMORY);
        }
        Ok(HostPtr(st.mem.alloc(bytes, AllocKind::Host) as usize))
    }
    fn host_free(&self, p: HostPtr) -> Result<(), DriverCode> {
        let mut st = self.st();
        st.prohibited()?;
        st.mem.free(p.0 as u64, &[AllocKind::Host])
    }
    fn managed_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        self.sync_alloc(bytes, AllocKind::Managed).map(DevPtr)
    }
    fn mem_advise(&self, p: DevPtr, bytes: usize, _advice: Advice) -> Result<(), DriverCode> {
        let st = self.st();
        match st.mem.len_of(p.0, AllocKind::Managed) {
            Some(len) if bytes <= len => Ok(()),
            _ => Err(DriverCode::INVALID_VALUE),
        }
    }
    fn mem_prefetch_async(&self, p: DevPtr, bytes: usize, _to_device: bool, s: RawStream) -> Result<(), DriverCode> {
        let st = self.st();
        if !st.streams.contains_key(&s.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        // Host memory is the only memory: a prefetch has nothing to move.
        match st.mem.len_of(p.0, AllocKind::Managed) {
            Some(len) if bytes <= len => Ok(()),
            _ => Err(DriverCode::INVALID_VALUE),
        }
    }
    fn host_write(&self, dst: HostPtr, offset: usize, src: &[u8]) {
        // The safe layer checks bounds first; an error here would be a bug in it.
        let r = self.st().mem.write(dst.0 as u64 + offset as u64, src);
        debug_assert!(r.is_ok(), "host_write out of bounds");
    }
    fn host_read(&self, src: HostPtr, offset: usize, dst: &mut [u8]) {
        let r = self.st().mem.read(src.0 as u64 + offset as u64, dst);
        debug_assert!(r.is_ok(), "host_read out of bounds");
    }
    fn host_zero(&self, dst: HostPtr, bytes: usize) {
        // Lazily backed: zeroing drops the pages, so it costs no host memory.
        let r = self.st().mem.set(dst.0 as u64, 0, bytes);
        debug_assert!(r.is_ok(), "host_zero out of bounds");
    }
    fn managed_host_ptr(&self, p: DevPtr) -> HostPtr {
        HostPtr(p.0 as usize)
    }

    fn memcpy_htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), DriverCode> {
        // Silent during capture: runs now, not recorded.
        self.st().mem.write(dst.0, src)
    }
    fn memcpy_dtoh(&self, dst: &mut [u8], src: DevPtr) -> Result<(), DriverCode> {
        self.st().mem.read(src.0, dst)
    }
    fn memset_d8(&self, dst: DevPtr, value: u8, bytes: usize) -> Result<(), DriverCode> {
        self.st().mem.set(dst.0, value, bytes)
    }
    fn memcpy_htod_async(&self, dst: DevPtr, src: HostPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        let node = Node::Copy { dst: dst.0, src: src.0 as u64, bytes };
        self.st().record_or_run(s.0, node)
    }
    fn memcpy_dtoh_async(&self, dst: HostPtr, src: DevPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        let node = Node::Copy { dst: dst.0 as u64, src: src.0, bytes };
        self.st().record_or_run(s.0, node)
    }
    fn memcpy_dtod_async(&self, dst: DevPtr, src: DevPtr, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        let node = Node::Copy { dst: dst.0, src: src.0, bytes };
        self.st().record_or_run(s.0, node)
    }
    fn memset_d8_async(&self, dst: DevPtr, value: u8, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        self.st().record_or_run(s.0, Node::Memset { dst: dst.0, value, bytes })
    }

    fn event_create(&self, _timing: bool) -> Result<RawEvent, DriverCode> {
        let mut st = self.st();
        let h = st.handle();
        st.events.insert(h, SimEvent::default());
        Ok(RawEvent(h))
    }
    fn event_destroy(&self, e: RawEvent) -> Result<(), DriverCode> {
        self.st().events.remove(&e.0).map(|_| ()).ok_or(DriverCode::INVALID_HANDLE)
    }
    fn event_record(&self, e: RawEvent, s: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        if !st.events.contains_key(&e.0) || !st.streams.contains_key(&s.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        let cap = st.active_capture_of(s.0);
        let mut node = 0;
        if let Some(c) = cap {
            st.record(s.0, Node::Event)?;
            node = st.captures.get(&c).map_or(0, |c| c.nodes.len() - 1);
        }
        if let Some(ev) = st.events.get_mut(&e.0) {
            ev.captured = cap.map(|c| (c, s.0, node));
        }
        Ok(())
    }
    fn stream_wait_event(&self, s: RawStream, e: RawEvent) -> Result<(), DriverCode> {
        let mut st = self.st();
        let captured = st.events.get(&e.0).ok_or(DriverCode::INVALID_HANDLE)?.captured;
        if !st.streams.contains_key(&s.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        let Some((cap, recorded_by, at)) = captured else {
            // A capturing stream cannot depend on work outside the capture: ISOLATION, and
            // the capture is invalidated (every mode). Outside capture: nothing to wait for.
            if let Some(mine) = st.active_capture_of(s.0) {
                st.invalidate(mine);
                return Err(DriverCode::STREAM_CAPTURE_ISOLATION);
            }
            return Ok(());
        };
        match st.active_capture_of(s.0) {
            None => {
                // Fork: the stream joins the capture.
                let c = st.captures.get_mut(&cap).ok_or(DriverCode::STREAM_CAPTURE_INVALIDATED)?;
                if c.state == CapState::Invalidated {
                    return Err(DriverCode::STREAM_CAPTURE_INVALIDATED);
                }
                c.forks.insert(s.0, false);
                // The forked stream's first node depends on the event's.
                c.tails.insert(s.0, at);
                if let Some(ss) = st.streams.get_mut(&s.0) {
                    ss.capture = Some(cap);
                }
                Ok(())
            }
            Some(mine) if mine == cap => {
                // Join: the recording stream's work is now waited on.
                if let Some(c) = st.captures.get_mut(&cap) {
                    if recorded_by != s.0 {
                        if let Some(j) = c.forks.get_mut(&recorded_by) {
                            *j = true;
                        }
                    }
                }
                st.record_after(s.0, Node::Event, Some(at)).map(|_| ())
            }
            Some(_) => Err(DriverCode::STREAM_CAPTURE_ISOLATION),
        }
    }
    fn event_query(&self, e: RawEvent) -> Result<bool, DriverCode> {
        self.event_synchronize(e).map(|()| true)
    }
    fn event_synchronize(&self, e: RawEvent) -> Result<(), DriverCode> {
        let mut st = self.st();
        let captured = st.events.get(&e.0).ok_or(DriverCode::INVALID_HANDLE)?.captured;
        if let Some((cap, _, _)) = captured {
            if st.captures.contains_key(&cap) {
                // Recorded inside an active capture: fails and invalidates it in every mode.
                st.invalidate(cap);
                return Err(DriverCode::CAPTURED_EVENT);
            }
        }
        // An ordinary event: a "potentially unsafe" call.
        st.prohibited()
    }
    fn event_elapsed_ms(&self, start: RawEvent, end: RawEvent) -> Result<f32, DriverCode> {
        let st = self.st();
        if !st.events.contains_key(&start.0) || !st.events.contains_key(&end.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        // Everything completes at once on the simulated device.
        Ok(0.0)
    }

    fn module_load(&self, text: &str) -> Result<RawModule, DriverCode> {
        let sigs = ptx::parse(text).map_err(|_| DriverCode(218))?;
        let mut st = self.st();
        let h = st.handle();
        st.modules.insert(h, sigs);
        Ok(RawModule(h))
    }
    fn module_unload(&self, m: RawModule) -> Result<(), DriverCode> {
        self.st().modules.remove(&m.0).map(|_| ()).ok_or(DriverCode::INVALID_HANDLE)
    }
    fn module_function(&self, m: RawModule, name: &str) -> Result<RawFunction, DriverCode> {
        let mut st = self.st();
        let sigs = st.modules.get(&m.0).ok_or(DriverCode::INVALID_HANDLE)?;
        if !sigs.iter().any(|k| k.name == name) {
            return Err(DriverCode::NOT_FOUND);
        }
        let h = st.handle();
        st.functions.insert(h, name.to_owned());
        Ok(RawFunction(h))
    }
    fn launch(&self, f: RawFunction, p: LaunchParams<'_>, s: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        let name = st.functions.get(&f.0).ok_or(DriverCode::INVALID_HANDLE)?.clone();
        let node = Node::Kernel { name, grid: p.grid, block: p.block, slots: p.slots.to_vec() };
        st.record_or_run(s.0, node)
    }

    #[cfg(feature = "cublas")]
    fn blas_create(&self) -> Result<usize, DriverCode> {
        let mut st = self.st();
        let h = st.handle();
        st.blas.insert(h);
        Ok(h)
    }
    #[cfg(feature = "cublas")]
    fn blas_destroy(&self, h: usize) -> Result<(), DriverCode> {
        if self.st().blas.remove(&h) {
            Ok(())
        } else {
            Err(DriverCode(DriverCode::BLAS_STATUS_BASE | 1))
        }
    }
    #[cfg(feature = "cublas")]
    fn blas_bind(&self, h: usize, s: RawStream, _ws: DevPtr, _bytes: usize) -> Result<(), DriverCode> {
        let st = self.st();
        if !st.blas.contains(&h) || !st.streams.contains_key(&s.0) {
            return Err(DriverCode(DriverCode::BLAS_STATUS_BASE | 1));
        }
        Ok(())
    }
    #[cfg(feature = "cublas")]
    fn blas_sgemm(&self, h: usize, s: RawStream, ws: DevPtr, bytes: usize, g: &super::Gemm) -> Result<(), DriverCode> {
        self.blas_bind(h, s, ws, bytes)?;
        let slots = vec![
            u64::from(g.trans_a),
            u64::from(g.trans_b),
            g.m as u64,
            g.n as u64,
            g.k as u64,
            u64::from(g.alpha.to_bits()),
            g.a.0,
            g.lda as u64,
            g.b.0,
            g.ldb as u64,
            u64::from(g.beta.to_bits()),
            g.c.0,
            g.ldc as u64,
        ];
        let node = Node::Kernel { name: SGEMM.to_owned(), grid: (1, 1, 1), block: (1, 1, 1), slots };
        self.st().record_or_run(s.0, node)
    }

    fn begin_capture(&self, s: RawStream, mode: CaptureMode) -> Result<(), DriverCode> {
        let mut st = self.st();
        match st.streams.get(&s.0) {
            None => return Err(DriverCode::INVALID_HANDLE),
            Some(ss) if ss.capture.is_some() => return Err(ILLEGAL_STATE),
            Some(_) => {}
        }
        st.next_capture += 1;
        let id = st.next_capture;
        st.captures.insert(
            id,
            Capture {
                origin: s.0,
                mode,
                thread: std::thread::current().id(),
                state: CapState::Active,
                nodes: Vec::new(),
                forks: HashMap::new(),
                graph_allocs: Vec::new(),
                graph_live: 0,
                graph_peak: 0,
                graph_live_allocs: HashMap::new(),
                graph_freed: Vec::new(),
                tails: HashMap::new(),
                edges: Vec::new(),
                stream_of: Vec::new(),
                labels: Vec::new(),
                labeled: 0,
                into: None,
            },
        );
        if let Some(ss) = st.streams.get_mut(&s.0) {
            ss.capture = Some(id);
        }
        Ok(())
    }
    fn cond_handle(&self, s: RawStream) -> Result<u64, DriverCode> {
        let mut st = self.st();
        let cap = st.active_capture_of(s.0).ok_or(ILLEGAL_STATE)?;
        if st.captures.get(&cap).is_some_and(|c| c.state == CapState::Invalidated) {
            return Err(DriverCode::STREAM_CAPTURE_INVALIDATED);
        }
        // The cell lives as long as the node list holding its `CondReset` (see `release`).
        let handle = st.mem.alloc(4, AllocKind::Graph);
        if let Err(code) = st.record(s.0, Node::CondReset { handle }) {
            let _ = st.mem.free(handle, &[AllocKind::Graph]);
            return Err(code);
        }
        Ok(handle)
    }
    fn cond_add(
        &self,
        s: RawStream,
        handle: u64,
        kind: crate::device::CondKind,
        bodies: u32,
    ) -> Result<Vec<RawGraph>, DriverCode> {
        let mut st = self.st();
        let cap = st.active_capture_of(s.0).ok_or(ILLEGAL_STATE)?;
        let c = st.captures.get(&cap).ok_or(ILLEGAL_STATE)?;
        if c.state == CapState::Invalidated {
            return Err(DriverCode::STREAM_CAPTURE_INVALIDATED);
        }
        // The handle must have been made in this graph.
        if !c.nodes.iter().any(|n| matches!(n, Node::CondReset { handle: h, .. } if *h == handle)) {
            return Err(DriverCode::INVALID_VALUE);
        }
        if bodies == 0 || (kind == crate::device::CondKind::While && bodies != 1) || bodies > 2 {
            return Err(DriverCode::INVALID_VALUE);
        }
        let node = Node::Cond { kind, handle, bodies: (0..bodies).map(|_| Arc::new(Vec::new())).collect() };
        st.record(s.0, node)?;
        let idx = st.captures.get(&cap).map_or(0, |c| c.nodes.len() - 1);
        let mut graphs = Vec::new();
        for b in 0..bodies as usize {
            let h = st.handle();
            st.bodies.insert(h, (cap, idx, b));
            graphs.push(RawGraph(h));
        }
        Ok(graphs)
    }
    fn capture_into(&self, side: RawStream, g: RawGraph, mode: CaptureMode) -> Result<(), DriverCode> {
        let target = self.st().bodies.get(&g.0).copied().ok_or(DriverCode::INVALID_HANDLE)?;
        self.begin_capture(side, mode)?;
        let mut st = self.st();
        if let Some(c) = st.active_capture_of(side.0).and_then(|id| st.captures.get(&id).map(|_| id)) {
            if let Some(c) = st.captures.get_mut(&c) {
                c.into = Some(target);
            }
        }
        Ok(())
    }
    fn end_into(&self, side: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        let cap = st.active_capture_of(side.0).ok_or(ILLEGAL_STATE)?;
        let c = st.captures.remove(&cap).ok_or(ILLEGAL_STATE)?;
        for ss in st.streams.values_mut() {
            if ss.capture == Some(cap) {
                ss.capture = None;
            }
        }
        let refused = match c.into {
            None => Some(ILLEGAL_STATE),
            Some(_) if c.state == CapState::Invalidated => Some(DriverCode::STREAM_CAPTURE_INVALIDATED),
            Some(_) if c.forks.values().any(|joined| !joined) => Some(DriverCode::STREAM_CAPTURE_UNJOINED),
            // A body graph may hold kernels, copies, memsets and conditional nodes only.
            Some(_)
                if c.nodes
                    .iter()
                    .any(|n| matches!(n, Node::MemAlloc { .. } | Node::MemFree { .. } | Node::Collective(_))) =>
            {
                Some(DriverCode::NOT_SUPPORTED)
            }
            Some(_) => None,
        };
        let (parent, idx, body) = match (c.into, refused) {
            (Some(target), None) => target,
            (into, refused) => {
                // The body is discarded: what it made goes with it, and its node's capture is
                // invalidated.
                if let Some((parent, _, _)) = into {
                    st.invalidate(parent);
                }
                for p in c.graph_allocs {
                    let _ = st.mem.free(p, &[AllocKind::Graph]);
                }
                st.release_nodes(c.nodes);
                return Err(refused.unwrap_or(ILLEGAL_STATE));
            }
        };
        st.bodies.retain(|_, t| *t != (parent, idx, body));
        match st.captures.get_mut(&parent).and_then(|p| p.nodes.get_mut(idx)) {
            Some(Node::Cond { bodies, .. }) if body < bodies.len() => {
                let empty = std::mem::replace(&mut bodies[body], Arc::new(c.nodes));
                st.release(empty);
                Ok(())
            }
            _ => {
                // The node's capture has ended (`Context::end_dangling_captures` from inside
                // the body): the body has nowhere to go.
                st.release_nodes(c.nodes);
                Err(ILLEGAL_STATE)
            }
        }
    }
    fn end_capture(&self, s: RawStream) -> Result<RawGraph, DriverCode> {
        let mut st = self.st();
        let cap = st.active_capture_of(s.0).ok_or(ILLEGAL_STATE)?;
        let c = st.captures.get(&cap).ok_or(ILLEGAL_STATE)?;
        if c.origin != s.0 {
            return Err(DriverCode::STREAM_CAPTURE_UNMATCHED);
        }
        if c.mode != CaptureMode::Relaxed && c.thread != std::thread::current().id() {
            return Err(DriverCode::STREAM_CAPTURE_WRONG_THREAD);
        }
        // The capture ends here whatever the outcome: every stream in it leaves capture mode.
        let c = st.captures.remove(&cap).ok_or(ILLEGAL_STATE)?;
        for ss in st.streams.values_mut() {
            if ss.capture == Some(cap) {
                ss.capture = None;
            }
        }
        let outcome = if c.state == CapState::Invalidated {
            Err(DriverCode::STREAM_CAPTURE_INVALIDATED)
        } else if c.forks.values().any(|joined| !joined) {
            Err(DriverCode::STREAM_CAPTURE_UNJOINED)
        } else {
            Ok(())
        };
        match outcome {
            Ok(()) => {
                let h = st.handle();
                st.graphs.insert(
                    h,
                    Graph {
                        nodes: Arc::new(c.nodes),
                        allocs: c.graph_allocs,
                        origin: c.origin,
                        edges: c.edges,
                        stream_of: c.stream_of,
                        labels: c.labels,
                        footprint: c.graph_peak,
                    },
                );
                Ok(RawGraph(h))
            }
            Err(e) => {
                for p in c.graph_allocs {
                    let _ = st.mem.free(p, &[AllocKind::Graph]);
                }
                st.release_nodes(c.nodes);
                Err(e)
            }
        }
    }
    fn capture_status(&self, s: RawStream) -> Result<CaptureStatus, DriverCode> {
        let st = self.st();
        if !st.streams.contains_key(&s.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        Ok(match st.active_capture_of(s.0).and_then(|c| st.captures.get(&c)) {
            None => CaptureStatus::None,
            Some(c) if c.state == CapState::Active => CaptureStatus::Active,
            Some(_) => CaptureStatus::Invalidated,
        })
    }
    fn graph_nodes(&self, g: RawGraph) -> Result<NodeCounts, DriverCode> {
        let st = self.st();
        let graph = st.graphs.get(&g.0).ok_or(DriverCode::INVALID_HANDLE)?;
        let resets = graph.nodes.iter().filter(|n| matches!(n, Node::CondReset { .. })).count();
        let mut c = NodeCounts { total: graph.nodes.len() - resets, ..NodeCounts::default() };
        for n in graph.nodes.iter() {
            match n {
                Node::Kernel { .. } => c.kernels += 1,
                Node::Copy { .. } | Node::HostCopy { .. } => c.memcpy += 1,
                Node::Memset { .. } => c.memset += 1,
                Node::MemAlloc { .. } => c.mem_alloc += 1,
                Node::MemFree { .. } => c.mem_free += 1,
                Node::Event => c.other += 1,
                // NCCL's collectives are kernels in a GPU's graph.
                Node::Collective(_) => c.kernels += 1,
                Node::Cond { .. } => c.conditional += 1,
                Node::CondReset { .. } => {}
            }
        }
        Ok(c)
    }
    fn graph_host_copies(&self, g: RawGraph) -> Result<Vec<super::HostCopy>, DriverCode> {
        let st = self.st();
        let graph = st.graphs.get(&g.0).ok_or(DriverCode::INVALID_HANDLE)?;
        Ok(graph
            .nodes
            .iter()
            .filter_map(|n| match n {
                Node::HostCopy { data, .. } => Some(super::HostCopy { bytes: data.len(), to_device: true }),
                _ => None,
            })
            .collect())
    }
    fn graph_instantiate_with(
        &self,
        g: RawGraph,
        flags: InstFlags,
        upload: Option<RawStream>,
    ) -> Result<RawExec, DriverCode> {
        let mut st = self.st();
        let graph = st.graphs.get(&g.0).ok_or(DriverCode::INVALID_HANDLE)?;
        let (nodes, footprint) = (graph.nodes.clone(), graph.footprint);
        if flags.device_launch {
            // The driver's rules for device launch (cuGraphInstantiateWithFlags): not with
            // auto-free-on-launch; only kernel, memcpy and memset nodes (and child graphs),
            // copies not from pageable host memory. Event nodes here stand for the edges the
            // driver draws instead, so they are allowed.
            if flags.auto_free {
                return Err(DriverCode::INVALID_VALUE);
            }
            let refused =
                nodes.iter().any(|n| matches!(n, Node::MemAlloc { .. } | Node::MemFree { .. } | Node::HostCopy { .. }));
            if refused {
                return Err(DriverCode::INVALID_VALUE);
            }
        }
        if flags.upload {
            // Upload needs a stream; without one the driver refuses the flag.
            match upload {
                Some(s) if st.streams.contains_key(&s.0) => st.uploads += 1,
                Some(_) => return Err(DriverCode::INVALID_HANDLE),
                None => return Err(DriverCode::INVALID_VALUE),
            }
        }
        // Node priorities are accepted and change nothing: the simulated device runs one
        // node at a time.
        let h = st.handle();
        st.execs.insert(h, Exec::new(nodes, flags.auto_free));
        st.exec_footprint.insert(h, footprint);
        Ok(RawExec(h))
    }
    fn graph_dot(&self, g: RawGraph) -> Result<String, super::DotError> {
        let st = self.st();
        let graph = st
            .graphs
            .get(&g.0)
            .ok_or(super::DotError::Driver { op: "Graph::to_dot", code: DriverCode::INVALID_HANDLE })?;
        Ok(dot::write(&st, graph))
    }
    fn graph_upload(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        if !st.execs.contains_key(&e.0) || !st.streams.contains_key(&s.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        st.uploads += 1;
        Ok(())
    }
    fn graph_launch(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        let exec = st.execs.get(&e.0).ok_or(DriverCode::INVALID_HANDLE)?;
        // Allocations a previous launch left live (not freed in the graph, nor since): the
        // driver refuses the launch unless the graph frees them itself on relaunch
        // (cuGraphLaunch: CUDA_ERROR_INVALID_VALUE without AUTO_FREE_ON_LAUNCH).
        if !exec.live.is_empty() && !exec.auto_free {
            return Err(DriverCode::INVALID_VALUE);
        }
        let nodes = exec.nodes.clone();
        if !st.streams.contains_key(&s.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        if st.active_capture_of(s.0).is_some() {
            // Child-graph nodes are not modelled.
            return Err(DriverCode(801));
        }
        let footprint = st.exec_footprint.get(&e.0).copied().unwrap_or(0);
        let pool = &mut st.pool;
        pool.reserved = pool.reserved.max(footprint);
        pool.reserved_high = pool.reserved_high.max(pool.reserved);
        pool.used_high = pool.used_high.max(footprint);
        for n in nodes.iter() {
            st.run(n)?;
        }
        if let Some(x) = st.execs.get_mut(&e.0) {
            x.live = x.unfreed.clone();
        }
        Ok(())
    }
    fn graph_exec_update(&self, e: RawExec, g: RawGraph) -> Result<bool, DriverCode> {
        let mut st = self.st();
        let graph = st.graphs.get(&g.0).ok_or(DriverCode::INVALID_HANDLE)?;
        let (new, footprint) = (graph.nodes.clone(), graph.footprint);
        let old = &st.execs.get(&e.0).ok_or(DriverCode::INVALID_HANDLE)?.nodes;
        let same_shape = old.len() == new.len()
            && old.iter().zip(new.iter()).all(|(a, b)| match (a, b) {
                (Node::Kernel { name: x, .. }, Node::Kernel { name: y, .. }) => x == y,
                _ => std::mem::discriminant(a) == std::mem::discriminant(b),
            });
        if same_shape {
            if let Some(x) = st.execs.get_mut(&e.0) {
                let live = std::mem::take(&mut x.live);
                let old = std::mem::replace(x, Exec { live, ..Exec::new(new, x.auto_free) });
                st.release(old.nodes);
            }
            st.exec_footprint.insert(e.0, footprint);
        }
        Ok(same_shape)
    }
    fn graph_exec_destroy(&self, e: RawExec) -> Result<(), DriverCode> {
        let mut st = self.st();
        st.exec_footprint.remove(&e.0);
        let exec = st.execs.remove(&e.0).ok_or(DriverCode::INVALID_HANDLE)?;
        st.release(exec.nodes);
        Ok(())
    }
    fn graph_destroy(&self, g: RawGraph) -> Result<(), DriverCode> {
        let mut st = self.st();
        let graph = st.graphs.remove(&g.0).ok_or(DriverCode::INVALID_HANDLE)?;
        for p in graph.allocs {
            let _ = st.mem.free(p, &[AllocKind::Graph]);
        }
        st.release(graph.nodes);
        Ok(())
    }
    fn graph_mem_usage(&self) -> Result<super::GraphMemUsage, DriverCode> {
        let st = self.st();
        let p = &st.pool;
        Ok(super::GraphMemUsage {
            used: 0,
            used_high: p.used_high as u64,
            reserved: p.reserved as u64,
            reserved_high: p.reserved_high as u64,
        })
    }
    fn graph_mem_reset_high(&self) -> Result<(), DriverCode> {
        let mut st = self.st();
        st.pool.reserved_high = st.pool.reserved;
        st.pool.used_high = 0;
        Ok(())
    }
    fn graph_mem_trim(&self) -> Result<(), DriverCode> {
        // A simulated launch has finished when it returns: nothing is executing.
        self.st().pool.reserved = 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    //! The paged, lazily backed memory (issue #13, item 1): contents agree with a flat
    //! buffer across page boundaries, untouched pages cost nothing, and bounds hold. The
    //! cells of condition handles go with the last graph that holds them.
    use super::{AllocKind, Memory, SimDevice, ILLEGAL_STATE, PAGE};
    use crate::device::{Backend, CaptureMode, CondKind, RawGraph, RawStream};
    use crate::raw::code::DriverCode;

    #[test]
    fn pages_behave_like_flat_memory() {
        let mut m = Memory::default();
        let len = 3 * PAGE + 17;
        let a = m.alloc(len, AllocKind::Device);
        let b = m.alloc(len, AllocKind::Device);
        let mut flat = vec![0u8; len];
        // Writes straddling page boundaries, a partial set, a zero set of a whole page.
        let data: Vec<u8> = (0..PAGE + 10).map(|i| (i % 251) as u8 + 1).collect();
        m.write(a + (PAGE - 5) as u64, &data).unwrap();
        flat[PAGE - 5..PAGE - 5 + data.len()].copy_from_slice(&data);
        m.set(a + 3, 9, 4).unwrap();
        flat[3..7].fill(9);
        m.set(a + (2 * PAGE) as u64, 0, PAGE).unwrap();
        flat[2 * PAGE..3 * PAGE].fill(0);
        m.set(a + (3 * PAGE) as u64, 0xab, 17).unwrap();
        flat[3 * PAGE..].fill(0xab);
        let mut got = vec![0u8; len];
        m.read(a, &mut got).unwrap();
        assert!(got == flat, "paged memory differs from a flat buffer");
        // A copy across allocations, page by page.
        m.copy(b, a, len).unwrap();
        m.read(b, &mut got).unwrap();
        assert!(got == flat);
        // Untouched memory reads as zeros and is not backed; a full zero set drops pages.
        let c = m.alloc(1 << 40, AllocKind::Host);
        let mut z = [1u8; 8];
        m.read(c + (1 << 39), &mut z).unwrap();
        assert_eq!(z, [0; 8]);
        assert!(m.allocs[&c].pages.is_empty());
        m.set(b, 0, len).unwrap();
        assert!(m.allocs[&b].pages.is_empty());
        // Bounds.
        assert_eq!(m.read(a + len as u64 - 1, &mut [0u8; 2]), Err(DriverCode::ILLEGAL_ADDRESS));
        assert_eq!(m.write(a + len as u64, &[1]), Err(DriverCode::ILLEGAL_ADDRESS));
        assert_eq!(m.copy(a, b, len + 1), Err(DriverCode::ILLEGAL_ADDRESS));
        assert_eq!(m.set(a, 1, len + 1), Err(DriverCode::ILLEGAL_ADDRESS));
    }

    /// A graph whose IF node's body holds an IF of its own: two condition cells, one made in
    /// the body (captured on `side`).
    fn nested_ifs(sim: &SimDevice, s: RawStream, side: RawStream) -> RawGraph {
        sim.begin_capture(s, CaptureMode::Relaxed).unwrap();
        let outer = sim.cond_handle(s).unwrap();
        let body = sim.cond_add(s, outer, CondKind::If, 1).unwrap()[0];
        sim.capture_into(side, body, CaptureMode::Relaxed).unwrap();
        let inner = sim.cond_handle(side).unwrap();
        sim.cond_add(side, inner, CondKind::If, 1).unwrap();
        sim.end_into(side).unwrap();
        sim.end_capture(s).unwrap()
    }

    /// A condition handle's cell lives while any graph or executable graph holding its node
    /// does (a launch sets and reads it: freed early, the launch would fault), and is freed
    /// with the last of them — an executable graph outliving its graph, one updated in place
    /// to another graph's nodes — and with a capture or body that is discarded.
    #[test]
    fn condition_cells_live_as_long_as_their_last_holder() {
        let sim = SimDevice::new();
        let (s, side) = (sim.stream_create().unwrap(), sim.stream_create().unwrap());
        let none = sim.live_allocations();
        let a = nested_ifs(&sim, s, side);
        assert_eq!(sim.live_allocations(), none + 2);
        let e = sim.graph_instantiate(a).unwrap();
        sim.graph_destroy(a).unwrap();
        assert_eq!(sim.live_allocations(), none + 2, "the executable graph still holds them");
        sim.graph_launch(e, s).unwrap();
        // Updated in place: the first graph's cells go, the second's are shared.
        let b = nested_ifs(&sim, s, side);
        assert_eq!(sim.live_allocations(), none + 4);
        assert_eq!(sim.graph_exec_update(e, b), Ok(true));
        assert_eq!(sim.live_allocations(), none + 2, "the nodes the update replaced");
        sim.graph_destroy(b).unwrap();
        assert_eq!(sim.live_allocations(), none + 2, "the updated executable graph holds them");
        sim.graph_launch(e, s).unwrap();
        sim.graph_exec_destroy(e).unwrap();
        assert_eq!(sim.live_allocations(), none);
        // The executable graph first, then the graph (what `Graph`'s drop does).
        let c = nested_ifs(&sim, s, side);
        let e = sim.graph_instantiate(c).unwrap();
        sim.graph_exec_destroy(e).unwrap();
        assert_eq!(sim.live_allocations(), none + 2, "the graph still holds them");
        sim.graph_destroy(c).unwrap();
        assert_eq!(sim.live_allocations(), none);
        // A capture invalidated with a body open: the body and the capture are discarded.
        sim.begin_capture(s, CaptureMode::Relaxed).unwrap();
        let h = sim.cond_handle(s).unwrap();
        let body = sim.cond_add(s, h, CondKind::While, 1).unwrap()[0];
        sim.capture_into(side, body, CaptureMode::Relaxed).unwrap();
        sim.cond_handle(side).unwrap();
        assert!(sim.ctx_synchronize().is_err());
        assert_eq!(sim.end_into(side), Err(DriverCode::STREAM_CAPTURE_INVALIDATED));
        assert_eq!(sim.end_capture(s), Err(DriverCode::STREAM_CAPTURE_INVALIDATED));
        assert_eq!(sim.live_allocations(), none);
        // A capture ended while its node's body is still recorded: the body has nowhere to
        // go, and its cells go with it; the graph's go with the graph.
        sim.begin_capture(s, CaptureMode::Relaxed).unwrap();
        let h = sim.cond_handle(s).unwrap();
        let body = sim.cond_add(s, h, CondKind::If, 1).unwrap()[0];
        sim.capture_into(side, body, CaptureMode::Relaxed).unwrap();
        sim.cond_handle(side).unwrap();
        let g = sim.end_capture(s).unwrap();
        assert_eq!(sim.end_into(side), Err(ILLEGAL_STATE));
        assert_eq!(sim.live_allocations(), none + 1);
        sim.graph_destroy(g).unwrap();
        assert_eq!(sim.live_allocations(), none);
    }
}
