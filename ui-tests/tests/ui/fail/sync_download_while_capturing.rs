// A synchronous download during capture would read the buffer before the graph ever runs.
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let out = stream.alloc_zeros::<f32>(4)?;
    let mut g = stream.capture()?;
    let host: Vec<f32> = g.download(&out)?;
    drop(host);
    g.finish()?;
    Ok(())
}
