//! The `#[capturable]` attribute (use it through `capture_core::capturable`, which re-exports
//! it), and `#[derive(Resources)]` for capture-candle's graphs (through
//! `capture_candle::Resources`).
//!
//! `#[capturable]` marks a function that runs while a stream is capturing a CUDA graph, such as a
//! decode step, and rejects at compile time any body that would break the capture or silently
//! corrupt the graph. Each error points at the offending call, path or type and says what is
//! wrong, why capture breaks, and what to write instead.
//!
//! ```ignore
//! use capture_core::{capturable, Capturing, DeviceBuffer, Error, Kernel, LaunchConfig, Stream};
//!
//! #[capturable]
//! fn decode_step<'a>(
//!     stream: &mut Stream<Capturing<'a>>,
//!     kernel: &'a Kernel,
//!     cfg: LaunchConfig,
//!     x: &'a DeviceBuffer<f32>,
//!     y: &'a DeviceBuffer<f32>,
//!     n: u32,
//! ) -> Result<(), Error> {
//!     stream.memset_async(y, 0)?;
//!     stream.launch(kernel, cfg, (x, y, n))?;
//!     // stream.synchronize()?;  // error: cannot call `.synchronize()` in a `#[capturable]` function
//!     Ok(())
//! }
//! ```
//!
//! # 1. What it rejects
//!
//! | category | examples |
//! | --- | --- |
//! | managed allocation | `cuMemAllocManaged`, `cudaMallocManaged`, `malloc_managed`, `alloc_managed`, `alloc_unified` |
//! | synchronous allocation and free | `cuMemAlloc(_v2)`, `cudaMalloc`, `cuMemAllocHost`, `cuMemHostAlloc`, `malloc_sync`, `malloc_host`, `free_sync`, `cuMemFree`, `cudaFree`; methods `alloc`, `alloc_zeros`, `alloc_uninit`, `alloc_pinned`, `clone_htod`, `upload_new`, `free` |
//! | synchronous copy and memset | `cuMemcpyHtoD`, `cuMemcpyDtoH`, `cuMemcpy`, `cudaMemcpy`, `cuMemsetD8/16/32`, `cudaMemset`, `memcpy_htod_sync`, `memcpy_dtoh_sync`, `memcpy_dtod_sync`, `memset_d8_sync`, `memset_sync`; methods `clone_dtoh`, `memcpy_dtov`, `memcpy_stod`, `upload`, `download`, `download_into`, `read_managed`, `write_managed` |
//! | synchronization and queries | `synchronize` (any receiver or path), `cuStreamSynchronize`, `cuCtxSynchronize`, `cudaDeviceSynchronize`, `cuStreamQuery`, `cuEventQuery`, ...; methods `query`, `is_complete`, `try_is_complete`, `event_complete`, `wait_for_event`, `elapsed_ms` |
//! | idle handles in the signature | a parameter whose type mentions `Stream<Idle>` or plain `Stream` (its state defaults to `Idle`), cudarc's `CudaStream` or `CudaContext`, also behind references, in `Arc<..>`, by full path; and, resolved by the compiler, any parameter whose type *is* `Stream<Idle>`, a `Context`, cudarc's `CudaStream` or `CudaContext`, or a `&`, `&mut`, `Box`, `Arc`, `Rc`, `Option`, `Vec`, slice or array of one, whatever it is called (`use Stream as S`, `type IdleStream = Stream<Idle>`) |
//! | raw driver calls | any call into `cudarc::driver::{sys, result}` (also `runtime`), `sys::cu*`, `result::*`, or a function named like the CUDA API (`cuLaunchKernel`, `cudaGraphLaunch`) |
//! | `async fn` | capture cannot span an `.await` |
//!
//! cudarc 0.19's `CudaStream::memcpy_htod`, `memcpy_dtoh`, `memcpy_dtod` and `memset_zeros` are
//! asynchronous and are not rejected. Driver names match with or without their `_v2`, `_ptds`
//! and `_ptsz` suffixes. Ordinary words (`free`, `alloc`, `query`, `upload`, ...) are rejected as
//! method calls and as `Type::method` paths, never as free functions such as `libc::free` or
//! `std::alloc::alloc`.
//!
//! # 2. What it sees through
//!
//! - full paths (`::cudarc::driver::result::malloc_sync`), `Type::method(..)` calls and method
//!   calls on any receiver;
//! - `use … as alias` declared anywhere inside the function body, including module aliases
//!   (`use cudarc::driver::sys as s; s::cuMemAlloc_v2(..)`);
//! - closures, nested blocks, `unsafe` and `async` blocks;
//! - the arguments of macros that parse as comma-separated expressions (`println!`, `assert!`,
//!   `format!`, `vec![a, b]`, ...) or as statements; other macro bodies are skipped;
//! - paths to a forbidden function used as a value (`let f = cudarc::driver::result::free_sync;`).
//!
//! # 3. Allowing a call
//!
//! `#[capturable(allow(name, ...), reason = "...")]` allows the named calls: a path's last segment,
//! a method's name, or a handle type's name (`CudaStream`). A reason is required. `async fn` is
//! never allowed.
//!
//! # 4. Known limits, and what covers them
//!
//! The checker reads this function's tokens; apart from the parameter types (below), it does
//! not resolve names or follow calls. So it misses:
//!
//! - a forbidden call hidden behind a helper function that is not itself `#[capturable]`;
//! - calls through function pointers, closures passed in as arguments, and trait objects;
//! - `use … as alias` declared at module level, outside the function: the alias's own name is
//!   what the checker sees (a `use` of the original name is fine, since names match by their last
//!   segment);
//! - items nested inside the body (a nested `fn` is a separate function: annotate it too), and
//!   macro bodies that are not expressions or statements.
//!
//! These gaps are covered by the two other layers below.
//!
//! # 5. The guarantee, and where it ends
//!
//! Three layers together, each covering what the one before cannot see (issue #13, item 3):
//!
//! 1. **Type-state (compile time, everywhere).** A `#[capturable]` function takes
//!    `&mut Stream<Capturing<'a>>`. On it the synchronous allocation, copy, memset, free,
//!    synchronize and query methods do not compile: each is gated on a trait only `Idle`
//!    implements, whose error names the fix. `Stream::context()` is gated the same way
//!    (`ContextAccess`), buffers do not give out their context, and no method of a capturing
//!    stream or a guard returns an idle stream, a `Context` or a cudarc handle. So *whatever* the
//!    capturing stream is handed to (a helper, a function pointer, a trait object) cannot reach a
//!    blocking call through it.
//! 2. **The attribute (compile time, the annotated function).** It rejects the forbidden calls
//!    in the function's own body by name, and any parameter that *is* an idle handle (`Stream<Idle>`,
//!    `Context`, cudarc's `CudaStream`/`CudaContext`, or a reference or smart pointer to one) by
//!    type, resolved by the compiler, so aliases do not hide one: each parameter gets a generated
//!    check, a never-called closure first in the body, whose error is spanned on the parameter's
//!    type. A type parameter (`S: Records<'a>`) is checked through its bounds by the type-state;
//!    `impl Trait` parameters and `const fn`s are not checked (neither can be named in the body).
//! 3. **Fail-fast (run time, the whole context).** What the types cannot see is a handle obtained
//!    some other way: a `Context` or idle stream kept in a struct field, a global, a closure's
//!    captures, or one reached through a parameter's fields. An un-annotated helper can use it to
//!    call `alloc_managed`, `upload`, `synchronize`, ... During a `Global` (the default) or
//!    `ThreadLocal` capture every such call through this crate is refused with
//!    `Error::CaptureActive` *before* the driver is called, so the capture stays intact and
//!    finishes (tested in `tests/tests/capturable.rs`). In `Relaxed` mode it runs eagerly and the
//!    capture report lists it.
//!
//! Where it ends: code that bypasses this crate altogether, calling cudarc or the driver directly
//! with handles it obtained itself, is seen by none of the three layers; its synchronous calls
//! invalidate the capture (reported as `Error::CaptureInvalidated` at `finish`) or, for a
//! synchronous copy, run once and are missing from the graph. Raw FFI in this crate lives only in
//! `capture-core`'s raw layer.

#![warn(missing_docs)]

extern crate proc_macro;

mod attr;
mod check;
mod expand;
mod resources;
mod rules;

/// Rejects, at compile time, a function body that would break or silently corrupt a CUDA graph
/// capture. See the [crate docs](crate) for what it rejects, how to allow a call, and its limits.
#[proc_macro_attribute]
pub fn capturable(args: proc_macro::TokenStream, input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    expand::capturable(args.into(), input.into()).into()
}

/// `#[derive(Resources)]`: lists a struct's (or enum's) tensors for a candle graph that owns
/// it. Use it through `capture_candle::Resources`, which re-exports it.
///
/// Every field's type must implement `capture_candle::Resources` itself. `Mutex`, `RwLock`,
/// `RefCell`, `Cell` and the other cells have no implementation: a tensor behind one could
/// be swapped after the capture, so a struct holding one does not compile, and the error
/// points at that field's type. Unions are refused.
#[proc_macro_derive(Resources)]
pub fn derive_resources(input: proc_macro::TokenStream) -> proc_macro::TokenStream {
    resources::derive(input.into()).into()
}
