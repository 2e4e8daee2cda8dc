//! The kernels that steer conditional graph nodes (issue #12) ship as PTX with the others and
//! load through the ordinary module path: on a GPU the driver's JIT resolves their
//! `cudaGraphSetConditional` calls (no link step), on the simulated device their signatures
//! parse.

use capture_core::kernels;
use capture_tests::on_both;

on_both!(the_control_kernels_load, |ctx: capture_core::Context| {
    let m = ctx.load_module(kernels::CONTROL_PTX).unwrap();
    for k in ["cond_step_below", "cond_until_token", "cond_from_flag", "zero_u32"] {
        m.kernel(k).unwrap_or_else(|e| panic!("{k}: {e}"));
    }
    assert!(m.kernel("no_such_kernel").is_err());
});
