// Issue #9, part 2: the raw-address route drops the borrow, so it is `unsafe`: neither the
// buffer's address nor a raw kernel parameter can be had in safe code.
use capture_core::{Context, KernelParam, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let x = stream.alloc_zeros::<f32>(256)?;
    let _p = KernelParam::raw_device_ptr(x.device_ptr());
    Ok(())
}
