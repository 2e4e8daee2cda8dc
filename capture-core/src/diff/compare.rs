//! The comparison of two snapshots, node by node.

use std::collections::BTreeSet;

use super::{CaptureDiff, Cause, Difference, NodeRef, NotCompared, What};
use crate::device::snapshot::{KernelNode, NodeKind, ParamValue, Target};
use crate::snapshot::{GraphSnapshot, SnapNode};

/// Compares two snapshots of one step (see [`crate::diff`]): topology first, then each pair
/// of nodes up to the point where the topologies part.
///
/// Never fails: graphs of different sizes or shapes give a [`Cause::Topology`] difference.
pub fn diff(first: &GraphSnapshot, second: &GraphSnapshot) -> CaptureDiff {
    let (a, b) = (&first.nodes, &second.nodes);
    let paired = a.len().min(b.len());
    // Where the node kinds (or kernels) part, else the end of the shorter graph.
    let mut split = (0..paired).find(|&i| !a[i].kind.same_shape(&b[i].kind)).unwrap_or(paired);
    // Edges among the nodes before the split must match too, and their kind (full or
    // programmatic): the first node whose dependencies differ is where the shapes part.
    let deps = |g: &GraphSnapshot, limit: usize| -> BTreeSet<(usize, usize, bool)> {
        let programmatic: BTreeSet<_> = g.programmatic_edges.iter().copied().collect();
        g.edges
            .iter()
            .copied()
            .filter(|&(x, y)| x < limit && y < limit)
            .map(|(x, y)| (y, x, programmatic.contains(&(x, y))))
            .collect()
    };
    let (ea, eb) = (deps(first, split), deps(second, split));
    // Whether the dependencies part only in their kind (the same edges, full in one capture and
    // programmatic in the other).
    let mut kind_only = false;
    if let Some(&(node, _, _)) = ea.symmetric_difference(&eb).next() {
        let plain = |e: &BTreeSet<(usize, usize, bool)>| -> BTreeSet<(usize, usize)> {
            e.iter().filter(|&&(y, _, _)| y == node).map(|&(y, x, _)| (y, x)).collect()
        };
        kind_only = plain(&ea) == plain(&eb);
        split = node;
    }
    let mut out = CaptureDiff {
        captures: (first.capture_id, second.capture_id),
        nodes: (a.len(), b.len()),
        differences: Vec::new(),
        not_compared: Vec::new(),
        ran_eagerly: Vec::new(),
    };
    for i in 0..split {
        compare_node(&mut out, i, &a[i], &b[i]);
    }
    if split < a.len() || split < b.len() {
        let describe =
            |g: &[SnapNode]| g.get(split).map_or_else(|| "the end of the graph".to_owned(), |n| describe(split, n));
        let mut first_side = describe(a);
        let mut second_side = describe(b);
        if split < paired && a[split].kind.same_shape(&b[split].kind) {
            let what = if kind_only {
                " with the same dependencies, of another kind (programmatic dependent launch in one capture)"
            } else {
                " with different dependencies"
            };
            first_side += what;
            second_side += what;
        }
        let node = match a.get(split).or_else(|| b.get(split)) {
            Some(n) => node_ref(split, n),
            None => NodeRef { index: split, kind: "the end of the graph".to_owned(), op: None },
        };
        out.differences.push(Difference {
            node,
            what: What::Topology,
            first: format!("{first_side} ({} nodes)", a.len()),
            second: format!("{second_side} ({} nodes)", b.len()),
            cause: Cause::Topology,
        });
    }
    out
}

fn describe(i: usize, n: &SnapNode) -> String {
    format!("node {i} is a {}", n.kind.describe())
}

fn node_ref(i: usize, n: &SnapNode) -> NodeRef {
    NodeRef { index: i, kind: n.kind.describe(), op: n.op.clone() }
}

