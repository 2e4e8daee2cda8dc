//! The type-resolved half of `#[capturable]`'s parameter rule (issue #13, item 2).
//!
//! The attribute reads names, so `use capture_core::Stream as S` or `type IdleStream =
//! Stream<Idle>` hide an idle handle from it. For every parameter it therefore also emits, inside
//! the function, a check that the compiler resolves:
//!
//! ```ignore
//! let _ = || {
//!     use ::capture_core::__private::capturable_check::{IdleHandleVerdict as _, OtherVerdict as _};
//!     ::capture_core::__private::capturable_check::require_capturable(
//!         (&&::capture_core::__private::capturable_check::Probe::<ParamType>::NEW).__capturable_verdict(),
//!     );
//! };
//! ```
//!
//! Method lookup on `&&Probe<T>` tries [`IdleHandleVerdict`] first (implemented for `&Probe<T>`
//! only when `T` is an idle handle, an [`IdleHandle`]); otherwise it derefs once to `&Probe<T>`,
//! where [`OtherVerdict`] applies to every `T`. The first gives [`IdleHandleParam<T>`], which does not implement
//! [`CapturableParam`], so the call fails with that trait's message, spanned on the parameter's
//! type. In a generic function a type parameter is not known to be an idle handle, so it passes:
//! its bounds (`S: Records<'a>`) are what the type-state checks. The closure is never called.

use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;

use crate::context::Context;
use crate::state::Idle;
use crate::stream::Stream;

/// Types a `#[capturable]` function must not take: they reach the device outside the capture.
pub trait IdleHandle {}
impl IdleHandle for Stream<Idle> {}
impl IdleHandle for Context {}
impl IdleHandle for cudarc::driver::CudaStream {}
impl IdleHandle for cudarc::driver::CudaContext {}
impl<T: IdleHandle + ?Sized> IdleHandle for &T {}
impl<T: IdleHandle + ?Sized> IdleHandle for &mut T {}
impl<T: IdleHandle + ?Sized> IdleHandle for Box<T> {}
impl<T: IdleHandle + ?Sized> IdleHandle for Arc<T> {}
impl<T: IdleHandle + ?Sized> IdleHandle for Rc<T> {}
impl<T: IdleHandle> IdleHandle for Option<T> {}
impl<T: IdleHandle> IdleHandle for Vec<T> {}
impl<T: IdleHandle> IdleHandle for [T] {}
impl<T: IdleHandle, const N: usize> IdleHandle for [T; N] {}

/// A zero-sized stand-in for a parameter of type `T`.
pub struct Probe<T: ?Sized>(PhantomData<fn() -> PhantomData<T>>);

impl<T: ?Sized> Probe<T> {
    /// The probe.
    pub const NEW: Self = Probe(PhantomData);
}

/// The verdict for an idle handle: it does not implement [`CapturableParam`].
pub struct IdleHandleParam<T: ?Sized>(PhantomData<fn() -> PhantomData<T>>);
/// The verdict for any other type.
pub struct Accepted;

/// Chosen first by method lookup (receiver `&&Probe<T>`), and only for idle handles.
pub trait IdleHandleVerdict<T: ?Sized> {
    /// The verdict.
    fn __capturable_verdict(&self) -> IdleHandleParam<T> {
        IdleHandleParam(PhantomData)
    }
}
impl<T: IdleHandle + ?Sized> IdleHandleVerdict<T> for &Probe<T> {}

/// Chosen after one deref (receiver `&Probe<T>`), for every type.
pub trait OtherVerdict {
    /// The verdict.
    fn __capturable_verdict(&self) -> Accepted {
        Accepted
    }
}
impl<T: ?Sized> OtherVerdict for Probe<T> {}

/// A type a `#[capturable]` function may take as a parameter.
#[diagnostic::on_unimplemented(
    message = "a `#[capturable]` function cannot take `{T}`: it is an idle stream or context, or holds one",
    label = "this parameter's type resolves to an idle handle",
    note = "why: work enqueued through it is not recorded into the graph, and it offers blocking calls (`synchronize`, `upload`, `alloc_zeros`, `new_stream`, ...) that break the capture; the capture type-state cannot check a handle that is not a capturing stream",
    note = "help: take `&mut Stream<Capturing<'a>>`, or a generic `S: capture_core::Records<'a>`, and call this function from inside `stream.capture()`"
)]
pub trait CapturableParam<T: ?Sized> {}
impl<T: ?Sized> CapturableParam<T> for Accepted {}

/// Compiles only when `verdict` is [`Accepted`].
pub fn require_capturable<T: ?Sized, V: CapturableParam<T>>(verdict: V) {
    let _ = verdict;
}
