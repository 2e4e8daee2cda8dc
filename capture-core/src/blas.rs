//! `Blas`: a cuBLAS handle bound to a stream with its workspace set before capture, so a
//! GEMM recorded into a graph allocates nothing (feature `cublas`).

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;

use std::sync::Arc;

use cudarc::cublas::CudaBlas;

use crate::buffer::DeviceBuffer;
use crate::device::{DevPtr, Gemm};
use crate::error::{CallSite, DriverCode, Error, Result};
use crate::interop::{DeviceMemory, MemRef};
use crate::state::{Idle, Records};
use crate::stream::Stream;

/// A cuBLAS handle with its own pre-allocated workspace.
///
/// cuBLAS allocates a workspace on first use unless given one; inside a capture that
/// allocation invalidates it (or hangs on some systems). `Blas::new` allocates the workspace
/// on an idle stream and binds it, so GEMMs issued on a capturing stream record kernel
/// nodes only. The handle is borrowed by graphs that use it (its workspace is read at
/// every replay). Not `Sync`: a cuBLAS handle is used from one thread at a time.
///
/// Run each GEMM shape once on an idle stream before capturing it: CUDA loads a kernel's
/// code on first use (lazy module loading), and on an H100 the first SGEMM inside a capture
/// can grow device memory that way (the capture itself stays valid and records no
/// allocation). On an H100 the first GEMM and a context's first graph together kept 2 MiB
/// of driver state; after that, capturing, instantiating, replaying and dropping a GEMM
/// graph left device memory in use unchanged (`tests/tests/blas.rs`).
///
/// ```
/// # use capture_core::*;
/// # fn main() -> Result<()> {
/// # let ctx = Context::simulated();
/// let mut stream = ctx.new_stream()?;
/// let blas = Blas::new(&mut stream, Blas::DEFAULT_WORKSPACE)?;
/// let a = stream.upload_new(&[1.0f32, 2.0, 3.0, 4.0])?; // 2x2, column-major
/// let c = stream.alloc_zeros::<f32>(4)?;
/// let mut g = stream.capture()?;
/// blas.sgemm(g.stream(), Transpose::No, Transpose::No, (2, 2, 2), 1.0, (&a, 2), (&a, 2), 0.0, (&c, 2))?;
/// let (graph, report) = g.finish()?;
/// assert_eq!(report.nodes.mem_alloc, 0);
/// graph.launch(&mut stream)?;
/// assert_eq!(stream.download(&c)?, vec![7.0, 10.0, 15.0, 22.0]);
/// # Ok(()) }
/// ```
pub struct Blas {
    handle: usize,
    workspace: DeviceBuffer<u8>,
    /// The cudarc handle this wraps, if any: it owns `handle` (destroys it on drop).
    cudarc: Option<Arc<CudaBlas>>,
    _not_sync: PhantomData<Cell<()>>,
}

/// Whether a GEMM operand is used as stored or transposed.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Transpose {
    /// As stored.
    No,
    /// Transposed.
    Yes,
}

impl fmt::Debug for Blas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Blas(workspace {} bytes)", self.workspace.len())
    }
}

fn dim(name: &str, v: usize) -> Result<i32> {
    i32::try_from(v)
        .map_err(|_| Error::InvalidGemm { reason: format!("{name} = {v} does not fit cuBLAS's 32-bit int") })
}

fn fits(name: &str, buf: &MemRef, ld: usize, rows: usize, cols: usize) -> Result<()> {
    if ld < rows.max(1) {
        return Err(Error::InvalidGemm {
            reason: format!("leading dimension of {name} is {ld}, less than its {rows} rows"),
        });
    }
    let need = ld.checked_mul(cols.saturating_sub(1)).and_then(|x| x.checked_add(rows)).unwrap_or(usize::MAX);
    if need > buf.len {
        return Err(Error::InvalidGemm {
            reason: format!(
                "{name} is {rows}x{cols} with leading dimension {ld}: needs {need} elements, its buffer has {}",
                buf.len
            ),
        });
    }
    Ok(())
}

impl Blas {
    /// cuBLAS's recommended workspace on Hopper: 32 MiB.
    pub const DEFAULT_WORKSPACE: usize = 32 << 20;

    /// Creates a handle bound to `stream` with a workspace of `workspace_bytes`.
    ///
    /// # Errors
    /// [`Error::Driver`] with a `CUBLAS_STATUS_*` code when cuBLAS cannot be loaded or
    /// initialised; allocation errors.
    pub fn new(stream: &mut Stream<Idle>, workspace_bytes: usize) -> Result<Self> {
        let workspace = stream.alloc_zeros::<u8>(workspace_bytes)?;
        let b = stream.ctx.b();
        let handle = b.blas_create().map_err(|code| Error::Driver { op: "cublasCreate", code })?;
        let blas = Self { handle, workspace, cudarc: None, _not_sync: PhantomData };
        b.blas_bind(handle, stream.raw, blas.workspace.ptr, workspace_bytes)
            .map_err(|code| Error::Driver { op: "cublasSetWorkspace", code })?;
        Ok(blas)
    }

