//! The capture guard for candle work.

use std::ops::{Deref, DerefMut};

use std::sync::Arc;

use capture_core::diff::GraphSnapshot;
use capture_core::diff::NodeKind;
use capture_core::{CaptureGuard, CaptureReport, Capturing, Context, Graph, Stream};
use cudarc::driver::CudaStream;

use crate::error::{Error, Result};

/// A capture of candle's stream: candle ops issued while it lives are recorded into the
/// graph, and so is what is issued on the guard itself (it dereferences to capture-core's
/// capturing stream). Dropping it without [`finish`](Self::finish) ends the capture and
/// leaves the stream idle, as capture-core's guard does.
///
/// Crate-private: candle ops borrow nothing through capture-core, so a public guard could
/// not stop its graph from outliving the tensors it reads. [`crate::CandleGraph`] owns them.
///
/// While it lives, candle's host-upload cache is on: small uploads are served from device
/// copies made during warm-up, and an upload never seen then fails the step.
pub(crate) struct CandleCapture<'s, 'a> {
    // Field order is drop order: the capture ends before candle's cache is turned off.
    guard: CaptureGuard<'s, 'a>,
    // candle's `CudaGraphHtodCacheGuard`, which candle does not export by name.
    _cache: Box<dyn std::any::Any>,
    // candle's stream, to run a graph that left memory allocated once (see `finish`).
    ctx: Context,
    cudarc: Option<Arc<CudaStream>>,
}

impl<'s, 'a> CandleCapture<'s, 'a> {
    pub(crate) fn new(
        guard: CaptureGuard<'s, 'a>,
        cache: Box<dyn std::any::Any>,
        ctx: Context,
        cudarc: Option<Arc<CudaStream>>,
    ) -> Self {
        Self { guard, _cache: cache, ctx, cudarc }
    }

    /// Ends the capture, instantiates the graph and describes it node by node (what the
    /// ownership proof reads).
    ///
    /// When the step left graph memory allocated (a tensor created during the capture is
    /// still alive), the graph is refused — and, before it is destroyed, launched once and
    /// waited for. Graph memory exists only once its graph has run: without that launch,
    /// dropping the tensor would free an address that was never allocated, and candle's
    /// next operation would fail with `CUDA_ERROR_INVALID_VALUE`. The launch does what one
    /// eager run of the step does; afterwards, dropping the tensor frees its memory.
    ///
    /// # Errors
    /// [`Error::UnfreedGraphMemory`] when a tensor created during the capture is still
    /// alive (its memory would stay allocated after the graph runs, and the next replay
    /// would fail); [`Error::EmptyStep`] when the graph does no work; every error of
    /// [`CaptureGuard::finish_with_snapshot`](capture_core::CaptureGuard::finish_with_snapshot).
    pub(crate) fn finish_described(self) -> Result<(Graph<'a>, GraphSnapshot, CaptureReport)> {
        let (graph, snapshot, report, unfreed) = self.end()?;
        if unfreed > 0 {
            let nodes = report.nodes;
            return Err(Error::UnfreedGraphMemory { allocs: nodes.mem_alloc, frees: nodes.mem_free, unfreed });
        }
        Ok((graph, snapshot, report))
    }

    /// Ends the capture and describes its graph node by node, for a capture diff. A graph
    /// that left graph memory allocated is run once, as [`finish_described`](Self::finish_described) does (so
    /// that dropping the tensors the step kept frees memory that exists), and the number of
    /// such allocations is returned rather than refused: the diff reports it. A graph that
    /// does no work is refused ([`Error::EmptyStep`]).
    pub(crate) fn finish_snapshot(self) -> Result<(GraphSnapshot, CaptureReport, usize)> {
        let (_graph, snapshot, report, unfreed) = self.end()?;
        Ok((snapshot, report, unfreed))
    }

    /// What both endings share: the graph, described, with candle's cache turned off, and
    /// run once if it left graph memory allocated (how many allocations it left).
    /// [`Error::EmptyStep`] for a graph that does no work (`does_work`).
    fn end(self) -> Result<(Graph<'a>, GraphSnapshot, CaptureReport, usize)> {
        let Self { guard, _cache, ctx, cudarc } = self;
        let (graph, snapshot, report) = guard.finish_with_snapshot().map_err(|e| match e {
            // capture-core's words for a graph of no node; candle's likely cause is named.
            capture_core::Error::EmptyCapture => Error::EmptyStep { nodes: 0 },
            e => Error::Capture(e),
        })?;
        drop(_cache);
        let unfreed = report.nodes.mem_alloc.saturating_sub(report.nodes.mem_free);
        if unfreed > 0 {
            run_once(&ctx, cudarc, &graph)?;
        }
        if !does_work(snapshot.nodes.iter().map(|n| &n.kind)) {
            return Err(Error::EmptyStep { nodes: snapshot.nodes.len() });
        }
        Ok((graph, snapshot, report, unfreed))
    }
}

/// Whether a graph of nodes of these kinds does any work: a node of any kind but a graph
/// allocation, a graph free, or an event record, event wait or empty node. Kinds the
/// library does not name (a child graph, a batch of memory operations, an external
/// semaphore) count as work.
fn does_work<'k>(kinds: impl IntoIterator<Item = &'k NodeKind>) -> bool {
    kinds.into_iter().any(|k| !matches!(k, NodeKind::MemAlloc { .. } | NodeKind::MemFree { .. } | NodeKind::Event))
}

/// Launches `graph` once on candle's stream and waits for it: graph memory exists only once
/// its graph has run.
fn run_once(ctx: &Context, cudarc: Option<Arc<CudaStream>>, graph: &Graph<'_>) -> Result<()> {
    if let Some(raw) = cudarc {
        let mut stream = ctx.wrap_cudarc_stream(raw)?;
        graph.launch(&mut stream)?;
        stream.synchronize()?;
    }
    Ok(())
}

impl<'a> Deref for CandleCapture<'_, 'a> {
    type Target = Stream<Capturing<'a>>;
    fn deref(&self) -> &Stream<Capturing<'a>> {
        &self.guard
    }
}

impl<'a> DerefMut for CandleCapture<'_, 'a> {
    fn deref_mut(&mut self) -> &mut Stream<Capturing<'a>> {
        &mut self.guard
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Graph allocations, frees and event or empty nodes alone do no work; a node of any
    /// other kind, named or not, is work.
    #[test]
    fn a_graph_of_memory_and_event_nodes_does_no_work() {
        let idle = [NodeKind::MemAlloc { bytes: 64 }, NodeKind::Event, NodeKind::Event];
        assert!(!does_work(&idle));
        assert!(!does_work(&[]));
        for work in [NodeKind::Host, NodeKind::Conditional, NodeKind::Other("CU_GRAPH_NODE_TYPE_GRAPH".into())] {
            let kinds: Vec<NodeKind> = idle.iter().cloned().chain([work]).collect();
            assert!(does_work(&kinds), "{kinds:?}");
        }
    }
}
