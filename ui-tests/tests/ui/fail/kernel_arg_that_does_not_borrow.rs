// Issue #9, part 2: `KernelArg::to_param` must return a parameter borrowed for `'a`. An
// implementation on an owned value cannot hand out its memory for an unrelated `'a`, so
// the graph could never be made to outlive it: this does not compile.
use capture_core::{DeviceBuffer, KernelArg, KernelParam};

struct Tensor {
    data: DeviceBuffer<f32>,
}

impl<'a> KernelArg<'a> for Tensor {
    fn to_param(&self) -> KernelParam<'a> {
        KernelParam::device_ptr(&self.data)
    }
}

fn main() {}
