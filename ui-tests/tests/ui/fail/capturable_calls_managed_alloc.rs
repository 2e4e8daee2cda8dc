//! Managed allocation during capture fails the capture, or hangs without an error on some
//! systems (GB10): `#[capturable]` rejects it in every spelling, on any receiver. (On the
//! capturing stream itself the type-state rejects `alloc_managed` too.)

use capture_core::{capturable, Capturing, Context, Error, Stream};

/// Stand-in for cudarc's paths and names (ui-tests does not depend on cudarc).
mod cudarc {
    pub mod driver {
        pub mod sys {
            pub unsafe fn cuMemAllocManaged(_dptr: *mut u64, _bytes: usize, _flags: u32) -> u32 {
                0
            }
        }
        pub mod result {
            pub unsafe fn malloc_managed(_bytes: usize, _flags: u32) -> Result<u64, ()> {
                Ok(0)
            }
        }
    }
}

#[capturable]
fn grow_kv_cache<'a>(_stream: &mut Stream<Capturing<'a>>, ctx: &Context, len: usize) -> Result<(), Error> {
    let mut side = ctx.new_stream()?;
    let cache = side.alloc_managed::<f32>(len)?;
    let raw = unsafe { cudarc::driver::result::malloc_managed(len * 4, 1) };
    let mut ptr = 0u64;
    unsafe { cudarc::driver::sys::cuMemAllocManaged(&mut ptr, len * 4, 1) };
    drop((cache, raw));
    Ok(())
}

fn main() {}
