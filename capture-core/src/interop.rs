//! Interop with cudarc: device memory this crate did not allocate (`CudaSlice`, `CudaView`,
//! `CudaViewMut`) accepted wherever a [`DeviceBuffer`] is, borrowed by the graph like one.

use std::rc::Rc;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, DevicePtr};

use crate::buffer::{DeviceBuffer, ManagedBuffer};
use crate::error::{Error, Result};
use crate::handle::Handle;

/// Which context a piece of device memory belongs to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum MemCtx {
    /// Allocated by this crate in the context whose inner block is at this address.
    Ours(usize),
    /// A cudarc allocation of the CUDA context with this `CUcontext` handle.
    Cudarc(usize),
}

impl MemCtx {
    #[inline]
    pub(crate) fn of(ctx: &Handle) -> Self {
        MemCtx::Ours(Arc::as_ptr(&ctx.inner) as usize)
    }

    /// Whether memory of this context may be used on a stream of `ctx`.
    #[inline]
    pub(crate) fn matches(self, ctx: &Handle) -> bool {
        match self {
            MemCtx::Ours(p) => p == Arc::as_ptr(&ctx.inner) as usize,
            MemCtx::Cudarc(c) => ctx.cudarc().is_some_and(|cu| cu.cu_ctx() as usize == c),
        }
    }
}

/// A view of device memory: address, length in elements and bytes, context.
#[derive(Copy, Clone, Debug)]
#[doc(hidden)]
pub struct MemRef {
    pub(crate) ptr: u64,
    pub(crate) len: usize,
    pub(crate) bytes: usize,
    pub(crate) ctx: MemCtx,
}

impl MemRef {
    /// `Ok` if the memory belongs to `ctx`, else a typed [`Error::ContextMismatch`].
    #[inline]
    pub(crate) fn check(&self, ctx: &Handle, op: &'static str, what: &'static str) -> Result<()> {
        if self.ctx.matches(ctx) {
            Ok(())
        } else {
            Err(Error::ContextMismatch { op, what })
        }
    }
}

pub(crate) mod sealed {
    /// Seals [`DeviceMemory`](super::DeviceMemory): the crate must know how to read the
    /// address and context of every implementor.
    pub trait Sealed {
        fn mem_ref(&self) -> super::MemRef;
    }
}

/// Device memory that a stream operation or kernel argument can use, borrowed for as long
/// as a graph that records the use lives.
///
/// Implemented for [`DeviceBuffer`], [`ManagedBuffer`], [`DeviceScalar`](crate::DeviceScalar) and cudarc's
/// `CudaSlice<T>`, `CudaView<'_, T>` and `CudaViewMut<'_, T>` — and for `&`, `Arc`, `Rc` and
/// `Box` of any of them. Sealed: other memory reaches a kernel through
/// [`KernelParam::raw_device_ptr`](crate::KernelParam::raw_device_ptr), which is `unsafe`
/// because the library cannot see who owns it.
///
/// A cudarc allocation of a context other than the stream's is refused with
/// [`Error::ContextMismatch`].
///
/// cudarc slices: wrap the very `CudaContext` they were allocated from
/// ([`Context::from_cudarc`](crate::Context::from_cudarc)): cudarc's event-tracking switch,
/// which this crate turns off during captures, belongs to that object. Outside a capture, a
/// slice used on a stream other than its own is ordered after its last cudarc write (cudarc
/// makes the slice's stream wait for it), but cudarc does not learn of the use: order later
/// cudarc work on that slice after it yourself, or wrap the slice's own stream.
pub trait DeviceMemory: sealed::Sealed {
    /// The element type.
    type Elem;
    /// Number of elements.
    fn elem_count(&self) -> usize {
        self.mem_ref().len
    }
}

impl<T> sealed::Sealed for DeviceBuffer<T> {
    #[inline]
    fn mem_ref(&self) -> MemRef {
        MemRef { ptr: self.ptr.0, len: self.len, bytes: self.num_bytes(), ctx: MemCtx::of(&self.ctx) }
    }
}
impl<T> DeviceMemory for DeviceBuffer<T> {
    type Elem = T;
}

impl<T> sealed::Sealed for ManagedBuffer<T> {
    #[inline]
    fn mem_ref(&self) -> MemRef {
        self.buf.mem_ref()
    }
}
impl<T> DeviceMemory for ManagedBuffer<T> {
    type Elem = T;
}

/// The address of a cudarc allocation. cudarc hands it out with `DevicePtr::device_ptr`,
/// which (when it tracks events) makes the slice's own stream wait for its last write and
/// records a read when the returned guard drops. During a capture this crate turns
/// cudarc's event tracking off (see `raw::interop`), so no event reaches the capture.
fn cudarc_ref<T, S: DevicePtr<T>>(s: &S) -> MemRef {
    let stream = s.stream();
    let (ptr, _record) = s.device_ptr(stream);
    MemRef { ptr, len: s.len(), bytes: s.num_bytes(), ctx: MemCtx::Cudarc(stream.context().cu_ctx() as usize) }
}

