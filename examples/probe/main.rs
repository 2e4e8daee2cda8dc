//! The capturability probe: what the *real* CUDA driver does with each capture-relevant
//! operation, in each capture mode, so that the simulated device can be checked against
//! hardware. It uses cudarc's raw `driver::{result, sys}` API, never capture-core.
//!
//! ```text
//! cargo run --release --example probe -- [--out PATH.tsv] [--date YYYY-MM-DD]
//!     [--timeout SECS] [--jobs N] [--deadline SECS] [--only OP,OP,...]
//! ```
//!
//! Each (mode, operation) **cell** runs in a child process (`probe --cell MODE OP`) with a
//! timeout, so a hang is recorded as `HANG` and a crash as `CRASH` instead of stopping the
//! probe. A cell: makes a context, a non-blocking capturing stream A and an ordinary
//! non-blocking stream B, loads chain.ptx, allocates everything before capture, begins
//! capture on A in the mode, enqueues `incr_f32` on A (so the graph is never empty), performs
//! the operation, and records
//!
//! * `op_result`: the operation's CUresult (for several calls, the first failing one);
//! * `status_after`: cuStreamIsCapturing(A) right after it;
//! * `end_result`: cuStreamEndCapture(A);
//! * `instantiate`, `replay`: cuGraphInstantiateWithFlags (AUTO_FREE_ON_LAUNCH for
//!   async_alloc), then two cuGraphLaunch + cuStreamSynchronize;
//! * `ran_at_capture`: whether the operation's effect was visible right after end-capture
//!   (it ran eagerly, during capture), for operations with a visible effect;
//! * `replay_data`: after capture the operation's target is reset and its input changed
//!   ("fresh" data), the graph is replayed once and the target read back: `fresh` (the
//!   replay redid the operation with the new input), `reset` (the replay did not do it),
//!   `captured` (the replay used a snapshot of the input taken at capture time);
//! * `fresh_data`: the verdict from the two above: `recorded` (not run at capture, in the
//!   graph: deferred to replay), `stale` (ran once at capture, not in the graph),
//!   `ran-now+recorded`, `dropped` (neither), `snapshot`, or `n/a`.
//!
//! Output: a table on stdout (rows = operation, columns = mode) and, with `--out`, a TSV file
//! with one record per (operation, mode) under a `#` header (GPU, driver, date, version).
//! Without a CUDA driver the probe says so and exits 0.

use std::collections::HashMap;
use std::ffi::{c_void, CString};
use std::io::{Read, Write};
use std::process::{Command, Stdio};
use std::ptr::null_mut;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use cudarc::driver::{result, sys, CudaContext};
use sys::CUresult;

/// Bump when cells change meaning, so old result files can be told apart.
const PROBE_VERSION: &str = "2";
const PTX: &str = include_str!("../../capture-core/kernels/chain.ptx");
/// Elements in each test buffer (f32).
const N: usize = 256;
const BYTES: usize = N * 4;
/// Bytes for the probe's own allocations during capture (managed memory included: keep small).
const SMALL: usize = 4096;
/// The memset byte; the f32 whose four bytes are all this value.
const MEMSET_BYTE: u8 = 7;

const MODES: [(&str, &str); 3] = [("global", "Global"), ("thread_local", "ThreadLocal"), ("relaxed", "Relaxed")];

