// A graph borrows every buffer it uses: freeing one while the graph lives would be
// CUDA_ERROR_ILLEGAL_ADDRESS at the next replay.
use capture_core::{kernels, Context, LaunchConfig, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let incr = module.kernel("incr_f32")?;
    let x = stream.alloc_zeros::<f32>(256)?;
    let mut g = stream.capture()?;
    g.launch(&incr, LaunchConfig::for_num_elems(256), (&x, 256u32))?;
    let (graph, _report) = g.finish()?;
    drop(x);
    graph.launch(&mut stream)?;
    Ok(())
}
