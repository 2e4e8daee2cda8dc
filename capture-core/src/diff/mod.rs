//! Find baked host values at capture time (issue #25): capture the same step twice with
//! different host inputs, compare the two graphs node by node, and name the operation that
//! baked a host value into the graph.
//!
//! A value the host computes and hands to the GPU at capture time — a decode position passed
//! by value, a pointer offset computed from it, a small upload served once — becomes a
//! constant of the graph: every replay reuses it, and nothing fails.
//! [`ReplayCheck`](crate::ReplayCheck) finds such a value after the fact, by replaying on
//! fresh inputs; a capture diff finds it *while capturing*, and names it: record the step at
//! position 3, record it again at position 7, and every node whose parameters differ
//! between the two graphs is a place where the position reached the graph as a constant.
//!
//! ```
//! # use capture_core::*;
//! # use std::cell::Cell;
//! # fn main() -> Result<()> {
//! let ctx = Context::simulated();
//! kernels::register_chain_kernels(ctx.sim().unwrap());
//! let mut stream = ctx.new_stream()?;
//! let module = ctx.load_module(kernels::CHAIN_PTX)?;
//! let scale = module.kernel("scale_f32")?;
//! let x = stream.alloc_zeros::<f32>(256)?;
//! let factor = Cell::new(3.0f32); // a host value the step reads
//! let diff = stream.capture_diff(
//!     CaptureOptions::new(),
//!     |s| s.launch(&scale, LaunchConfig::for_num_elems(256), (&x, &x, factor.get(), 256u32)),
//!     |_idle| {
//!         factor.set(7.0); // change the host inputs between the two captures
//!         Ok(())
//!     },
//! )?;
//! assert_eq!(diff.differences.len(), 1);
//! let d = &diff.differences[0];
//! assert_eq!(d.what, diff::What::Param { index: 2, ty: "f32".into() });
//! assert_eq!(d.cause, diff::Cause::HostValue);
//! println!("{diff}"); // node 0, kernel `scale_f32` (`Stream::launch` at …): parameter 2, a f32: 3 vs 7 — …
//! # Ok(()) }
//! ```
//!
//! What is compared, node by node in the order the captures created them:
//! - **topology**: node kinds (and for kernels the function) and dependency edges, with
//!   their kind (an edge that is programmatic in one capture and full in the other: the
//!   successor may start early in one only). Where they part, the step's shape depends on a
//!   host value or a setting: the nodes after that point are not paired up, and the report
//!   says where the graphs part ([`Cause::Topology`]);
//! - **kernel nodes**: launch geometry, and each parameter's bytes. Parameter sizes come
//!   from the kernel's PTX on the simulated device and from the driver on a GPU
//!   (`cuFuncGetParamInfo`, CUDA 12.4+). A parameter that holds an address is compared by
//!   the allocation it points into and the offset in it, never by its raw value: graph
//!   memory is named by its allocation node, whose address differs from graph to graph;
//! - **copy and memset nodes**: destination, source, size, value; for a copy from pageable
//!   host memory, the bytes it took where the device keeps them (the simulated device);
//! - **allocation and free nodes**: sizes and what is freed.
//!
//! Conditional nodes' bodies are not compared: they are listed in
//! [`CaptureDiff::not_compared`], never skipped in silence.
//!
//! The second graph is discarded, and so is the first: a diff costs two captures (no
//! instantiation, no replay). Each node is named by the library operation that recorded it
//! and its call site where the library issued it; work issued behind its back (a candle
//! op, a cuBLAS kernel) is named by its kernel and its position in the graph.

mod compare;

use std::fmt;

use crate::error::{Error, OpSite, Result};
use crate::guard::CaptureOptions;
use crate::state::{Capturing, Idle};
use crate::stream::Stream;

pub use crate::device::snapshot::{KernelNode, NodeKind, ParamValue, Target};
pub use crate::snapshot::{GraphSnapshot, SnapNode};
pub use compare::diff;

/// A node of the first capture's graph, as a diff names it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeRef {
    /// Its index in the graph, in creation order.
    pub index: usize,
    /// What it is: "kernel `rope_f32`", "4-byte copy", …
    pub kind: String,
    /// The library operation that recorded it and where, when the library issued it.
    pub op: Option<OpSite>,
}

impl fmt::Display for NodeRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "node {}, {}", self.index, self.kind)?;
        match &self.op {
            Some(op) => write!(f, " ({op})"),
            None => f.write_str(" (not issued through capture-core)"),
        }
    }
}

