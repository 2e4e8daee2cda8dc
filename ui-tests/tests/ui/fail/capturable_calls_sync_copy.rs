//! A synchronous copy or memset runs once at capture time and is missing from every replay:
//! `#[capturable]` rejects it on any receiver and points to the asynchronous copies. (On the
//! capturing stream itself the type-state rejects them too.)

use capture_core::{capturable, Capturing, Context, DeviceBuffer, Error, Stream};

/// Stand-in for cudarc's paths and names (ui-tests does not depend on cudarc).
mod cudarc {
    pub mod driver {
        pub mod result {
            pub unsafe fn memcpy_htod_sync<T>(_dst: u64, _src: &[T]) -> Result<(), ()> {
                Ok(())
            }
        }
    }
}

#[capturable]
fn feed_tokens<'a>(
    _stream: &mut Stream<Capturing<'a>>,
    ctx: &Context,
    tokens: &'a DeviceBuffer<u32>,
    logits: &'a DeviceBuffer<f32>,
    host: &[u32],
) -> Result<(), Error> {
    let mut side = ctx.new_stream()?;
    side.upload(tokens, host)?;
    side.memset_sync(logits, 0)?;
    unsafe { cudarc::driver::result::memcpy_htod_sync(tokens.device_ptr(), host) }.unwrap();
    let out = side.download(logits)?;
    drop(out);
    Ok(())
}

fn main() {}
