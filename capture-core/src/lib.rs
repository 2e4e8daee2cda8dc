//! # capture-core: CUDA graph capture that cannot go wrong silently
//!
//! CUDA graphs replay hundreds of kernels with one submission, but capturing one is full of
//! traps: a synchronous copy during capture returns success, runs once *now* and is missing
//! from every replay; a synchronize or an allocation invalidates the capture; a buffer freed
//! while a graph still uses it is an illegal address at replay. This crate turns those traps
//! into compile errors and typed errors.
//!
//! ## 1. Open a device
//! [`Context::open_default`] takes GPU 0 when a CUDA driver and device are present, and the
//! [simulated device](device::sim) otherwise (same API, same capture rules as an H100, host
//! memory), so everything below runs on a laptop too.
//!
//! ```
//! use capture_core::{Context, DeviceKind};
//! let ctx = Context::open_default();
//! if ctx.kind() == DeviceKind::Simulated {
//!     // Give the simulated device host implementations of the shipped kernels.
//!     capture_core::kernels::register_chain_kernels(ctx.sim().unwrap());
//! }
//! ```
//!
//! ## 2. Allocate and load kernels *before* capturing
//! ```
//! # use capture_core::*;
//! # fn main() -> Result<()> {
//! # let ctx = Context::simulated();
//! # kernels::register_chain_kernels(ctx.sim().unwrap());
//! let mut stream = ctx.new_stream()?;
//! let module = ctx.load_module(kernels::CHAIN_PTX)?;
//! let add = module.kernel("add_f32")?;
//! let a = stream.upload_new(&[1.0f32; 1024])?;
//! let b = stream.upload_new(&[2.0f32; 1024])?;
//! let out = stream.alloc_zeros::<f32>(1024)?;
//! # Ok(()) }
//! ```
//!
//! ## 3. Capture with the guard, replay the graph
//! ```
//! # use capture_core::*;
//! # fn main() -> Result<()> {
//! # let ctx = Context::simulated();
//! # kernels::register_chain_kernels(ctx.sim().unwrap());
//! # let mut stream = ctx.new_stream()?;
//! # let module = ctx.load_module(kernels::CHAIN_PTX)?;
//! # let add = module.kernel("add_f32")?;
//! # let a = stream.upload_new(&[1.0f32; 1024])?;
//! # let b = stream.upload_new(&[2.0f32; 1024])?;
//! # let out = stream.alloc_zeros::<f32>(1024)?;
//! let mut g = stream.capture()?;                       // Stream<Idle> is now borrowed
//! g.launch(&add, LaunchConfig::for_num_elems(1024), (&a, &b, &out, 1024u32))?;
//! let (graph, report) = g.finish()?;                   // Graph<'_> borrows a, b, out
//! println!("{report}");
//! for _ in 0..10 {
//!     graph.launch(&mut stream)?;
//! }
//! assert_eq!(stream.download(&out)?[0], 3.0);
//! # Ok(()) }
//! ```
//!
//! ## 4. What does not compile
//! On a `Stream<Capturing>` there is no synchronous allocation, pinned or managed
//! allocation, synchronous copy or memset, synchronize, query or free: each is gated on a
//! trait only [`Idle`] implements, and the compiler's message names the fix.
//!
//! ```compile_fail
//! # use capture_core::*;
//! # fn f(ctx: Context) -> Result<()> {
//! let mut stream = ctx.new_stream()?;
//! let mut g = stream.capture()?;
//! let tmp = g.alloc_zeros::<f32>(16)?; // error: synchronous allocation is not allowed on a capturing stream
//! # Ok(()) }
//! ```
//!
//! A graph borrows what it uses, so it cannot outlive a buffer:
//! ```compile_fail
//! # use capture_core::*;
//! # fn f(ctx: Context, k: Kernel) -> Result<()> {
//! let mut stream = ctx.new_stream()?;
//! let buf = stream.alloc_zeros::<f32>(16)?;
//! let mut g = stream.capture()?;
//! g.launch(&k, LaunchConfig::for_num_elems(16), (&buf, 16u32))?;
//! let (graph, _) = g.finish()?;
//! drop(buf); // error: cannot move out of `buf` because it is borrowed
//! graph.launch(&mut stream)?;
//! # Ok(()) }
//! ```
//!
//! ## 5. Every other way out of a capture is safe
//! Dropping the guard (an early `?`, a panic) ends the capture, discards the partial graph,
//! leaves the stream idle, and reports what happened, capture-time allocations included
//! ([`Context::take_abandoned_reports`]). [`Stream::capture_scope`] is the closure form.
//! Work that cannot be recorded but is issued on *another* stream during a capture runs
//! once and is listed in [`CaptureReport::ran_eagerly`]; an operation that invalidates
//! the capture is named in [`Error::CaptureInvalidated`].
//!
//! ## 6. Hot paths: `#[capturable]`
//! The [`capturable`] attribute rejects function bodies that call synchronous or managed
//! allocation, synchronous copies, synchronization, raw driver calls, or take idle stream
//! handles.

#![deny(unsafe_code)]
#![warn(missing_docs)]

#[cfg(feature = "cublas")]
mod blas;
mod buffer;
#[doc(hidden)]
pub mod capturable_check;
mod context;
pub mod device;
mod error;
mod event;
mod graph;
mod guard;
pub mod kernels;
mod module;
mod pool;
pub mod ptx;
mod raw;
mod registry;
mod report;
mod scalar;
mod state;
mod stream;
mod watchdog;

#[cfg(feature = "cublas")]
pub use blas::{Blas, Transpose};
pub use buffer::{DeviceBuffer, GraphBuffer, ManagedBuffer, PinnedBuffer};
pub use capture_macros::capturable;
pub use context::Context;
pub use device::{CaptureMode, DeviceKind, NodeCounts};
pub use error::{CallSite, DriverCode, Error, OpSite, Result};
pub use event::Event;
pub use graph::Graph;
pub use guard::{AllocPolicy, AllocRecord, CaptureGuard, CaptureOptions, GraphUpdate};
pub use module::{Kernel, KernelArg, KernelArgs, LaunchConfig, Module, MAX_KERNEL_ARGS};
pub use pool::CapturePool;
pub use report::{CaptureReport, WatchdogReport};
pub use scalar::DeviceScalar;
pub use state::{
    BeginCapture, Capturing, ContextAccess, Free, Idle, ManagedAlloc, PinnedAlloc, Query, Records, StreamState,
    SyncAlloc, SyncCopy, Synchronize,
};
pub use stream::Stream;

/// Items the `#[capturable]` expansion refers to by absolute path. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::capturable_check;
    pub use crate::state::{Capturing, Records};
}
