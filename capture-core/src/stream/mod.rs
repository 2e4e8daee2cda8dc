//! `Stream<S>`: a CUDA stream in type state `Idle` or `Capturing`.

use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

use bytemuck::Pod;
use cudarc::driver::CudaStream;

use crate::buffer::{byte_len, zeroed_host, DeviceBuffer, GraphBuffer, ManagedBuffer, PinnedBuffer};
use crate::context::Context;
use crate::device::{Backend, DevPtr, LaunchParams, RawStream};
use crate::error::{CallSite, DriverCode, Error, Result};
use crate::event::Event;
use crate::handle::Handle;
use crate::interop::DeviceMemory;
use crate::module::{mismatch, ArgCx, Kernel, KernelArgs, LaunchConfig, MAX_KERNEL_ARGS};
use crate::registry::Deferred;
use crate::report::AllocRecord;
use crate::state::{
    Capturing, ContextAccess, Free, Idle, ManagedAlloc, PinnedAlloc, Query, Records, StreamState, SyncAlloc, SyncCopy,
    Synchronize,
};

mod capturing;
mod foreign;
mod idle;

pub(crate) use idle::spare_stream;

/// Starting a capture: only an idle stream can.
#[diagnostic::on_unimplemented(
    message = "this stream is already capturing (`{Self}`)",
    label = "a stream records one capture at a time",
    note = "finish the current capture with `guard.finish()` first, or use `fork()` to record work on a second stream into this capture"
)]
pub trait BeginCapture: crate::state::sealed::Sealed + StreamState + Sized {
    #[doc(hidden)]
    fn as_idle(s: &mut Stream<Self>) -> &mut Stream<Idle>;
}
impl BeginCapture for Idle {
    fn as_idle(s: &mut Stream<Idle>) -> &mut Stream<Idle> {
        s
    }
}

pub(crate) enum Owner {
    /// Created by this crate; destroyed on drop.
    Own,
    /// A cudarc stream, handed back by [`Stream::cudarc`]; never destroyed here.
    Cudarc(Arc<CudaStream>),
    /// The capture guard's view of a stream it borrows.
    View,
    /// A spare stream used by `fork()`, returned to the context's spares on drop.
    Pooled,
}

/// A CUDA stream in type state `S`: [`Idle`] (the default) or [`Capturing`].
///
/// Operations legal in both states take buffers borrowed for `'a` where `S: Records<'a>`;
/// on a capturing stream that is the graph's lifetime. Operations illegal during capture
/// carry a bound (`S: SyncAlloc`, `S: Synchronize`, …) that only [`Idle`] meets, so calling
/// one on a capturing stream is a compile error that names the fix.
pub struct Stream<S: StreamState = Idle> {
    pub(crate) ctx: Context,
    pub(crate) raw: RawStream,
    pub(crate) owner: Owner,
    pub(crate) ext: S::Ext,
    _s: PhantomData<S>,
}

static_assertions::assert_impl_all!(Stream<Idle>: Send);

impl<S: StreamState> fmt::Debug for Stream<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Stream<{}>({:#x})", std::any::type_name::<S>().rsplit("::").next().unwrap_or("?"), self.raw.0)
    }
}

impl<S: StreamState> Drop for Stream<S> {
    fn drop(&mut self) {
        match &self.owner {
            Owner::Own => {
                if let Some(Deferred::Stream(s)) = self.ctx.reg().defer(Deferred::Stream(self.raw)) {
                    if let Err(code) = self.ctx.b().stream_destroy(s) {
                        log::error!("capture-core: destroying a stream failed: {code}");
                    }
                }
            }
            Owner::Pooled => S::release_pooled(&self.ext, &self.ctx, self.raw),
            Owner::Cudarc(_) | Owner::View => {}
        }
    }
}

impl<S: StreamState> Stream<S> {
    pub(crate) fn with_ext(ctx: Context, raw: RawStream, owner: Owner, ext: S::Ext) -> Self {
        Self { ctx, raw, owner, ext, _s: PhantomData }
    }

    /// The stream's context. Only an idle stream gives it out: a context makes idle streams and
    /// synchronizes the device, and the capture type-state keeps both away from code that holds
    /// only a capturing stream (issue #13, item 3).
    pub fn context(&self) -> &Context
    where
        S: ContextAccess,
    {
        &self.ctx
    }