/// Which part of a node differs.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum What {
    /// Kernel parameter `index` (0-based), of PTX type `ty` where known, else its size
    /// ("4-byte value").
    Param {
        /// 0-based.
        index: usize,
        /// `u32`, `f32`, `u64`, …, or "N-byte value".
        ty: String,
    },
    /// The launch geometry (grid, block, dynamic shared memory).
    Launch,
    /// A copy's source.
    CopySource,
    /// A copy's destination.
    CopyDestination,
    /// A copy's size.
    CopySize,
    /// The bytes a copy from pageable host memory took at capture time.
    CopyHostData,
    /// A memset's destination.
    MemsetDestination,
    /// A memset's value.
    MemsetValue,
    /// A memset's size.
    MemsetSize,
    /// A graph allocation's size.
    AllocSize,
    /// What a graph free frees.
    FreeTarget,
    /// The graphs' shapes part here.
    Topology,
}

impl fmt::Display for What {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            What::Param { index, ty } => write!(f, "parameter {index}, a {ty}"),
            What::Launch => f.write_str("launch geometry"),
            What::CopySource => f.write_str("source"),
            What::CopyDestination => f.write_str("destination"),
            What::CopySize => f.write_str("size"),
            What::CopyHostData => f.write_str("bytes taken from pageable host memory at capture time"),
            What::MemsetDestination => f.write_str("destination"),
            What::MemsetValue => f.write_str("value"),
            What::MemsetSize => f.write_str("size"),
            What::AllocSize => f.write_str("size"),
            What::FreeTarget => f.write_str("what it frees"),
            What::Topology => f.write_str("graph shape"),
        }
    }
}

/// What a difference says about the step.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Cause {
    /// A value passed by value differs: a host value baked into the graph.
    HostValue,
    /// A pointer points at a different offset of the same allocation: an offset computed on
    /// the host.
    PointerOffset,
    /// A pointer points into a different allocation: chosen on the host (a buffer picked
    /// by a host value, an upload served from a cache of device copies, a temporary that
    /// was reallocated).
    OtherAllocation,
    /// A copy took different bytes, or a different host address, from host memory: an upload
    /// served once, at capture time.
    HostUpload,
    /// A size or launch geometry differs: the work's shape was computed from a host value.
    HostShape,
    /// The graphs' node kinds or edges part: the step's shape depends on a host value.
    Topology,
}

impl Cause {
    /// What the cause means and what to do, in a sentence.
    pub fn advice(&self) -> &'static str {
        match self {
            Cause::HostValue => {
                "a host value passed by value: every replay reuses it — read it from device memory instead (a `DeviceScalar` set before each replay)"
            }
            Cause::PointerOffset => {
                "a pointer offset computed on the host: every replay uses the same address — pass the base and read the index from device memory in the kernel"
            }
            Cause::OtherAllocation => {
                "a pointer chosen on the host: every replay reads the buffer chosen at capture — keep one buffer and write the value into it before each replay"
            }
            Cause::HostUpload => {
                "an upload served once at capture: every replay uses what the host held then — write the fresh value into a pinned buffer the graph copies from, or into device memory, before each replay"
            }
            Cause::HostShape => {
                "a size or launch geometry computed from a host value: every replay does the work of the captured shape — size the work for the largest case and read the live length from device memory"
            }
            Cause::Topology => {
                "the step's shape depends on a host value: capture one graph per shape (a `GraphFamily`), or make the branch on the device"
            }
        }
    }
}

/// One place where the two graphs differ.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Difference {
    /// The node of the first graph (for [`Cause::Topology`], the first node where the graphs
    /// part, or the end of the shorter graph).
    pub node: NodeRef,
    /// What differs.
    pub what: What,
    /// In the first capture.
    pub first: String,
    /// In the second capture.
    pub second: String,
    /// What it says about the step.
    pub cause: Cause,
}

impl fmt::Display for Difference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}: {} vs {} — {}", self.node, self.what, self.first, self.second, self.cause.advice())
    }
}

/// A node the diff did not compare, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotCompared {
    /// The node of the first graph.
    pub node: NodeRef,
    /// Why: "a conditional node's bodies are not described", "the driver cannot tell the
    /// kernel's parameter sizes", …
    pub reason: &'static str,
}

/// The result of comparing two captures of one step ([`diff`], [`Stream::capture_diff`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct CaptureDiff {
    /// The two captures' ids.
    pub captures: (u64, u64),
    /// The two graphs' node counts.
    pub nodes: (usize, usize),
    /// Every difference, in node order (a topology difference last: nodes past it are not
    /// paired up).
    pub differences: Vec<Difference>,
    /// Nodes whose contents were not compared.
    pub not_compared: Vec<NotCompared>,
    /// Work issued on another stream while a capture was open (capture 1 or 2, and the
    /// operation): it ran once, then, and is in neither graph — an upload served once that
    /// no graph can show ([`CaptureReport::ran_eagerly`](crate::CaptureReport::ran_eagerly)).
    /// Filled by [`Stream::capture_diff`] and [`with_reports`](Self::with_reports); [`diff`]
    /// of two snapshots leaves it empty.
    pub ran_eagerly: Vec<(u8, OpSite)>,
}

