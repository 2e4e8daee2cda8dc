//! What only a capturing stream does: graph allocations and frees, forks and joins inside the
//! capture.

#[allow(unused_imports)]
use super::*;

impl<'a> Stream<Capturing<'a>> {
    /// Allocates `len` elements inside the graph (a memory node). The memory exists while
    /// the graph runs; use it only in this capture. Counted in the report; refused under
    /// [`AllocPolicy::Deny`](crate::AllocPolicy::Deny). Freed by
    /// [`free_async`](Self::free_async), or at the end of the graph if not freed before.
    ///
    /// # Errors
    /// [`Error::AllocationDenied`], [`Error::ZeroSizedAllocation`],
    /// [`Error::AllocationTooLarge`], [`Error::CaptureEnded`] on a fork whose capture has
    /// ended (see [`fork`](Self::fork)), [`Error::Driver`].
    #[track_caller]
    pub fn alloc_async<T: Pod>(&mut self, len: usize) -> Result<GraphBuffer<T>> {
        let site = CallSite::caller();
        let op = "Stream::alloc_async";
        Capturing::check_live(&self.ext, op)?;
        if self.ext.borrow().in_body > 0 {
            return Err(Error::NotInConditionalBody { op, site });
        }
        let bytes = byte_len::<T>(op, len)?;
        self.check_size(op, bytes)?;
        if self.ext.borrow().policy == crate::book::AllocPolicy::Deny {
            return Err(Error::AllocationDenied { op, bytes, site });
        }
        let p: DevPtr = self.run(op, site, |b, s| b.mem_alloc_async(bytes, s))?;
        let mut book = self.ext.borrow_mut();
        book.allocations.push(AllocRecord { op, bytes, site });
        book.graph_allocs.push((p, false));
        Ok(GraphBuffer::new(p, len, book.id))
    }

    /// Frees graph memory inside the graph (a memory free node).
    ///
    /// # Errors
    /// [`Error::ForeignGraphBuffer`] if it belongs to another capture, [`Error::Driver`].
    #[track_caller]
    pub fn free_async<T>(&mut self, mut buf: GraphBuffer<T>) -> Result<()> {
        let site = CallSite::caller();
        if self.ext.borrow().in_body > 0 {
            return Err(Error::NotInConditionalBody { op: "Stream::free_async", site });
        }
        let id = self.ext.borrow().id;
        if buf.capture != id || buf.freed {
            return Err(Error::ForeignGraphBuffer { buffer_capture: buf.capture, used_in: format!("capture #{id}") });
        }
        self.run("Stream::free_async", site, |b, s| b.mem_free_async(buf.ptr, s))?;
        buf.freed = true;
        // The live allocation at this address: the driver may hand an address freed earlier
        // in the capture to a later allocation (seen on the H100), so an earlier entry at the
        // same address can be one already freed.
        if let Some(e) = self.ext.borrow_mut().graph_allocs.iter_mut().rev().find(|(p, f)| *p == buf.ptr && !*f) {
            e.1 = true;
        }
        Ok(())
    }

    /// Forks a second stream into the capture: its work depends on everything recorded here
    /// so far, and is recorded into the same graph. [`join`](Self::join) it back before
    /// `finish()`, or the capture fails with [`Error::UnjoinedFork`].
    ///
    /// # After the capture ends
    /// A fork that is not joined can outlive its capture (the guard finished or dropped):
    /// it is still typed `Stream<Capturing<'a>>`, but it no longer records anything. Every
    /// operation on it then returns [`Error::CaptureEnded`] without reaching the driver —
    /// so no work runs eagerly by mistake, and no memory is allocated through it (an
    /// `alloc_async` would otherwise be an ordinary stream-ordered allocation that its
    /// [`GraphBuffer`] never frees). Graph memory it allocated while the capture lasted
    /// belongs to the graph and is freed with it. Dropping the fork returns its stream to
    /// the context.
    ///
    /// This is checked at run time, not in the types, on purpose: tying the fork to a
    /// borrow of the guard would forbid using the guard (which needs `&mut`) while any
    /// fork lives — the very thing forks are for — and `finish()` takes the guard by value,
    /// which no borrow checker can order after the fork's last use without also ending the
    /// fork's borrow first. The check is one flag read per operation.
    ///
    /// # Errors
    /// [`Error::CaptureEnded`] if this stream's capture has ended; [`Error::Driver`].
    #[track_caller]
    pub fn fork(&mut self) -> Result<Stream<Capturing<'a>>> {
        let site = CallSite::caller();
        Capturing::check_live(&self.ext, "Stream::fork")?;
        let raw = spare_stream(&self.ctx)?;
        let ev = Event::new(&self.ctx)?;
        let r = self.run("Stream::fork", site, |b, s| {
            b.event_record(ev.raw, s)?;
            b.stream_wait_event(raw, ev.raw)
        });
        let mut book = self.ext.borrow_mut();
        book.events.push(ev);
        if let Err(e) = r {
            book.pooled.push(raw);
            return Err(e);
        }
        book.forks.push((site, raw, false));
        drop(book);
        Ok(Stream::with_ext(self.ctx.clone(), raw, Owner::Pooled, self.ext.clone()))
    }

    /// Joins a forked stream back: later work here waits for everything recorded on `side`.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`] if `side` belongs to another capture,
    /// [`Error::CaptureEnded`] if the capture has ended, [`Error::Driver`].
    #[track_caller]
    pub fn join(&mut self, side: Stream<Capturing<'a>>) -> Result<()> {
        let site = CallSite::caller();
        Capturing::check_live(&self.ext, "Stream::join")?;
        if !std::rc::Rc::ptr_eq(&self.ext, &side.ext) {
            return Err(Error::ContextMismatch { op: "Stream::join", what: "forked stream (of another capture)" });
        }
        let ev = Event::new(&self.ctx)?;
        let r = self.run("Stream::join", site, |b, s| {
            b.event_record(ev.raw, side.raw)?;
            b.stream_wait_event(s, ev.raw)
        });
        let mut book = self.ext.borrow_mut();
        book.events.push(ev);
        r?;
        if let Some(f) = book.forks.iter_mut().find(|f| f.1 == side.raw && !f.2) {
            f.2 = true;
        }
        Ok(())
    }
}
