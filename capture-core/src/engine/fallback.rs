//! Capture-or-eager fallback: capture a region once, replay it from then on, or — if it
//! cannot be captured — run it eagerly from then on, and say why once.

use std::fmt;
use std::sync::Arc;

use crate::engine::owned::OwnedGraph;
use crate::error::{CallSite, Error, Result};
use crate::graph::Graph;
use crate::guard::CaptureOptions;
use crate::state::{Capturing, Idle, Records};
use crate::stream::Stream;
use crate::validate::{Outputs, ReplayCheck};

/// Work that runs the same way eagerly and under capture: the body of a [`Fallback`].
///
/// Written once, generically over the stream's state (as capture-safe helpers are, with
/// [`Records`]), so the fallback can record it into a graph or run it eagerly:
///
/// ```
/// # use capture_core::*;
/// struct Step;
/// struct Bufs { scale: Kernel, x: DeviceBuffer<f32>, y: DeviceBuffer<f32> }
/// impl Region<Bufs> for Step {
///     fn run<'r, S: Records<'r>>(&mut self, s: &mut Stream<S>, b: &'r Bufs) -> Result<()> {
///         s.launch(&b.scale, LaunchConfig::for_num_elems(64), (&b.x, &b.y, 2.0f32, 64u32))
///     }
/// }
/// ```
pub trait Region<R: ?Sized> {
    /// Issues the region's work on `stream` with `resources`.
    ///
    /// # Errors
    /// Whatever the work returns.
    fn run<'r, S: Records<'r>>(&mut self, stream: &mut Stream<S>, resources: &'r R) -> Result<()>;
}

/// Which way a [`Fallback::run`] (or [`Fallback::prepare`]) went.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Path {
    /// The region was captured now (and, from `run`, replayed).
    Captured,
    /// The captured graph was replayed.
    Replayed,
    /// The capture failed now; the region fell back (and, from `run`, ran eagerly).
    FellBack,
    /// The region ran eagerly, as it does since it fell back.
    Eager,
}

/// Why a [`Fallback`] runs eagerly: the capture error, and where.
#[derive(Debug)]
#[non_exhaustive]
pub struct FallbackReason {
    /// The region's name.
    pub region: String,
    /// The error that made it fall back (it names the operation at fault where the
    /// library knows it, e.g. [`Error::CaptureInvalidated`]'s `cause`).
    pub error: Error,
    /// Where the `run` or `prepare` that tried the capture was called.
    pub site: CallSite,
}

impl fmt::Display for FallbackReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "region `{}` runs eagerly: capturing it (at {}) failed: {}", self.region, self.site, self.error)
    }
}

/// The two ways of issuing a region's work, for the fallback's internals: recorded into a
/// capture, or run eagerly. A [`Region`] is both; so is a pair of closures.
trait Work<R: ?Sized> {
    fn record<'r>(&mut self, stream: &mut Stream<Capturing<'r>>, resources: &'r R) -> Result<()>;
    fn eager(&mut self, stream: &mut Stream<Idle>, resources: &R) -> Result<()>;
}

struct RegionWork<'g, G>(&'g mut G);

impl<R: ?Sized, G: Region<R>> Work<R> for RegionWork<'_, G> {
    fn record<'r>(&mut self, stream: &mut Stream<Capturing<'r>>, resources: &'r R) -> Result<()> {
        self.0.run(stream, resources)
    }
    fn eager(&mut self, stream: &mut Stream<Idle>, resources: &R) -> Result<()> {
        self.0.run(stream, resources)
    }
}

struct ClosureWork<C, E>(C, E);

impl<R: ?Sized, C, E> Work<R> for ClosureWork<C, E>
where
    C: for<'r> FnMut(&mut Stream<Capturing<'r>>, &'r R) -> Result<()>,
    E: FnMut(&mut Stream<Idle>, &R) -> Result<()>,
{
    fn record<'r>(&mut self, stream: &mut Stream<Capturing<'r>>, resources: &'r R) -> Result<()> {
        (self.0)(stream, resources)
    }
    fn eager(&mut self, stream: &mut Stream<Idle>, resources: &R) -> Result<()> {
        (self.1)(stream, resources)
    }
}

type WriteInputs<R> = Box<dyn FnMut(usize, &mut Stream<Idle>, &R) -> Result<()> + Send>;
type ReadOutputs<R> = Box<dyn FnMut(&mut Stream<Idle>, &R) -> Result<Outputs> + Send>;

struct Validation<R> {
    check: ReplayCheck,
    write_inputs: WriteInputs<R>,
    read_outputs: ReadOutputs<R>,
}

enum State<R: 'static> {
    Untried,
    Graph(OwnedGraph<Arc<R>>),
    Eager(Box<FallbackReason>),
}

