// Issue #9, part 2: a user type becomes a kernel argument through the public `KernelArg`
// trait (no hidden types), and cudarc slices are accepted as they are.
use std::sync::Arc;

use capture_core::{kernels, Context, DeviceBuffer, KernelArg, KernelParam, LaunchConfig, Result};
use cudarc::driver::CudaSlice;

struct Tensor {
    data: DeviceBuffer<f32>,
    len: u32,
}

impl<'a> KernelArg<'a> for &'a Tensor {
    fn to_param(&self) -> KernelParam<'a> {
        KernelParam::device_ptr(&self.data)
    }
}

struct CudarcTensor {
    data: Arc<CudaSlice<f32>>,
}

impl<'a> KernelArg<'a> for &'a CudarcTensor {
    fn to_param(&self) -> KernelParam<'a> {
        KernelParam::device_ptr(&self.data)
    }
}

#[allow(dead_code)]
fn with_cudarc(ctx: &Context, t: &CudarcTensor, s: &CudaSlice<f32>) -> Result<()> {
    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let add = module.kernel("add_f32")?;
    let view = s.slice(..); // a view is borrowed by the graph too: bind it before capturing
    let mut g = stream.capture()?;
    g.launch(&add, LaunchConfig::for_num_elems(16), (t, s, &view, 16u32))?;
    let (graph, _) = g.finish()?;
    graph.launch(&mut stream)?;
    Ok(())
}

fn main() -> Result<()> {
    let ctx = Context::simulated();
    kernels::register_chain_kernels(ctx.sim().unwrap());
    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let incr = module.kernel("incr_f32")?;
    let t = Tensor { data: stream.upload_new(&[1.0f32; 16])?, len: 16 };
    let mut g = stream.capture()?;
    g.launch(&incr, LaunchConfig::for_num_elems(t.len), (&t, t.len))?;
    let (graph, _) = g.finish()?;
    graph.launch(&mut stream)?;
    drop(graph);
    assert_eq!(stream.download(&t.data)?[0], 2.0);
    Ok(())
}
