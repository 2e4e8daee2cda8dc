//! A clean `#[capturable]` function expands to itself and nothing else, so local items named
//! like the standard library's or the macro's helpers cannot break it.

#![allow(dead_code, unused_macros)]

use capture_core::{capturable, Capturing, DeviceBuffer, Stream};

mod core {}
mod std {}
mod __private {}
struct Option;
struct Ok;
type Result<T> = ::std::result::Result<T, capture_core::Error>;
macro_rules! compile_error {
    ($($t:tt)*) => {};
}

#[capturable]
fn step<'a>(stream: &mut Stream<Capturing<'a>>, buf: &'a DeviceBuffer<f32>) -> Result<()> {
    stream.memset_async(buf, 0)
}

fn main() {
    let _ = step;
}
