//! What must stay outside a capture, measured (issue #10, part 2): NCCL's communicator
//! init, destroy and abort, and host-side waits on a collective, each done *during* a stream
//! capture on two GPUs, in each capture mode — straight through cudarc and libnccl, not
//! through this library (whose types refuse all of these on a capturing stream).
//!
//! Each case runs in a child process of its own, with a deadline: a case that hangs is
//! killed and recorded as a hang; one that crashes is recorded by its exit status. For each:
//! the call's result, the capture's status right after it, whether ending the capture
//! succeeded, and whether the device was usable afterwards (an eager all-reduce, checked).
//!
//! Usage: `nccl_outside [--csv FILE] [--deadline SECONDS]` (libnccl and a GPU needed; with
//! two GPUs the communicators span both, with one they are communicators of one rank).

// Ranks index parallel arrays (contexts, streams, buffers) at once.
#![allow(clippy::needless_range_loop)]

use std::ffi::c_void;
use std::io::Write;
use std::time::{Duration, Instant};

use cudarc::driver::{sys as cu, CudaContext};
use cudarc::nccl::{result as nccl, sys as nsys};

const CASES: [(&str, &str); 7] = [
    ("init_all", "ncclCommInitAll of every GPU used"),
    ("init_rank", "ncclCommInitRank, a world of one"),
    ("destroy", "ncclCommDestroy of a communicator used before"),
    ("abort", "ncclCommAbort of a communicator used before"),
    ("stream_sync", "cuStreamSynchronize after a captured all-reduce"),
    ("event_sync", "cuEventSynchronize on an event recorded after a captured all-reduce"),
    ("async_error", "ncclCommGetAsyncError after a captured all-reduce"),
];
const MODES: [(&str, cu::CUstreamCaptureMode); 3] = [
    ("Global", cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL),
    ("ThreadLocal", cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
    ("Relaxed", cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED),
];
const COUNT: usize = 1024;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |k: &str| args.iter().position(|a| a == k).and_then(|i| args.get(i + 1)).cloned();
    if let (Some(case), Some(mode)) = (arg("--case"), arg("--mode")) {
        let line = one(&case, &mode);
        println!("RESULT {line}");
        return;
    }
    let deadline = Duration::from_secs(arg("--deadline").and_then(|d| d.parse().ok()).unwrap_or(60));
    let exe = std::env::current_exe().expect("own path");
    let ndev = CudaContext::device_count().unwrap_or(0).clamp(0, 2);
    println!(
        "What must stay outside a capture: each case in its own process, deadline {deadline:?}; communicators of {ndev} GPU(s)"
    );
    println!("| call during a capture | mode | the call returned | capture after the call | ending the capture | device after | process |");
    println!("| --- | --- | --- | --- | --- | --- | --- |");
    let mut csv = String::from("case,mode,call,capture_after,end_capture,device_after,process\n");
    for (case, what) in CASES {
        for (mode, _) in MODES {
            let started = Instant::now();
            let mut child = std::process::Command::new(&exe)
                .args(["--case", case, "--mode", mode])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("spawn a case");
            let status = loop {
                if let Some(s) = child.try_wait().expect("wait") {
                    break Some(s);
                }
                if started.elapsed() > deadline {
                    let _ = child.kill();
                    let _ = child.wait();
                    break None;
                }
                std::thread::sleep(Duration::from_millis(20));
            };
            let mut out = String::new();
            if let Some(mut o) = child.stdout.take() {
                let _ = std::io::Read::read_to_string(&mut o, &mut out);
            }
            let fields: Vec<String> = out
                .lines()
                .find_map(|l| l.strip_prefix("RESULT "))
                .map(|l| l.split('|').map(str::to_owned).collect())
                .unwrap_or_else(|| vec!["-".into(); 4]);
            let process = match status {
                None => format!("HUNG (killed after {deadline:?})"),
                Some(s) if s.success() => "exited normally".into(),
                Some(s) => format!("FAILED ({s})"),
            };
            println!("| {what} | {mode} | {} | {} | {} | {} | {process} |", fields[0], fields[1], fields[2], fields[3]);
            csv += &format!("{case},{mode},{},{},{},{},{process}\n", fields[0], fields[1], fields[2], fields[3]);
        }
    }
    if let Some(path) = arg("--csv") {
        std::fs::File::create(&path).and_then(|mut f| f.write_all(csv.as_bytes())).expect("write the csv");
    }
}

