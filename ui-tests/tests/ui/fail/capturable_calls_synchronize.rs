//! Synchronizing or querying while a stream captures fails and invalidates the capture:
//! `#[capturable]` rejects it on any receiver, including ones the type-state cannot see. (On the
//! capturing stream itself the type-state rejects `synchronize` and `query` too.)

use capture_core::{capturable, Capturing, Context, Error, Stream};

/// Stand-in for cudarc's paths and names (ui-tests does not depend on cudarc).
mod cudarc {
    pub mod driver {
        pub mod result {
            pub mod ctx {
                pub fn synchronize() -> Result<(), ()> {
                    Ok(())
                }
            }
        }
    }
}

#[capturable]
fn checkpoint<'a>(_stream: &mut Stream<Capturing<'a>>, ctx: &Context) -> Result<(), Error> {
    ctx.synchronize()?;
    let mut side = ctx.new_stream()?;
    side.synchronize()?;
    let _done = side.query()?;
    cudarc::driver::result::ctx::synchronize().unwrap();
    Ok(())
}

fn main() {}
