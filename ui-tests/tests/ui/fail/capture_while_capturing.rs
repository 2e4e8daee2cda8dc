// A stream records one capture at a time.
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let mut g = stream.capture()?;
    let inner = g.capture()?;
    drop(inner);
    g.finish()?;
    Ok(())
}
