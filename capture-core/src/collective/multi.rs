//! Capturing every rank's stream of one step together, and replaying every rank's graph.

use std::fmt;

use crate::error::{CallSite, Error, Result};
use crate::graph::Graph;
use crate::guard::{CaptureGuard, CaptureOptions};
use crate::report::CaptureReport;
use crate::state::{Capturing, Idle};
use crate::stream::Stream;

/// One capture per rank's stream, begun and ended together: the guard of a multi-GPU step.
///
/// [`stream`](Self::stream)`(i)` is rank `i`'s capturing stream; issue each rank's work on
/// it and the step's collectives through a [`Group`](crate::collective::Group).
/// [`finish`](Self::finish) ends every capture before instantiating any (the driver refuses
/// to instantiate while another Global capture is active) and gives a [`MultiGraph`]. On
/// every other path — an early `?`, a panic, a failed capture — dropping it ends every
/// rank's capture, discards the partial graphs, and leaves every stream idle.
pub struct MultiCapture<'s, 'a> {
    guards: Vec<CaptureGuard<'s, 'a>>,
}

impl fmt::Debug for MultiCapture<'_, '_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiCapture").field("ranks", &self.guards.len()).finish()
    }
}

impl<'s, 'a> MultiCapture<'s, 'a> {
    /// Begins a capture on each stream (rank `i` on `streams[i]`).
    ///
    /// # Errors
    /// As [`Stream::capture`]; on error the captures already begun are ended.
    #[track_caller]
    pub fn begin(streams: &'s mut [Stream<Idle>], options: CaptureOptions) -> Result<Self> {
        let site = CallSite::caller();
        let mut guards = Vec::with_capacity(streams.len());
        for s in streams.iter_mut() {
            guards.push(CaptureGuard::start(s, options, site)?);
        }
        Ok(Self { guards })
    }

    /// Rank `i`'s capturing stream.
    ///
    /// # Panics
    /// Never: an index out of range is `None`.
    pub fn stream(&mut self, i: usize) -> Option<&mut Stream<Capturing<'a>>> {
        self.guards.get_mut(i).map(CaptureGuard::stream)
    }

    /// The number of ranks.
    pub fn len(&self) -> usize {
        self.guards.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.guards.is_empty()
    }

    /// Ends every rank's capture, then instantiates every graph.
    ///
    /// # Errors
    /// The first rank's error of [`CaptureGuard::finish`]; every capture is ended either way
    /// and no graph is kept.
    #[track_caller]
    pub fn finish(self) -> Result<(MultiGraph<'a>, Vec<CaptureReport>)> {
        let site = CallSite::caller();
        let mut ended = Vec::with_capacity(self.guards.len());
        let mut first_err = None;
        for g in self.guards {
            match g.end_capture() {
                Ok(e) => ended.push(e),
                Err(e) => {
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            return Err(e);
        }
        let mut graphs = Vec::with_capacity(ended.len());
        let mut reports = Vec::with_capacity(ended.len());
        for e in ended {
            let (g, r) = e.instantiate(site)?;
            graphs.push(g);
            reports.push(r);
        }
        Ok((MultiGraph { graphs }, reports))
    }
}

/// Every rank's graph of one step: replay it with [`launch`](Self::launch), which launches
/// each rank's graph on its stream (a graph holding collectives cannot be launched alone:
/// it would wait forever for its peers).
pub struct MultiGraph<'a> {
    graphs: Vec<Graph<'a>>,
}

impl fmt::Debug for MultiGraph<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MultiGraph").field("graphs", &self.graphs).finish()
    }
}

impl<'a> MultiGraph<'a> {
    /// Each rank's graph.
    pub fn graphs(&self) -> &[Graph<'a>] {
        &self.graphs
    }

    /// Replays the step: rank `i`'s graph on `streams[i]`.
    ///
    /// # Errors
    /// [`Error::InvalidWorld`] unless there is one stream per graph;
    /// [`Error::ContextMismatch`] for a stream of another device than its graph's;
    /// [`Error::CommAborted`] when a communicator of the step was aborted after a timeout
    /// (its collectives would return at once, computing nothing);
    /// [`Error::Driver`]; on the simulated device, [`Error::CollectiveMismatch`] where the
    /// graphs' collectives do not pair up, and [`Error::CollectiveTimeout`] where a peer of a
    /// rank-per-process communicator does not replay its part in time.
    #[track_caller]
    pub fn launch(&self, streams: &mut [Stream<Idle>]) -> Result<()> {
        let site = CallSite::caller();
        if streams.len() != self.graphs.len() {
            return Err(Error::InvalidWorld {
                reason: format!(
                    "{} streams for a step of {} ranks: give one stream per rank, in rank order",
                    streams.len(),
                    self.graphs.len()
                ),
            });
        }
        for (g, s) in self.graphs.iter().zip(streams.iter()) {
            if !g.context().same(&s.ctx) {
                return Err(Error::ContextMismatch { op: "MultiGraph::launch", what: "stream" });
            }
        }
        // An aborted communicator's kernels return at once: the replay would compute garbage
        // and report nothing.
        if let Some(l) = self.graphs.iter().flat_map(|g| g.comm_links.iter()).find(|l| l.is_aborted()) {
            return Err(Error::CommAborted { rank: l.rank });
        }
        if self.graphs.first().is_some_and(|g| g.context().sim().is_some()) {
            return self.launch_sim(streams, site);
        }
        for (g, s) in self.graphs.iter().zip(streams.iter_mut()) {
            g.launch_at(s, site)?;
        }
        Ok(())
    }

    /// The simulated device: every rank's graph in lockstep, each up to its next run of
    /// collectives, which the world then performs together.
    fn launch_sim(&self, streams: &mut [Stream<Idle>], site: CallSite) -> Result<()> {
        use crate::device::sim::world::{perform, RankCalls};
        let n = self.graphs.len();
        let mut cursor = vec![0usize; n];
        let mut done = vec![false; n];
        loop {
            let mut waiting = Vec::new();
            for i in 0..n {
                if done[i] {
                    continue;
                }
                let g = &self.graphs[i];
                let sim =
                    g.context().sim().ok_or(Error::ContextMismatch { op: "MultiGraph::launch", what: "stream" })?;
                let (next, run) = sim
                    .launch_segment(g.exec, streams[i].raw, cursor[i])
                    .map_err(|code| g.context().fail("MultiGraph::launch", site, code))?;
                cursor[i] = next;
                if run.is_empty() {
                    done[i] = true;
                } else {
                    waiting.push(RankCalls { ctx: g.context(), nodes: run });
                }
            }
            if waiting.is_empty() {
                return Ok(());
            }
            if done.iter().any(|d| *d) {
                return Err(Error::CollectiveMismatch {
                    reason: "a rank's graph ended while others wait in a collective: on a GPU this step would hang"
                        .into(),
                });
            }
            perform(&waiting).map_err(|e| crate::collective::group::world_error(e, "MultiGraph::launch"))?;
        }
    }
}
