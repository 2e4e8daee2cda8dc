// Issue #9, part 2: a graph borrows the cudarc `CudaSlice`s it uses, like its own buffers:
// dropping one while the graph lives would be CUDA_ERROR_ILLEGAL_ADDRESS at the next replay.
use std::sync::Arc;

use capture_core::{kernels, Context, LaunchConfig, Result};
use cudarc::driver::{CudaContext, CudaSlice};

fn replay_after_drop(cu: Arc<CudaContext>, slice: CudaSlice<f32>) -> Result<()> {
    let ctx = Context::from_cudarc(cu)?;
    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let incr = module.kernel("incr_f32")?;
    let mut g = stream.capture()?;
    g.launch(&incr, LaunchConfig::for_num_elems(256), (&slice, 256u32))?;
    let (graph, _report) = g.finish()?;
    drop(slice);
    graph.launch(&mut stream)?;
    Ok(())
}

fn main() {
    let _ = replay_after_drop;
}
