//! Memory: device buffers, pinned host buffers, managed buffers, and graph-owned buffers.

use std::fmt;
use std::marker::PhantomData;

use bytemuck::Pod;

use crate::device::{DevPtr, HostPtr};
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::registry::Deferred;

/// Bytes for `len` elements of `T`, or a typed error.
pub(crate) fn byte_len<T>(op: &'static str, len: usize) -> Result<usize> {
    if len == 0 {
        return Err(Error::ZeroSizedAllocation { op });
    }
    len.checked_mul(std::mem::size_of::<T>().max(1)).ok_or(Error::SizeOverflow {
        op,
        len,
        elem_size: std::mem::size_of::<T>(),
    })
}

/// A host vector of `len` zeroed elements, allocated fallibly: a size the host cannot
/// hold is [`Error::HostOutOfMemory`], never an abort (issue #13, item 1).
pub(crate) fn zeroed_host<T: Pod>(op: &'static str, len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    if v.try_reserve_exact(len).is_err() {
        return Err(Error::HostOutOfMemory { op, bytes: len.saturating_mul(std::mem::size_of::<T>()) });
    }
    v.resize(len, T::zeroed());
    Ok(v)
}

/// A device allocation of `len` elements of `T`.
///
/// Freed when dropped; if a capture is active on its context at that moment, the free is
/// deferred until the capture ends (a free during capture would invalidate it). A
/// [`Graph`](crate::Graph) that uses the buffer borrows it, so it cannot be dropped while
/// the graph lives.
pub struct DeviceBuffer<T> {
    pub(crate) ctx: Handle,
    pub(crate) ptr: DevPtr,
    pub(crate) len: usize,
    _t: PhantomData<T>,
}

impl<T> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceBuffer<{}>({:#x}, len {})", std::any::type_name::<T>(), self.ptr.0, self.len)
    }
}

impl<T> DeviceBuffer<T> {
    pub(crate) fn from_raw(ctx: Handle, ptr: DevPtr, len: usize) -> Self {
        Self { ctx, ptr, len, _t: PhantomData }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Always false: zero-length buffers cannot be allocated.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
}

impl<T> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if let Some(Deferred::Device(p)) = self.ctx.reg().defer(Deferred::Device(self.ptr)) {
            if let Err(code) = self.ctx.b().mem_free(p) {
                log::error!("capture-core: freeing a device buffer of {} bytes failed: {code}", self.num_bytes());
            }
        }
    }
}

/// A managed (unified) allocation: one address valid on host and device. Use it wherever a
/// [`DeviceBuffer`] is taken (it dereferences to one); read and write it from the host only
/// on an idle stream, after synchronizing.
pub struct ManagedBuffer<T> {
    pub(crate) buf: DeviceBuffer<T>,
}

impl<T> std::ops::Deref for ManagedBuffer<T> {
    type Target = DeviceBuffer<T>;
    fn deref(&self) -> &DeviceBuffer<T> {
        &self.buf
    }
}

impl<T: Pod> ManagedBuffer<T> {
    pub(crate) fn host_ptr(&self) -> HostPtr {
        self.buf.ctx.b().managed_host_ptr(self.buf.ptr)
    }
}

/// Page-locked host memory: the only host memory this crate copies to or from
/// asynchronously, so captured copies have a stable source and destination.
///
/// A captured `upload_async` re-reads this buffer at every replay (that is how fresh inputs
/// reach a graph): write new data with [`write`](Self::write) between replays. Host reads and
/// writes are plain copies; order them after the device work that uses the buffer (e.g.
/// after `stream.synchronize()`), or the device may see a half-written buffer.
pub struct PinnedBuffer<T> {
    pub(crate) ctx: Handle,
    pub(crate) ptr: HostPtr,
    pub(crate) len: usize,
    _t: PhantomData<T>,
}

impl<T> fmt::Debug for PinnedBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PinnedBuffer<{}>(len {})", std::any::type_name::<T>(), self.len)
    }
}

impl<T: Pod> PinnedBuffer<T> {
    pub(crate) fn from_raw(ctx: Handle, ptr: HostPtr, len: usize) -> Self {
        Self { ctx, ptr, len, _t: PhantomData }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Always false: zero-length buffers cannot be allocated.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn num_bytes(&self) -> usize {
        self.len * std::mem::size_of::<T>()
    }
    /// Overwrites the whole buffer with `src`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless `src.len() == self.len()`.
    pub fn write(&self, src: &[T]) -> Result<()> {
        if src.len() != self.len {
            return Err(Error::LengthMismatch { op: "PinnedBuffer::write", dst: self.len, src: src.len() });
        }
        self.ctx.b().host_write(self.ptr, 0, bytemuck::cast_slice(src));
        Ok(())
    }
    /// Copies the buffer out.
    pub fn read(&self) -> Vec<T> {
        let mut v = vec![T::zeroed(); self.len];
        self.ctx.b().host_read(self.ptr, 0, bytemuck::cast_slice_mut(&mut v));
        v
    }
    /// Copies the buffer into `dst`.
    ///
    /// # Errors
    /// [`Error::LengthMismatch`] unless `dst.len() == self.len()`.
    pub fn read_into(&self, dst: &mut [T]) -> Result<()> {
        if dst.len() != self.len {
            return Err(Error::LengthMismatch { op: "PinnedBuffer::read_into", dst: dst.len(), src: self.len });
        }
        self.ctx.b().host_read(self.ptr, 0, bytemuck::cast_slice_mut(dst));
        Ok(())
    }
}

impl<T> Drop for PinnedBuffer<T> {
    fn drop(&mut self) {
        if let Some(Deferred::Host(p)) = self.ctx.reg().defer(Deferred::Host(self.ptr)) {
            if let Err(code) = self.ctx.b().host_free(p) {
                log::error!("capture-core: freeing a pinned buffer failed: {code}");
            }
        }
    }
}

/// Memory allocated inside a capture (a graph memory node): it exists only while the graph
/// runs, so it can be used only by operations of the capture that allocated it (anything
/// else is [`Error::ForeignGraphBuffer`]). The graph frees it; dropping the handle does
/// nothing.
pub struct GraphBuffer<T> {
    pub(crate) ptr: DevPtr,
    pub(crate) len: usize,
    pub(crate) capture: u64,
    pub(crate) freed: bool,
    _t: PhantomData<T>,
}

impl<T> fmt::Debug for GraphBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GraphBuffer<{}>(capture #{}, len {})", std::any::type_name::<T>(), self.capture, self.len)
    }
}

impl<T> GraphBuffer<T> {
    pub(crate) fn new(ptr: DevPtr, len: usize, capture: u64) -> Self {
        Self { ptr, len, capture, freed: false, _t: PhantomData }
    }
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Always false.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// The capture this buffer belongs to.
    pub fn capture_id(&self) -> u64 {
        self.capture
    }
}