impl<T> sealed::Sealed for CudaSlice<T> {
    #[inline]
    fn mem_ref(&self) -> MemRef {
        cudarc_ref(self)
    }
}
impl<T> DeviceMemory for CudaSlice<T> {
    type Elem = T;
}
impl<T> sealed::Sealed for CudaView<'_, T> {
    #[inline]
    fn mem_ref(&self) -> MemRef {
        cudarc_ref(self)
    }
}
impl<T> DeviceMemory for CudaView<'_, T> {
    type Elem = T;
}
impl<T> sealed::Sealed for CudaViewMut<'_, T> {
    #[inline]
    fn mem_ref(&self) -> MemRef {
        cudarc_ref(self)
    }
}
impl<T> DeviceMemory for CudaViewMut<'_, T> {
    type Elem = T;
}

macro_rules! pointer_impls {
    ($($p:ident),*) => {$(
        impl<M: DeviceMemory + ?Sized> sealed::Sealed for $p<M> {
            #[inline]
            fn mem_ref(&self) -> MemRef {
                (**self).mem_ref()
            }
        }
        impl<M: DeviceMemory + ?Sized> DeviceMemory for $p<M> {
            type Elem = M::Elem;
        }
    )*};
}
pointer_impls!(Arc, Rc, Box);

impl<M: DeviceMemory + ?Sized> sealed::Sealed for &M {
    #[inline]
    fn mem_ref(&self) -> MemRef {
        (**self).mem_ref()
    }
}
impl<M: DeviceMemory + ?Sized> DeviceMemory for &M {
    type Elem = M::Elem;
}

/// cudarc's event tracking, off for the length of every capture of a context.
///
/// cudarc records an event per `CudaSlice` use and makes the next user wait on it. Once a
/// program has a second stream, a launch inside a capture would wait on an event recorded
/// before the capture began, which breaks the capture with
/// `CUDA_ERROR_STREAM_CAPTURE_ISOLATION`. So tracking is switched off when the first
/// capture of a context begins and restored to its previous value when the last one ends
/// (counted, so nested and multi-stream captures work), on every path: `finish`, drop,
/// `?`, panic.
pub(crate) mod tracking {
    use std::sync::Mutex;

    use crate::handle::Handle;

    /// (cudarc context object's address, active captures, tracking before the first one).
    static TABLE: Mutex<Vec<(usize, usize, bool)>> = Mutex::new(Vec::new());

    /// Counts one more capture of `key`; on the first, saves `read()` and switches off.
    pub(crate) fn enter_with(
        table: &Mutex<Vec<(usize, usize, bool)>>,
        key: usize,
        read: impl FnOnce() -> bool,
        set: impl FnOnce(bool),
    ) {
        let mut t = table.lock().unwrap_or_else(|p| p.into_inner());
        match t.iter_mut().find(|e| e.0 == key) {
            Some(e) => e.1 += 1,
            None => {
                let was = read();
                if was {
                    set(false);
                }
                t.push((key, 1, was));
            }
        }
    }

    /// Counts one capture of `key` less; on the last, restores the saved value.
    pub(crate) fn leave_with(table: &Mutex<Vec<(usize, usize, bool)>>, key: usize, set: impl FnOnce(bool)) {
        let mut t = table.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = t.iter().position(|e| e.0 == key) {
            t[i].1 -= 1;
            if t[i].1 == 0 {
                let (_, _, was) = t.swap_remove(i);
                if was {
                    set(true);
                }
            }
        }
    }

    /// A capture of `ctx` begins (no-op on the simulated device).
    pub(crate) fn enter(ctx: &Handle) {
        if let Some(cu) = ctx.cudarc() {
            enter_with(
                &TABLE,
                std::sync::Arc::as_ptr(cu) as usize,
                || cu.is_event_tracking(),
                |on| crate::raw::cuda::set_event_tracking(cu, on),
            );
        }
    }

    /// A capture of `ctx` ended.
    pub(crate) fn leave(ctx: &Handle) {
        if let Some(cu) = ctx.cudarc() {
            leave_with(&TABLE, std::sync::Arc::as_ptr(cu) as usize, |on| crate::raw::cuda::set_event_tracking(cu, on));
        }
    }

    #[cfg(test)]
    mod tests {
        use std::cell::Cell;

        use super::*;

        // Issue #9, part 3: tracking is off for the length of every capture and restored
        // once, by the last one to end (nested / multi-stream captures).
        #[test]
        fn counted_and_restored_once() {
            let table = Mutex::new(Vec::new());
            let on = Cell::new(true);
            let sets = Cell::new(0);
            let set = |v: bool| {
                on.set(v);
                sets.set(sets.get() + 1);
            };
            enter_with(&table, 7, || on.get(), set);
            assert!(!on.get());
            enter_with(&table, 7, || on.get(), set);
            leave_with(&table, 7, set);
            assert!(!on.get(), "still off while a capture is active");
            leave_with(&table, 7, set);
            assert!(on.get());
            assert_eq!(sets.get(), 2);
            // A context whose tracking was already off stays off.
            on.set(false);
            enter_with(&table, 8, || on.get(), set);
            leave_with(&table, 8, set);
            assert!(!on.get());
            assert!(table.lock().unwrap().is_empty());
        }
    }
}