/// (name, what the cell does during capture, after `incr_f32` on A).
const OPS: &[(&str, &str)] = &[
    ("baseline", "nothing (harness check: graph = one kernel)"),
    ("sync_alloc", "cuMemAlloc 4 KiB"),
    ("alloc_other_thread", "cuMemAlloc 4 KiB from a spawned thread"),
    ("managed_alloc", "cuMemAllocManaged 4 KiB"),
    ("async_alloc", "cuMemAllocAsync 4 KiB on A (instantiated with AUTO_FREE_ON_LAUNCH)"),
    ("pinned_alloc", "cuMemHostAlloc 4 KiB"),
    ("free", "cuMemFree of a cuMemAlloc buffer from before capture"),
    ("free_other_thread", "cuMemFree of a cuMemAlloc buffer from before capture, from a spawned thread"),
    ("free_async", "cuMemFreeAsync on A of a cuMemAlloc buffer from before capture"),
    ("free_async_pooled", "cuMemFreeAsync on A of a cuMemAllocAsync buffer from before capture"),
    ("alloc_free_async", "cuMemAllocAsync 4 KiB on A, then cuMemFreeAsync of it on A"),
    ("htod_sync", "cuMemcpyHtoD from a Vec"),
    ("htod_sync_blocking", "cuMemcpyHtoD from a Vec, capturing stream A created BLOCKING (flags 0)"),
    ("htod_async_pageable", "cuMemcpyHtoDAsync on A from a Vec"),
    ("htod_async_pinned", "cuMemcpyHtoDAsync on A from cuMemHostAlloc memory"),
    ("dtoh_sync", "cuMemcpyDtoH into a Vec"),
    ("dtoh_async_pageable", "cuMemcpyDtoHAsync on A into a Vec"),
    ("dtoh_async_pinned", "cuMemcpyDtoHAsync on A into cuMemHostAlloc memory"),
    ("memset_sync", "cuMemsetD8"),
    ("memset_async", "cuMemsetD8Async on A"),
    ("stream_sync_capturing", "cuStreamSynchronize(A)"),
    ("stream_sync_other", "cuStreamSynchronize(B)"),
    ("stream_sync_other_thread", "cuStreamSynchronize(B) from a spawned thread"),
    ("stream_sync_legacy", "cuStreamSynchronize(NULL stream)"),
    ("ctx_sync", "cuCtxSynchronize"),
    ("ctx_sync_other_thread", "cuCtxSynchronize from a spawned thread"),
    ("stream_query_capturing", "cuStreamQuery(A)"),
    ("stream_query_other", "cuStreamQuery(B)"),
    ("event_record", "cuEventRecord on A"),
    ("event_query_captured", "cuEventRecord on A, then cuEventQuery of it"),
    ("event_sync_captured", "cuEventRecord on A, then cuEventSynchronize of it"),
    ("event_query_other", "cuEventQuery of an event recorded on B before capture"),
    ("event_query_other_thread", "cuEventQuery of an event recorded on B before capture, from a spawned thread"),
    ("event_sync_other", "cuEventSynchronize of an event recorded on B before capture"),
    ("wait_uncaptured_event", "cuStreamWaitEvent(A, event recorded on B before capture)"),
    ("kernel_other_stream", "fill_f32 on B"),
    ("kernel_legacy_stream", "fill_f32 on the NULL (legacy) stream"),
    ("kernel_legacy_blocking", "fill_f32 on the NULL (legacy) stream, capturing stream A created BLOCKING (flags 0)"),
    ("host_fn", "cuLaunchHostFunc on A (callback counts calls)"),
    ("fork_no_join", "record E on A, B waits on E, fill_f32 on B; no join"),
    ("fork_join", "as fork_no_join, then record E2 on B, A waits on E2"),
    ("module_load", "cuModuleLoadData(chain.ptx)"),
    ("mem_info", "cuMemGetInfo"),
    ("event_create", "cuEventCreate"),
    ("stream_create", "cuStreamCreate (non-blocking)"),
];

/// Fields a cell reports, in the order it learns them.
const FIELDS: [&str; 8] =
    ["op_result", "status_after", "end_result", "instantiate", "replay", "ran_at_capture", "replay_data", "fresh_data"];

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // SAFETY: only probes whether the driver library can be loaded.
    if !unsafe { sys::is_culib_present() } {
        println!("probe: no CUDA driver library (libcuda) on this machine: nothing to probe.");
        println!("probe: run it on a machine with an NVIDIA GPU and driver.");
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--cell") {
        let (mode, op) = (args.get(i + 1).cloned().unwrap_or_default(), args.get(i + 2).cloned().unwrap_or_default());
        cell::run(&mode, &op);
        return;
    }
    parent(&args);
}

