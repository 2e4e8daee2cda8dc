//! Streams, events and captures on the simulated device: the capture state machine measured
//! on an H100.

#[allow(unused_imports)]
use super::*;

#[derive(PartialEq, Eq, Clone, Copy, Debug)]
pub(super) enum CapState {
    Active,
    Invalidated,
}

pub(super) struct Capture {
    pub(super) origin: usize,
    pub(super) mode: CaptureMode,
    pub(super) thread: ThreadId,
    pub(super) state: CapState,
    pub(super) nodes: Vec<Node>,
    /// Forked streams and whether their latest work has been joined back.
    pub(super) forks: HashMap<usize, bool>,
    pub(super) graph_allocs: Vec<u64>,
    /// Graph-allocated bytes live at this point of the capture, and their peak.
    pub(super) graph_live: usize,
    pub(super) graph_peak: usize,
    /// Graph allocations live at this point of the capture (address -> bytes).
    pub(super) graph_live_allocs: HashMap<u64, usize>,
    /// Graph allocations freed earlier in the capture (address, bytes), which a later
    /// allocation of the same capture may get again, as the driver reuses addresses.
    pub(super) graph_freed: Vec<(u64, usize)>,
    /// Each stream's last node: the next node recorded on it depends on it.
    pub(super) tails: HashMap<usize, usize>,
    /// Dependency edges (from, to) between node indices.
    pub(super) edges: Vec<(usize, usize)>,
    /// The stream each node was recorded on.
    pub(super) stream_of: Vec<usize>,
    /// What recorded each node, once the library has said (see `SimDevice::label_nodes`).
    pub(super) labels: Vec<Option<NodeLabel>>,
    /// Nodes before this index are labelled.
    pub(super) labeled: usize,
    /// For a capture into a conditional node's body: (the capture holding the node, the
    /// node's index there, the body's index).
    pub(super) into: Option<(u64, usize, usize)>,
}

#[derive(Default)]
pub(super) struct SimStream {
    pub(super) capture: Option<u64>,
}

#[derive(Default)]
pub(super) struct SimEvent {
    /// (capture id, recorded by stream, the node recording it) if last recorded inside a
    /// capture.
    pub(super) captured: Option<(u64, usize, usize)>,
}

impl SimDevice {
    pub(crate) fn stream_create(&self) -> Result<RawStream, DriverCode> {
        let mut s = self.st();
        let h = s.handle();
        s.streams.insert(h, SimStream::default());
        Ok(RawStream(h))
    }
    pub(crate) fn stream_destroy(&self, s: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        if st.active_capture_of(s.0).is_some() {
            return Err(ILLEGAL_STATE);
        }
        st.streams.remove(&s.0).map(|_| ()).ok_or(DriverCode::INVALID_HANDLE)
    }
    pub(crate) fn stream_synchronize(&self, s: RawStream) -> Result<(), DriverCode> {
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
    pub(crate) fn stream_query(&self, s: RawStream) -> Result<bool, DriverCode> {
        self.stream_synchronize(s).map(|()| true)
    }
    pub(crate) fn ctx_synchronize(&self) -> Result<(), DriverCode> {
        let mut st = self.st();
        if st.captures.is_empty() {
            return Ok(());
        }
        for c in st.captures.values_mut() {
            c.state = CapState::Invalidated;
        }
        Err(DriverCode::STREAM_CAPTURE_UNSUPPORTED)
    }

    pub(crate) fn event_create(&self, _timing: bool) -> Result<RawEvent, DriverCode> {
        let mut st = self.st();
        let h = st.handle();
        st.events.insert(h, SimEvent::default());
        Ok(RawEvent(h))
    }
    pub(crate) fn event_destroy(&self, e: RawEvent) -> Result<(), DriverCode> {
        self.st().events.remove(&e.0).map(|_| ()).ok_or(DriverCode::INVALID_HANDLE)
    }
    pub(crate) fn event_record(&self, e: RawEvent, s: RawStream) -> Result<(), DriverCode> {
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
    pub(crate) fn stream_wait_event(&self, s: RawStream, e: RawEvent) -> Result<(), DriverCode> {
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
    pub(crate) fn event_query(&self, e: RawEvent) -> Result<bool, DriverCode> {
        self.event_synchronize(e).map(|()| true)
    }
    pub(crate) fn event_synchronize(&self, e: RawEvent) -> Result<(), DriverCode> {
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
    pub(crate) fn event_elapsed_ms(&self, start: RawEvent, end: RawEvent) -> Result<f32, DriverCode> {
        let st = self.st();
        if !st.events.contains_key(&start.0) || !st.events.contains_key(&end.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        // Everything completes at once on the simulated device.
        Ok(0.0)
    }

    pub(crate) fn begin_capture(&self, s: RawStream, mode: CaptureMode) -> Result<(), DriverCode> {
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
    pub(crate) fn cond_handle(&self, s: RawStream) -> Result<u64, DriverCode> {
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
    pub(crate) fn cond_add(
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
    pub(crate) fn capture_into(&self, side: RawStream, g: RawGraph, mode: CaptureMode) -> Result<(), DriverCode> {
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
    pub(crate) fn end_into(&self, side: RawStream) -> Result<(), DriverCode> {
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
    pub(crate) fn end_capture(&self, s: RawStream) -> Result<RawGraph, DriverCode> {
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
    pub(crate) fn capture_status(&self, s: RawStream) -> Result<CaptureStatus, DriverCode> {
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
}
