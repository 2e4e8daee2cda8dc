#!/usr/bin/env python3
"""Plots the device-side decode loop benchmark (issue #12): per-token time of the four ways
of examples/08_device_loop — (a) launch + host check, (b) launch, (c1) WHILE of one step
per iteration, (cU) WHILE of U steps per iteration — against K, one panel per stop position
(at K; at K - 3), from the example's printed tables (one file per run; the median of each
file is a point, the bar its [min, max]); a dashed line at the floor (a step of a graph of 64
steps straight, the median over the runs) where the runs print it.

Usage: python3 bench/plot_device_loop.py OUT.png RUN.txt [RUN.txt ...]
"""

import re
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NUM = r"([\d.]+) \[([\d.]+), ([\d.]+)\]"
ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+" + r"\s+".join([NUM] * 4))
WAYS = ["(a) launch + host check", "(b) launch per token", "(c1) WHILE, 1 step/iteration", "(cU) WHILE, U steps/iteration"]
COLORS = ["#d62728", "#7f7f7f", "#ff7f0e", "#1f77b4"]


def main():
    out, runs = sys.argv[1], sys.argv[2:]
    # data[aligned][way][K] = list of (median, lo, hi)
    data = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    per = set()
    floors = []
    for path in runs:
        for line in open(path, encoding="utf-8"):
            m = re.search(r"steps straight .*per step ([\d.]+)", line)
            if m:
                floors.append(float(m.group(1)))
            m = re.search(r"U = (\d+) steps", line)
            if m:
                per.add(int(m.group(1)))
            m = ROW.match(line)
            if not m:
                continue
            k, stop = int(m.group(1)), int(m.group(2))
            vals = [float(v) for v in m.groups()[2:]]
            for w in range(4):
                data[stop == k][w][k].append(tuple(vals[3 * w : 3 * w + 3]))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    for ax, aligned in zip(axes, [True, False]):
        for w in range(4):
            ks = sorted(data[aligned][w])
            for i, k in enumerate(ks):
                for j, (med, lo, hi) in enumerate(data[aligned][w][k]):
                    x = ks.index(k) + (w - 1.5) * 0.18 + j * 0.05
                    ax.errorbar([x], [med], yerr=[[med - lo], [hi - med]], fmt="o", color=COLORS[w],
                                ms=4, capsize=2, label=WAYS[w] if i == 0 and j == 0 else None)
        ks = sorted(data[aligned][0])
        ax.set_xticks(range(len(ks)), [str(k) for k in ks])
        ax.set_xlabel("K (tokens per run)")
        ax.set_title("stop token at K" if aligned else "stop token at K - 3 (inside an iteration)")
        if floors:
            floor = sorted(floors)[len(floors) // 2]
            ax.axhline(floor, color="#2ca02c", ls="--", lw=1,
                       label=f"floor: a step of a graph of 64 steps straight ({floor:.2f})" if aligned else None)
        ax.set_ylim(0, None)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("µs per token (median, bar: min-max of 7)")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="lower center", ncol=3)
    u = ", ".join(str(p) for p in sorted(per))
    fig.suptitle(f"Decode step (cuBLAS GEMM + 10 kernels) on one H100: one graph launch per token vs one WHILE launch (U = {u})",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.13, 1, 1))
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
