//! candle's stream under capture-core's type-state.

use candle_core::{CudaDevice, Device};
use capture_core::{CaptureOptions, Context, Idle, Stream};

use crate::capture::CandleCapture;
use crate::error::{Error, Result};

/// The stream a candle CUDA device issues its work on, as a capture-core
/// [`Stream<Idle>`](capture_core::Stream), with the candle device beside it.
pub struct CandleStream {
    device: CudaDevice,
    ctx: Context,
    stream: Stream<Idle>,
}

impl std::fmt::Debug for CandleStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CandleStream").field("device", &self.device).field("stream", &self.stream).finish()
    }
}

impl CandleStream {
    /// Wraps the stream of candle device `device`.
    ///
    /// # Errors
    /// [`Error::NotCuda`] for a CPU or Metal device; [`Error::DefaultStream`] when the device
    /// uses the per-thread default stream (candle's `Device::new_cuda`); [`Error::Capture`]
    /// if the driver cannot be queried.
    pub fn new(device: &Device) -> Result<Self> {
        let Device::Cuda(dev) = device else {
            return Err(Error::NotCuda { device: format!("{:?}", device.location()) });
        };
        let cu = dev.cuda_stream();
        // CU_STREAM_PER_THREAD: candle's `Device::new_cuda` stream.
        if cu.cu_stream() as usize == 0x2 || cu.cu_stream().is_null() {
            return Err(Error::DefaultStream);
        }
        let ctx = Context::from_cudarc(cu.context().clone())?;
        let stream = ctx.wrap_cudarc_stream(cu)?;
        Ok(Self { device: dev.clone(), ctx, stream })
    }

    /// The capture-core context of candle's CUDA context.
    pub fn context(&self) -> &Context {
        &self.ctx
    }

    /// The candle device.
    pub fn device(&self) -> &CudaDevice {
        &self.device
    }

    /// candle's stream, idle: replay graphs on it, synchronize it, copy on it.
    pub fn stream(&mut self) -> &mut Stream<Idle> {
        &mut self.stream
    }

    /// Runs `step` eagerly with candle's host-upload cache on, then waits for it: do this
    /// once before [`capture_owned`](Self::capture_owned) with the same step, so that what a capture
    /// cannot do (load modules, size cuBLAS's workspace, upload shape parameters from host
    /// memory) is done and cached.
    ///
    /// # Errors
    /// The step's candle error; [`Error::Capture`] if synchronizing fails.
    pub fn warm_up<T>(&mut self, step: impl FnOnce() -> candle_core::Result<T>) -> Result<T> {
        let cache = self.device.enable_cuda_graph_htod_cache();
        let out = step();
        drop(cache);
        let out = out?;
        self.stream.synchronize()?;
        Ok(out)
    }

    /// Starts capturing candle's stream with `options` (see [`CandleCapture`]).
    #[track_caller]
    pub(crate) fn capture_with<'a>(&mut self, options: CaptureOptions) -> Result<CandleCapture<'_, 'a>> {
        let cache = self.device.enable_cuda_graph_htod_cache();
        let ctx = self.ctx.clone();
        let cudarc = self.stream.cudarc().cloned();
        let guard = self.stream.capture_with(options)?;
        Ok(CandleCapture::new(guard, Box::new(cache), ctx, cudarc))
    }
}
