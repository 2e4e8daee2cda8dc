//! One rank per process (issue #10, parts 1 and "bad input"): `CommId` and `Comm::init_rank`,
//! a step captured and replayed with fresh inputs by each process alone, and a peer that
//! never takes part — a typed timeout, never a hang, with the stream usable afterwards.
//!
//! On the simulated device the "processes" are threads (each with its own simulated
//! device, `Context::simulated()`); on GPUs they are real processes: the test runs this binary again once per
//! rank (`CAPTURE_RANK_OF` set), each driving one GPU.

use std::time::Duration;

use capture_core::collective::{Comm, CommId, Group, MultiCapture, ReduceOp};
use capture_core::{kernels, CaptureOptions, Context, Error, LaunchConfig, Stream};
use capture_tests::on_both;

const N: usize = if cfg!(miri) { 64 } else { 4096 };

/// What each rank does.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Scenario {
    /// Every rank: eager all-reduce, then a captured step replayed with fresh inputs.
    Step,
    /// Rank 0 goes on alone after the warm-up; the others stop taking part.
    AbsentPeer,
}

fn new_stream(ctx: &Context) -> Stream {
    if let Some(sim) = ctx.sim() {
        kernels::register_chain_kernels(sim);
    }
    ctx.new_stream().unwrap()
}

/// The step: eager all-reduce, then upload + scale + all-reduce captured and replayed five
/// times with fresh inputs; the replays' results are checked on every rank.
fn step(ctx: Context, id: CommId, rank: usize, n: usize) {
    let mut stream = new_stream(&ctx);
    let comm = Comm::init_rank(&mut stream, &id, rank, n, Duration::from_secs(60)).unwrap();
    assert_eq!((comm.rank(), comm.world_size()), (rank, n));
    let scale = ctx.load_module(kernels::CHAIN_PTX).unwrap().kernel("scale_f32").unwrap();
    let x = stream.upload_new(&vec![(rank + 1) as f32; N]).unwrap();
    let h = stream.alloc_zeros::<f32>(N).unwrap();
    let y = stream.alloc_zeros::<f32>(N).unwrap();
    let mut g = Group::new();
    g.all_reduce(&mut stream, &comm, &x, &y, ReduceOp::Sum).unwrap();
    g.launch().unwrap();
    comm.wait(&mut stream).unwrap();
    let want: f32 = (1..=n).map(|r| r as f32).sum();
    assert!(stream.download(&y).unwrap().iter().all(|&v| v == want), "eager, rank {rank}");

    let input = stream.alloc_pinned::<f32>(N).unwrap();
    let mut streams = [stream];
    let (graphs, reports) = {
        let mut cap = MultiCapture::begin(&mut streams, CaptureOptions::new()).unwrap();
        let s = cap.stream(0).unwrap();
        s.upload_async(&x, &input).unwrap();
        s.launch(&scale, LaunchConfig::for_num_elems(N as u32), (&x, &h, 2.0f32, N as u32)).unwrap();
        let mut g = Group::new();
        g.all_reduce(cap.stream(0).unwrap(), &comm, &h, &y, ReduceOp::Sum).unwrap();
        g.launch().unwrap();
        cap.finish().unwrap()
    };
    // A collective of one rank waits for nobody: not counted (its graph may launch alone).
    assert_eq!(graphs.graphs()[0].collectives(), usize::from(n > 1), "{}", reports[0]);
    for round in 0..5 {
        input.write(&vec![(round * 10 + rank) as f32; N]).unwrap();
        graphs.launch(&mut streams).unwrap();
        comm.wait(&mut streams[0]).unwrap();
        let want: f32 = (0..n).map(|r| 2.0 * (round * 10 + r) as f32).sum();
        let got = streams[0].download(&y).unwrap();
        assert!(got.iter().all(|&v| v == want), "round {round}, rank {rank}: {} != {want}", got[0]);
    }
    drop(graphs);
    comm.destroy(&mut streams[0]).unwrap();
}

