//! Branches decided on the device: `if_nonzero` and `if_else`, recorded as a conditional IF
//! node, and the recording of a conditional body that loops and branches share.

#[allow(unused_imports)]
use super::*;

impl<'a> Stream<Capturing<'a>> {
    /// Records a branch decided on the device: `then` is recorded once, into an IF node,
    /// and each launch of the graph runs it only when `flag` — a `u32` in device memory,
    /// read when the graph reaches the branch — is not 0.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`] for a branch kit or flag of another device;
    /// [`Error::NotInConditionalBody`] for a memory node in the body; the body's own errors;
    /// [`Error::Driver`]. As with loops, a body that fails loses the capture (`finish`
    /// returns [`Error::CaptureInvalidated`]).
    #[track_caller]
    pub fn if_nonzero<F>(&mut self, branch: &'a Branch, flag: &'a DeviceBuffer<u32>, then: F) -> Result<()>
    where
        F: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let site = CallSite::caller();
        let graphs = self.branch_node(site, "Stream::if_nonzero", branch, flag, 1)?;
        let Some(&graph) = graphs.first() else {
            let e = Error::InvalidLoop { reason: "the driver gave the branch no body graph".into() };
            return Err(self.broken("Stream::if_nonzero", site, e));
        };
        self.record_body("Stream::if_nonzero", site, graph, then, |_| Ok(()))
    }

    /// Records a two-way branch decided on the device: an IF node with an ELSE body (CUDA
    /// 12.8 or later). Each launch runs `then` when `flag` is not 0, else `otherwise`.
    ///
    /// # Errors
    /// As [`if_nonzero`](Self::if_nonzero); [`Error::ConditionalNodesUnsupported`] on a
    /// driver older than CUDA 12.8. On an error in `then`, `otherwise` is not recorded.
    #[track_caller]
    pub fn if_else<F, G>(
        &mut self,
        branch: &'a Branch,
        flag: &'a DeviceBuffer<u32>,
        then: F,
        otherwise: G,
    ) -> Result<()>
    where
        F: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
        G: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let site = CallSite::caller();
        let op = "Stream::if_else";
        check_driver(&self.ctx, "an IF/ELSE branch", IF_ELSE_DRIVER_VERSION)?;
        let graphs = self.branch_node(site, op, branch, flag, 2)?;
        let (Some(&yes), Some(&no)) = (graphs.first(), graphs.get(1)) else {
            let e = Error::InvalidLoop { reason: "the driver gave the branch fewer than two body graphs".into() };
            return Err(self.broken(op, site, e));
        };
        self.record_body(op, site, yes, then, |_| Ok(()))?;
        self.record_body(op, site, no, otherwise, |_| Ok(()))
    }

    /// The IF node of a branch on `flag`, with `bodies` body graphs (returned, empty).
    pub(super) fn branch_node(
        &mut self,
        site: CallSite,
        op: &'static str,
        branch: &'a Branch,
        flag: &'a DeviceBuffer<u32>,
        bodies: u32,
    ) -> Result<Vec<crate::device::RawGraph>> {
        Capturing::check_live(&self.ext, op)?;
        if !branch.ctx.same(&self.ctx) {
            return Err(Error::ContextMismatch { op, what: "branch kernels" });
        }
        if !flag.ctx.same(&self.ctx.h) {
            return Err(Error::ContextMismatch { op, what: "flag buffer" });
        }
        // The kernel sets it from the flag just before the node.
        let handle = self.new_cond_handle(op, site)?;
        self.launch(&branch.from_flag, ONE, (flag, handle))?;
        self.run(op, site, |b, s| b.cond_add(s, handle, CondKind::If, bodies))
    }

    /// Records `body`, then `tail` (whatever happened to `body`), into a conditional node's
    /// body graph through a stream of its own that shares this capture's book. Any failure
    /// marks the capture broken (`finish` refuses it); a body the driver invalidated also
    /// marks it poisoned (its graph is leaked, never destroyed).
    pub(super) fn record_body<F, T>(
        &mut self,
        op: &'static str,
        site: CallSite,
        graph: crate::device::RawGraph,
        body: F,
        tail: T,
    ) -> Result<()>
    where
        F: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
        T: FnOnce(&mut Stream<Capturing<'a>>) -> Result<()>,
    {
        let mode = self.ext.borrow().mode;
        let side = match crate::stream::spare_stream(&self.ctx) {
            Ok(s) => s,
            Err(e) => return Err(self.broken(op, site, e)),
        };
        if let Err(code) = self.ctx.b().capture_into(side, graph, mode) {
            self.ctx.reg().return_spare_stream(side);
            return Err(self.broken(op, site, Error::Driver { op: "cuStreamBeginCaptureToGraph", code }));
        }
        // A view: the body's stream goes back to the spares right after its capture ends.
        let mut inner = Stream::with_ext(self.ctx.clone(), side, Owner::View, self.ext.clone());
        let open_bodies = self.ext.borrow().open_bodies.clone();
        let forks_before = self.ext.borrow().forks.len();
        self.ext.borrow_mut().in_body += 1;
        open_bodies.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
        // A panicking body must not leave the body's stream capturing nor the book counting
        // a body: caught here, cleaned up below, then resumed.
        let recorded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&mut inner)));
        // A body that swapped its stream for another capturing stream (`std::mem::swap`)
        // would have the test recorded elsewhere: the test goes on a view of the body's own
        // stream, and both captures involved are marked (their streams refuse work, and
        // `finish` refuses them).
        let swapped = inner.raw != side || !std::rc::Rc::ptr_eq(&inner.ext, &self.ext);
        // The tail (a loop's test) goes in whatever happened: a loop whose body failed
        // half-way stays bounded.
        let tailed = {
            let mut own = Stream::with_ext(self.ctx.clone(), side, Owner::View, self.ext.clone());
            tail(&mut own)
        };
        self.ext.borrow_mut().in_body -= 1;
        // Forks made in the body and not joined back: joined here, so that no stream is left
        // recording into the body after it ends (the H100's driver ends such a body without
        // a word), and the capture is lost (`UnjoinedFork`).
        let unjoined = self.join_forks_since(forks_before, side);
        let ended = self.ctx.b().end_into(side).map_err(|code| {
            // The driver discards an invalidated body but keeps it in the node: the whole
            // capture is lost, and its graph must never be destroyed (see `poisoned`).
            self.ext.borrow().poisoned.store(true, std::sync::atomic::Ordering::Release);
            self.ctx.fail(op, site, code)
        });
        open_bodies.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
        self.ctx.reg().return_spare_stream(side);
        if swapped {
            self.mark_broken(op, site);
            for book in [&self.ext, &inner.ext] {
                if let Ok(mut b) = book.try_borrow_mut() {
                    b.swapped = true;
                    b.broken = true;
                }
            }
        }
        drop(inner);
        let outcome = match recorded {
            Ok(r) => r.and(tailed).and(unjoined).and(ended),
            Err(panic) => {
                self.ext.borrow_mut().broken = true;
                std::panic::resume_unwind(panic)
            }
        };
        if swapped {
            return Err(Error::InvalidLoop {
                reason: "the body swapped its stream for another (std::mem::swap): the capture is discarded".into(),
            });
        }
        outcome.map_err(|e| self.broken(op, site, e))
    }
}
