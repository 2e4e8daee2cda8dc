// A synchronous allocation on a capturing stream: cuMemAlloc would fail and invalidate
// the capture, so the method is not available in the `Capturing` state.
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let mut g = stream.capture()?;
    let scratch = g.alloc_zeros::<f32>(1024)?;
    drop(scratch);
    g.finish()?;
    Ok(())
}
