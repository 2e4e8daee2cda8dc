//! The ownership proof (issue #30): a graph proves, from its own nodes, that it owns every
//! address it reads or writes.
//!
//! capture-core's [`Graph<'a>`](crate::Graph) and [`OwnedGraph`](crate::OwnedGraph) are sound
//! by lifetimes: a graph borrows what it records, so nothing it uses can be freed while it
//! lives. Work recorded behind the library's back — a candle op, a cuBLAS call, a cudarc
//! launch — borrows nothing, so an integration that replays such work needs another proof.
//! This is it: after the capture, every address the graph's nodes hold is listed (kernel
//! parameters, each 8-byte-aligned word of a parameter passed by value, copy sources and
//! destinations, memset destinations, graph frees), resolved to its allocation by the
//! device, and each must be one of:
//!
//! - **graph memory**: allocated by the graph's own allocation nodes;
//! - **a resource**: inside memory the caller declares the graph holds, for as long as the
//!   graph lives ([`Owners::resource`], [`Owners::hold`]);
//! - **device-lifetime memory**: memory that lives as long as something the graph keeps
//!   alive, with the reason ([`Owners::device_lifetime`]);
//! - **a condition handle** the capture made.
//!
//! Anything else refuses the graph with [`Error::NotOwned`] naming the node, its operation
//! (where the library issued it), the place in the node, the address and its allocation.
//! A word that is not an address the device knows (an integer, a float, a size) is a value,
//! never a refusal; a copy or memset address the device does not know is refused.
//!
//! The proof reads a [`GraphSnapshot`], which
//! [`CaptureGuard::finish_with_snapshot`](crate::CaptureGuard::finish_with_snapshot) gives
//! with the graph; it runs once, at capture, and costs nothing at replay.
//!
//! ```
//! # use capture_core::*;
//! # fn main() -> Result<()> {
//! let ctx = Context::simulated();
//! kernels::register_chain_kernels(ctx.sim().unwrap());
//! let mut stream = ctx.new_stream()?;
//! let module = ctx.load_module(kernels::CHAIN_PTX)?;
//! let incr = module.kernel("incr_f32")?;
//! let held = stream.alloc_zeros::<f32>(256)?;
//! let other = stream.alloc_zeros::<f32>(256)?;
//!
//! let mut g = stream.capture()?;
//! g.launch(&incr, LaunchConfig::for_num_elems(256), (&held, 256u32))?;
//! g.launch(&incr, LaunchConfig::for_num_elems(256), (&other, 256u32))?;
//! let (_graph, snapshot, _report) = g.finish_with_snapshot()?;
//!
//! let mut owners = own::Owners::new();
//! owners.hold(&held, "held");
//! let refused = own::prove(&snapshot, &owners).unwrap_err();
//! // capture #1: node 1, kernel `incr_f32` (`Stream::launch` at …): parameter 0 is 0x…,
//! // offset 0 in device allocation 0x…, which the graph does not own. …
//! assert!(matches!(refused, Error::NotOwned(ref n) if n.node == 1));
//!
//! owners.hold(&other, "other");
//! let proof = own::prove(&snapshot, &owners)?;
//! assert_eq!(proof.resources, 2);
//! # Ok(()) }
//! ```

use std::fmt;

use crate::device::snapshot::{NodeKind, Target};
use crate::error::{Error, NotOwned, Result};
use crate::interop::DeviceMemory;
use crate::snapshot::GraphSnapshot;

/// Why a range of memory counts as the graph's.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Holding {
    /// The graph's resources hold it for as long as the graph lives.
    Resource,
    /// It lives as long as something the graph keeps alive (a device, a library handle, a
    /// cache that is never emptied).
    DeviceLifetime,
}

/// One range of memory the graph owns.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Held {
    /// First byte.
    pub start: u64,
    /// Bytes.
    pub bytes: u64,
    /// Why it is the graph's.
    pub holding: Holding,
    /// What it is ("the weight `layers.0.q_proj`", "cuBLAS's workspace", …) and, for
    /// device-lifetime memory, what keeps it alive.
    pub label: String,
}

impl Held {
    fn contains(&self, addr: u64, extent: u64) -> bool {
        addr >= self.start && addr - self.start < self.bytes && extent <= self.bytes - (addr - self.start)
    }
}

/// The memory a graph owns beyond its own graph memory: what [`prove`] checks its nodes
/// against.
#[derive(Clone, Debug)]
pub struct Owners {
    held: Vec<Held>,
    hint: String,
}

impl Default for Owners {
    fn default() -> Self {
        Self::new()
    }
}

