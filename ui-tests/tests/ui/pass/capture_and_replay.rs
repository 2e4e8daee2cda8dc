// The intended use compiles: allocate first, capture, finish, replay; a helper generic over
// the state runs both eagerly and inside a capture.
use capture_core::{kernels, Context, DeviceBuffer, LaunchConfig, Records, Result, Stream};

fn clear<'a, S: Records<'a>>(s: &mut Stream<S>, buf: &'a DeviceBuffer<f32>) -> Result<()> {
    s.memset_async(buf, 0)
}

fn main() -> Result<()> {
    let ctx = Context::simulated();
    kernels::register_chain_kernels(ctx.sim().unwrap());
    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let incr = module.kernel("incr_f32")?;
    let x = stream.alloc_zeros::<f32>(256)?;
    let host = stream.alloc_pinned::<f32>(256)?;
    clear(&mut stream, &x)?;
    let mut g = stream.capture()?;
    clear(g.stream(), &x)?;
    g.launch(&incr, LaunchConfig::for_num_elems(256), (&x, 256u32))?;
    g.download_async(&host, &x)?;
    let (graph, _report) = g.finish()?;
    graph.launch(&mut stream)?;
    stream.synchronize()?;
    assert_eq!(host.read()[0], 1.0);
    host.write(&[5.0; 256])?;
    drop(graph);
    drop(x);
    Ok(())
}
