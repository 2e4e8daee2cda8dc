//! The paged, lazily backed memory (issue #13, item 1): contents agree with a flat
//! buffer across page boundaries, untouched pages cost nothing, and bounds hold. The
//! cells of condition handles go with the last graph that holds them.
use super::{AllocKind, Memory, SimDevice, ILLEGAL_STATE, PAGE};
use crate::device::{Backend, CaptureMode, CondKind, RawGraph, RawStream};
use crate::raw::code::DriverCode;

#[test]
fn pages_behave_like_flat_memory() {
    let mut m = Memory::default();
    let len = 3 * PAGE + 17;
    let a = m.alloc(len, AllocKind::Device);
    let b = m.alloc(len, AllocKind::Device);
    let mut flat = vec![0u8; len];
    // Writes straddling page boundaries, a partial set, a zero set of a whole page.
    let data: Vec<u8> = (0..PAGE + 10).map(|i| (i % 251) as u8 + 1).collect();
    m.write(a + (PAGE - 5) as u64, &data).unwrap();
    flat[PAGE - 5..PAGE - 5 + data.len()].copy_from_slice(&data);
    m.set(a + 3, 9, 4).unwrap();
    flat[3..7].fill(9);
    m.set(a + (2 * PAGE) as u64, 0, PAGE).unwrap();
    flat[2 * PAGE..3 * PAGE].fill(0);
    m.set(a + (3 * PAGE) as u64, 0xab, 17).unwrap();
    flat[3 * PAGE..].fill(0xab);
    let mut got = vec![0u8; len];
    m.read(a, &mut got).unwrap();
    assert!(got == flat, "paged memory differs from a flat buffer");
    // A copy across allocations, page by page.
    m.copy(b, a, len).unwrap();
    m.read(b, &mut got).unwrap();
    assert!(got == flat);
    // Untouched memory reads as zeros and is not backed; a full zero set drops pages.
    let c = m.alloc(1 << 40, AllocKind::Host);
    let mut z = [1u8; 8];
    m.read(c + (1 << 39), &mut z).unwrap();
    assert_eq!(z, [0; 8]);
    assert!(m.allocs[&c].pages.is_empty());
    m.set(b, 0, len).unwrap();
    assert!(m.allocs[&b].pages.is_empty());
    // Bounds.
    assert_eq!(m.read(a + len as u64 - 1, &mut [0u8; 2]), Err(DriverCode::ILLEGAL_ADDRESS));
    assert_eq!(m.write(a + len as u64, &[1]), Err(DriverCode::ILLEGAL_ADDRESS));
    assert_eq!(m.copy(a, b, len + 1), Err(DriverCode::ILLEGAL_ADDRESS));
    assert_eq!(m.set(a, 1, len + 1), Err(DriverCode::ILLEGAL_ADDRESS));
}

/// A graph whose IF node's body holds an IF of its own: two condition cells, one made in
/// the body (captured on `side`).
fn nested_ifs(sim: &SimDevice, s: RawStream, side: RawStream) -> RawGraph {
    sim.begin_capture(s, CaptureMode::Relaxed).unwrap();
    let outer = sim.cond_handle(s).unwrap();
    let body = sim.cond_add(s, outer, CondKind::If, 1).unwrap()[0];
    sim.capture_into(side, body, CaptureMode::Relaxed).unwrap();
    let inner = sim.cond_handle(side).unwrap();
    sim.cond_add(side, inner, CondKind::If, 1).unwrap();
    sim.end_into(side).unwrap();
    sim.end_capture(s).unwrap()
}

/// A condition handle's cell lives while any graph or executable graph holding its node
/// does (a launch sets and reads it: freed early, the launch would fault), and is freed
/// with the last of them — an executable graph outliving its graph, one updated in place
/// to another graph's nodes — and with a capture or body that is discarded.
#[test]
fn condition_cells_live_as_long_as_their_last_holder() {
    let sim = SimDevice::new();
    let (s, side) = (sim.stream_create().unwrap(), sim.stream_create().unwrap());
    let none = sim.live_allocations();
    let a = nested_ifs(&sim, s, side);
    assert_eq!(sim.live_allocations(), none + 2);
    let e = sim.graph_instantiate(a).unwrap();
    sim.graph_destroy(a).unwrap();
    assert_eq!(sim.live_allocations(), none + 2, "the executable graph still holds them");
    sim.graph_launch(e, s).unwrap();
    // Updated in place: the first graph's cells go, the second's are shared.
    let b = nested_ifs(&sim, s, side);
    assert_eq!(sim.live_allocations(), none + 4);
    assert_eq!(sim.graph_exec_update(e, b), Ok(true));
    assert_eq!(sim.live_allocations(), none + 2, "the nodes the update replaced");
    sim.graph_destroy(b).unwrap();
    assert_eq!(sim.live_allocations(), none + 2, "the updated executable graph holds them");
    sim.graph_launch(e, s).unwrap();
    sim.graph_exec_destroy(e).unwrap();
    assert_eq!(sim.live_allocations(), none);
    // The executable graph first, then the graph (what `Graph`'s drop does).
    let c = nested_ifs(&sim, s, side);
    let e = sim.graph_instantiate(c).unwrap();
    sim.graph_exec_destroy(e).unwrap();
    assert_eq!(sim.live_allocations(), none + 2, "the graph still holds them");
    sim.graph_destroy(c).unwrap();
    assert_eq!(sim.live_allocations(), none);
    // A capture invalidated with a body open: the body and the capture are discarded.
    sim.begin_capture(s, CaptureMode::Relaxed).unwrap();
    let h = sim.cond_handle(s).unwrap();
    let body = sim.cond_add(s, h, CondKind::While, 1).unwrap()[0];
    sim.capture_into(side, body, CaptureMode::Relaxed).unwrap();
    sim.cond_handle(side).unwrap();
    assert!(sim.ctx_synchronize().is_err());
    assert_eq!(sim.end_into(side), Err(DriverCode::STREAM_CAPTURE_INVALIDATED));
    assert_eq!(sim.end_capture(s), Err(DriverCode::STREAM_CAPTURE_INVALIDATED));
    assert_eq!(sim.live_allocations(), none);
    // A capture ended while its node's body is still recorded: the body has nowhere to
    // go, and its cells go with it; the graph's go with the graph.
    sim.begin_capture(s, CaptureMode::Relaxed).unwrap();
    let h = sim.cond_handle(s).unwrap();
    let body = sim.cond_add(s, h, CondKind::If, 1).unwrap()[0];
    sim.capture_into(side, body, CaptureMode::Relaxed).unwrap();
    sim.cond_handle(side).unwrap();
    let g = sim.end_capture(s).unwrap();
    assert_eq!(sim.end_into(side), Err(ILLEGAL_STATE));
    assert_eq!(sim.live_allocations(), none + 1);
    sim.graph_destroy(g).unwrap();
    assert_eq!(sim.live_allocations(), none);
}
