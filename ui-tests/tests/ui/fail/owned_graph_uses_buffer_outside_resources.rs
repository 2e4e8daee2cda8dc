// An OwnedGraph keeps only its resources alive, so its capture may use only what it is
// handed from them: a buffer from outside could be dropped while the graph still reads it.
use capture_core::{kernels, Context, Kernel, LaunchConfig, OwnedGraph, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let incr: Kernel = module.kernel("incr_f32")?;
    let outside = stream.alloc_zeros::<f32>(256)?;
    let (graph, _report) = OwnedGraph::capture(&mut stream, incr, |s, k| {
        s.launch(k, LaunchConfig::for_num_elems(256), (&outside, 256u32))
    })?;
    drop(outside);
    graph.launch(&mut stream)?;
    Ok(())
}
