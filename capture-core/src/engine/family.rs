//! Graph families: one graph per batch-size bucket, one graph-memory pool for all.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::device::NodeCounts;
use crate::engine::owned::OwnedGraph;
use crate::error::{CallSite, Error, Result};
use crate::graph::Graph;
use crate::guard::CaptureOptions;
use crate::report::CaptureReport;
use crate::state::{Capturing, Idle};
use crate::stream::Stream;

/// A warm-up run: the bucket's work run eagerly before it is captured.
type Warmup<'w, R> = Box<dyn FnMut(&mut Stream<Idle>, &R, usize) -> Result<()> + 'w>;
/// A progress callback, called after each bucket is captured and warmed up.
type Progress<'w> = Box<dyn FnMut(&BucketStats) + 'w>;

/// How one bucket was captured: what the family's progress callback is given, and what the
/// [`FamilySummary`] lists.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct BucketStats {
    /// The bucket (the batch size its graph was captured for).
    pub bucket: usize,
    /// 1-based position in capture order (largest bucket first).
    pub position: usize,
    /// Buckets in the family.
    pub of: usize,
    /// The graph's nodes by kind.
    pub nodes: NodeCounts,
    /// The eager warm-up run, when one was given.
    pub warmup: Duration,
    /// Capturing and instantiating the graph.
    pub capture: Duration,
    /// The warm-up replays after capture (with the synchronize that ends them).
    pub replay: Duration,
    /// The device's graph-memory pool reservation after this bucket's warm-up replays
    /// ([`GraphMemUsage::reserved`](crate::GraphMemUsage::reserved)): with the family
    /// sharing one pool it stays at the largest bucket's need.
    pub pool_reserved: u64,
    /// The capture's report.
    pub report: CaptureReport,
}

impl fmt::Display for BucketStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "bucket {:>5} ({}/{}): {} nodes, warm-up {:.2?}, capture {:.2?}, replay {:.2?}, graph pool {}",
            self.bucket,
            self.position,
            self.of,
            self.nodes.total,
            self.warmup,
            self.capture,
            self.replay,
            mib(self.pool_reserved)
        )
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / (1 << 20) as f64)
}

/// What capturing a family did: per bucket, and in all.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FamilySummary {
    /// Each bucket, in capture order (largest first).
    pub buckets: Vec<BucketStats>,
    /// Wall time of the whole family capture (warm-ups and replays included).
    pub total: Duration,
    /// The graph-memory pool reservation when the family was done.
    pub pool_reserved: u64,
    /// The largest reservation any single bucket needed on its own: the first (largest)
    /// bucket's, measured right after its warm-up replays.
    pub largest_bucket_pool: u64,
}

impl FamilySummary {
    /// `pool_reserved / largest_bucket_pool`: 1.0 when the family needs no more graph memory
    /// than its largest bucket alone. `None` when the buckets allocate no graph memory.
    pub fn pool_ratio(&self) -> Option<f64> {
        (self.largest_bucket_pool > 0).then(|| self.pool_reserved as f64 / self.largest_bucket_pool as f64)
    }
}

impl fmt::Display for FamilySummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "graph family: {} buckets captured in {:.2?}", self.buckets.len(), self.total)?;
        for b in &self.buckets {
            writeln!(f, "  {b}")?;
        }
        write!(f, "  graph pool: {} reserved", mib(self.pool_reserved))?;
        if let Some(r) = self.pool_ratio() {
            write!(f, " ({r:.2}x the largest bucket's {})", mib(self.largest_bucket_pool))?;
        }
        Ok(())
    }
}

/// Which bucket a batch runs in: the smallest bucket at least as large as the batch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Selection {
    /// The batch size asked for.
    pub size: usize,
    /// The bucket chosen.
    pub bucket: usize,
    /// The bucket's index in [`GraphFamily::buckets`].
    pub index: usize,
    /// Rows of padding: `bucket - size`.
    pub padding: usize,
}

impl Selection {
    /// `rows` (a batch of `size` rows of `row_len` elements) padded to the bucket with
    /// `fill`: what to upload into the family's input buffers.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless `rows.len() == size * row_len`.
    pub fn pad<T: Copy>(&self, rows: &[T], row_len: usize, fill: T) -> Result<Vec<T>> {
        let want = self.size.saturating_mul(row_len);
        if rows.len() != want {
            return Err(Error::LengthMismatch { op: "Selection::pad", dst: want, src: rows.len() });
        }
        let mut out = Vec::with_capacity(self.bucket.saturating_mul(row_len));
        out.extend_from_slice(rows);
        out.resize(self.bucket * row_len, fill);
        Ok(out)
    }
}

