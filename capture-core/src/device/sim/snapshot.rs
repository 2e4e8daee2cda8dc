//! The simulated device's graphs described node by node, for the capture diff (issue #25).

use super::{AllocKind, Node, SimDevice, State};
use crate::device::snapshot::{KernelNode, Located, MemKind, NodeKind, NodeOps, ParamValue, RawNode, RawSnapshot};
use crate::raw::code::DriverCode;
use crate::raw::handles::{RawGraph, RawStream};

impl SimDevice {
    /// Graph `g` described node by node (see `Backend::graph_snapshot`).
    pub(crate) fn graph_snapshot(&self, g: RawGraph) -> Result<(RawSnapshot, NodeOps), DriverCode> {
        graph_snapshot(&self.st(), g)
    }

    /// The allocation `addr` falls in.
    pub(crate) fn locate(&self, addr: u64) -> Option<Located> {
        locate(&self.st(), addr)
    }

    /// How many nodes the capture `s` records into holds now.
    pub(crate) fn capture_node_count(&self, s: RawStream) -> Result<usize, DriverCode> {
        let st = self.st();
        let cap = st.active_capture_of(s.0).ok_or(DriverCode::STREAM_CAPTURE_INVALIDATED)?;
        Ok(st.captures.get(&cap).map_or(0, |c| c.nodes.len()))
    }
}

/// Graph `g`'s nodes and edges, with the library operation that recorded each node.
/// Condition-handle resets are left out: they are the simulator's, not nodes of a GPU's graph.
fn graph_snapshot(st: &State, g: RawGraph) -> Result<(RawSnapshot, NodeOps), DriverCode> {
    let graph = st.graphs.get(&g.0).ok_or(DriverCode::INVALID_HANDLE)?;
    // Old index -> new index, for the nodes kept.
    let mut index = vec![None; graph.nodes.len()];
    let mut nodes = Vec::new();
    let mut ops = Vec::new();
    for (i, n) in graph.nodes.iter().enumerate() {
        let raw = match n {
            Node::CondReset { .. } => continue,
            Node::Kernel { name, grid, block, slots } => RawNode::Kernel(kernel(st, name, *grid, *block, slots)),
            Node::Copy { dst, src, bytes } => RawNode::Copy {
                dst: *dst,
                src: *src,
                bytes: *bytes,
                src_pageable: false,
                dst_pageable: false,
                host_data: None,
            },
            // The simulated device keeps the bytes; the host address is not known.
            Node::HostCopy { dst, data } => RawNode::Copy {
                dst: *dst,
                src: 0,
                bytes: data.len(),
                src_pageable: true,
                dst_pageable: false,
                host_data: Some(data.clone()),
            },
            Node::Memset { dst, value, bytes } => {
                RawNode::Memset { dst: *dst, value: u32::from(*value), element_size: 1, width: *bytes, height: 1 }
            }
            Node::MemAlloc { ptr, bytes } => RawNode::MemAlloc { ptr: *ptr, bytes: *bytes },
            Node::MemFree { ptr } => RawNode::MemFree { ptr: *ptr },
            Node::Event => RawNode::Plain(NodeKind::Event),
            Node::Collective(c) => RawNode::Plain(NodeKind::Other(format!("collective {}", c.call.name()))),
            Node::Cond { .. } => RawNode::Plain(NodeKind::Conditional),
        };
        index[i] = Some(nodes.len());
        nodes.push(raw);
        let label = graph.labels.get(i).copied().flatten();
        ops.push(label.and_then(|l| l.site.map(|site| (l.op, site))));
    }
    let edges = graph
        .edges
        .iter()
        .filter_map(|&(a, b)| Some((index.get(a).copied().flatten()?, index.get(b).copied().flatten()?)))
        .collect();
    // The simulated device launches no kernel programmatically.
    Ok((RawSnapshot { nodes, edges, programmatic: Vec::new() }, ops))
}

/// A kernel node: each parameter's bytes are its slot's first bytes, as many as the
/// kernel's PTX declares (all 8 where the kernel's PTX is not known).
fn kernel(st: &State, name: &str, grid: (u32, u32, u32), block: (u32, u32, u32), slots: &[u64]) -> KernelNode {
    let sig = st.modules.values().flatten().find(|k| k.name == name);
    let params = slots
        .iter()
        .enumerate()
        .map(|(i, slot)| {
            let p = sig.and_then(|s| s.params.get(i));
            let n = p.map_or(8, |p| p.bytes.min(8));
            ParamValue {
                bytes: slot.to_le_bytes()[..n].to_vec(),
                ty: p.map(|p| p.ty.clone()),
                target: None,
                words: Vec::new(),
            }
        })
        .collect();
    KernelNode { name: name.to_owned(), grid, block, shared_mem_bytes: 0, params: Some(params) }
}

/// The allocation `addr` falls in.
fn locate(st: &State, addr: u64) -> Option<Located> {
    let (base, _) = st.mem.find(addr, 0).ok()?;
    let kind = match st.mem.allocs.get(&base)?.kind {
        AllocKind::Device => MemKind::Device,
        AllocKind::Host => MemKind::Pinned,
        AllocKind::Managed => MemKind::Managed,
        AllocKind::Graph => MemKind::Graph,
    };
    Some(Located { base, kind })
}