    /// Wraps an existing cudarc cuBLAS handle, so GEMMs issued through it can be captured:
    /// a workspace of `workspace_bytes` is allocated on the idle `stream` and set on the
    /// handle before any capture (cuBLAS would otherwise allocate one inside the capture),
    /// the handle is bound to `stream`, and its pointer mode set to host (this type passes
    /// `alpha`/`beta` from the host). The cudarc handle stays alive as long as this value,
    /// and is destroyed by cudarc, not here.
    ///
    /// cuBLAS binds one stream per handle: from now on GEMMs issued through the cudarc
    /// handle itself also go to the stream of the last [`sgemm`](Self::sgemm). Pass the
    /// [`Stream`] that wraps the handle's own cudarc stream
    /// ([`Context::wrap_cudarc_stream`](crate::Context::wrap_cudarc_stream)) to keep the
    /// two views the same.
    ///
    /// cudarc does not say which stream or context a `CudaBlas` was made for, so a handle of
    /// another context is reported by cuBLAS at the first GEMM, not here.
    ///
    /// # Errors
    /// [`Error::ContextMismatch`] on the simulated device; allocation errors; [`Error::Driver`] with a `CUBLAS_STATUS_*` code.
    pub fn from_cudarc(stream: &mut Stream<Idle>, blas: Arc<CudaBlas>, workspace_bytes: usize) -> Result<Self> {
        let op = "Blas::from_cudarc";
        if stream.context().cudarc().is_none() {
            return Err(Error::ContextMismatch { op, what: "cuBLAS handle (the simulated device has none)" });
        }
        let workspace = stream.alloc_zeros::<u8>(workspace_bytes)?;
        blas.set_pointer_mode(cudarc::cublas::sys::cublasPointerMode_t::CUBLAS_POINTER_MODE_HOST).map_err(|e| {
            Error::Driver { op: "cublasSetPointerMode", code: DriverCode(DriverCode::BLAS_STATUS_BASE | e.0 as u32) }
        })?;
        let handle = *blas.handle() as usize;
        let b = stream.context().b();
        b.blas_bind(handle, stream.raw, workspace.ptr, workspace_bytes)
            .map_err(|code| Error::Driver { op: "cublasSetWorkspace", code })?;
        Ok(Self { handle, workspace, cudarc: Some(blas), _not_sync: PhantomData })
    }

    /// `C = alpha * op(A) * op(B) + beta * C` in single precision, column-major, on
    /// `stream` — eagerly, or recorded into the graph when it is capturing. `mnk` is
    /// `(m, n, k)`: op(A) is m x k, op(B) is k x n, C is m x n; each matrix comes with its
    /// leading dimension. The shapes are checked against the buffers first.
    ///
    /// # Errors
    /// [`Error::InvalidGemm`], [`Error::ContextMismatch`], [`Error::Driver`].
    #[allow(clippy::too_many_arguments)]
    #[track_caller]
    pub fn sgemm<'a, S, A, B, C>(
        &'a self,
        stream: &mut Stream<S>,
        trans_a: Transpose,
        trans_b: Transpose,
        mnk: (usize, usize, usize),
        alpha: f32,
        a: (&'a A, usize),
        b: (&'a B, usize),
        beta: f32,
        c: (&'a C, usize),
    ) -> Result<()>
    where
        S: Records<'a>,
        A: DeviceMemory<Elem = f32> + ?Sized,
        B: DeviceMemory<Elem = f32> + ?Sized,
        C: DeviceMemory<Elem = f32> + ?Sized,
    {
        let site = CallSite::caller();
        let (m, n, k) = mnk;
        let (ta, tb) = (trans_a == Transpose::Yes, trans_b == Transpose::Yes);
        let a = (a.0.mem_ref(), a.1);
        let b = (b.0.mem_ref(), b.1);
        let c = (c.0.mem_ref(), c.1);
        for buf in [&a.0, &b.0, &c.0] {
            buf.check(&stream.ctx.h, "Blas::sgemm", "matrix")?;
        }
        if !self.workspace.ctx.same(&stream.ctx.h) {
            return Err(Error::ContextMismatch { op: "Blas::sgemm", what: "cuBLAS handle" });
        }
        let (ra, ca) = if ta { (k, m) } else { (m, k) };
        let (rb, cb) = if tb { (n, k) } else { (k, n) };
        fits("A", &a.0, a.1, ra, ca)?;
        fits("B", &b.0, b.1, rb, cb)?;
        fits("C", &c.0, c.1, m, n)?;
        let g = Gemm {
            trans_a: ta,
            trans_b: tb,
            m: dim("m", m)?,
            n: dim("n", n)?,
            k: dim("k", k)?,
            alpha,
            a: DevPtr(a.0.ptr),
            lda: dim("lda", a.1)?,
            b: DevPtr(b.0.ptr),
            ldb: dim("ldb", b.1)?,
            beta,
            c: DevPtr(c.0.ptr),
            ldc: dim("ldc", c.1)?,
        };
        let ws = (self.workspace.ptr, self.workspace.len());
        stream.run("Blas::sgemm", site, |bk, s| bk.blas_sgemm(self.handle, s, ws.0, ws.1, &g))
    }
}

impl Drop for Blas {
    fn drop(&mut self) {
        if self.cudarc.is_some() {
            return; // cudarc's `CudaBlas` owns the handle and destroys it.
        }
        if let Err(code) = self.workspace.ctx.b().blas_destroy(self.handle) {
            log::error!("capture-core: destroying a cuBLAS handle failed: {code}");
        }
    }
}
