//! The simulated device's state behind its lock: memory, streams, events, captures, graphs,
//! and the recording and running of nodes.

#[allow(unused_imports)]
use super::*;

#[derive(Default)]
pub(super) struct State {
    pub(super) mem: Memory,
    pub(super) next_handle: usize,
    pub(super) next_capture: u64,
    pub(super) streams: HashMap<usize, SimStream>,
    pub(super) events: HashMap<usize, SimEvent>,
    pub(super) modules: HashMap<usize, Vec<KernelSignature>>,
    pub(super) functions: HashMap<usize, String>,
    pub(super) captures: HashMap<u64, Capture>,
    pub(super) graphs: HashMap<usize, Graph>,
    /// Each executable graph's footprint in the graph pool.
    pub(super) exec_footprint: HashMap<usize, usize>,
    pub(super) pool: GraphPool,
    pub(super) execs: HashMap<usize, Exec>,
    /// Graph uploads (`cuGraphUpload`, or instantiation with the upload flag).
    pub(super) uploads: usize,
    pub(super) kernels: HashMap<String, HostKernel>,
    pub(super) unmodelled: HashSet<String>,
    #[cfg_attr(not(feature = "cublas"), allow(dead_code))]
    pub(super) blas: HashSet<usize>,
    /// Body graphs of conditional nodes still being recorded: handle -> (capture, node
    /// index, body index).
    pub(super) bodies: HashMap<usize, (u64, usize, usize)>,
}

impl State {
    pub(super) fn handle(&mut self) -> usize {
        self.next_handle += 1;
        self.next_handle
    }
    pub(super) fn active_capture_of(&self, s: usize) -> Option<u64> {
        self.streams.get(&s).and_then(|st| st.capture)
    }
    /// Invalidates every capture that prohibits "potentially unsafe" calls from this thread.
    pub(super) fn prohibited(&mut self) -> Result<(), DriverCode> {
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
    pub(super) fn invalidate(&mut self, cap: u64) {
        if let Some(c) = self.captures.get_mut(&cap) {
            c.state = CapState::Invalidated;
        }
    }
    /// Records `node` if `s` is capturing; `Ok(false)` when the caller should run it now.
    pub(super) fn record(&mut self, s: usize, node: Node) -> Result<bool, DriverCode> {
        self.record_after(s, node, None)
    }
    /// Records `node` if `s` is capturing, depending on the last node of `s` and on `also`
    /// (the node that recorded an event the stream waits on).
    pub(super) fn record_after(&mut self, s: usize, node: Node, also: Option<usize>) -> Result<bool, DriverCode> {
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
    pub(super) fn run(&mut self, node: &Node) -> Result<(), DriverCode> {
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
    pub(super) fn release(&mut self, nodes: Arc<Vec<Node>>) {
        if let Some(nodes) = Arc::into_inner(nodes) {
            self.release_nodes(nodes);
        }
    }
    /// Frees the condition cells made by `nodes` (a capture's, ended or discarded), and lets
    /// go of the bodies of its conditional nodes. A cell is made by one `CondReset` in one
    /// node list, so it goes when the last holder of that list does.
    pub(super) fn release_nodes(&mut self, nodes: Vec<Node>) {
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
    pub(super) fn free_live_graph_alloc(&mut self, p: u64) -> bool {
        for x in self.execs.values_mut() {
            if let Some(i) = x.live.iter().position(|q| *q == p) {
                x.live.swap_remove(i);
                return true;
            }
        }
        false
    }
    /// Labels the nodes just recorded on `s` (if capturing) as work issued outside the library.
    pub(super) fn label_foreign(&mut self, s: usize, op: &'static str) {
        let Some(cap) = self.active_capture_of(s) else { return };
        if let Some(c) = self.captures.get_mut(&cap) {
            for l in &mut c.labels[c.labeled..] {
                *l = Some(NodeLabel { op, site: None });
            }
            c.labeled = c.labels.len();
        }
    }
    pub(super) fn record_or_run(&mut self, s: usize, node: Node) -> Result<(), DriverCode> {
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
