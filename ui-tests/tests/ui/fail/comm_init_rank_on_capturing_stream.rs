// Joining a communicator of one rank per process allocates device memory and waits for the
// other ranks: it takes an idle stream only.
use capture_core::collective::{Comm, CommId};
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let id = CommId::new(&ctx)?;
    let mut s = ctx.new_stream()?;
    let mut g = s.capture()?;
    let _comm = Comm::init_rank(g.stream(), &id, 0, 2, std::time::Duration::from_secs(10))?;
    Ok(())
}