/// Rank 0: warm up with the others, then capture and replay a step they never replay: the
/// wait for them ends in a timeout (the communicator aborted), and the stream stays usable.
/// A second communicator whose peer joined but never issues a collective: the first
/// collective, captured, times out too. Other ranks: join both, warm up the first, stop.
fn absent_peer(ctx: Context, ids: [CommId; 2], rank: usize, n: usize, hold: impl FnOnce()) {
    let mut stream = new_stream(&ctx);
    let timeout = Duration::from_millis(if ctx.kind() == capture_core::DeviceKind::Simulated { 300 } else { 3000 });
    let long = Duration::from_secs(60);
    let mut comm = Comm::init_rank(&mut stream, &ids[0], rank, n, long).unwrap();
    let mut second = Comm::init_rank(&mut stream, &ids[1], rank, n, long).unwrap();
    comm.set_timeout(timeout).unwrap();
    second.set_timeout(timeout).unwrap();
    let x = stream.upload_new(&vec![1.0f32; N]).unwrap();
    let y = stream.alloc_zeros::<f32>(N).unwrap();
    let mut g = Group::new();
    g.all_reduce(&mut stream, &comm, &x, &y, ReduceOp::Sum).unwrap();
    g.launch().unwrap();
    comm.wait(&mut stream).unwrap();
    if rank != 0 {
        // Keep both communicators alive, taking no further part, until rank 0 is done.
        hold();
        drop((comm, second));
        return;
    }
    let mut streams = [stream];
    // The replay nobody joins.
    let (graphs, _) = {
        let mut cap = MultiCapture::begin(&mut streams, CaptureOptions::new()).unwrap();
        let mut g = Group::new();
        g.all_reduce(cap.stream(0).unwrap(), &comm, &x, &y, ReduceOp::Sum).unwrap();
        g.launch().unwrap();
        cap.finish().unwrap()
    };
    let err = graphs.launch(&mut streams).and_then(|()| comm.wait(&mut streams[0])).unwrap_err();
    assert!(matches!(err, Error::CollectiveTimeout { rank: 0, .. }), "{err}");
    assert!(comm.is_aborted());
    // The graph of an aborted communicator does not replay (it would compute nothing).
    let e = graphs.launch(&mut streams).unwrap_err();
    assert!(matches!(e, Error::CommAborted { rank: 0 }), "{e}");
    drop(graphs);
    let e = Group::new().all_reduce(&mut streams[0], &comm, &x, &y, ReduceOp::Sum).unwrap_err();
    assert!(matches!(e, Error::CommAborted { rank: 0 }), "{e}");
    // The first collective of the second communicator, captured, with its peer absent.
    let err = (|| -> capture_core::Result<()> {
        let (graphs, _) = {
            let mut cap = MultiCapture::begin(&mut streams, CaptureOptions::new())?;
            let mut g = Group::new();
            g.all_reduce(cap.stream(0).unwrap(), &second, &x, &y, ReduceOp::Sum)?;
            g.launch()?;
            cap.finish()?
        };
        graphs.launch(&mut streams)?;
        second.wait(&mut streams[0])
    })()
    .unwrap_err();
    assert!(matches!(err, Error::CollectiveTimeout { rank: 0, .. }), "{err}");
    // Nothing is left capturing or waiting: eager work on the stream runs.
    streams[0].memset_async(&y, 0).unwrap();
    streams[0].upload(&y, &vec![7.0f32; N]).unwrap();
    streams[0].synchronize().unwrap();
    assert_eq!(streams[0].download(&y).unwrap()[N - 1], 7.0);
    // A communicator nobody else joins: a timeout at `init_rank`.
    let lonely = CommId::new(&ctx).unwrap();
    let e = Comm::init_rank(&mut streams[0], &lonely, 0, 2, timeout).unwrap_err();
    assert!(matches!(e, Error::CollectiveTimeout { rank: 0, .. }), "{e}");
    // Every abort has returned once its communicator is dropped (or its set-up failed):
    // none still runs inside NCCL when the process exits (on two H200s, a process that
    // exited with one still running crashed, SIGSEGV, in one run of four).
    drop((comm, second));
    if ctx.kind() != capture_core::DeviceKind::Simulated {
        let running = abort_threads();
        assert_eq!(running, 0, "{running} ncclCommAbort threads still running");
    }
}

/// Threads of this process named as the library's abort threads (Linux; 0 elsewhere, and
/// under Miri, which cannot read `/proc`). Only NCCL's communicators abort on a thread.
fn abort_threads() -> usize {
    if cfg!(miri) {
        return 0;
    }
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return 0 };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|name| name.trim() == "nccl-abort")
        .count()
}

