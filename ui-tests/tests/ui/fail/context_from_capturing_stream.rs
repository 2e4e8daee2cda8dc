//! Issue #13, item 3: a capturing stream does not give out its `Context`, which would make idle
//! streams and synchronize the device in the middle of the capture. Neither does a guard.

use capture_core::{capturable, Capturing, Context, Error, Stream};

/// An un-annotated helper handed only the capturing stream.
fn helper(stream: &mut Stream<Capturing<'_>>) -> Result<(), Error> {
    let mut side = stream.context().new_stream()?;
    side.synchronize()
}

#[capturable]
fn step<'a>(stream: &mut Stream<Capturing<'a>>) -> Result<(), Error> {
    helper(stream)?;
    let name = stream.context().name();
    drop(name);
    Ok(())
}

fn main() -> Result<(), Error> {
    let ctx = Context::simulated();
    let mut stream = ctx.new_stream()?;
    let mut guard = stream.capture()?;
    step(guard.stream())?;
    guard.context().synchronize()?;
    Ok(())
}
