// Querying a capturing stream fails and invalidates the capture.
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let mut g = stream.capture()?;
    let _done = g.query()?;
    g.finish()?;
    Ok(())
}
