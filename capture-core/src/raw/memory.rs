//! Memory: device, pinned and managed allocations, copies and memsets, advice and prefetch,
//! and the device's graph-memory pool.

#![allow(unsafe_code)]

#[allow(unused_imports)]
use super::*;

/// # Safety
/// `ptr` must be a live device allocation of at least `bytes` bytes in the current context.
pub(crate) unsafe fn mem_free(ptr: u64) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::free_sync(ptr) }.map_err(err)
}

/// Allocates `bytes` of device memory synchronously. The contents are undefined.
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn mem_alloc(bytes: usize) -> R<u64> {
    // SAFETY: the returned memory is untyped device memory; nothing is read from it here.
    unsafe { result::malloc_sync(bytes) }.map_err(err)
}

/// # Safety
/// `s` must be a live stream of the current context.
pub(crate) unsafe fn mem_alloc_async(bytes: usize, s: usize) -> R<u64> {
    // SAFETY: stream validity forwarded to the caller; the memory is untyped.
    unsafe { result::malloc_async(stream(s), bytes) }.map_err(err)
}

/// # Safety
/// `ptr` must be a live device allocation; `s` a live stream; nothing may use `ptr` after
/// the free in stream order.
pub(crate) unsafe fn mem_free_async(ptr: u64, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::free_async(ptr, stream(s)) }.map_err(err)
}

/// Allocates page-locked host memory (`cuMemHostAlloc`).
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn host_alloc(bytes: usize) -> R<usize> {
    // SAFETY: flags 0 = portable-less default; the memory is untyped bytes.
    unsafe { result::malloc_host(bytes, 0) }.map(|p| p as usize).map_err(err)
}

/// # Safety
/// `ptr` must come from [`host_alloc`] and not be used afterwards.
pub(crate) unsafe fn host_free(ptr: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::free_host(ptr as *mut c_void) }.map_err(err)
}

/// Allocates managed memory attached globally.
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn managed_alloc(bytes: usize) -> R<u64> {
    // SAFETY: the memory is untyped; CU_MEM_ATTACH_GLOBAL makes it accessible from any stream.
    unsafe { result::malloc_managed(bytes, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL) }.map_err(err)
}

/// Writes `src` into host-visible memory at `dst + offset`.
///
/// # Safety
/// `dst` must be a live pinned or managed allocation of at least `offset + src.len()` bytes,
/// and no device operation may be writing it concurrently.
pub(crate) unsafe fn host_write(dst: usize, offset: usize, src: &[u8]) {
    // SAFETY: bounds and exclusivity are forwarded to the caller; the regions cannot overlap
    // because `src` is a Rust slice and `dst` is driver-allocated memory.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), (dst as *mut u8).add(offset), src.len()) }
}

/// Reads host-visible memory at `src + offset` into `dst`.
///
/// # Safety
/// As [`host_write`], for reading.
pub(crate) unsafe fn host_read(src: usize, offset: usize, dst: &mut [u8]) {
    // SAFETY: as in `host_write`.
    unsafe { std::ptr::copy_nonoverlapping((src as *const u8).add(offset), dst.as_mut_ptr(), dst.len()) }
}

/// Zeroes `bytes` of host-visible memory at `dst`.
///
/// # Safety
/// As [`host_write`], for `bytes` bytes.
pub(crate) unsafe fn host_zero(dst: usize, bytes: usize) {
    // SAFETY: bounds and exclusivity are forwarded to the caller.
    unsafe { std::ptr::write_bytes(dst as *mut u8, 0, bytes) }
}

/// Synchronous host-to-device copy.
///
/// # Safety
/// `dst` must be a live device allocation with room for `src.len()` bytes.
pub(crate) unsafe fn memcpy_htod(dst: u64, src: &[u8]) -> R<()> {
    // SAFETY: forwarded to the caller; the copy is complete when this returns.
    unsafe { result::memcpy_htod_sync(dst, src) }.map_err(err)
}

/// Synchronous device-to-host copy.
///
/// # Safety
/// `src` must be a live device allocation of at least `dst.len()` bytes.
pub(crate) unsafe fn memcpy_dtoh(dst: &mut [u8], src: u64) -> R<()> {
    // SAFETY: forwarded to the caller; the copy is complete when this returns.
    unsafe { result::memcpy_dtoh_sync(dst, src) }.map_err(err)
}

/// # Safety
/// `dst` must be a live device allocation of at least `bytes` bytes.
// Only the probe-conformance tests use the synchronous memset (the driver rule for a
// sync memset during capture); the library's own memsets are stream-ordered.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) unsafe fn memset_d8(dst: u64, value: u8, bytes: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::memset_d8_sync(dst, value, bytes) }.map_err(err)
}