// ---------------------------------------------------------------------------------------------
// Parent: spawns the cells, prints the table, writes the TSV.
// ---------------------------------------------------------------------------------------------

fn flag(args: &[String], name: &str) -> Option<String> {
    args.iter().position(|a| a == name).and_then(|i| args.get(i + 1).cloned())
}

#[derive(Clone, Default)]
struct Record {
    op: String,
    mode: String,
    fields: HashMap<String, String>,
    notes: Vec<String>,
}

impl Record {
    fn get(&self, k: &str) -> &str {
        self.fields.get(k).map(String::as_str).unwrap_or("-")
    }
}

fn parent(args: &[String]) {
    let date = flag(args, "--date").unwrap_or_else(|| "unknown".into());
    let out = flag(args, "--out");
    let timeout = Duration::from_secs(flag(args, "--timeout").and_then(|s| s.parse().ok()).unwrap_or(20));
    let jobs: usize = flag(args, "--jobs").and_then(|s| s.parse().ok()).unwrap_or(4).max(1);
    let deadline =
        Instant::now() + Duration::from_secs(flag(args, "--deadline").and_then(|s| s.parse().ok()).unwrap_or(420));
    let only: Option<Vec<String>> = flag(args, "--only").map(|s| s.split(',').map(str::to_string).collect());

    let (gpu, driver) = match device_info() {
        Ok(x) => x,
        Err(e) => {
            println!("probe: the CUDA driver is present but no GPU is usable ({e}): nothing to probe.");
            return;
        }
    };
    let kernel_driver = std::fs::read_to_string("/proc/driver/nvidia/version")
        .ok()
        .and_then(|s| s.lines().next().map(str::to_string))
        .and_then(|l| {
            l.split_whitespace()
                .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
                .map(str::to_string)
        })
        .or_else(|| {
            let o = Command::new("nvidia-smi")
                .args(["--query-gpu=driver_version", "--format=csv,noheader"])
                .output()
                .ok()?;
            String::from_utf8(o.stdout).ok()?.lines().next().map(|l| l.trim().to_string()).filter(|l| !l.is_empty())
        })
        .unwrap_or_else(|| "unknown".into());
    let header = vec![
        ("gpu".to_string(), gpu),
        ("driver".to_string(), format!("{kernel_driver} (cuDriverGetVersion {driver})")),
        ("date".to_string(), date),
        ("probe_version".to_string(), PROBE_VERSION.to_string()),
        ("cudarc".to_string(), "0.19 (features std, driver, dynamic-loading, cuda-13000)".to_string()),
    ];

    let ops: Vec<&(&str, &str)> =
        OPS.iter().filter(|(op, _)| only.as_ref().is_none_or(|o| o.iter().any(|x| x == op))).collect();
    let cells: Vec<(String, String)> =
        ops.iter().flat_map(|(op, _)| MODES.iter().map(move |(m, _)| (op.to_string(), m.to_string()))).collect();
    let exe = std::env::current_exe().expect("current_exe");
    let results: Arc<Mutex<Vec<Option<Record>>>> = Arc::new(Mutex::new(vec![None; cells.len()]));
    let next = Arc::new(AtomicUsize::new(0));
    let cells = Arc::new(cells);
    eprintln!("probe: {} cells, {jobs} at a time, {}s timeout each", cells.len(), timeout.as_secs());
    let workers: Vec<_> = (0..jobs)
        .map(|_| {
            let (results, next, cells, exe) = (results.clone(), next.clone(), cells.clone(), exe.clone());
            std::thread::spawn(move || loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some((op, mode)) = cells.get(i) else { break };
                let rec = if Instant::now() > deadline {
                    let mut r = Record { op: op.clone(), mode: mode.clone(), ..Default::default() };
                    r.fields.insert("op_result".into(), "SKIPPED".into());
                    r.notes.push("probe deadline passed".into());
                    r
                } else {
                    run_child(&exe, op, mode, timeout)
                };
                eprintln!("cell {op} {mode}: {}{}", summary(&rec), notes_suffix(&rec));
                results.lock().unwrap()[i] = Some(rec);
            })
        })
        .collect();
    for w in workers {
        w.join().expect("worker");
    }
    let results: Vec<Record> = results.lock().unwrap().iter().map(|r| r.clone().expect("every cell ran")).collect();

    // Table.
    let mut text = String::new();
    for (k, v) in &header {
        text.push_str(&format!("{k}: {v}\n"));
    }
    text.push_str(
        "\ncell = op_result/status_after → end:end_result[, inst:instantiate][, replay:replay][, data:fresh_data]\n",
    );
    text.push_str(
        "data: recorded = deferred to replay, redone with fresh data; stale = ran at capture, not in graph\n\n",
    );
    let opw = ops.iter().map(|(o, _)| o.len()).max().unwrap_or(2).max(2);
    let cols: Vec<Vec<String>> = ops
        .iter()
        .map(|(op, _)| MODES.iter().map(|(m, _)| find(&results, op, m).map(summary).unwrap_or_default()).collect())
        .collect();
    let colw: Vec<usize> = (0..MODES.len())
        .map(|j| cols.iter().map(|r| r[j].chars().count()).max().unwrap_or(0).max(MODES[j].1.len()))
        .collect();
    let pad = |s: &str, w: usize| format!("{s}{}", " ".repeat(w.saturating_sub(s.chars().count())));
    text.push_str(&pad("op", opw));
    for (j, (_, title)) in MODES.iter().enumerate() {
        text.push_str(" | ");
        text.push_str(&pad(title, colw[j]));
    }
    text.push('\n');
    text.push_str(&"-".repeat(opw + colw.iter().map(|w| w + 3).sum::<usize>()));
    text.push('\n');
    for (i, (op, _)) in ops.iter().enumerate() {
        text.push_str(&pad(op, opw));
        for j in 0..MODES.len() {
            text.push_str(" | ");
            text.push_str(&pad(&cols[i][j], colw[j]));
        }
        text.push('\n');
    }
    text.push_str("\nnotes:\n");
    for r in &results {
        if !r.notes.is_empty() {
            text.push_str(&format!("  {} / {}: {}\n", r.op, r.mode, r.notes.join("; ")));
        }
    }
    text.push_str("\noperations:\n");
    for (op, what) in &ops {
        text.push_str(&format!("  {}  {what}\n", pad(op, opw)));
    }
    let text: String = text.lines().map(|l| format!("{}\n", l.trim_end())).collect();
    print!("{text}");

    if let Some(path) = out {
        let mut tsv = String::new();
        for (k, v) in &header {
            tsv.push_str(&format!("# {k}\t{v}\n"));
        }
        tsv.push_str("op\tmode\t");
        tsv.push_str(&FIELDS.join("\t"));
        tsv.push_str("\tnotes\n");
        for r in &results {
            tsv.push_str(&format!("{}\t{}", r.op, r.mode));
            for f in FIELDS {
                tsv.push('\t');
                tsv.push_str(r.get(f));
            }
            tsv.push('\t');
            if r.notes.is_empty() {
                tsv.push('-');
            } else {
                tsv.push_str(&r.notes.join("; ").replace(['\t', '\n'], " "));
            }
            tsv.push('\n');
        }
        match std::fs::write(&path, tsv) {
            Ok(()) => eprintln!("probe: wrote {path}"),
            Err(e) => eprintln!("probe: could not write {path}: {e}"),
        }
    }
}

