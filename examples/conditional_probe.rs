//! What the driver does with conditional graph nodes (issue #12), measured straight through
//! cudarc's driver bindings: whether the PTX of `capture-core/kernels/control.cu` (which calls
//! `cudaGraphSetConditional`) loads with `cuModuleLoadData` alone, whether a WHILE node
//! whose body is recorded by stream capture (`cuStreamBeginCaptureToGraph`) runs its body the
//! right number of times, IF and SWITCH nodes, an IF nested in a WHILE, and — as a first
//! measurement for the benchmark — the per-step time of one launch of a K-step WHILE graph
//! against K launches of the body's graph.
//!
//! Usage: `conditional_probe CONTROL_PTX [--steps 16,128,1024]` (a GPU needed).

use std::ffi::{c_void, CString};
use std::time::Instant;

use cudarc::driver::{sys as cu, CudaContext};

fn ok(r: cu::CUresult, what: &str) {
    assert_eq!(r, cu::CUresult::CUDA_SUCCESS, "{what}");
}

struct Fns {
    incr: cu::CUfunction,
    step_below: cu::CUfunction,
    from_flag: cu::CUfunction,
    zero: cu::CUfunction,
}

/// Launches `f` with one thread on `s`; `args` are pointers to each argument.
unsafe fn launch(f: cu::CUfunction, s: cu::CUstream, grid: u32, args: &mut [*mut c_void]) -> cu::CUresult {
    // SAFETY: forwarded; `args` matches `f`'s parameters at every call site below.
    unsafe {
        cu::cuLaunchKernel(
            f,
            grid,
            1,
            1,
            if grid > 1 { 256 } else { 1 },
            1,
            1,
            0,
            s,
            args.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
}

/// Adds a conditional node of `ty` with `size` bodies at the current end of `s`'s capture;
/// returns the handle and the body graphs.
unsafe fn conditional(
    ctx: cu::CUcontext,
    s: cu::CUstream,
    ty: cu::CUgraphConditionalNodeType,
    size: u32,
    default: u32,
) -> Result<(u64, Vec<cu::CUgraph>), String> {
    // SAFETY: `s` is capturing; every out-pointer is valid; the node is added to the graph
    // under capture at its current dependencies, which are then set to the node.
    unsafe {
        let mut status = cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
        let mut id = 0u64;
        let mut graph = std::ptr::null_mut();
        let mut deps: *const cu::CUgraphNode = std::ptr::null();
        let mut edges: *const cu::CUgraphEdgeData = std::ptr::null();
        let mut n = 0usize;
        let r = cu::cuStreamGetCaptureInfo_v3(s, &mut status, &mut id, &mut graph, &mut deps, &mut edges, &mut n);
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(format!("cuStreamGetCaptureInfo_v3: {r:?}"));
        }
        let mut h = 0u64;
        let r = cu::cuGraphConditionalHandleCreate(&mut h, graph, ctx, default, cu::CU_GRAPH_COND_ASSIGN_DEFAULT);
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(format!("cuGraphConditionalHandleCreate: {r:?}"));
        }
        let mut p: cu::CUgraphNodeParams = std::mem::zeroed();
        p.type_ = cu::CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
        p.__bindgen_anon_1.conditional =
            cu::CUDA_CONDITIONAL_NODE_PARAMS { handle: h, type_: ty, size, phGraph_out: std::ptr::null_mut(), ctx };
        let mut node = std::ptr::null_mut();
        let r = cu::cuGraphAddNode_v2(&mut node, graph, deps, edges, n, &mut p);
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(format!("cuGraphAddNode_v2 (conditional {ty:?}, {size} bodies): {r:?}"));
        }
        let bodies = std::slice::from_raw_parts(p.__bindgen_anon_1.conditional.phGraph_out, size as usize).to_vec();
        let r = cu::cuStreamUpdateCaptureDependencies_v2(
            s,
            &mut node,
            std::ptr::null(),
            1,
            cu::CUstreamUpdateCaptureDependencies_flags::CU_STREAM_SET_CAPTURE_DEPENDENCIES as u32,
        );
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(format!("cuStreamUpdateCaptureDependencies_v2: {r:?}"));
        }
        Ok((h, bodies))
    }
}

