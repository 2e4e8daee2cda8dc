//! The capture diff (issue #25): a step captured twice with different host inputs, the two
//! graphs compared node by node, and the operation that baked a host value named. Planted
//! cases: a value passed by value, a pointer offset computed on the host, uploads served
//! once (from a host buffer picked per call, from pageable memory, on another stream), a
//! step whose shape depends on a host value; and a clean step that reports nothing.

use std::cell::Cell;

use capture_core::diff::{Cause, Target, What};
use capture_core::{
    CaptureMode, CaptureOptions, Context, DeviceBuffer, DeviceScalar, Error, Kernel, KernelParam, LaunchConfig, Result,
    Stream,
};
use capture_tests::{on_both, Fixture};

const N: usize = 256;
const CFG_N: u32 = N as u32;

fn cfg() -> LaunchConfig {
    LaunchConfig::for_num_elems(CFG_N)
}

/// This file's name, as call sites give it.
fn here(op: &Option<capture_core::OpSite>) -> bool {
    op.as_ref().is_some_and(|o| o.site.file.ends_with("diff.rs"))
}

/// `y = x + *pos` with a graph temporary on the way: the position read from device memory.
fn clean_step<'a>(
    s: &mut Stream<capture_core::Capturing<'a>>,
    f: &'a Fixture,
    fill: &'a Kernel,
    x: &'a DeviceBuffer<f32>,
    y: &'a DeviceBuffer<f32>,
    pos: &'a DeviceScalar<u32>,
) -> Result<()> {
    let t = s.alloc_async::<f32>(N)?;
    s.launch(fill, cfg(), (&t, 1.0f32, CFG_N))?;
    s.launch(&f.add, cfg(), (x, &t, y, CFG_N))?;
    s.launch(&f.add_ptr, cfg(), (y, pos, CFG_N))?;
    s.free_async(t)
}

fn fill_kernel(f: &Fixture) -> Kernel {
    f.module.kernel("fill_f32").unwrap()
}

// A clean step — positions read from device memory, graph temporaries — reports nothing,
// although its graph memory has other addresses in the two graphs.
on_both!(a_clean_step_reports_nothing, |ctx: Context| {
    let f = Fixture::new(ctx).unwrap();
    let fill = fill_kernel(&f);
    let mut s = f.ctx.new_stream().unwrap();
    let x = s.alloc_zeros::<f32>(N).unwrap();
    let y = s.alloc_zeros::<f32>(N).unwrap();
    let pos = DeviceScalar::new(&mut s, 3u32).unwrap();
    let f = &f;
    let diff =
        s.capture_diff(CaptureOptions::new(), |g| clean_step(g, f, &fill, &x, &y, &pos), |s| pos.set(s, 7)).unwrap();
    assert!(diff.is_clean(), "{diff}");
    assert_eq!(diff.nodes, (5, 5), "{diff}");
    assert!(diff.to_string().contains("no differences"), "{diff}");
});

