//! The raw layer: every `unsafe` of this crate, each with its safety argument. Everything
//! above it is safe code.
//!
//! - [`launch`]: one of this crate's kernels on candle's stream, plainly or with
//!   programmatic dependent launch;
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

/// Launches `func` (one of this crate's kernels, loaded on `dev` by `decode::code`) on
/// candle's stream of `dev`.
///
/// The callers in `decode::gpu` check every shape, type and size before they come here: each
/// pointer argument is the address of a live tensor (or 0 where the kernel takes an absent
/// operand) of the element type and length the kernel's comment in `kernels/decode.cu`
/// states, and the grid is the one that comment prescribes. With `programmatic`, the launch
/// is a programmatic dependent one (see `launch_programmatic`).
pub(crate) fn launch(
    dev: &CudaDevice,
    func: &cudarc::driver::CudaFunction,
    cfg: LaunchConfig,
    args: &[Arg],
    programmatic: bool,
) -> candle_core::Result<()> {
    allow_shared_memory(func, cfg.shared_mem_bytes)?;
    if programmatic {
        return launch_programmatic(dev, func, cfg, args);
    }
    let stream = dev.cuda_stream();
    let mut b = stream.launch_builder(func);
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

/// Whether `dev` can launch a kernel with the programmatic-stream-serialization attribute
/// (programmatic dependent launch): compute capability 9.0 and later.
pub(crate) fn programmatic_launch_supported(dev: &CudaDevice) -> candle_core::Result<bool> {
    let (major, _) =
        dev.cuda_stream().context().compute_capability().map_err(|e| candle_core::Error::Cuda(Box::new(e)))?;
    Ok(major >= 9)
}

/// [`launch`]'s programmatic dependent launch: `func` with the programmatic-stream-
/// serialization attribute (the caller checked [`programmatic_launch_supported`]). The kernel
/// may start before its predecessor on the stream has finished, and in a capture the edge
/// from that predecessor, when it is a kernel node, is a programmatic one.
///
/// Only for the kernels of `decode_pdl.ptx` (the PDL hooks of `kernels/decode.cu`): the
/// products (gemv and mmv) and the fused RoPE + attention. Before their wait for the
/// predecessor (`griddepcontrol.wait`) they write nothing and read only what no kernel of the
/// decode step writes: the weights, the positions and the cache's prefix (attention replaces
/// the one row of it that it writes itself). Every block of the products waits; attention's
/// blocks past the prefix return without reading or writing, and its first chunk's blocks
/// always wait, so the grid never ends before its predecessor.
fn launch_programmatic(
    dev: &CudaDevice,
    func: &cudarc::driver::CudaFunction,
    cfg: LaunchConfig,
    args: &[Arg],
) -> candle_core::Result<()> {
    use cudarc::driver::sys;
    let cuda = |e| candle_core::Error::Cuda(Box::new(e));
    let stream = dev.cuda_stream();
    stream.context().bind_to_thread().map_err(cuda)?;
    // The driver reads each argument through a pointer to its value, during the call.
    let mut values = args.to_vec();
    let mut params: Vec<*mut std::ffi::c_void> = values
        .iter_mut()
        .map(|a| match a {
            Arg::U32(v) => std::ptr::from_mut(v).cast(),
            Arg::U64(v) => std::ptr::from_mut(v).cast(),
            Arg::F32(v) => std::ptr::from_mut(v).cast(),
        })
        .collect();
    // SAFETY: an all-zero `CUlaunchAttribute` is a valid value of the plain C struct (an
    // enum whose 0 is `CU_LAUNCH_ATTRIBUTE_IGNORE`, padding and a union of plain data);
    // its id and value are set below.
    let mut attr: sys::CUlaunchAttribute = unsafe { std::mem::zeroed() };
    attr.id = sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    let config = sys::CUlaunchConfig {
        gridDimX: cfg.grid_dim.0,
        gridDimY: cfg.grid_dim.1,
        gridDimZ: cfg.grid_dim.2,
        blockDimX: cfg.block_dim.0,
        blockDimY: cfg.block_dim.1,
        blockDimZ: cfg.block_dim.2,
        sharedMemBytes: cfg.shared_mem_bytes,
        hStream: stream.cu_stream(),
        attrs: &raw mut attr,
        numAttrs: 1,
    };
    // SAFETY: as `launch`'s: the arguments match the kernel's signature, in its order and
    // types (`params` points at `values`, alive for the call); every pointer among them is a
    // live tensor's, sized as the kernel reads and writes it. `func` is loaded on `dev`'s
    // context, bound to this thread above, and `config` names candle's stream of that
    // context. The attribute lets the kernel start before its predecessor ends; the kernels
    // launched this way write nothing, and read nothing another kernel of the step writes,
    // before they wait for it (this function's comment; `kernels/decode.cu`, PDL).
    unsafe { sys::cuLaunchKernelEx(&config, func.cu_function(), params.as_mut_ptr(), std::ptr::null_mut()) }
        .result()
        .map_err(cuda)?;
    Ok(())
}

/// Past 48 KB of shared memory a block (the kernel's static shared memory included), the
/// dynamic part must be allowed first: a function attribute, not a stream operation, so legal
/// while the stream captures. The allowance only ever grows (a lock orders the read and the
/// write), so a launch that needs less never lowers what another launch of the same kernel,
/// captured or on another thread, was allowed.
fn allow_shared_memory(func: &cudarc::driver::CudaFunction, dynamic: u32) -> candle_core::Result<()> {
    use cudarc::driver::sys::CUfunction_attribute_enum as A;
    static RAISE: std::sync::Mutex<()> = std::sync::Mutex::new(());
    if dynamic == 0 {
        return Ok(()); // static shared memory alone: the kernel was built within the limit
    }
    let cuda = |e| candle_core::Error::Cuda(Box::new(e));
    let fixed = func.get_attribute(A::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES).map_err(cuda)?;
    if i64::from(dynamic) + i64::from(fixed) <= 48 * 1024 {
        return Ok(());
    }
    let _order = RAISE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let allowed = func.get_attribute(A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).map_err(cuda)?;
    let want = i32::try_from(dynamic).unwrap_or(i32::MAX);
    if want > allowed {
        func.set_attribute(A::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, want).map_err(cuda)?;
    }
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

/// The whole memory of a CUDA tensor's storage (every view of it holds all of it):
/// its first address and its length in bytes; `None` for a tensor not on a CUDA device.
pub(crate) fn storage_range(t: &Tensor) -> Option<(u64, u64)> {
    let (storage, _) = t.storage_and_layout();
    let Storage::Cuda(cs) = &*storage else { return None };
    let stream = cs.device.cuda_stream();
    fn range<T>(s: &cudarc::driver::CudaSlice<T>, stream: &std::sync::Arc<cudarc::driver::CudaStream>) -> (u64, u64) {
        (s.device_ptr(stream).0, s.num_bytes() as u64)
    }
    Some(match &cs.slice {
        S::U8(s) => range(s, &stream),
        S::U32(s) => range(s, &stream),
        S::I16(s) => range(s, &stream),
        S::I32(s) => range(s, &stream),
        S::I64(s) => range(s, &stream),
        S::BF16(s) => range(s, &stream),
        S::F16(s) => range(s, &stream),
        S::F32(s) => range(s, &stream),
        S::F64(s) => range(s, &stream),
        S::F8E4M3(s) => range(s, &stream),
        // A storage type this crate does not know of: nothing is declared, so any use of it
        // is refused by the ownership proof rather than trusted.
        #[allow(unreachable_patterns)]
        _ => return None,
    })
}

/// `bytes` bytes of device memory from `addr`, copied to the host on candle's stream of
/// `dev` (which is idle: this runs between captures).
///
/// # Errors
/// The driver's, for an address range it does not hold.
pub(crate) fn read_device(dev: &CudaDevice, addr: u64, bytes: usize) -> candle_core::Result<Vec<u8>> {
    let stream = dev.cuda_stream();
    let mut out = vec![0u8; bytes];
    stream.context().bind_to_thread().map_err(|e| candle_core::Error::Cuda(Box::new(e)))?;
    // SAFETY: the destination is a host buffer of exactly `bytes` bytes, which outlives the
    // copy (the stream is synchronized before it is read or dropped). The source is only
    // read: an address range the device does not hold makes the driver return an error,
    // never write anywhere but `out`.
    unsafe { cudarc::driver::result::memcpy_dtoh_async(&mut out, addr, stream.cu_stream()) }
        .map_err(|e| candle_core::Error::Cuda(Box::new(e)))?;
    stream.synchronize().map_err(|e| candle_core::Error::Cuda(Box::new(e)))?;
    Ok(out)
}

/// The address of candle's layout-cache entry for `key` (`[dims.., strides..]`), if the
/// cache holds one. Call it only while candle's stream is capturing with candle's upload
/// cache on: a miss then fails instead of adding an entry.
#[cfg(feature = "cuda")]
pub(crate) fn layout_cache_entry(dev: &CudaDevice, key: Vec<usize>) -> Option<u64> {
    use candle_core::cuda_backend::SlicePtrOrNull;
    match SlicePtrOrNull::params_from_vec(dev, key) {
        Ok(SlicePtrOrNull::Cached(entry)) => Some(entry.device_ptr(&dev.cuda_stream()).0),
        _ => None,
    }
}

/// Without candle's CUDA backend (a documentation build) there is no cache.
#[cfg(not(feature = "cuda"))]
pub(crate) fn layout_cache_entry(_: &CudaDevice, _: Vec<usize>) -> Option<u64> {
    None
}

/// An element type candle uploads through its upload cache, read from little-endian bytes.
trait Upload: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits + Copy + 'static {
    const SIZE: usize;
    fn from_le(b: &[u8]) -> Self;
}

macro_rules! upload {
    ($($t:ty => |$b:ident| $e:expr),* $(,)?) => {$(
        impl Upload for $t {
            const SIZE: usize = std::mem::size_of::<$t>();
            fn from_le($b: &[u8]) -> Self { $e }
        }
    )*};
}
upload!(
    u8 => |b| b[0],
    u32 => |b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
    i16 => |b| i16::from_le_bytes([b[0], b[1]]),
    i32 => |b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]),
    i64 => |b| i64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
    usize => |b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]) as usize,
    f32 => |b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]),
    f64 => |b| f64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
);
// cudarc's half-precision `DeviceRepr` comes with its `f16` feature, which candle's `cuda`
// feature turns on (without it only the documentation builds).
#[cfg(feature = "cuda")]
upload!(
    half::f16 => |b| half::f16::from_bits(u16::from_le_bytes([b[0], b[1]])),
    half::bf16 => |b| half::bf16::from_bits(u16::from_le_bytes([b[0], b[1]])),
);

