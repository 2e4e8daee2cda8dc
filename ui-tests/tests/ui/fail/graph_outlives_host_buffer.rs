// A captured upload re-reads its pinned source at every replay, so the graph borrows it.
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let host = stream.alloc_pinned::<f32>(256)?;
    let x = stream.alloc_zeros::<f32>(256)?;
    let mut g = stream.capture()?;
    g.upload_async(&x, &host)?;
    let (graph, _report) = g.finish()?;
    drop(host);
    graph.launch(&mut stream)?;
    Ok(())
}