/// Records `body` into graph `g` through side stream `b`.
unsafe fn into_body(b: cu::CUstream, g: cu::CUgraph, body: impl FnOnce(cu::CUstream)) -> Result<(), String> {
    // SAFETY: `g` is a conditional node's body graph; `b` is an idle stream.
    unsafe {
        let r = cu::cuStreamBeginCaptureToGraph(
            b,
            g,
            std::ptr::null(),
            std::ptr::null(),
            0,
            cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL,
        );
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(format!("cuStreamBeginCaptureToGraph: {r:?}"));
        }
        body(b);
        let mut out = std::ptr::null_mut();
        let r = cu::cuStreamEndCapture(b, &mut out);
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(format!("cuStreamEndCapture (body): {r:?}"));
        }
        Ok(())
    }
}

unsafe fn instantiate(s: cu::CUstream) -> Result<cu::CUgraphExec, String> {
    // SAFETY: `s` is capturing; out-pointers valid.
    unsafe {
        let mut g = std::ptr::null_mut();
        let r = cu::cuStreamEndCapture(s, &mut g);
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(format!("cuStreamEndCapture: {r:?}"));
        }
        let mut e = std::ptr::null_mut();
        let r = cu::cuGraphInstantiateWithFlags(&mut e, g, 0);
        cu::cuGraphDestroy(g);
        if r != cu::CUresult::CUDA_SUCCESS {
            return Err(format!("cuGraphInstantiateWithFlags: {r:?}"));
        }
        Ok(e)
    }
}

unsafe fn read_u32(p: u64) -> u32 {
    let mut v = 0u32;
    // SAFETY: `p` is a live 4-byte device allocation.
    unsafe { ok(cu::cuMemcpyDtoH_v2(&mut v as *mut u32 as *mut c_void, p, 4), "read") };
    v
}

unsafe fn write_u32(p: u64, v: u32) {
    // SAFETY: as above.
    unsafe { ok(cu::cuMemcpyHtoD_v2(p, &v as *const u32 as *const c_void, 4), "write") };
}

fn median(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(|a, b| a.total_cmp(b));
    let at = |p: f64| v[((v.len() - 1) as f64 * p).round() as usize];
    (at(0.5), at(0.1), at(0.9))
}

