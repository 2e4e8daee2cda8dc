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
//! What the types cannot stop is caught at run time, with a typed error: a forked stream
//! used after its capture ended ([`Error::CaptureEnded`]), guards whose streams were
//! swapped ([`Error::CaptureStreamSwapped`]). A guard leaked with `mem::forget` leaves its
//! capture open; [`Context::end_dangling_captures`] ends and discards it.
//!
//! ## 6. Hot paths: `#[capturable]`
//! The [`capturable`] attribute rejects function bodies that call synchronous or managed
//! allocation, synchronous copies, synchronization, raw driver calls, or take idle stream
//! handles.
//!
//! ## 7. Prove the graph replays what the eager code computes
//! A value the host passed by value at capture time — a decode position folded into a
//! kernel argument or a pointer offset, a small upload that ran once during the capture —
//! is frozen into every replay, and nothing fails. [`ReplayCheck`] finds it: on `n` fresh
//! input sets it replays the graph and runs the same work eagerly, compares the outputs you
//! read back, and returns the first divergence as [`Error::ReplayDiverged`] (which output,
//! which input set, which element, eager and replayed values). See [`validate`].
//!
//! ```
//! # use capture_core::*;
//! # fn main() -> Result<()> {
//! # let ctx = Context::simulated();
//! # kernels::register_chain_kernels(ctx.sim().unwrap());
//! # let mut stream = ctx.new_stream()?;
//! # let module = ctx.load_module(kernels::CHAIN_PTX)?;
//! let fill = module.kernel("fill_f32")?;
//! let y = stream.alloc_zeros::<f32>(256)?;
//! let cfg = LaunchConfig::for_num_elems(256);
//! let step = |pos: u32| (&y, pos as f32, 256u32);      // the position passed by value: a bug
//! let mut g = stream.capture()?;
//! g.launch(&fill, cfg, step(7))?;
//! let (graph, _) = g.finish()?;
//! let err = ReplayCheck::new(4)
//!     .run(
//!         &graph,
//!         &mut stream,
//!         |_, _| Ok(()),                                    // write input set i
//!         |i, s| s.launch(&fill, cfg, step(10 + i as u32)), // the same step, eagerly
//!         |s| Ok(Outputs::new().with("y", s.download(&y)?)),
//!     )
//!     .unwrap_err();
//! assert!(matches!(err, Error::ReplayDiverged { input_set: 0, element: 0, .. }));
//! // the graph's replay diverged from the eager run on output `y`, input set 0, element 0:
//! // eager 10.0, replay 7.0 (256 of 256 elements differ). This usually means a host value
//! // was baked in at capture time: ...
//! # Ok(()) }
//! ```

