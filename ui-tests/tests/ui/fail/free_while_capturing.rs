// cuMemFree during capture fails and invalidates it.
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let buf = stream.alloc_zeros::<f32>(4)?;
    let mut g = stream.capture()?;
    g.free(buf)?;
    g.finish()?;
    Ok(())
}
