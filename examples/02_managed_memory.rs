//! A managed (unified) buffer: lives on the GPU, readable from the CPU, prefetched on a
//! stream, used by a captured graph, and read back from the host. Runs on the GPU when
//! present, otherwise on the simulated device.

use capture_core::{kernels, Context, LaunchConfig, Result};

fn main() -> Result<()> {
    let ctx = Context::open_default();
    println!("device: {} ({})", ctx.name(), ctx.kind());
    if let Some(sim) = ctx.sim() {
        kernels::register_chain_kernels(sim);
    }
    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let incr = module.kernel("incr_f32")?;

    // Managed memory is allocated before capture (allocating it during capture invalidates
    // the capture, and hangs on some systems), never more than the device has free.
    let n = 1 << 20;
    let weights = stream.alloc_managed::<f32>(n)?;
    stream.write_managed(&weights, &vec![41.0; n])?; // host writes, in place
    stream.prefetch_to_device(&weights)?; // migrate before the GPU touches it

    let mut g = stream.capture()?;
    g.launch(&incr, LaunchConfig::for_num_elems(n as u32), (&*weights, n as u32))?;
    let (graph, report) = g.finish()?;
    println!("{report}");
    graph.launch(&mut stream)?;

    let host = stream.read_managed(&weights)?; // synchronizes, then reads on the host
    println!("weights[0] = {} (expected 42)", host[0]);
    assert_eq!(host[0], 42.0);
    Ok(())
}
