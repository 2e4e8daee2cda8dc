//! Collectives (NCCL) under the type-state: communicators, groups of every rank's calls,
//! a capture of every rank's stream together, and the replay of every rank's graph.
//!
//! On GPUs this is NCCL, loaded at run time like the driver (feature `nccl`); on a
//! [simulated world](crate::Context::simulated_world) the same API moves host memory
//! between simulated devices, with the rules NCCL imposes checked the same way: every rank
//! takes part in a collective with the same counts and types, every send has its receive,
//! and a graph holding collectives runs only with its peers'.
//!
//! ```
//! use capture_core::collective::{Comm, Group, MultiCapture, ReduceOp};
//! use capture_core::{CaptureOptions, Context, Result};
//! # fn main() -> Result<()> {
//! let ctxs = Context::simulated_world(2)?; // or Context::open(0)?, Context::open(1)?
//! let mut streams = ctxs.iter().map(Context::new_stream).collect::<Result<Vec<_>>>()?;
//! let comms = Comm::init_all(&mut streams.iter_mut().collect::<Vec<_>>())?;
//! let x: Vec<_> = streams.iter_mut().map(|s| s.upload_new(&[1.0f32; 1024])).collect::<Result<_>>()?;
//! let y: Vec<_> = streams.iter_mut().map(|s| s.alloc_zeros::<f32>(1024)).collect::<Result<_>>()?;
//!
//! let mut step = MultiCapture::begin(&mut streams, CaptureOptions::new())?;
//! let mut group = Group::new();
//! for r in 0..2 {
//!     let s = step.stream(r).expect("rank");
//!     group.all_reduce(s, &comms[r], &x[r], &y[r], ReduceOp::Sum)?;
//! }
//! group.launch()?;                       // recorded: one node per rank's graph
//! let (graphs, _reports) = step.finish()?;
//! graphs.launch(&mut streams)?;          // every rank's graph, together
//! assert_eq!(streams[1].download(&y[1])?[0], 2.0);
//! # Ok(()) }
//! ```

mod comm;
pub(crate) mod group;
mod multi;

pub use crate::half::{Bf16, F16};
pub use comm::{nccl_version, Comm, CommId, NcclElem, ReduceOp};
pub use group::Group;
pub use multi::{MultiCapture, MultiGraph};