fn cuda(r: cu::CUresult) -> String {
    format!("{r:?}").trim_start_matches("CUDA_").to_owned()
}

fn nccl_text(r: Result<nccl::NcclStatus, nccl::NcclError>) -> String {
    match r {
        Ok(nccl::NcclStatus::Success) => "ncclSuccess".into(),
        Ok(nccl::NcclStatus::InProgress) => "ncclInProgress".into(),
        Ok(_) => "ncclNumResults".into(),
        Err(e) => format!("{:?}", e.0),
    }
}

fn status(s: cu::CUstream) -> String {
    let mut st = cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: `s` is a live stream; `st` receives the status.
    let r = unsafe { cu::cuStreamIsCapturing(s, &mut st) };
    if r != cu::CUresult::CUDA_SUCCESS {
        return format!("(query failed: {})", cuda(r));
    }
    match st {
        cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE => "active".into(),
        cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_INVALIDATED => "INVALIDATED".into(),
        _ => "not capturing".into(),
    }
}

/// One case, in this (child) process: "call|capture after|end capture|device after".
fn one(case: &str, mode: &str) -> String {
    let mode = MODES.iter().find(|m| m.0 == mode).map(|m| m.1).expect("a mode");
    let ndev = CudaContext::device_count().expect("device count").clamp(1, 2) as usize;
    let ctxs: Vec<_> = (0..ndev).map(|d| CudaContext::new(d).expect("a GPU")).collect();
    let devs: Vec<i32> = (0..ndev as i32).collect();
    // SAFETY: raw driver and NCCL calls on handles created here, each used on its own
    // device's context; every buffer outlives the calls and graphs that use it.
    unsafe {
        let mut streams = [std::ptr::null_mut(); 2];
        let mut bufs = [0u64; 2];
        for d in 0..ndev {
            ctxs[d].bind_to_thread().expect("bind");
            assert_eq!(cu::cuStreamCreate(&mut streams[d], 1), cu::CUresult::CUDA_SUCCESS);
            assert_eq!(cu::cuMemAlloc_v2(&mut bufs[d], COUNT * 4), cu::CUresult::CUDA_SUCCESS);
        }
        let mut comms: [nsys::ncclComm_t; 2] = [std::ptr::null_mut(); 2];
        nccl::comm_init_all(comms.as_mut_ptr(), ndev as i32, devs.as_ptr()).expect("init");
        let all_reduce = |comms: &[nsys::ncclComm_t; 2]| {
            let _ = nccl::group_start();
            for d in 0..ndev {
                let _ = nccl::all_reduce(
                    bufs[d] as *const c_void,
                    bufs[d] as *mut c_void,
                    COUNT,
                    nsys::ncclDataType_t::ncclFloat32,
                    nsys::ncclRedOp_t::ncclSum,
                    comms[d],
                    streams[d] as nsys::cudaStream_t,
                );
            }
            nccl::group_end()
        };
        let fill = |v: f32| {
            for d in 0..ndev {
                ctxs[d].bind_to_thread().expect("bind");
                assert_eq!(cu::cuMemsetD32Async(bufs[d], v.to_bits(), COUNT, streams[d]), cu::CUresult::CUDA_SUCCESS);
            }
        };
        // Warm up: NCCL connects on first use.
        fill(1.0);
        all_reduce(&comms).expect("warm-up all-reduce");
        for d in 0..ndev {
            ctxs[d].bind_to_thread().expect("bind");
            cu::cuStreamSynchronize(streams[d]);
        }
        // Capture every rank's stream (the collective needs all ranks), then the case's call.
        for d in 0..ndev {
            ctxs[d].bind_to_thread().expect("bind");
            assert_eq!(cu::cuStreamBeginCapture_v2(streams[d], mode), cu::CUresult::CUDA_SUCCESS);
        }
        ctxs[0].bind_to_thread().expect("bind");
        let mut spare: [nsys::ncclComm_t; 2] = [std::ptr::null_mut(); 2];
        let mut comms_alive = true;
        let call = match case {
            "init_all" => nccl_text(nccl::comm_init_all(spare.as_mut_ptr(), ndev as i32, devs.as_ptr())),
            "init_rank" => match nccl::get_uniqueid() {
                Ok(id) => nccl_text(nccl::comm_init_rank(&mut spare[0], 1, id, 0)),
                Err(e) => format!("ncclGetUniqueId: {:?}", e.0),
            },
            "destroy" => {
                comms_alive = false;
                let r: Vec<String> = comms[..ndev].iter().map(|c| nccl_text(nccl::comm_destroy(*c))).collect();
                r.join(", ")
            }
            "abort" => {
                comms_alive = false;
                let r: Vec<String> = comms[..ndev].iter().map(|c| nccl_text(nccl::comm_abort(*c))).collect();
                r.join(", ")
            }
            "stream_sync" | "event_sync" | "async_error" => {
                let rec = nccl_text(all_reduce(&comms));
                ctxs[0].bind_to_thread().expect("bind");
                let wait = match case {
                    "stream_sync" => cuda(cu::cuStreamSynchronize(streams[0])),
                    "event_sync" => {
                        let mut ev = std::ptr::null_mut();
                        cu::cuEventCreate(&mut ev, 0);
                        let r = cu::cuEventRecord(ev, streams[0]);
                        let s = cu::cuEventSynchronize(ev);
                        format!("record {}, synchronize {}", cuda(r), cuda(s))
                    }
                    _ => {
                        let mut e = nsys::ncclResult_t::ncclSuccess;
                        let r = nsys::ncclCommGetAsyncError(comms[0], &mut e);
                        format!("{:?} (async state {:?})", r, e)
                    }
                };
                format!("all-reduce recorded: {rec}; then {wait}")
            }
            other => panic!("unknown case {other}"),
        };
        ctxs[0].bind_to_thread().expect("bind");
        let after = status(streams[0]);
        let mut ends = Vec::new();
        for d in 0..ndev {
            ctxs[d].bind_to_thread().expect("bind");
            let mut g = std::ptr::null_mut();
            let r = cu::cuStreamEndCapture(streams[d], &mut g);
            ends.push(cuda(r));
            if !g.is_null() {
                cu::cuGraphDestroy(g);
            }
        }
        let end = if ends.iter().all(|e| *e == ends[0]) { ends[0].clone() } else { ends.join(" / ") };
        // The device afterwards: an eager all-reduce on the communicators still alive (or
        // new ones), checked.
        let mut fresh = comms;
        if !comms_alive {
            if let Err(e) = nccl::comm_init_all(fresh.as_mut_ptr(), ndev as i32, devs.as_ptr()) {
                return format!("{call}|{after}|{end}|new communicator failed: {:?}", e.0);
            }
        }
        fill(2.0);
        let r = all_reduce(&fresh);
        let mut host = vec![0f32; COUNT];
        let last = ndev - 1;
        ctxs[last].bind_to_thread().expect("bind");
        let s = cu::cuStreamSynchronize(streams[last]);
        let c = cu::cuMemcpyDtoH_v2(host.as_mut_ptr() as *mut c_void, bufs[last], COUNT * 4);
        let want = 2.0 * ndev as f32;
        let device = if r.is_ok() && s == cu::CUresult::CUDA_SUCCESS && host.iter().all(|&v| v == want) {
            "usable (all-reduce right)".to_owned()
        } else {
            format!("NOT usable: all-reduce {}, sync {}, copy {}, value {}", nccl_text(r), cuda(s), cuda(c), host[0])
        };
        if !spare[0].is_null() {
            let _ = nccl::comm_destroy(spare[0]);
        }
        if !spare[1].is_null() {
            let _ = nccl::comm_destroy(spare[1]);
        }
        format!("{call}|{after}|{end}|{device}")
    }
}
