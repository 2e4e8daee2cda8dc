//! Errors of the candle integration.

/// A result whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, and what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The candle device is not a CUDA device.
    #[error("candle device {device} is not a CUDA device: capture needs `Device::new_cuda_with_stream(ordinal)`")]
    NotCuda {
        /// The device, as candle describes it.
        device: String,
    },
    /// The candle device runs on the per-thread default stream, which cannot be captured
    /// alongside other work.
    #[error(
        "this candle device uses the per-thread default stream (candle's `Device::new_cuda`); \
         create it with `Device::new_cuda_with_stream(ordinal)` so its work runs on a stream of its own that can be captured"
    )]
    DefaultStream,
    /// The capture left graph memory allocated: a tensor created during the capture was
    /// still alive when it finished.
    #[error(
        "the captured step left {unfreed} graph allocation(s) alive at `finish` ({allocs} allocation node(s), {frees} free node(s)): \
         a tensor created during the capture (the step's result, say) is still held. Copy results into tensors \
         created before the capture (`Tensor::slice_set`) and drop every tensor the step created before `finish()`. \
         The refused graph ran once before it was destroyed, so dropping the tensor frees its memory"
    )]
    UnfreedGraphMemory {
        /// Allocation nodes in the graph.
        allocs: usize,
        /// Free nodes in the graph.
        frees: usize,
        /// Allocations without a free.
        unfreed: usize,
    },
    /// An error from capture-core: the capture, the graph or the stream.
    #[error(transparent)]
    Capture(#[from] capture_core::Error),
    /// An error from candle, raised by the step.
    #[error("candle: {0}")]
    Candle(#[from] candle_core::Error),
}