/// Compares a pair of nodes of the same kind.
fn compare_node(out: &mut CaptureDiff, i: usize, x: &SnapNode, y: &SnapNode) {
    let mut push = |what: What, first: String, second: String, cause: Cause| {
        out.differences.push(Difference { node: node_ref(i, x), what, first, second, cause });
    };
    match (&x.kind, &y.kind) {
        (NodeKind::Kernel(k), NodeKind::Kernel(l)) => {
            let launch =
                |k: &KernelNode| format!("grid {:?}, block {:?}, {} B shared", k.grid, k.block, k.shared_mem_bytes);
            if (k.grid, k.block, k.shared_mem_bytes) != (l.grid, l.block, l.shared_mem_bytes) {
                push(What::Launch, launch(k), launch(l), Cause::HostShape);
            }
            match (&k.params, &l.params) {
                (Some(p), Some(q)) if p.len() == q.len() => {
                    for (j, (u, v)) in p.iter().zip(q).enumerate() {
                        if let Some((first, second, cause)) = compare_param(u, v) {
                            push(What::Param { index: j, ty: param_type(u) }, first, second, cause);
                        }
                    }
                }
                (Some(p), Some(q)) => push(
                    What::Launch,
                    format!("{} parameters", p.len()),
                    format!("{} parameters", q.len()),
                    Cause::Topology,
                ),
                _ => out.not_compared.push(NotCompared {
                    node: node_ref(i, x),
                    reason: "the driver cannot tell this kernel's parameter sizes (a launch with a packed parameter buffer, or a driver before CUDA 12.4): only its launch geometry was compared",
                }),
            }
        }
        (
            NodeKind::Copy { dst, src, bytes, host_data },
            NodeKind::Copy { dst: dst2, src: src2, bytes: bytes2, host_data: host2 },
        ) => {
            if bytes != bytes2 {
                push(What::CopySize, format!("{bytes} B"), format!("{bytes2} B"), Cause::HostShape);
            }
            match (host_data, host2) {
                (Some(d), Some(e)) if d != e => push(What::CopyHostData, hex(d), hex(e), Cause::HostUpload),
                (Some(_), Some(_)) => {}
                _ => {
                    if let Some((first, second, cause)) = compare_target(src, src2) {
                        push(What::CopySource, first, second, cause);
                    }
                }
            }
            if let Some((first, second, cause)) = compare_target(dst, dst2) {
                push(What::CopyDestination, first, second, cause);
            }
        }
        (
            NodeKind::Memset { dst, value, element_size, width, height },
            NodeKind::Memset { dst: dst2, value: value2, element_size: e2, width: w2, height: h2 },
        ) => {
            if let Some((first, second, cause)) = compare_target(dst, dst2) {
                push(What::MemsetDestination, first, second, cause);
            }
            if value != value2 {
                push(What::MemsetValue, format!("{value:#x}"), format!("{value2:#x}"), Cause::HostValue);
            }
            if (element_size, width, height) != (e2, w2, h2) {
                let size = |e: &u32, w: &usize, h: &usize| format!("{w} × {h} elements of {e} B");
                push(What::MemsetSize, size(element_size, width, height), size(e2, w2, h2), Cause::HostShape);
            }
        }
        (NodeKind::MemAlloc { bytes }, NodeKind::MemAlloc { bytes: bytes2 }) if bytes != bytes2 => {
            push(What::AllocSize, format!("{bytes} B"), format!("{bytes2} B"), Cause::HostShape);
        }
        (NodeKind::MemFree { target }, NodeKind::MemFree { target: target2 }) => {
            if let Some((first, second, cause)) = compare_target(target, target2) {
                push(What::FreeTarget, first, second, cause);
            }
        }
        (NodeKind::Conditional, _) => out.not_compared.push(NotCompared {
            node: node_ref(i, x),
            reason: "a conditional node: its bodies are not described, so what they hold was not compared",
        }),
        (NodeKind::Other(_), _) => out.not_compared.push(NotCompared {
            node: node_ref(i, x),
            reason: "a node of a kind the diff does not model: only its kind was compared",
        }),
        _ => {}
    }
}

/// Two parameters: as pointers where both point into known memory (allocation and
/// offset), else as bytes.
fn compare_param(u: &ParamValue, v: &ParamValue) -> Option<(String, String, Cause)> {
    if u.bytes.len() > 8 && u.bytes.len() == v.bytes.len() {
        return compare_block(u, v);
    }
    match (&u.target, &v.target) {
        (Some(s), Some(t)) => compare_target(s, t),
        (None, None) if u.bytes == v.bytes => None,
        (None, None) => Some((value(u), value(v), Cause::HostValue)),
        // An address in one, a value (or null) in the other.
        (s, t) => Some((
            s.map_or_else(|| value(u), |s| s.to_string()),
            t.map_or_else(|| value(v), |t| t.to_string()),
            Cause::OtherAllocation,
        )),
    }
}

