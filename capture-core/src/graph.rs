//! A replayable graph that borrows everything it reads and writes.
//!
//! Its picture (DOT) is in `graph/dot.rs`; raw handles in `graph/interop.rs`; instantiate
//! flags in `instantiate.rs`.

mod dot;
mod interop;

pub use crate::instantiate::InstantiateFlags;

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use crate::context::Context;
use crate::device::{NodeCounts, RawExec, RawGraph};
use crate::error::{CallSite, Error, OpSite, Result};
use crate::state::{Capturing, Idle};
use crate::stream::Stream;

/// An instantiated CUDA graph. `'a` is the capture's lifetime: every buffer, kernel and
/// event the capture used is borrowed for it, so none can be dropped while the graph lives
/// (a freed buffer would be `CUDA_ERROR_ILLEGAL_ADDRESS` at replay; a freed pinned buffer a
/// read of freed host memory).
pub struct Graph<'a> {
    ctx: Context,
    // Drop order matters: the executable graph is destroyed before the graph (see `Drop`).
    pub(crate) exec: RawExec,
    pub(crate) graph: RawGraph,
    pub(crate) nodes: NodeCounts,
    pub(crate) capture_id: u64,
    /// The first [`TRACE_LIMIT`] operations the capture recorded through this library, in
    /// order (for the picture).
    pub(crate) ops: Vec<OpSite>,
    /// How many operations the capture recorded in all.
    pub(crate) ops_total: usize,
    /// Collective calls in the graph: it runs only together with the other ranks' graphs.
    pub(crate) collectives: usize,
    /// The rank-per-process communicators its collectives use (checked at each launch).
    pub(crate) comm_links: Vec<std::sync::Arc<crate::raw::coll::Link>>,
    /// The flags it was instantiated with.
    pub(crate) flags: InstantiateFlags,
    _borrows: PhantomData<Capturing<'a>>,
    // Graph objects are not thread-safe: `Send` but not `Sync`.
    _not_sync: PhantomData<Cell<()>>,
}

static_assertions::assert_not_impl_any!(Graph<'static>: Sync);

impl fmt::Debug for Graph<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph").field("capture", &self.capture_id).field("nodes", &self.nodes).finish()
    }
}

impl Graph<'_> {
    pub(crate) fn new(ctx: Context, graph: RawGraph, exec: RawExec, nodes: NodeCounts, capture_id: u64) -> Self {
        Self {
            ctx,
            exec,
            graph,
            nodes,
            capture_id,
            ops: Vec::new(),
            ops_total: 0,
            collectives: 0,
            comm_links: Vec::new(),
            flags: InstantiateFlags::default(),
            _borrows: PhantomData,
            _not_sync: PhantomData,
        }
    }

    /// Replays the graph on `stream` (asynchronously).
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn launch(&self, stream: &mut Stream<Idle>) -> Result<()> {
        if self.collectives > 0 {
            return Err(Error::CollectiveGraphAlone { capture: self.capture_id, collectives: self.collectives });
        }
        self.launch_at(stream, CallSite::caller())
    }

    /// [`launch`](Self::launch) without the check for collectives: for a launch of every
    /// rank's graph together.
    pub(crate) fn launch_at(&self, stream: &mut Stream<Idle>, site: CallSite) -> Result<()> {
        if !self.ctx.same(&stream.ctx) {
            return Err(Error::ContextMismatch { op: "Graph::launch", what: "stream" });
        }
        // An aborted communicator's kernels return at once: the replay would compute garbage
        // and report nothing.
        if let Some(l) = self.comm_links.iter().find(|l| l.is_aborted()) {
            return Err(Error::CommAborted { rank: l.rank });
        }
        stream.run("Graph::launch", site, |b, s| b.graph_launch(self.exec, s))
    }

    /// Collective calls in the graph (of communicators of more than one rank): such a graph
    /// runs only with the other ranks' graphs, through
    /// [`MultiGraph::launch`](crate::collective::MultiGraph::launch).
    pub fn collectives(&self) -> usize {
        self.collectives
    }

    /// Uploads the graph to the device ahead of its first launch.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn upload(&self, stream: &mut Stream<Idle>) -> Result<()> {
        let site = CallSite::caller();
        if !self.ctx.same(&stream.ctx) {
            return Err(Error::ContextMismatch { op: "Graph::upload", what: "stream" });
        }
        stream.run("Graph::upload", site, |b, s| b.graph_upload(self.exec, s))
    }

    /// The same graph with its borrow lifetime erased. Only for an owner that keeps
    /// everything the graph uses alive for as long as the returned graph lives (see
    /// [`OwnedGraph`](crate::OwnedGraph)): the lifetime is a phantom, so no handle moves.
    pub(crate) fn erase(mut self) -> Graph<'static> {
        let mut g = Graph::new(self.ctx.clone(), self.graph, self.exec, self.nodes, self.capture_id);
        g.ops = std::mem::take(&mut self.ops);
        g.ops_total = self.ops_total;
        g.collectives = self.collectives;
        g.comm_links = std::mem::take(&mut self.comm_links);
        g.flags = self.flags;
        // `self` no longer owns the handles: its `Drop` skips null ones.
        self.exec = RawExec(0);
        self.graph = RawGraph(0);
        g
    }

    pub(crate) fn context(&self) -> &Context {
        &self.ctx
    }

    /// The graph's nodes by kind.
    pub fn nodes(&self) -> NodeCounts {
        self.nodes
    }

    /// The id of the capture that recorded it.
    pub fn capture_id(&self) -> u64 {
        self.capture_id
    }
}

impl Drop for Graph<'_> {
    fn drop(&mut self) {
        if self.exec.0 == 0 && self.graph.0 == 0 {
            return; // handed to another `Graph` by `erase`
        }
        let b = self.ctx.b();
        // The executable graph first, then the graph it was instantiated from.
        if let Err(code) = b.graph_exec_destroy(self.exec) {
            log::error!("capture-core: destroying an executable graph failed: {code}");
        }
        if let Err(code) = b.graph_destroy(self.graph) {
            log::error!("capture-core: destroying a graph failed: {code}");
        }
    }
}