// A position passed by value: the kernel parameter is named, with its type and both values.
on_both!(a_value_passed_by_value_is_named, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let fill = fill_kernel(&f);
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let pos = Cell::new(3u32);
    let diff = f
        .stream
        .capture_diff(
            CaptureOptions::new(),
            |g| {
                g.launch(&fill, cfg(), (&x, pos.get() as f32, CFG_N))?;
                g.launch(&f.add, cfg(), (&x, &x, &y, CFG_N))
            },
            |_| {
                pos.set(7);
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(diff.differences.len(), 1, "{diff}");
    let d = &diff.differences[0];
    assert_eq!(d.node.index, 0);
    assert_eq!(d.what, What::Param { index: 1, ty: "f32".into() });
    assert_eq!((d.first.as_str(), d.second.as_str()), ("3", "7"));
    assert_eq!(d.cause, Cause::HostValue);
    assert!(d.node.kind.contains("fill_f32"), "{diff}");
    assert_eq!(d.node.op.as_ref().map(|o| o.op), Some("Stream::launch"));
    assert!(here(&d.node.op), "{diff}");
    let text = diff.to_string();
    assert!(text.contains("parameter 1, a f32: 3 vs 7") && text.contains("DeviceScalar"), "{text}");
});

// A pointer offset computed on the host: named by the allocation and both offsets.
on_both!(a_pointer_offset_is_named, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let cache = f.stream.alloc_zeros::<f32>(4 * N).unwrap();
    let pos = Cell::new(3usize);
    let diff = f
        .stream
        .capture_diff(
            CaptureOptions::new(),
            |g| {
                let row = KernelParam::device_ptr_at(&cache, pos.get() * 16)?;
                g.launch(&f.incr, cfg(), (row, CFG_N))
            },
            |_| {
                pos.set(7);
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(diff.differences.len(), 1, "{diff}");
    let d = &diff.differences[0];
    assert_eq!(d.cause, Cause::PointerOffset, "{diff}");
    assert!(matches!(d.what, What::Param { index: 0, .. }), "{diff}");
    assert!(d.first.starts_with("offset 48 in device allocation"), "{diff}");
    assert!(d.second.starts_with("offset 112 in device allocation"), "{diff}");
    assert!(here(&d.node.op), "{diff}");
    // An offset past the end is a typed error, not a wild pointer.
    let e = KernelParam::device_ptr_at(&cache, 4 * N * 4).unwrap_err();
    assert!(matches!(e, Error::OffsetOutOfBounds { offset: 4096, bytes: 4096, .. }), "{e}");
});

// An upload served from a host buffer picked per call: the copy's source is named.
on_both!(an_upload_from_a_host_buffer_picked_per_call_is_named, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let small = f.stream.alloc_zeros::<u32>(1).unwrap();
    let staging = [f.stream.alloc_pinned::<u32>(1).unwrap(), f.stream.alloc_pinned::<u32>(1).unwrap()];
    let run = Cell::new(0usize);
    let diff = f
        .stream
        .capture_diff(
            CaptureOptions::new(),
            |g| {
                g.upload_async(&small, &staging[run.get()])?;
                g.launch(&f.add_ptr, cfg(), (&y, &small, CFG_N))
            },
            |_| {
                run.set(1);
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(diff.differences.len(), 1, "{diff}");
    let d = &diff.differences[0];
    assert_eq!((d.what.clone(), d.cause), (What::CopySource, Cause::HostUpload), "{diff}");
    assert!(d.first.contains("pinned host allocation") && d.first != d.second, "{diff}");
    assert_eq!(d.node.op.as_ref().map(|o| o.op), Some("Stream::upload_async"));
});

// A synchronous upload on another stream while capturing runs once and is in neither
// graph: the diff names it from the captures' reports.
on_both!(an_upload_run_eagerly_during_the_capture_is_named, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let mut other = ctx.new_stream().unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let small = f.stream.alloc_zeros::<u32>(1).unwrap();
    let pos = Cell::new(3u32);
    let diff = f
        .stream
        .capture_diff(
            CaptureOptions::new().mode(CaptureMode::Relaxed),
            |g| {
                other.upload(&small, &[pos.get()])?;
                g.launch(&f.add_ptr, cfg(), (&y, &small, CFG_N))
            },
            |_| {
                pos.set(7);
                Ok(())
            },
        )
        .unwrap();
    assert!(diff.differences.is_empty(), "{diff}");
    assert!(!diff.is_clean());
    let runs: Vec<u8> = diff.ran_eagerly.iter().map(|r| r.0).collect();
    assert_eq!(runs, vec![1, 2], "{diff}");
    assert_eq!(diff.ran_eagerly[0].1.op, "Stream::upload");
    assert!(diff.to_string().contains("ran eagerly"), "{diff}");
});

// A step whose shape depends on a host value: launch geometry, then an extra node.
on_both!(a_shape_that_depends_on_a_host_value_is_named, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let len = Cell::new(64u32);
    let diff = f
        .stream
        .capture_diff(
            CaptureOptions::new(),
            |g| {
                let n = len.get();
                g.launch(&f.incr, LaunchConfig::for_num_elems(n), (&x, n))?;
                if n > 100 {
                    g.launch(&f.incr, cfg(), (&x, CFG_N))?;
                }
                Ok(())
            },
            |_| {
                len.set(200);
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(diff.nodes, (1, 2), "{diff}");
    let causes: Vec<Cause> = diff.differences.iter().map(|d| d.cause).collect();
    assert!(causes.contains(&Cause::HostShape) || causes.contains(&Cause::HostValue), "{diff}");
    let last = diff.differences.last().unwrap();
    assert_eq!((last.what.clone(), last.cause, last.node.index), (What::Topology, Cause::Topology, 1), "{diff}");
    assert!(last.first.contains("end of the graph") && last.second.contains("kernel `incr_f32`"), "{diff}");
    // The length parameter by value, too.
    assert!(diff.differences.iter().any(|d| d.what == What::Param { index: 1, ty: "u32".into() }), "{diff}");
});

// Graphs that part in the middle (a kernel in place of another): reported, nothing paired
// past it, no panic on the different node counts.
on_both!(graphs_that_part_are_reported_not_paired, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let fill = fill_kernel(&f);
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let branch = Cell::new(false);
    let diff = f
        .stream
        .capture_diff(
            CaptureOptions::new(),
            |g| {
                g.launch(&f.incr, cfg(), (&x, CFG_N))?;
                if branch.get() {
                    g.launch(&fill, cfg(), (&y, 2.0f32, CFG_N))?;
                } else {
                    g.launch(&f.add, cfg(), (&x, &x, &y, CFG_N))?;
                    g.launch(&f.incr, cfg(), (&y, CFG_N))?;
                }
                g.launch(&f.incr, cfg(), (&y, CFG_N))
            },
            |_| {
                branch.set(true);
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(diff.nodes, (4, 3));
    assert_eq!(diff.differences.len(), 1, "{diff}");
    let d = &diff.differences[0];
    assert_eq!((d.cause, d.node.index), (Cause::Topology, 1), "{diff}");
    assert!(d.first.contains("add_f32") && d.second.contains("fill_f32"), "{diff}");
    assert!(d.to_string().contains("GraphFamily"), "{d}");
});

// A step that fails in one of the two captures: a typed error naming which capture; the
// stream is idle and usable afterwards.
on_both!(a_step_that_fails_names_its_capture, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let run = Cell::new(1u8);
    let e = f
        .stream
        .capture_diff(
            CaptureOptions::new(),
            |g| {
                if run.get() == 2 {
                    return Err(Error::EmptyBatch);
                }
                g.launch(&f.incr, cfg(), (&x, CFG_N))
            },
            |_| {
                run.set(2);
                Ok(())
            },
        )
        .unwrap_err();
    match &e {
        Error::DiffCaptureFailed { run: 2, source } => assert!(matches!(**source, Error::EmptyBatch), "{e}"),
        other => panic!("expected DiffCaptureFailed for capture 2, got {other}"),
    }
    assert!(e.to_string().starts_with("capture 2 of the two"), "{e}");
    // A step that records nothing fails the first capture.
    let e = f.stream.capture_diff(CaptureOptions::new(), |_| Ok(()), |_| Ok(())).unwrap_err();
    assert!(
        matches!(&e, Error::DiffCaptureFailed { run: 1, source } if matches!(**source, Error::EmptyCapture)),
        "{e}"
    );
    // `between`'s own error comes back as it was.
    let e = f
        .stream
        .capture_diff(CaptureOptions::new(), |g| g.launch(&f.incr, cfg(), (&x, CFG_N)), |_| Err(Error::EmptyBatch))
        .unwrap_err();
    assert!(matches!(e, Error::EmptyBatch), "{e}");
    // The stream is idle and usable.
    f.stream.launch(&f.incr, cfg(), (&x, CFG_N)).unwrap();
    assert_eq!(f.stream.download(&x).unwrap()[0], 1.0);
});

// A step whose capture is invalidated (a synchronize issued behind the library's back, the
// way a cudarc call would): a typed error naming capture 1 and the invalidation.
#[test]
fn a_capture_that_is_invalidated_names_its_capture() {
    let ctx = capture_tests::sim();
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let sim = ctx.sim().unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let e = f
        .stream
        .capture_diff(
            CaptureOptions::new(),
            |g| {
                g.launch(&f.incr, cfg(), (&x, CFG_N))?;
                let _ = sim.foreign_synchronize(g);
                Ok(())
            },
            |_| Ok(()),
        )
        .unwrap_err();
    assert!(
        matches!(&e, Error::DiffCaptureFailed { run: 1, source } if matches!(**source, Error::CaptureInvalidated { .. })),
        "{e}"
    );
    // The stream is idle and usable.
    f.stream.launch(&f.incr, cfg(), (&x, CFG_N)).unwrap();
}

// Conditional nodes are listed as not compared, never skipped in silence.
on_both!(conditional_nodes_are_reported_as_not_compared, |ctx: Context| {
    use capture_core::control::Branch;
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let branch = Branch::new(&ctx).unwrap();
    let flag = f.stream.alloc_zeros::<u32>(1).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let diff = f
        .stream
        .capture_diff(
            CaptureOptions::new(),
            |g| g.if_else(&branch, &flag, |t| t.launch(&f.incr, cfg(), (&x, CFG_N)), |_| Ok(())),
            |_| Ok(()),
        )
        .unwrap();
    assert!(diff.differences.is_empty(), "{diff}");
    assert!(!diff.not_compared.is_empty() && !diff.is_clean(), "{diff}");
    assert!(diff.not_compared.iter().any(|n| n.node.kind == "conditional node"), "{diff}");
    assert!(diff.to_string().contains("not compared"), "{diff}");
});

// The simulated device keeps the bytes a copy from pageable host memory took (a cudarc
// `memcpy_htod` from a `Vec` issued behind the library's back): the diff compares them.
#[test]
fn an_upload_from_pageable_memory_is_named_by_its_bytes() {
    let ctx = capture_tests::sim();
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let sim = ctx.sim().unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let small = f.stream.alloc_zeros::<u32>(1).unwrap();
    let pos = Cell::new(3u32);
    let diff = f
        .stream
        .capture_diff(
            CaptureOptions::new(),
            |g| {
                sim.foreign_memcpy_htod(g, &small, &[pos.get()])
                    .map_err(|code| Error::Driver { op: "memcpy", code })?;
                g.launch(&f.add_ptr, cfg(), (&y, &small, CFG_N))
            },
            |_| {
                pos.set(7);
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(diff.differences.len(), 1, "{diff}");
    let d = &diff.differences[0];
    assert_eq!((d.what.clone(), d.cause), (What::CopyHostData, Cause::HostUpload), "{diff}");
    assert_eq!((d.first.as_str(), d.second.as_str()), ("03000000", "07000000"));
    // Work issued behind the library's back is named by its node, not by an operation.
    assert!(d.node.op.is_none(), "{diff}");
    assert!(d.to_string().contains("not issued through capture-core"), "{d}");
}

// Two snapshots compared directly: graph memory is compared by allocation node and offset.
#[test]
fn graph_memory_is_compared_by_allocation_and_offset() {
    let ctx = capture_tests::sim();
    let f = Fixture::new(ctx).unwrap();
    let mut s = f.ctx.new_stream().unwrap();
    let off = Cell::new(0usize);
    let snap = |s: &mut Stream| {
        let mut g = s.capture().unwrap();
        let t = g.alloc_async::<f32>(N).unwrap();
        g.launch(&f.incr, cfg(), (&t, CFG_N - off.get() as u32)).unwrap();
        g.free_async(t).unwrap();
        g.finish_snapshot().unwrap().0
    };
    let a = snap(&mut s);
    off.set(1);
    let b = snap(&mut s);
    let ta = match &a.nodes[1].kind {
        capture_core::diff::NodeKind::Kernel(k) => k.params.as_ref().unwrap()[0].target,
        other => panic!("{other:?}"),
    };
    assert_eq!(ta, Some(Target::Graph { alloc_node: 0, offset: 0 }));
    let d = capture_core::diff::diff(&a, &b);
    assert_eq!(d.differences.len(), 1, "{d}");
    assert_eq!(d.differences[0].what, What::Param { index: 1, ty: "u32".into() });
    assert_eq!(d.ran_eagerly, vec![]);
}
