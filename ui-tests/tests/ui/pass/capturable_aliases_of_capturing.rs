//! Issue #13, item 2: the type-resolved parameter check accepts aliases of a capturing stream,
//! generic streams, `impl Trait` parameters, `self` receivers and ordinary types.

#![allow(dead_code)]

use capture_core::Stream as S;
use capture_core::{capturable, Capturing, DeviceBuffer, Error, Records};

type Cap<'a> = S<Capturing<'a>>;

#[capturable]
fn aliased<'a>(s: &mut Cap<'a>, buf: &'a DeviceBuffer<f32>) -> Result<(), Error> {
    s.memset_async(buf, 0)
}

#[capturable]
fn generic<'a, T: Records<'a>>(s: &mut S<T>, bufs: &[&'a DeviceBuffer<f32>], n: impl Into<u8>) -> Result<(), Error> {
    let byte = n.into();
    for buf in bufs {
        s.memset_async(*buf, byte)?;
    }
    Ok(())
}

struct Step<'a> {
    buf: &'a DeviceBuffer<f32>,
}

impl<'a> Step<'a> {
    #[capturable]
    fn run(&self, s: &mut Cap<'a>) -> Result<(), Error> {
        s.memset_async(self.buf, 0)
    }

    #[capturable]
    const fn constant(n: u32) -> u32 {
        n + 1
    }
}

fn main() {}
