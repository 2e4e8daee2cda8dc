//! Statistics, results and their tables; the interleaved runner.

#[allow(unused_imports)]
use super::*;

#[derive(Copy, Clone, Debug)]
pub(crate) struct Stat {
    pub(crate) med: f64,
    pub(crate) p10: f64,
    pub(crate) p90: f64,
    pub(crate) reps: usize,
}

pub(crate) fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let pos = q * (sorted.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

pub(crate) fn stat(xs: &[f64]) -> Stat {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    Stat { med: quantile(&s, 0.5), p10: quantile(&s, 0.1), p90: quantile(&s, 0.9), reps: s.len() }
}

pub(crate) struct Row {
    pub(crate) meas: &'static str,
    pub(crate) n: usize,
    pub(crate) imp: &'static str,
    pub(crate) st: Stat,
}

#[derive(Default)]
pub(crate) struct Results {
    pub(crate) rows: Vec<Row>,
}

impl Results {
    pub(crate) fn push(&mut self, meas: &'static str, n: usize, imp: &'static str, xs: &[f64]) {
        if !xs.is_empty() {
            self.rows.push(Row { meas, n, imp, st: stat(xs) });
        }
    }
    pub(crate) fn get(&self, meas: &str, n: usize, imp: &str) -> Option<Stat> {
        self.rows.iter().find(|r| r.meas == meas && r.n == n && r.imp == imp).map(|r| r.st)
    }
    pub(crate) fn csv(&self) -> String {
        let mut s = String::from("measurement,n,impl,median_us,p10_us,p90_us,reps\n");
        for r in &self.rows {
            let _ = writeln!(
                s,
                "{},{},{},{:.4},{:.4},{:.4},{}",
                r.meas, r.n, r.imp, r.st.med, r.st.p10, r.st.p90, r.st.reps
            );
        }
        s
    }
}

pub(crate) fn us(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e6
}

pub(crate) fn fmt_stat(s: &Stat) -> String {
    format!("{:>10.3} [{:>9.3}, {:>9.3}]", s.med, s.p10, s.p90)
}

/// Prints one measurement: per N, each implementation's median [p10, p90] and lib/raw.
pub(crate) fn print_table(res: &Results, meas: &'static str, unit: &str, ns: &[usize], imps: &[&'static str]) {
    let mut head = format!("\n{meas} ({unit}; median [p10, p90])\n{:>7}", "N");
    for i in imps {
        let _ = write!(head, " {:>33}", i);
    }
    head.push_str("   lib/raw");
    println!("{head}");
    for &n in ns {
        let mut line = format!("{n:>7}");
        for i in imps {
            match res.get(meas, n, i) {
                Some(s) => {
                    let _ = write!(line, " {:>33}", fmt_stat(&s));
                }
                None => {
                    let _ = write!(line, " {:>33}", "-");
                }
            }
        }
        if let (Some(l), Some(r)) = (res.get(meas, n, "lib"), res.get(meas, n, "raw")) {
            let _ = write!(line, "   {:>7.4}", l.med / r.med);
        }
        println!("{line}");
    }
    let _ = std::io::stdout().flush();
}

/// One implementation's repetition: returns its timed values (µs), in a fixed order.
pub(crate) type Body<'x> = Box<dyn FnMut(usize) -> BResult<Vec<f64>> + 'x>;

/// Runs `warm` then `reps` repetitions of every body, alternating the order (forward on even
/// repetitions, backward on odd), and returns `[body][value] -> samples`.
pub(crate) fn interleave(warm: usize, reps: usize, bodies: &mut [Body<'_>]) -> BResult<Vec<Vec<Vec<f64>>>> {
    let mut out: Vec<Vec<Vec<f64>>> = (0..bodies.len()).map(|_| Vec::new()).collect();
    for rep in 0..warm + reps {
        let order: Vec<usize> =
            if rep % 2 == 0 { (0..bodies.len()).collect() } else { (0..bodies.len()).rev().collect() };
        for b in order {
            let vals = (bodies[b])(rep)?;
            if rep >= warm {
                if out[b].is_empty() {
                    out[b] = vec![Vec::with_capacity(reps); vals.len()];
                }
                for (slot, v) in out[b].iter_mut().zip(vals) {
                    slot.push(v);
                }
            }
        }
    }
    Ok(out)
}
