//! Collectives under the type-state (issue #10, parts 1 and 3): a communicator over the
//! devices of one process, every collective eagerly and captured, a capture of every rank's
//! stream together replayed with fresh inputs, the guard's other ways out, and bad input.
//! Each scenario runs on a simulated world and, ignored, on real GPUs.

// Ranks index several parallel vectors (streams, communicators, buffers) at once.
#![allow(clippy::needless_range_loop)]

use capture_core::collective::{Comm, Group, MultiCapture, ReduceOp};
use capture_core::{kernels, CaptureOptions, Context, DeviceBuffer, Error, Event, Kernel, LaunchConfig, Stream};
use capture_tests::on_world;

const N: usize = if cfg!(miri) { 256 } else { 4096 };

struct World {
    ctxs: Vec<Context>,
    streams: Vec<Stream>,
    comms: Vec<Comm>,
    scale: Vec<Kernel>,
}

fn world(ctxs: Vec<Context>) -> World {
    let mut streams = Vec::new();
    let mut scale = Vec::new();
    for c in &ctxs {
        if let Some(sim) = c.sim() {
            kernels::register_chain_kernels(sim);
        }
        streams.push(c.new_stream().unwrap());
        scale.push(c.load_module(kernels::CHAIN_PTX).unwrap().kernel("scale_f32").unwrap());
    }
    let comms = Comm::init_all(&mut streams.iter_mut().collect::<Vec<_>>()).unwrap();
    World { ctxs, streams, comms, scale }
}

fn bufs(w: &mut World, len: usize, fill: impl Fn(usize, usize) -> f32) -> Vec<DeviceBuffer<f32>> {
    (0..w.ctxs.len())
        .map(|r| w.streams[r].upload_new(&(0..len).map(|i| fill(r, i)).collect::<Vec<_>>()).unwrap())
        .collect()
}

on_world!(every_collective_moves_the_right_data_eagerly, 2, |ctxs: Vec<Context>| {
    let mut w = world(ctxs);
    let n = w.ctxs.len();
    assert_eq!(w.comms[1].rank(), 1);
    assert_eq!(w.comms[0].world_size(), n);
    let x = bufs(&mut w, N, |r, i| (r * 10 + i % 7) as f32);
    let sum = bufs(&mut w, N, |_, _| 0.0);
    let gathered = bufs(&mut w, N * n, |_, _| 0.0);
    let scattered = bufs(&mut w, N / n, |_, _| 0.0);
    let bcast = bufs(&mut w, N, |_, _| 0.0);
    let mut g = Group::new();
    for r in 0..n {
        let s = &mut w.streams[r];
        g.all_reduce(s, &w.comms[r], &x[r], &sum[r], ReduceOp::Sum).unwrap();
        g.all_gather(s, &w.comms[r], &x[r], &gathered[r]).unwrap();
        g.reduce_scatter(s, &w.comms[r], &x[r], &scattered[r], ReduceOp::Max).unwrap();
        g.broadcast(s, &w.comms[r], &x[r], &bcast[r], 1).unwrap();
    }
    g.launch().unwrap();
    for r in 0..n {
        let s = &mut w.streams[r];
        let want_sum: Vec<f32> = (0..N).map(|i| (0..n).map(|q| (q * 10 + i % 7) as f32).sum()).collect();
        assert_eq!(s.download(&sum[r]).unwrap(), want_sum, "all_reduce on rank {r}");
        let got = s.download(&gathered[r]).unwrap();
        for q in 0..n {
            assert_eq!(got[q * N + 3], (q * 10 + 3) as f32, "all_gather block {q} on rank {r}");
        }
        let chunk = N / n;
        let sc = s.download(&scattered[r]).unwrap();
        assert_eq!(sc[5], ((n - 1) * 10 + (r * chunk + 5) % 7) as f32, "reduce_scatter on rank {r}");
        assert_eq!(s.download(&bcast[r]).unwrap()[9], (10 + 9 % 7) as f32, "broadcast from rank 1 on rank {r}");
    }
    // Point-to-point: each rank sends to the next, receives from the previous.
    let got = bufs(&mut w, N, |_, _| -1.0);
    let mut g = Group::new();
    for r in 0..n {
        let s = &mut w.streams[r];
        g.send(s, &w.comms[r], &x[r], (r + 1) % n).unwrap();
        g.recv(s, &w.comms[r], &got[r], (r + n - 1) % n).unwrap();
    }
    g.launch().unwrap();
    for r in 0..n {
        let from = (r + n - 1) % n;
        assert_eq!(w.streams[r].download(&got[r]).unwrap()[2], (from * 10 + 2) as f32);
    }
    // Reduce to rank 0 and integers.
    let xi: Vec<DeviceBuffer<i32>> =
        (0..n).map(|r| w.streams[r].upload_new(&vec![r as i32 + 1; 64]).unwrap()).collect();
    let yi: Vec<DeviceBuffer<i32>> = (0..n).map(|r| w.streams[r].alloc_zeros::<i32>(64).unwrap()).collect();
    let mut g = Group::new();
    for r in 0..n {
        g.reduce(&mut w.streams[r], &w.comms[r], &xi[r], &yi[r], ReduceOp::Prod, 0).unwrap();
    }
    g.launch().unwrap();
    let prod: i32 = (1..=n as i32).product();
    assert_eq!(w.streams[0].download(&yi[0]).unwrap()[63], prod);
});

