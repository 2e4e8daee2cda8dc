//! Where the decode kernels' machine code comes from.
//!
//! The kernels ship as PTX (`kernels/decode.ptx`, and `kernels/decode_pdl.ptx` for compute
//! 9.0). Loaded as it is, PTX is compiled by the driver when a process first launches one of
//! its kernels: on an H200 that took 30-32 s for both files whenever the driver's cache
//! (`CUDA_CACHE_PATH`, `~/.nv/ComputeCache`) did not hold them yet, so every fresh machine or
//! container paid it in its first `generate` (docs/gpu-runs/2026-12-02-issue32/). The build
//! script therefore compiles the PTX with ptxas for the GPU candle's kernels are built for
//! (`CUDA_COMPUTE_CAP`, else the first GPU `nvidia-smi` lists), and the crate includes those
//! cubins. Loading them took 2-6 ms.
//!
//! Per device, the first launch loads a module: the cubin where one was built and the driver
//! accepts it for the device, else the PTX (through candle's module cache, as before). A device
//! the cubin is not for (built for `sm_90`, run on an A100) gets the PTX and a warning in the log.
//! `CAPTURE_CANDLE_JIT=1` in the environment loads the PTX even where a cubin was built (to
//! compare the two). [`kernel_code`] says which one a device runs.
//!
//! A loaded cubin module is kept until the process ends, with the CUDA context it holds (as
//! the CUDA runtime keeps its modules): graphs captured from its kernels name its functions,
//! so it must not be unloaded under them.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use candle_core::{CudaDevice, Result};
use cudarc::driver::{CudaFunction, CudaModule};

include!(concat!(env!("OUT_DIR"), "/sass.rs"));

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

/// Which machine code the decode kernels run as on `dev` (loading their module on it if no
/// launch has yet).
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
    let Some(bytes) = DECODE.sass else { return Ok(KernelCode::Ptx(PtxWhy::NotBuilt)) };
    let arch = SASS_ARCH.unwrap_or("?");
    if jit_asked() {
        return Ok(KernelCode::Ptx(PtxWhy::Asked));
    }
    Ok(match sass_module(dev, &DECODE, bytes)? {
        Some(_) => KernelCode::Sass { arch },
        None => KernelCode::Ptx(PtxWhy::OtherGpu { built: arch }),
    })
}

/// Every kernel but the programmatic-launch ones.
pub(crate) static DECODE: Module =
    Module { name: "capture_candle_decode", ptx: include_str!("../../kernels/decode.ptx"), sass: DECODE_SASS };
/// The kernels the step launches programmatically, with programmatic dependent launch's hooks
/// (compute 9.0).
pub(crate) static DECODE_PDL: Module = Module {
    name: "capture_candle_decode_pdl",
    ptx: include_str!("../../kernels/decode_pdl.ptx"),
    sass: DECODE_PDL_SASS,
};

/// The kernel `name` of `module` on `dev`: from the module's cubin where it loads on `dev`,
/// else from its PTX.
pub(crate) fn function(dev: &CudaDevice, module: &Module, name: &str) -> Result<CudaFunction> {
    let cuda = |e| candle_core::Error::Cuda(Box::new(e));
    if let Some(bytes) = module.sass.filter(|_| !jit_asked()) {
        if let Some(m) = sass_module(dev, module, bytes)? {
            return m.load_function(name).map_err(cuda);
        }
    }
    Ok(dev.get_or_load_custom_func(name, module.name, module.ptx)?.into_cuda_function())
}

fn jit_asked() -> bool {
    static ASKED: OnceLock<bool> = OnceLock::new();
    *ASKED.get_or_init(|| std::env::var_os("CAPTURE_CANDLE_JIT").is_some_and(|v| v == "1"))
}

/// A cubin module loaded on a context, or the driver's refusal of it there.
struct Loaded {
    module: &'static str,
    ordinal: usize,
    /// The context's handle, as an address: the loaded module holds the context, so the
    /// handle stays this context's for the process.
    ctx: usize,
    code: Option<Arc<CudaModule>>,
}

/// `module`'s cubin loaded on `dev`'s context: `None` where the driver refuses it for this
/// device (a cubin for another GPU), which is remembered and logged once.
fn sass_module(dev: &CudaDevice, module: &Module, bytes: &[u8]) -> Result<Option<Arc<CudaModule>>> {
    static LOADED: Mutex<Vec<Loaded>> = Mutex::new(Vec::new());
    let stream = dev.cuda_stream();
    let context = stream.context();
    let (ordinal, ctx) = (context.ordinal(), context.cu_ctx() as usize);
    let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(l) = loaded.iter().find(|l| l.module == module.name && l.ordinal == ordinal && l.ctx == ctx) {
        return Ok(l.code.clone());
    }
    let code = match context.load_module(cudarc::nvrtc::Ptx::from_binary(bytes.to_vec())) {
        Ok(m) => Some(m),
        Err(e) => {
            use cudarc::driver::sys::CUresult as R;
            // Only "not for this GPU" falls back; anything else (out of memory, a lost
            // context) is the caller's error, as a PTX load's would be.
            if !matches!(
                e.0,
                R::CUDA_ERROR_NO_BINARY_FOR_GPU | R::CUDA_ERROR_INVALID_IMAGE | R::CUDA_ERROR_INVALID_SOURCE
            ) {
                return Err(candle_core::Error::Cuda(Box::new(e)));
            }
            log::warn!(
                "capture-candle: the decode kernels' cubin built for {} does not load on CUDA device {ordinal} \
                 ({e}); the driver compiles their PTX instead (tens of seconds the first time on a machine). \
                 Build with this GPU's CUDA_COMPUTE_CAP to avoid it.",
                SASS_ARCH.unwrap_or("?")
            );
            None
        }
    };
    loaded.push(Loaded { module: module.name, ordinal, ctx, code: code.clone() });
    Ok(code)
}