/// Tries to capture a region once; replays the graph from then on — or, if the capture
/// fails with a capture error, runs the region eagerly from then on, and records why and
/// where, once (in [`reason`](Self::reason) and a log warning).
///
/// The errors that make it fall back are those that say the region cannot be recorded
/// ([`Error::is_capture_failure`]): an invalidated capture, an unjoined fork, an
/// allocation the policy denies, a workspace asked of a sealed pool, an empty capture,
/// a capture-time driver error — and, where [`validate`](Self::validate) asks for it, a
/// replay that diverges from the eager run. Any other error (bad input, a context
/// mismatch, out of memory) is returned as it is, and the next call tries again.
///
/// The region is a [`Region`] (one generic function, [`run`](Self::run)) or a pair of
/// closures, one recording and one eager ([`run_with`](Self::run_with)).
///
/// A region that panics unwinds through the capture, which ends it: the stream is idle
/// and usable, and the fallback has not decided (the next call tries again).
///
/// ```
/// # use capture_core::*;
/// # use std::sync::Arc;
/// # fn main() -> Result<()> {
/// # let ctx = Context::simulated();
/// # kernels::register_chain_kernels(ctx.sim().unwrap());
/// # let mut stream = ctx.new_stream()?;
/// # let module = ctx.load_module(kernels::CHAIN_PTX)?;
/// struct Bufs { scale: Kernel, x: DeviceBuffer<f32>, y: DeviceBuffer<f32> }
/// struct Step;
/// impl Region<Bufs> for Step {
///     fn run<'r, S: Records<'r>>(&mut self, s: &mut Stream<S>, b: &'r Bufs) -> Result<()> {
///         s.launch(&b.scale, LaunchConfig::for_num_elems(64), (&b.x, &b.y, 2.0f32, 64u32))
///     }
/// }
/// let bufs = Arc::new(Bufs {
///     scale: module.kernel("scale_f32")?,
///     x: stream.upload_new(&[1.0f32; 64])?,
///     y: stream.alloc_zeros::<f32>(64)?,
/// });
/// let mut region = Fallback::new("scale", bufs.clone());
/// assert_eq!(region.run(&mut stream, &mut Step)?, Path::Captured);
/// assert_eq!(region.run(&mut stream, &mut Step)?, Path::Replayed);
/// assert!(region.reason().is_none());
/// assert_eq!(stream.download(&bufs.y)?[0], 2.0);
/// # Ok(()) }
/// ```
pub struct Fallback<R: 'static> {
    name: String,
    resources: Arc<R>,
    options: CaptureOptions,
    validation: Option<Validation<R>>,
    state: State<R>,
}

impl<R: 'static> fmt::Debug for Fallback<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.state {
            State::Untried => "untried",
            State::Graph(_) => "captured",
            State::Eager(_) => "eager",
        };
        f.debug_struct("Fallback").field("name", &self.name).field("state", &state).finish()
    }
}