/// Threads as processes: each rank on a simulated device of its own (as separate processes,
/// a capture on one does not restrict the others, which devices of one world would: the
/// driver's Global capture mode is per process).
fn on_threads(n: usize, scenario: Scenario) {
    let ctxs: Vec<Context> = (0..n).map(|_| Context::simulated()).collect();
    let ids = [CommId::new(&ctxs[0]).unwrap(), CommId::new(&ctxs[0]).unwrap()];
    // Handed over as text, as to another process.
    let text: Vec<String> = ids.iter().map(ToString::to_string).collect();
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let done_rx = std::sync::Arc::new(std::sync::Mutex::new(done_rx));
    let threads: Vec<_> = ctxs
        .into_iter()
        .enumerate()
        .map(|(rank, ctx)| {
            let ids: [CommId; 2] = [text[0].parse().unwrap(), text[1].parse().unwrap()];
            let done_rx = done_rx.clone();
            std::thread::spawn(move || match scenario {
                Scenario::Step => step(ctx, ids[0], rank, n),
                Scenario::AbsentPeer => absent_peer(ctx, ids, rank, n, move || {
                    let _ = done_rx.lock().unwrap().recv_timeout(Duration::from_secs(30));
                }),
            })
        })
        .collect();
    let mut threads = threads.into_iter();
    let first = threads.next().unwrap().join();
    drop(done_tx);
    for t in threads {
        t.join().unwrap();
    }
    first.unwrap();
}

#[test]
fn a_step_captured_by_each_rank_alone_replays_with_fresh_inputs() {
    on_threads(2, Scenario::Step);
    on_threads(3, Scenario::Step);
}

#[test]
fn a_peer_that_never_takes_part_is_a_timeout_not_a_hang() {
    on_threads(2, Scenario::AbsentPeer);
}

#[test]
fn bad_input_to_init_rank_is_typed() {
    let ctxs = Context::simulated_world(2).unwrap();
    let id = CommId::new(&ctxs[0]).unwrap();
    let mut s = ctxs[0].new_stream().unwrap();
    let t = Duration::from_millis(50);
    for (rank, n, t) in [(0, 0, t), (2, 2, t), (0, 2, Duration::ZERO)] {
        let e = Comm::init_rank(&mut s, &id, rank, n, t).unwrap_err();
        assert!(matches!(e, Error::InvalidWorld { .. }), "{e}");
    }
    // Text that is not an id.
    for text in ["", "zz", &"g".repeat(256), &"0".repeat(255)] {
        assert!(matches!(text.parse::<CommId>().unwrap_err(), Error::InvalidCommId { .. }));
    }
    let back: CommId = id.to_string().parse().unwrap();
    assert_eq!(back, id);
    assert_eq!(CommId::from_bytes(*id.as_bytes()), id);
    // An id of GPUs on a simulated device.
    let gpu_like = CommId::from_bytes([2u8; 128]);
    assert!(matches!(Comm::init_rank(&mut s, &gpu_like, 0, 1, t).unwrap_err(), Error::InvalidWorld { .. }));
    // Two ranks on one device.
    let id2 = CommId::new(&ctxs[0]).unwrap();
    let mut s2 = ctxs[0].new_stream().unwrap();
    let h = std::thread::spawn(move || Comm::init_rank(&mut s2, &id2, 1, 2, Duration::from_millis(500)).map(|_| ()));
    let e0 = Comm::init_rank(&mut s, &id2, 0, 2, Duration::from_millis(500));
    let e1 = h.join().unwrap();
    assert!(e0.is_err() && e1.is_err(), "{e0:?} {e1:?}");
    // A group may not mix communicators with timeouts and without: NCCL would run the group
    // as blocking, and a wait for an absent peer would have no limit.
    let lone = Context::simulated();
    let mut a = lone.new_stream().unwrap();
    let all = Comm::init_all(&mut [&mut a]).unwrap().remove(0);
    let per = Comm::init_rank(&mut a, &CommId::new(&lone).unwrap(), 0, 1, t).unwrap();
    let x = a.upload_new(&[1.0f32; 8]).unwrap();
    let y = a.alloc_zeros::<f32>(8).unwrap();
    let z = a.alloc_zeros::<f32>(8).unwrap();
    let mut g = Group::new();
    g.all_reduce(&mut a, &all, &x, &y, ReduceOp::Sum).unwrap();
    g.all_reduce(&mut a, &per, &x, &z, ReduceOp::Sum).unwrap();
    assert!(matches!(g.launch().unwrap_err(), Error::CollectiveMismatch { .. }));
    // A world of one is a communicator of one.
    let solo = CommId::new(&ctxs[1]).unwrap();
    let mut s1 = ctxs[1].new_stream().unwrap();
    let c = Comm::init_rank(&mut s1, &solo, 0, 1, t).unwrap();
    assert_eq!(c.world_size(), 1);
}

