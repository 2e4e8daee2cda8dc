//! The stream's type states and the capability traits that gate what each state may do.
//!
//! A [`Stream`](crate::Stream) is either [`Idle`] or [`Capturing`]. Operations that are
//! illegal during CUDA graph capture — synchronous allocation, pinned and managed allocation,
//! synchronous copies and memsets, synchronization, queries and frees — are gated on a
//! capability trait that only [`Idle`] implements. Calling one on a capturing stream does not
//! compile, and the compiler's message (from `#[diagnostic::on_unimplemented]`) names the
//! operation and the fix.

use std::marker::PhantomData;

use crate::book::Book;
use crate::context::Context;
use crate::device::RawStream;
use crate::error::{CallSite, DriverCode, Error, OpSite};
use crate::module::Kernel;

pub(crate) mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Idle {}
    impl Sealed for super::Capturing<'_> {}
}

/// Type state: the stream is not capturing. Every operation is available.
#[derive(Debug, Clone, Copy, Default)]
pub struct Idle;

/// Type state: the stream is recording a CUDA graph.
///
/// `'a` is the lifetime of everything the graph will read or write: each buffer handed to an
/// operation on a `Stream<Capturing<'a>>` is borrowed for `'a`, and the finished
/// [`Graph<'a>`](crate::Graph) carries the same lifetime, so no such buffer can be freed
/// while the graph lives. The lifetime is invariant.
#[derive(Debug, Clone, Copy)]
pub struct Capturing<'a>(PhantomData<fn(&'a ()) -> &'a ()>);

