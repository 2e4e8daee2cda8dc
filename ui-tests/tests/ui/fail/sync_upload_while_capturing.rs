// A synchronous upload during capture runs once, now, and is missing from every replay.
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let input = stream.alloc_zeros::<f32>(4)?;
    let mut g = stream.capture()?;
    g.upload(&input, &[1.0, 2.0, 3.0, 4.0])?;
    g.finish()?;
    Ok(())
}
