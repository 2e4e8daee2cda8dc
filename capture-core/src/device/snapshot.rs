//! A captured graph described node by node, as plain data: what a capture diff compares
//! (issue #25).
//!
//! Both backends describe a graph the same way (`Backend::graph_snapshot`): nodes in the
//! order the capture created them (the driver's `cuGraphGetNodes` order, the simulated
//! device's record order), each with what the driver knows of it, and the dependency edges
//! between them. The values layer (`crate::snapshot`) then locates every address: an address
//! inside memory a graph allocation node of the same graph allocates is named by that node
//! and the offset in it — never by its raw address, which differs from graph to graph — and
//! other addresses by the allocation they fall in.

use std::fmt;

use crate::raw::site::CallSite;

/// What a device address points into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Target {
    /// Memory allocated inside the graph: the index of the allocation node, and the offset.
    Graph {
        /// The graph allocation node's index in its snapshot.
        alloc_node: usize,
        /// Bytes from the start of that allocation.
        offset: u64,
    },
    /// Device memory allocated outside the graph.
    Device {
        /// The allocation's base address.
        base: u64,
        /// Bytes from its start.
        offset: u64,
    },
    /// Page-locked (pinned) host memory.
    Pinned {
        /// The allocation's base address.
        base: u64,
        /// Bytes from its start.
        offset: u64,
    },
    /// Managed (unified) memory.
    Managed {
        /// The allocation's base address.
        base: u64,
        /// Bytes from its start.
        offset: u64,
    },
    /// Host memory the driver does not know: pageable memory, such as a `Vec`'s.
    Pageable {
        /// The address.
        addr: u64,
    },
    /// A conditional node's condition handle (a kernel sets the condition through it): the
    /// index of the handle among those the capture made, in order.
    Condition {
        /// 0 for the capture's first handle, 1 for the next, …
        index: usize,
    },
    /// An address in no allocation the device knows.
    Unknown {
        /// The address.
        addr: u64,
    },
}

impl Target {
    /// The allocation the address falls in and the offset in it, for comparing two
    /// addresses: `None` for an address with no known allocation.
    pub fn offset(&self) -> Option<u64> {
        match *self {
            Target::Graph { offset, .. }
            | Target::Device { offset, .. }
            | Target::Pinned { offset, .. }
            | Target::Managed { offset, .. } => Some(offset),
            Target::Pageable { .. } | Target::Unknown { .. } | Target::Condition { .. } => None,
        }
    }

    /// Whether `self` and `other` fall in the same allocation (whatever their offsets).
    pub fn same_allocation(&self, other: &Target) -> bool {
        match (*self, *other) {
            (Target::Graph { alloc_node: a, .. }, Target::Graph { alloc_node: b, .. }) => a == b,
            (Target::Device { base: a, .. }, Target::Device { base: b, .. })
            | (Target::Pinned { base: a, .. }, Target::Pinned { base: b, .. })
            | (Target::Managed { base: a, .. }, Target::Managed { base: b, .. }) => a == b,
            (Target::Condition { index: a }, Target::Condition { index: b }) => a == b,
            (Target::Pageable { addr: a }, Target::Pageable { addr: b })
            | (Target::Unknown { addr: a }, Target::Unknown { addr: b }) => a == b,
            _ => false,
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Target::Graph { alloc_node, offset } => {
                write!(f, "offset {offset} in the graph allocation of node {alloc_node}")
            }
            Target::Device { base, offset } => write!(f, "offset {offset} in device allocation {base:#x}"),
            Target::Pinned { base, offset } => write!(f, "offset {offset} in pinned host allocation {base:#x}"),
            Target::Managed { base, offset } => write!(f, "offset {offset} in managed allocation {base:#x}"),
            Target::Pageable { addr } => write!(f, "pageable host address {addr:#x}"),
            Target::Condition { index } => write!(f, "condition handle {index} of the capture"),
            Target::Unknown { addr } => write!(f, "address {addr:#x} (in no known allocation)"),
        }
    }
}

/// One kernel parameter as the graph holds it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParamValue {
    /// The parameter's bytes.
    pub bytes: Vec<u8>,
    /// Its PTX type (`u32`, `u64`, `f32`, …), where the kernel's PTX is known.
    pub ty: Option<String>,
    /// What it points into, for an 8-byte parameter whose value is an address the device
    /// knows (a pointer) or a condition handle the capture made; `None` for a value.
    pub target: Option<Target>,
    /// For a parameter larger than 8 bytes (a struct passed by value, such as cuBLAS's
    /// opaque parameter blocks): each 8-byte-aligned word of it that is an address the
    /// device knows, as (byte offset in the parameter, what it points into). Empty for a
    /// parameter of 8 bytes or less.
    pub words: Vec<(usize, Target)>,
}