impl CaptureDiff {
    /// Whether the two graphs are the same: no host value reached either as a constant
    /// (of those the two captures' inputs exercised), and nothing was left uncompared.
    pub fn is_clean(&self) -> bool {
        self.differences.is_empty() && self.not_compared.is_empty() && self.ran_eagerly.is_empty()
    }

    /// Adds the work the two captures' reports say ran eagerly on another stream
    /// ([`ran_eagerly`](Self::ran_eagerly)): for a diff made of two snapshots by [`diff`].
    pub fn with_reports(mut self, first: &crate::report::CaptureReport, second: &crate::report::CaptureReport) -> Self {
        let tagged = |run: u8, r: &crate::report::CaptureReport| -> Vec<(u8, OpSite)> {
            r.ran_eagerly.iter().map(|o| (run, o.clone())).collect()
        };
        self.ran_eagerly = [tagged(1, first), tagged(2, second)].concat();
        self
    }

    /// The differences of one cause.
    pub fn of_cause(&self, cause: Cause) -> impl Iterator<Item = &Difference> {
        self.differences.iter().filter(move |d| d.cause == cause)
    }
}

impl fmt::Display for CaptureDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (a, b) = self.captures;
        let (n, m) = self.nodes;
        let nodes = if n == m { format!("{n} nodes each") } else { format!("{n} and {m} nodes") };
        if self.differences.is_empty() {
            writeln!(f, "capture diff of captures #{a} and #{b} ({nodes}): no differences")?;
        } else {
            writeln!(
                f,
                "capture diff of captures #{a} and #{b} ({nodes}): {} difference(s), each a host value baked into the graph",
                self.differences.len()
            )?;
            for d in &self.differences {
                writeln!(f, "  {d}")?;
            }
        }
        if !self.ran_eagerly.is_empty() {
            writeln!(
                f,
                "  ran eagerly on another stream during a capture, in neither graph ({}): {}",
                self.ran_eagerly.len(),
                Cause::HostUpload.advice()
            )?;
            for (run, op) in &self.ran_eagerly {
                writeln!(f, "    capture {run}: {op}")?;
            }
        }
        if !self.not_compared.is_empty() {
            writeln!(f, "  not compared ({}):", self.not_compared.len())?;
            for c in &self.not_compared {
                writeln!(f, "    {}: {}", c.node, c.reason)?;
            }
        }
        Ok(())
    }
}

impl Stream<Idle> {
    /// Captures `step` twice, calling `between` on the idle stream after the first capture
    /// to change the host inputs the step reads (a position, a length, a seed), and compares
    /// the two graphs node by node: every difference is a place where a host value reached
    /// the graph as a constant, named by the operation that recorded it (see [`crate::diff`]).
    ///
    /// Both captures use `options` with [`CaptureOptions::trace_nodes`] added; neither graph
    /// is instantiated or replayed. Give the step the same device buffers both times:
    /// a buffer chosen by a host value is what the diff reports.
    ///
    /// # Errors
    /// [`Error::DiffCaptureFailed`] naming the capture (1 or 2) whose step failed or could
    /// not be captured, with its error; `between`'s error as it returned it.
    ///
    /// # Panics
    /// A panic in `step` ends and discards its capture (the stream is idle again) and then
    /// resumes.
    #[track_caller]
    pub fn capture_diff<'a>(
        &mut self,
        options: CaptureOptions,
        mut step: impl FnMut(&mut Stream<Capturing<'a>>) -> Result<()>,
        between: impl FnOnce(&mut Stream<Idle>) -> Result<()>,
    ) -> Result<CaptureDiff> {
        let options = options.trace_nodes();
        let fail = |run: u8| move |e: Error| Error::DiffCaptureFailed { run, source: Box::new(e) };
        let (first, r1) = self.capture_snapshot(options, &mut step).map_err(fail(1))?;
        between(self)?;
        let (second, r2) = self.capture_snapshot(options, &mut step).map_err(fail(2))?;
        Ok(diff(&first, &second).with_reports(&r1, &r2))
    }

    /// One capture of `step`, described node by node (see
    /// [`CaptureGuard::finish_snapshot`](crate::CaptureGuard::finish_snapshot)).
    #[track_caller]
    fn capture_snapshot<'a>(
        &mut self,
        options: CaptureOptions,
        step: &mut impl FnMut(&mut Stream<Capturing<'a>>) -> Result<()>,
    ) -> Result<(GraphSnapshot, crate::report::CaptureReport)> {
        let mut guard = self.capture_with(options)?;
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| step(guard.stream()))) {
            Ok(Ok(())) => guard.finish_snapshot(),
            Ok(Err(e)) => {
                drop(guard);
                Err(e)
            }
            Err(panic) => {
                drop(guard);
                std::panic::resume_unwind(panic)
            }
        }
    }
}
