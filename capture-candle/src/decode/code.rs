//! Where the decode kernels' machine code comes from.
//!
//! The kernels ship as PTX (`kernels/decode.ptx`, and `kernels/decode_pdl.ptx` for compute
//! 9.0). PTX is compiled by the driver when its module is loaded, which the crate does at a
//! process's first launch of one of its kernels: on an H200 that took 30-32 s for both files
//! whenever the driver's cache (`CUDA_CACHE_PATH`, `~/.nv/ComputeCache`) did not hold them
//! yet, so every fresh machine or container paid it in its first `generate`
//! (docs/gpu-runs/2026-12-02-issue32/). The build script therefore compiles the PTX with ptxas
//! for the GPU that `CUDA_COMPUTE_CAP` names (the variable candle's build reads; else the first
//! GPU `nvidia-smi` lists), and the crate includes those cubins. Loading both took 2.4-2.7 ms.
//!
//! A capture follows an eager warm-up of the same step ([`crate::CandleStream::warm_up`]), so a
//! step's modules are loaded before its capture begins.
//!
//! Per device, the first launch loads a module: the cubin where one was built and the driver
//! accepts it for the device, else the PTX (through candle's module cache, as before). A device
//! the cubin is not for (built for `sm_90`, run on an A100) gets the PTX and a warning in the log.
//! `CAPTURE_CANDLE_JIT=1` in the environment loads the PTX even where a cubin was built (to
//! compare the two). [`kernel_code`] says which one a device runs.
//!
//! A loaded cubin module is kept until the process ends, and with it the device's primary
//! CUDA context (as the CUDA runtime keeps its modules): the code's device memory (about 5 MB
//! for both modules on sm_90) and the context are not given back when the last candle device on
//! it is dropped. Every launch looks its module up under a shared lock; only the first on a
//! context loads it.

use std::sync::{Arc, OnceLock, PoisonError, RwLock};

use candle_core::{CudaDevice, Result};
use cudarc::driver::{CudaFunction, CudaModule};

include!(concat!(env!("OUT_DIR"), "/sass.rs"));

/// The GPU architecture whose cubins this build of the crate holds (`Some("sm_90")`), or
/// `None` where the build compiled none (see the crate's README, *Building*).
pub const CUBIN_ARCH: Option<&str> = SASS_ARCH;

/// One PTX file of the crate's kernels, and its cubin if the build made one.
pub(crate) struct Module {
    /// The module's name in candle's per-device cache of PTX modules.
    pub(crate) name: &'static str,
    pub(crate) ptx: &'static str,
    pub(crate) sass: Option<&'static [u8]>,
}

/// Which machine code the decode kernels run as on a device: see [`kernel_code`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum KernelCode {
    /// The cubins compiled for this GPU when the crate was built (`arch`: `"sm_90"`): loaded
    /// in milliseconds.
    Sass {
        /// The architecture the build compiled them for.
        arch: &'static str,
    },
    /// The PTX, which the driver compiles at first use: tens of seconds on a machine whose
    /// driver cache does not hold it yet, then milliseconds.
    Ptx(PtxWhy),
}

/// Why a device runs the decode kernels from PTX ([`KernelCode::Ptx`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PtxWhy {
    /// The build compiled no cubin: it found no ptxas, or no GPU to build for. Build with the
    /// CUDA toolkit and `CUDA_COMPUTE_CAP` set (`90` for an H100) to get one.
    NotBuilt,
    /// The cubin is for another GPU (`built`), which this device cannot run: build with this
    /// device's `CUDA_COMPUTE_CAP`.
    OtherGpu {
        /// The architecture the cubin was built for.
        built: &'static str,
    },
    /// `CAPTURE_CANDLE_JIT=1` asked for the PTX.
    Asked,
}

/// Which machine code the decode kernels run as on `dev` (loading their modules on it if no
/// launch has yet): [`KernelCode::Sass`] only where every module the device launches (the
/// programmatic-launch one too, from compute 9.0) loaded from its cubin.
///
/// ```no_run
/// # fn main() -> candle_core::Result<()> {
/// use capture_candle::decode::{kernel_code, KernelCode};
/// let device = candle_core::Device::new_cuda(0)?;
/// if let KernelCode::Ptx(why) = kernel_code(device.as_cuda_device()?)? {
///     eprintln!("the decode kernels are compiled by the driver at first use: {why:?}");
/// }
/// # Ok(()) }
/// ```
pub fn kernel_code(dev: &CudaDevice) -> Result<KernelCode> {
    // The programmatic-launch module too, where the device launches it (compute 9.0 on).
    let pdl = crate::raw::programmatic_launch_supported(dev)?.then_some(&DECODE_PDL);
    for module in std::iter::once(&DECODE).chain(pdl) {
        match cubin(dev, module)? {
            Cubin::Loaded(_) => {}
            Cubin::Asked => return Ok(KernelCode::Ptx(PtxWhy::Asked)),
            Cubin::NotBuilt => return Ok(KernelCode::Ptx(PtxWhy::NotBuilt)),
            Cubin::Refused(built) => return Ok(KernelCode::Ptx(PtxWhy::OtherGpu { built })),
        }
    }
    Ok(KernelCode::Sass { arch: SASS_ARCH.unwrap_or("?") })
}

/// Every kernel but the programmatic-launch ones: PTX for compute 8.0, built from
/// `kernels/decode.cu` by `scripts/build-candle-ptx.sh`.
pub(crate) static DECODE: Module =
    Module { name: "capture_candle_decode", ptx: include_str!("../../kernels/decode.ptx"), sass: DECODE_SASS };
