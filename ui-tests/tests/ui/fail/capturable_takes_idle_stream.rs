//! A `#[capturable]` function takes the capturing stream: an idle `Stream` (state `Idle`, also
//! by default) or a raw cudarc handle would let it enqueue work outside the graph.

use capture_core::{capturable, DeviceBuffer, Error, Idle, Stream};
use std::sync::Arc;

/// Stand-in for cudarc's paths and names (ui-tests does not depend on cudarc).
mod cudarc {
    pub mod driver {
        pub struct CudaStream;
        pub struct CudaContext;
    }
}

#[capturable]
fn clear<'a>(stream: &mut Stream<Idle>, buf: &'a DeviceBuffer<f32>) -> Result<(), Error> {
    stream.memset_async(buf, 0)
}

#[capturable]
fn clear_default<'a>(stream: &mut Stream, buf: &'a DeviceBuffer<f32>) -> Result<(), Error> {
    stream.memset_async(buf, 0)
}

#[capturable]
fn on_raw_stream(raw: &Arc<cudarc::driver::CudaStream>, ctx: Arc<cudarc::driver::CudaContext>) {
    drop((raw, ctx));
}

fn main() {}
