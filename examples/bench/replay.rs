//! Benchmark families: replay, update and re-instantiation.

#[allow(unused_imports)]
use super::*;

pub(crate) fn replay(
    a: &Args,
    res: &mut Results,
    lib: &Lib<'_>,
    s: &mut Stream,
    raw: Option<&Raw>,
    n: usize,
) -> BResult<()> {
    let k = (20_000 / n).clamp(2, 50);
    let (w, reps) = a.reps(Fam::Replay, n);
    let graph = lib.graph(s, n)?;
    let raw_ge = match raw {
        Some(r) => {
            let g = r.capture_chain(n, ELEMS, false)?;
            Some((g, r.instantiate(g)?))
        }
        None => None,
    };
    {
        let lib_body: Body<'_> = Box::new(|_| {
            s.synchronize()?;
            let t0 = Instant::now();
            for _ in 0..k {
                graph.launch(s)?;
                s.synchronize()?;
            }
            let sync = us(t0) / k as f64;
            let t0 = Instant::now();
            for _ in 0..k {
                graph.launch(s)?;
            }
            let enq = us(t0) / k as f64;
            s.synchronize()?;
            Ok(vec![sync, us(t0) / k as f64, enq])
        });
        let raw_body = raw.zip(raw_ge).map(|(r, (_, e))| {
            let b: Body<'_> = Box::new(move |_| {
                r.sync()?;
                let t0 = Instant::now();
                for _ in 0..k {
                    r.graph_launch(e)?;
                    r.sync()?;
                }
                let sync = us(t0) / k as f64;
                let t0 = Instant::now();
                for _ in 0..k {
                    r.graph_launch(e)?;
                }
                let enq = us(t0) / k as f64;
                r.sync()?;
                Ok(vec![sync, us(t0) / k as f64, enq])
            });
            (b, Box::new(|_| Ok(vec![])) as Body<'_>)
        });
        let mut b = bodies(lib_body, raw_body);
        let out = interleave(w, reps, &mut b)?;
        for (imp, vals) in IMPS.iter().zip(&out) {
            if vals.len() == 3 {
                res.push("replay_sync", n, imp, &vals[0]);
                res.push("replay_nosync", n, imp, &vals[1]);
                res.push("replay_enqueue", n, imp, &vals[2]);
            }
        }
    }
    if let (Some(r), Some((g, e))) = (raw, raw_ge) {
        r.destroy_exec(e)?;
        r.destroy_graph(g)?;
    }
    Ok(())
}

/// Re-capture with one changed kernel parameter (the first launch's element count flips
/// between 256 and 255): `finish_update` (in place) vs `finish` + drop of the old graph.
pub(crate) fn update(
    a: &Args,
    res: &mut Results,
    lib: &Lib<'_>,
    s: &mut Stream,
    raw: Option<&Raw>,
    n: usize,
) -> BResult<()> {
    let mut g_upd = lib.graph(s, n)?;
    let mut g_new = Some(lib.graph(s, n)?);
    let mut raw_state = match raw {
        Some(r) => {
            let gu = r.capture_chain(n, ELEMS, false)?;
            let eu = r.instantiate(gu)?;
            let gn = r.capture_chain(n, ELEMS, false)?;
            let en = r.instantiate(gn)?;
            Some([(gu, eu), (gn, en)])
        }
        None => None,
    };
    {
        let lib_body: Body<'_> = Box::new(|rep| {
            let first = ELEMS - (rep as u32 + 1) % 2;
            s.synchronize()?;
            let t0 = Instant::now();
            let mut g = s.capture()?;
            lib.chain(&mut g, n, first)?;
            let t1 = Instant::now();
            let (how, _report) = g.finish_update(&mut g_upd)?;
            let t2 = Instant::now();
            if how != GraphUpdate::InPlace {
                return Err(format!("finish_update did not update in place ({how:?})").into());
            }
            let upd = [(t2 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6];
            s.synchronize()?;
            let t0 = Instant::now();
            let mut g = s.capture()?;
            lib.chain(&mut g, n, first)?;
            let t1 = Instant::now();
            let (fresh, _report) = g.finish()?;
            g_new = Some(fresh); // drops the old graph (exec + graph destroy)
            let t2 = Instant::now();
            Ok(vec![upd[0], upd[1], (t2 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6])
        });
        let raw_body = raw.zip(raw_state.as_mut()).map(|(r, st)| {
            let b: Body<'_> = Box::new(move |rep| {
                let first = ELEMS - (rep as u32 + 1) % 2;
                r.sync()?;
                let t0 = Instant::now();
                r.begin()?;
                for i in 0..n {
                    r.launch(if i == 0 { first } else { ELEMS })?;
                }
                let t1 = Instant::now();
                let g = r.end()?;
                r.exec_update(st[0].1, g)?;
                r.destroy_graph(std::mem::replace(&mut st[0].0, g))?;
                let t2 = Instant::now();
                let upd = [(t2 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6];
                r.sync()?;
                let t0 = Instant::now();
                r.begin()?;
                for i in 0..n {
                    r.launch(if i == 0 { first } else { ELEMS })?;
                }
                let t1 = Instant::now();
                let g = r.end()?;
                let e = r.instantiate(g)?;
                let (og, oe) = std::mem::replace(&mut st[1], (g, e));
                r.destroy_exec(oe)?;
                r.destroy_graph(og)?;
                let t2 = Instant::now();
                Ok(vec![upd[0], upd[1], (t2 - t0).as_secs_f64() * 1e6, (t2 - t1).as_secs_f64() * 1e6])
            });
            (b, Box::new(|_| Ok(vec![])) as Body<'_>)
        });
        let mut b = bodies(lib_body, raw_body);
        let (w, reps) = a.reps_other(n);
        let out = interleave(w, reps, &mut b)?;
        for (imp, vals) in IMPS.iter().zip(&out) {
            if vals.len() == 4 {
                res.push("update", n, imp, &vals[0]);
                res.push("update_step", n, imp, &vals[1]);
                res.push("reinstantiate", n, imp, &vals[2]);
                res.push("reinstantiate_step", n, imp, &vals[3]);
            }
        }
    }
    if let (Some(r), Some(st)) = (raw, raw_state) {
        for (g, e) in st {
            r.destroy_exec(e)?;
            r.destroy_graph(g)?;
        }
    }
    drop(g_new);
    Ok(())
}
