//! Graphs and executable graphs on the simulated device: recorded nodes, instantiation, launch
//! and the graph-memory pool.

#[allow(unused_imports)]
use super::*;

#[derive(Clone)]
pub(super) enum Node {
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
        bytes: usize,
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
pub(super) const COND_ITERATION_LIMIT: u64 = 1 << 22;

/// What recorded a node: the library operation and where it was issued (`None` for work the
/// library did not issue, such as a copy made through cudarc behind its back).
#[derive(Copy, Clone, Debug)]
pub(crate) struct NodeLabel {
    pub(super) op: &'static str,
    pub(super) site: Option<CallSite>,
}

pub(super) struct Graph {
    pub(super) nodes: Arc<Vec<Node>>,
    pub(super) allocs: Vec<u64>,
    /// Peak graph-allocated bytes (what a launch needs from the graph pool).
    pub(super) footprint: usize,
    pub(super) origin: usize,
    pub(super) edges: Vec<(usize, usize)>,
    pub(super) stream_of: Vec<usize>,
    pub(super) labels: Vec<Option<NodeLabel>>,
}

/// The device's graph-memory pool, modelled on the driver's: one per device, shared by all
/// graphs. Graphs launched one after another reuse its physical memory, so a launch grows the
/// reservation to the launching graph's footprint at most; a trim releases it (nothing runs
/// after a simulated launch returns).
#[derive(Default)]
pub(super) struct GraphPool {
    pub(super) reserved: usize,
    pub(super) reserved_high: usize,
    pub(super) used_high: usize,
}

/// An executable graph and what its flags make the device check at launch.
pub(super) struct Exec {
    pub(super) nodes: Arc<Vec<Node>>,
    /// `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`.
    pub(super) auto_free: bool,
    /// Graph allocations the graph does not free itself.
    pub(super) unfreed: Vec<u64>,
    /// Those of them a launch allocated and nothing has freed yet.
    pub(super) live: Vec<u64>,
}

impl Exec {
    pub(super) fn new(nodes: Arc<Vec<Node>>, auto_free: bool) -> Self {
        // In graph order: an address can be allocated again after it was freed.
        let mut live: Vec<u64> = Vec::new();
        for n in nodes.iter() {
            match n {
                Node::MemAlloc { ptr, .. } => live.push(*ptr),
                Node::MemFree { ptr } => live.retain(|p| p != ptr),
                _ => {}
            }
        }
        Self { nodes, auto_free, unfreed: live, live: Vec::new() }
    }
}

impl SimDevice {
    pub(crate) fn graph_nodes(&self, g: RawGraph) -> Result<NodeCounts, DriverCode> {
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
    pub(crate) fn graph_host_copies(&self, g: RawGraph) -> Result<Vec<crate::device::HostCopy>, DriverCode> {
        let st = self.st();
        let graph = st.graphs.get(&g.0).ok_or(DriverCode::INVALID_HANDLE)?;
        Ok(graph
            .nodes
            .iter()
            .filter_map(|n| match n {
                Node::HostCopy { data, .. } => Some(crate::device::HostCopy { bytes: data.len(), to_device: true }),
                _ => None,
            })
            .collect())
    }
    pub(crate) fn graph_instantiate_with(
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
    pub(crate) fn graph_dot(&self, g: RawGraph) -> Result<String, crate::device::DotError> {
        let st = self.st();
        let graph = st
            .graphs
            .get(&g.0)
            .ok_or(crate::device::DotError::Driver { op: "Graph::to_dot", code: DriverCode::INVALID_HANDLE })?;
        Ok(dot::write(&st, graph))
    }
    pub(crate) fn graph_upload(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        if !st.execs.contains_key(&e.0) || !st.streams.contains_key(&s.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        st.uploads += 1;
        Ok(())
    }
    pub(crate) fn graph_launch(&self, e: RawExec, s: RawStream) -> Result<(), DriverCode> {
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
    pub(crate) fn graph_exec_update(&self, e: RawExec, g: RawGraph) -> Result<bool, DriverCode> {
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
    pub(crate) fn graph_exec_destroy(&self, e: RawExec) -> Result<(), DriverCode> {
        let mut st = self.st();
        st.exec_footprint.remove(&e.0);
        let exec = st.execs.remove(&e.0).ok_or(DriverCode::INVALID_HANDLE)?;
        st.release(exec.nodes);
        Ok(())
    }
    pub(crate) fn graph_destroy(&self, g: RawGraph) -> Result<(), DriverCode> {
        let mut st = self.st();
        let graph = st.graphs.remove(&g.0).ok_or(DriverCode::INVALID_HANDLE)?;
        for p in graph.allocs {
            let _ = st.mem.free(p, &[AllocKind::Graph]);
        }
        st.release(graph.nodes);
        Ok(())
    }
    pub(crate) fn graph_mem_usage(&self) -> Result<crate::device::GraphMemUsage, DriverCode> {
        let st = self.st();
        let p = &st.pool;
        Ok(crate::device::GraphMemUsage {
            used: 0,
            used_high: p.used_high as u64,
            reserved: p.reserved as u64,
            reserved_high: p.reserved_high as u64,
        })
    }
    pub(crate) fn graph_mem_reset_high(&self) -> Result<(), DriverCode> {
        let mut st = self.st();
        st.pool.reserved_high = st.pool.reserved;
        st.pool.used_high = 0;
        Ok(())
    }
    pub(crate) fn graph_mem_trim(&self) -> Result<(), DriverCode> {
        // A simulated launch has finished when it returns: nothing is executing.
        self.st().pool.reserved = 0;
        Ok(())
    }
}