    /// Runs one driver operation with the state's bookkeeping.
    #[inline]
    pub(crate) fn run<T>(
        &self,
        op: &'static str,
        site: CallSite,
        f: impl FnOnce(&dyn Backend, RawStream) -> Result<T, DriverCode>,
    ) -> Result<T> {
        S::check_live(&self.ext, op)?;
        S::before_op(&self.ext, &self.ctx);
        match f(self.ctx.b(), self.raw) {
            Ok(v) => {
                S::on_op(&self.ext, &self.ctx, op, site);
                Ok(v)
            }
            Err(code) => Err(S::on_fail(&self.ext, &self.ctx, op, site, code)),
        }
    }

    #[inline]
    fn check_ctx(&self, op: &'static str, what: &'static str, ctx: &Handle) -> Result<()> {
        if self.ctx.h.same(ctx) {
            Ok(())
        } else {
            Err(Error::ContextMismatch { op, what })
        }
    }

    fn check_size(&self, op: &'static str, bytes: usize) -> Result<()> {
        let total = self.ctx.b().total_mem();
        if bytes > total {
            let free = self.ctx.b().mem_info().map(|(f, _)| f).unwrap_or(0);
            return Err(Error::AllocationTooLarge { op, requested: bytes, total, free });
        }
        Ok(())
    }

    // ----- Legal in both states --------------------------------------------------------

    /// Launches `kernel` with `args` (a tuple of [`KernelArg`](crate::KernelArg)s: device
    /// memory by reference — this crate's buffers, cudarc slices and views, user types —
    /// numbers by value). Arguments are checked against the kernel's PTX parameter list
    /// first: their number, sizes, and type class
    /// ([`ParamClass::accepts`](crate::ptx::ParamClass::accepts): a float only for a
    /// float parameter, signedness where the PTX states it, a pointer for `.u64`/`.b64`).
    /// `cfg` is a [`LaunchConfig`] or cudarc's `LaunchConfig`.
    ///
    /// # Errors
    /// [`Error::ArgumentMismatch`], [`Error::InvalidLaunchConfig`],
    /// [`Error::ContextMismatch`], [`Error::ForeignGraphBuffer`], or [`Error::Driver`].
    #[track_caller]
    pub fn launch<'a, A: KernelArgs<'a>>(
        &mut self,
        kernel: &'a Kernel,
        cfg: impl Into<LaunchConfig>,
        args: A,
    ) -> Result<()>
    where
        S: Records<'a>,
    {
        let cfg = cfg.into();
        let site = CallSite::caller();
        let capture = S::check_live(&self.ext, "Stream::launch")?;
        self.check_ctx("Stream::launch", "kernel", kernel.context())?;
        cfg.validate()?;
        let cx = ArgCx { ctx: &self.ctx.h, capture };
        let mut slots = [0u64; MAX_KERNEL_ARGS];
        let mut sizes = [0u8; MAX_KERNEL_ARGS];
        let mut classes = [0u8; MAX_KERNEL_ARGS];
        let n = args.pack(&cx, &mut slots, &mut sizes, &mut classes)?;
        if !kernel.args_match(&sizes[..n], &classes[..n]) {
            return Err(mismatch(kernel, &sizes[..n], &args.describe()));
        }
        let params = LaunchParams {
            grid: cfg.grid,
            block: cfg.block,
            shared_mem_bytes: cfg.shared_mem_bytes,
            slots: &mut slots[..n],
        };
        S::note_kernel(&self.ext, kernel);
        S::before_op(&self.ext, &self.ctx);
        match self.ctx.h.inner.launch(kernel.raw, params, self.raw) {
            Ok(()) => {
                S::on_op(&self.ext, &self.ctx, "Stream::launch", site);
                Ok(())
            }
            Err(code) => Err(S::on_fail(&self.ext, &self.ctx, "Stream::launch", site, code)),
        }
    }

