//! Candle graphs that own what they use, one alone or a family of batch buckets.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::{Duration, Instant};

use capture_core::{AllocPolicy, CaptureOptions, CaptureReport, Graph};

use crate::error::{Error, Result};
use crate::own::{Ownership, Resources};
use crate::stream::CandleStream;

/// A captured candle step that owns everything it reads and writes: the resources it was
/// given (a model and its state, usually `Arc`s, so cloning is cheap) and the step closure
/// itself, with whatever that closure owns.
///
/// candle ops borrow nothing through capture-core, so a graph of candle work cannot borrow
/// its tensors the way [`capture_core::Graph<'a>`] borrows buffers. Instead the step is a
/// `'static` closure: it can reach only what it owns or what it is handed from the
/// resources, and the graph keeps both until it is dropped. A step that borrows a tensor from
/// the caller's scope does not compile:
///
/// ```compile_fail,E0597
/// # fn main() -> Result<(), capture_candle::Error> {
/// # use candle_core::{DType, Device, Tensor};
/// # let device = Device::new_cuda_with_stream(0)?;
/// # let mut cs = capture_candle::CandleStream::new(&device)?;
/// let w = Tensor::ones((4, 4), DType::F32, &device)?;
/// let y = Tensor::zeros((4, 4), DType::F32, &device)?;
/// // `w` and `y` are borrowed by the step, which must be 'static: error[E0597]/[E0373].
/// let (graph, _) = cs.capture_owned((), |_| Ok(y.slice_set(&(&w * 2.0)?, 0, 0)?))?;
/// drop(w); // would leave the graph reading freed memory
/// # Ok(()) }
/// ```
///
/// Hand them to the graph as resources instead (a tensor moved into the closure is kept alive
/// too, but the graph cannot list it, so the ownership proof refuses it):
///
/// ```no_run
/// # fn main() -> Result<(), capture_candle::Error> {
/// # use candle_core::{DType, Device, Tensor};
/// # let device = Device::new_cuda_with_stream(0)?;
/// # let mut cs = capture_candle::CandleStream::new(&device)?;
/// let w = Tensor::ones((4, 4), DType::F32, &device)?;
/// let y = Tensor::zeros((4, 4), DType::F32, &device)?;
/// let step = |(w, y): &(Tensor, Tensor)| -> Result<(), capture_candle::Error> { Ok(y.slice_set(&(w * 2.0)?, 0, 0)?) };
/// cs.warm_up(|| step(&(w.clone(), y.clone())).map_err(candle_core::Error::wrap))?;
/// let (graph, _report) = cs.capture_owned((w.clone(), y.clone()), step)?;
/// drop(w); // the graph still holds its own handle: nothing is freed
/// graph.launch(cs.stream())?;
/// # Ok(()) }
/// ```
///
/// Every capture also proves, from the graph's own nodes, that the graph owns every address it
/// uses ([`Resources`], [`ownership`](Self::ownership)), and a graph is not `Send`: it is
/// replayed on the thread that captured it (candle's upload-cache entries it may read live in
/// that thread):
///
/// ```compile_fail,E0277
/// fn send<T: Send>(_: T) {}
/// fn f(g: capture_candle::CandleGraph<()>) { send(g) }
/// ```
pub struct CandleGraph<R: 'static> {
    // Drop order: the graph (which reads what the rest holds) first.
    graph: Graph<'static>,
    _step: Box<dyn std::any::Any>,
    resources: R,
    ownership: Ownership,
    programmatic_edges: usize,
}

impl<R: 'static> fmt::Debug for CandleGraph<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CandleGraph")
            .field("graph", &self.graph)
            .field("resources", &std::any::type_name::<R>())
            .finish()
    }
}

impl<R: 'static> CandleGraph<R> {
    /// The resources the graph was captured with.
    pub fn resources(&self) -> &R {
        &self.resources
    }

    /// The captured graph (replay it with [`Graph::launch`] on [`CandleStream::stream`]).
    pub fn graph(&self) -> &Graph<'static> {
        &self.graph
    }

    /// How the graph proved at capture that it owns every address it uses (see
    /// [`Resources`]).
    pub fn ownership(&self) -> &Ownership {
        &self.ownership
    }

    /// How many of the graph's edges are programmatic (a kernel and its successor that may
    /// start before it ends: programmatic dependent launch, as
    /// [`Model::set_programmatic_launch`](crate::model::Model::set_programmatic_launch) and
    /// cuBLAS's Hopper kernels record it). 0 on the simulated device.
    pub fn programmatic_edges(&self) -> usize {
        self.programmatic_edges
    }
}

