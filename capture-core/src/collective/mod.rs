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
//!
//! ## One rank per process
//!
//! Where each process drives one GPU (as under `torchrun` or MPI), one process makes a
//! [`CommId`] and hands its text to the others (a command line, a file, a socket), and each
//! joins with [`Comm::init_rank`], giving a timeout. Each process then issues, captures and
//! replays its own rank's work; [`Comm::wait`] waits for it. A peer that does not take part
//! — one that never joins, crashed, or issues other collectives — ends the wait with
//! [`Error::CollectiveTimeout`](crate::Error::CollectiveTimeout) and aborts the
//! communicator, rather than hanging the process. On the simulated device, threads stand in
//! for the processes:
//!
//! ```
//! use std::time::Duration;
//! use capture_core::collective::{Comm, CommId, Group, MultiCapture, ReduceOp};
//! use capture_core::{CaptureOptions, Context, Result};
//!
//! fn rank(r: usize, id: String) -> Result<f32> {
//!     let ctx = Context::simulated(); // a process's own device: Context::open(r)? on GPUs
//!     let mut streams = [ctx.new_stream()?];
//!     let comm = Comm::init_rank(&mut streams[0], &id.parse()?, r, 2, Duration::from_secs(30))?;
//!     let x = streams[0].upload_new(&[r as f32 + 1.0; 256])?;
//!     let y = streams[0].alloc_zeros::<f32>(256)?;
//!     let (step, _) = {
//!         let mut cap = MultiCapture::begin(&mut streams, CaptureOptions::new())?;
//!         let mut g = Group::new();
//!         g.all_reduce(cap.stream(0).expect("rank"), &comm, &x, &y, ReduceOp::Sum)?;
//!         g.launch()?;
//!         cap.finish()?
//!     };
//!     step.launch(&mut streams)?; // this rank's graph; the peer replays its own
//!     comm.wait(&mut streams[0])?;
//!     Ok(streams[0].download(&y)?[0])
//! }
//!
//! # fn main() -> Result<()> {
//! let id = CommId::new(&Context::simulated())?.to_string();
//! let peer = { let id = id.clone(); std::thread::spawn(move || rank(1, id)) };
//! assert_eq!(rank(0, id)?, 3.0);
//! assert_eq!(peer.join().expect("rank 1")?, 3.0);
//! # Ok(()) }
//! ```

mod comm;
pub(crate) mod group;
mod id;
mod multi;

pub use crate::raw::half::{Bf16, F16};
pub use comm::{nccl_version, Comm, NcclElem, ReduceOp};
pub use group::Group;
pub use id::CommId;
pub use multi::{MultiCapture, MultiGraph};
