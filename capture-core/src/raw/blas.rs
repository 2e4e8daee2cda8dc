//! cuBLAS FFI wrappers (feature `cublas`). cuBLAS statuses are reported as
//! `DriverCode(BLAS_STATUS_BASE | status)`.

use std::ffi::c_void;

use cudarc::cublas::sys;

use crate::raw::code::DriverCode;
use crate::raw::handles::Gemm;

type R<T> = Result<T, DriverCode>;

fn status(s: sys::cublasStatus_t) -> R<()> {
    if s == sys::cublasStatus_t::CUBLAS_STATUS_SUCCESS {
        Ok(())
    } else {
        Err(DriverCode(DriverCode::BLAS_STATUS_BASE | s as u32))
    }
}

/// Whether libcublas can be loaded (cudarc panics on a missing library otherwise).
/// Without capture-core's `dynamic-loading` feature the library is linked (see
/// `raw::driver_present`), so present.
pub(crate) fn present() -> bool {
    #[cfg(feature = "dynamic-loading")]
    {
        // SAFETY: only tries to dlopen the library.
        unsafe { sys::is_culib_present() }
    }
    #[cfg(not(feature = "dynamic-loading"))]
    {
        true
    }
}

/// # Safety
/// A context must be current; [`present`] must have returned true.
pub(crate) unsafe fn create() -> R<usize> {
    let mut h: sys::cublasHandle_t = std::ptr::null_mut();
    // SAFETY: `h` is a valid out-pointer.
    status(unsafe { sys::cublasCreate_v2(&mut h) })?;
    Ok(h as usize)
}

/// # Safety
/// `h` from [`create`], not used afterwards.
pub(crate) unsafe fn destroy(h: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    status(unsafe { sys::cublasDestroy_v2(h as sys::cublasHandle_t) })
}

/// Binds the handle to a stream and gives it its workspace, so it never allocates.
///
/// # Safety
/// `h` live; `s` a live stream; `ws..ws+bytes` live device memory for as long as the handle
/// (or any graph captured through it) is used.
pub(crate) unsafe fn bind(h: usize, s: usize, ws: u64, bytes: usize) -> R<()> {
    // SAFETY: forwarded to the caller.
    unsafe {
        status(sys::cublasSetStream_v2(h as sys::cublasHandle_t, s as sys::cudaStream_t))?;
        status(sys::cublasSetWorkspace_v2(h as sys::cublasHandle_t, ws as *mut c_void, bytes))
    }
}

/// Single-precision GEMM, column-major, host-pointer alpha/beta.
///
/// # Safety
/// `h` live and bound; the matrices' extents were checked against their buffers by the
/// caller; the buffers live until the GEMM completes (every replay, if captured).
pub(crate) unsafe fn sgemm(h: usize, g: &Gemm) -> R<()> {
    let op = |t: bool| if t { sys::cublasOperation_t::CUBLAS_OP_T } else { sys::cublasOperation_t::CUBLAS_OP_N };
    // SAFETY: forwarded to the caller; alpha/beta point at `g`'s fields for the call (cuBLAS
    // reads host scalars before returning, also when captured).
    status(unsafe {
        sys::cublasSgemm_v2(
            h as sys::cublasHandle_t,
            op(g.trans_a),
            op(g.trans_b),
            g.m,
            g.n,
            g.k,
            &g.alpha,
            g.a.0 as *const f32,
            g.lda,
            g.b.0 as *const f32,
            g.ldb,
            &g.beta,
            g.c.0 as *mut f32,
            g.ldc,
        )
    })
}
