//! A captured graph described node by node, its addresses located and each node named by the
//! operation that recorded it: what a capture diff compares (issue #25). The backends' side
//! is `crate::device::snapshot`.

use crate::device::snapshot::{Located, MemKind, NodeKind, NodeOps, RawNode, RawSnapshot, Target};
use crate::error::OpSite;

/// One node of a [`GraphSnapshot`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct SnapNode {
    /// What it does.
    pub kind: NodeKind,
    /// The library operation that recorded it and its call site, where known: always on
    /// the simulated device; on a GPU when the capture traced nodes
    /// ([`CaptureOptions::trace_nodes`](crate::CaptureOptions::trace_nodes)). `None` for
    /// work issued behind this library's back (a candle op, a cudarc call).
    pub op: Option<OpSite>,
}

/// A captured graph described node by node. Get one from
/// [`CaptureGuard::finish_snapshot`](crate::CaptureGuard::finish_snapshot); compare two
/// with `diff::diff`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct GraphSnapshot {
    /// The nodes, in the order the capture created them.
    pub nodes: Vec<SnapNode>,
    /// Dependency edges (from, to), as node indices.
    pub edges: Vec<(usize, usize)>,
    /// The edges among [`edges`](Self::edges) that are programmatic: from a kernel launched
    /// to let its successor start early (programmatic dependent launch, compute capability
    /// 9.0 and later) to that successor, which may start before the first ends. Empty on the
    /// simulated device.
    pub programmatic_edges: Vec<(usize, usize)>,
    /// The capture's id within its context.
    pub capture_id: u64,
    /// How long reading the graph's nodes and locating their addresses took.
    pub describe_time: std::time::Duration,
}

/// Eight little-endian bytes as a `u64`.
fn le_word(b: &[u8]) -> u64 {
    let mut w = [0u8; 8];
    w.copy_from_slice(&b[..8]);
    u64::from_le_bytes(w)
}

/// Locates every address of `raw`: inside a graph allocation of the same graph (the latest
/// allocation node created before the node that uses it, since the driver may hand an
/// address freed earlier in the graph to a later allocation), or in an allocation `find`
/// knows; an 8-byte kernel parameter equal to one of `handles` (the capture's condition
/// handles) is that handle. `ops` labels the nodes.
pub(crate) fn locate(
    raw: RawSnapshot,
    ops: NodeOps,
    capture_id: u64,
    handles: &[u64],
    find: impl Fn(u64) -> Option<Located>,
) -> GraphSnapshot {
    let allocs: Vec<(usize, u64, u64)> = raw
        .nodes
        .iter()
        .enumerate()
        .filter_map(|(i, n)| match n {
            RawNode::MemAlloc { ptr, bytes } => Some((i, *ptr, *bytes as u64)),
            _ => None,
        })
        .collect();
    let target = |at: usize, addr: u64| -> Option<Target> {
        let in_graph = |&&(_, p, len): &&(usize, u64, u64)| addr >= p && addr - p < len;
        let graph = allocs.iter().filter(|a| a.0 < at).rev().find(in_graph).or_else(|| allocs.iter().find(in_graph));
        if let Some(&(alloc_node, p, _)) = graph {
            return Some(Target::Graph { alloc_node, offset: addr - p });
        }
        let l = find(addr)?;
        let offset = addr.saturating_sub(l.base);
        Some(match l.kind {
            MemKind::Device | MemKind::Graph => Target::Device { base: l.base, offset },
            MemKind::Pinned => Target::Pinned { base: l.base, offset },
            MemKind::Managed => Target::Managed { base: l.base, offset },
        })
    };
    let any = |at: usize, addr: u64, pageable: bool| {
        if pageable {
            Target::Pageable { addr }
        } else {
            target(at, addr).unwrap_or(Target::Unknown { addr })
        }
    };
    let mut ops = ops.into_iter();
    let nodes = raw
        .nodes
        .into_iter()
        .enumerate()
        .map(|(i, n)| {
            let kind = match n {
                RawNode::Kernel(mut k) => {
                    let word = |v: u64| match handles.iter().position(|&h| h == v) {
                        Some(index) => Some(Target::Condition { index }),
                        None if v == 0 => None,
                        None => target(i, v),
                    };
                    for p in k.params.iter_mut().flatten() {
                        let pointer_typed = p.ty.as_deref().is_none_or(|t| matches!(t, "u64" | "b64" | "s64"));
                        if p.bytes.len() == 8 && pointer_typed {
                            p.target = word(le_word(&p.bytes));
                        } else if p.bytes.len() > 8 {
                            // An opaque block (a struct by value): every aligned word that
                            // is an address the device knows.
                            p.words = p
                                .bytes
                                .chunks_exact(8)
                                .enumerate()
                                .filter_map(|(w, b)| word(le_word(b)).map(|t| (w * 8, t)))
                                .collect();
                        }
                    }
                    NodeKind::Kernel(k)
                }
                RawNode::Copy { dst, src, bytes, src_pageable, dst_pageable, host_data } => {
                    NodeKind::Copy { dst: any(i, dst, dst_pageable), src: any(i, src, src_pageable), bytes, host_data }
                }
                RawNode::Memset { dst, value, element_size, width, height } => {
                    NodeKind::Memset { dst: any(i, dst, false), value, element_size, width, height }
                }
                RawNode::MemAlloc { bytes, .. } => NodeKind::MemAlloc { bytes },
                RawNode::MemFree { ptr } => NodeKind::MemFree { target: any(i, ptr, false) },
                RawNode::Plain(k) => k,
            };
            SnapNode { kind, op: ops.next().flatten().map(|(op, site)| OpSite { op, site }) }
        })
        .collect();
    GraphSnapshot {
        nodes,
        edges: raw.edges,
        programmatic_edges: raw.programmatic,
        capture_id,
        describe_time: std::time::Duration::ZERO,
    }
}