impl Owners {
    /// No memory yet, and the default advice for a refusal.
    pub fn new() -> Self {
        Self {
            held: Vec::new(),
            hint: "Hand that memory to the graph as one of the resources it owns, so that it lives as long as \
                   the graph; memory reached through a lock, a cell, a static or a thread-local can be replaced \
                   or freed after the capture"
                .to_owned(),
        }
    }

    /// The advice a refusal gives, in the words of the integration asking for the proof.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = hint.into();
        self
    }

    /// Declares `bytes` bytes from `start` held by the graph's resources.
    pub fn resource(&mut self, start: u64, bytes: u64, label: impl Into<String>) -> &mut Self {
        self.push(start, bytes, Holding::Resource, label.into())
    }

    /// Declares `bytes` bytes from `start` alive for as long as something the graph keeps
    /// alive; `why` says what that is.
    pub fn device_lifetime(&mut self, start: u64, bytes: u64, why: impl Into<String>) -> &mut Self {
        self.push(start, bytes, Holding::DeviceLifetime, why.into())
    }

    /// Declares a buffer (this crate's, or cudarc's `CudaSlice`) held by the graph's
    /// resources.
    pub fn hold<M: DeviceMemory + ?Sized>(&mut self, mem: &M, label: impl Into<String>) -> &mut Self {
        let m = mem.mem_ref();
        self.resource(m.ptr, m.bytes as u64, label)
    }

    fn push(&mut self, start: u64, bytes: u64, holding: Holding, label: String) -> &mut Self {
        if bytes > 0 {
            self.held.push(Held { start, bytes, holding, label });
        }
        self
    }

    /// The ranges declared, in the order given.
    pub fn held(&self) -> &[Held] {
        &self.held
    }

    /// The range holding `extent` bytes from `addr`, if one does.
    pub fn find(&self, addr: u64, extent: u64) -> Option<&Held> {
        self.held.iter().find(|h| h.contains(addr, extent))
    }
}

/// Where in a node an address was found.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Place {
    /// A kernel parameter (0-based) that is an address.
    Param(usize),
    /// An 8-byte-aligned word of a kernel parameter passed by value: (parameter, byte offset).
    ParamWord(usize, usize),
    /// A kernel whose parameters the driver cannot read (a packed parameter buffer, or a
    /// driver before CUDA 12.4): nothing about it can be proved.
    UnreadableParams,
    /// A copy's source.
    CopySource,
    /// A copy's destination.
    CopyDestination,
    /// A memset's destination.
    MemsetDestination,
    /// What a graph free node frees.
    Freed,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Place::Param(i) => write!(f, "parameter {i}"),
            Place::ParamWord(i, o) => write!(f, "the word at byte {o} of parameter {i}"),
            Place::UnreadableParams => f.write_str("its parameter list (which the driver cannot read)"),
            Place::CopySource => f.write_str("the copy's source"),
            Place::CopyDestination => f.write_str("the copy's destination"),
            Place::MemsetDestination => f.write_str("the memset's destination"),
            Place::Freed => f.write_str("what the graph frees"),
        }
    }
}

/// A use of memory the graph does not own: what [`unowned`] lists and [`prove`] refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Unowned {
    /// The node's index in the snapshot.
    pub node: usize,
    /// Where in the node.
    pub place: Place,
    /// The address (0 for [`Place::UnreadableParams`]).
    pub addr: u64,
    /// What the device says it points into.
    pub target: Target,
    /// Bytes the node reaches from the address (1 where it cannot tell: kernel parameters).
    pub extent: u64,
}

/// What a proof checked.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct OwnershipProof {
    /// Nodes read.
    pub nodes: usize,
    /// Addresses found in them.
    pub addresses: usize,
    /// Of those, in the graph's own memory.
    pub graph_memory: usize,
    /// In memory held by the graph's resources.
    pub resources: usize,
    /// In device-lifetime memory.
    pub device_lifetime: usize,
    /// Condition handles.
    pub condition_handles: usize,
    /// Words of parameters passed by value that were read.
    pub words_read: usize,
}

impl fmt::Display for OwnershipProof {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} addresses in {} nodes, all owned: {} graph memory, {} held by resources, {} device-lifetime, {} \
             condition handles ({} words of by-value parameters read)",
            self.addresses,
            self.nodes,
            self.graph_memory,
            self.resources,
            self.device_lifetime,
            self.condition_handles,
            self.words_read
        )
    }
}

