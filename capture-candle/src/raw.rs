//! The raw layer: every `unsafe` of this crate, each with its safety argument. Everything
//! above it is safe code.
//!
//! - [`launch`]: a kernel of this crate's PTX on candle's stream;
//! - [`uninit`]: a tensor whose every element the next kernel writes;
//! - [`mmap_safetensors`]: weights memory-mapped from disk.
#![allow(unsafe_code)]

use candle_core::{CudaDevice, DType, Device, Shape, Storage, Tensor};
use cudarc::driver::{DevicePtr, LaunchConfig, PushKernelArg};
// candle's CUDA backend exists only with the `cuda` feature; without it only the docs build.
#[cfg(feature = "cuda")]
use candle_core::cuda_backend::CudaStorageSlice as S;

/// A kernel argument: device pointers travel as `u64` addresses.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Arg {
    U32(u32),
    U64(u64),
    F32(f32),
}

/// The address of a CUDA tensor's first element (its layout's start offset included), or
/// an error for a tensor that is not on a CUDA device or not contiguous.
pub(crate) fn device_address(t: &Tensor) -> candle_core::Result<u64> {
    if !t.is_contiguous() {
        candle_core::bail!("capture-candle kernels take contiguous tensors (got a strided {:?})", t.shape());
    }
    let (storage, layout) = t.storage_and_layout();
    let Storage::Cuda(cs) = &*storage else {
        candle_core::bail!("capture-candle: a CUDA kernel was given a tensor on {:?}", t.device().location());
    };
    let stream = cs.device.cuda_stream();
    let base = match &cs.slice {
        S::U8(s) => s.device_ptr(&stream).0,
        S::U32(s) => s.device_ptr(&stream).0,
        S::I64(s) => s.device_ptr(&stream).0,
        S::BF16(s) => s.device_ptr(&stream).0,
        S::F16(s) => s.device_ptr(&stream).0,
        S::F32(s) => s.device_ptr(&stream).0,
        S::F64(s) => s.device_ptr(&stream).0,
        _ => candle_core::bail!("capture-candle kernels do not take {:?} tensors", t.dtype()),
    };
    Ok(base + (layout.start_offset() * t.dtype().size_in_bytes()) as u64)
}

/// Launches `function` of the module `module` (PTX text `ptx`, loaded once per device) on
/// candle's stream of `dev`.
///
/// The callers in `decode::gpu` check every shape, type and size before they come here: each
/// pointer argument is the address of a live tensor (or 0 where the kernel takes an absent
/// operand) of the element type and length the kernel's comment in `kernels/decode.cu`
/// states, and the grid is the one that comment prescribes.
pub(crate) fn launch(
    dev: &CudaDevice,
    module: &str,
    ptx: &str,
    function: &str,
    cfg: LaunchConfig,
    args: &[Arg],
) -> candle_core::Result<()> {
    let func = dev.get_or_load_custom_func(function, module, ptx)?;
    let mut b = func.builder();
    for a in args {
        match a {
            Arg::U32(v) => b.arg(v),
            Arg::U64(v) => b.arg(v),
            Arg::F32(v) => b.arg(v),
        };
    }
    // SAFETY: the argument list matches the kernel's signature in kernels/decode.cu (the
    // callers build it from one table per kernel), every pointer is the address of a live
    // tensor held by the caller for the duration of the call and sized as the kernel reads
    // and writes it (checked by the caller), and the kernels write only within those sizes
    // (positions past the cache are clamped in the kernel). The launch is stream-ordered on
    // candle's stream, like every candle op on those tensors.
    unsafe { b.launch(cfg) }.map_err(|e| candle_core::Error::Cuda(Box::new(e)))?;
    Ok(())
}

/// A tensor of `shape` and `dtype` on `device` whose contents are not initialised.
///
/// Only for outputs that the kernel launched next writes in full (every caller says which
/// kernel, and why it writes every element), so no uninitialised value is ever read.
pub(crate) fn uninit(shape: impl Into<Shape>, dtype: DType, device: &Device) -> candle_core::Result<Tensor> {
    // SAFETY: candle's `Tensor::empty` is unsafe because the contents are uninitialised; the
    // caller's kernel writes every element before anything reads the tensor (see above).
    unsafe { Tensor::empty(shape, dtype, device) }
}

/// Memory-maps safetensors files.
///
/// # Errors
/// candle's, when a file cannot be opened or parsed.
pub(crate) fn mmap_safetensors(
    paths: &[std::path::PathBuf],
) -> candle_core::Result<candle_core::safetensors::MmapedSafetensors> {
    // SAFETY: a memory-mapped file must not change while it is mapped. The files are model
    // weights the user named, opened read-only; the documentation of `Weights::from_safetensors`
    // says they must not be modified while the model lives.
    unsafe { candle_core::safetensors::MmapedSafetensors::multi(paths) }
}