fn find<'a>(results: &'a [Record], op: &str, mode: &str) -> Option<&'a Record> {
    results.iter().find(|r| r.op == op && r.mode == mode)
}

fn notes_suffix(r: &Record) -> String {
    if r.notes.is_empty() {
        String::new()
    } else {
        format!("  [{}]", r.notes.join("; "))
    }
}

/// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED` → `UNSUPPORTED`, `CUDA_SUCCESS` → `OK`.
fn short(s: &str) -> String {
    if s == "CUDA_SUCCESS" {
        return "OK".into();
    }
    let s = s.strip_prefix("CUDA_ERROR_").unwrap_or(s);
    let s = s.strip_prefix("STREAM_CAPTURE_").unwrap_or(s);
    s.strip_prefix("CU_STREAM_CAPTURE_STATUS_")
        .map(|x| if x == "INVALIDATED" { "INVAL" } else { x })
        .unwrap_or(s)
        .to_string()
}

fn summary(r: &Record) -> String {
    let op = r.get("op_result");
    if op == "SKIPPED" {
        return "SKIPPED".into();
    }
    let mut s = format!("{}/{} → end:{}", short(op), short(r.get("status_after")), short(r.get("end_result")));
    let inst = r.get("instantiate");
    if inst != "-" && inst != "CUDA_SUCCESS" {
        s.push_str(&format!(", inst:{}", short(inst)));
    }
    let replay = r.get("replay");
    if replay != "-" {
        s.push_str(&format!(", replay:{}", short(replay)));
    }
    let data = r.get("fresh_data");
    if data != "-" && data != "n/a" {
        s.push_str(&format!(", data:{data}"));
    } else if r.get("ran_at_capture") == "yes" {
        s.push_str(" [ran now]");
    }
    s
}

