//! Raw driver calls bypass the capture type-state: `#[capturable]` rejects any call into
//! cudarc's `driver::sys` or `driver::result`, and any `cu*` driver function.

use capture_core::{capturable, Capturing, Error, Stream};

/// Stand-in for cudarc's paths and names (ui-tests does not depend on cudarc).
mod cudarc {
    pub mod driver {
        pub mod sys {
            pub unsafe fn cuGraphLaunch(_exec: u64, _stream: u64) -> u32 {
                0
            }
            pub unsafe fn cuLaunchHostFunc(_stream: u64, _f: u64, _data: u64) -> u32 {
                0
            }
        }
        pub mod result {
            pub mod stream {
                pub unsafe fn wait_event(_stream: u64, _event: u64, _flags: u32) -> Result<(), ()> {
                    Ok(())
                }
            }
        }
    }
}

#[capturable]
fn launch_subgraph<'a>(_stream: &mut Stream<Capturing<'a>>, exec: u64, raw: u64, event: u64) -> Result<(), Error> {
    use cudarc::driver::sys;
    unsafe {
        cudarc::driver::result::stream::wait_event(raw, event, 0).unwrap();
        sys::cuGraphLaunch(exec, raw);
        sys::cuLaunchHostFunc(raw, 0, 0);
    }
    Ok(())
}

fn main() {}