/// Replay counters of a family: how much of what ran was padding.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FamilyStats {
    /// Replays launched.
    pub replays: u64,
    /// Rows asked for (the sum of the batch sizes).
    pub rows: u64,
    /// Rows of padding run (the sum of `bucket - size`).
    pub padded_rows: u64,
    /// Replays per bucket, in the order of [`GraphFamily::buckets`].
    pub per_bucket: Vec<u64>,
}

impl FamilyStats {
    /// The fraction of rows run that were padding (0 when nothing ran).
    pub fn padding_fraction(&self) -> f64 {
        let run = self.rows + self.padded_rows;
        if run == 0 {
            0.0
        } else {
            self.padded_rows as f64 / run as f64
        }
    }
}

impl fmt::Display for FamilyStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} replays, {} rows asked for, {} rows of padding ({:.1}% of the rows run)",
            self.replays,
            self.rows,
            self.padded_rows,
            100.0 * self.padding_fraction()
        )
    }
}

/// Sets up a [`GraphFamily`]: the buckets, capture options, an optional eager warm-up per
/// bucket, replays per bucket after capture, and a progress callback.
#[must_use = "a FamilyBuilder does nothing until `capture` is called"]
pub struct FamilyBuilder<'w, R: 'static> {
    buckets: Vec<usize>,
    options: CaptureOptions,
    warmup: Option<Warmup<'w, R>>,
    progress: Option<Progress<'w>>,
    replays: usize,
}

impl<R: 'static> fmt::Debug for FamilyBuilder<'_, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FamilyBuilder")
            .field("buckets", &self.buckets)
            .field("options", &self.options)
            .field("warmup", &self.warmup.is_some())
            .field("replays", &self.replays)
            .finish()
    }
}

impl<'w, R: Send + Sync + 'static> FamilyBuilder<'w, R> {
    /// Capture options for every bucket. The default is [`CaptureOptions::default`] with
    /// [`AllocPolicy::Allow`](crate::AllocPolicy::Allow): scratch from the graph pool is how
    /// a family shares memory, so its allocations are counted in each bucket's report
    /// without a warning per bucket.
    pub fn options(mut self, options: CaptureOptions) -> Self {
        self.options = options;
        self
    }

    /// An eager run of each bucket's work before it is captured (then a synchronize):
    /// where lazily initialised state (a library's workspace, an autotuned kernel) gets
    /// made, outside any capture.
    pub fn warmup(mut self, warmup: impl FnMut(&mut Stream<Idle>, &R, usize) -> Result<()> + 'w) -> Self {
        self.warmup = Some(Box::new(warmup));
        self
    }

    /// Replays of each graph right after it is captured, then a synchronize (default 1).
    /// The first replay maps the graph's memory from the pool and uploads the graph, so
    /// the first real request does not pay for it, and a graph that faults does so here.
    pub fn replays(mut self, n: usize) -> Self {
        self.replays = n;
        self
    }

    /// Called after each bucket is captured and warmed up, with what it cost.
    pub fn on_progress(mut self, progress: impl FnMut(&BucketStats) + 'w) -> Self {
        self.progress = Some(Box::new(progress));
        self
    }

    /// Captures one graph per bucket, largest first, each with `resources` (shared, so
    /// every graph keeps them alive) and the work `record` issues for that bucket.
    ///
    /// # Errors
    /// [`Error::InvalidBuckets`] for an empty list, a zero bucket or a bucket listed twice;
    /// the first error of any bucket's warm-up, capture or replays (the buckets captured
    /// before it are dropped, and the stream is idle and usable again).
    #[track_caller]
    pub fn capture<F>(
        mut self,
        stream: &mut Stream<Idle>,
        resources: Arc<R>,
        mut record: F,
    ) -> Result<(GraphFamily<R>, FamilySummary)>
    where
        F: for<'r> FnMut(&mut Stream<Capturing<'r>>, &'r R, usize) -> Result<()>,
    {
        let site = CallSite::caller();
        let buckets = validate(&self.buckets)?;
        let ctx = stream.context().clone();
        let started = Instant::now();
        let mut graphs: Vec<Option<OwnedGraph<Arc<R>>>> = (0..buckets.len()).map(|_| None).collect();
        let mut stats = Vec::with_capacity(buckets.len());
        for (position, (index, &bucket)) in buckets.iter().enumerate().rev().enumerate() {
            let t = Instant::now();
            if let Some(w) = self.warmup.as_mut() {
                w(stream, &resources, bucket)?;
                stream.synchronize()?;
            }
            let warmup = t.elapsed();
            let t = Instant::now();
            let (graph, report) = OwnedGraph::capture_at(
                stream,
                self.options,
                resources.clone(),
                |s, r: &Arc<R>| record(s, r, bucket),
                site,
            )?;
            let capture = t.elapsed();
            let t = Instant::now();
            for _ in 0..self.replays {
                graph.launch(stream)?;
            }
            stream.synchronize()?;
            let replay = t.elapsed();
            let pool_reserved = ctx.graph_memory()?.reserved;
            let s = BucketStats {
                bucket,
                position: position + 1,
                of: buckets.len(),
                nodes: graph.nodes(),
                warmup,
                capture,
                replay,
                pool_reserved,
                report,
            };
            log::info!("capture-core: graph family: {s}");
            if let Some(p) = self.progress.as_mut() {
                p(&s);
            }
            stats.push(s);
            graphs[index] = Some(graph);
        }
        let graphs: Vec<OwnedGraph<Arc<R>>> = graphs.into_iter().flatten().collect();
        let summary = FamilySummary {
            largest_bucket_pool: stats.first().map_or(0, |s| s.pool_reserved),
            pool_reserved: ctx.graph_memory()?.reserved,
            total: started.elapsed(),
            buckets: stats,
        };
        let per_bucket = vec![0; buckets.len()];
        let family =
            GraphFamily { buckets, graphs, resources, stats: FamilyStats { per_bucket, ..Default::default() } };
        Ok((family, summary))
    }
}