impl<R: 'static> Deref for CandleGraph<R> {
    type Target = Graph<'static>;
    fn deref(&self) -> &Graph<'static> {
        &self.graph
    }
}

impl CandleStream {
    /// Captures `step` run with `resources` into a [`CandleGraph`] that owns both.
    ///
    /// Run the step once eagerly first ([`warm_up`](Self::warm_up)): loading kernels,
    /// sizing cuBLAS and caching candle's small uploads cannot happen during a capture. A
    /// step that fails or panics abandons the capture and leaves the stream idle.
    ///
    /// # Errors
    /// [`Error::OtherDevice`] when a tensor of the resources lives on another candle device
    /// (another stream, which the capture does not record); the step's error;
    /// [`Error::UnfreedGraphMemory`] when a tensor the step created is still alive at the
    /// end; [`Error::EmptyStep`] when the step recorded no work on the stream (its work ran
    /// on another device's stream, or it does nothing); capture-core's capture errors
    /// ([`Error::Capture`]).
    #[track_caller]
    pub fn capture_owned<R, F>(&mut self, resources: R, step: F) -> Result<(CandleGraph<R>, CaptureReport)>
    where
        R: Resources + 'static,
        F: FnMut(&R) -> Result<()> + 'static,
    {
        self.capture_owned_with(CaptureOptions::default(), resources, step)
    }

    /// [`capture_owned`](Self::capture_owned) with capture options (mode, allocation
    /// policy, watchdog).
    ///
    /// # Errors
    /// As [`capture_owned`](Self::capture_owned).
    #[track_caller]
    pub fn capture_owned_with<R, F>(
        &mut self,
        options: CaptureOptions,
        resources: R,
        mut step: F,
    ) -> Result<(CandleGraph<R>, CaptureReport)>
    where
        R: Resources + 'static,
        F: FnMut(&R) -> Result<()> + 'static,
    {
        self.check_devices(&resources)?;
        let g = self.capture_with(options)?;
        step(&resources)?;
        let (graph, snapshot, report) = g.finish_described()?;
        // A refusal drops the graph unlaunched: nothing it would read is ever read.
        let ownership = self.prove_owned(&snapshot, &resources)?;
        let programmatic_edges = snapshot.programmatic_edges.len();
        Ok((CandleGraph { graph, _step: Box::new(step), resources, ownership, programmatic_edges }, report))
    }

    /// Captures one graph per batch bucket, largest first, all owning `resources`: `step`
    /// is called with the bucket. Each bucket's step is run once eagerly (its warm-up)
    /// before it is captured, and each graph is replayed once after it. The graphs' scratch
    /// comes from the device's graph-memory pool, which CUDA shares between graphs
    /// launched one after another on a stream, so the family needs about as much graph
    /// memory as its largest bucket.
    ///
    /// The warm-ups and replays run the step: they change whatever state it changes (a
    /// decode step advances positions). Reset that state afterwards.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an empty bucket list, a zero bucket or one listed
    /// twice; [`Error::OtherDevice`] as [`capture_owned`](Self::capture_owned), before any
    /// warm-up; the first error of any bucket's warm-up, capture or replay.
    #[track_caller]
    pub fn capture_family<R, F>(&mut self, buckets: &[usize], resources: Arc<R>, step: F) -> Result<CandleFamily<R>>
    where
        R: Resources + Send + Sync + 'static,
        F: FnMut(&R, usize) -> Result<()> + 'static,
    {
        let mut sorted = buckets.to_vec();
        sorted.sort_unstable();
        if sorted.is_empty() || sorted[0] == 0 || sorted.windows(2).any(|w| w[0] == w[1]) {
            return Err(Error::invalid(
                "buckets",
                format!("{buckets:?}"),
                "a non-empty list of distinct sizes, each at least 1",
            ));
        }
        self.check_devices(&*resources)?;
        let step = Arc::new(std::sync::Mutex::new(step));
        let options = CaptureOptions::default().alloc_policy(AllocPolicy::Allow);
        let mut graphs = Vec::with_capacity(sorted.len());
        let mut stats = Vec::with_capacity(sorted.len());
        for &bucket in sorted.iter().rev() {
            let run = |r: &R| -> Result<()> {
                let mut s =
                    step.lock().map_err(|_| Error::invalid("family step", "poisoned", "a step that did not panic"))?;
                (*s)(r, bucket)
            };
            let t = Instant::now();
            self.warm_up(|| run(&resources).map_err(candle_core::Error::wrap))?;
            let warmup = t.elapsed();
            let t = Instant::now();
            let keep = step.clone();
            let (graph, report) = self.capture_owned_with(options, resources.clone(), move |r: &Arc<R>| {
                let mut s =
                    keep.lock().map_err(|_| Error::invalid("family step", "poisoned", "a step that did not panic"))?;
                (*s)(r, bucket)
            })?;
            let capture = t.elapsed();
            graph.launch(self.stream())?;
            self.stream().synchronize()?;
            let pool = self.context().graph_memory()?.reserved;
            stats.push(BucketCapture { bucket, warmup, capture, pool_reserved: pool, report });
            graphs.push((bucket, graph));
        }
        graphs.reverse();
        stats.reverse();
        Ok(CandleFamily { graphs, resources, stats })
    }
}

