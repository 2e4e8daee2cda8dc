//! The bookkeeping of one capture, which the guard and every capturing stream of it share:
//! what was recorded and allocated, how it ends, what broke it.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use crate::context::Context;
use crate::device::{CaptureMode, DevPtr, RawStream};
use crate::error::{CallSite, DriverCode, OpSite};
use crate::event::Event;
use crate::instantiate::InstantiateFlags;
use crate::ptx::KernelSignature;
use crate::report::AllocRecord;

/// How many operations of a capture a graph keeps, with their call sites, for its picture:
/// one push per operation up to this many, then none (a long capture's per-op cost stays
/// one comparison).
pub(crate) const TRACE_LIMIT: usize = 200;

/// What a capture does when its work asks for memory (`alloc_async` on the capturing
/// stream, a graph memory node).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum AllocPolicy {
    /// Refuse with [`Error::AllocationDenied`](crate::Error::AllocationDenied): all memory must be allocated before capture.
    Deny,
    /// Allow, count in the report, and log a warning when the capture ends.
    #[default]
    Warn,
    /// Allow and count in the report.
    Allow,
}

/// The bookkeeping of one capture, shared by its capturing streams (the guard's and forks).
/// Held in an `Rc`, which also makes capturing streams and the guard `!Send`: a capture
/// ends on the thread that began it.
#[doc(hidden)]
pub struct CaptureBook {
    pub(crate) id: u64,
    pub(crate) mode: CaptureMode,
    pub(crate) policy: AllocPolicy,
    pub(crate) began_at: CallSite,
    pub(crate) started: Instant,
    pub(crate) ops: usize,
    pub(crate) last_op: Option<OpSite>,
    pub(crate) allocations: Vec<AllocRecord>,
    pub(crate) graph_allocs: Vec<(DevPtr, bool)>,
    pub(crate) invalidated_by: Option<OpSite>,
    /// The driver code of the call that invalidated it, when it was issued on this capture.
    pub(crate) cause_code: Option<DriverCode>,
    /// (fork site, stream, joined)
    pub(crate) forks: Vec<(CallSite, RawStream, bool)>,
    pub(crate) pooled: Vec<RawStream>,
    pub(crate) events: Vec<Event>,
    pub(crate) deadline: Option<std::time::Duration>,
    pub(crate) watch: Option<std::sync::Arc<crate::watchdog::Watch>>,
    /// Set when the capture ends — by its guard, or by
    /// [`Context::end_dangling_captures`](crate::Context::end_dangling_captures) (hence
    /// shared with the registry). Every operation on a capturing stream checks it.
    pub(crate) ended: Arc<AtomicBool>,
    /// A guard found its capturing stream swapped with another: no more work is accepted.
    pub(crate) swapped: bool,
    /// The stream the capture began on.
    pub(crate) origin: RawStream,
    /// Every operation recorded through this library, in order (the graph's picture lists them).
    pub(crate) trace: Vec<OpSite>,
    /// Whether operations are noted for the graph's picture: always on the simulated device
    /// (it labels its nodes), on a GPU only with [`CaptureOptions::trace_ops`].
    pub(crate) picture: bool,
    /// Collective calls recorded (their graph only runs with every rank's).
    pub(crate) collectives: usize,
    /// The rank-per-process communicators the capture's collectives use: a graph whose
    /// communicator was aborted must not replay (its collectives would return at once).
    pub(crate) comm_links: Vec<std::sync::Arc<crate::raw::coll::Link>>,
    /// How `finish` instantiates.
    pub(crate) instantiate: InstantiateFlags,
    /// How many conditional bodies are being recorded around the current operation (a body
    /// graph holds no memory nodes).
    pub(crate) in_body: u32,
    /// Set when a conditional body's recording ended invalidated. The driver then keeps the
    /// capture itself going, but the graph it returns holds a body the driver discarded:
    /// destroying that graph crashed the process (SIGSEGV in `cuGraphDestroy`, H100,
    /// driver 580). Such a graph is never instantiated nor destroyed: it is leaked (a few
    /// KiB of host memory), and the capture ends as invalidated. Shared with the registry
    /// for [`Context::end_dangling_captures`](crate::Context::end_dangling_captures).
    pub(crate) poisoned: Arc<AtomicBool>,
    /// Set when a conditional node's body failed to record (an error or a panic in it, a
    /// stream swapped in it, no body graph): the graph may hold a WHILE without its test,
    /// which would never end, so the capture ends as invalidated and its graph is destroyed.
    pub(crate) broken: bool,
    /// Conditional bodies being recorded now (shared with the registry: a capture ended
    /// from outside while one is open must not destroy the graph the body records into).
    pub(crate) open_bodies: Arc<std::sync::atomic::AtomicU32>,
    /// The stop flags of the loops being recorded now (nested loops must not share one).
    pub(crate) loop_flags: Vec<crate::device::DevPtr>,
    /// On a GPU with [`CaptureOptions::trace_nodes`](crate::CaptureOptions::trace_nodes):
    /// the graph's node count before the operation under way, and for each operation the
    /// nodes it recorded (`start..end` in creation order) with its call site.
    pub(crate) node_marks: Option<NodeMarks>,
    /// The condition handles the capture made, in order (conditional nodes' handles).
    pub(crate) cond_handles: Vec<u64>,
}

/// Which graph nodes each operation recorded, on a GPU (see [`CaptureBook::node_marks`]).
#[derive(Default)]
pub(crate) struct NodeMarks {
    pub(crate) before: Option<usize>,
    pub(crate) ops: Vec<(usize, usize, OpSite)>,
    /// The PTX signatures of the kernels launched through this library, one per name: the
    /// driver gives a parameter's size, the PTX its type.
    pub(crate) kernels: Vec<KernelSignature>,
}

impl CaptureBook {
    /// Notes an operation for the graph's picture: the first [`TRACE_LIMIT`] in order, and
    /// on the simulated device the labels of the nodes it recorded. Out of line: the hot
    /// path only tests [`picture`](Self::picture).
    ///
    /// [`TRACE_LIMIT`]: crate::book::TRACE_LIMIT
    #[inline(never)]
    pub(crate) fn note_for_picture(&mut self, ctx: &Context, op: &'static str, site: CallSite) {
        if self.trace.len() < TRACE_LIMIT {
            self.trace.push(OpSite { op, site });
        }
        if let Some(sim) = ctx.sim() {
            // The simulated device labels the nodes this operation recorded.
            sim.label_nodes(self.origin, op, Some(site));
        }
        if let Some(marks) = &mut self.node_marks {
            if let (Some(start), Ok(end)) = (marks.before.take(), ctx.b().capture_node_count(self.origin)) {
                if end > start {
                    marks.ops.push((start, end, OpSite { op, site }));
                }
            }
        }
    }

    /// Before an operation, with `CaptureOptions::trace_nodes` on a GPU: notes how many nodes
    /// the graph holds, so that the nodes the operation adds can be told apart from work
    /// issued behind the library's back.
    #[inline(never)]
    pub(crate) fn mark_before(&mut self, ctx: &Context) {
        if let Some(marks) = &mut self.node_marks {
            marks.before = ctx.b().capture_node_count(self.origin).ok();
        }
    }

    /// Whether the capture has ended.
    #[inline]
    pub(crate) fn has_ended(&self) -> bool {
        self.ended.load(Ordering::Acquire)
    }
}

/// Shared handle to a capture's book.
#[doc(hidden)]
pub type Book = Rc<RefCell<CaptureBook>>;
