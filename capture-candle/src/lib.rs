//! # capture-candle: capture a candle model's step on candle's own CUDA stream, safely
//!
//! candle issues its kernels, cuBLAS calls and allocations on one cudarc stream. This crate
//! wraps that stream in [`capture_core`]'s type-state, so a decode step written with candle
//! ops can be recorded into a CUDA graph with capture-core's RAII guard, its report and its
//! replay validation, and replayed with one launch per token.
//!
//! ## 1. Wrap candle's device
//! ```no_run
//! # fn main() -> Result<(), capture_candle::Error> {
//! use candle_core::Device;
//! // A device with its own stream: candle's `Device::new_cuda` uses the per-thread default
//! // stream, which capture refuses (see `Error::DefaultStream`).
//! let device = Device::new_cuda_with_stream(0)?;
//! let mut cs = capture_candle::CandleStream::new(&device)?;
//! # Ok(()) }
//! ```
//!
//! ## 2. Warm up, then capture
//! Run the step once eagerly first, under [`CandleStream::warm_up`]: that loads candle's
//! kernels, sizes cuBLAS's workspace, and fills candle's cache of small host uploads (shape
//! and stride parameters), none of which may happen during a capture. Then
//! [`CandleStream::capture`] returns a [`CandleCapture`] guard: candle ops issued while it
//! lives are recorded, and so are capture-core operations on the guard itself (uploads from
//! pinned buffers, kernels). [`CandleCapture::finish`] gives a [`capture_core::Graph`].
//!
//! ```no_run
//! # fn main() -> Result<(), capture_candle::Error> {
//! # use candle_core::{Device, Tensor, DType};
//! # let device = Device::new_cuda_with_stream(0)?;
//! # let mut cs = capture_candle::CandleStream::new(&device)?;
//! let w = Tensor::randn(0f32, 1.0, (64, 64), &device)?;
//! let x = Tensor::zeros((1, 64), DType::F32, &device)?;
//! let y = Tensor::zeros((1, 64), DType::F32, &device)?;
//! let step = || -> candle_core::Result<()> {
//!     let out = x.matmul(&w)?.relu()?;
//!     y.slice_set(&out, 0, 0) // results go into a tensor made before the capture
//! };
//! cs.warm_up(|| step())?;
//! let mut g = cs.capture()?;
//! g.uses(&w); // the graph cannot outlive what it reads
//! g.uses(&x);
//! g.uses(&y);
//! step()?;
//! let (graph, report) = g.finish()?;
//! println!("{report}");
//! graph.launch(cs.stream())?;
//! # Ok(()) }
//! ```
//!
//! ## 3. What the guard checks
//! - Every allocation candle made during the capture must be freed during it: a tensor
//!   created in the step and still alive at `finish` is graph memory that the next replay
//!   cannot reuse ([`Error::UnfreedGraphMemory`]). Write results into tensors made before.
//! - candle's host-upload cache is on while capturing: an upload whose bytes were not seen
//!   during warm-up fails the capture (with candle's error) instead of recording a copy from
//!   host memory that is freed before the first replay.
//! - Everything capture-core checks: invalidations named with the driver's code, cudarc's
//!   event tracking off for the capture, the stream idle and usable on every way out.
//!
//! What no guard can see is a host value baked into the step: a position read on the host
//! and folded into an op's offset, or a small upload whose bytes happened to be cached. Keep
//! such values in device memory, and check a graph with capture-core's replay validation.

#![deny(unsafe_code)]
#![warn(missing_docs)]

mod capture;
mod error;
mod stream;

pub use capture::CandleCapture;
pub use error::{Error, Result};
pub use stream::CandleStream;
