//! Benchmark families: eager launches, capture and instantiate, per-operation bookkeeping,
//! capture alone.

#[allow(unused_imports)]
use super::*;

pub(crate) fn eager(
    a: &Args,
    res: &mut Results,
    lib: &Lib<'_>,
    s: &mut Stream,
    raw: Option<&Raw>,
    n: usize,
) -> BResult<()> {
    let lib_body: Body<'_> = Box::new(|_| {
        s.synchronize()?;
        let t0 = Instant::now();
        lib.chain(s, n, ELEMS)?;
        let enq = us(t0);
        s.synchronize()?;
        Ok(vec![us(t0) / n as f64, enq / n as f64])
    });
    let raw_body = |bind: bool| -> Body<'_> {
        let r = raw.expect("raw");
        Box::new(move |_| {
            r.sync()?;
            let t0 = Instant::now();
            for _ in 0..n {
                if bind {
                    r.bind()?;
                }
                r.launch(ELEMS)?;
            }
            let enq = us(t0);
            r.sync()?;
            Ok(vec![us(t0) / n as f64, enq / n as f64])
        })
    };
    let mut b = bodies(lib_body, raw.map(|_| (raw_body(false), raw_body(true))));
    let (w, reps) = a.reps_other(n);
    let out = interleave(w, reps, &mut b)?;
    for (imp, vals) in IMPS.iter().zip(&out) {
        res.push("eager", n, imp, &vals[0]);
        res.push("eager_enqueue", n, imp, &vals[1]);
    }
    Ok(())
}

pub(crate) fn capture_instantiate(
    a: &Args,
    res: &mut Results,
    lib: &Lib<'_>,
    s: &mut Stream,
    raw: Option<&Raw>,
    n: usize,
) -> BResult<()> {
    let lib_body: Body<'_> = Box::new(|_| {
        s.synchronize()?;
        let t0 = Instant::now();
        let mut g = s.capture()?;
        lib.chain(&mut g, n, ELEMS)?;
        let t1 = Instant::now();
        let (graph, _report) = g.finish()?;
        let t2 = Instant::now();
        drop(graph);
        Ok(vec![(t1 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6, (t2 - t0).as_secs_f64() * 1e6])
    });
    let raw_body = |bind: bool| -> Body<'_> {
        let r = raw.expect("raw");
        Box::new(move |_| {
            r.sync()?;
            let t0 = Instant::now();
            r.begin()?;
            for _ in 0..n {
                if bind {
                    r.bind()?;
                }
                r.launch(ELEMS)?;
            }
            let t1 = Instant::now();
            let g = r.end()?;
            let e = r.instantiate(g)?;
            let t2 = Instant::now();
            r.destroy_exec(e)?;
            r.destroy_graph(g)?;
            Ok(vec![(t1 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6, (t2 - t0).as_secs_f64() * 1e6])
        })
    };
    let mut b = bodies(lib_body, raw.map(|_| (raw_body(false), raw_body(true))));
    let (w, reps) = a.reps_other(n);
    let out = interleave(w, reps, &mut b)?;
    for (imp, vals) in IMPS.iter().zip(&out) {
        res.push("record_ci", n, imp, &vals[0]);
        res.push("instantiate", n, imp, &vals[1]);
        res.push("capture_instantiate", n, imp, &vals[2]);
    }
    Ok(())
}

/// Recording alone, with many repetitions: begin capture + N captured launches (timed), then
/// end + destroy (not timed; the library drops its guard). The bookkeeping per captured op
/// is the paired difference library − raw, repetition by repetition, over N.
pub(crate) fn bookkeeping(
    a: &Args,
    res: &mut Results,
    lib: &Lib<'_>,
    s: &mut Stream,
    raw: Option<&Raw>,
    n: usize,
) -> BResult<()> {
    let lib_body: Body<'_> = Box::new(|_| {
        let t0 = Instant::now();
        let mut g = s.capture()?;
        lib.chain(&mut g, n, ELEMS)?;
        let t = us(t0);
        drop(g);
        Ok(vec![t])
    });
    let raw_body = |bind: bool| -> Body<'_> {
        let r = raw.expect("raw");
        Box::new(move |_| {
            let t0 = Instant::now();
            r.begin()?;
            for _ in 0..n {
                if bind {
                    r.bind()?;
                }
                r.launch(ELEMS)?;
            }
            let t = us(t0);
            r.destroy_graph(r.end()?)?;
            Ok(vec![t])
        })
    };
    let mut b = bodies(lib_body, raw.map(|_| (raw_body(false), raw_body(true))));
    let (w, reps) = a.reps(Fam::Bookkeeping, n);
    let out = interleave(w, reps, &mut b);
    drop(b);
    let out = out?;
    let _ = s.context().take_abandoned_reports();
    for (imp, vals) in IMPS.iter().zip(&out) {
        res.push("record", n, imp, &vals[0]);
    }
    if out.len() == 3 {
        for (k, imp) in [(0usize, "lib"), (2, "raw+bind")] {
            let d: Vec<f64> = out[k][0].iter().zip(&out[1][0]).map(|(l, r)| (l - r) / n as f64).collect();
            res.push("bookkeeping_per_op", n, imp, &d);
        }
    }
    Ok(())
}

/// Capture only: begin + N + end + destroy the graph. The library's way to end a capture
/// without instantiating is dropping the guard (its abandon path, which also destroys the graph).
pub(crate) fn capture_only(
    a: &Args,
    res: &mut Results,
    lib: &Lib<'_>,
    s: &mut Stream,
    raw: Option<&Raw>,
    n: usize,
) -> BResult<()> {
    let lib_body: Body<'_> = Box::new(|_| {
        s.synchronize()?;
        let t0 = Instant::now();
        let mut g = s.capture()?;
        lib.chain(&mut g, n, ELEMS)?;
        drop(g);
        Ok(vec![us(t0)])
    });
    let raw_body: Option<(Body<'_>, Body<'_>)> = raw.map(|r| {
        let b: Body<'_> = Box::new(move |_| {
            r.sync()?;
            let t0 = Instant::now();
            let g = r.capture_chain(n, ELEMS, false)?;
            r.destroy_graph(g)?;
            Ok(vec![us(t0)])
        });
        (b, Box::new(|_| Ok(vec![])) as Body<'_>)
    });
    let mut b = bodies(lib_body, raw_body);
    let (w, reps) = a.reps_other(n);
    let out = interleave(w, reps, &mut b);
    drop(b);
    for (imp, vals) in IMPS.iter().zip(&out?) {
        if let Some(v) = vals.first() {
            res.push("capture", n, imp, v);
        }
    }
    // The abandoned captures' reports are kept by the context (at most 64): clear them.
    let _ = s.context().take_abandoned_reports();
    Ok(())
}