//! ## 8. Interop: adopt capture in a cudarc (or candle) code base
//! Existing code keeps its cudarc objects; capture comes in one function at a time.
//!
//! 1. **Wrap the context and stream you already have.** [`Context::from_cudarc`] takes
//!    your `Arc<CudaContext>`, [`Context::wrap_cudarc_stream`] your `Arc<CudaStream>`
//!    (candle's stream, for instance); [`Stream::cudarc`] hands it back.
//! 2. **Pass your buffers as they are.** `&CudaSlice<T>`, `&CudaView<T>` and
//!    `&CudaViewMut<T>` (and `&`/`Arc`/`Rc`/`Box` of them) are [`DeviceMemory`], accepted
//!    wherever a [`DeviceBuffer`] is: kernel arguments, `copy_async`, `memset_async`,
//!    `upload_async`/`download_async` through pinned buffers, `upload`/`download`, and
//!    `Blas::sgemm` (feature `cublas`). The [`Graph`] borrows them, so dropping a slice while a graph that
//!    uses it lives does not compile. A slice of another CUDA context is
//!    [`Error::ContextMismatch`].
//! 3. **Make your own types kernel arguments** with the public [`KernelArg`] trait: return
//!    [`KernelParam::device_ptr`]`(&self.storage)` (borrowed, so graphs borrow your type).
//!    The raw-address routes ([`KernelParam::raw_device_ptr`], `DeviceBuffer::device_ptr`)
//!    are `unsafe`: a bare `u64` cannot carry a borrow.
//! 4. **Launch your kernels.** [`Kernel::from_cudarc`] (or
//!    [`Kernel::from_cudarc_module`]) wraps a `CudaFunction`; given the PTX text it came
//!    from, every launch is checked against the entry's `.param` list — count, sizes and
//!    type class (a `u32` for an `.f32` is refused, naming the parameter).
//!    `Blas::from_cudarc` (feature `cublas`) wraps your `CudaBlas`, setting a workspace before capture.
//! 5. **Capture as usual.** For the length of every capture on a wrapped context, cudarc's
//!    per-buffer event tracking is switched off and then restored to what it was — on
//!    `finish`, drop, `?` and panic alike, counted across concurrent captures. Left on, a
//!    launch inside the capture would wait on an event recorded before it and break it with
//!    `CUDA_ERROR_STREAM_CAPTURE_ISOLATION`; [`Error::CaptureInvalidated`] explains that
//!    code, and names the last operation the library saw.
//! 6. **Read the report.** Its node counts come from the graph itself, so they include what
//!    a framework issued on the stream through cudarc (allocation nodes included).
//!
//! **What the types cannot stop, and what this crate does instead.** A clone of
//! `Stream::cudarc()` (or a framework holding the same `CudaStream`) can still call cudarc
//! directly during a capture. This crate does not intercept cudarc; it makes each such call
//! visible rather than refusing it, because refusing would need a wrapper around every
//! cudarc entry point, and code written for cudarc (candle) would not go through it:
//! - `synchronize`, queries, and synchronous copies on the capturing stream are refused by
//!   the driver, which invalidates the capture: `finish` returns
//!   [`Error::CaptureInvalidated`] with the driver code, the last operation this library
//!   recorded, and the likely cause (a call made behind its back);
//! - an upload from a `Vec` (`CudaStream::memcpy_htod`) is *recorded* by the driver as a copy
//!   from pageable host memory, which every replay re-reads from an address that no longer
//!   holds the data: it is listed in [`CaptureReport::unpinned_host_copies`] (read from the
//!   graph's copy nodes) and logged as a warning; upload through a [`PinnedBuffer`] with
//!   `upload_async` instead;
//! - allocations through cudarc (`alloc_zeros` with stream-ordered allocation) become graph
//!   memory nodes, counted in the report's `nodes.mem_alloc`.
//!
//! ```
//! use capture_core::*;
//! # fn main() -> Result<()> {
//! // With a GPU: let ctx = Context::from_cudarc(cuda_ctx)?; let mut stream = ctx.wrap_cudarc_stream(cuda_stream)?;
//! let ctx = Context::simulated();
//! # kernels::register_chain_kernels(ctx.sim().unwrap());
//! let mut stream = ctx.new_stream()?;
//! let module = ctx.load_module(kernels::CHAIN_PTX)?;
//! let scale = module.kernel("scale_f32")?; // (x: .u64, out: .u64, alpha: .f32, n: .u32)
//! let x = stream.upload_new(&[1.0f32; 256])?;
//! let out = stream.alloc_zeros::<f32>(256)?;
//! let cfg = LaunchConfig::for_num_elems(256);
//! // An integer where the PTX says `.f32` has the right size and computes garbage: refused.
//! let e = stream.launch(&scale, cfg, (&x, &out, 2u32, 256u32)).unwrap_err();
//! assert!(matches!(e, Error::ArgumentMismatch { .. }));
//! let mut g = stream.capture()?;
//! g.launch(&scale, cfg, (&x, &out, 2.0f32, 256u32))?;
//! let (graph, report) = g.finish()?;
//! assert!(report.unpinned_host_copies.is_empty());
//! graph.launch(&mut stream)?;
//! assert_eq!(stream.download(&out)?[0], 2.0);
//! # Ok(()) }
//! ```

//! ## 9. Draw a graph; hand it to cudarc
//! [`Graph::to_dot`] draws the graph as Graphviz DOT: on the GPU the driver's own picture
//! (`cuGraphDebugDotPrint`) with a note listing this library's operations and call sites; on
//! the simulated device its node list, each node labelled with the operation and call site
//! that recorded it. [`Graph::as_raw_graph`] and [`Graph::as_raw_exec`] hand the driver's
//! `CUgraph`/`CUgraphExec` to code that uses cudarc's raw graph API, and
//! [`CaptureOptions::instantiate`] takes [`InstantiateFlags`]: upload, auto-free-on-launch,
//! device launch, node priorities.
//!
//! ```
//! # use capture_core::*;
//! # fn main() -> Result<()> {
//! # let ctx = Context::simulated();
//! # kernels::register_chain_kernels(ctx.sim().unwrap());
//! let mut stream = ctx.new_stream()?;
//! let incr = ctx.load_module(kernels::CHAIN_PTX)?.kernel("incr_f32")?;
//! let x = stream.alloc_zeros::<f32>(256)?;
//! let flags = InstantiateFlags::new().upload(true).device_launch(true);
//! let mut g = stream.capture_with(CaptureOptions::new().instantiate(flags))?;
//! g.launch(&incr, LaunchConfig::for_num_elems(256), (&x, 256u32))?;
//! let mut side = g.fork()?;
//! side.launch(&incr, LaunchConfig::for_num_elems(256), (&x, 256u32))?;
//! g.join(side)?;
//! let (graph, _) = g.finish()?;
//! let dot = graph.to_dot()?; // or graph.write_dot("graph.dot")?, then `dot -Tpng`
//! assert!(dot.contains("incr_f32") && dot.contains("Stream::fork"));
//! assert!(graph.as_raw_exec().is_none()); // Some(CUgraphExec) on the GPU
//! # Ok(()) }
//! ```
//!
//! ## 10. Engines: graphs that live in a struct, families per batch size, fallback
//! [`engine`] has what a serving engine keeps for the life of the process:
//! [`OwnedGraph`] (a `'static` graph that owns its resources), [`GraphFamily`] (one graph
//! per batch-size bucket sharing the device's graph-memory pool, with bucket selection and
//! padding counts), and [`Fallback`] (capture a [`Region`] once, or run it eagerly from then
//! on when it cannot be captured, saying why). [`Context::graph_memory`] reads the pool.
//!
//! ## 11. Loops decided on the device
//! [`control`] records a loop into the graph as a conditional WHILE node: one launch runs up
//! to K steps and stops on the device when a step counter reaches K or the body writes a stop
//! token — no host round trip per step. The body is a `Stream<Capturing>` like any other.
//! (Issue #12, first increment: proven on the simulated device; the driver mechanism it uses
//! was measured on an H100, `docs/probe/conditional.md`.)
//!
//! ## 12. Find baked host values while capturing
//! [`ReplayCheck`] finds a host value frozen into a graph after the fact, by replaying;
//! [`Stream::capture_diff`] finds it at capture time and names it: it captures a step twice,
//! with the host inputs changed in between (a position 3, then 7), and compares the two
//! graphs node by node. Every kernel parameter, pointer offset, copy, size or node that
//! differs is a place where the host value reached the graph, reported with the operation
//! and call site that recorded it. See [`diff`].
//!
//! ## 13. Prove a graph owns every address it uses
//! Work recorded behind the library's back (a candle op, a cuBLAS call) borrows nothing, so
//! lifetimes cannot stop its graph from outliving the memory it reads. [`own::prove`] checks
//! the graph itself instead: every address in its nodes must be graph memory or inside
//! memory the graph was declared to own, else [`Error::NotOwned`] names the node, the
//! address and its allocation. capture-candle runs it on every graph it captures. See
//! [`own`], and `docs/soundness.md` for what the types, the proof and the caller each
//! guarantee.

