//! `#[capturable]` on a method in an `impl`, on a trait method's default body, on a helper
//! generic over `Records<'a>` (which also runs eagerly on an idle stream), and on an `unsafe fn`.

#![allow(dead_code)]

use capture_core::{capturable, Capturing, DeviceBuffer, Error, Kernel, LaunchConfig, Records, Stream};

pub struct Layer {
    kernel: Kernel,
    weights: DeviceBuffer<f32>,
    out: DeviceBuffer<f32>,
    n: u32,
}

impl Layer {
    #[capturable]
    pub fn forward<'a>(&'a self, stream: &mut Stream<Capturing<'a>>) -> Result<(), Error> {
        stream.memset_async(&self.out, 0)?;
        stream.launch(&self.kernel, LaunchConfig::for_num_elems(self.n), (&self.weights, &self.out, self.n))
    }
}

pub trait Step<'a> {
    fn buffers(&self) -> (&'a DeviceBuffer<f32>, &'a DeviceBuffer<f32>);

    #[capturable]
    fn run(&self, stream: &mut Stream<Capturing<'a>>) -> Result<(), Error> {
        let (dst, src) = self.buffers();
        stream.copy_async(dst, src)
    }
}

#[capturable]
pub fn clear<'a, S: Records<'a>>(stream: &mut Stream<S>, buf: &'a DeviceBuffer<f32>) -> Result<(), Error> {
    stream.memset_async(buf, 0)
}

/// # Safety
/// Nothing to uphold: `unsafe` only shows the attribute accepts it.
#[capturable]
pub unsafe fn clear_unchecked<'a>(stream: &mut Stream<Capturing<'a>>, buf: &'a DeviceBuffer<f32>) -> Result<(), Error> {
    stream.memset_async(buf, 0xff)
}

fn main() {}
