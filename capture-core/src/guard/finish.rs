//! The end of a capture that succeeded: instantiating what it recorded into a graph, or
//! updating an existing graph with it in place.

#[allow(unused_imports)]
use super::*;

/// A capture that has ended, with its driver graph not yet instantiated (see
/// [`CaptureGuard::end_capture`]). Dropping it destroys the graph.
pub(crate) struct Ended<'s, 'a> {
    pub(super) guard: CaptureGuard<'s, 'a>,
    pub(super) graph: Option<RawGraph>,
    pub(super) report: Option<CaptureReport>,
}

impl Drop for Ended<'_, '_> {
    fn drop(&mut self) {
        if let Some(g) = self.graph.take() {
            if let Err(code) = self.guard.idle.ctx.b().graph_destroy(g) {
                log::error!("capture-core: destroying an ended capture's graph failed: {code}");
            }
        }
    }
}

impl Ended<'_, '_> {
    /// Describes the graph node by node (see [`CaptureGuard::finish_snapshot`]).
    pub(crate) fn describe(&self) -> Result<GraphSnapshot> {
        let started = std::time::Instant::now();
        let ctx = self.guard.idle.ctx.clone();
        let b = ctx.b();
        let (Some(graph), Some(report)) = (self.graph, self.report.as_ref()) else {
            return Err(Error::EmptyCapture);
        };
        let (mut raw, mut ops) =
            b.graph_snapshot(graph).map_err(|code| Error::Driver { op: "cuGraphGetNodes (snapshot)", code })?;
        let book = self.guard.book.borrow();
        if let Some(marks) = &book.node_marks {
            // A GPU gives parameter sizes; the PTX of a kernel launched through this library
            // gives their types too.
            for node in &mut raw.nodes {
                let crate::device::snapshot::RawNode::Kernel(k) = node else { continue };
                let (Some(params), Some(sig)) = (&mut k.params, marks.kernels.iter().find(|s| s.name == k.name)) else {
                    continue;
                };
                if sig.params.len() == params.len()
                    && sig.params.iter().zip(params.iter()).all(|(s, p)| s.bytes == p.bytes.len())
                {
                    for (p, s) in params.iter_mut().zip(&sig.params) {
                        p.ty = Some(s.ty.clone());
                    }
                }
            }
        }
        if ops.is_empty() {
            // A GPU: the nodes each operation recorded, as the capture noted them.
            ops = vec![None; raw.nodes.len()];
            if let Some(marks) = &book.node_marks {
                for (start, end, op) in &marks.ops {
                    for slot in ops.iter_mut().take(*end).skip(*start) {
                        *slot = Some((op.op, op.site));
                    }
                }
            }
        }
        let mut snap = crate::snapshot::locate(raw, ops, report.capture_id, &book.cond_handles, |a| b.locate(a));
        snap.describe_time = started.elapsed();
        Ok(snap)
    }
}

impl<'a> Ended<'_, 'a> {
    /// The second half of [`CaptureGuard::finish`]: instantiates the graph.
    pub(crate) fn instantiate(mut self, site: CallSite) -> Result<(Graph<'a>, CaptureReport)> {
        let ctx = self.guard.idle.ctx.clone();
        let b = ctx.b();
        let (Some(graph), Some(report)) = (self.graph.take(), self.report.take()) else {
            return Err(Error::EmptyCapture);
        };
        let nodes = report.nodes;
        // Instantiating is refused by the driver (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED)
        // while another Global capture, or a ThreadLocal one on this thread, is active:
        // name that capture instead (seen on the H100).
        if let Err(e) = ctx.fail_fast("CaptureGuard::finish (cuGraphInstantiate)", site) {
            let _ = b.graph_destroy(graph);
            return Err(e);
        }
        let flags = self.guard.book.borrow().instantiate;
        let exec = match self.guard.instantiate(graph, &report, flags) {
            Ok(e) => e,
            Err(e) => {
                let _ = b.graph_destroy(graph);
                return Err(e);
            }
        };
        if !report.allocations.is_empty() && self.guard.book.borrow().policy == AllocPolicy::Warn {
            log::warn!(
                "capture-core: capture #{} made {} allocation(s) ({} bytes) while capturing:\n{report}",
                report.capture_id,
                report.allocation_count(),
                report.allocation_bytes()
            );
        }
        if !report.unpinned_host_copies.is_empty() {
            log::warn!(
                "capture-core: capture #{} recorded copies from pageable host memory (issued outside this library, e.g. through cudarc); replays read a stale host address:\n{report}",
                report.capture_id
            );
        }
        if !report.ran_eagerly.is_empty() {
            log::warn!(
                "capture-core: work ran eagerly during capture #{} and is not in the graph:\n{report}",
                report.capture_id
            );
        }
        let mut g = Graph::new(ctx, graph, exec, nodes, report.capture_id);
        g.ops = std::mem::take(&mut self.guard.book.borrow_mut().trace);
        g.ops_total = report.operations;
        g.flags = flags;
        g.collectives = self.guard.book.borrow().collectives;
        g.comm_links = self.guard.book.borrow().comm_links.clone();
        Ok((g, report))
    }
}