#![deny(unsafe_code)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

// The modules by layer, bottom first: each imports only from its own layer and those listed
// before it (ARCHITECTURE.md; `tests/tests/layers.rs` checks it).

// 0. raw: every `unsafe` of the crate, and the handles and plain values the driver speaks.
mod raw;

// 1. device backends: the `Backend` trait, the CUDA backend, the simulated device.
pub mod device;
pub mod kernels;
pub mod ptx;

// 2. values: errors, reports, memory, events, modules and kernels, and the handle they hold.
mod buffer;
mod element;
mod error;
mod event;
mod handle;
mod interop;
mod module;
mod registry;
mod report;
mod snapshot;
mod watchdog;

// 3. capture: the context, the stream type-state, graphs, the guard.
mod book;
#[doc(hidden)]
pub mod capturable_check;
mod context;
mod graph;
mod guard;
mod instantiate;
mod state;
mod stream;

// 4. capabilities: what is built from captures.
#[cfg(feature = "cublas")]
mod blas;
#[cfg(feature = "nccl")]
#[cfg_attr(docsrs, doc(cfg(feature = "nccl")))]
pub mod collective;
pub mod control;
pub mod diff;
pub mod engine;
pub mod own;
mod pool;
mod scalar;
pub mod validate;

#[cfg(feature = "cublas")]
#[cfg_attr(docsrs, doc(cfg(feature = "cublas")))]
pub use blas::{Blas, Transpose};
pub use book::AllocPolicy;
pub use buffer::{DeviceBuffer, GraphBuffer, ManagedBuffer, PinnedBuffer};
pub use capture_macros::capturable;
pub use context::Context;
pub use device::{CaptureMode, DeviceKind, GraphMemUsage, NodeCounts};
pub use engine::{Fallback, GraphFamily, OwnedGraph, Path, Region};
pub use error::{CallSite, DriverCode, Error, NotOwned, OpSite, Result};
pub use event::Event;
pub use graph::{Graph, InstantiateFlags};
pub use guard::{CaptureGuard, CaptureOptions, GraphUpdate};
pub use interop::DeviceMemory;
pub use module::{Kernel, KernelArg, KernelArgs, KernelParam, LaunchConfig, Module, MAX_KERNEL_ARGS};
pub use pool::CapturePool;
pub use report::{AllocRecord, CaptureReport, HostCopy, WatchdogReport};
pub use scalar::DeviceScalar;
pub use state::{
    Capturing, CommInit, ContextAccess, Free, Idle, LoopSetup, ManagedAlloc, PinnedAlloc, Query, Records, StreamState,
    SyncAlloc, SyncCopy, Synchronize,
};
pub use stream::{BeginCapture, Stream};
pub use validate::{Outputs, ReplayCheck, ReplayCheckReport, Tolerance};

#[cfg(test)]
mod tests;

// The README (the crate's page on crates.io) runs as a doc test, so its example stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctest;

/// Items the `#[capturable]` expansion refers to by absolute path. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::capturable_check;
    pub use crate::state::{Capturing, Records};
}