/// Sorted, checked buckets.
fn validate(buckets: &[usize]) -> Result<Vec<usize>> {
    let bad = |reason| Err(Error::InvalidBuckets { buckets: buckets.to_vec(), reason });
    if buckets.is_empty() {
        return bad("the list is empty; give the batch sizes to capture, e.g. [1, 2, 4, 8, 16, 32, 64, 128]");
    }
    if buckets.contains(&0) {
        return bad("a bucket of 0 runs nothing; every bucket must be at least 1");
    }
    let mut sorted = buckets.to_vec();
    sorted.sort_unstable();
    if sorted.windows(2).any(|w| w[0] == w[1]) {
        return bad("a bucket is listed twice; list each batch size once");
    }
    Ok(sorted)
}

/// One graph per batch-size bucket, sharing one set of resources and the device's
/// graph-memory pool: what a serving engine captures at start-up.
///
/// Build one with [`GraphFamily::builder`]; at run time [`launch`](Self::launch) picks the
/// smallest bucket at least as large as the batch, replays its graph, and counts the
/// padding. Write the batch into the resources' input buffers first, padded to the bucket
/// ([`Selection::pad`]); rows past the batch compute garbage that you ignore.
///
/// ```
/// # use capture_core::*;
/// # use std::sync::Arc;
/// # fn main() -> Result<()> {
/// # let ctx = Context::simulated();
/// # kernels::register_chain_kernels(ctx.sim().unwrap());
/// # let mut stream = ctx.new_stream()?;
/// # let module = ctx.load_module(kernels::CHAIN_PTX)?;
/// const ROW: usize = 64; // elements per row (one request)
/// struct Model { scale: Kernel, x: DeviceBuffer<f32>, y: DeviceBuffer<f32> }
/// let model = Arc::new(Model {
///     scale: module.kernel("scale_f32")?,
///     x: stream.alloc_zeros::<f32>(8 * ROW)?, // sized for the largest bucket
///     y: stream.alloc_zeros::<f32>(8 * ROW)?,
/// });
/// let (mut family, summary) = GraphFamily::builder(&[1, 2, 4, 8]).capture(&mut stream, model.clone(), |s, m, bucket| {
///     let n = (bucket * ROW) as u32;
///     // Scratch from the graph-memory pool, shared by every bucket's graph.
///     let tmp = s.alloc_async::<f32>(bucket * ROW)?;
///     s.launch(&m.scale, LaunchConfig::for_num_elems(n), (&m.x, &tmp, 2.0f32, n))?;
///     s.launch(&m.scale, LaunchConfig::for_num_elems(n), (&tmp, &m.y, 1.5f32, n))?;
///     s.free_async(tmp)
/// })?;
/// println!("{summary}");
/// let batch = vec![1.0f32; 3 * ROW]; // 3 requests
/// let sel = family.select(3)?;        // bucket 4, 1 row of padding
/// let mut input = sel.pad(&batch, ROW, 0.0)?;  // 4 rows: the batch and a row of zeros
/// input.resize(family.largest() * ROW, 0.0);   // the buffer holds the largest bucket
/// stream.upload(&model.x, &input)?;
/// family.launch(&mut stream, 3)?;
/// assert_eq!(stream.download(&model.y)?[0], 3.0);
/// assert_eq!(family.stats().padded_rows, 1);
/// # Ok(()) }
/// ```
///
/// **One pool.** Scratch a bucket allocates inside its capture (`alloc_async` and
/// `free_async` on the capturing stream) comes from the device's graph-memory pool, which
/// every graph shares: CUDA reuses its physical memory across graphs launched one after
/// another, so the family needs about as much graph memory as its largest bucket (hence
/// largest first: the pool is sized once). Launch a family's graphs on one stream: graphs
/// launched concurrently on different streams stay correct, but then the driver has to
/// back them with separate memory.
pub struct GraphFamily<R: 'static> {
    buckets: Vec<usize>,
    graphs: Vec<OwnedGraph<Arc<R>>>,
    resources: Arc<R>,
    stats: FamilyStats,
}

