#!/usr/bin/env python3
"""Plots the chain benchmark: docs/benchmarks.png from the CSV files that
`examples/bench.rs` (impl lib, raw) and `bench/torch_chain.py` (impl torch) write.

Top row: time vs chain length N, log-log, library vs raw driver vs PyTorch, for eager
launch (per kernel), capture + instantiate, and replay with a synchronize (per launch);
the band is p10-p90. Bottom row: library / raw driver (medians) for the same three, with
the issue #5 target as a dashed line.

Usage: python3 bench/plot.py [CSV ...] [--out docs/benchmarks.png] [--title TEXT]
(default CSV: docs/benchmarks.csv)
"""

import argparse
import csv
import sys
from collections import defaultdict

PANELS = [
    ("eager", "eager launch, per kernel", "µs per kernel", 1.05),
    ("capture_instantiate", "capture + instantiate", "µs", 1.10),
    ("replay_sync", "graph replay + synchronize", "µs per launch", 1.02),
]
STYLE = {
    "lib": dict(color="#1f77b4", marker="o", label="capture-core"),
    "raw": dict(color="#ff7f0e", marker="s", label="raw driver (cudarc sys)"),
    "torch": dict(color="#2ca02c", marker="^", label="PyTorch CUDAGraph"),
}


def load(paths):
    data = defaultdict(dict)  # (measurement, impl) -> {n: (med, p10, p90)}
    for p in paths:
        with open(p) as f:
            for r in csv.DictReader(f):
                key = (r["measurement"], r["impl"])
                data[key][int(r["n"])] = (float(r["median_us"]), float(r["p10_us"]), float(r["p90_us"]))
    return data


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="*", default=["docs/benchmarks.csv"])
    ap.add_argument("--out", default="docs/benchmarks.png")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("plot.py needs matplotlib: pip install matplotlib", file=sys.stderr)
        return 1
    data = load(a.csv)

    fig, axes = plt.subplots(2, 3, figsize=(14, 7.5), gridspec_kw=dict(height_ratios=[3, 1.4]))
    for col, (meas, title, unit, target) in enumerate(PANELS):
        ax = axes[0][col]
        # The library last, on top: it often lies on the raw driver's line.
        for imp in ("torch", "raw", "lib"):
            st = STYLE[imp]
            pts = data.get((meas, imp))
            if not pts:
                continue
            ns = sorted(pts)
            med = [pts[n][0] for n in ns]
            ax.plot(ns, med, markersize=5, linewidth=1.5, linestyle="--" if imp == "lib" else "-", **st)
            ax.fill_between(ns, [pts[n][1] for n in ns], [pts[n][2] for n in ns], color=st["color"], alpha=0.15)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(title)
        ax.set_ylabel(unit)
        ax.grid(True, which="both", alpha=0.3)
        if col == 0:
            handles, labels = ax.get_legend_handles_labels()
            ax.legend(handles[::-1], labels[::-1], loc="best", fontsize=9)

        rax = axes[1][col]
        lib, raw = data.get((meas, "lib"), {}), data.get((meas, "raw"), {})
        ns = sorted(set(lib) & set(raw))
        if ns:
            ratio = [lib[n][0] / raw[n][0] for n in ns]
            rax.plot(ns, ratio, color=STYLE["lib"]["color"], marker="o", markersize=5)
            for n, r in zip(ns, ratio):
                rax.annotate(f"{r:.3f}", (n, r), textcoords="offset points", xytext=(0, 6), ha="center", fontsize=8)
            rax.axhline(1.0, color="gray", linewidth=0.8)
            rax.axhline(target, color="red", linestyle="--", linewidth=1, label=f"target ≤ {target:.2f}×")
            lo, hi = min(ratio + [1.0]), max(ratio + [target])
            rax.set_ylim(lo - 0.03, hi + 0.04)
            rax.legend(loc="lower right", fontsize=8)
        rax.set_xscale("log")
        rax.set_xlabel("kernels in the chain (N)")
        rax.set_ylabel("library / raw")
        rax.grid(True, which="both", alpha=0.3)

    fig.suptitle(a.title or "Chains of N tiny kernels: capture-core vs raw driver vs PyTorch (median, p10–p90 band)")
    fig.tight_layout()
    fig.savefig(a.out, dpi=120)
    print(f"wrote {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
