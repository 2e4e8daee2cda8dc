//! The raw layer: every `unsafe` call into cudarc's `sys`/`result` modules lives here, as a
//! thin function with a `# Safety` section, each block with a `// SAFETY:` comment.
//!
//! Handles cross this boundary as integers (`usize`/`u64`); turning an integer back into a
//! driver handle is a plain cast, and only the driver ever dereferences it.
//!
//! Rules these functions rely on come from NVIDIA's driver API reference:
//! <https://docs.nvidia.com/cuda/cuda-driver-api/>.

#![allow(unsafe_code)]

#[cfg(feature = "cublas")]
pub(crate) mod blas;
mod capture;
pub(crate) mod code;
pub(crate) mod coll;
pub(crate) mod cuda;
pub(crate) mod graph;
pub(crate) mod half;
pub(crate) mod handles;
pub(crate) mod inspect;
pub(crate) mod interop;
mod memory;
#[cfg(feature = "nccl")]
pub(crate) mod nccl;
pub(crate) mod site;

use std::ffi::{c_void, CString};
use std::mem::MaybeUninit;

use cudarc::driver::{result, sys};

pub(crate) use capture::*;
pub(crate) use memory::*;

use code::DriverCode;
use handles::{CaptureMode, CaptureStatus, CondKind, NodeCounts};

type R<T> = Result<T, DriverCode>;

fn code(r: sys::CUresult) -> R<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(DriverCode(r as u32))
    }
}

fn err(e: result::DriverError) -> DriverCode {
    DriverCode(e.0 as u32)
}

fn stream(s: usize) -> sys::CUstream {
    s as sys::CUstream
}

/// Whether `libcuda` can be loaded. Never panics (cudarc's loader panics when the library is
/// missing, so every other function here must only be called after this returned `true`).
///
/// With the `dynamic-loading` feature (the default) this tries to load the library. Without
/// it, the application's cudarc features decide how libcuda is found; when they link it
/// (`dynamic-linking`, as candle does) the program could not have started without it, so it
/// is present. An application that turns capture-core's default features off but loads CUDA
/// at run time should enable capture-core's `dynamic-loading` too, so that a missing library
/// is detected here instead of panicking inside cudarc.
pub(crate) fn driver_present() -> bool {
    #[cfg(feature = "dynamic-loading")]
    {
        // SAFETY: `is_culib_present` only tries to dlopen the library; it has no preconditions.
        unsafe { sys::is_culib_present() }
    }
    #[cfg(not(feature = "dynamic-loading"))]
    {
        true
    }
}

/// Creates a non-blocking stream in the current context.
pub(crate) fn stream_create() -> R<usize> {
    result::stream::create(result::stream::StreamKind::NonBlocking).map(|s| s as usize).map_err(err)
}

/// # Safety
/// `s` must be a live stream not used afterwards.
pub(crate) unsafe fn stream_destroy(s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::stream::destroy(stream(s)) }.map_err(err)
}

/// # Safety
/// `s` must be a live stream.
pub(crate) unsafe fn stream_synchronize(s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::stream::synchronize(stream(s)) }.map_err(err)
}

/// Ok(true) when the stream has no pending work.
///
/// # Safety
/// `s` must be a live stream.
pub(crate) unsafe fn stream_query(s: usize) -> R<bool> {
    // SAFETY: forwarded to the caller.
    match unsafe { sys::cuStreamQuery(stream(s)) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => Err(DriverCode(other as u32)),
    }
}

/// Synchronizes the current context.
pub(crate) fn ctx_synchronize() -> R<()> {
    result::ctx::synchronize().map_err(err)
}

/// Creates an event; `timing` false adds `CU_EVENT_DISABLE_TIMING`.
pub(crate) fn event_create(timing: bool) -> R<usize> {
    let flags = if timing { sys::CUevent_flags::CU_EVENT_DEFAULT } else { sys::CUevent_flags::CU_EVENT_DISABLE_TIMING };
    result::event::create(flags).map(|e| e as usize).map_err(err)
}

/// # Safety
/// `e` must be a live event not used afterwards.
pub(crate) unsafe fn event_destroy(e: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::event::destroy(e as sys::CUevent) }.map_err(err)
}

/// # Safety
/// `e` and `s` must be live and of the current context.
pub(crate) unsafe fn event_record(e: usize, s: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::event::record(e as sys::CUevent, stream(s)) }.map_err(err)
}

