//! The control module's unit tests, and those of the control kernels' host implementations
//! (`crate::kernels`), which need a context and streams to run.

use crate::buffer::DeviceBuffer;
use crate::context::Context;
use crate::error::Error;
use crate::module::LaunchConfig;
use crate::stream::Stream;

#[test]
fn an_old_driver_is_told_the_version_it_needs() {
    let e = Error::ConditionalNodesUnsupported {
        form: "an IF/ELSE branch",
        needed: super::IF_ELSE_DRIVER_VERSION,
        found: 12060,
    };
    let text = e.to_string();
    assert!(text.starts_with("an IF/ELSE branch needs a driver of API version 12080"), "{text}");
    assert!(text.contains("CUDA 12.8") && text.contains("this driver is 12060"), "{text}");
    let e = Error::ConditionalNodesUnsupported {
        form: "a WHILE loop",
        needed: super::CONDITIONAL_DRIVER_VERSION,
        found: 12020,
    };
    assert!(e.to_string().contains("CUDA 12.4"), "{e}");
}

// The simulated control kernels compute in 32 bits, wrapping, as the CUDA kernels'
// `unsigned int` does: near `u32::MAX` a count wraps to 0 and a sum past it wraps too,
// where wider arithmetic would give other conditions.

const ONE: LaunchConfig = LaunchConfig { grid: (1, 1, 1), block: (1, 1, 1), shared_mem_bytes: 0 };

/// A u32 of device memory holding `v`.
fn cell(s: &mut Stream, v: u32) -> DeviceBuffer<u32> {
    s.upload_new(&[v]).unwrap()
}

fn read(s: &mut Stream, b: &DeviceBuffer<u32>) -> u32 {
    s.download(b).unwrap()[0]
}

#[test]
fn control_kernels_wrap_in_32_bits() {
    let ctx = Context::simulated();
    crate::kernels::register_control_kernels(ctx.sim().unwrap());
    let m = ctx.load_module(crate::kernels::CONTROL_PTX).unwrap();
    let k = |name: &str| m.kernel(name).unwrap();
    let mut s = ctx.new_stream().unwrap();
    // The condition handle: on the simulated device, the address of a u32.
    let cond = cell(&mut s, 7);
    let h = cond.ptr.0;

    // *x += v.
    let x = cell(&mut s, u32::MAX - 1);
    s.launch(&k("add_u32"), ONE, (&x, 3u32)).unwrap();
    assert_eq!(read(&mut s, &x), 1, "add_u32: u32::MAX - 1 + 3");

    // s = step + 1 wraps to 0, and 0 < k: the loop goes on.
    let step = cell(&mut s, u32::MAX);
    s.launch(&k("cond_step_below"), ONE, (&step, 5u32, h)).unwrap();
    assert_eq!((read(&mut s, &step), read(&mut s, &cond)), (0, 1), "cond_step_below");

    let (token, stopped) = (cell(&mut s, 3), cell(&mut s, 0));
    s.upload(&step, &[u32::MAX]).unwrap();
    s.launch(&k("cond_until_token"), ONE, (&token, 9u32, &stopped, &step, 5u32, h)).unwrap();
    assert_eq!((read(&mut s, &step), read(&mut s, &cond), read(&mut s, &stopped)), (0, 1, 0), "cond_until_token");

    // s = step + per, then the test s + per <= limit: each sum wraps.
    for (name, flag) in [("cond_steps", None), ("cond_steps_until", Some(cell(&mut s, 0)))] {
        // step + per wraps (to 1): 1 + 4 <= 10.
        s.upload(&step, &[u32::MAX - 2]).unwrap();
        s.upload(&cond, &[7]).unwrap();
        match &flag {
            None => s.launch(&k(name), ONE, (&step, 4u32, 10u32, h)),
            Some(f) => s.launch(&k(name), ONE, (f, &step, 4u32, 10u32, h)),
        }
        .unwrap();
        assert_eq!((read(&mut s, &step), read(&mut s, &cond)), (1, 1), "{name}: the step wraps");
        // step + per does not wrap (u32::MAX - 1), the test's sum does (to 2): 2 <= 10.
        s.upload(&step, &[u32::MAX - 5]).unwrap();
        s.upload(&cond, &[7]).unwrap();
        match &flag {
            None => s.launch(&k(name), ONE, (&step, 4u32, 10u32, h)),
            Some(f) => s.launch(&k(name), ONE, (f, &step, 4u32, 10u32, h)),
        }
        .unwrap();
        assert_eq!((read(&mut s, &step), read(&mut s, &cond)), (u32::MAX - 1, 1), "{name}: the test's sum wraps");
    }
}
