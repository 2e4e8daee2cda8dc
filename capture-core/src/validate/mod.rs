//! Replay validation: replay a graph and run the same work eagerly on fresh inputs, and
//! report the first place they disagree (issue #9, part 4).
//!
//! A graph replays what was recorded, with the arguments it was recorded with. A value the
//! host computed at capture time and passed by value — a decode position folded into a
//! kernel argument or a pointer offset, a small host-to-device upload that ran once during
//! the capture — is frozen into every replay, and nothing fails: the replays just compute
//! with the stale value. The only reliable way to find such a value is to feed the graph
//! inputs it was not captured with and compare it with the same work run eagerly.
//! [`ReplayCheck`] does that for `n` input sets:
//!
//! 1. `write_inputs(i, stream)` writes input set `i`; the graph is replayed;
//!    `read_outputs(stream)` reads what it produced;
//! 2. `write_inputs(i, stream)` writes the same set again; `eager(i, stream)` runs the same
//!    work without the graph; `read_outputs(stream)` reads what it produced;
//! 3. the two [`Outputs`] are compared element by element (floats within a [`Tolerance`],
//!    integers exactly), and the first divergence is returned as
//!    [`Error::ReplayDiverged`](crate::Error::ReplayDiverged): which output, which input
//!    set, which element, the eager and the replayed value.
//!
//! The replay runs *before* the eager run of each set, so state that only the eager path
//! refreshes (a buffer the eager code uploads but the graph never does) holds the previous
//! set's value when the graph reads it, and the divergence shows.
//!
//! ```
//! # use capture_core::*;
//! # use capture_core::validate::{Outputs, ReplayCheck, Tolerance};
//! # fn main() -> Result<()> {
//! # let ctx = Context::simulated();
//! # kernels::register_chain_kernels(ctx.sim().unwrap());
//! # let mut stream = ctx.new_stream()?;
//! # let module = ctx.load_module(kernels::CHAIN_PTX)?;
//! let scale = module.kernel("scale_f32")?;
//! let x = stream.alloc_zeros::<f32>(64)?;
//! let y = stream.alloc_zeros::<f32>(64)?;
//! let cfg = LaunchConfig::for_num_elems(64);
//! let mut g = stream.capture()?;
//! g.launch(&scale, cfg, (&x, &y, 2.0f32, 64u32))?;
//! let (graph, _) = g.finish()?;
//!
//! let report = ReplayCheck::new(4).tolerance(Tolerance::EXACT).run(
//!     &graph,
//!     &mut stream,
//!     |i, s| s.upload(&x, &vec![i as f32 + 0.5; 64]),          // fresh inputs, set i
//!     |_, s| s.launch(&scale, cfg, (&x, &y, 2.0f32, 64u32)),   // the same work, eagerly
//!     |s| Ok(Outputs::new().with("y", s.download(&y)?)),       // what to compare
//! )?;
//! assert_eq!(report.input_sets, 4);
//! # Ok(()) }
//! ```

mod check;
mod outputs;
mod tolerance;

pub use crate::element::Scalar;
pub use check::{ReplayCheck, ReplayCheckReport, ReplayStream};
pub use outputs::{Outputs, ReplayElement};
pub use tolerance::Tolerance;