impl CandleStream {
    /// Every tensor of `resources` on this stream's candle device (CPU tensors included:
    /// their work cannot be captured either). candle runs each device's work on that
    /// device's own stream, which this capture does not record: its kernels would run once,
    /// outside the graph, and its allocations fail the capture with a driver error that
    /// names neither tensor nor fix.
    pub(crate) fn check_devices<R: Resources + ?Sized>(&self, resources: &R) -> Result<()> {
        let ours = self.device().id();
        let mut other = None;
        resources.visit_tensors(&mut |t| {
            let place = match t.device() {
                candle_core::Device::Cuda(d) if d.id() == ours => return,
                candle_core::Device::Cuda(d) => format!(
                    "candle device {:?} of GPU {} (the stream's is {ours:?})",
                    d.id(),
                    d.cuda_stream().context().ordinal()
                ),
                d => format!("{:?}", d.location()),
            };
            if other.is_none() {
                other = Some(format!("a {:?} {:?} tensor of the resources, on {place},", t.dtype(), t.dims()));
            }
        });
        match other {
            Some(what) => Err(Error::OtherDevice { what }),
            None => Ok(()),
        }
    }
}

/// How one bucket of a [`CandleFamily`] was captured.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BucketCapture {
    /// The bucket.
    pub bucket: usize,
    /// Its eager warm-up.
    pub warmup: Duration,
    /// Capture and instantiation.
    pub capture: Duration,
    /// The device's graph-memory pool reservation after its first replay.
    pub pool_reserved: u64,
    /// The capture's report.
    pub report: CaptureReport,
}

/// One owned graph per batch bucket, sharing resources and the device's graph-memory pool:
/// a batch of `n` rows replays the smallest bucket of at least `n`.
pub struct CandleFamily<R: 'static> {
    graphs: Vec<(usize, CandleGraph<Arc<R>>)>,
    resources: Arc<R>,
    stats: Vec<BucketCapture>,
}

impl<R: 'static> fmt::Debug for CandleFamily<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CandleFamily").field("buckets", &self.buckets()).finish()
    }
}

impl<R: 'static> CandleFamily<R> {
    /// The buckets, ascending.
    pub fn buckets(&self) -> Vec<usize> {
        self.graphs.iter().map(|(b, _)| *b).collect()
    }

    /// The smallest bucket of at least `rows`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for 0 rows; [`Error::BatchTooLarge`] above the largest.
    pub fn select(&self, rows: usize) -> Result<usize> {
        if rows == 0 {
            return Err(Error::invalid("batch rows", 0, "at least 1"));
        }
        self.graphs
            .iter()
            .map(|(b, _)| *b)
            .find(|&b| b >= rows)
            .ok_or(Error::BatchTooLarge { size: rows, largest: self.graphs.last().map_or(0, |(b, _)| *b) })
    }

    /// The graph of `bucket`.
    pub fn graph(&self, bucket: usize) -> Option<&CandleGraph<Arc<R>>> {
        self.graphs.iter().find(|(b, _)| *b == bucket).map(|(_, g)| g)
    }

    /// Replays the bucket for `rows` rows on candle's stream; returns the bucket.
    ///
    /// # Errors
    /// As [`select`](Self::select); capture-core's launch errors.
    pub fn launch(&self, cs: &mut CandleStream, rows: usize) -> Result<usize> {
        let bucket = self.select(rows)?;
        if let Some(g) = self.graph(bucket) {
            g.launch(cs.stream())?;
        }
        Ok(bucket)
    }

    /// The shared resources.
    pub fn resources(&self) -> &Arc<R> {
        &self.resources
    }

    /// How each bucket was captured, ascending.
    pub fn captures(&self) -> &[BucketCapture] {
        &self.stats
    }
}
