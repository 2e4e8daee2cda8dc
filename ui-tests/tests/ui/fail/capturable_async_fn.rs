//! Capture cannot span an `.await`: a `#[capturable]` function is a plain `fn`.

use capture_core::{capturable, Capturing, DeviceBuffer, Error, Stream};

#[capturable]
async fn step<'a>(stream: &mut Stream<Capturing<'a>>, buf: &'a DeviceBuffer<f32>) -> Result<(), Error> {
    stream.memset_async(buf, 0)
}

fn main() {}
