// Managed allocation during capture invalidates it (and hangs on some systems).
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let mut g = stream.capture()?;
    let m = g.alloc_managed::<f32>(1024)?;
    drop(m);
    g.finish()?;
    Ok(())
}