/// The closed set of stream states ([`Idle`], [`Capturing`]).
pub trait StreamState: sealed::Sealed {
    /// Per-state data the stream carries: nothing when idle, the capture's book when
    /// capturing.
    #[doc(hidden)]
    type Ext;
    #[doc(hidden)]
    fn capture_id(ext: &Self::Ext) -> u64;
    /// Called before every operation, after [`check_live`](Self::check_live).
    #[doc(hidden)]
    fn before_op(ext: &Self::Ext, ctx: &Context);
    /// Called before a kernel launch, with the kernel.
    #[doc(hidden)]
    fn note_kernel(ext: &Self::Ext, kernel: &Kernel);
    /// Called after every successful operation.
    #[doc(hidden)]
    fn on_op(ext: &Self::Ext, ctx: &Context, op: &'static str, site: CallSite);
    /// Called when an operation fails; turns the driver code into an error.
    #[doc(hidden)]
    fn on_fail(ext: &Self::Ext, ctx: &Context, op: &'static str, site: CallSite, code: DriverCode) -> Error;
    /// A pooled (forked) stream is released.
    #[doc(hidden)]
    fn release_pooled(ext: &Self::Ext, ctx: &Context, raw: RawStream);
    /// `Err` when the stream may no longer issue work: its capture has ended
    /// ([`Error::CaptureEnded`]) or its guard's stream was swapped
    /// ([`Error::CaptureStreamSwapped`]). Checked before every operation. `Ok` carries the
    /// capture's id (0 when not capturing), so the hot path borrows the book once.
    #[doc(hidden)]
    fn check_live(ext: &Self::Ext, op: &'static str) -> Result<u64, Error>;
    /// The capture's book, when capturing (for work recorded later, e.g. at the end of a
    /// collective group).
    #[doc(hidden)]
    fn book(ext: &Self::Ext) -> Option<Book>;
}

impl StreamState for Idle {
    type Ext = ();
    #[inline]
    fn capture_id(_: &()) -> u64 {
        0
    }
    #[inline(always)]
    fn before_op(_: &(), _: &Context) {}
    #[inline(always)]
    fn note_kernel(_: &(), _: &Kernel) {}
    #[inline]
    fn on_op(_: &(), ctx: &Context, op: &'static str, site: CallSite) {
        if ctx.reg().any_active() {
            // Work on a stream that is not capturing runs now and is not in any graph.
            ctx.reg().note_eager(OpSite { op, site });
        }
    }
    fn on_fail(_: &(), ctx: &Context, op: &'static str, site: CallSite, code: DriverCode) -> Error {
        ctx.fail(op, site, code)
    }
    fn release_pooled(_: &(), ctx: &Context, raw: RawStream) {
        ctx.reg().return_spare_stream(raw);
    }
    #[inline(always)]
    fn check_live(_: &(), _: &'static str) -> Result<u64, Error> {
        Ok(0)
    }
    fn book(_: &()) -> Option<Book> {
        None
    }
}

impl StreamState for Capturing<'_> {
    type Ext = Book;
    #[inline]
    fn capture_id(ext: &Book) -> u64 {
        ext.borrow().id
    }
    #[inline(always)]
    fn note_kernel(ext: &Book, kernel: &Kernel) {
        let mut b = ext.borrow_mut();
        if let Some(marks) = &mut b.node_marks {
            let sig = kernel.signature();
            if kernel.is_checked() && marks.kernels.iter().all(|k| k.name != sig.name) {
                marks.kernels.push(sig.clone());
            }
        }
    }
    #[inline(always)]
    fn before_op(ext: &Book, ctx: &Context) {
        let mut b = ext.borrow_mut();
        if b.node_marks.is_some() {
            b.mark_before(ctx);
        }
    }
    #[inline(always)]
    fn on_op(ext: &Book, ctx: &Context, op: &'static str, site: CallSite) {
        let mut b = ext.borrow_mut();
        b.ops += 1;
        if let Some(w) = &b.watch {
            w.note(OpSite { op, site });
        }
        b.last_op = Some(OpSite { op, site });
        // The graph's picture (issue #11): one predictable branch unless asked for. Even a
        // bounded push here cost ~35 ns per captured launch on the H100 (A/B, 2026-11-23).
        if b.picture {
            b.note_for_picture(ctx, op, site);
        }
    }
    fn on_fail(ext: &Book, ctx: &Context, op: &'static str, site: CallSite, code: DriverCode) -> Error {
        if code.is_capture_error() && code != DriverCode::STREAM_CAPTURE_INVALIDATED {
            let mut b = ext.borrow_mut();
            if b.invalidated_by.is_none() {
                b.invalidated_by = Some(OpSite { op, site });
                b.cause_code = Some(code);
            }
        }
        ctx.fail(op, site, code)
    }
    fn release_pooled(ext: &Book, ctx: &Context, raw: RawStream) {
        let mut b = ext.borrow_mut();
        if b.has_ended() {
            // The capture is over (its spares were already handed back): return it directly.
            ctx.reg().return_spare_stream(raw);
        } else {
            b.pooled.push(raw);
        }
    }
    fn book(ext: &Book) -> Option<Book> {
        Some(ext.clone())
    }
    #[inline]
    fn check_live(ext: &Book, op: &'static str) -> Result<u64, Error> {
        let b = ext.borrow();
        if b.swapped || b.broken || b.has_ended() {
            return Err(not_live(&b, op));
        }
        Ok(b.id)
    }
}

/// States in which work can be issued that borrows buffers for `'a`.
///
/// [`Idle`] implements it for every `'a` (the work runs eagerly, the borrow ends with the
/// call); [`Capturing<'a>`] only for its own `'a` (the graph keeps the borrow). Write
/// capture-safe helpers generically over it:
///
/// ```
/// use capture_core::{DeviceBuffer, Records, Result, Stream};
/// fn clear<'a, S: Records<'a>>(s: &mut Stream<S>, buf: &'a DeviceBuffer<f32>) -> Result<()> {
///     s.memset_async(buf, 0)
/// }
/// ```
pub trait Records<'a>: StreamState {}
impl Records<'_> for Idle {}
impl<'a> Records<'a> for Capturing<'a> {}

/// Creating or destroying an NCCL communicator
/// ([`Comm::init_all`](crate::collective::Comm::init_all),
/// [`Comm::init_rank`](crate::collective::Comm::init_rank),
/// [`Comm::destroy`](crate::collective::Comm::destroy)).
#[diagnostic::on_unimplemented(
    message = "an NCCL communicator cannot be created or destroyed on a capturing stream (`{Self}`)",
    label = "NCCL's init allocates device memory and its destroy frees it: during a capture either invalidates it (measured: docs/probe/nccl.md)",
    note = "create the communicators before `capture()` and destroy them after `finish()`; every replay reuses them"
)]
pub trait CommInit: sealed::Sealed {}
impl CommInit for Idle {}

/// Making a loop's counter ([`LoopCounter::new`](crate::control::LoopCounter::new)): it
/// allocates device memory and loads a module.
#[diagnostic::on_unimplemented(
    message = "a loop counter cannot be made on a capturing stream (`{Self}`)",
    label = "it allocates its counter with cuMemAlloc and loads a module: during a capture the allocation fails and invalidates it",
    note = "make the `LoopCounter` before `capture()` (one per loop that can run at once); every replay reuses it"
)]
pub trait LoopSetup: SyncAlloc + sealed::Sealed {}
impl LoopSetup for Idle {}