/// The kernels the step launches programmatically (the fused attention, gemv, mmv), with
/// programmatic dependent launch's hooks: PTX for compute 9.0 (`DECODE_PDL` in
/// `kernels/decode.cu`), built by the same script.
pub(crate) static DECODE_PDL: Module = Module {
    name: "capture_candle_decode_pdl",
    ptx: include_str!("../../kernels/decode_pdl.ptx"),
    sass: DECODE_PDL_SASS,
};

/// The kernel `name` of `module` on `dev`: from the module's cubin where it loads on `dev`,
/// else from its PTX.
pub(crate) fn function(dev: &CudaDevice, module: &Module, name: &str) -> Result<CudaFunction> {
    match cubin(dev, module)? {
        Cubin::Loaded(m) => return m.load_function(name).map_err(|e| candle_core::Error::Cuda(Box::new(e))),
        Cubin::NotBuilt => {
            static SAID: OnceLock<()> = OnceLock::new();
            SAID.get_or_init(|| {
                log::warn!(
                    "capture-candle was built without cubins (no ptxas, or no CUDA_COMPUTE_CAP and no GPU, \
                     at build time): the driver compiles the decode kernels' PTX when a process first loads \
                     them, about 30 s on a machine whose driver cache does not hold them yet. Build with \
                     CUDA_COMPUTE_CAP set (e.g. 90) to include machine code for that GPU."
                )
            });
        }
        Cubin::Asked | Cubin::Refused(_) => {}
    }
    Ok(dev.get_or_load_custom_func(name, module.name, module.ptx)?.into_cuda_function())
}

/// Whether `module` runs from its cubin on a device, and why not.
pub(super) enum Cubin {
    Loaded(Arc<CudaModule>),
    /// `CAPTURE_CANDLE_JIT=1`.
    Asked,
    /// The build made no cubin of this module (none at all, or none below compute 9.0 for
    /// the programmatic-launch one).
    NotBuilt,
    /// The driver refused the cubin built for this architecture on this device.
    Refused(&'static str),
}

/// The one place that decides between a module's cubin and its PTX.
pub(super) fn cubin(dev: &CudaDevice, module: &Module) -> Result<Cubin> {
    if jit_asked() {
        return Ok(Cubin::Asked);
    }
    let (Some(bytes), Some(arch)) = (module.sass, SASS_ARCH) else { return Ok(Cubin::NotBuilt) };
    Ok(sass_module(dev, module, bytes)?.map_or(Cubin::Refused(arch), Cubin::Loaded))
}

fn jit_asked() -> bool {
    static ASKED: OnceLock<bool> = OnceLock::new();
    *ASKED.get_or_init(|| std::env::var_os("CAPTURE_CANDLE_JIT").is_some_and(|v| v == "1"))
}

/// A cubin module loaded on a context.
struct Loaded {
    module: &'static str,
    /// The context's handle, as an address: the module holds the context, so the handle stays
    /// this context's for the process.
    ctx: usize,
    code: Arc<CudaModule>,
}

/// What was loaded, and the (module, device ordinal) pairs whose cubin the driver refused
/// (a property of the device, not of a context).
struct Modules {
    loaded: Vec<Loaded>,
    refused: Vec<(&'static str, usize)>,
}

/// `module`'s cubin loaded on `dev`'s context: `None` where the driver refuses it for this
/// device (a cubin for another GPU), which is remembered and logged once a device.
fn sass_module(dev: &CudaDevice, module: &Module, bytes: &[u8]) -> Result<Option<Arc<CudaModule>>> {
    static MODULES: RwLock<Modules> = RwLock::new(Modules { loaded: Vec::new(), refused: Vec::new() });
    let stream = dev.cuda_stream();
    let context = stream.context();
    let (ordinal, ctx) = (context.ordinal(), context.cu_ctx() as usize);
    let find = |m: &Modules| -> Option<Option<Arc<CudaModule>>> {
        if m.refused.contains(&(module.name, ordinal)) {
            return Some(None);
        }
        m.loaded.iter().find(|l| l.module == module.name && l.ctx == ctx).map(|l| Some(l.code.clone()))
    };
    if let Some(found) = find(&MODULES.read().unwrap_or_else(PoisonError::into_inner)) {
        return Ok(found);
    }
    let mut m = MODULES.write().unwrap_or_else(PoisonError::into_inner);
    if let Some(found) = find(&m) {
        return Ok(found); // another thread loaded it meanwhile
    }
    match context.load_module(cudarc::nvrtc::Ptx::from_binary(bytes.to_vec())) {
        Ok(code) => {
            m.loaded.push(Loaded { module: module.name, ctx, code: code.clone() });
            Ok(Some(code))
        }
        Err(e) => {
            use cudarc::driver::sys::CUresult as R;
            // Only "not for this GPU" falls back; anything else (out of memory, a lost
            // context, a load refused during a stream capture) is the caller's error, as a
            // PTX load's would be, and is not remembered.
            if !matches!(
                e.0,
                R::CUDA_ERROR_NO_BINARY_FOR_GPU | R::CUDA_ERROR_INVALID_IMAGE | R::CUDA_ERROR_INVALID_SOURCE
            ) {
                return Err(candle_core::Error::Cuda(Box::new(e)));
            }
            if !m.refused.iter().any(|&(_, o)| o == ordinal) {
                log::warn!(
                    "capture-candle: the decode kernels' cubin built for {} does not load on CUDA device \
                     {ordinal} ({e}); the driver compiles their PTX instead (about 30 s the first time on a \
                     machine). Build with this GPU's CUDA_COMPUTE_CAP to avoid it.",
                    SASS_ARCH.unwrap_or("?")
                );
            }
            m.refused.push((module.name, ordinal));
            Ok(None)
        }
    }
}