// A world of one process — the whole path of `init_rank` (NCCL's nonblocking
// initialisation, the capture, the replay, `Comm::wait`) on one device — and a world whose
// other rank never comes: a timeout at `init_rank`, the device usable after.
on_both!(a_world_of_one_and_a_world_nobody_else_joins, |ctx: Context| {
    step(ctx.clone(), CommId::new(&ctx).unwrap(), 0, 1);
    let mut s = new_stream(&ctx);
    let lonely = CommId::new(&ctx).unwrap();
    let t = std::time::Instant::now();
    let e = Comm::init_rank(&mut s, &lonely, 0, 2, Duration::from_millis(1500)).unwrap_err();
    assert!(matches!(e, Error::CollectiveTimeout { op: "Comm::init_rank", rank: 0, .. }), "{e}");
    assert!(t.elapsed() < Duration::from_secs(30), "{:?}", t.elapsed());
    let y = s.upload_new(&[3.0f32; 16]).unwrap();
    s.synchronize().unwrap();
    assert_eq!(s.download(&y).unwrap()[15], 3.0);
});

// ---- GPUs: one process per rank ----

/// Runs this test binary once per rank, each with one GPU, and checks every one passed.
fn on_processes(n: usize, scenario: Scenario) {
    if let Ok(spec) = std::env::var("CAPTURE_RANK_OF") {
        // A child: "<rank> <scenario> <id> <id>".
        let parts: Vec<&str> = spec.split(' ').collect();
        let rank: usize = parts[0].parse().unwrap();
        let ctx = Context::open(rank).unwrap();
        let ids: [CommId; 2] = [parts[2].parse().unwrap(), parts[3].parse().unwrap()];
        match parts[1] {
            "step" => step(ctx, ids[0], rank, n),
            _ => absent_peer(ctx, ids, rank, n, || std::thread::sleep(Duration::from_secs(15))),
        }
        return;
    }
    let _serial = capture_tests::gpu_lock();
    let Some(ctxs) = capture_tests::gpu_world(n) else { return };
    let ids = [CommId::new(&ctxs[0]).unwrap(), CommId::new(&ctxs[0]).unwrap()];
    drop(ctxs);
    let name = match scenario {
        Scenario::Step => "gpu_step_one_rank_per_process",
        Scenario::AbsentPeer => "gpu_absent_peer_one_rank_per_process",
    };
    let word = if scenario == Scenario::Step { "step" } else { "absent" };
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..n)
        .map(|rank| {
            std::process::Command::new(&exe)
                .args([name, "--exact", "--include-ignored", "--nocapture", "--test-threads", "1"])
                .env("CAPTURE_RANK_OF", format!("{rank} {word} {} {}", ids[0], ids[1]))
                .spawn()
                .unwrap()
        })
        .collect();
    for (rank, mut c) in children.into_iter().enumerate() {
        let status = c.wait().unwrap();
        assert!(status.success(), "rank {rank}'s process: {status}");
    }
}

#[test]
#[ignore = "needs CUDA devices"]
fn gpu_step_one_rank_per_process() {
    on_processes(2, Scenario::Step);
}

#[test]
#[ignore = "needs CUDA devices"]
fn gpu_absent_peer_one_rank_per_process() {
    on_processes(2, Scenario::AbsentPeer);
}

