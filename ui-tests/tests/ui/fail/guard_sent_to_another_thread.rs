// A capture ends on the thread that began it: the guard is not `Send`.
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let g = stream.capture()?;
    std::thread::scope(|s| {
        s.spawn(move || g.finish());
    });
    Ok(())
}
