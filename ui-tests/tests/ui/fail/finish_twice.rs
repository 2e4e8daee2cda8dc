// `finish` consumes the guard: a capture cannot be finished twice.
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let g = stream.capture()?;
    let first = g.finish();
    let second = g.finish();
    drop((first, second));
    Ok(())
}
