//! Issue #32: the capture diff compares an edge's kind too. Two captures of one step whose
//! kernels are the same but whose edge is programmatic in one (programmatic dependent launch)
//! and full in the other run differently: the diff names the node where that happens.

use crate::device::snapshot::{KernelNode, RawNode, RawSnapshot};
use crate::diff::{Cause, What};
use crate::snapshot::{locate, GraphSnapshot};

fn chain(programmatic: Vec<(usize, usize)>) -> GraphSnapshot {
    let kernel = |name: &str| {
        RawNode::Kernel(KernelNode {
            name: name.into(),
            grid: (1, 1, 1),
            block: (32, 1, 1),
            shared_mem_bytes: 0,
            params: Some(Vec::new()),
        })
    };
    let raw = RawSnapshot {
        nodes: vec![kernel("qkv"), kernel("attention"), kernel("o_proj")],
        edges: vec![(0, 1), (1, 2)],
        programmatic,
    };
    locate(raw, vec![None, None, None], 1, &[], |_| None)
}

#[test]
fn an_edge_of_another_kind_is_a_difference() {
    let full = chain(Vec::new());
    let pdl = chain(vec![(1, 2)]);
    assert!(crate::diff::diff(&full, &full.clone()).differences.is_empty());
    let d = crate::diff::diff(&full, &pdl);
    assert_eq!(d.differences.len(), 1, "{d:?}");
    let diff = &d.differences[0];
    assert_eq!(diff.node.index, 2, "the node whose incoming edge changed kind");
    assert!(matches!(diff.what, What::Topology));
    assert!(matches!(diff.cause, Cause::Topology));
    assert!(diff.first.contains("programmatic dependent launch"), "{}", diff.first);
}

#[test]
fn different_dependencies_are_not_called_another_kind() {
    let a = chain(Vec::new());
    let mut b = chain(Vec::new());
    b.edges = vec![(0, 1), (0, 2)];
    let d = crate::diff::diff(&a, &b);
    assert_eq!(d.differences.len(), 1, "{d:?}");
    assert!(d.differences[0].first.contains("with different dependencies"), "{}", d.differences[0].first);
}
