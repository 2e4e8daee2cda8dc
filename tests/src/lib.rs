//! Shared fixtures for the integration tests in `tests/tests/`: every scenario runs on the
//! simulated device (in CI) and, as an `#[ignore = "needs a CUDA device"]` test, on the GPU.
//! Under `CAPTURE_REQUIRE_GPU=1` a missing GPU fails the GPU variant instead of skipping it.

use capture_core::{kernels, Context, DeviceKind, Kernel, Module, Result, Stream};

/// A context, a stream and the shipped kernels.
pub struct Fixture {
    /// The context.
    pub ctx: Context,
    /// An idle stream.
    pub stream: Stream,
    /// The shipped module.
    pub module: Module,
    /// `add_f32(a, b, out, n)`.
    pub add: Kernel,
    /// `scale_f32(x, out, alpha, n)`.
    pub scale: Kernel,
    /// `incr_f32(x, n)`.
    pub incr: Kernel,
    /// `add_scalar_from_ptr_f32(x, pos, n)`.
    pub add_ptr: Kernel,
}

impl Fixture {
    /// A fixture on `ctx` (host kernels registered on the simulated device).
    pub fn new(ctx: Context) -> Result<Self> {
        if let Some(sim) = ctx.sim() {
            kernels::register_chain_kernels(sim);
        }
        let stream = ctx.new_stream()?;
        let module = ctx.load_module(kernels::CHAIN_PTX)?;
        Ok(Self {
            add: module.kernel("add_f32")?,
            scale: module.kernel("scale_f32")?,
            incr: module.kernel("incr_f32")?,
            add_ptr: module.kernel("add_scalar_from_ptr_f32")?,
            module,
            stream,
            ctx,
        })
    }
}

/// The simulated device.
pub fn sim() -> Context {
    Context::simulated()
}

/// Serializes GPU tests: a Global-mode capture is process-wide (every other thread's
/// allocation fails and invalidates it), so GPU tests cannot share the device concurrently.
pub fn gpu_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|p| p.into_inner())
}

/// GPU 0, or `None` (skip) when there is none — unless `CAPTURE_REQUIRE_GPU=1`, where a
/// missing GPU is a failure.
pub fn gpu() -> Option<Context> {
    match Context::open(0) {
        Ok(c) => {
            assert_eq!(c.kind(), DeviceKind::Cuda);
            Some(c)
        }
        Err(e) => {
            if std::env::var("CAPTURE_REQUIRE_GPU").as_deref() == Ok("1") {
                panic!("CAPTURE_REQUIRE_GPU=1 but no GPU could be opened: {e}");
            }
            eprintln!("skipping GPU test: {e}");
            None
        }
    }
}

/// Device memory in use (bytes): the driver's total minus free.
pub fn mem_in_use(ctx: &Context) -> usize {
    let (free, total) = ctx.mem_info().expect("mem_info");
    total - free
}

/// Defines `mod $name { fn sim(); fn gpu(); }` running `$body(Context)` on each device.
#[macro_export]
macro_rules! on_both {
    ($name:ident, $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[test]
            fn sim() {
                let f: fn(capture_core::Context) = $body;
                f($crate::sim());
            }
            #[test]
            #[ignore = "needs a CUDA device"]
            fn gpu() {
                let f: fn(capture_core::Context) = $body;
                let _serial = $crate::gpu_lock();
                if let Some(ctx) = $crate::gpu() {
                    f(ctx);
                }
            }
        }
    };
}

/// cudarc's context type, for the interop tests.
pub use cudarc::driver::CudaContext;

/// `n` GPUs of this process (ordinals 0..n), or `None` (skip) when fewer are present —
/// unless `CAPTURE_REQUIRE_GPUS` is at least `n`, where that is a failure.
pub fn gpu_world(n: usize) -> Option<Vec<Context>> {
    let required = std::env::var("CAPTURE_REQUIRE_GPUS").ok().and_then(|v| v.parse::<usize>().ok()).unwrap_or(0);
    let mut out = Vec::new();
    for i in 0..n {
        match Context::open(i) {
            Ok(c) => out.push(c),
            Err(e) => {
                if required >= n {
                    panic!("CAPTURE_REQUIRE_GPUS={required} but GPU {i} could not be opened: {e}");
                }
                eprintln!("skipping a {n}-GPU test: {e}");
                return None;
            }
        }
    }
    Some(out)
}

/// Runs a multi-device scenario on a simulated world of `n` devices (a test) and on `n`
/// GPUs (an ignored test: `--include-ignored` on a machine with them).
#[macro_export]
macro_rules! on_world {
    ($name:ident, $n:expr, $body:expr) => {
        mod $name {
            #[allow(unused_imports)]
            use super::*;
            #[test]
            fn sim() {
                let f: fn(Vec<capture_core::Context>) = $body;
                f(capture_core::Context::simulated_world($n).expect("world"));
            }
            #[test]
            #[ignore = "needs CUDA devices"]
            fn gpu() {
                let f: fn(Vec<capture_core::Context>) = $body;
                let _serial = $crate::gpu_lock();
                if let Some(ctxs) = $crate::gpu_world($n) {
                    f(ctxs);
                }
            }
        }
    };
}
