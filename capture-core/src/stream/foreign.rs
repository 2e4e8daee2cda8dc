//! The simulated device's models of cudarc calls issued on a [`Stream`] behind this crate's
//! back, for tests of what a capture cannot see. They take a `Stream`, so they live in the
//! capture layer, on the simulator's type.

use crate::buffer::DeviceBuffer;
use crate::device::sim::SimDevice;
use crate::device::DevPtr;
use crate::error::DriverCode;
use crate::state::StreamState;
use crate::stream::Stream;

impl SimDevice {
    /// Models a cudarc `CudaStream::memcpy_htod` from a `Vec` (pageable memory) issued on
    /// `stream` behind this crate's back: an asynchronous copy the library does not see.
    /// Eagerly it copies now; during a capture the driver records a copy node that reads the
    /// host address at every replay — here, replays write the bytes `src` held at capture
    /// time (stale data, like the GPU's at best). It is listed in
    /// [`CaptureReport::unpinned_host_copies`](crate::CaptureReport::unpinned_host_copies).
    ///
    /// # Errors
    /// The driver's code (`CUDA_ERROR_INVALID_VALUE` for a copy past the buffer's end).
    pub fn foreign_memcpy_htod<T: bytemuck::Pod, S: StreamState>(
        &self,
        stream: &Stream<S>,
        dst: &DeviceBuffer<T>,
        src: &[T],
    ) -> Result<(), DriverCode> {
        let data: Vec<u8> = bytemuck::cast_slice(src).to_vec();
        if data.len() > dst.num_bytes() {
            return Err(DriverCode::INVALID_VALUE);
        }
        self.foreign_host_copy(stream.raw, dst.ptr, data)
    }

    /// Models a cudarc stream-ordered allocation (`CudaStream::alloc_zeros` with
    /// `cuMemAllocAsync`) issued on `stream` behind this crate's back: during a capture the
    /// driver records a memory allocation node that the graph does not free. Relaunching such
    /// a graph needs the allocation freed first ([`foreign_free_async`](Self::foreign_free_async))
    /// or a graph instantiated with
    /// [`InstantiateFlags::auto_free_on_launch`](crate::InstantiateFlags::auto_free_on_launch).
    /// Returns the device address.
    ///
    /// # Errors
    /// The driver's code (`CUDA_ERROR_INVALID_VALUE` for zero bytes).
    pub fn foreign_alloc_async<S: StreamState>(&self, stream: &Stream<S>, bytes: usize) -> Result<u64, DriverCode> {
        let p = self.mem_alloc_async(bytes, stream.raw)?;
        self.label_foreign_op(stream.raw, "cudarc alloc_zeros (cuMemAllocAsync, issued behind the library's back)");
        Ok(p.0)
    }

    /// Models a cudarc `cuMemFreeAsync` of `ptr` on `stream` behind this crate's back: outside
    /// a capture it frees device memory, or a graph allocation a launch left live.
    ///
    /// # Errors
    /// The driver's code (`CUDA_ERROR_INVALID_VALUE` for an address that is not allocated).
    pub fn foreign_free_async<S: StreamState>(&self, stream: &Stream<S>, ptr: u64) -> Result<(), DriverCode> {
        self.mem_free_async(DevPtr(ptr), stream.raw)?;
        self.label_foreign_op(stream.raw, "cudarc free (cuMemFreeAsync, issued behind the library's back)");
        Ok(())
    }

    /// Models a cudarc `CudaStream::synchronize` on `stream` behind this crate's back: on a
    /// capturing stream the driver refuses it with `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`
    /// and invalidates the capture.
    ///
    /// # Errors
    /// The driver's code.
    pub fn foreign_synchronize<S: StreamState>(&self, stream: &Stream<S>) -> Result<(), DriverCode> {
        self.stream_synchronize(stream.raw)
    }
}