impl<R: 'static> fmt::Debug for GraphFamily<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphFamily").field("buckets", &self.buckets).field("stats", &self.stats).finish()
    }
}

impl<R: Send + Sync + 'static> GraphFamily<R> {
    /// A builder for a family with these buckets (any order; each at least 1, each once).
    pub fn builder<'w>(buckets: &[usize]) -> FamilyBuilder<'w, R> {
        FamilyBuilder {
            buckets: buckets.to_vec(),
            options: CaptureOptions::default().alloc_policy(crate::book::AllocPolicy::Allow),
            warmup: None,
            progress: None,
            replays: 1,
        }
    }
}

impl<R: 'static> GraphFamily<R> {
    /// The buckets, ascending.
    pub fn buckets(&self) -> &[usize] {
        &self.buckets
    }

    /// The largest bucket.
    pub fn largest(&self) -> usize {
        self.buckets.last().copied().unwrap_or(0)
    }

    /// The smallest bucket at least `size`.
    ///
    /// # Errors
    /// [`Error::EmptyBatch`] for 0; [`Error::NoBucketFits`] above the largest bucket (never
    /// truncated).
    #[inline]
    pub fn select(&self, size: usize) -> Result<Selection> {
        if size == 0 {
            return Err(Error::EmptyBatch);
        }
        let index = self.buckets.partition_point(|&b| b < size);
        match self.buckets.get(index) {
            Some(&bucket) => Ok(Selection { size, bucket, index, padding: bucket - size }),
            None => Err(Error::NoBucketFits { size, largest: self.largest() }),
        }
    }

    /// Replays the graph of the bucket for a batch of `size` on `stream`, and counts it.
    ///
    /// # Errors
    /// As [`select`](Self::select); [`Error::ContextMismatch`] for a stream of another
    /// context; [`Error::Driver`].
    #[track_caller]
    pub fn launch(&mut self, stream: &mut Stream<Idle>, size: usize) -> Result<Selection> {
        let sel = self.select(size)?;
        self.graphs[sel.index].launch(stream)?;
        self.stats.replays += 1;
        self.stats.rows += sel.size as u64;
        self.stats.padded_rows += sel.padding as u64;
        self.stats.per_bucket[sel.index] += 1;
        Ok(sel)
    }

    /// The graph of `bucket`, if the family has that bucket.
    pub fn graph(&self, bucket: usize) -> Option<&Graph<'static>> {
        self.buckets.binary_search(&bucket).ok().map(|i| self.graphs[i].graph())
    }

    /// The resources every graph of the family uses.
    pub fn resources(&self) -> &Arc<R> {
        &self.resources
    }

    /// Replay counters since the family was captured (or since [`reset_stats`](Self::reset_stats)).
    pub fn stats(&self) -> &FamilyStats {
        &self.stats
    }

    /// Zeroes the replay counters.
    pub fn reset_stats(&mut self) {
        self.stats = FamilyStats { per_bucket: vec![0; self.buckets.len()], ..Default::default() };
    }
}
