//! Diagnostics of the raw path, and which context the driver uses (issue #5).

#[allow(unused_imports)]
use super::*;

/// Diagnostics: the cost of one `bind_to_thread` (ns), and of counting a graph's nodes by
/// type as `finish()` does (ns per node).
pub(crate) fn diagnostics(res: &mut Results, raw: &Raw, n: usize) -> BResult<()> {
    const M: usize = 10_000;
    let mut bind = Vec::new();
    for _ in 0..30 {
        let t0 = Instant::now();
        for _ in 0..M {
            raw.bind()?;
        }
        bind.push(us(t0) / M as f64);
    }
    res.push("diag_bind_call", 0, "raw", &bind);
    // The driver call alone: cuCtxGetCurrent and a compare (no cudarc error-state swap).
    let want = raw.cu.cu_ctx();
    let mut get = Vec::new();
    for _ in 0..30 {
        let t0 = Instant::now();
        for _ in 0..M {
            let mut c = null_mut();
            // SAFETY: writes one handle.
            ck(unsafe { sys::cuCtxGetCurrent(&mut c) }, "cuCtxGetCurrent")?;
            if std::hint::black_box(c) != want {
                return Err("context not current".into());
            }
        }
        get.push(us(t0) / M as f64);
    }
    res.push("diag_ctx_get_current_call", 0, "raw", &get);
    let g = raw.capture_chain(n, ELEMS, false)?;
    let mut count = Vec::new();
    for _ in 0..15 {
        let t0 = Instant::now();
        let k = raw.count_node_types(g)?;
        count.push(us(t0) / n as f64);
        if k != n {
            return Err(format!("graph has {k} kernel nodes, expected {n}").into());
        }
    }
    raw.destroy_graph(g)?;
    res.push("diag_node_type_per_node", n, "raw", &count);
    Ok(())
}

/// Whether stream-ordered work needs *this* context to be current: with another context
/// current on the thread, launches a kernel and a graph of this context onto a stream of this
/// context, eagerly and during a capture, and reports the driver's result codes and whether
/// the work ran. (If the driver takes the context from the stream, a per-operation
/// `bind_to_thread` is not needed for such operations.)
pub(crate) fn context_probe(raw: &Raw, s: &mut Stream, raw_buf: &DeviceBuffer<f32>) -> BResult<Vec<String>> {
    let mut out = Vec::new();
    let a = raw.cu.cu_ctx();
    let set = |c: sys::CUcontext| -> BResult<()> {
        // SAFETY: `c` is a live context.
        ck(unsafe { sys::cuCtxSetCurrent(c) }, "cuCtxSetCurrent")
    };
    let code = |r: BResult<()>| match r {
        Ok(()) => "CUDA_SUCCESS".to_owned(),
        Err(e) => e.to_string(),
    };
    s.memset_sync(raw_buf, 0)?;
    let g10 = raw.capture_chain(10, ELEMS, false)?;
    let e10 = raw.instantiate(g10)?;
    let mut dev = 0;
    // SAFETY: writes one int; context A is current.
    ck(unsafe { sys::cuCtxGetDevice(&mut dev) }, "cuCtxGetDevice")?;
    let mut b = null_mut();
    // SAFETY: creates a new context on the same device and makes it current.
    ck(unsafe { sys::cuCtxCreate_v4(&mut b, null_mut(), 0, dev) }, "cuCtxCreate_v4")?;
    set(b)?;
    out.push(format!("other context current: eager cuLaunchKernel on our stream -> {}", code(raw.launch(ELEMS))));
    out.push(format!(
        "other context current: cuGraphLaunch (10 kernels) on our stream -> {}",
        code(raw.graph_launch(e10))
    ));
    out.push(format!("other context current: cuStreamSynchronize(our stream) -> {}", code(raw.sync())));
    set(a)?;
    raw.sync()?;
    let mut capture_note = String::new();
    if raw.begin().is_ok() {
        set(b)?;
        let l = code(raw.launch(ELEMS));
        let mut st = sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        // SAFETY: live stream; writes the status.
        let q = unsafe { sys::cuStreamIsCapturing(raw.stream, &mut st) };
        set(a)?;
        match raw.end() {
            Ok(g) => {
                let r = raw.instantiate(g).and_then(|e| {
                    raw.graph_launch(e)?;
                    raw.sync()?;
                    raw.destroy_exec(e)
                });
                capture_note = format!(
                    "other context current during capture: cuLaunchKernel -> {l}; capture status {st:?} ({q:?}); end capture OK; replay -> {}",
                    code(r)
                );
                raw.destroy_graph(g)?;
            }
            Err(e) => {
                capture_note =
                    format!("other context current during capture: cuLaunchKernel -> {l}; end capture -> {e}")
            }
        }
    }
    out.push(capture_note);
    // A thread with no current context at all.
    let (f, st, p, e) = (raw.func as usize, raw.stream as usize, raw.ptr, e10 as usize);
    let fresh = std::thread::spawn(move || {
        let mut cur = null_mut();
        // SAFETY: writes one handle.
        let g = unsafe { sys::cuCtxGetCurrent(&mut cur) };
        let (mut pp, mut n) = (p, ELEMS);
        let mut params = [&mut pp as *mut u64 as *mut c_void, &mut n as *mut u32 as *mut c_void];
        let stream = st as sys::CUstream;
        // SAFETY: as in `Raw::launch`; the handles are live for the duration of this thread.
        let l = unsafe {
            sys::cuLaunchKernel(f as sys::CUfunction, 1, 1, 1, ELEMS, 1, 1, 0, stream, params.as_mut_ptr(), null_mut())
        };
        // SAFETY: live exec and stream.
        let gl = unsafe { sys::cuGraphLaunch(e as sys::CUgraphExec, stream) };
        // SAFETY: live stream.
        let sy = unsafe { sys::cuStreamSynchronize(stream) };
        format!(
            "thread with no current context (cuCtxGetCurrent -> {g:?}, null: {}): cuLaunchKernel -> {l:?}; cuGraphLaunch -> {gl:?}; cuStreamSynchronize -> {sy:?}",
            cur.is_null()
        )
    })
    .join()
    .map_err(|_| "probe thread panicked")?;
    out.push(fresh);
    // SAFETY: `b` is not current and not used afterwards.
    ck(unsafe { sys::cuCtxDestroy_v2(b) }, "cuCtxDestroy_v2")?;
    set(a)?;
    raw.destroy_exec(e10)?;
    raw.destroy_graph(g10)?;
    let v = s.download(raw_buf)?;
    out.push(format!("value after: {} (1 eager + 10 graph + 1 captured-then-replayed + 1 + 10 on the fresh thread = 23 if everything ran)", v[0]));
    Ok(out)
}
