//! `ReplayCheck`: replay a graph and run the same work eagerly, set by set, and compare.

use std::fmt;
use std::marker::PhantomData;

use super::outputs::Outputs;
use super::tolerance::Tolerance;
use crate::error::Error;
use crate::graph::Graph;
use crate::state::Idle;
use crate::stream::Stream;

mod sealed {
    use crate::state::Idle;
    use crate::stream::Stream;

    pub trait Sealed {
        fn idle(&mut self) -> &mut Stream<Idle>;
    }
    impl Sealed for Stream<Idle> {
        #[inline]
        fn idle(&mut self) -> &mut Stream<Idle> {
            self
        }
    }
}

/// A stream a [`ReplayCheck`] can run on: an idle [`Stream`]. Sealed; it exists so that
/// passing a capturing stream or a capture guard gets a message saying what to do.
#[diagnostic::on_unimplemented(
    message = "a replay check needs an idle stream, and `{Self}` is not one",
    label = "a replay check cannot run on this",
    note = "the check replays the graph and runs the same work eagerly, which a capturing stream cannot do: `finish()` (or drop) the capture guard first, then pass `&mut stream`"
)]
pub trait ReplayStream: sealed::Sealed {}
impl ReplayStream for Stream<Idle> {}

/// Replays a graph and runs the same work eagerly on `n` fresh input sets, and reports the
/// first divergence (see the [module docs](super) for the order of operations).
///
/// The closures are yours:
/// - `write_inputs(i, stream)` writes input set `i` — *everything* the work reads that can
///   change between steps (inputs, positions, caches it updates in place), so that the
///   replay and the eager run of one set start from the same state. Make the sets differ
///   from each other and from the values present at capture time.
/// - `eager(i, stream)` issues the same work on `stream` without the graph, exactly as the
///   code that was captured does it (same kernels, same uploads).
/// - `read_outputs(stream)` reads back what the work produced (`Stream::download` waits for
///   the stream's pending work).
///
/// An error from a closure is returned as is; the check's own errors are converted into the
/// closures' error type `E` (chosen with [`with_error_type`](Self::with_error_type); this
/// crate's [`Error`] by default).
#[derive(Debug)]
#[must_use = "a ReplayCheck does nothing until `run` is called"]
pub struct ReplayCheck<E = Error> {
    sets: usize,
    tolerance: Tolerance,
    _error: PhantomData<fn() -> E>,
}

impl ReplayCheck<Error> {
    /// A check over `input_sets` fresh input sets, comparing exactly.
    pub fn new(input_sets: usize) -> Self {
        Self { sets: input_sets, tolerance: Tolerance::EXACT, _error: PhantomData }
    }
}

impl<E> Clone for ReplayCheck<E> {
    fn clone(&self) -> Self {
        Self { sets: self.sets, tolerance: self.tolerance, _error: PhantomData }
    }
}

/// What a check that passed compared.
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ReplayCheckReport {
    /// Input sets run through both paths.
    pub input_sets: usize,
    /// Outputs compared per set.
    pub outputs: usize,
    /// Elements compared, over all sets.
    pub elements: usize,
    /// The largest `|eager - replay|` over all floating-point elements (0 when exact).
    pub max_abs_diff: f64,
    /// The tolerance used.
    pub tolerance: Tolerance,
}

impl fmt::Display for ReplayCheckReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "replay matched the eager run on {} input sets ({} output{}, {} elements compared, ",
            self.input_sets,
            self.outputs,
            if self.outputs == 1 { "" } else { "s" },
            self.elements
        )?;
        if self.max_abs_diff == 0.0 {
            write!(f, "all equal)")
        } else {
            write!(f, "largest difference {:e}, tolerance {})", self.max_abs_diff, self.tolerance)
        }
    }
}

impl<E: From<Error>> ReplayCheck<E> {
    /// Sets the tolerance for floating-point outputs (default [`Tolerance::EXACT`]).
    pub fn tolerance(mut self, tolerance: Tolerance) -> Self {
        self.tolerance = tolerance;
        self
    }

    /// Makes the closures return `Result<_, F>`: an application error type that this
    /// crate's [`Error`] converts into.
    pub fn with_error_type<F: From<Error>>(self) -> ReplayCheck<F> {
        ReplayCheck { sets: self.sets, tolerance: self.tolerance, _error: PhantomData }
    }

