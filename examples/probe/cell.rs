//! Child: one cell of the probe (one operation in one capture mode), run in its own process.

use super::*;

static HOST_FN_CALLS: AtomicUsize = AtomicUsize::new(0);

unsafe extern "C" fn count_call(_: *mut c_void) {
    HOST_FN_CALLS.fetch_add(1, Ordering::SeqCst);
}

pub(super) fn emit(k: &str, v: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "@{k}\t{v}");
    let _ = o.flush();
}

fn name(r: CUresult) -> String {
    format!("{r:?}")
}

fn ok(r: CUresult) -> bool {
    r == CUresult::CUDA_SUCCESS
}

/// A setup step (outside capture) that must succeed: otherwise note it and end the cell.
fn must(r: CUresult, what: &str) {
    if !ok(r) {
        emit("note", &format!("setup failed: {what}: {}", name(r)));
        emit("done", "");
        std::process::exit(0);
    }
}

type Step = (&'static str, Box<dyn FnOnce() -> CUresult>);

/// The first failing result of a sequence of calls, noting which step failed.
fn steps(list: &mut dyn Iterator<Item = Step>) -> CUresult {
    let mut parts = Vec::new();
    let mut first_fail = CUresult::CUDA_SUCCESS;
    for (what, f) in list {
        let r = f();
        parts.push(format!("{what}={}", short(&name(r))));
        if !ok(r) {
            first_fail = r;
            break;
        }
    }
    emit("note", &format!("steps: {}", parts.join(" ")));
    first_fail
}

struct Env {
    a: sys::CUstream,
    b: sys::CUstream,
    incr: sys::CUfunction,
    fill: sys::CUfunction,
    x: sys::CUdeviceptr,
    y: sys::CUdeviceptr,
    h: Vec<f32>,
    pinned: *mut f32,
    e_a: sys::CUevent,
    e_b: sys::CUevent,
    e_join: sys::CUevent,
    to_free: sys::CUdeviceptr,
    cu_ctx: sys::CUcontext,
}

impl Env {
    unsafe fn launch(&self, f: sys::CUfunction, s: sys::CUstream, params: &mut [*mut c_void]) -> CUresult {
        sys::cuLaunchKernel(f, 1, 1, 1, 256, 1, 1, 0, s, params.as_mut_ptr(), null_mut())
    }
    unsafe fn incr(&self, s: sys::CUstream, mut p: sys::CUdeviceptr) -> CUresult {
        let mut n = N as u32;
        self.launch(self.incr, s, &mut [&mut p as *mut _ as *mut c_void, &mut n as *mut _ as *mut c_void])
    }
    unsafe fn fill(&self, s: sys::CUstream, mut p: sys::CUdeviceptr, mut v: f32) -> CUresult {
        let mut n = N as u32;
        self.launch(
            self.fill,
            s,
            &mut [&mut p as *mut _ as *mut c_void, &mut v as *mut _ as *mut c_void, &mut n as *mut _ as *mut c_void],
        )
    }
    /// Synchronous (outside capture) write of `v` to every element of device buffer `p`.
    unsafe fn set_dev(&self, p: sys::CUdeviceptr, v: f32) -> CUresult {
        let host = vec![v; N];
        sys::cuMemcpyHtoD_v2(p, host.as_ptr() as *const c_void, BYTES)
    }
    unsafe fn read_dev(&self, p: sys::CUdeviceptr) -> Result<Vec<f32>, String> {
        let mut host = vec![0f32; N];
        let r = sys::cuMemcpyDtoH_v2(host.as_mut_ptr() as *mut c_void, p, BYTES);
        if ok(r) {
            Ok(host)
        } else {
            Err(format!("read back: {}", name(r)))
        }
    }
    unsafe fn pinned_slice(&mut self) -> &mut [f32] {
        std::slice::from_raw_parts_mut(self.pinned, N)
    }
}

/// One value if all elements agree.
fn uniform(v: &[f32]) -> Result<f32, String> {
    if v.iter().all(|&e| e.to_bits() == v[0].to_bits()) {
        Ok(v[0])
    } else {
        Err(format!("mixed values (first {}, last {})", v[0], v[v.len() - 1]))
    }
}

/// Where an operation's effect lands, and how to reset / refresh / read it.
#[derive(Clone, Copy, PartialEq)]
enum Target {
    None,
    /// Device buffer Y; `fresh` is what a replay writes after `refresh` (== captured value
    /// when the input cannot change, e.g. a memset value or a kernel argument).
    DevY {
        captured: f32,
        fresh: f32,
    },
    /// Host buffer (Vec or pinned).
    HostH {
        pinned: bool,
        captured: f32,
        fresh: f32,
    },
    HostFn,
}

pub(super) fn run(mode: &str, op: &str) {
    let capture_mode = match mode {
        "global" => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL,
        "thread_local" => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        "relaxed" => sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_RELAXED,
        _ => {
            emit("note", &format!("unknown mode {mode}"));
            emit("done", "");
            return;
        }
    };
    if !OPS.iter().any(|(o, _)| *o == op) {
        emit("note", &format!("unknown op {op}"));
        emit("done", "");
        return;
    }
    // SAFETY: raw driver calls on handles created here; every buffer outlives its use.
    unsafe { run_inner(capture_mode, op) };
    emit("done", "");
    // Skip destructors: a cell may leave the context in any state.
    std::process::exit(0);
}

unsafe fn run_inner(mode: sys::CUstreamCaptureMode, op: &str) {
    let ctx = match CudaContext::new(0) {
        Ok(c) => c,
        Err(e) => {
            emit("note", &format!("setup failed: CudaContext::new(0): {:?}", e.0));
            return;
        }
    };
    let nb = sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
    let mut a = null_mut();
    let mut b = null_mut();
    // Two cells capture on a blocking stream, which the legacy stream synchronizes with.
    let a_flags = if op.ends_with("_blocking") { 0 } else { nb };
    must(sys::cuStreamCreate(&mut a, a_flags), "stream A");
    must(sys::cuStreamCreate(&mut b, nb), "stream B");
    let ptx = CString::new(PTX).expect("ptx has no NUL");
    let mut module = null_mut();
    must(sys::cuModuleLoadData(&mut module, ptx.as_ptr() as *const c_void), "module load");
    let mut incr = null_mut();
    let mut fill = null_mut();
    must(sys::cuModuleGetFunction(&mut incr, module, c"incr_f32".as_ptr()), "incr_f32");
    must(sys::cuModuleGetFunction(&mut fill, module, c"fill_f32".as_ptr()), "fill_f32");
    let mut x = 0;
    let mut y = 0;
    let mut to_free = 0;
    must(sys::cuMemAlloc_v2(&mut x, BYTES), "alloc X");
    must(sys::cuMemAlloc_v2(&mut y, BYTES), "alloc Y");
    must(sys::cuMemAlloc_v2(&mut to_free, SMALL), "alloc to_free");
    must(sys::cuMemsetD8_v2(x, 0, BYTES), "zero X");
    must(sys::cuMemsetD8_v2(y, 0, BYTES), "zero Y");
    let mut pinned: *mut c_void = null_mut();
    must(sys::cuMemHostAlloc(&mut pinned, BYTES, 0), "pinned");
    let dt = sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;
    let (mut e_a, mut e_b, mut e_join) = (null_mut(), null_mut(), null_mut());
    must(sys::cuEventCreate(&mut e_a, dt), "event A");
    must(sys::cuEventCreate(&mut e_b, dt), "event B");
    must(sys::cuEventCreate(&mut e_join, dt), "event join");
    let mut env = Env {
        a,
        b,
        incr,
        fill,
        x,
        y,
        h: vec![0f32; N],
        pinned: pinned as *mut f32,
        e_a,
        e_b,
        e_join,
        to_free,
        cu_ctx: ctx.cu_ctx(),
    };
    env.pinned_slice().fill(0.0);

    // Per-op preparation (before capture) and where its effect lands.
    let mut pooled: sys::CUdeviceptr = 0;
    let target = match op {
        "htod_sync" | "htod_sync_blocking" | "htod_async_pageable" => {
            env.h.fill(1.0);
            Target::DevY { captured: 1.0, fresh: 2.0 }
        }
        "htod_async_pinned" => {
            env.pinned_slice().fill(1.0);
            Target::DevY { captured: 1.0, fresh: 2.0 }
        }
        "dtoh_sync" | "dtoh_async_pageable" => {
            must(env.set_dev(y, 1.0), "fill Y");
            Target::HostH { pinned: false, captured: 1.0, fresh: 2.0 }
        }
        "dtoh_async_pinned" => {
            must(env.set_dev(y, 1.0), "fill Y");
            Target::HostH { pinned: true, captured: 1.0, fresh: 2.0 }
        }
        "memset_sync" | "memset_async" => {
            let v = f32::from_bits(u32::from_ne_bytes([MEMSET_BYTE; 4]));
            Target::DevY { captured: v, fresh: v }
        }
        "kernel_other_stream" | "kernel_legacy_stream" | "kernel_legacy_blocking" | "fork_no_join" | "fork_join" => {
            Target::DevY { captured: 5.0, fresh: 5.0 }
        }
        "host_fn" => Target::HostFn,
        "event_query_other" | "event_query_other_thread" | "event_sync_other" | "wait_uncaptured_event" => {
            must(env.incr(b, y), "kernel on B");
            must(sys::cuEventRecord(e_b, b), "record on B");
            must(sys::cuStreamSynchronize(b), "sync B");
            must(sys::cuMemsetD8_v2(y, 0, BYTES), "zero Y");
            Target::None
        }
        "free_async_pooled" => {
            must(sys::cuMemAllocAsync(&mut pooled, SMALL, b), "cuMemAllocAsync on B");
            must(sys::cuStreamSynchronize(b), "sync B");
            Target::None
        }
        _ => Target::None,
    };
    must(sys::cuCtxSynchronize(), "ctx sync before capture");

    // Capture.
    must(sys::cuStreamBeginCapture_v2(a, mode), "begin capture");
    let r = env.incr(a, env.x);
    if !ok(r) {
        emit("note", &format!("incr_f32 on A during capture: {}", name(r)));
    }
    let op_result = act(&mut env, op, pooled);
    emit("op_result", &name(op_result));
    let mut st = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    let r = sys::cuStreamIsCapturing(a, &mut st);
    emit("status_after", &if ok(r) { format!("{st:?}") } else { format!("query:{}", name(r)) });
    let mut graph = null_mut();
    let end = sys::cuStreamEndCapture(a, &mut graph);
    emit("end_result", &name(end));

    // Did the operation run eagerly, during capture?
    let r = sys::cuCtxSynchronize();
    if !ok(r) {
        emit("note", &format!("cuCtxSynchronize after end capture: {}", name(r)));
    }
    let ran_at_capture = match target {
        Target::None => None,
        Target::HostFn => Some(HOST_FN_CALLS.load(Ordering::SeqCst) > 0),
        Target::DevY { captured, .. } => match env.read_dev(y).and_then(|v| uniform(&v)) {
            Ok(v) => Some(v.to_bits() == captured.to_bits()),
            Err(e) => {
                emit("note", &format!("at capture: {e}"));
                None
            }
        },
        Target::HostH { pinned, captured, .. } => {
            let v = if pinned { env.pinned_slice().to_vec() } else { env.h.clone() };
            match uniform(&v) {
                Ok(v) => Some(v.to_bits() == captured.to_bits()),
                Err(e) => {
                    emit("note", &format!("at capture: {e}"));
                    None
                }
            }
        }
    };
    emit("ran_at_capture", ran_at_capture.map_or("n/a", |b| if b { "yes" } else { "no" }));

    if graph.is_null() {
        emit("instantiate", "-");
        emit("replay", "-");
        emit("replay_data", "n/a");
        emit("fresh_data", "n/a");
        return;
    }
    let flags = if op == "async_alloc" {
        sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.0 as u64
    } else {
        0
    };
    let mut exec = null_mut();
    let r = sys::cuGraphInstantiateWithFlags(&mut exec, graph, flags);
    emit("instantiate", &name(r));
    if !ok(r) {
        emit("replay", "-");
        emit("replay_data", "n/a");
        emit("fresh_data", "n/a");
        return;
    }

    // Reset the target, refresh the input, replay once, read back.
    let calls_before = HOST_FN_CALLS.load(Ordering::SeqCst);
    match target {
        Target::DevY { fresh, .. } => {
            must(sys::cuMemsetD8_v2(y, 0, BYTES), "reset Y");
            env.h.fill(fresh);
            env.pinned_slice().fill(fresh);
        }
        Target::HostH { fresh, .. } => {
            env.h.fill(0.0);
            env.pinned_slice().fill(0.0);
            must(env.set_dev(y, fresh), "refresh Y");
        }
        _ => {}
    }
    let replay_once = || {
        let r = sys::cuGraphLaunch(exec, a);
        if !ok(r) {
            return r;
        }
        sys::cuStreamSynchronize(a)
    };
    let r1 = replay_once();
    let replay_data: Result<&str, String> = match target {
        Target::None => Ok("n/a"),
        Target::HostFn => Ok("see-count"),
        Target::DevY { captured, fresh } => {
            env.read_dev(y).and_then(|v| uniform(&v)).map(|v| classify(v, 0.0, captured, fresh))
        }
        Target::HostH { pinned, captured, fresh } => {
            let v = if pinned { env.pinned_slice().to_vec() } else { env.h.clone() };
            uniform(&v).map(|v| classify(v, 0.0, captured, fresh))
        }
    };
    let r2 = if ok(r1) { replay_once() } else { r1 };
    emit("replay", &if ok(r1) && !ok(r2) { format!("second:{}", name(r2)) } else { name(r1) });
    let replay_data = match replay_data {
        Ok(s) => s.to_string(),
        Err(e) => format!("error: {e}"),
    };
    let fresh_data = match (target, ran_at_capture) {
        (Target::None, _) => "n/a".to_string(),
        (Target::HostFn, ran) => {
            let during = HOST_FN_CALLS.load(Ordering::SeqCst) - calls_before;
            emit("note", &format!("host fn calls: {calls_before} at capture, {during} in 2 replays"));
            verdict(
                ran,
                if during == 2 {
                    "fresh"
                } else if during == 0 {
                    "reset"
                } else {
                    "odd"
                },
            )
        }
        (_, ran) => verdict(ran, &replay_data),
    };
    emit("replay_data", if matches!(target, Target::HostFn) { "see-count" } else { &replay_data });
    emit("fresh_data", &fresh_data);
    // Harness check: the captured incr_f32 ran once per replay and never at capture.
    if ok(r1) && ok(r2) {
        match env.read_dev(env.x).and_then(|v| uniform(&v)) {
            Ok(v) if v != 2.0 => emit("note", &format!("X after 2 replays = {v} (expected 2)")),
            Ok(_) => {}
            Err(e) => emit("note", &format!("X: {e}")),
        }
    }
}

fn classify(v: f32, reset: f32, captured: f32, fresh: f32) -> &'static str {
    if v.to_bits() == fresh.to_bits() {
        "fresh"
    } else if v.to_bits() == reset.to_bits() {
        "reset"
    } else if v.to_bits() == captured.to_bits() {
        "captured"
    } else {
        "odd"
    }
}

