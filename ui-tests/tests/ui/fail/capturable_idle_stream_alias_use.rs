//! Issue #13, item 2: renaming `Stream` with `use … as` does not hide an idle stream from
//! `#[capturable]`: the compiler resolves the parameter's type, whatever it is called.

use capture_core::Stream as S;
use capture_core::{capturable, DeviceBuffer, Error, Idle};

#[capturable]
fn clear<'a>(s: &mut S<Idle>, buf: &'a DeviceBuffer<f32>) -> Result<(), Error> {
    s.memset_async(buf, 0)
}

#[capturable]
fn clear_defaulted<'a>(s: &mut S, buf: &'a DeviceBuffer<f32>) -> Result<(), Error> {
    s.memset_async(buf, 0)
}

fn main() {}
