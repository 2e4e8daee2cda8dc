//! The examples are in this folder: `cargo run --example 01_capture_and_replay`. This
//! library holds what several of them share.

use capture_core::{kernels, Context, DeviceKind};

/// GPU 0 when present, else the simulated device (with the shipped kernels' host
/// implementations registered); prints which.
pub fn open_device() -> Context {
    let ctx = Context::open_default();
    match ctx.kind() {
        DeviceKind::Cuda => println!("device: {} (CUDA GPU {})", ctx.name(), ctx.ordinal()),
        _ => {
            println!("device: simulated device — no GPU: {}", ctx.fallback_reason().unwrap_or("not requested"));
            if let Some(sim) = ctx.sim() {
                kernels::register_chain_kernels(sim);
            }
        }
    }
    ctx
}
