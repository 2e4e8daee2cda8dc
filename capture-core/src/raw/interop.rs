//! The unsafe edges of cudarc interop: raw addresses. The only file of the raw layer that names
//! types above it: the public `unsafe fn`s of the interop API are declared here, where `unsafe`
//! may be written (see ARCHITECTURE.md).

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
