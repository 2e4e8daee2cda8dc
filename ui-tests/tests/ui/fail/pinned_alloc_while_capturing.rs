// Pinned host allocation during capture invalidates it.
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let mut g = stream.capture()?;
    let p = g.alloc_pinned::<f32>(1024)?;
    drop(p);
    g.finish()?;
    Ok(())
}
