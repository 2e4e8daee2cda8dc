//! The unsafe edges of cudarc interop: raw addresses and cudarc's event-tracking switch.

use cudarc::driver::CudaContext;

use crate::buffer::DeviceBuffer;
use crate::module::{KernelParam, ParamKind};

impl<T> DeviceBuffer<T> {
    /// The raw device address, for code that takes `CUdeviceptr`s.
    ///
    /// # Safety
    /// A bare `u64` does not borrow the buffer: a kernel launched (or a graph captured) with
    /// it can outlive the buffer, and then reads freed memory (`CUDA_ERROR_ILLEGAL_ADDRESS`
    /// at best). The caller must keep the buffer alive, and unfreed, for as long as anything
    /// may use the address. To pass the buffer to a kernel, pass `&buffer` (or
    /// [`KernelParam::device_ptr`]), which the graph borrows.
    pub unsafe fn device_ptr(&self) -> u64 {
        self.ptr.0
    }
}

impl KernelParam<'static> {
    /// A raw device address as a kernel argument (for memory this crate cannot see the
    /// owner of). Checked against the parameter's type class as a pointer, but borrowed
    /// from nothing.
    ///
    /// # Safety
    /// The memory at `addr` must be a live device allocation of the launch's context, large
    /// enough for what the kernel accesses, and must stay allocated for as long as the launch
    /// may run — at every replay, when captured: the graph does not borrow it.
    pub unsafe fn raw_device_ptr(addr: u64) -> Self {
        KernelParam::new(ParamKind::Raw(addr))
    }
}

/// Turns cudarc's per-allocation event tracking on or off for `ctx`.
///
/// Called only by `interop::tracking`: off when the first capture of a context begins, back
/// to the value it had when the last one ends.
pub(crate) fn set_event_tracking(ctx: &CudaContext, on: bool) {
    if on {
        // SAFETY: re-enabling restores the state the context had before the capture. cudarc's
        // caveat (slices created while tracking was off keep no events) is documented on
        // `Stream::capture`: allocate before capturing, which this crate requires anyway.
        unsafe { ctx.enable_event_tracking() }
    } else {
        // SAFETY: while a capture is active nothing it records runs, so the events cudarc
        // would record or wait on order nothing; a wait on an event recorded before the
        // capture would instead break it (CUDA_ERROR_STREAM_CAPTURE_ISOLATION). Buffers the
        // capture uses are borrowed by the graph, so none is freed while a replay may use
        // it; the capture ends (and tracking is restored) before the graph first runs, and
        // `Graph::launch` orders replays on the caller's stream.
        unsafe { ctx.disable_event_tracking() }
    }
}