/// # Safety
/// `dst`, `src` (pinned host memory) must stay live until the copy completes — at every
/// replay, if captured; `s` must be a live stream.
pub(crate) unsafe fn memcpy_htod_async(dst: u64, src: usize, bytes: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    code(unsafe { sys::cuMemcpyHtoDAsync_v2(dst, src as *const c_void, bytes, stream(s)) })
}

/// # Safety
/// As [`memcpy_htod_async`].
pub(crate) unsafe fn memcpy_dtoh_async(dst: usize, src: u64, bytes: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    code(unsafe { sys::cuMemcpyDtoHAsync_v2(dst as *mut c_void, src, bytes, stream(s)) })
}

/// # Safety
/// Both allocations live until the copy completes; `s` a live stream.
pub(crate) unsafe fn memcpy_dtod_async(dst: u64, src: u64, bytes: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::memcpy_dtod_async(dst, src, bytes, stream(s)) }.map_err(err)
}

/// # Safety
/// `dst` lives until the memset completes; `s` a live stream.
pub(crate) unsafe fn memset_d8_async(dst: u64, value: u8, bytes: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::memset_d8_async(dst, value, bytes, stream(s)) }.map_err(err)
}

/// (free, total) bytes on the current context's device.
pub(crate) fn mem_info() -> R<(usize, usize)> {
    result::mem_get_info().map_err(err)
}

pub(super) fn location(to_device: Option<i32>) -> sys::CUmemLocation {
    match to_device {
        Some(id) => sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE, id },
        None => sys::CUmemLocation { type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_HOST, id: 0 },
    }
}

/// Advises the driver about a managed range: `preferred` sets the preferred location,
/// otherwise "accessed by"; `to_device` names the device ordinal, `None` the host.
///
/// # Safety
/// `ptr..ptr+bytes` must be a live managed allocation.
pub(crate) unsafe fn mem_advise(ptr: u64, bytes: usize, preferred: bool, to_device: Option<i32>) -> R<()> {
    let advice = if preferred {
        sys::CUmem_advise::CU_MEM_ADVISE_SET_PREFERRED_LOCATION
    } else {
        sys::CUmem_advise::CU_MEM_ADVISE_SET_ACCESSED_BY
    };
    // SAFETY: forwarded to the caller; the location is passed by value.
    code(unsafe { sys::cuMemAdvise_v2(ptr, bytes, advice, location(to_device)) })
}

/// Prefetches a managed range to a device (`Some(ordinal)`) or the host, in stream order.
///
/// # Safety
/// The range must be a live managed allocation until the prefetch completes; `s` live.
pub(crate) unsafe fn mem_prefetch_async(ptr: u64, bytes: usize, to_device: Option<i32>, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    code(unsafe { sys::cuMemPrefetchAsync_v2(ptr, bytes, location(to_device), 0, stream(s)) })
}

/// The device's graph-memory pool figures: (used now, used high, reserved now, reserved high)
/// in bytes, from `cuDeviceGetGraphMemAttribute`.
///
/// # Safety
/// `device` must be a device handle from the driver.
pub(crate) unsafe fn graph_mem_usage(device: sys::CUdevice) -> R<[u64; 4]> {
    use sys::CUgraphMem_attribute as A;
    let mut out = [0u64; 4];
    for (slot, attr) in out.iter_mut().zip([
        A::CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT,
        A::CU_GRAPH_MEM_ATTR_USED_MEM_HIGH,
        A::CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT,
        A::CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH,
    ]) {
        // SAFETY: these four attributes are `cuuint64_t` values; `slot` is a live u64.
        code(unsafe { sys::cuDeviceGetGraphMemAttribute(device, attr, (slot as *mut u64).cast()) })?;
    }
    Ok(out)
}

/// Resets the device's graph-memory high-water marks (`USED_MEM_HIGH`, `RESERVED_MEM_HIGH`).
///
/// # Safety
/// `device` must be a device handle from the driver.
pub(crate) unsafe fn graph_mem_reset_high(device: sys::CUdevice) -> R<()> {
    use sys::CUgraphMem_attribute as A;
    for attr in [A::CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, A::CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH] {
        let mut zero = 0u64;
        // SAFETY: resetting a high-water mark takes a pointer to the value 0 (`cuuint64_t`).
        code(unsafe { sys::cuDeviceSetGraphMemAttribute(device, attr, (&mut zero as *mut u64).cast()) })?;
    }
    Ok(())
}

/// Returns graph memory not used by a graph that is executing or scheduled back to the OS.
///
/// # Safety
/// `device` must be a device handle from the driver.
pub(crate) unsafe fn graph_mem_trim(device: sys::CUdevice) -> R<()> {
    // SAFETY: forwarded to the caller.
    code(unsafe { sys::cuDeviceGraphMemTrim(device) })
}
