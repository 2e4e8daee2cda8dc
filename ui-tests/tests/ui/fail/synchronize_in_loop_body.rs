// A loop body recorded on the device is a capturing stream like any other: a host
// synchronize inside it does not exist.
use capture_core::control::{LoopCounter, Until};
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut s = ctx.new_stream()?;
    let counter = LoopCounter::new(&mut s)?;
    let mut g = s.capture()?;
    g.stream().while_loop(&counter, 16, Until::Bound, |body| body.synchronize())?;
    Ok(())
}
