//! A decode step as a hot path writes it: kernel launches, graph memory from `alloc_async`, and
//! asynchronous copies through pinned buffers. `#[capturable]` accepts it, and it captures and
//! replays on the simulated device.

use capture_core::{
    capturable, kernels, Capturing, Context, DeviceBuffer, Error, GraphBuffer, Kernel, LaunchConfig, PinnedBuffer,
    Stream,
};

struct Kernels {
    add: Kernel,
    scale: Kernel,
    axpy: Kernel,
}

/// Everything a step reads or writes, allocated before capture.
struct Buffers {
    input: PinnedBuffer<f32>,
    x: DeviceBuffer<f32>,
    bias: DeviceBuffer<f32>,
    out: DeviceBuffer<f32>,
    output: PinnedBuffer<f32>,
}

/// Scratch memory for one step: a graph memory node, freed by the graph.
#[capturable]
fn alloc_scratch<'a>(stream: &mut Stream<Capturing<'a>>, len: usize) -> Result<GraphBuffer<f32>, Error> {
    stream.alloc_async::<f32>(len)
}

/// out = 2 * input + bias + 0.5 * input, read back through `output`.
#[capturable]
fn decode_step<'a>(
    stream: &mut Stream<Capturing<'a>>,
    k: &'a Kernels,
    b: &'a Buffers,
    scratch: &'a GraphBuffer<f32>,
    n: u32,
) -> Result<(), Error> {
    let cfg = LaunchConfig::for_num_elems(n);
    stream.upload_async(&b.x, &b.input)?;
    stream.memset_async(&b.out, 0)?;
    stream.launch(&k.scale, cfg, (&b.x, scratch, 2.0f32, n))?;
    stream.launch(&k.add, cfg, (scratch, &b.bias, &b.out, n))?;
    stream.launch(&k.axpy, cfg, (&b.out, &b.x, 0.5f32, n))?;
    stream.download_async(&b.output, &b.out)?;
    Ok(())
}

fn main() -> Result<(), Error> {
    const N: usize = 1024;
    let ctx = Context::simulated();
    kernels::register_chain_kernels(ctx.sim().unwrap());
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let k = Kernels {
        add: module.kernel("add_f32")?,
        scale: module.kernel("scale_f32")?,
        axpy: module.kernel("axpy_f32")?,
    };
    let mut stream = ctx.new_stream()?;
    let b = Buffers {
        input: stream.alloc_pinned(N)?,
        x: stream.alloc_zeros(N)?,
        bias: stream.upload_new(&[1.0f32; N])?,
        out: stream.alloc_zeros(N)?,
        output: stream.alloc_pinned(N)?,
    };

    // Declared before the guard, so it outlives the capture and the graph that uses it.
    let scratch;
    let mut g = stream.capture()?;
    scratch = alloc_scratch(g.stream(), N)?;
    decode_step(g.stream(), &k, &b, &scratch, N as u32)?;
    let (graph, _report) = g.finish()?;

    for step in 0..3 {
        b.input.write(&[step as f32; N])?;
        graph.launch(&mut stream)?;
        stream.synchronize()?;
        assert_eq!(b.output.read()[0], 2.5 * step as f32 + 1.0);
    }
    Ok(())
}
