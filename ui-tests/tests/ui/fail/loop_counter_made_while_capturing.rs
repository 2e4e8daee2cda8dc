// A loop counter allocates device memory and loads a module: it is made from an idle
// stream, before `capture()`.
use capture_core::control::LoopCounter;
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut s = ctx.new_stream()?;
    let mut g = s.capture()?;
    let _counter = LoopCounter::new(g.stream())?;
    Ok(())
}