/// A step's buffers on every rank — pinned inputs, and x, h, y of N zeros — after one
/// eager all-reduce: NCCL connects lazily, so a capture after it records only the collective
/// itself (the rule the probe measured).
type StepBufs = (Vec<capture_core::PinnedBuffer<f32>>, [Vec<DeviceBuffer<f32>>; 3]);
fn step_bufs(w: &mut World) -> StepBufs {
    let n = w.ctxs.len();
    let inputs: Vec<_> = (0..n).map(|r| w.streams[r].alloc_pinned::<f32>(N).unwrap()).collect();
    let [x, h, y] = [0; 3].map(|_| bufs(w, N, |_, _| 0.0));
    let mut warm = Group::new();
    for r in 0..n {
        warm.all_reduce(&mut w.streams[r], &w.comms[r], &x[r], &y[r], ReduceOp::Sum).unwrap();
    }
    warm.launch().unwrap();
    (inputs, [x, h, y])
}

on_world!(a_captured_step_replays_every_rank_with_fresh_inputs, 2, |ctxs: Vec<Context>| {
    let mut w = world(ctxs);
    let n = w.ctxs.len();
    let (inputs, [x, h, y]) = step_bufs(&mut w);
    let cfg = LaunchConfig::for_num_elems(N as u32);
    for s in &mut w.streams {
        s.synchronize().unwrap();
    }
    let (step, reports) = {
        let mut cap = MultiCapture::begin(&mut w.streams, CaptureOptions::new()).unwrap();
        for r in 0..n {
            let s = cap.stream(r).unwrap();
            s.upload_async(&x[r], &inputs[r]).unwrap();
            s.launch(&w.scale[r], cfg, (&x[r], &h[r], 2.0f32, N as u32)).unwrap();
            // h = 2x
        }
        let mut g = Group::new();
        for r in 0..n {
            g.all_reduce(cap.stream(r).unwrap(), &w.comms[r], &h[r], &y[r], ReduceOp::Sum).unwrap();
        }
        g.launch().unwrap();
        cap.finish().unwrap()
    };
    assert_eq!(reports.len(), n);
    assert!(reports.iter().all(|r| r.nodes.kernels >= 2), "{}", reports[0]);
    assert!(step.graphs().iter().all(|g| g.collectives() == 1));
    // A rank's graph alone would wait for its peer forever: refused.
    let e = step.graphs()[0].launch(&mut w.streams[0]).unwrap_err();
    assert!(matches!(e, Error::CollectiveGraphAlone { collectives: 1, .. }), "{e}");
    for round in 0..5 {
        for (r, p) in inputs.iter().enumerate() {
            p.write(&vec![(round * 100 + r) as f32; N]).unwrap();
        }
        step.launch(&mut w.streams).unwrap();
        let want: f32 = (0..n).map(|r| 2.0 * (round * 100 + r) as f32).sum();
        for r in 0..n {
            let got = w.streams[r].download(&y[r]).unwrap();
            assert!(got.iter().all(|&v| v == want), "round {round}, rank {r}: {} != {want}", got[0]);
        }
    }
    // Wrong number of streams, or in the wrong order.
    assert!(matches!(step.launch(&mut w.streams[..1]).unwrap_err(), Error::InvalidWorld { .. }));
    w.streams.swap(0, 1);
    assert!(matches!(step.launch(&mut w.streams).unwrap_err(), Error::ContextMismatch { .. }));
});