fn verdict(ran: Option<bool>, replay: &str) -> String {
    match (ran, replay) {
        (Some(false), "fresh") => "recorded".into(),
        (Some(true), "reset") => "stale".into(),
        (Some(true), "fresh") => "ran-now+recorded".into(),
        (Some(false), "reset") => "dropped".into(),
        (Some(true), "captured") => "ran-now+snapshot".into(),
        (Some(false), "captured") => "snapshot".into(),
        (r, d) => format!("odd(ran_at_capture={r:?}, replay={d})"),
    }
}

/// Runs `f` on a new thread with the cell's context current there; returns its result.
unsafe fn on_other_thread(env: &Env, f: impl FnOnce() -> CUresult + Send + 'static) -> CUresult {
    let ctx = env.cu_ctx as usize;
    std::thread::spawn(move || {
        let r = sys::cuCtxSetCurrent(ctx as sys::CUcontext);
        if !ok(r) {
            emit("note", &format!("other thread cuCtxSetCurrent: {}", name(r)));
            return r;
        }
        f()
    })
    .join()
    .unwrap_or(CUresult::CUDA_ERROR_UNKNOWN)
}

/// Performs the operation during capture; returns its result.
unsafe fn act(env: &mut Env, op: &str, pooled: sys::CUdeviceptr) -> CUresult {
    let (a, b, y) = (env.a, env.b, env.y);
    match op {
        "baseline" => CUresult::CUDA_SUCCESS,
        "sync_alloc" => {
            let mut p = 0;
            sys::cuMemAlloc_v2(&mut p, SMALL)
        }
        "alloc_other_thread" => on_other_thread(env, || {
            let mut p = 0;
            sys::cuMemAlloc_v2(&mut p, SMALL)
        }),
        "free_other_thread" => {
            let p = env.to_free;
            on_other_thread(env, move || sys::cuMemFree_v2(p))
        }
        "stream_sync_other_thread" => {
            let b = b as usize;
            on_other_thread(env, move || sys::cuStreamSynchronize(b as sys::CUstream))
        }
        "ctx_sync_other_thread" => on_other_thread(env, || sys::cuCtxSynchronize()),
        "event_query_other_thread" => {
            let e = env.e_b as usize;
            on_other_thread(env, move || sys::cuEventQuery(e as sys::CUevent))
        }
        "alloc_free_async" => {
            let mut p = 0;
            let r = sys::cuMemAllocAsync(&mut p, SMALL, a);
            let r2 = if ok(r) { sys::cuMemFreeAsync(p, a) } else { r };
            emit("note", &format!("steps: alloc={} free={}", short(&name(r)), short(&name(r2))));
            if ok(r) {
                r2
            } else {
                r
            }
        }
        "managed_alloc" => {
            let mut p = 0;
            sys::cuMemAllocManaged(&mut p, SMALL, sys::CUmemAttach_flags::CU_MEM_ATTACH_GLOBAL as u32)
        }
        "async_alloc" => {
            let mut p = 0;
            sys::cuMemAllocAsync(&mut p, SMALL, a)
        }
        "pinned_alloc" => {
            let mut p = null_mut();
            sys::cuMemHostAlloc(&mut p, SMALL, 0)
        }
        "free" => sys::cuMemFree_v2(env.to_free),
        "free_async" => sys::cuMemFreeAsync(env.to_free, a),
        "free_async_pooled" => sys::cuMemFreeAsync(pooled, a),
        "htod_sync" | "htod_sync_blocking" => sys::cuMemcpyHtoD_v2(y, env.h.as_ptr() as *const c_void, BYTES),
        "htod_async_pageable" => sys::cuMemcpyHtoDAsync_v2(y, env.h.as_ptr() as *const c_void, BYTES, a),
        "htod_async_pinned" => sys::cuMemcpyHtoDAsync_v2(y, env.pinned as *const c_void, BYTES, a),
        "dtoh_sync" => sys::cuMemcpyDtoH_v2(env.h.as_mut_ptr() as *mut c_void, y, BYTES),
        "dtoh_async_pageable" => sys::cuMemcpyDtoHAsync_v2(env.h.as_mut_ptr() as *mut c_void, y, BYTES, a),
        "dtoh_async_pinned" => sys::cuMemcpyDtoHAsync_v2(env.pinned as *mut c_void, y, BYTES, a),
        "memset_sync" => sys::cuMemsetD8_v2(y, MEMSET_BYTE, BYTES),
        "memset_async" => sys::cuMemsetD8Async(y, MEMSET_BYTE, BYTES, a),
        "stream_sync_capturing" => sys::cuStreamSynchronize(a),
        "stream_sync_other" => sys::cuStreamSynchronize(b),
        "stream_sync_legacy" => sys::cuStreamSynchronize(null_mut()),
        "ctx_sync" => sys::cuCtxSynchronize(),
        "stream_query_capturing" => sys::cuStreamQuery(a),
        "stream_query_other" => sys::cuStreamQuery(b),
        "event_record" => sys::cuEventRecord(env.e_a, a),
        "event_query_captured" | "event_sync_captured" => {
            let e = env.e_a;
            let sync = op == "event_sync_captured";
            steps(
                &mut [
                    ("record", Box::new(move || sys::cuEventRecord(e, a)) as Box<dyn FnOnce() -> CUresult>),
                    (
                        if sync { "sync" } else { "query" },
                        Box::new(move || if sync { sys::cuEventSynchronize(e) } else { sys::cuEventQuery(e) }),
                    ),
                ]
                .into_iter(),
            )
        }
        "event_query_other" => sys::cuEventQuery(env.e_b),
        "event_sync_other" => sys::cuEventSynchronize(env.e_b),
        "wait_uncaptured_event" => sys::cuStreamWaitEvent(a, env.e_b, 0),
        "kernel_other_stream" => env.fill(b, y, 5.0),
        "kernel_legacy_stream" | "kernel_legacy_blocking" => env.fill(null_mut(), y, 5.0),
        "host_fn" => sys::cuLaunchHostFunc(a, Some(count_call), null_mut()),
        "fork_no_join" | "fork_join" => {
            let (e, ej, fill) = (env.e_a, env.e_join, env.fill);
            let join = op == "fork_join";
            let mut list: Vec<Step> = vec![
                ("record_A", Box::new(move || sys::cuEventRecord(e, a))),
                ("B_waits", Box::new(move || sys::cuStreamWaitEvent(b, e, 0))),
                (
                    "fill_on_B",
                    Box::new(move || {
                        let (mut p, mut v, mut n) = (y, 5.0f32, N as u32);
                        let mut params = [
                            &mut p as *mut _ as *mut c_void,
                            &mut v as *mut _ as *mut c_void,
                            &mut n as *mut _ as *mut c_void,
                        ];
                        sys::cuLaunchKernel(fill, 1, 1, 1, 256, 1, 1, 0, b, params.as_mut_ptr(), null_mut())
                    }),
                ),
            ];
            if join {
                list.push(("record_B", Box::new(move || sys::cuEventRecord(ej, b))));
                list.push(("A_waits", Box::new(move || sys::cuStreamWaitEvent(a, ej, 0))));
            }
            steps(&mut list.into_iter())
        }
        "module_load" => {
            let ptx = CString::new(PTX).expect("ptx has no NUL");
            let mut m = null_mut();
            sys::cuModuleLoadData(&mut m, ptx.as_ptr() as *const c_void)
        }
        "mem_info" => {
            let (mut free, mut total) = (0, 0);
            sys::cuMemGetInfo_v2(&mut free, &mut total)
        }
        "event_create" => {
            let mut e = null_mut();
            sys::cuEventCreate(&mut e, sys::CUevent_flags::CU_EVENT_DISABLE_TIMING as u32)
        }
        "stream_create" => {
            let mut s = null_mut();
            sys::cuStreamCreate(&mut s, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32)
        }
        _ => unreachable!("checked in run"),
    }
}
