//! Issue #13, item 2: a `#[capturable]` function cannot take a `Context` (it makes idle streams
//! and synchronizes the device), by its own name, renamed, or behind an alias.

use capture_core::Context as Ctx;
use capture_core::{capturable, Capturing, Context, Error, Stream};
use std::sync::Arc;

type Device = Arc<Context>;

#[capturable]
fn by_name<'a>(_stream: &mut Stream<Capturing<'a>>, ctx: &Context) -> Result<(), Error> {
    ctx.new_stream()?.synchronize()
}

#[capturable]
fn renamed(ctx: &mut Ctx) -> Result<(), Error> {
    ctx.new_stream().map(drop)
}

#[capturable]
fn aliased(device: Device) -> Result<(), Error> {
    device.new_stream().map(drop)
}

fn main() {}