    /// Runs the check: for each input set, replay then eager run, each followed by
    /// `read_outputs`, then the comparison. Stops at the first divergence.
    ///
    /// # Errors
    /// - [`Error::InvalidReplayCheck`]: zero input sets, a tolerance that is negative or not
    ///   finite, outputs with no entries or with a name used twice.
    /// - [`Error::ReplayDiverged`]: an element of the replay disagrees with the eager run.
    /// - [`Error::OutputShapeChanged`]: the replay's and the eager run's outputs differ in
    ///   names, lengths or element types.
    /// - [`Error::ContextMismatch`] or [`Error::Driver`] from replaying the graph.
    /// - Whatever a closure returns, unchanged.
    pub fn run<W, R, O>(
        &self,
        graph: &Graph<'_>,
        stream: &mut impl ReplayStream,
        mut write_inputs: W,
        mut eager: R,
        mut read_outputs: O,
    ) -> Result<ReplayCheckReport, E>
    where
        W: FnMut(usize, &mut Stream<Idle>) -> Result<(), E>,
        R: FnMut(usize, &mut Stream<Idle>) -> Result<(), E>,
        O: FnMut(&mut Stream<Idle>) -> Result<Outputs, E>,
    {
        let stream = stream.idle();
        if self.sets == 0 {
            return Err(Error::InvalidReplayCheck {
                reason: "it was asked to run on 0 input sets; ask for at least 2 (one set can match by luck: the values present at capture time)",
            }
            .into());
        }
        if !self.tolerance.is_valid() {
            return Err(Error::InvalidReplayCheck {
                reason: "the tolerance must be finite and non-negative (NaN, infinite or negative bounds accept everything or nothing); use `Tolerance::EXACT` or `Tolerance::new(abs, rel)`",
            }
            .into());
        }
        let mut report = ReplayCheckReport {
            input_sets: self.sets,
            outputs: 0,
            elements: 0,
            max_abs_diff: 0.0,
            tolerance: self.tolerance,
        };
        for set in 0..self.sets {
            // Replay first: state only the eager path refreshes is then stale for the graph.
            write_inputs(set, stream)?;
            graph.launch(stream).map_err(E::from)?;
            let replayed = read_outputs(stream)?;
            write_inputs(set, stream)?;
            eager(set, stream)?;
            let expected = read_outputs(stream)?;
            compare(set, &expected, &replayed, self.tolerance, &mut report).map_err(E::from)?;
        }
        Ok(report)
    }
}

/// Compares one set's eager outputs with its replayed ones.
fn compare(
    set: usize,
    eager: &Outputs,
    replay: &Outputs,
    tol: Tolerance,
    report: &mut ReplayCheckReport,
) -> Result<(), Error> {
    if eager.is_empty() {
        return Err(Error::InvalidReplayCheck {
            reason: "`read_outputs` returned no outputs, so there is nothing to compare; add each buffer the work writes with `Outputs::with(name, values)`",
        });
    }
    if eager.duplicate_name().is_some() {
        return Err(Error::InvalidReplayCheck {
            reason: "`read_outputs` returned two outputs with the same name, so a divergence could not say which one it is; give each output its own name",
        });
    }
    let count = eager.len().max(replay.len());
    for i in 0..count {
        let (Some((name, e)), Some((rname, r))) = (eager.items.get(i), replay.items.get(i)) else {
            let name = eager.items.get(i).or(replay.items.get(i)).map(|(n, _)| n.to_string()).unwrap_or_default();
            return Err(shape_changed(set, name, eager, replay, i));
        };
        if name != rname {
            return Err(shape_changed(set, format!("{name}` / `{rname}"), eager, replay, i));
        }
        let Some((max, divergence)) = e.compare(r, tol) else {
            return Err(shape_changed(set, name.to_string(), eager, replay, i));
        };
        if let Some(d) = divergence {
            return Err(Error::ReplayDiverged {
                output: name.to_string(),
                input_set: set,
                element: d.element,
                eager: d.eager,
                replay: d.replay,
                differing: d.differing,
                len: e.len(),
            });
        }
        report.elements += e.len();
        if max > report.max_abs_diff {
            report.max_abs_diff = max;
        }
    }
    report.outputs = count;
    Ok(())
}

fn shape_changed(set: usize, output: String, eager: &Outputs, replay: &Outputs, i: usize) -> Error {
    Error::OutputShapeChanged { output, input_set: set, eager: eager.shape(i), replay: replay.shape(i) }
}