const CHAIN: usize = 10;
const N: u32 = 4096;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let ptx_path = args.get(1).expect("usage: conditional_probe CONTROL_PTX");
    let steps: Vec<u32> = args
        .iter()
        .position(|a| a == "--steps")
        .and_then(|i| args.get(i + 1))
        .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
        .unwrap_or_else(|| vec![16, 128, 1024]);
    let ctx = CudaContext::new(0).expect("GPU 0");
    ctx.bind_to_thread().expect("bind");
    let mut version = 0;
    // SAFETY: raw driver calls on handles made here; every buffer outlives its graphs.
    unsafe {
        cu::cuDriverGetVersion(&mut version);
        println!("driver API version {version}; device {}", ctx.name().unwrap_or_default());
        let mut cuctx = std::ptr::null_mut();
        ok(cu::cuCtxGetCurrent(&mut cuctx), "ctx");
        // 1. Loading.
        let ptx = CString::new(std::fs::read_to_string(ptx_path).expect("read the PTX")).expect("PTX text");
        let mut control = std::ptr::null_mut();
        let r = cu::cuModuleLoadData(&mut control, ptx.as_ptr() as *const c_void);
        println!("load control.ptx with cuModuleLoadData: {r:?}");
        if r != cu::CUresult::CUDA_SUCCESS {
            return;
        }
        let chain_src = CString::new(capture_core::kernels::CHAIN_PTX).expect("PTX text");
        let mut chain = std::ptr::null_mut();
        ok(cu::cuModuleLoadData(&mut chain, chain_src.as_ptr() as *const c_void), "chain");
        let f = |m: cu::CUmodule, name: &str| {
            let mut h = std::ptr::null_mut();
            let c = CString::new(name).expect("name");
            ok(cu::cuModuleGetFunction(&mut h, m, c.as_ptr()), name);
            h
        };
        let fns = Fns {
            incr: f(chain, "incr_f32"),
            step_below: f(control, "cond_step_below"),
            from_flag: f(control, "cond_from_flag"),
            zero: f(control, "zero_u32"),
        };
        let mut s = std::ptr::null_mut();
        let mut b = std::ptr::null_mut();
        ok(cu::cuStreamCreate(&mut s, 1), "stream");
        ok(cu::cuStreamCreate(&mut b, 1), "side stream");
        let mut x = 0u64;
        let mut step = 0u64;
        let mut flag = 0u64;
        let mut count = 0u64;
        ok(cu::cuMemAlloc_v2(&mut x, N as usize * 4), "x");
        ok(cu::cuMemAlloc_v2(&mut step, 4), "step");
        ok(cu::cuMemAlloc_v2(&mut flag, 4), "flag");
        ok(cu::cuMemAlloc_v2(&mut count, N as usize * 4), "count");
        let mut n = N;
        // The body's work: CHAIN dependent kernels on x.
        let work = |st: cu::CUstream, x: &mut u64, n: &mut u32| {
            for _ in 0..CHAIN {
                ok(launch(fns.incr, st, 16, &mut [x as *mut u64 as *mut c_void, n as *mut u32 as *mut c_void]), "incr");
            }
        };
        // 2. WHILE, K steps: zero the counter, then the loop; the body ends with the test.
        let build_while_unrolled =
            |k: u32, unroll: u32, x: &mut u64, step: &mut u64, n: &mut u32| -> Result<cu::CUgraphExec, String> {
                ok(
                    cu::cuStreamBeginCapture_v2(s, cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
                    "begin",
                );
                ok(launch(fns.zero, s, 1, &mut [step as *mut u64 as *mut c_void]), "zero");
                let (h, bodies) =
                    match conditional(cuctx, s, cu::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE, 1, 1) {
                        Ok(v) => v,
                        Err(e) => {
                            let mut g = std::ptr::null_mut();
                            cu::cuStreamEndCapture(s, &mut g);
                            return Err(e);
                        }
                    };
                let mut h = h;
                let mut k = k;
                into_body(b, bodies[0], |bs| {
                    for _ in 0..unroll {
                        work(bs, x, n);
                        ok(
                            launch(
                                fns.step_below,
                                bs,
                                1,
                                &mut [
                                    step as *mut u64 as *mut c_void,
                                    &mut k as *mut u32 as *mut c_void,
                                    &mut h as *mut u64 as *mut c_void,
                                ],
                            ),
                            "step_below",
                        );
                    }
                })?;
                instantiate(s)
            };
        let build_while = |k: u32, x: &mut u64, step: &mut u64, n: &mut u32| build_while_unrolled(k, 1, x, step, n);
        // The body alone as a graph (host-driven loop): CHAIN kernels and the counter step.
        let mut one = 1u32;
        ok(cu::cuStreamBeginCapture_v2(s, cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "begin");
        work(s, &mut x, &mut n);
        // (host-driven: the counter is the flag the host reads; a one-thread kernel as in the body)
        ok(launch(fns.zero, s, 1, &mut [&mut flag as *mut u64 as *mut c_void]), "flag");
        let body_exec = instantiate(s).expect("body graph");
        let _ = &mut one;

        println!("\n| form | result |\n| --- | --- |");
        for &k in &[1u32, 5, 64] {
            ok(cu::cuMemsetD32_v2(x, 0, N as usize), "x");
            match build_while(k, &mut x, &mut step, &mut n) {
                Ok(e) => {
                    ok(cu::cuGraphLaunch(e, s), "launch");
                    let r = cu::cuStreamSynchronize(s);
                    let mut v = vec![0f32; N as usize];
                    cu::cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, x, N as usize * 4);
                    println!(
                        "| WHILE, K = {k} (default 1, ASSIGN_DEFAULT) | sync {r:?}; counter {} (want {k}); x {} (want {}) |",
                        read_u32(step),
                        v[0],
                        k as usize * CHAIN
                    );
                    cu::cuGraphExecDestroy(e);
                }
                Err(e) => println!("| WHILE, K = {k} | REFUSED: {e} |"),
            }
        }
        // 3. IF: body runs when the flag says so; SWITCH with 2 bodies; IF nested in WHILE.
        for (ty, size, name) in [
            (cu::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF, 1u32, "IF"),
            (cu::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF, 2u32, "IF/ELSE"),
            (cu::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_SWITCH, 3u32, "SWITCH of 3"),
        ] {
            ok(cu::cuStreamBeginCapture_v2(s, cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "begin");
            let built = (|| -> Result<cu::CUgraphExec, String> {
                let (mut h, bodies) = conditional(cuctx, s, ty, size, 0).inspect_err(|_| {
                    let mut g = std::ptr::null_mut();
                    cu::cuStreamEndCapture(s, &mut g);
                })?;
                // The condition is set by a kernel before the node... it must be in the same
                // graph: a kernel in front of the node, recorded before it. Here: a second
                // capture step is not possible after the node, so the setter goes first in
                // body 0 of an outer WHILE? Keep it simple: the default value (0) decides,
                // and each body adds a distinct amount.
                for (i, g) in bodies.iter().enumerate() {
                    into_body(b, *g, |bs| {
                        for _ in 0..=i {
                            ok(
                                launch(
                                    fns.incr,
                                    bs,
                                    16,
                                    &mut [&mut x as *mut u64 as *mut c_void, &mut n as *mut u32 as *mut c_void],
                                ),
                                "incr",
                            );
                        }
                    })?;
                }
                let _ = &mut h;
                instantiate(s)
            })();
            match built {
                Ok(e) => {
                    ok(cu::cuMemsetD32_v2(x, 0, N as usize), "x");
                    ok(cu::cuGraphLaunch(e, s), "launch");
                    let r = cu::cuStreamSynchronize(s);
                    let mut v = vec![0f32; 1];
                    cu::cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, x, 4);
                    println!("| {name}, condition left at its default 0 | sync {r:?}; x = {} (body i adds i + 1; 0 = none ran) |", v[0]);
                    cu::cuGraphExecDestroy(e);
                }
                Err(e) => println!("| {name} | REFUSED: {e} |"),
            }
        }
        // IF steered by a kernel from device data, nested in a WHILE of 4 steps.
        ok(cu::cuStreamBeginCapture_v2(s, cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "begin");
        let nested = (|| -> Result<cu::CUgraphExec, String> {
            ok(launch(fns.zero, s, 1, &mut [&mut step as *mut u64 as *mut c_void]), "zero");
            let (mut hw, wb) = conditional(cuctx, s, cu::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_WHILE, 1, 1)?;
            let mut err = None;
            into_body(b, wb[0], |bs| {
                // The IF's condition from `flag` (set by the host before the launch).
                let r = (|| -> Result<(), String> {
                    let mut st = cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
                    let mut id = 0u64;
                    let mut g = std::ptr::null_mut();
                    let mut deps: *const cu::CUgraphNode = std::ptr::null();
                    let mut edges: *const cu::CUgraphEdgeData = std::ptr::null();
                    let mut nd = 0usize;
                    cu::cuStreamGetCaptureInfo_v3(bs, &mut st, &mut id, &mut g, &mut deps, &mut edges, &mut nd);
                    let mut hi = 0u64;
                    let r = cu::cuGraphConditionalHandleCreate(&mut hi, g, cuctx, 0, cu::CU_GRAPH_COND_ASSIGN_DEFAULT);
                    if r != cu::CUresult::CUDA_SUCCESS {
                        return Err(format!("nested handle: {r:?}"));
                    }
                    ok(
                        launch(
                            fns.from_flag,
                            bs,
                            1,
                            &mut [&mut flag as *mut u64 as *mut c_void, &mut hi as *mut u64 as *mut c_void],
                        ),
                        "from_flag",
                    );
                    let mut st2 = cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
                    cu::cuStreamGetCaptureInfo_v3(bs, &mut st2, &mut id, &mut g, &mut deps, &mut edges, &mut nd);
                    let mut p: cu::CUgraphNodeParams = std::mem::zeroed();
                    p.type_ = cu::CUgraphNodeType::CU_GRAPH_NODE_TYPE_CONDITIONAL;
                    p.__bindgen_anon_1.conditional = cu::CUDA_CONDITIONAL_NODE_PARAMS {
                        handle: hi,
                        type_: cu::CUgraphConditionalNodeType::CU_GRAPH_COND_TYPE_IF,
                        size: 1,
                        phGraph_out: std::ptr::null_mut(),
                        ctx: cuctx,
                    };
                    let mut node = std::ptr::null_mut();
                    let r = cu::cuGraphAddNode_v2(&mut node, g, deps, edges, nd, &mut p);
                    if r != cu::CUresult::CUDA_SUCCESS {
                        return Err(format!("nested IF node: {r:?}"));
                    }
                    let ib = *p.__bindgen_anon_1.conditional.phGraph_out;
                    cu::cuStreamUpdateCaptureDependencies_v2(bs, &mut node, std::ptr::null(), 1, 1);
                    // The IF's body, through a third stream.
                    let mut c3 = std::ptr::null_mut();
                    cu::cuStreamCreate(&mut c3, 1);
                    into_body(c3, ib, |cs| {
                        ok(
                            launch(
                                fns.incr,
                                cs,
                                16,
                                &mut [&mut x as *mut u64 as *mut c_void, &mut n as *mut u32 as *mut c_void],
                            ),
                            "incr",
                        );
                    })?;
                    let mut four = 4u32;
                    ok(
                        launch(
                            fns.step_below,
                            bs,
                            1,
                            &mut [
                                &mut step as *mut u64 as *mut c_void,
                                &mut four as *mut u32 as *mut c_void,
                                &mut hw as *mut u64 as *mut c_void,
                            ],
                        ),
                        "step",
                    );
                    Ok(())
                })();
                err = r.err();
            })?;
            if let Some(e) = err {
                return Err(e);
            }
            instantiate(s)
        })();
        match nested {
            Ok(e) => {
                for fl in [1u32, 0] {
                    ok(cu::cuMemsetD32_v2(x, 0, N as usize), "x");
                    write_u32(flag, fl);
                    ok(cu::cuGraphLaunch(e, s), "launch");
                    let r = cu::cuStreamSynchronize(s);
                    let mut v = vec![0f32; 1];
                    cu::cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, x, 4);
                    println!(
                        "| IF (flag = {fl}) nested in a WHILE of 4 | sync {r:?}; counter {}; x = {} (want {}) |",
                        read_u32(step),
                        v[0],
                        4 * fl
                    );
                }
            }
            Err(e) => {
                let mut g = std::ptr::null_mut();
                cu::cuStreamEndCapture(s, &mut g);
                println!("| IF nested in WHILE | REFUSED: {e} |");
            }
        }

        // 4. Per-step time: (a) a launch of the body graph per step and a host read of a
        // device word each step; (b) a launch per step, one synchronize at the end; (c) one
        // launch of a WHILE graph of K steps.
        println!("\nper step (µs): median [p10, p90] of 15 runs; body = {CHAIN} kernels + 1 one-thread kernel");
        println!(
            "| K | (a) launch + read each step | (b) launch each step | (c) one WHILE launch | (a)/(c) | (b)/(c) |"
        );
        println!("| --- | --- | --- | --- | --- | --- |");
        for &k in &steps {
            let w = build_while(k, &mut x, &mut step, &mut n).expect("WHILE graph");
            let (mut ta, mut tb, mut tc) = (Vec::new(), Vec::new(), Vec::new());
            for rep in 0..17 {
                let t = Instant::now();
                for _ in 0..k {
                    ok(cu::cuGraphLaunch(body_exec, s), "launch");
                    ok(cu::cuStreamSynchronize(s), "sync");
                    let _ = read_u32(flag);
                }
                let a = t.elapsed().as_secs_f64() * 1e6 / k as f64;
                let t = Instant::now();
                for _ in 0..k {
                    ok(cu::cuGraphLaunch(body_exec, s), "launch");
                }
                ok(cu::cuStreamSynchronize(s), "sync");
                let bb = t.elapsed().as_secs_f64() * 1e6 / k as f64;
                let t = Instant::now();
                ok(cu::cuGraphLaunch(w, s), "launch");
                ok(cu::cuStreamSynchronize(s), "sync");
                let c = t.elapsed().as_secs_f64() * 1e6 / k as f64;
                if rep >= 2 {
                    ta.push(a);
                    tb.push(bb);
                    tc.push(c);
                }
            }
            assert_eq!(read_u32(step), k, "the WHILE ran K steps");
            let (a, a1, a9) = median(ta);
            let (bm, b1, b9) = median(tb);
            let (c, c1, c9) = median(tc);
            println!(
                "| {k} | {a:.2} [{a1:.2}, {a9:.2}] | {bm:.2} [{b1:.2}, {b9:.2}] | {c:.2} [{c1:.2}, {c9:.2}] | {:.2}x | {:.2}x |",
                a / c,
                bm / c
            );
            cu::cuGraphExecDestroy(w);
        }
        // Where the WHILE's cost goes: 8 steps per iteration, and a plain graph of all K
        // steps (no conditional node) launched once.
        println!("\nper step (µs), median [p10, p90] of 15 runs");
        println!("| K | (b) launch each step | WHILE, 1 step per iteration | WHILE, 8 steps per iteration | one plain graph of K steps |");
        println!("| --- | --- | --- | --- | --- |");
        for &k in &steps {
            let w1 = build_while(k, &mut x, &mut step, &mut n).expect("WHILE");
            let w8 = build_while_unrolled(k, 8, &mut x, &mut step, &mut n).expect("WHILE x8");
            ok(cu::cuStreamBeginCapture_v2(s, cu::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), "begin");
            for _ in 0..k {
                work(s, &mut x, &mut n);
                ok(launch(fns.zero, s, 1, &mut [&mut flag as *mut u64 as *mut c_void]), "flag");
            }
            let plain = instantiate(s).expect("plain graph");
            let mut t = [Vec::new(), Vec::new(), Vec::new(), Vec::new()];
            for rep in 0..17 {
                let t0 = Instant::now();
                for _ in 0..k {
                    ok(cu::cuGraphLaunch(body_exec, s), "launch");
                }
                ok(cu::cuStreamSynchronize(s), "sync");
                let e0 = t0.elapsed();
                let one = |g| {
                    let t = Instant::now();
                    ok(cu::cuGraphLaunch(g, s), "launch");
                    ok(cu::cuStreamSynchronize(s), "sync");
                    t.elapsed()
                };
                let (e1, e2, e3) = (one(w1), one(w8), one(plain));
                if rep >= 2 {
                    for (v, e) in t.iter_mut().zip([e0, e1, e2, e3]) {
                        v.push(e.as_secs_f64() * 1e6 / k as f64);
                    }
                }
            }
            assert_eq!(read_u32(step), k, "the unrolled WHILE ran K steps");
            let cells: Vec<String> = t
                .into_iter()
                .map(|v| {
                    let (m, a, b) = median(v);
                    format!("{m:.2} [{a:.2}, {b:.2}]")
                })
                .collect();
            println!("| {k} | {} |", cells.join(" | "));
            cu::cuGraphExecDestroy(w1);
            cu::cuGraphExecDestroy(w8);
            cu::cuGraphExecDestroy(plain);
        }
    }
}
