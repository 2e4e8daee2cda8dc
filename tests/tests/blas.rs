//! cuBLAS with a workspace set before capture (issue #6, part 2): a GEMM captured into a
//! graph allocates nothing, and replays with fresh inputs give the right product, checked
//! against a host computation.

use capture_core::{Blas, Context, Error, Transpose};
use capture_tests::{on_both, Fixture};

/// Column-major reference: C = A(m x k) * B(k x n).
fn host_gemm(a: &[f32], b: &[f32], m: usize, n: usize, k: usize) -> Vec<f32> {
    let mut c = vec![0.0f32; m * n];
    for j in 0..n {
        for i in 0..m {
            c[i + j * m] = (0..k).map(|p| a[i + p * m] * b[p + j * k]).sum();
        }
    }
    c
}

on_both!(captured_gemm_allocates_nothing_and_replays_fresh_inputs, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    // Smaller under Miri (issue #13, item 9), which interprets every byte of the workspace.
    let (m, n, k) = if cfg!(miri) { (16, 12, 8) } else { (64, 48, 32) };
    let workspace = if cfg!(miri) { 1 << 12 } else { Blas::DEFAULT_WORKSPACE };
    let blas = match Blas::new(&mut f.stream, workspace) {
        Ok(b) => b,
        Err(e) => panic!("cuBLAS unavailable: {e}"),
    };
    let ha = f.stream.alloc_pinned::<f32>(m * k).unwrap();
    let hb = f.stream.alloc_pinned::<f32>(k * n).unwrap();
    let a = f.stream.alloc_zeros::<f32>(m * k).unwrap();
    let b = f.stream.alloc_zeros::<f32>(k * n).unwrap();
    let c = f.stream.alloc_zeros::<f32>(m * n).unwrap();
    let hc = f.stream.alloc_pinned::<f32>(m * n).unwrap();
    let start = capture_tests::mem_in_use(&f.ctx);
    let mut baseline = 0;
    // Round 0 warms up: CUDA loads the GEMM kernel's code on first use, and the context's
    // first graph creates driver state that stays. Round 1 is measured against it.
    for round in 0..2 {
        if round == 1 {
            baseline = capture_tests::mem_in_use(&f.ctx);
            eprintln!(
                "one-time growth from the first GEMM and the first graph: {} bytes",
                baseline as i64 - start as i64
            );
        }
        let mut g = f.stream.capture().unwrap();
        g.upload_async(&a, &ha).unwrap();
        g.upload_async(&b, &hb).unwrap();
        blas.sgemm(g.stream(), Transpose::No, Transpose::No, (m, n, k), 1.0, (&a, m), (&b, k), 0.0, (&c, m)).unwrap();
        g.download_async(&hc, &c).unwrap();
        let (graph, report) = g.finish().unwrap();
        assert_eq!(report.allocation_count(), 0);
        assert_eq!(report.nodes.mem_alloc, 0, "{report}");
        assert!(report.nodes.kernels >= 1, "{report}");
        for fresh in 0..3 {
            // Small integers keep the f32 sums exact on both devices.
            let va: Vec<f32> = (0..m * k).map(|i| ((i * 7 + fresh) % 5) as f32 - 2.0).collect();
            let vb: Vec<f32> = (0..k * n).map(|i| ((i * 3 + 2 * fresh) % 7) as f32 - 3.0).collect();
            ha.write(&va).unwrap();
            hb.write(&vb).unwrap();
            graph.launch(&mut f.stream).unwrap();
            f.stream.synchronize().unwrap();
            assert_eq!(hc.read(), host_gemm(&va, &vb, m, n, k), "round {round}, inputs {fresh}");
        }
        drop(graph);
    }
    // Capturing, instantiating, replaying and dropping the GEMM graph left memory in use
    // exactly where it was.
    assert_eq!(capture_tests::mem_in_use(&f.ctx), baseline, "the captured GEMM changed device memory in use");
});

on_both!(gemm_shapes_are_checked_against_the_buffers, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let blas = Blas::new(&mut f.stream, if cfg!(miri) { 1 << 12 } else { 1 << 20 }).unwrap();
    let a = f.stream.alloc_zeros::<f32>(16).unwrap();
    let c = f.stream.alloc_zeros::<f32>(16).unwrap();
    let e = blas
        .sgemm(&mut f.stream, Transpose::No, Transpose::No, (8, 8, 8), 1.0, (&a, 8), (&a, 8), 0.0, (&c, 8))
        .unwrap_err();
    assert!(matches!(e, Error::InvalidGemm { .. }), "{e}");
    assert!(e.to_string().contains("needs 64 elements"), "{e}");
    let e = blas
        .sgemm(&mut f.stream, Transpose::No, Transpose::No, (4, 4, 4), 1.0, (&a, 2), (&a, 4), 0.0, (&c, 4))
        .unwrap_err();
    assert!(e.to_string().contains("leading dimension"), "{e}");
    blas.sgemm(&mut f.stream, Transpose::Yes, Transpose::No, (4, 4, 4), 1.0, (&a, 4), (&a, 4), 0.0, (&c, 4)).unwrap();
});