    /// Sets every byte of `buf` to `byte`, in stream order.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`] or [`Error::Driver`].
    #[track_caller]
    pub fn memset_async<'a, M: DeviceMemory + ?Sized>(&mut self, buf: &'a M, byte: u8) -> Result<()>
    where
        S: Records<'a>,
    {
        let site = CallSite::caller();
        let m = buf.mem_ref();
        m.check(&self.ctx.h, "Stream::memset_async", "buffer")?;
        self.run("Stream::memset_async", site, |b, s| b.memset_d8_async(DevPtr(m.ptr), byte, m.bytes, s))
    }

    /// Copies `src` into `dst` on the device, in stream order.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], [`Error::ContextMismatch`] or [`Error::Driver`].
    #[track_caller]
    pub fn copy_async<'a, T, D, R>(&mut self, dst: &'a D, src: &'a R) -> Result<()>
    where
        S: Records<'a>,
        D: DeviceMemory<Elem = T> + ?Sized,
        R: DeviceMemory<Elem = T> + ?Sized,
    {
        let site = CallSite::caller();
        let (d, r) = (dst.mem_ref(), src.mem_ref());
        d.check(&self.ctx.h, "Stream::copy_async", "destination buffer")?;
        r.check(&self.ctx.h, "Stream::copy_async", "source buffer")?;
        if d.len != r.len {
            return Err(Error::LengthMismatch { op: "Stream::copy_async", dst: d.len, src: r.len });
        }
        self.run("Stream::copy_async", site, |b, s| b.memcpy_dtod_async(DevPtr(d.ptr), DevPtr(r.ptr), d.bytes, s))
    }

    /// Copies pinned host memory to the device, in stream order. Captured, the copy re-reads
    /// `src` at every replay: write fresh inputs into it between replays.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], [`Error::ContextMismatch`] or [`Error::Driver`].
    #[track_caller]
    pub fn upload_async<'a, T: Pod, D: DeviceMemory<Elem = T> + ?Sized>(
        &mut self,
        dst: &'a D,
        src: &'a PinnedBuffer<T>,
    ) -> Result<()>
    where
        S: Records<'a>,
    {
        let site = CallSite::caller();
        let d = dst.mem_ref();
        d.check(&self.ctx.h, "Stream::upload_async", "destination buffer")?;
        self.check_ctx("Stream::upload_async", "pinned buffer", &src.ctx)?;
        if d.len != src.len {
            return Err(Error::LengthMismatch { op: "Stream::upload_async", dst: d.len, src: src.len });
        }
        self.run("Stream::upload_async", site, |b, s| b.memcpy_htod_async(DevPtr(d.ptr), src.ptr, d.bytes, s))
    }

    /// Copies device memory to pinned host memory, in stream order. Read the result after
    /// synchronizing.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], [`Error::ContextMismatch`] or [`Error::Driver`].
    #[track_caller]
    pub fn download_async<'a, T: Pod, R: DeviceMemory<Elem = T> + ?Sized>(
        &mut self,
        dst: &'a PinnedBuffer<T>,
        src: &'a R,
    ) -> Result<()>
    where
        S: Records<'a>,
    {
        let site = CallSite::caller();
        let r = src.mem_ref();
        self.check_ctx("Stream::download_async", "pinned buffer", &dst.ctx)?;
        r.check(&self.ctx.h, "Stream::download_async", "source buffer")?;
        if dst.len != r.len {
            return Err(Error::LengthMismatch { op: "Stream::download_async", dst: dst.len, src: r.len });
        }
        self.run("Stream::download_async", site, |b, s| b.memcpy_dtoh_async(dst.ptr, DevPtr(r.ptr), r.bytes, s))
    }

    /// Records `event` at this point of the stream.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`] or [`Error::Driver`].
    #[track_caller]
    pub fn record_event<'a>(&mut self, event: &'a Event) -> Result<()>
    where
        S: Records<'a>,
    {
        let site = CallSite::caller();
        self.check_ctx("Stream::record_event", "event", &event.ctx)?;
        self.run("Stream::record_event", site, |b, s| b.event_record(event.raw, s))
    }

    /// Makes later work on this stream wait for `event`.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`] or [`Error::Driver`].
    #[track_caller]
    pub fn wait_event<'a>(&mut self, event: &'a Event) -> Result<()>
    where
        S: Records<'a>,
    {
        let site = CallSite::caller();
        self.check_ctx("Stream::wait_event", "event", &event.ctx)?;
        self.run("Stream::wait_event", site, |b, s| b.stream_wait_event(s, event.raw))
    }

    // ----- Idle only -------------------------------------------------------------------

    /// Allocates `len` zeroed elements (synchronously).
    ///
    /// # Errors
    /// [`Error::ZeroSizedAllocation`], [`Error::AllocationTooLarge`], [`Error::Driver`].
    #[track_caller]
    pub fn alloc_zeros<T: Pod>(&mut self, len: usize) -> Result<DeviceBuffer<T>>
    where
        S: SyncAlloc,
    {
        let site = CallSite::caller();
        self.ctx.fail_fast("Stream::alloc_zeros", site)?;
        self.alloc_zeros_at("Stream::alloc_zeros", site, len)
    }

    /// Allocates `len` elements without initialising them (their bytes are whatever the
    /// device memory held; `T: Pod` makes every bit pattern a valid value).
    ///
    /// # Errors
    /// As [`alloc_zeros`](Self::alloc_zeros).
    #[track_caller]
    pub fn alloc_uninit<T: Pod>(&mut self, len: usize) -> Result<DeviceBuffer<T>>
    where
        S: SyncAlloc,
    {
        self.ctx.fail_fast("Stream::alloc_uninit", CallSite::caller())?;
        self.alloc_inner::<T>("Stream::alloc_uninit", CallSite::caller(), len)
    }

    /// A zeroed allocation without the state bound: `alloc_zeros`, and
    /// [`CapturePool`](crate::CapturePool), which checks the state itself.
    pub(crate) fn alloc_zeros_at<T: Pod>(
        &self,
        op: &'static str,
        site: CallSite,
        len: usize,
    ) -> Result<DeviceBuffer<T>> {
        let buf = self.alloc_inner::<T>(op, site, len)?;
        // On this stream, then waited for: the synchronous cuMemsetD8 runs on the legacy
        // stream and may return before it is done, unordered with this (non-blocking)
        // stream, so a following async write here could land first and be zeroed over
        // (seen on the H100: issue #13's large-allocation test).
        self.run(op, site, |b, s| {
            b.memset_d8_async(buf.ptr, 0, buf.num_bytes(), s)?;
            b.stream_synchronize(s)
        })?;
        Ok(buf)
    }

    fn alloc_inner<T: Pod>(&self, op: &'static str, site: CallSite, len: usize) -> Result<DeviceBuffer<T>> {
        let bytes = byte_len::<T>(op, len)?;
        self.check_size(op, bytes)?;
        let p = self.run(op, site, |b, _| b.mem_alloc(bytes))?;
        Ok(DeviceBuffer::from_raw(self.ctx.h.clone(), p, len))
    }

    /// Allocates a buffer holding a copy of `data`.
    ///
    /// # Errors
    /// As [`alloc_zeros`](Self::alloc_zeros).
    #[track_caller]
    pub fn upload_new<T: Pod>(&mut self, data: &[T]) -> Result<DeviceBuffer<T>>
    where
        S: SyncAlloc,
    {
        self.ctx.fail_fast("Stream::upload_new", CallSite::caller())?;
        let site = CallSite::caller();
        let buf = self.alloc_inner::<T>("Stream::upload_new", site, data.len())?;
        self.run("Stream::upload_new", site, |b, _| b.memcpy_htod(buf.ptr, bytemuck::cast_slice(data)))?;
        Ok(buf)
    }

    /// Allocates `len` zeroed elements of page-locked host memory.
    ///
    /// # Errors
    /// [`Error::ZeroSizedAllocation`], [`Error::SizeOverflow`], [`Error::Driver`].
    #[track_caller]
    pub fn alloc_pinned<T: Pod>(&mut self, len: usize) -> Result<PinnedBuffer<T>>
    where
        S: PinnedAlloc,
    {
        self.ctx.fail_fast("Stream::alloc_pinned", CallSite::caller())?;
        let site = CallSite::caller();
        let bytes = byte_len::<T>("Stream::alloc_pinned", len)?;
        let p = self.run("Stream::alloc_pinned", site, |b, _| b.host_alloc(bytes))?;
        let buf = PinnedBuffer::from_raw(self.ctx.h.clone(), p, len);
        self.ctx.b().host_zero(p, bytes);
        Ok(buf)
    }

    /// Allocates `len` zeroed elements of managed (unified) memory, with its preferred
    /// location set to the GPU and the CPU advised as an accessor. Never asks for more than
    /// the device has free (asking for more can hang the GPU on some systems). Use it on the
    /// device like a [`DeviceBuffer`] (it dereferences to one); move it ahead of use with
    /// [`prefetch_to_device`](Stream::prefetch_to_device); read and write it from the host
    /// with [`read_managed`](Self::read_managed)/[`write_managed`](Self::write_managed).
    ///
    /// # Errors
    /// [`Error::ZeroSizedAllocation`], [`Error::AllocationTooLarge`], [`Error::Driver`].
    #[track_caller]
    pub fn alloc_managed<T: Pod>(&mut self, len: usize) -> Result<ManagedBuffer<T>>
    where
        S: ManagedAlloc,
    {
        self.ctx.fail_fast("Stream::alloc_managed", CallSite::caller())?;
        let site = CallSite::caller();
        let op = "Stream::alloc_managed";
        let bytes = byte_len::<T>(op, len)?;
        let (free, total) = self.ctx.mem_info()?;
        if bytes > free {
            return Err(Error::AllocationTooLarge { op, requested: bytes, total, free });
        }
        let p = self.run(op, site, |b, _| b.managed_alloc(bytes))?;
        let buf = ManagedBuffer { buf: DeviceBuffer::from_raw(self.ctx.h.clone(), p, len) };
        self.ctx.b().host_zero(buf.host_ptr(), bytes);
        // Lives on the GPU; mapped for the CPU, so host access reads it in place.
        self.run(op, site, |b, _| {
            b.mem_advise(p, bytes, crate::device::Advice::PreferDevice)?;
            b.mem_advise(p, bytes, crate::device::Advice::AccessedByHost)
        })?;
        Ok(buf)
    }

    /// Copies `src` into `dst` after the stream's pending work, and returns when done.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn upload<T: Pod, D: DeviceMemory<Elem = T> + ?Sized>(&mut self, dst: &D, src: &[T]) -> Result<()>
    where
        S: SyncCopy,
    {
        self.ctx.fail_fast("Stream::upload", CallSite::caller())?;
        let site = CallSite::caller();
        let d = dst.mem_ref();
        d.check(&self.ctx.h, "Stream::upload", "buffer")?;
        if d.len != src.len() {
            return Err(Error::LengthMismatch { op: "Stream::upload", dst: d.len, src: src.len() });
        }
        self.run("Stream::upload", site, |b, s| {
            b.stream_synchronize(s)?;
            b.memcpy_htod(DevPtr(d.ptr), bytemuck::cast_slice(src))
        })
    }

    /// Waits for the stream's pending work, then copies `src` out.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`]; [`Error::HostOutOfMemory`] when the
    /// host cannot hold a vector of that size (use [`download_into`](Self::download_into)).
    #[track_caller]
    pub fn download<T: Pod, R: DeviceMemory<Elem = T> + ?Sized>(&mut self, src: &R) -> Result<Vec<T>>
    where
        S: SyncCopy,
    {
        self.ctx.fail_fast("Stream::download", CallSite::caller())?;
        let mut v = zeroed_host::<T>("Stream::download", src.mem_ref().len)?;
        self.download_into_at(src, &mut v, CallSite::caller())?;
        Ok(v)
    }

    /// Waits for the stream's pending work, then copies `src` into `dst`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn download_into<T: Pod, R: DeviceMemory<Elem = T> + ?Sized>(&mut self, src: &R, dst: &mut [T]) -> Result<()>
    where
        S: SyncCopy,
    {
        self.ctx.fail_fast("Stream::download_into", CallSite::caller())?;
        self.download_into_at(src, dst, CallSite::caller())
    }

    fn download_into_at<T: Pod, R: DeviceMemory<Elem = T> + ?Sized>(
        &self,
        src: &R,
        dst: &mut [T],
        site: CallSite,
    ) -> Result<()> {
        let r = src.mem_ref();
        r.check(&self.ctx.h, "Stream::download", "buffer")?;
        if dst.len() != r.len {
            return Err(Error::LengthMismatch { op: "Stream::download", dst: dst.len(), src: r.len });
        }
        self.run("Stream::download", site, |b, s| {
            b.stream_synchronize(s)?;
            b.memcpy_dtoh(bytemuck::cast_slice_mut(dst), DevPtr(r.ptr))
        })
    }

    /// Reads a managed buffer from the host after the stream's pending work.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`], [`Error::HostOutOfMemory`].
    #[track_caller]
    pub fn read_managed<T: Pod>(&mut self, buf: &ManagedBuffer<T>) -> Result<Vec<T>>
    where
        S: SyncCopy,
    {
        self.ctx.fail_fast("Stream::read_managed", CallSite::caller())?;
        let site = CallSite::caller();
        self.check_ctx("Stream::read_managed", "buffer", &buf.ctx)?;
        self.run("Stream::read_managed", site, |b, s| b.stream_synchronize(s))?;
        let mut v = zeroed_host::<T>("Stream::read_managed", buf.len)?;
        self.ctx.b().host_read(buf.host_ptr(), 0, bytemuck::cast_slice_mut(&mut v));
        Ok(v)
    }

    /// Writes a managed buffer from the host after the stream's pending work.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`], [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn write_managed<T: Pod>(&mut self, buf: &ManagedBuffer<T>, src: &[T]) -> Result<()>
    where
        S: SyncCopy,
    {
        self.ctx.fail_fast("Stream::write_managed", CallSite::caller())?;
        let site = CallSite::caller();
        self.check_ctx("Stream::write_managed", "buffer", &buf.ctx)?;
        if src.len() != buf.len {
            return Err(Error::LengthMismatch { op: "Stream::write_managed", dst: buf.len, src: src.len() });
        }
        self.run("Stream::write_managed", site, |b, s| b.stream_synchronize(s))?;
        self.ctx.b().host_write(buf.host_ptr(), 0, bytemuck::cast_slice(src));
        Ok(())
    }

    /// Sets every byte of `buf` to `byte` after the stream's pending work, and returns when
    /// done.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn memset_sync<M: DeviceMemory + ?Sized>(&mut self, buf: &M, byte: u8) -> Result<()>
    where
        S: SyncCopy,
    {
        self.ctx.fail_fast("Stream::memset_sync", CallSite::caller())?;
        let site = CallSite::caller();
        let m = buf.mem_ref();
        m.check(&self.ctx.h, "Stream::memset_sync", "buffer")?;
        // In stream order, then waited for (see `alloc_zeros_at` for why not cuMemsetD8).
        self.run("Stream::memset_sync", site, |b, s| {
            b.memset_d8_async(DevPtr(m.ptr), byte, m.bytes, s)?;
            b.stream_synchronize(s)
        })
    }

    /// Blocks until all work queued on the stream is done.
    ///
    /// # Errors
    /// [`Error::Driver`], including errors of earlier asynchronous work.
    #[track_caller]
    pub fn synchronize(&mut self) -> Result<()>
    where
        S: Synchronize,
    {
        self.ctx.fail_fast("Stream::synchronize", CallSite::caller())?;
        self.run("Stream::synchronize", CallSite::caller(), |b, s| b.stream_synchronize(s))
    }

    /// Whether all work queued on the stream is done.
    ///
    /// # Errors
    /// [`Error::Driver`].
    #[track_caller]
    pub fn query(&mut self) -> Result<bool>
    where
        S: Query,
    {
        self.ctx.fail_fast("Stream::query", CallSite::caller())?;
        self.run("Stream::query", CallSite::caller(), |b, s| b.stream_query(s))
    }

    /// Whether `event` has completed.
    ///
    /// # Errors
    /// [`Error::Driver`] (`CUDA_ERROR_CAPTURED_EVENT` if it was recorded in an active capture).
    #[track_caller]
    pub fn event_complete(&mut self, event: &Event) -> Result<bool>
    where
        S: Query,
    {
        self.ctx.fail_fast("Stream::event_complete", CallSite::caller())?;
        self.run("Stream::event_complete", CallSite::caller(), |b, _| b.event_query(event.raw))
    }

    /// Blocks until `event` has completed.
    ///
    /// # Errors
    /// [`Error::Driver`].
    #[track_caller]
    pub fn wait_for_event(&mut self, event: &Event) -> Result<()>
    where
        S: Synchronize,
    {
        self.ctx.fail_fast("Stream::wait_for_event", CallSite::caller())?;
        self.run("Stream::wait_for_event", CallSite::caller(), |b, _| b.event_synchronize(event.raw))
    }

    /// Milliseconds between two completed events (waits for `end`).
    ///
    /// # Errors
    /// [`Error::Driver`].
    #[track_caller]
    pub fn elapsed_ms(&mut self, start: &Event, end: &Event) -> Result<f32>
    where
        S: Synchronize,
    {
        self.ctx.fail_fast("Stream::elapsed_ms", CallSite::caller())?;
        self.run("Stream::elapsed_ms", CallSite::caller(), |b, _| {
            b.event_synchronize(end.raw)?;
            b.event_elapsed_ms(start.raw, end.raw)
        })
    }

    /// Frees `buf` now (after the stream's pending work), reporting any error — unlike
    /// dropping it, which logs errors.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn free<T>(&mut self, buf: DeviceBuffer<T>) -> Result<()>
    where
        S: Free,
    {
        self.ctx.fail_fast("Stream::free", CallSite::caller())?;
        let site = CallSite::caller();
        self.check_ctx("Stream::free", "buffer", &buf.ctx)?;
        let p = buf.ptr;
        self.run("Stream::free", site, |b, s| {
            b.stream_synchronize(s)?;
            b.mem_free(p)
        })?;
        std::mem::forget(buf);
        Ok(())
    }
}