impl<R: Send + Sync + 'static> Fallback<R> {
    /// A region named `name` (for the log and the reason) over `resources`.
    pub fn new(name: impl Into<String>, resources: Arc<R>) -> Self {
        Self {
            name: name.into(),
            resources,
            options: CaptureOptions::default(),
            validation: None,
            state: State::Untried,
        }
    }

    /// Capture options (default [`CaptureOptions::default`]).
    pub fn options(mut self, options: CaptureOptions) -> Self {
        self.options = options;
        self
    }

    /// Validates the graph when it is captured: `check` runs over its input sets, each
    /// written by `write_inputs`, the replay against the region run eagerly, comparing what
    /// `read_outputs` reads. A divergence makes the region fall back. Validation runs
    /// the region on inputs of its own, so capture with [`prepare`](Self::prepare) at
    /// start-up, before you write real inputs (`run` captures without validating when
    /// `prepare` was not called).
    pub fn validate(
        mut self,
        check: ReplayCheck,
        write_inputs: impl FnMut(usize, &mut Stream<Idle>, &R) -> Result<()> + Send + 'static,
        read_outputs: impl FnMut(&mut Stream<Idle>, &R) -> Result<Outputs> + Send + 'static,
    ) -> Self {
        self.validation =
            Some(Validation { check, write_inputs: Box::new(write_inputs), read_outputs: Box::new(read_outputs) });
        self
    }

    /// Captures the region (and validates it, if asked) without running it for real; a
    /// capture failure makes it fall back. Does nothing once it has decided.
    ///
    /// # Errors
    /// Errors that are not capture failures, from the capture or the validation closures.
    #[track_caller]
    pub fn prepare<G: Region<R>>(&mut self, stream: &mut Stream<Idle>, region: &mut G) -> Result<Path> {
        self.prepare_at(stream, &mut RegionWork(region), true, CallSite::caller())
    }

    /// [`prepare`](Self::prepare) with the region given as two closures: `record` issues
    /// the work on the capturing stream, `eager` the same work on the idle stream (for
    /// validation). Typically both call one function written generically over
    /// [`Records`](crate::Records).
    ///
    /// # Errors
    /// As [`prepare`](Self::prepare).
    #[track_caller]
    pub fn prepare_with<C, E>(&mut self, stream: &mut Stream<Idle>, record: C, eager: E) -> Result<Path>
    where
        C: for<'r> FnMut(&mut Stream<Capturing<'r>>, &'r R) -> Result<()>,
        E: FnMut(&mut Stream<Idle>, &R) -> Result<()>,
    {
        self.prepare_at(stream, &mut ClosureWork(record, eager), true, CallSite::caller())
    }

    fn prepare_at(
        &mut self,
        stream: &mut Stream<Idle>,
        work: &mut dyn Work<R>,
        validate: bool,
        site: CallSite,
    ) -> Result<Path> {
        match self.state {
            State::Graph(_) => return Ok(Path::Replayed),
            State::Eager(_) => return Ok(Path::Eager),
            State::Untried => {}
        }
        let captured = OwnedGraph::capture_at(
            stream,
            self.options,
            self.resources.clone(),
            |s, r: &Arc<R>| work.record(s, &**r),
            site,
        );
        let outcome = match captured {
            Ok((graph, _report)) => match self.validation.as_mut().filter(|_| validate) {
                None => Ok(graph),
                Some(v) => {
                    let res = &*self.resources;
                    v.check
                        .run(
                            graph.graph(),
                            stream,
                            |i, s| (v.write_inputs)(i, s, res),
                            |_, s| work.eager(s, res),
                            |s| (v.read_outputs)(s, res),
                        )
                        .map(|_| graph)
                }
            },
            Err(e) => Err(e),
        };
        match outcome {
            Ok(graph) => {
                self.state = State::Graph(graph);
                Ok(Path::Captured)
            }
            Err(error) if error.is_capture_failure() => {
                let reason = FallbackReason { region: self.name.clone(), error, site };
                log::warn!("capture-core: {reason}; it will run eagerly from now on");
                self.state = State::Eager(Box::new(reason));
                Ok(Path::FellBack)
            }
            Err(e) => Err(e),
        }
    }

    /// Runs the region: captures it on the first call (then replays the graph, so this
    /// call's work is done), replays the graph on later calls, or runs it eagerly if the
    /// capture failed.
    ///
    /// # Errors
    /// As [`prepare`](Self::prepare); errors of the replay or the eager run.
    #[track_caller]
    pub fn run<G: Region<R>>(&mut self, stream: &mut Stream<Idle>, region: &mut G) -> Result<Path> {
        self.run_at(stream, &mut RegionWork(region), CallSite::caller())
    }

    /// [`run`](Self::run) with the region given as two closures, the closure-based form:
    /// `record` issues the work on the capturing stream, `eager` the same work on the idle
    /// stream. Typically both call one function written generically over
    /// [`Records`](crate::Records):
    ///
    /// ```
    /// # use capture_core::*;
    /// # use std::sync::Arc;
    /// # fn main() -> Result<()> {
    /// # let ctx = Context::simulated();
    /// # kernels::register_chain_kernels(ctx.sim().unwrap());
    /// # let mut stream = ctx.new_stream()?;
    /// # let module = ctx.load_module(kernels::CHAIN_PTX)?;
    /// struct Bufs { incr: Kernel, x: DeviceBuffer<f32> }
    /// fn step<'r, S: Records<'r>>(s: &mut Stream<S>, b: &'r Bufs) -> Result<()> {
    ///     s.launch(&b.incr, LaunchConfig::for_num_elems(64), (&b.x, 64u32))
    /// }
    /// let bufs = Arc::new(Bufs { incr: module.kernel("incr_f32")?, x: stream.alloc_zeros::<f32>(64)? });
    /// let mut region = Fallback::new("incr", bufs.clone());
    /// for _ in 0..3 {
    ///     region.run_with(&mut stream, |s, b| step(s, b), |s, b| step(s, b))?;
    /// }
    /// assert_eq!(stream.download(&bufs.x)?[0], 3.0);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`run`](Self::run).
    #[track_caller]
    pub fn run_with<C, E>(&mut self, stream: &mut Stream<Idle>, record: C, eager: E) -> Result<Path>
    where
        C: for<'r> FnMut(&mut Stream<Capturing<'r>>, &'r R) -> Result<()>,
        E: FnMut(&mut Stream<Idle>, &R) -> Result<()>,
    {
        self.run_at(stream, &mut ClosureWork(record, eager), CallSite::caller())
    }

    fn run_at(&mut self, stream: &mut Stream<Idle>, work: &mut dyn Work<R>, site: CallSite) -> Result<Path> {
        let path = self.prepare_at(stream, work, false, site)?;
        match &self.state {
            State::Graph(g) => g.launch(stream)?,
            State::Eager(_) => work.eager(stream, &*self.resources)?,
            State::Untried => {}
        }
        Ok(path)
    }

    /// Why the region runs eagerly, once it does.
    pub fn reason(&self) -> Option<&FallbackReason> {
        match &self.state {
            State::Eager(r) => Some(r),
            _ => None,
        }
    }

    /// The captured graph, once there is one.
    pub fn graph(&self) -> Option<&Graph<'static>> {
        match &self.state {
            State::Graph(g) => Some(g.graph()),
            _ => None,
        }
    }

    /// Forgets the decision (and destroys the graph, if any): the next call captures
    /// again. For after the cause of a fallback was fixed.
    pub fn retry(&mut self) {
        self.state = State::Untried;
    }

    /// The resources.
    pub fn resources(&self) -> &Arc<R> {
        &self.resources
    }
}