fn device_info() -> Result<(String, String), String> {
    result::init().map_err(|e| format!("cuInit: {:?}", e.0))?;
    let n = result::device::get_count().map_err(|e| format!("cuDeviceGetCount: {:?}", e.0))?;
    if n < 1 {
        return Err("no CUDA device".into());
    }
    let dev = result::device::get(0).map_err(|e| format!("cuDeviceGet: {:?}", e.0))?;
    let name = result::device::get_name(dev).map_err(|e| format!("cuDeviceGetName: {:?}", e.0))?;
    let mut v = 0;
    // SAFETY: writes one int.
    unsafe { sys::cuDriverGetVersion(&mut v) };
    Ok((name, format!("{v} = CUDA {}.{}", v / 1000, (v % 1000) / 10)))
}

fn run_child(exe: &std::path::Path, op: &str, mode: &str, timeout: Duration) -> Record {
    let mut rec = Record { op: op.into(), mode: mode.into(), ..Default::default() };
    let child = Command::new(exe)
        .args(["--cell", mode, op])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => {
            rec.fields.insert("op_result".into(), "SPAWN_FAILED".into());
            rec.notes.push(e.to_string());
            return rec;
        }
    };
    let reader = |mut p: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut s = String::new();
            let _ = p.read_to_string(&mut s);
            s
        })
    };
    let out_t = reader(Box::new(child.stdout.take().expect("stdout")));
    let err_t = reader(Box::new(child.stderr.take().expect("stderr")));
    let start = Instant::now();
    let mut hung = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) if start.elapsed() > timeout => {
                hung = true;
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(_) => break None,
        }
    };
    let out = out_t.join().unwrap_or_default();
    let err = err_t.join().unwrap_or_default();
    let mut done = false;
    for line in out.lines() {
        let Some(rest) = line.strip_prefix('@') else { continue };
        let (k, v) = rest.split_once('\t').unwrap_or((rest, ""));
        match k {
            "note" => rec.notes.push(v.to_string()),
            "done" => done = true,
            _ => {
                rec.fields.insert(k.to_string(), v.to_string());
            }
        }
    }
    if !done {
        let what = if hung {
            format!("HANG (killed after {}s)", timeout.as_secs())
        } else {
            format!("CRASH ({})", status.map(|s| s.to_string()).unwrap_or_else(|| "unknown".into()))
        };
        let marker = if hung { "HANG" } else { "CRASH" };
        if let Some(first_missing) = FIELDS.iter().find(|f| !rec.fields.contains_key(**f)) {
            rec.fields.insert(first_missing.to_string(), marker.into());
        }
        rec.notes.push(what);
        if let Some(l) = err.lines().rev().find(|l| !l.trim().is_empty()) {
            rec.notes.push(format!("stderr: {}", l.trim()));
        }
    }
    rec
}

mod cell;