/// Two parameters passed by value (a struct, cuBLAS's packed parameter buffer), word by
/// word: a word that is an address in both is compared by allocation and offset (graph
/// memory has other addresses in every graph), any other word by its bytes.
fn compare_block(u: &ParamValue, v: &ParamValue) -> Option<(String, String, Cause)> {
    let at = |p: &ParamValue, o: usize| p.words.iter().find(|w| w.0 == o).map(|w| w.1);
    for (i, (a, b)) in u.bytes.chunks(8).zip(v.bytes.chunks(8)).enumerate() {
        let o = i * 8;
        match (at(u, o), at(v, o)) {
            (Some(s), Some(t)) => {
                if let Some((x, y, cause)) = compare_target(&s, &t) {
                    return Some((format!("word at byte {o}: {x}"), format!("word at byte {o}: {y}"), cause));
                }
            }
            _ if a == b => {}
            _ => {
                return Some((
                    format!("word at byte {o}: {a:02x?}"),
                    format!("word at byte {o}: {b:02x?}"),
                    Cause::HostValue,
                ))
            }
        }
    }
    None
}

/// Two addresses, by allocation and offset.
fn compare_target(s: &Target, t: &Target) -> Option<(String, String, Cause)> {
    if s == t {
        return None;
    }
    let host = |t: &Target| matches!(t, Target::Pageable { .. } | Target::Pinned { .. });
    let cause = if host(s) || host(t) {
        Cause::HostUpload
    } else if s.same_allocation(t) {
        Cause::PointerOffset
    } else {
        Cause::OtherAllocation
    };
    Some((s.to_string(), t.to_string(), cause))
}

/// The parameter's type: its PTX type, else its size.
fn param_type(p: &ParamValue) -> String {
    match (&p.ty, p.target) {
        (Some(ty), _) => ty.clone(),
        (None, Some(_)) => "pointer".to_owned(),
        (None, None) => format!("{}-byte value", p.bytes.len()),
    }
}

/// A parameter's value, decoded by its PTX type (or, unknown, as an unsigned integer of its
/// size), e.g. `7`, `0.5`, or hex bytes.
fn value(p: &ParamValue) -> String {
    let b = &p.bytes;
    let arr4 = || <[u8; 4]>::try_from(b.as_slice()).ok();
    let arr8 = || <[u8; 8]>::try_from(b.as_slice()).ok();
    let arr2 = || <[u8; 2]>::try_from(b.as_slice()).ok();
    let ty = p.ty.as_deref().unwrap_or("");
    let decoded = match (ty, b.len()) {
        ("f32", 4) => arr4().map(|a| f32::from_le_bytes(a).to_string()),
        ("f64", 8) => arr8().map(|a| f64::from_le_bytes(a).to_string()),
        ("s32", 4) => arr4().map(|a| i32::from_le_bytes(a).to_string()),
        ("s64", 8) => arr8().map(|a| i64::from_le_bytes(a).to_string()),
        ("s16", 2) => arr2().map(|a| i16::from_le_bytes(a).to_string()),
        (_, 4) => arr4().map(|a| u32::from_le_bytes(a).to_string()),
        (_, 8) => arr8().map(|a| u64::from_le_bytes(a).to_string()),
        (_, 2) => arr2().map(|a| u16::from_le_bytes(a).to_string()),
        (_, 1) => Some(b[0].to_string()),
        _ => None,
    };
    let decoded = decoded.unwrap_or_else(|| hex(b));
    // Of unknown type, a 4- or 8-byte value may be a float: say so where it reads as one.
    let float = match (p.ty.is_none(), b.len()) {
        (true, 4) => arr4().map(|a| f64::from(f32::from_le_bytes(a))),
        (true, 8) => arr8().map(f64::from_le_bytes),
        _ => None,
    };
    match float.filter(|x| x.is_normal() && (1e-6..1e9).contains(&x.abs())) {
        Some(x) => format!("{decoded} (as a float: {x})"),
        None => decoded,
    }
}

/// Bytes as hex, the first 32 of them.
fn hex(b: &[u8]) -> String {
    let mut s: String = b.iter().take(32).map(|x| format!("{x:02x}")).collect();
    if b.len() > 32 {
        s += &format!("… ({} B)", b.len());
    }
    s
}