/// Synchronous device allocation (`alloc_zeros`, `alloc_uninit`, `upload_new`).
#[diagnostic::on_unimplemented(
    message = "synchronous allocation is not allowed on a capturing stream (`{Self}`)",
    label = "this allocates with cuMemAlloc, which fails and invalidates the capture",
    note = "allocate the buffer before `stream.capture()`, or use `alloc_async` on the capturing stream to record a graph memory node"
)]
pub trait SyncAlloc: sealed::Sealed {}
impl SyncAlloc for Idle {}

/// Pinned (page-locked) host allocation.
#[diagnostic::on_unimplemented(
    message = "pinned host allocation is not allowed on a capturing stream (`{Self}`)",
    label = "this calls cuMemAllocHost, which fails and invalidates the capture",
    note = "allocate pinned buffers before `stream.capture()` and reuse them in every replay"
)]
pub trait PinnedAlloc: sealed::Sealed {}
impl PinnedAlloc for Idle {}

/// Managed (unified) allocation.
#[diagnostic::on_unimplemented(
    message = "managed allocation is not allowed on a capturing stream (`{Self}`)",
    label = "this calls cuMemAllocManaged, which fails and invalidates the capture (and hangs on some systems)",
    note = "allocate managed memory before `stream.capture()`; inside a capture use `alloc_async` or a buffer allocated beforehand"
)]
pub trait ManagedAlloc: sealed::Sealed {}
impl ManagedAlloc for Idle {}

/// Synchronous host<->device copies and memsets.
#[diagnostic::on_unimplemented(
    message = "a synchronous copy or memset is not allowed on a capturing stream (`{Self}`)",
    label = "on real hardware this runs once now, returns OK, and is missing from every replay",
    note = "inside a capture use `upload_async`/`download_async` through a `PinnedBuffer`, or `memset_async`; or copy before `capture()`"
)]
pub trait SyncCopy: sealed::Sealed {}
impl SyncCopy for Idle {}

/// Host synchronization with the stream.
#[diagnostic::on_unimplemented(
    message = "`synchronize` is not allowed on a capturing stream (`{Self}`)",
    label = "synchronizing a capturing stream fails and invalidates the capture",
    note = "order work inside the graph with `record_event`/`wait_event`; synchronize after `graph.launch(..)` instead"
)]
pub trait Synchronize: sealed::Sealed {}
impl Synchronize for Idle {}

/// Stream and event queries.
#[diagnostic::on_unimplemented(
    message = "querying is not allowed on a capturing stream (`{Self}`)",
    label = "a stream query during capture fails and invalidates the capture",
    note = "query the stream after `finish()`, or order work with events inside the graph"
)]
pub trait Query: sealed::Sealed {}
impl Query for Idle {}

/// Explicit frees.
#[diagnostic::on_unimplemented(
    message = "freeing is not allowed on a capturing stream (`{Self}`)",
    label = "cuMemFree during capture fails and invalidates the capture",
    note = "free buffers after `finish()` (a buffer dropped during a capture is freed when the capture ends)"
)]
pub trait Free: sealed::Sealed {}
impl Free for Idle {}

/// Handing out the stream's [`Context`](crate::Context) (issue #13, item 3).
///
/// A context makes idle streams (`new_stream`) and synchronizes the device, so a capturing
/// stream does not give its context out: code handed only a `Stream<Capturing>` (a
/// `#[capturable]` function, a helper it calls) has no way to an idle handle through it.
#[diagnostic::on_unimplemented(
    message = "a capturing stream does not give out its context (`{Self}`)",
    label = "`context()` is only available on an idle stream",
    note = "a `Context` makes idle streams and synchronizes the device, which breaks the capture; take what you need from the context before `stream.capture()` (its name, its kind, a module), or after `finish()`"
)]
pub trait ContextAccess: sealed::Sealed {}
impl ContextAccess for Idle {}

/// The error of an operation on a capturing stream that may no longer issue work.
#[cold]
fn not_live(b: &crate::book::CaptureBook, op: &'static str) -> Error {
    if b.broken && !b.has_ended() && !b.swapped {
        let cause = b.invalidated_by.clone().unwrap_or(OpSite { op: "a conditional body", site: b.began_at });
        return Error::CaptureLost { op, capture: b.id, cause };
    }
    if b.has_ended() {
        Error::CaptureEnded { op, capture: b.id }
    } else {
        Error::CaptureStreamSwapped {
            capture: b.id,
            found: "another capturing stream; this stream's work may not reach its own graph".to_owned(),
        }
    }
}
