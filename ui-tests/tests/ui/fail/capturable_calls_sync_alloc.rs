//! Synchronous allocation and free are never recorded into a graph and invalidate the capture:
//! `#[capturable]` rejects them on any receiver and points to `alloc_async`. (On the capturing
//! stream itself the type-state rejects them too.)

use capture_core::{capturable, Capturing, Context, DeviceBuffer, Error, Stream};

/// Stand-in for cudarc's paths and names (ui-tests does not depend on cudarc).
mod cudarc {
    pub mod driver {
        pub mod result {
            pub unsafe fn malloc_sync(_bytes: usize) -> Result<u64, ()> {
                Ok(0)
            }
            pub unsafe fn free_sync(_ptr: u64) -> Result<(), ()> {
                Ok(())
            }
        }
    }
}

#[capturable]
fn attention<'a>(
    _stream: &mut Stream<Capturing<'a>>,
    ctx: &Context,
    old: DeviceBuffer<f32>,
    n: usize,
) -> Result<(), Error> {
    let mut side = ctx.new_stream()?;
    let scores = side.alloc_zeros::<f32>(n * n)?;
    let host = side.alloc_pinned::<f32>(n)?;
    side.free(old)?;
    let ptr = unsafe { cudarc::driver::result::malloc_sync(n * 4) }.unwrap();
    unsafe { cudarc::driver::result::free_sync(ptr) }.unwrap();
    drop((scores, host));
    Ok(())
}

fn main() {}