on_world!(every_way_out_of_a_multi_capture_leaves_every_stream_idle, 2, |ctxs: Vec<Context>| {
    let mut w = world(ctxs.clone());
    let n = w.ctxs.len();
    let x = bufs(&mut w, N, |_, _| 1.0);
    let y = bufs(&mut w, N, |_, _| 0.0);
    // An early return.
    let mut early = || -> capture_core::Result<()> {
        let mut cap = MultiCapture::begin(&mut w.streams, CaptureOptions::new())?;
        let s = cap.stream(0).expect("rank 0");
        s.memset_async(&y[0], 0)?;
        Err(Error::EmptyCapture)
    };
    assert!(early().is_err());
    // A panic.
    let streams = &mut w.streams;
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut cap = MultiCapture::begin(streams, CaptureOptions::new()).unwrap();
        cap.stream(1).unwrap().memset_async(&y[1], 0).unwrap();
        panic!("a bug in the step");
    }));
    assert!(out.is_err());
    // One rank's capture invalidated (a wait on an event recorded before the capture):
    // finish fails, and every rank's capture is ended.
    let ev = Event::new(&ctxs[1]).unwrap();
    w.streams[1].record_event(&ev).unwrap();
    w.streams[1].synchronize().unwrap();
    let err = {
        let mut cap = MultiCapture::begin(&mut w.streams, CaptureOptions::new()).unwrap();
        cap.stream(0).unwrap().memset_async(&y[0], 0).unwrap();
        let _ = cap.stream(1).unwrap().wait_event(&ev);
        cap.finish().unwrap_err()
    };
    assert!(err.is_capture_failure(), "{err}");
    for r in 0..n {
        w.streams[r].synchronize().unwrap();
        // Eager collectives still work, so no rank is left capturing.
    }
    let mut g = Group::new();
    for r in 0..n {
        g.all_reduce(&mut w.streams[r], &w.comms[r], &x[r], &y[r], ReduceOp::Sum).unwrap();
    }
    g.launch().unwrap();
    assert_eq!(w.streams[0].download(&y[0]).unwrap()[0], n as f32);
});

on_world!(bad_input_is_typed_before_nccl_is_called, 2, |ctxs: Vec<Context>| {
    let mut w = world(ctxs.clone());
    let n = w.ctxs.len();
    let x = bufs(&mut w, N, |_, _| 1.0);
    let short = bufs(&mut w, N / 2, |_, _| 1.0);
    let y = bufs(&mut w, N, |_, _| 0.0);
    // A communicator used from a stream of a device it does not cover.
    let e = Group::new().all_reduce(&mut w.streams[1], &w.comms[0], &x[0], &y[0], ReduceOp::Sum).unwrap_err();
    assert!(matches!(e, Error::CommDeviceMismatch { rank: 0, comm_device: 0, stream_device: 1, .. }), "{e}");
    // A buffer of another device.
    let e = Group::new().all_reduce(&mut w.streams[0], &w.comms[0], &x[1], &y[0], ReduceOp::Sum).unwrap_err();
    assert!(matches!(e, Error::ContextMismatch { .. }), "{e}");
    // Lengths within a rank, and across ranks.
    let e = Group::new().all_reduce(&mut w.streams[0], &w.comms[0], &x[0], &short[0], ReduceOp::Sum).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    let e = Group::new().all_gather(&mut w.streams[0], &w.comms[0], &x[0], &y[0]).unwrap_err();
    assert!(matches!(e, Error::LengthMismatch { .. }), "{e}");
    let mut g = Group::new();
    g.all_reduce(&mut w.streams[0], &w.comms[0], &x[0], &y[0], ReduceOp::Sum).unwrap();
    g.all_reduce(&mut w.streams[1], &w.comms[1], &short[1], &short[1], ReduceOp::Sum).unwrap();
    let e = g.launch().unwrap_err();
    assert!(matches!(&e, Error::CollectiveMismatch { reason } if reason.contains("rank 1")), "{e}");
    // A rank missing; a send without its receive; a root outside the world.
    let mut g = Group::new();
    g.all_reduce(&mut w.streams[0], &w.comms[0], &x[0], &y[0], ReduceOp::Sum).unwrap();
    assert!(matches!(g.launch().unwrap_err(), Error::CollectiveMismatch { .. }));
    let mut g = Group::new();
    g.send(&mut w.streams[0], &w.comms[0], &x[0], 1).unwrap();
    assert!(matches!(g.launch().unwrap_err(), Error::CollectiveMismatch { .. }));
    let e = Group::new().broadcast(&mut w.streams[0], &w.comms[0], &x[0], &y[0], n).unwrap_err();
    assert!(matches!(e, Error::InvalidWorld { .. }), "{e}");
    // Nothing of the mismatched groups ran.
    assert_eq!(w.streams[0].download(&y[0]).unwrap()[0], 0.0);
    // Communicators: no ranks, two ranks on one device.
    assert!(matches!(Comm::init_all::<capture_core::Idle>(&mut []).unwrap_err(), Error::InvalidWorld { .. }));
    let mut a = ctxs[0].new_stream().unwrap();
    let mut b = ctxs[0].new_stream().unwrap();
    assert!(matches!(Comm::init_all(&mut [&mut a, &mut b]).unwrap_err(), Error::InvalidWorld { .. }));
    // An empty group does nothing.
    Group::new().launch().unwrap();
    // Destroying a rank's communicator from a stream of another device; then from its own.
    let last = w.comms.pop().unwrap();
    let e = last.destroy(&mut w.streams[0]).unwrap_err();
    assert!(matches!(e, Error::CommDeviceMismatch { op: "Comm::destroy", .. }), "{e}");
    let mut first = w.comms.remove(0);
    // A communicator of `init_all` has no timeout to set.
    assert_eq!(first.timeout(), None);
    assert!(matches!(first.set_timeout(std::time::Duration::from_secs(1)).unwrap_err(), Error::InvalidWorld { .. }));
    first.destroy(&mut w.streams[0]).unwrap();
});

