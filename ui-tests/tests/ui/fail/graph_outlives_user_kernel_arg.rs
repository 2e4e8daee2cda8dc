// Issue #9, part 2: a user type that is a kernel argument through `KernelArg` is borrowed
// by the graph like a buffer: it cannot be dropped while the graph lives.
use capture_core::{kernels, Context, DeviceBuffer, KernelArg, KernelParam, LaunchConfig, Result};

struct Tensor {
    data: DeviceBuffer<f32>,
}

impl<'a> KernelArg<'a> for &'a Tensor {
    fn to_param(&self) -> KernelParam<'a> {
        KernelParam::device_ptr(&self.data)
    }
}

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let incr = module.kernel("incr_f32")?;
    let t = Tensor { data: stream.alloc_zeros::<f32>(256)? };
    let mut g = stream.capture()?;
    g.launch(&incr, LaunchConfig::for_num_elems(256), (&t, 256u32))?;
    let (graph, _report) = g.finish()?;
    drop(t);
    graph.launch(&mut stream)?;
    Ok(())
}
