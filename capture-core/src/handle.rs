//! The handle: what code below the public [`Context`](crate::Context) needs of a context — its
//! backend, its capture registry, its fail-fast domain. Buffers, events, modules and kernels
//! hold one; the `Context` facade (capture layer) is a handle plus the public API, the way
//! tokio's `runtime::Handle` sits below its `Runtime`.

use std::sync::Arc;

use cudarc::driver::CudaContext;

use crate::device::sim::SimDevice;
use crate::device::{Backend, CudaBackend, LaunchParams, RawFunction, RawStream};
use crate::error::{CallSite, DriverCode, Error, OpSite, Result};
use crate::registry::Registry;

pub(crate) enum Dev {
    Cuda(CudaBackend),
    Sim(Box<SimDevice>),
}

pub(crate) struct CtxInner {
    pub(crate) dev: Dev,
    /// The fail-fast domain: 0 for the GPU (the driver's Global mode is process-wide), a
    /// unique number for each simulated device.
    pub(crate) domain: usize,
    pub(crate) registry: Registry,
    pub(crate) fallback: Option<String>,
}

impl CtxInner {
    /// A kernel launch, dispatched statically (the hot path: no virtual call, so the CUDA
    /// backend's launch inlines here).
    #[inline]
    pub(crate) fn launch(&self, f: RawFunction, p: LaunchParams<'_>, s: RawStream) -> Result<(), DriverCode> {
        match &self.dev {
            Dev::Cuda(c) => c.launch(f, p, s),
            Dev::Sim(x) => x.launch(f, p, s),
        }
    }

    #[inline]
    pub(crate) fn b(&self) -> &dyn Backend {
        match &self.dev {
            Dev::Cuda(c) => c,
            Dev::Sim(s) => s.as_ref(),
        }
    }
}

impl Drop for CtxInner {
    fn drop(&mut self) {
        for s in self.registry.drain_spare_streams() {
            if let Err(code) = self.b().stream_destroy(s) {
                log::error!("capture-core: destroying a spare stream failed: {code}");
            }
        }
    }
}

fn derr(e: cudarc::driver::DriverError) -> DriverCode {
    DriverCode(e.0 as u32)
}

/// Opens CUDA device `ordinal`. Never panics: a missing driver is `Error::NoDriver`.
pub(crate) fn open_cuda(ordinal: usize) -> Result<CudaBackend> {
    if !crate::raw::driver_present() {
        return Err(Error::NoDriver);
    }
    let count = CudaContext::device_count().map_err(|e| Error::Driver { op: "cuDeviceGetCount", code: derr(e) })?;
    let count = usize::try_from(count).unwrap_or(0);
    if ordinal >= count {
        return Err(Error::NoDevice { ordinal, count });
    }
    let ctx = CudaContext::new(ordinal).map_err(|e| Error::Driver { op: "cuDevicePrimaryCtxRetain", code: derr(e) })?;
    wrap_cuda(ctx)
}

/// Wraps an existing cudarc context.
pub(crate) fn wrap_cuda(ctx: Arc<CudaContext>) -> Result<CudaBackend> {
    let name = ctx.name().map_err(|e| Error::Driver { op: "cuDeviceGetName", code: derr(e) })?;
    let total = ctx.total_mem().map_err(|e| Error::Driver { op: "cuDeviceTotalMem", code: derr(e) })?;
    Ok(CudaBackend::new(ctx, name, total))
}

/// A context as the layers below the public [`Context`](crate::Context) see it. Cheap to clone.
#[derive(Clone)]
pub(crate) struct Handle {
    pub(crate) inner: Arc<CtxInner>,
}

impl Handle {
    /// A handle on `dev`, in the fail-fast domain `domain` (a new one for a simulated device
    /// when `None`; every GPU of the process shares domain 0).
    pub(crate) fn new(dev: Dev, fallback: Option<String>, domain: Option<usize>) -> Self {
        static NEXT_SIM_DOMAIN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(1);
        let domain = match (&dev, domain) {
            (Dev::Cuda(_), _) => 0,
            (Dev::Sim(_), Some(d)) => d,
            (Dev::Sim(_), None) => NEXT_SIM_DOMAIN.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        };
        Self { inner: Arc::new(CtxInner { dev, domain, registry: Registry::default(), fallback }) }
    }

    /// `Err(CaptureActive)` if an active capture prohibits synchronous calls from here.
    #[inline]
    pub(crate) fn fail_fast(&self, op: &'static str, site: CallSite) -> Result<()> {
        crate::registry::fail_fast::check(self.inner.domain, op, site)
    }

    /// The cudarc context behind this one (`None` on the simulated device).
    pub(crate) fn cudarc(&self) -> Option<&Arc<CudaContext>> {
        match &self.inner.dev {
            Dev::Cuda(c) => Some(c.ctx()),
            Dev::Sim(_) => None,
        }
    }

    /// The simulated device behind this context (`None` on a GPU).
    pub(crate) fn sim(&self) -> Option<&SimDevice> {
        match &self.inner.dev {
            Dev::Sim(s) => Some(s),
            Dev::Cuda(_) => None,
        }
    }

    #[inline]
    pub(crate) fn same(&self, other: &Handle) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    #[inline]
    pub(crate) fn b(&self) -> &dyn Backend {
        self.inner.b()
    }

    pub(crate) fn reg(&self) -> &Registry {
        &self.inner.registry
    }

    /// (free, total) device memory in bytes.
    pub(crate) fn mem_info(&self) -> Result<(usize, usize)> {
        self.b().mem_info().map_err(|code| Error::Driver { op: "cuMemGetInfo", code })
    }

    /// Maps a driver code to an error, noting it as a possible invalidation cause.
    pub(crate) fn fail(&self, op: &'static str, site: CallSite, code: DriverCode) -> Error {
        // An "already invalidated" error is a consequence, not a cause.
        if code.is_capture_error() && code != DriverCode::STREAM_CAPTURE_INVALIDATED {
            self.reg().note_failure(OpSite { op, site });
        }
        Error::Driver { op, code }
    }
}
