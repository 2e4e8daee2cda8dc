//! The capture diff for candle steps (issue #25): the step captured twice on candle's
//! stream, with the host inputs changed between, and the two graphs compared node by node
//! by capture-core's [`diff`](capture_core::diff).

use std::fmt;

use capture_core::diff::CaptureDiff;
use capture_core::{CaptureOptions, CaptureReport};

use crate::error::{Error, Result};
use crate::stream::CandleStream;

/// What [`CandleStream::capture_diff`] found: capture-core's [`CaptureDiff`] of the two
/// graphs, and each capture's report.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CandleDiff {
    /// The two graphs compared node by node.
    pub diff: CaptureDiff,
    /// The two captures' reports (nodes, allocations, work that ran eagerly).
    pub reports: [CaptureReport; 2],
    /// Graph allocations each capture left allocated: tensors the step created and kept
    /// (a KV cache grown by concatenation, a result returned), which a replay would
    /// allocate again without freeing. capture-candle's own captures refuse such a step.
    pub unfreed: [usize; 2],
}

impl CandleDiff {
    /// Whether the step replays correctly as far as a diff can tell: no differences,
    /// nothing left uncompared or run eagerly, no graph memory left allocated.
    pub fn is_clean(&self) -> bool {
        self.diff.is_clean() && self.unfreed == [0, 0]
    }
}

impl fmt::Display for CandleDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.diff)?;
        for (run, n) in self.unfreed.iter().enumerate().filter(|(_, n)| **n > 0) {
            writeln!(
                f,
                "  capture {}: {n} graph allocation(s) left allocated at the end — tensors the step created and kept \
                 (a cache grown by concatenation?): every replay would allocate them again; write into tensors made \
                 before the capture instead",
                run + 1
            )?;
        }
        Ok(())
    }
}

impl CandleStream {
    /// Captures `step` twice on candle's stream, calling `between` after the first capture
    /// to change the host inputs the step reads (a position, a length), and compares the
    /// two graphs node by node: every difference is a place where a host value reached the
    /// graph as a constant. Work candle issues is named by its kernel and position in the
    /// graph (candle's ops do not go through capture-core).
    ///
    /// Run the step eagerly at both inputs first ([`warm_up`](Self::warm_up)): candle's
    /// small uploads are served during a capture from device copies made at warm-up, and
    /// an upload never seen then fails the step. Each capture is instantiated but not
    /// replayed — except a graph that left graph memory allocated, which runs once (as
    /// [`capture_owned`](Self::capture_owned) does before refusing it) so that the tensors
    /// the step kept hold memory that exists; reset whatever state the step changes
    /// (a cache it appends to) in `between`.
    ///
    /// # Errors
    /// [`Error::DiffCaptureFailed`] naming the capture (1 or 2) whose step failed or could
    /// not be captured, with its error (among them [`Error::EmptyStep`]: a step that
    /// recorded no work on the stream would compare clean and replay nothing);
    /// `between`'s error as it returned it.
    #[track_caller]
    pub fn capture_diff(
        &mut self,
        step: impl FnMut() -> Result<()>,
        between: impl FnOnce() -> Result<()>,
    ) -> Result<CandleDiff> {
        self.capture_diff_with(CaptureOptions::new(), step, between)
    }

    /// [`capture_diff`](Self::capture_diff) with capture options (mode, allocation policy).
    ///
    /// # Errors
    /// As [`capture_diff`](Self::capture_diff).
    #[track_caller]
    pub fn capture_diff_with(
        &mut self,
        options: CaptureOptions,
        mut step: impl FnMut() -> Result<()>,
        between: impl FnOnce() -> Result<()>,
    ) -> Result<CandleDiff> {
        let options = options.trace_nodes();
        let fail = |run: u8| move |e: Error| Error::DiffCaptureFailed { run, source: Box::new(e) };
        let (a, r1, u1) = self.capture_snapshot(options, &mut step).map_err(fail(1))?;
        between()?;
        let (b, r2, u2) = self.capture_snapshot(options, &mut step).map_err(fail(2))?;
        let diff = capture_core::diff::diff(&a, &b).with_reports(&r1, &r2);
        Ok(CandleDiff { diff, reports: [r1, r2], unfreed: [u1, u2] })
    }

    #[track_caller]
    fn capture_snapshot(
        &mut self,
        options: CaptureOptions,
        step: &mut impl FnMut() -> Result<()>,
    ) -> Result<(capture_core::diff::GraphSnapshot, CaptureReport, usize)> {
        let g = self.capture_with(options)?;
        // A step that fails or panics drops the capture, which ends it and leaves the
        // stream idle.
        step()?;
        g.finish_snapshot()
    }
}
