// Destroying a communicator frees device memory, which invalidates a capture: `destroy`
// takes an idle stream of its device.
use capture_core::collective::Comm;
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut s = ctx.new_stream()?;
    let comm = Comm::init_all(&mut [&mut s])?.remove(0);
    let mut g = s.capture()?;
    comm.destroy(g.stream())?;
    Ok(())
}