impl<'s, 'a> CaptureGuard<'s, 'a> {
    /// Instantiates `graph` with `flags` (uploading into the capture's stream if asked),
    /// after checking what device launch forbids. Does not destroy `graph` on error.
    pub(super) fn instantiate(
        &self,
        graph: RawGraph,
        report: &CaptureReport,
        flags: InstantiateFlags,
    ) -> Result<RawExec> {
        if flags.is_device_launch() {
            let n = report.nodes;
            let mut found = Vec::new();
            if n.mem_alloc + n.mem_free > 0 {
                found.push(format!("{} memory allocation and {} free node(s)", n.mem_alloc, n.mem_free));
            }
            if n.host > 0 {
                found.push(format!("{} host-function node(s)", n.host));
            }
            if !report.unpinned_host_copies.is_empty() {
                found.push(format!("{} copy node(s) from pageable host memory", report.unpinned_host_copies.len()));
            }
            if !found.is_empty() {
                return Err(Error::DeviceLaunchUnsupported { found: found.join(", ") });
            }
        }
        let upload = flags.is_upload().then_some(self.idle.raw);
        self.idle
            .ctx
            .b()
            .graph_instantiate_with(graph, flags.resolve(), upload)
            .map_err(|code| Error::Driver { op: "cuGraphInstantiateWithParams", code })
    }

    /// Gives `graph` this capture's report figures and book (operations, collectives,
    /// communicators), after its executable graph was brought up to date.
    fn adopt(&self, graph: &mut Graph<'a>, report: &CaptureReport) {
        graph.nodes = report.nodes;
        graph.capture_id = report.capture_id;
        graph.ops = std::mem::take(&mut self.book.borrow_mut().trace);
        graph.ops_total = report.operations;
        graph.collectives = self.book.borrow().collectives;
        graph.comm_links = self.book.borrow().comm_links.clone();
    }

    /// Ends the capture and updates `graph` to replay the new recording: in place
    /// (`cuGraphExecUpdate`) when the topology is unchanged (e.g. only a kernel parameter
    /// changed) — much cheaper than instantiating — otherwise by instantiating anew.
    ///
    /// # Errors
    /// As [`finish`](Self::finish); [`Error::ContextMismatch`] if `graph` belongs to another
    /// context. On error `graph` is unchanged.
    pub fn finish_update(mut self, graph: &mut Graph<'a>) -> Result<(GraphUpdate, CaptureReport)> {
        if !graph.context().same(&self.idle.ctx) {
            return Err(Error::ContextMismatch { op: "CaptureGuard::finish_update", what: "graph" });
        }
        if self.ended_elsewhere() {
            return Err(Error::CaptureEnded { op: "CaptureGuard::finish_update", capture: self.id() });
        }
        let (outcome, mut report) = self.end();
        let ctx = self.idle.ctx.clone();
        let b = ctx.b();
        if report.stream_swapped {
            return Err(self.swapped_error(outcome, &report));
        }
        let new = match outcome {
            Ok(RawGraph(0)) => return Err(Error::EmptyCapture),
            Ok(g) => g,
            Err(code) => return Err(self.end_error(code, &report)),
        };
        // A graph whose old version has conditional nodes is instantiated anew: its new
        // condition handles must not meet the old graph's condition kernels in an in-place
        // update. (A graph that gains conditional nodes changes shape, and the driver's
        // in-place update refuses it.)
        let in_place = if graph.nodes.conditional > 0 { Ok(false) } else { b.graph_exec_update(graph.exec, new) };
        match in_place {
            Ok(true) => {
                // An in-place update succeeds only when the new graph has the old one's
                // topology (same nodes, same types, same edges), so the counts carry over:
                // no cuGraphNodeGetType per node (30-46 ns each on an H100, issue #5).
                report.nodes = graph.nodes;
                if report.nodes.memcpy > 0 {
                    report.unpinned_host_copies = b.graph_host_copies(new).unwrap_or_default();
                }
                let old = std::mem::replace(&mut graph.graph, new);
                if let Err(code) = b.graph_destroy(old) {
                    log::error!("capture-core: destroying the replaced graph failed: {code}");
                }
                self.adopt(graph, &report);
                Ok((GraphUpdate::InPlace, report))
            }
            Ok(false) | Err(_) => {
                report.nodes = match b.graph_nodes(new) {
                    Ok(n) => n,
                    Err(code) => {
                        let _ = b.graph_destroy(new);
                        return Err(Error::Driver { op: "cuGraphGetNodes", code });
                    }
                };
                if report.nodes.memcpy > 0 {
                    report.unpinned_host_copies = b.graph_host_copies(new).unwrap_or_default();
                }
                let flags = self.book.borrow().instantiate;
                let exec = match self.instantiate(new, &report, flags) {
                    Ok(e) => e,
                    Err(e) => {
                        let _ = b.graph_destroy(new);
                        return Err(e);
                    }
                };
                graph.flags = flags;
                let old_exec = std::mem::replace(&mut graph.exec, exec);
                let old_graph = std::mem::replace(&mut graph.graph, new);
                if let Err(code) = b.graph_exec_destroy(old_exec).and_then(|()| b.graph_destroy(old_graph)) {
                    log::error!("capture-core: destroying the replaced graph failed: {code}");
                }
                self.adopt(graph, &report);
                Ok((GraphUpdate::Reinstantiated, report))
            }
        }
    }
}
