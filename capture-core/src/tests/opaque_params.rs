//! Issue #30: a kernel parameter passed by value (cuBLAS's opaque parameter blocks) is read
//! word by word, and an address hidden in it is located and held to the ownership proof;
//! words that are no address the device knows are values.

use crate::device::snapshot::{KernelNode, Located, MemKind, ParamValue, RawNode, RawSnapshot, Target};
use crate::own::{self, Owners, Place};
use crate::snapshot::locate;

const BASE: u64 = 0x7f00_0000_0000;

fn block(words: &[u64]) -> ParamValue {
    ParamValue {
        bytes: words.iter().flat_map(|w| w.to_le_bytes()).collect(),
        ty: None,
        target: None,
        words: Vec::new(),
    }
}

fn snapshot(params: Vec<ParamValue>) -> crate::snapshot::GraphSnapshot {
    let kernel = KernelNode {
        name: "gemm".into(),
        grid: (1, 1, 1),
        block: (1, 1, 1),
        shared_mem_bytes: 0,
        params: Some(params),
    };
    let raw = RawSnapshot { nodes: vec![RawNode::Kernel(kernel)], edges: Vec::new(), programmatic: Vec::new() };
    let find = |a: u64| (BASE..BASE + 4096).contains(&a).then_some(Located { base: BASE, kind: MemKind::Device });
    locate(raw, vec![None], 7, &[], find)
}

#[test]
fn an_address_inside_a_by_value_block_is_found_and_held_to_the_proof() {
    // m = 64, n = 32 as two u32s in one word, a float pair, the address, a size.
    let m_n = 64u64 | (32u64 << 32);
    let floats = u64::from(1.0f32.to_bits()) | (u64::from(0.5f32.to_bits()) << 32);
    let snap = snapshot(vec![block(&[m_n, floats, BASE + 256, 4096])]);
    let crate::device::snapshot::NodeKind::Kernel(k) = &snap.nodes[0].kind else { panic!() };
    let p = &k.params.as_ref().unwrap()[0];
    assert_eq!(p.words, vec![(16, Target::Device { base: BASE, offset: 256 })]);

    let (refused, proof) = own::unowned(&snap, &Owners::new());
    assert_eq!(proof.words_read, 4);
    assert_eq!(refused.len(), 1);
    assert_eq!(refused[0].place, Place::ParamWord(0, 16));
    assert_eq!(refused[0].addr, BASE + 256);

    let mut owners = Owners::new();
    owners.resource(BASE, 4096, "the operand");
    assert_eq!(own::prove(&snap, &owners).unwrap().resources, 1);
}

#[test]
fn a_kernel_whose_parameters_cannot_be_read_is_refused() {
    let kernel =
        KernelNode { name: "packed".into(), grid: (1, 1, 1), block: (1, 1, 1), shared_mem_bytes: 0, params: None };
    let raw = RawSnapshot { nodes: vec![RawNode::Kernel(kernel)], edges: Vec::new(), programmatic: Vec::new() };
    let snap = locate(raw, vec![None], 1, &[], |_| None);
    let err = own::prove(&snap, &Owners::new()).unwrap_err();
    assert!(err.to_string().contains("cannot read"), "{err}");
}

#[test]
fn a_diff_compares_by_value_blocks_word_by_word() {
    use crate::device::snapshot::RawNode;
    // Two captures of one cuBLAS-like node: the operand in graph memory (another address in
    // each graph), a size that changed.
    let graph_of = |alloc: u64, size: u64| {
        let kernel = KernelNode {
            name: "gemm".into(),
            grid: (1, 1, 1),
            block: (1, 1, 1),
            shared_mem_bytes: 0,
            params: Some(vec![block(&[alloc + 64, size, 7])]),
        };
        let raw = RawSnapshot {
            nodes: vec![RawNode::MemAlloc { ptr: alloc, bytes: 4096 }, RawNode::Kernel(kernel)],
            edges: vec![(0, 1)],
            programmatic: Vec::new(),
        };
        locate(raw, vec![None, None], 1, &[], |_| None)
    };
    let same = crate::diff::diff(&graph_of(BASE, 32), &graph_of(BASE + 0x10_0000, 32));
    assert!(same.differences.is_empty(), "graph memory is compared by allocation and offset: {same}");
    let d = crate::diff::diff(&graph_of(BASE, 32), &graph_of(BASE + 0x10_0000, 48));
    assert_eq!(d.differences.len(), 1, "{d}");
    let text = d.to_string();
    assert!(text.contains("word at byte 8"), "{text}");
}