/// Every use of memory in `snapshot` that is neither graph memory, a condition handle, nor
/// inside a range of `owners`, in node order; and what was checked.
pub fn unowned(snapshot: &GraphSnapshot, owners: &Owners) -> (Vec<Unowned>, OwnershipProof) {
    let mut proof = OwnershipProof { nodes: snapshot.nodes.len(), ..Default::default() };
    let mut out = Vec::new();
    for (node, n) in snapshot.nodes.iter().enumerate() {
        let mut check = |place: Place, target: Target, extent: u64| {
            proof.addresses += 1;
            let addr = match target {
                Target::Graph { .. } => {
                    proof.graph_memory += 1;
                    return;
                }
                Target::Condition { .. } => {
                    proof.condition_handles += 1;
                    return;
                }
                Target::Device { base, offset }
                | Target::Pinned { base, offset }
                | Target::Managed { base, offset } => base.wrapping_add(offset),
                Target::Pageable { addr } | Target::Unknown { addr } => addr,
            };
            let known = !matches!(target, Target::Pageable { .. } | Target::Unknown { .. });
            match owners.find(addr, extent.max(1)).filter(|_| known) {
                Some(h) if h.holding == Holding::Resource => proof.resources += 1,
                Some(_) => proof.device_lifetime += 1,
                None => out.push(Unowned { node, place, addr, target, extent: extent.max(1) }),
            }
        };
        match &n.kind {
            NodeKind::Kernel(k) => match &k.params {
                None => out.push(Unowned {
                    node,
                    place: Place::UnreadableParams,
                    addr: 0,
                    target: Target::Unknown { addr: 0 },
                    extent: 0,
                }),
                Some(params) => {
                    for (i, p) in params.iter().enumerate() {
                        if let Some(t) = p.target {
                            check(Place::Param(i), t, 1);
                        }
                        for &(offset, t) in &p.words {
                            check(Place::ParamWord(i, offset), t, 1);
                        }
                        if p.bytes.len() > 8 {
                            proof.words_read += p.bytes.len() / 8;
                        }
                    }
                }
            },
            NodeKind::Copy { dst, src, bytes, .. } => {
                check(Place::CopySource, *src, *bytes as u64);
                check(Place::CopyDestination, *dst, *bytes as u64);
            }
            NodeKind::Memset { dst, element_size, width, .. } => {
                check(Place::MemsetDestination, *dst, u64::from(*element_size).saturating_mul(*width as u64));
            }
            NodeKind::MemFree { target } => match target {
                // A graph may free only what it allocated.
                Target::Graph { .. } => {
                    proof.addresses += 1;
                    proof.graph_memory += 1;
                }
                t => {
                    let addr = t.offset().map_or(0, |_| match *t {
                        Target::Device { base, offset }
                        | Target::Pinned { base, offset }
                        | Target::Managed { base, offset } => base.wrapping_add(offset),
                        _ => 0,
                    });
                    proof.addresses += 1;
                    out.push(Unowned { node, place: Place::Freed, addr, target: *t, extent: 1 });
                }
            },
            _ => {}
        }
    }
    (out, proof)
}

/// Proves that `snapshot`'s graph owns every address it uses (see the [module](self)).
///
/// # Errors
/// [`Error::NotOwned`] for the first use of memory it does not own, with how many more
/// there are.
pub fn prove(snapshot: &GraphSnapshot, owners: &Owners) -> Result<OwnershipProof> {
    let (refused, proof) = unowned(snapshot, owners);
    match refused.first() {
        None => Ok(proof),
        Some(u) => Err(refusal(snapshot, owners, u, refused.len() - 1)),
    }
}

/// The error for `u`, with `more` other refused uses.
pub fn refusal(snapshot: &GraphSnapshot, owners: &Owners, u: &Unowned, more: usize) -> Error {
    let n = snapshot.nodes.get(u.node);
    let freed = matches!(u.place, Place::Freed);
    let hint = if freed {
        "A graph may free only memory it allocated itself: a buffer dropped during the capture is freed at every \
         replay. Drop it after the capture instead"
            .to_owned()
    } else if matches!(u.place, Place::UnreadableParams) {
        "Launch the kernel with its parameters one by one (not a packed buffer), on a driver of CUDA 12.4 or later, \
         so its addresses can be read"
            .to_owned()
    } else {
        owners.hint.clone()
    };
    Error::NotOwned(Box::new(NotOwned {
        capture: snapshot.capture_id,
        node: u.node,
        node_kind: n.map_or_else(|| "node".to_owned(), |n| n.kind.describe()),
        op: n.and_then(|n| n.op.clone()),
        place: u.place.to_string(),
        addr: u.addr,
        allocation: u.target,
        more,
        hint,
    }))
}
