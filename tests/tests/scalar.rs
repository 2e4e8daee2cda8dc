//! `DeviceScalar<T>` (issue #6, part 3): one graph replayed with a changing position.

use capture_core::{Context, DeviceScalar, LaunchConfig};
use capture_tests::{on_both, Fixture};

/// Smaller under Miri (issue #13, item 9), which interprets every element.
const N: usize = if cfg!(miri) { 256 } else { 4096 };

on_both!(decode_loop_replays_one_graph_with_a_changing_position, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let pos = DeviceScalar::new(&mut f.stream, 0u32).unwrap();
    let cfg = LaunchConfig::for_num_elems(N as u32);
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.add_ptr, cfg, (&x, &pos, N as u32)).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.allocation_count(), 0);
    let mut expect = 0.0f32;
    // Set and replay back to back without host synchronization in between: each set is
    // ordered after the previous replay on the stream.
    for step in 1..=100u32 {
        pos.set(&mut f.stream, step).unwrap();
        graph.launch(&mut f.stream).unwrap();
        expect += step as f32;
    }
    let got = f.stream.download(&x).unwrap();
    assert_eq!(got[0], expect);
    assert_eq!(got[N - 1], expect);
    assert_eq!(pos.get(&mut f.stream).unwrap(), 100);
});