/// A kernel node.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct KernelNode {
    /// The kernel's name (mangled, as the driver gives it).
    pub name: String,
    /// Grid dimensions.
    pub grid: (u32, u32, u32),
    /// Block dimensions.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory, bytes.
    pub shared_mem_bytes: u32,
    /// The parameters, in order; `None` when the driver cannot tell their sizes (a kernel
    /// launched with a packed parameter buffer, or a driver older than CUDA 12.4).
    pub params: Option<Vec<ParamValue>>,
}

/// What a graph node does.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum NodeKind {
    /// A kernel launch.
    Kernel(KernelNode),
    /// A copy.
    Copy {
        /// Where it writes.
        dst: Target,
        /// Where it reads.
        src: Target,
        /// Bytes.
        bytes: usize,
        /// The bytes a copy from pageable host memory took at capture time, where the
        /// device keeps them (the simulated device does; a GPU re-reads the address).
        host_data: Option<Vec<u8>>,
    },
    /// A memset.
    Memset {
        /// Where it writes.
        dst: Target,
        /// The value.
        value: u32,
        /// Bytes per element (1, 2 or 4).
        element_size: u32,
        /// Elements per row.
        width: usize,
        /// Rows.
        height: usize,
    },
    /// A graph allocation.
    MemAlloc {
        /// Bytes.
        bytes: usize,
    },
    /// A graph free.
    MemFree {
        /// What it frees.
        target: Target,
    },
    /// An event record or wait, or an empty node.
    Event,
    /// A host-function node.
    Host,
    /// A conditional node (IF, WHILE): its bodies are not described.
    Conditional,
    /// A node of another kind (the driver's name for it).
    Other(String),
}

impl NodeKind {
    /// A short name of the kind: "kernel `add_f32`", "copy", "memset", …
    pub fn describe(&self) -> String {
        match self {
            NodeKind::Kernel(k) => format!("kernel `{}`", k.name),
            NodeKind::Copy { bytes, .. } => format!("{bytes}-byte copy"),
            NodeKind::Memset { .. } => "memset".to_owned(),
            NodeKind::MemAlloc { bytes } => format!("{bytes}-byte graph allocation"),
            NodeKind::MemFree { .. } => "graph free".to_owned(),
            NodeKind::Event => "event or empty node".to_owned(),
            NodeKind::Host => "host-function node".to_owned(),
            NodeKind::Conditional => "conditional node".to_owned(),
            NodeKind::Other(k) => format!("{k} node"),
        }
    }

    /// Whether two nodes are of the same kind and, for kernels, the same function: the
    /// nodes a diff pairs up.
    pub fn same_shape(&self, other: &NodeKind) -> bool {
        match (self, other) {
            (NodeKind::Kernel(a), NodeKind::Kernel(b)) => a.name == b.name,
            (NodeKind::Other(a), NodeKind::Other(b)) => a == b,
            _ => std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

/// What the device knows of an address: the allocation it falls in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Located {
    pub base: u64,
    pub kind: MemKind,
}

/// The kind of an allocation the device knows.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum MemKind {
    Device,
    Pinned,
    Managed,
    /// Memory a graph allocates (the simulated device's graph allocations).
    Graph,
}

/// The library operation that recorded each node and its call site, where known.
pub(crate) type NodeOps = Vec<Option<(&'static str, CallSite)>>;

/// A snapshot as a backend reads it: addresses still raw (`Target::Unknown`), kernel
/// parameters without targets. `crate::snapshot::locate` turns it into a `GraphSnapshot`.
pub(crate) struct RawSnapshot {
    pub nodes: Vec<RawNode>,
    pub edges: Vec<(usize, usize)>,
    /// The edges among `edges` that are programmatic (programmatic dependent launch's).
    pub programmatic: Vec<(usize, usize)>,
}

/// A node as a backend reads it.
pub(crate) enum RawNode {
    /// A kernel: its parameters' bytes (and PTX types where known).
    Kernel(KernelNode),
    /// A copy between raw addresses; `src_pageable`: the source is pageable host memory;
    /// `host_data`: the bytes such a copy took, where kept.
    Copy {
        dst: u64,
        src: u64,
        bytes: usize,
        src_pageable: bool,
        dst_pageable: bool,
        host_data: Option<Vec<u8>>,
    },
    Memset {
        dst: u64,
        value: u32,
        element_size: u32,
        width: usize,
        height: usize,
    },
    MemAlloc {
        ptr: u64,
        bytes: usize,
    },
    MemFree {
        ptr: u64,
    },
    Plain(NodeKind),
}
