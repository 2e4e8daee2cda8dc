//! Replays see fresh inputs (issue #2, parts 5 and 8): inputs written between replays reach
//! the graph, through a captured pinned upload and through a device scalar read by address.

use capture_core::{Context, LaunchConfig};
use capture_tests::{on_both, Fixture};

/// Smaller under Miri (issue #13, item 9), which interprets every element.
const N: usize = if cfg!(miri) { 256 } else { 1 << 16 };

on_both!(fresh_pinned_input_each_replay, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let host_in = f.stream.alloc_pinned::<f32>(N).unwrap();
    let host_out = f.stream.alloc_pinned::<f32>(N).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let cfg = LaunchConfig::for_num_elems(N as u32);
    let mut g = f.stream.capture().unwrap();
    g.upload_async(&x, &host_in).unwrap();
    g.launch(&f.scale, cfg, (&x, &y, 3.0f32, N as u32)).unwrap();
    g.launch(&f.add, cfg, (&y, &x, &y, N as u32)).unwrap(); // y = 4x
    g.download_async(&host_out, &y).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.nodes.memcpy, 2);
    assert_eq!(report.nodes.kernels, 2);
    for round in 0..5 {
        let input: Vec<f32> = (0..N).map(|i| (i + round * 7) as f32).collect();
        host_in.write(&input).unwrap();
        graph.launch(&mut f.stream).unwrap();
        f.stream.synchronize().unwrap();
        let out = host_out.read();
        for i in [0, 1, N / 2, N - 1] {
            assert_eq!(out[i], 4.0 * input[i], "round {round}, element {i}: replay used stale data");
        }
    }
});

on_both!(device_scalar_read_by_address, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let pos = f.stream.alloc_zeros::<u32>(1).unwrap();
    let cfg = LaunchConfig::for_num_elems(N as u32);
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.add_ptr, cfg, (&x, &pos, N as u32)).unwrap();
    let (graph, _) = g.finish().unwrap();
    let mut expect = 0.0;
    for p in 1..=20u32 {
        f.stream.upload(&pos, &[p]).unwrap();
        graph.launch(&mut f.stream).unwrap();
        expect += p as f32;
    }
    let got = f.stream.download(&x).unwrap();
    assert_eq!(got[0], expect);
    assert_eq!(got[N - 1], expect);
});

on_both!(long_chain_replays_many_times, |ctx: Context| {
    // Smaller under Miri (issue #13, item 9), which interprets every element.
    let (len, nodes, replays) = if cfg!(miri) { (64, 20, 5) } else { (1024, 200, 50) };
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(len).unwrap();
    let cfg = LaunchConfig::for_num_elems(len as u32);
    let mut g = f.stream.capture().unwrap();
    for _ in 0..nodes {
        g.launch(&f.incr, cfg, (&x, len as u32)).unwrap();
    }
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.nodes.kernels, nodes);
    graph.upload(&mut f.stream).unwrap();
    for _ in 0..replays {
        graph.launch(&mut f.stream).unwrap();
    }
    assert_eq!(f.stream.download(&x).unwrap()[len - 1], (nodes * replays) as f32);
});

on_both!(update_in_place_when_only_a_parameter_changes, |ctx: Context| {
    use capture_core::GraphUpdate;
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.upload_new(&vec![1.0f32; 256]).unwrap();
    let y = f.stream.alloc_zeros::<f32>(256).unwrap();
    let cfg = LaunchConfig::for_num_elems(256);
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.scale, cfg, (&x, &y, 2.0f32, 256u32)).unwrap();
    let (mut graph, _) = g.finish().unwrap();
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&y).unwrap()[0], 2.0);
    // Same topology, new alpha: updated in place.
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.scale, cfg, (&x, &y, 5.0f32, 256u32)).unwrap();
    let (how, _) = g.finish_update(&mut graph).unwrap();
    assert_eq!(how, GraphUpdate::InPlace);
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&y).unwrap()[0], 5.0);
    // New topology: instantiated anew.
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.scale, cfg, (&x, &y, 3.0f32, 256u32)).unwrap();
    g.launch(&f.incr, cfg, (&y, 256u32)).unwrap();
    let (how, report) = g.finish_update(&mut graph).unwrap();
    assert_eq!(how, GraphUpdate::Reinstantiated);
    assert_eq!(report.nodes.kernels, 2);
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&y).unwrap()[0], 4.0);
});
