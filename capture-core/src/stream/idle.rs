//! What only an idle stream does (its cudarc handle, managed-memory prefetch, eager forks and
//! joins), and where streams come from: `Context::new_stream` and the spare streams of forks.

#[allow(unused_imports)]
use super::*;

impl Stream<Idle> {
    pub(crate) fn from_parts(ctx: Context, raw: RawStream, owner: Owner) -> Self {
        Self::with_ext(ctx, raw, owner, ())
    }

    /// The cudarc stream behind this one, if it was wrapped from cudarc.
    ///
    /// A clone of it can issue work behind this crate's back, also during a capture (only the
    /// idle stream hands it out, but clones live on). Such work is not refused; it is made
    /// visible: a synchronize or query invalidates the capture and `finish` names the driver
    /// code; an upload from a `Vec` is listed in
    /// [`CaptureReport::unpinned_host_copies`](crate::CaptureReport::unpinned_host_copies). See the crate docs, chapter 8.
    pub fn cudarc(&self) -> Option<&Arc<CudaStream>> {
        match &self.owner {
            Owner::Cudarc(s) => Some(s),
            _ => None,
        }
    }

    /// Allocates `len` elements in stream order (`cuMemAllocAsync`); contents undefined.
    ///
    /// # Errors
    /// As [`alloc_zeros`](Self::alloc_zeros).
    #[track_caller]
    pub fn alloc_async<T: Pod>(&mut self, len: usize) -> Result<DeviceBuffer<T>> {
        let site = CallSite::caller();
        let op = "Stream::alloc_async";
        let bytes = byte_len::<T>(op, len)?;
        self.check_size(op, bytes)?;
        let p = self.run(op, site, |b, s| b.mem_alloc_async(bytes, s))?;
        Ok(DeviceBuffer::from_raw(self.ctx.h.clone(), p, len))
    }

    /// Migrates a managed buffer to the GPU ahead of use, in stream order
    /// (`cuMemPrefetchAsync`).
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn prefetch_to_device<T>(&mut self, buf: &ManagedBuffer<T>) -> Result<()> {
        let site = CallSite::caller();
        self.check_ctx("Stream::prefetch_to_device", "buffer", &buf.ctx)?;
        self.run("Stream::prefetch_to_device", site, |b, s| b.mem_prefetch_async(buf.ptr, buf.num_bytes(), true, s))
    }

    /// Migrates a managed buffer to host memory, in stream order.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn prefetch_to_host<T>(&mut self, buf: &ManagedBuffer<T>) -> Result<()> {
        let site = CallSite::caller();
        self.check_ctx("Stream::prefetch_to_host", "buffer", &buf.ctx)?;
        self.run("Stream::prefetch_to_host", site, |b, s| b.mem_prefetch_async(buf.ptr, buf.num_bytes(), false, s))
    }

    /// A second stream whose work starts after everything queued here so far.
    ///
    /// # Errors
    /// [`Error::Driver`].
    #[track_caller]
    pub fn fork(&mut self) -> Result<Stream<Idle>> {
        let site = CallSite::caller();
        let raw = spare_stream(&self.ctx)?;
        let side = Stream::from_parts(self.ctx.clone(), raw, Owner::Pooled);
        let ev = Event::new(&self.ctx)?;
        self.run("Stream::fork", site, |b, s| {
            b.event_record(ev.raw, s)?;
            b.stream_wait_event(raw, ev.raw)
        })?;
        Ok(side)
    }

    /// Makes later work here wait for everything queued on `side`.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn join(&mut self, side: Stream<Idle>) -> Result<()> {
        let site = CallSite::caller();
        self.check_ctx("Stream::join", "side stream", &side.ctx.h)?;
        let ev = Event::new(&self.ctx)?;
        self.run("Stream::join", site, |b, s| {
            b.event_record(ev.raw, side.raw)?;
            b.stream_wait_event(s, ev.raw)
        })
    }
}

pub(crate) fn spare_stream(ctx: &Context) -> Result<RawStream> {
    match ctx.reg().take_spare_stream() {
        Some(s) => Ok(s),
        None => ctx.b().stream_create().map_err(|code| Error::Driver { op: "cuStreamCreate", code }),
    }
}

// Streams are made by the context; the context (below) knows nothing of them.
impl Context {
    /// A new stream of this context, idle.
    ///
    /// # Errors
    /// [`Error::Driver`] if the driver cannot create one.
    pub fn new_stream(&self) -> Result<Stream<Idle>> {
        let raw = self.b().stream_create().map_err(|code| Error::Driver { op: "cuStreamCreate", code })?;
        Ok(Stream::from_parts(self.clone(), raw, Owner::Own))
    }

    /// Wraps a cudarc stream of this context as an idle stream (it is not destroyed when the
    /// wrapper drops; hand it back with [`Stream::cudarc`]).
    ///
    /// # Errors
    /// [`Error::ContextMismatch`] if it belongs to another context or this is the simulated
    /// device; [`Error::AlreadyCapturing`] is reported later by `capture()` if it is capturing.
    pub fn wrap_cudarc_stream(&self, stream: Arc<CudaStream>) -> Result<Stream<Idle>> {
        match self.cudarc() {
            Some(c) if Arc::ptr_eq(c, stream.context()) || c.cu_ctx() == stream.context().cu_ctx() => {
                let raw = RawStream(stream.cu_stream() as usize);
                Ok(Stream::from_parts(self.clone(), raw, Owner::Cudarc(stream)))
            }
            _ => Err(Error::ContextMismatch { op: "Context::wrap_cudarc_stream", what: "cudarc stream" }),
        }
    }
}
