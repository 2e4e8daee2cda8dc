#!/usr/bin/env python3
"""The chain benchmark of `examples/bench.rs`, in PyTorch (impl=torch).

A chain of N tiny in-place ops (`x.add_(1)` on a 256-float CUDA tensor, one kernel each) for
N = 10, 100, 1,000, 10,000, measured like the Rust benchmark:

  eager                per op: N ops + stream synchronize, / N
  eager_enqueue        per op: the N op calls alone (before the synchronize), / N
  record               capture_begin + N captured ops
  capture              capture_begin + N ops + capture_end, no instantiate (CUDAGraph(keep_graph=True))
  instantiate          CUDAGraph.instantiate() alone (keep_graph=True)
  capture_instantiate  capture_begin + N ops + capture_end (which instantiates, keep_graph=False)
  replay_sync          per launch: g.replay() + synchronize
  replay_nosync        per launch: K replays + one synchronize, / K
  replay_enqueue       per launch: the K replay() calls alone, / K

Clock: host wall clock (time.perf_counter), after synchronizing where GPU work is included:
what is timed is host-side cost (Python + PyTorch dispatch + driver), as in the Rust
benchmark. Capture uses capture_begin/capture_end directly on a side stream (the
`torch.cuda.graph` context manager would add a device synchronize, gc.collect() and
empty_cache() to every capture). Each value: median, p10, p90 over the repetitions, after
warm-up. CSV columns: measurement,n,impl,median_us,p10_us,p90_us,reps.

Usage: python3 torch_chain.py [--csv PATH] [--reps R] [--ns 10,100,1000,10000] [--quick]
"""

import argparse
import sys
import time

ELEMS = 256


def quantile(xs, q):
    s = sorted(xs)
    if not s:
        return float("nan")
    pos = q * (len(s) - 1)
    lo, hi = int(pos), min(int(pos) + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--csv")
    ap.add_argument("--reps", type=int)
    ap.add_argument("--ns", default="10,100,1000,10000")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    ns = [int(v) for v in a.ns.split(",")]

    try:
        import torch
    except ImportError:
        print("torch_chain: PyTorch is not installed; nothing to measure.")
        return 0
    if not torch.cuda.is_available():
        print("torch_chain: no CUDA GPU visible to PyTorch; nothing to measure.")
        return 0

    def reps_for(n):
        if a.quick:
            return 1, 3
        return (2 if n >= 10_000 else 3), (a.reps or (20 if n >= 10_000 else 30))

    dev = torch.device("cuda", 0)
    print(f"torch_chain: {torch.cuda.get_device_name(dev)}, torch {torch.__version__}, CUDA {torch.version.cuda}")
    s = torch.cuda.Stream(device=dev)
    x = torch.zeros(ELEMS, device=dev)
    rows = []

    def push(meas, n, xs):
        if xs:
            rows.append((meas, n, "torch", quantile(xs, 0.5), quantile(xs, 0.1), quantile(xs, 0.9), len(xs)))

    try:
        torch.cuda.CUDAGraph(keep_graph=True)
        has_keep = True
    except TypeError:
        has_keep = False

    # Correctness: eager chain + one replay on a fresh tensor.
    with torch.cuda.stream(s):
        x.zero_()
        for _ in range(10):
            x.add_(1)
        g = torch.cuda.CUDAGraph()
        g.capture_begin()
        for _ in range(10):
            x.add_(1)
        g.capture_end()
        g.replay()
        s.synchronize()
        assert torch.all(x == 20.0).item(), "torch chain computed the wrong values"
        del g
    print("check: eager + replay compute the expected values")

    with torch.cuda.stream(s):
        for n in ns:
            warm, reps = reps_for(n)
            t_fam = time.perf_counter()
            # Eager.
            e, eq = [], []
            for rep in range(warm + reps):
                s.synchronize()
                t0 = time.perf_counter()
                for _ in range(n):
                    x.add_(1)
                t1 = time.perf_counter()
                s.synchronize()
                t2 = time.perf_counter()
                if rep >= warm:
                    e.append((t2 - t0) * 1e6 / n)
                    eq.append((t1 - t0) * 1e6 / n)
            push("eager", n, e)
            push("eager_enqueue", n, eq)

            # Capture + instantiate (capture_end instantiates), and record (begin + N ops).
            rec, ci = [], []
            for rep in range(warm + reps):
                s.synchronize()
                g = torch.cuda.CUDAGraph()
                t0 = time.perf_counter()
                g.capture_begin()
                for _ in range(n):
                    x.add_(1)
                t1 = time.perf_counter()
                g.capture_end()
                t2 = time.perf_counter()
                g.reset()
                del g
                if rep >= warm:
                    rec.append((t1 - t0) * 1e6)
                    ci.append((t2 - t0) * 1e6)
            push("record", n, rec)
            push("capture_instantiate", n, ci)

            # Capture only, and instantiate only (keep_graph=True).
            if has_keep and hasattr(torch.cuda.CUDAGraph, "instantiate"):
                cap, inst = [], []
                for rep in range(warm + reps):
                    s.synchronize()
                    g = torch.cuda.CUDAGraph(keep_graph=True)
                    t0 = time.perf_counter()
                    g.capture_begin()
                    for _ in range(n):
                        x.add_(1)
                    g.capture_end()
                    t1 = time.perf_counter()
                    g.instantiate()
                    t2 = time.perf_counter()
                    g.reset()
                    del g
                    if rep >= warm:
                        cap.append((t1 - t0) * 1e6)
                        inst.append((t2 - t1) * 1e6)
                push("capture", n, cap)
                push("instantiate", n, inst)

            # Replay.
            k = max(2, min(50, 20_000 // n))
            g = torch.cuda.CUDAGraph()
            g.capture_begin()
            for _ in range(n):
                x.add_(1)
            g.capture_end()
            rs, rn, re = [], [], []
            for rep in range(warm + reps):
                s.synchronize()
                t0 = time.perf_counter()
                for _ in range(k):
                    g.replay()
                    s.synchronize()
                sync = (time.perf_counter() - t0) * 1e6 / k
                t0 = time.perf_counter()
                for _ in range(k):
                    g.replay()
                t1 = time.perf_counter()
                s.synchronize()
                t2 = time.perf_counter()
                if rep >= warm:
                    rs.append(sync)
                    rn.append((t2 - t0) * 1e6 / k)
                    re.append((t1 - t0) * 1e6 / k)
            g.reset()
            del g
            push("replay_sync", n, rs)
            push("replay_nosync", n, rn)
            push("replay_enqueue", n, re)
            print(f"  [torch N={n}: {time.perf_counter() - t_fam:.1f} s]", file=sys.stderr)

    assert torch.isfinite(x).all().item()
    print(f"\n{'measurement':<20} {'N':>6} {'median_us':>12} {'p10_us':>12} {'p90_us':>12} reps")
    for m, n, _, med, p10, p90, r in sorted(rows, key=lambda r: (r[0], r[1])):
        print(f"{m:<20} {n:>6} {med:>12.3f} {p10:>12.3f} {p90:>12.3f} {r}")
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("measurement,n,impl,median_us,p10_us,p90_us,reps\n")
            for r in rows:
                f.write(f"{r[0]},{r[1]},{r[2]},{r[3]:.4f},{r[4]:.4f},{r[5]:.4f},{r[6]}\n")
        print(f"wrote {len(rows)} rows to {a.csv}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
