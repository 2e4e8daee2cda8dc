// The graph also borrows the kernels it launches: their module stays loaded while it lives.
use capture_core::{kernels, Context, LaunchConfig, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let x = stream.alloc_zeros::<f32>(256)?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let incr = module.kernel("incr_f32")?;
    let mut g = stream.capture()?;
    g.launch(&incr, LaunchConfig::for_num_elems(256), (&x, 256u32))?;
    let (graph, _report) = g.finish()?;
    drop(incr);
    graph.launch(&mut stream)?;
    Ok(())
}