#[test]
fn simulated_worlds_are_checked() {
    assert!(matches!(Context::simulated_world(0).unwrap_err(), Error::InvalidWorld { .. }));
    assert!(matches!(Context::simulated_world(65).unwrap_err(), Error::InvalidWorld { .. }));
    let w8 = Context::simulated_world(8).unwrap();
    assert_eq!(w8.iter().map(Context::ordinal).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    // Devices of two worlds, or a lone simulated device, cannot share a communicator.
    let other = Context::simulated_world(2).unwrap();
    let mut a = w8[0].new_stream().unwrap();
    let mut b = other[1].new_stream().unwrap();
    assert!(matches!(Comm::init_all(&mut [&mut a, &mut b]).unwrap_err(), Error::InvalidWorld { .. }));
    let lone = Context::simulated();
    let mut c = lone.new_stream().unwrap();
    let mut d = w8[1].new_stream().unwrap();
    assert!(matches!(Comm::init_all(&mut [&mut c, &mut d]).unwrap_err(), Error::InvalidWorld { .. }));
}

#[test]
fn eight_simulated_devices_all_reduce() {
    let mut w = world(Context::simulated_world(8).unwrap());
    let x = bufs(&mut w, 256, |r, _| r as f32);
    let y = bufs(&mut w, 256, |_, _| 0.0);
    let mut g = Group::new();
    for r in 0..8 {
        g.all_reduce(&mut w.streams[r], &w.comms[r], &x[r], &y[r], ReduceOp::Avg).unwrap();
    }
    g.launch().unwrap();
    assert_eq!(w.streams[7].download(&y[7]).unwrap()[0], 3.5);
}

on_world!(half_precision_all_reduce_and_gather, 2, |ctxs: Vec<Context>| {
    use capture_core::collective::{Bf16, F16};
    let mut w = world(ctxs);
    let n = w.ctxs.len();
    // Small integers and halves: exact in both formats, and so are their sums.
    let vals = |r: usize| (0..256).map(|i| (i % 64) as f32 * 0.5 + r as f32).collect::<Vec<f32>>();
    let xh: Vec<DeviceBuffer<F16>> = (0..n)
        .map(|r| w.streams[r].upload_new(&vals(r).into_iter().map(F16::from_f32).collect::<Vec<_>>()).unwrap())
        .collect();
    let yh: Vec<DeviceBuffer<F16>> = (0..n).map(|r| w.streams[r].alloc_zeros::<F16>(256).unwrap()).collect();
    let xb: Vec<DeviceBuffer<Bf16>> = (0..n)
        .map(|r| w.streams[r].upload_new(&vals(r).into_iter().map(Bf16::from_f32).collect::<Vec<_>>()).unwrap())
        .collect();
    let gb: Vec<DeviceBuffer<Bf16>> = (0..n).map(|r| w.streams[r].alloc_zeros::<Bf16>(256 * n).unwrap()).collect();
    let mut g = Group::new();
    for r in 0..n {
        g.all_reduce(&mut w.streams[r], &w.comms[r], &xh[r], &yh[r], ReduceOp::Sum).unwrap();
        g.all_gather(&mut w.streams[r], &w.comms[r], &xb[r], &gb[r]).unwrap();
    }
    g.launch().unwrap();
    for r in 0..n {
        let sum: Vec<f32> = w.streams[r].download(&yh[r]).unwrap().into_iter().map(F16::to_f32).collect();
        let want: Vec<f32> = (0..256).map(|i| (0..n).map(|q| vals(q)[i]).sum()).collect();
        assert_eq!(sum, want, "f16 all_reduce on rank {r}");
        let all: Vec<f32> = w.streams[r].download(&gb[r]).unwrap().into_iter().map(Bf16::to_f32).collect();
        assert_eq!(all[256 + 3], vals(1)[3], "bf16 all_gather on rank {r}");
    }
});

on_world!(forks_and_joins_on_every_rank_of_a_step, 2, |ctxs: Vec<Context>| {
    let mut w = world(ctxs);
    let n = w.ctxs.len();
    let (inputs, [x, h, y]) = step_bufs(&mut w);
    let cfg = LaunchConfig::for_num_elems(N as u32);
    // Each rank: the upload on its main stream, then a fork runs the all-reduce of x while
    // the main stream scales x into h; the fork joins back.
    let (step, _) = {
        let mut cap = MultiCapture::begin(&mut w.streams, CaptureOptions::new()).unwrap();
        let mut sides = Vec::new();
        for r in 0..n {
            let s = cap.stream(r).unwrap();
            s.upload_async(&x[r], &inputs[r]).unwrap();
            sides.push(s.fork().unwrap());
        }
        let mut g = Group::new();
        for r in 0..n {
            g.all_reduce(&mut sides[r], &w.comms[r], &x[r], &y[r], ReduceOp::Sum).unwrap();
        }
        g.launch().unwrap();
        for (r, side) in sides.into_iter().enumerate() {
            let s = cap.stream(r).unwrap();
            s.launch(&w.scale[r], cfg, (&x[r], &h[r], 3.0f32, N as u32)).unwrap();
            s.join(side).unwrap();
        }
        cap.finish().unwrap()
    };
    for round in 0..3 {
        for (r, p) in inputs.iter().enumerate() {
            p.write(&vec![(round * 7 + r + 1) as f32; N]).unwrap();
        }
        step.launch(&mut w.streams).unwrap();
        let sum: f32 = (0..n).map(|r| (round * 7 + r + 1) as f32).sum();
        for r in 0..n {
            assert!(w.streams[r].download(&y[r]).unwrap().iter().all(|&v| v == sum), "round {round}, rank {r}");
            let own = 3.0 * (round * 7 + r + 1) as f32;
            assert!(w.streams[r].download(&h[r]).unwrap().iter().all(|&v| v == own), "round {round}, rank {r}");
        }
    }
    // A fork left unjoined on one rank fails the step's capture; every stream is idle after.
    let err = {
        let mut cap = MultiCapture::begin(&mut w.streams, CaptureOptions::new()).unwrap();
        let mut sides = Vec::new();
        for r in 0..n {
            sides.push(cap.stream(r).unwrap().fork().unwrap());
        }
        let mut g = Group::new();
        for r in 0..n {
            g.all_reduce(&mut sides[r], &w.comms[r], &x[r], &y[r], ReduceOp::Sum).unwrap();
        }
        g.launch().unwrap();
        let last = sides.pop().unwrap();
        for (r, side) in sides.into_iter().enumerate() {
            cap.stream(r).unwrap().join(side).unwrap();
        }
        let e = cap.finish().unwrap_err();
        drop(last);
        e
    };
    assert!(matches!(err, Error::UnjoinedFork { .. }), "{err}");
    let mut g = Group::new();
    for r in 0..n {
        g.all_reduce(&mut w.streams[r], &w.comms[r], &h[r], &y[r], ReduceOp::Sum).unwrap();
    }
    g.launch().unwrap();
    for s in &mut w.streams {
        s.synchronize().unwrap();
    }
});

// Destroying a communicator invalidates a Global-mode capture in the process, whichever
// device either is on (`docs/probe/nccl.md`): a communicator dropped while another device
// captures is destroyed after that capture ends, and the capture stays valid.
on_world!(a_communicator_dropped_during_a_capture_elsewhere_waits_for_it, 2, |ctxs: Vec<Context>| {
    let mut w = world(ctxs);
    let spare = Comm::init_all(&mut w.streams.iter_mut().collect::<Vec<_>>()).unwrap();
    let y = bufs(&mut w, N, |_, _| 5.0);
    let (first, rest) = w.streams.split_at_mut(1);
    let (graph, _) = {
        let mut g = first[0].capture().unwrap();
        g.stream().memset_async(&y[0], 0).unwrap();
        drop(spare); // rank 1's communicator is on the other device
        g.finish().unwrap()
    };
    graph.launch(&mut first[0]).unwrap();
    first[0].synchronize().unwrap();
    assert_eq!(first[0].download(&y[0]).unwrap()[0], 0.0);
    rest[0].synchronize().unwrap();
});
