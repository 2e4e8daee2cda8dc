// A replay check replays the graph and runs the work eagerly, so it needs an idle stream:
// it cannot run on a stream that is capturing (finish or drop the guard first).
use capture_core::{Context, Outputs, ReplayCheck, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let buf = stream.alloc_zeros::<f32>(4)?;
    let mut g = stream.capture()?;
    g.memset_async(&buf, 0)?;
    let (graph, _) = g.finish()?;
    let mut g = stream.capture()?;
    ReplayCheck::new(2).run(&graph, &mut g, |_, _| Ok(()), |_, _| Ok(()), |_| Ok(Outputs::new()))?;
    drop(g);
    Ok(())
}
