//! What a capture did.

use std::fmt;
use std::time::Duration;

use crate::device::{CaptureMode, NodeCounts};
use crate::error::{CallSite, DriverCode, OpSite};
pub use crate::raw::handles::HostCopy;

/// One capture-time allocation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AllocRecord {
    /// The allocating operation.
    pub op: &'static str,
    /// Bytes.
    pub bytes: usize,
    /// Where it was issued.
    pub site: CallSite,
}

/// The report of one capture: what it recorded, what it allocated, what broke it.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CaptureReport {
    /// The capture's id within its context.
    pub capture_id: u64,
    /// The capture mode.
    pub mode: CaptureMode,
    /// Where `capture()` was called.
    pub began_at: CallSite,
    /// Operations issued on the capturing streams.
    pub operations: usize,
    /// Graph nodes by kind (zero unless the capture finished).
    pub nodes: NodeCounts,
    /// Capture-time allocations (graph memory nodes), with call sites.
    pub allocations: Vec<AllocRecord>,
    /// From `capture()` to the end of capture.
    pub duration: Duration,
    /// The operation that invalidated the capture, where known.
    pub invalidated_by: Option<OpSite>,
    /// The last operation recorded.
    pub last_op: Option<OpSite>,
    /// Work issued on other streams of the context while capturing: it ran once, then, and
    /// is not in the graph (on real hardware such work returns success; every replay then
    /// misses it).
    pub ran_eagerly: Vec<OpSite>,
    /// Copies in the graph whose host side is pageable (unpinned) memory — read from the
    /// graph itself, so they include copies issued behind this library's back, e.g. a
    /// cudarc `memcpy_htod` from a `Vec` on the capturing stream. Each replays from that
    /// host address, which by then usually holds other data or has been freed: upload
    /// through a [`PinnedBuffer`](crate::PinnedBuffer) with `upload_async` instead.
    pub unpinned_host_copies: Vec<HostCopy>,
    /// The driver's error ending the capture, if any.
    pub outcome: Option<DriverCode>,
    /// Dropped without `finish()`.
    pub abandoned: bool,
    /// The watchdog's verdict, when the capture had a deadline.
    pub watchdog: Option<WatchdogReport>,
    /// The guard's capturing stream had been swapped with another (see
    /// [`Error::CaptureStreamSwapped`](crate::Error::CaptureStreamSwapped)); the capture was
    /// discarded.
    pub stream_swapped: bool,
    /// Graph allocations the capture left allocated, freed inside the graph at its end by
    /// the guard (so that no replay leaks them): free them yourself with `free_async` where
    /// the work is done with them, and the memory can be reused sooner.
    pub freed_at_end: usize,
}

/// What the watchdog saw of a capture with a deadline.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WatchdogReport {
    /// The deadline.
    pub deadline: Duration,
    /// Whether the capture stayed open longer than it.
    pub exceeded: bool,
    /// When the watchdog thread reported it (while the capture was still open), if it did.
    pub fired_after: Option<Duration>,
}

impl CaptureReport {
    /// Number of capture-time allocations.
    pub fn allocation_count(&self) -> usize {
        self.allocations.len()
    }
    /// Bytes allocated during capture.
    pub fn allocation_bytes(&self) -> usize {
        self.allocations.iter().map(|a| a.bytes).sum()
    }
}

impl fmt::Display for CaptureReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "capture #{} ({:?} mode, begun at {})", self.capture_id, self.mode, self.began_at)?;
        let status = match (self.abandoned, self.outcome) {
            _ if self.stream_swapped => "discarded: the guard's capturing stream was swapped with another".to_owned(),
            (true, _) => "abandoned: dropped without finish()".to_owned(),
            (false, None) => "finished".to_owned(),
            (false, Some(c)) => format!("failed: {c}"),
        };
        writeln!(f, "  status:       {status}")?;
        writeln!(f, "  operations:   {}", self.operations)?;
        let n = &self.nodes;
        writeln!(
            f,
            "  graph nodes:  {} ({} kernel, {} memcpy, {} memset, {} alloc, {} free, {} other)",
            n.total,
            n.kernels,
            n.memcpy,
            n.memset,
            n.mem_alloc,
            n.mem_free,
            n.host + n.other
        )?;
        writeln!(f, "  allocations:  {} ({} bytes)", self.allocation_count(), self.allocation_bytes())?;
        for a in &self.allocations {
            writeln!(f, "    {} bytes by `{}` at {}", a.bytes, a.op, a.site)?;
        }
        if self.freed_at_end > 0 {
            writeln!(f, "    {} of them left allocated, freed at the end of the capture", self.freed_at_end)?;
        }
        writeln!(f, "  duration:     {:.3?}", self.duration)?;
        if let Some(w) = &self.watchdog {
            if w.exceeded {
                writeln!(f, "  watchdog:     open longer than its {:.2?} deadline", w.deadline)?;
                if let Some(op) = &self.last_op {
                    writeln!(f, "    last operation: {op}")?;
                }
            }
        }
        if let Some(c) = &self.invalidated_by {
            writeln!(f, "  invalidated by {c}")?;
        }
        if !self.unpinned_host_copies.is_empty() {
            writeln!(
                f,
                "  copies from/to pageable host memory, replayed from a stale host address ({}):",
                self.unpinned_host_copies.len()
            )?;
            for c in self.unpinned_host_copies.iter().take(16) {
                let dir = if c.to_device { "host to device" } else { "device to host" };
                writeln!(f, "    {} bytes, {dir}", c.bytes)?;
            }
        }
        if !self.ran_eagerly.is_empty() {
            writeln!(f, "  ran eagerly, NOT in the graph ({}):", self.ran_eagerly.len())?;
            for o in self.ran_eagerly.iter().take(16) {
                writeln!(f, "    {o}")?;
            }
        }
        Ok(())
    }
}
