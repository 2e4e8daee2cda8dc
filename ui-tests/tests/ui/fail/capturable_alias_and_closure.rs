//! Renaming a call, or moving it into a closure, a nested block or a macro's arguments, does not
//! hide it from `#[capturable]`.

use capture_core::{capturable, Capturing, Context, DeviceBuffer, Error, Stream};

/// Stand-in for cudarc's paths and names (ui-tests does not depend on cudarc).
mod cudarc {
    pub mod driver {
        pub mod result {
            pub unsafe fn malloc_sync(_bytes: usize) -> Result<u64, ()> {
                Ok(0)
            }
        }
    }
}

#[capturable]
fn sneaky<'a>(stream: &mut Stream<Capturing<'a>>, ctx: &Context, buf: &'a DeviceBuffer<f32>) -> Result<(), Error> {
    use crate::cudarc::driver::result::malloc_sync as reserve;
    let scratch = unsafe { reserve(4096) }.unwrap();
    let wait = || ctx.synchronize();
    {
        if buf.is_empty() {
            wait()?;
        }
    }
    assert!(ctx.synchronize().is_ok(), "device lost");
    println!("scratch at {scratch:#x}, synchronized: {:?}", ctx.synchronize());
    stream.memset_async(buf, 0)
}

fn main() {}