/// Point-to-point needs only its two peers: a pipeline 0 → 1 → 2 where rank 2 takes no part
/// in the first transfer, and a pair exchanging while a third rank sits out.
#[test]
fn point_to_point_needs_only_its_peers() {
    for idle_third in [false, true] {
        let id = CommId::new(&Context::simulated()).unwrap().to_string();
        let ranks: Vec<_> = (0..3)
            .map(|r| {
                let id = id.clone();
                std::thread::spawn(move || -> capture_core::Result<f32> {
                    let ctx = Context::simulated();
                    let mut s = ctx.new_stream()?;
                    let comm = Comm::init_rank(&mut s, &id.parse()?, r, 3, Duration::from_secs(20))?;
                    let buf = s.upload_new(&[r as f32 + 1.0; 16])?;
                    let mut g = Group::new();
                    match (r, idle_third) {
                        (0, _) => drop(g.send(&mut s, &comm, &buf, 1)?),
                        (1, _) => drop(g.recv(&mut s, &comm, &buf, 0)?),
                        (_, true) => return Ok(s.download(&buf)?[0]),
                        (_, false) => drop(g.recv(&mut s, &comm, &buf, 1)?),
                    }
                    g.launch()?;
                    if r == 1 && !idle_third {
                        let mut g = Group::new();
                        g.send(&mut s, &comm, &buf, 2)?;
                        g.launch()?;
                    }
                    comm.wait(&mut s)?;
                    Ok(s.download(&buf)?[0])
                })
            })
            .collect();
        let got: Vec<f32> = ranks.into_iter().map(|t| t.join().unwrap().unwrap()).collect();
        let want = if idle_third { [1.0, 1.0, 3.0] } else { [1.0, 1.0, 1.0] };
        assert_eq!(got, want, "idle third rank: {idle_third}");
    }
}

// A timeout while a graph that holds the communicator's collectives is alive: NCCL's abort
// waits for every graph holding its work to be destroyed, and this thread holds one — the
// wait must still end, with a typed error. (A self send/recv is a real NCCL kernel even in
// a world of one, so one GPU shows it.) A watchdog thread fails the test if it hangs.
on_both!(a_timeout_with_a_live_graph_ends, |ctx: Context| {
    let mut s = new_stream(&ctx);
    let id = CommId::new(&ctx).unwrap();
    // NCCL's set-up takes longer than the step's timeout: made with a long one, then set.
    let mut comm = Comm::init_rank(&mut s, &id, 0, 1, Duration::from_secs(60)).unwrap();
    comm.set_timeout(Duration::from_millis(200)).unwrap();
    assert_eq!(comm.timeout(), Some(Duration::from_millis(200)));
    let x = s.upload_new(&[1.0f32; 256]).unwrap();
    let y = s.alloc_zeros::<f32>(256).unwrap();
    let big = s.alloc_zeros::<f32>(if cfg!(miri) { 1 << 10 } else { 1 << 28 }).unwrap();
    let mut streams = [s];
    let (graphs, _) = {
        let mut cap = MultiCapture::begin(&mut streams, CaptureOptions::new()).unwrap();
        let mut g = Group::new();
        g.send(cap.stream(0).unwrap(), &comm, &x, 0).unwrap();
        g.recv(cap.stream(0).unwrap(), &comm, &y, 0).unwrap();
        g.launch().unwrap();
        cap.finish().unwrap()
    };
    graphs.launch(&mut streams).unwrap();
    comm.wait(&mut streams[0]).unwrap();
    assert_eq!(streams[0].download(&y).unwrap()[7], 1.0);
    if ctx.kind() == capture_core::DeviceKind::Simulated {
        return; // the simulated device runs work at once: nothing stays queued
    }
    // Keep the stream busy past the timeout (memsets of 1 GiB: seconds of work).
    graphs.launch(&mut streams).unwrap();
    for _ in 0..6000 {
        streams[0].memset_async(&big, 0).unwrap();
    }
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = done.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(60));
        if !flag.load(std::sync::atomic::Ordering::Acquire) {
            eprintln!("Comm::wait with a live graph still blocked after 60 s");
            std::process::exit(42);
        }
    });
    let e = comm.wait(&mut streams[0]).unwrap_err();
    done.store(true, std::sync::atomic::Ordering::Release);
    assert!(matches!(e, Error::CollectiveTimeout { op: "Comm::wait", .. }), "{e}");
    assert!(matches!(graphs.launch(&mut streams).unwrap_err(), Error::CommAborted { .. }));
    drop(graphs);
    streams[0].synchronize().unwrap();
});
