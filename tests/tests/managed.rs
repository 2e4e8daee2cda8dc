//! Managed memory (issue #6, part 5): preferred location on the GPU, accessed by the CPU,
//! prefetched on a stream; host access through an idle stream; usable inside a graph.

use capture_core::{Context, Error, LaunchConfig};
use capture_tests::{on_both, Fixture};

/// Smaller under Miri (issue #13, item 9), which interprets every element.
const N: usize = if cfg!(miri) { 256 } else { 1 << 14 };

on_both!(managed_buffer_round_trip_and_replay, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let m = f.stream.alloc_managed::<f32>(N).unwrap();
    assert!(f.stream.read_managed(&m).unwrap().iter().all(|v| *v == 0.0));
    let data: Vec<f32> = (0..N).map(|i| i as f32).collect();
    f.stream.write_managed(&m, &data).unwrap();
    f.stream.prefetch_to_device(&m).unwrap();
    let cfg = LaunchConfig::for_num_elems(N as u32);
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, cfg, (&*m, N as u32)).unwrap();
    let (graph, report) = g.finish().unwrap();
    assert_eq!(report.allocation_count(), 0);
    for _ in 0..3 {
        graph.launch(&mut f.stream).unwrap();
    }
    f.stream.prefetch_to_host(&m).unwrap();
    let got = f.stream.read_managed(&m).unwrap();
    assert_eq!(got[0], 3.0);
    assert_eq!(got[N - 1], (N - 1) as f32 + 3.0);
    let e = f.stream.write_managed(&m, &[1.0; 3]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }));
});