/// # Safety
/// `e` and `s` must be live.
pub(crate) unsafe fn stream_wait_event(s: usize, e: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::stream::wait_event(stream(s), e as sys::CUevent, sys::CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT) }
        .map_err(err)
}

/// Ok(true) when complete.
///
/// # Safety
/// `e` must be live.
pub(crate) unsafe fn event_query(e: usize) -> R<bool> {
    // SAFETY: forwarded to the caller.
    match unsafe { sys::cuEventQuery(e as sys::CUevent) } {
        sys::CUresult::CUDA_SUCCESS => Ok(true),
        sys::CUresult::CUDA_ERROR_NOT_READY => Ok(false),
        other => Err(DriverCode(other as u32)),
    }
}

/// # Safety
/// `e` must be live.
pub(crate) unsafe fn event_synchronize(e: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::event::synchronize(e as sys::CUevent) }.map_err(err)
}

/// # Safety
/// Both events must be live, created with timing, and recorded.
pub(crate) unsafe fn event_elapsed_ms(start: usize, end: usize) -> R<f32> {
    // SAFETY: forwarded to the caller.
    unsafe { result::event::elapsed(start as sys::CUevent, end as sys::CUevent) }.map_err(err)
}

/// Loads a PTX module from text.
///
/// # Safety
/// A context must be current on this thread.
pub(crate) unsafe fn module_load(ptx: &str) -> R<usize> {
    let image = CString::new(ptx).map_err(|_| DriverCode::INVALID_VALUE)?;
    // SAFETY: `image` is a NUL-terminated PTX string that outlives the call.
    unsafe { result::module::load_data(image.as_ptr() as *const c_void) }.map(|m| m as usize).map_err(err)
}

/// # Safety
/// `m` must be a live module whose functions are no longer launched or in live graphs.
pub(crate) unsafe fn module_unload(m: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe { result::module::unload(m as sys::CUmodule) }.map_err(err)
}

/// # Safety
/// `m` must be a live module.
pub(crate) unsafe fn module_function(m: usize, name: &str) -> R<usize> {
    let cname = CString::new(name).map_err(|_| DriverCode::INVALID_VALUE)?;
    // SAFETY: `m` is live (caller), `cname` is NUL-terminated and outlives the call.
    unsafe { result::module::get_function(m as sys::CUmodule, cname) }.map(|f| f as usize).map_err(err)
}

/// Launches `f` with one 8-byte slot per parameter.
///
/// # Safety
/// `f` must be a live function whose parameters are, in order, at most 8 bytes each and
/// described by `slots` (validated against the PTX signature by the caller); every device
/// address in `slots` must stay live until the kernel completes — at every replay, if
/// captured; `s` must be a live stream.
#[inline]
pub(crate) unsafe fn launch(
    f: usize,
    grid: (u32, u32, u32),
    block: (u32, u32, u32),
    shared: u32,
    s: usize,
    slots: &mut [u64],
) -> R<()> {
    const MAX: usize = handles::MAX_KERNEL_ARGS;
    if slots.len() > MAX {
        return Err(DriverCode::INVALID_VALUE);
    }
    let mut ptrs = [std::ptr::null_mut::<c_void>(); MAX];
    for (p, slot) in ptrs.iter_mut().zip(slots.iter_mut()) {
        *p = slot as *mut u64 as *mut c_void;
    }
    // SAFETY: each pointer in `ptrs` points at a live u64 slot for the duration of the call
    // (the driver copies parameter values at launch); the rest is forwarded to the caller.
    unsafe { result::launch_kernel(f as sys::CUfunction, grid, block, shared, stream(s), &mut ptrs[..slots.len()]) }
        .map_err(err)
}

/// The driver's API version (e.g. 13000 for CUDA 13.0).
pub(crate) fn driver_version() -> R<i32> {
    let mut v = 0;
    // SAFETY: writes one int.
    code(unsafe { sys::cuDriverGetVersion(&mut v) })?;
    Ok(v)
}

// SAFETY: `F16` and `Bf16` are `repr(transparent)` wrappers of a `u16`: no padding, and every
// bit pattern is a valid value (NaNs included), so they are plain old data.
unsafe impl bytemuck::Zeroable for half::F16 {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for half::F16 {}
// SAFETY: as above.
unsafe impl bytemuck::Zeroable for half::Bf16 {}
// SAFETY: as above.
unsafe impl bytemuck::Pod for half::Bf16 {}
