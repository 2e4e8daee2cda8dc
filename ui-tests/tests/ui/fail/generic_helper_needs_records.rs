// A helper generic over the stream state can only use operations legal in both states:
// here it tries a synchronous allocation, which `Records<'a>` does not provide.
use capture_core::{DeviceBuffer, Records, Result, Stream};

fn helper<'a, S: Records<'a>>(s: &mut Stream<S>, buf: &'a DeviceBuffer<f32>) -> Result<()> {
    let tmp = s.alloc_zeros::<f32>(buf.len())?;
    s.copy_async(buf, &tmp)
}

fn main() {}
