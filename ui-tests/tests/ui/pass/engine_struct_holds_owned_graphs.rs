// An engine struct holds its buffers and a map of graphs over them: with `Graph<'a>` that
// struct is self-referential (E0597); `OwnedGraph` and `GraphFamily` keep what they use
// alive themselves, so the struct is `'static`, can be returned, boxed and sent.
use std::collections::BTreeMap;
use std::sync::Arc;

use capture_core::{kernels, Context, DeviceBuffer, GraphFamily, Kernel, LaunchConfig, OwnedGraph, Result, Stream};

struct Buffers {
    incr: Kernel,
    x: DeviceBuffer<f32>,
}

struct Engine {
    stream: Stream,
    buffers: Arc<Buffers>,
    graphs: BTreeMap<usize, OwnedGraph<Arc<Buffers>>>,
    family: GraphFamily<Buffers>,
}

impl Engine {
    fn new(ctx: &Context) -> Result<Self> {
        let mut stream = ctx.new_stream()?;
        let module = ctx.load_module(kernels::CHAIN_PTX)?;
        let buffers = Arc::new(Buffers { incr: module.kernel("incr_f32")?, x: stream.alloc_zeros::<f32>(128)? });
        let mut graphs = BTreeMap::new();
        for n in [32usize, 64, 128] {
            let (g, _) = stream.capture_owned(buffers.clone(), |s, b| {
                s.launch(&b.incr, LaunchConfig::for_num_elems(n as u32), (&b.x, n as u32))
            })?;
            graphs.insert(n, g);
        }
        let (family, _) = GraphFamily::builder(&[32, 64, 128]).capture(&mut stream, buffers.clone(), |s, b, n| {
            s.launch(&b.incr, LaunchConfig::for_num_elems(n as u32), (&b.x, n as u32))
        })?;
        Ok(Self { stream, buffers, graphs, family })
    }

    fn step(&mut self, n: usize) -> Result<f32> {
        self.graphs[&n].launch(&mut self.stream)?;
        self.family.launch(&mut self.stream, n)?;
        Ok(self.stream.download(&self.buffers.x)?[0])
    }
}

fn assert_send<T: Send + 'static>(_: &T) {}

fn main() -> Result<()> {
    let ctx = Context::simulated();
    kernels::register_chain_kernels(ctx.sim().unwrap());
    let mut engine = Engine::new(&ctx)?;
    assert_send(&engine);
    let boxed: Box<Engine> = Box::new(Engine::new(&ctx)?);
    drop(boxed);
    // The family replayed each of its 3 graphs once when it was captured (warm-up), then one
    // owned graph and one family graph ran: 5 increments.
    assert_eq!(engine.step(64)?, 5.0);
    Ok(())
}
