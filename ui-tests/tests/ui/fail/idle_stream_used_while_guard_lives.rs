// While the guard lives, the idle stream it borrows cannot be used: everything goes
// through the guard's capturing stream.
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let buf = stream.alloc_zeros::<f32>(4)?;
    let g = stream.capture()?;
    stream.upload(&buf, &[1.0; 4])?;
    g.finish()?;
    Ok(())
}
