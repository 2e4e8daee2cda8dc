//! `OwnedGraph<R>`: a graph that owns what it uses, so it can live in a struct.

use std::fmt;
use std::ops::Deref;

use crate::error::{CallSite, Result};
use crate::graph::Graph;
use crate::guard::{CaptureGuard, CaptureOptions};
use crate::report::CaptureReport;
use crate::state::{Capturing, Idle};
use crate::stream::Stream;

/// A graph that owns the resources it reads and writes: `'static`, so it can be stored in
/// an engine struct next to (or instead of) the buffers, in a `BTreeMap`, in an `Arc`.
///
/// [`Graph<'a>`](Graph) borrows every buffer, kernel and event its capture used, which is
/// the right shape for a graph made and replayed in one function, and the wrong one for a
/// struct that holds both the buffers and the graphs (a self-referential struct: E0597,
/// "borrowed for `'static`"). An `OwnedGraph<R>` takes the resources by value instead —
/// `R` is anything: a struct of buffers and kernels, or an `Arc` of one shared by many
/// graphs — and the capture closure may use only what it is handed from them:
///
/// ```
/// # use capture_core::*;
/// # fn main() -> Result<()> {
/// # let ctx = Context::simulated();
/// # kernels::register_chain_kernels(ctx.sim().unwrap());
/// # let mut stream = ctx.new_stream()?;
/// # let module = ctx.load_module(kernels::CHAIN_PTX)?;
/// struct Buffers { add: Kernel, a: DeviceBuffer<f32>, b: DeviceBuffer<f32>, out: DeviceBuffer<f32> }
/// let bufs = std::sync::Arc::new(Buffers {
///     add: module.kernel("add_f32")?,
///     a: stream.upload_new(&[1.0f32; 256])?,
///     b: stream.upload_new(&[2.0f32; 256])?,
///     out: stream.alloc_zeros::<f32>(256)?,
/// });
/// let (graph, _report) = OwnedGraph::capture(&mut stream, bufs.clone(), |s, r| {
///     s.launch(&r.add, LaunchConfig::for_num_elems(256), (&r.a, &r.b, &r.out, 256u32))
/// })?;
/// // An engine can now hold `graph` (an `OwnedGraph<Arc<Buffers>>`, 'static) in a field.
/// graph.launch(&mut stream)?;
/// assert_eq!(stream.download(&bufs.out)?[0], 3.0);
/// # Ok(()) }
/// ```
///
/// **Why this is sound, and what the compiler checks.** The closure is
/// `for<'r> FnOnce(&mut Stream<Capturing<'r>>, &'r R)`: it must work for *every* `'r`, so
/// anything it records must be borrowed from the `&'r R` it is given (or be `'static`). A
/// buffer from outside the resources is rejected at compile time, as with `Graph<'a>`
/// (ui test `owned_graph_uses_buffer_outside_resources`). The resources live in a `Box`
/// the graph owns, are only ever lent out shared ([`resources`](Self::resources)), and
/// are dropped after the executable graph is destroyed; dropping every other handle to
/// an `Arc`'d buffer leaves the graph's own clone, so nothing it uses is freed while it
/// lives. There is no `unsafe` here: the borrow lifetime of a [`Graph`] is a phantom, and
/// the owner erases it only while it holds what was borrowed.
///
/// **Choosing between the two.** Keep `Graph<'a>` where a graph is made and used in one
/// scope: it costs nothing and the borrow checker proves everything. Use `OwnedGraph`
/// where a graph outlives the scope that made it (engines, caches, bucket families); the
/// price is that its resources are reachable only shared, through the graph or through
/// your own `Arc` clone, while it lives.
pub struct OwnedGraph<R: 'static> {
    // Drop order matters: the graph (which uses what `resources` holds) goes first.
    graph: Graph<'static>,
    resources: Box<R>,
}

impl<R: 'static> fmt::Debug for OwnedGraph<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedGraph")
            .field("graph", &self.graph)
            .field("resources", &std::any::type_name::<R>())
            .finish()
    }
}

impl<R: 'static> OwnedGraph<R> {
    /// Captures the work `record` issues on `stream` with `resources`, in
    /// [`CaptureOptions::default`] (Global mode), and keeps both.
    ///
    /// If `record` returns an error or panics, the capture is abandoned as a dropped guard
    /// abandons it (the stream is idle and usable again, the report is kept for
    /// [`Context::take_abandoned_reports`](crate::Context::take_abandoned_reports)) and the
    /// resources are dropped.
    ///
    /// # Errors
    /// Whatever `record` returns, and those of [`Stream::capture`] and
    /// [`CaptureGuard::finish`].
    #[track_caller]
    pub fn capture<F>(stream: &mut Stream<Idle>, resources: R, record: F) -> Result<(Self, CaptureReport)>
    where
        F: for<'r> FnOnce(&mut Stream<Capturing<'r>>, &'r R) -> Result<()>,
    {
        Self::capture_at(stream, CaptureOptions::default(), resources, record, CallSite::caller())
    }

    /// [`capture`](Self::capture) with options (capture mode, allocation policy, watchdog).
    ///
    /// # Errors
    /// As [`capture`](Self::capture).
    #[track_caller]
    pub fn capture_with<F>(
        stream: &mut Stream<Idle>,
        options: CaptureOptions,
        resources: R,
        record: F,
    ) -> Result<(Self, CaptureReport)>
    where
        F: for<'r> FnOnce(&mut Stream<Capturing<'r>>, &'r R) -> Result<()>,
    {
        Self::capture_at(stream, options, resources, record, CallSite::caller())
    }

    pub(crate) fn capture_at<F>(
        stream: &mut Stream<Idle>,
        options: CaptureOptions,
        resources: R,
        record: F,
        site: CallSite,
    ) -> Result<(Self, CaptureReport)>
    where
        F: for<'r> FnOnce(&mut Stream<Capturing<'r>>, &'r R) -> Result<()>,
    {
        let resources = Box::new(resources);
        let (graph, report) = {
            let mut guard = CaptureGuard::start(stream, options, site)?;
            record(guard.stream(), &resources)?;
            let (graph, report) = guard.finish()?;
            // The borrow of `resources` ends here; from now on `Self` owns both, and drops
            // the graph first.
            (graph.erase(), report)
        };
        Ok((Self { graph, resources }, report))
    }

    /// The graph.
    pub fn graph(&self) -> &Graph<'static> {
        &self.graph
    }

    /// The resources, shared (they cannot be changed or dropped while the graph uses them).
    pub fn resources(&self) -> &R {
        &self.resources
    }

    /// Destroys the graph and gives the resources back.
    pub fn into_resources(self) -> R {
        let Self { graph, resources } = self;
        drop(graph);
        *resources
    }
}

/// Replay with [`Graph::launch`], read node counts with [`Graph::nodes`], and so on.
impl<R: 'static> Deref for OwnedGraph<R> {
    type Target = Graph<'static>;
    fn deref(&self) -> &Graph<'static> {
        &self.graph
    }
}

impl Stream<Idle> {
    /// Captures into an [`OwnedGraph`]: shorthand for
    /// [`OwnedGraph::capture`]`(self, resources, record)`.
    ///
    /// # Errors
    /// As [`OwnedGraph::capture`].
    #[track_caller]
    pub fn capture_owned<R: 'static, F>(&mut self, resources: R, record: F) -> Result<(OwnedGraph<R>, CaptureReport)>
    where
        F: for<'r> FnOnce(&mut Stream<Capturing<'r>>, &'r R) -> Result<()>,
    {
        OwnedGraph::capture_at(self, CaptureOptions::default(), resources, record, CallSite::caller())
    }
}
