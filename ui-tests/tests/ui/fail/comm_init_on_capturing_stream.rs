// Creating a communicator allocates device memory, which would invalidate the capture: it
// takes idle streams only.
use capture_core::collective::Comm;
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctxs = Context::simulated_world(2)?;
    let mut a = ctxs[0].new_stream()?;
    let mut b = ctxs[1].new_stream()?;
    let mut ga = a.capture()?;
    let mut gb = b.capture()?;
    let _comms = Comm::init_all(&mut [ga.stream(), gb.stream()])?;
    Ok(())
}