/// One scratch destination of an upload-cache lookup.
trait Lookup {
    fn look_up(&mut self, dev: &CudaDevice, bytes: &[u8]);
}

impl<T: Upload> Lookup for cudarc::driver::CudaSlice<T> {
    fn look_up(&mut self, dev: &CudaDevice, bytes: &[u8]) {
        if bytes.is_empty() || !bytes.len().is_multiple_of(T::SIZE) || bytes.len() / T::SIZE > self.len() {
            return;
        }
        let values: Vec<T> = bytes.chunks_exact(T::SIZE).map(T::from_le).collect();
        // A miss fails (candle refuses uncached uploads while capturing): nothing to do.
        let _ = dev.memcpy_htod(&values, self);
    }
}

/// Scratch destinations for asking candle's upload cache whether it holds some bytes, as
/// each element type it uploads: on a hit, candle records a copy from its entry.
pub(crate) struct CacheProbe {
    slices: Vec<Box<dyn Lookup>>,
}

impl CacheProbe {
    /// Destinations of `bytes` bytes, made before the capture that looks up.
    pub(crate) fn new(dev: &CudaDevice, bytes: usize) -> candle_core::Result<Self> {
        fn one<T: Upload>(dev: &CudaDevice, bytes: usize) -> candle_core::Result<Box<dyn Lookup>> {
            Ok(Box::new(dev.alloc_zeros::<T>((bytes / T::SIZE).max(1))?))
        }
        let mut slices = Vec::new();
        if bytes > 0 {
            slices.push(one::<u8>(dev, bytes)?);
            slices.push(one::<u32>(dev, bytes)?);
            slices.push(one::<i16>(dev, bytes)?);
            slices.push(one::<i32>(dev, bytes)?);
            slices.push(one::<i64>(dev, bytes)?);
            slices.push(one::<usize>(dev, bytes)?);
            slices.push(one::<f32>(dev, bytes)?);
            slices.push(one::<f64>(dev, bytes)?);
            #[cfg(feature = "cuda")]
            slices.push(one::<half::f16>(dev, bytes)?);
            #[cfg(feature = "cuda")]
            slices.push(one::<half::bf16>(dev, bytes)?);
        }
        Ok(Self { slices })
    }

    /// Asks candle's upload cache for `bytes` as every element type.
    pub(crate) fn look_up(&mut self, dev: &CudaDevice, bytes: &[u8]) {
        for s in &mut self.slices {
            s.look_up(dev, bytes);
        }
    }
}
