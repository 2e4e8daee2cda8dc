//! # capture-candle: capture candle models' decode steps on candle's own CUDA stream, safely
//!
//! candle issues its kernels, cuBLAS calls and allocations on one cudarc stream. This crate
//! wraps that stream in [`capture_core`]'s type-state, so a step written with candle ops
//! can be recorded into a CUDA graph with capture-core's guard, its report and its replay
//! validation, and replayed with one launch per token. On top of that it gives the layers
//! and models a real decode loop needs.
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
//! ## 2. Warm up, then capture a graph that owns what it uses
//! Run the step once eagerly first, under [`CandleStream::warm_up`]: that loads candle's
//! kernels, sizes cuBLAS's workspace, and fills candle's cache of small host uploads (shape
//! and stride parameters), none of which may happen during a capture. Then
//! [`CandleStream::capture_owned`] records the step into a [`CandleGraph`] that owns the
//! step's resources: it cannot outlive the tensors it reads (see [`CandleGraph`] for the
//! program that does not compile).
//!
//! ```no_run
//! # fn main() -> Result<(), capture_candle::Error> {
//! # use candle_core::{Device, Tensor, DType};
//! # let device = Device::new_cuda_with_stream(0)?;
//! # let mut cs = capture_candle::CandleStream::new(&device)?;
//! #[derive(capture_candle::Resources)] // lists its tensors: the graph owns them
//! struct Step { w: Tensor, x: Tensor, y: Tensor }
//! let s = std::sync::Arc::new(Step {
//!     w: Tensor::randn(0f32, 1.0, (64, 64), &device)?,
//!     x: Tensor::zeros((1, 64), DType::F32, &device)?,
//!     y: Tensor::zeros((1, 64), DType::F32, &device)?,
//! });
//! let step = |s: &std::sync::Arc<Step>| -> capture_candle::Result<()> {
//!     let out = s.x.matmul(&s.w)?.relu()?;
//!     Ok(s.y.slice_set(&out, 0, 0)?) // results go into a tensor made before the capture
//! };
//! cs.warm_up(|| step(&s).map_err(candle_core::Error::wrap))?;
//! let (graph, report) = cs.capture_owned(s.clone(), step)?;
//! println!("{report}");
//! graph.launch(cs.stream())?;
//! # Ok(()) }
//! ```
//!
//! ## 3. Real models
//! - [`decode`]: capture-ready layers — a static [`KvCache`](decode::KvCache) written at
//!   device positions, rotary embeddings at device positions (with Llama 3 scaling),
//!   grouped-query attention over each row's valid prefix, fused residual + RMSNorm and
//!   SwiGLU, and on-device sampling whose random state advances at every replay.
//! - [`model`]: Llama 3.x and Qwen2 decoders built from them, configured by a Hugging Face
//!   `config.json` and loaded from safetensors (or random weights of a named config).
//! - [`generate`]: prompts prefilled eagerly, then decoded by replaying one graph per
//!   batch bucket ([`CandleFamily`]) until each sequence stops.
//! - [`text`]: text in, text out — a model directory's tokenizer, stop tokens and chat
//!   template, and text decoded as the tokens stream.
//!
//! ## 4. What the capture checks
//! - The graph owns every address it uses. The resources implement [`Resources`] (they list
//!   their tensors; there is none for `Mutex`, `RwLock`, `RefCell` or `Cell`, so a tensor
//!   that could be swapped after the capture does not compile as a resource). Then the
//!   graph's nodes are read back and every address in them must be graph memory, inside a
//!   listed tensor, or an entry of candle's upload caches proven to be one; anything else —
//!   a tensor reached through a lock in the step's closure, a `static`, a thread-local —
//!   refuses the graph with [`Error::Capture`] holding `capture_core::Error::NotOwned`, which
//!   names the node, the address and its allocation. See [`Resources`] and
//!   `docs/soundness.md`.
//! - Every allocation candle made during the capture must be freed during it: a tensor
//!   created in the step and still alive at the end is graph memory that the next replay
//!   cannot reuse ([`Error::UnfreedGraphMemory`]). Write results into tensors made before.
//! - The resources' tensors live on the stream's candle device ([`Error::OtherDevice`]), and
//!   the graph does work: a step whose graph holds only graph allocations, frees, events
//!   and empty nodes ran its work elsewhere, or does nothing, and is refused
//!   ([`Error::EmptyStep`]) rather than replayed as a graph that changes nothing.
//! - candle's host-upload cache is on while capturing: an upload whose bytes were not seen
//!   during warm-up fails the capture (with candle's error) instead of recording a copy from
//!   host memory that is freed before the first replay.
//! - Everything capture-core checks: invalidations named with the driver's code, cudarc's
//!   event tracking off for the capture, the stream idle and usable on every way out.
//!
//! What no guard can see is a host value baked into the step: a position read on the host
//! and folded into an op's offset, or a small upload whose bytes happened to be cached. Keep
//! such values in device memory (the [`decode`] layers do), and check a graph with
//! capture-core's replay validation.

#![deny(unsafe_code)]
#![warn(missing_docs)]

// Everything here runs on candle's CUDA backend. Without it only the documentation builds:
// docs.rs has no nvcc, and documents the crate without `cuda` (see the README).
#[cfg(not(any(feature = "cuda", docsrs)))]
compile_error!("capture-candle runs on candle's CUDA backend: enable its `cuda` feature (a default feature)");

mod capture;
pub mod decode;
mod diff;
mod error;
pub mod generate;
mod graph;
pub mod model;
mod own;
mod raw;
mod stream;
pub mod text;

/// `#[derive(Resources)]`: see [`Resources`].
pub use capture_macros::Resources;
pub use diff::CandleDiff;
pub use error::{Error, Result};
pub use graph::{BucketCapture, CandleFamily, CandleGraph};
pub use own::{Ownership, Resources};

// The derive's expansion names `::capture_candle`, also inside this crate.
extern crate self as capture_candle;

#[doc(hidden)]
pub mod __private {
    pub use candle_core::Tensor;
}
pub use stream::CandleStream;
