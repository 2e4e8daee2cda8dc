#!/usr/bin/env python3
"""Plots issue #22's benchmark: ms/token of every path at each batch and position measured
(a row of panels per batch, a column per position), from the `json` lines that
capture-candle/examples/llama_bench.rs and bench/torch_llama.py print (several files: the
medians of each path are averaged over files that measured it, the bars span their min and
max). Issue #32: lines with a `sampling` field other than greedy are drawn beside greedy's bar
of the same path, hatched (`topk` //, `plain` ..); lines without the field are greedy.

Usage: python3 bench/plot_llama.py OUT.png RUN.txt [RUN.txt ...]
       [--sampling greedy,topk,plain] [--batches 1,8,32] [--positions 64,2000,8000] [--title TEXT]
The filters keep only what they name (default: everything in the files).
"""

import argparse
import json
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ORDER = [
    "torch eager",
    "eager (capture-ready layers)",
    "torch.cuda.graph",
    "replay, unfused",
    "compile (max-autotune-no-cudagraphs) + graph",
    "compile (default) + graph",
    "replay, fused",
]
LABEL = {
    "torch eager": "PyTorch eager",
    "eager (capture-ready layers)": "candle eager (capture-ready layers)",
    "torch.cuda.graph": "PyTorch torch.cuda.graph",
    "replay, unfused": "capture-candle replay, unfused",
    "compile (max-autotune-no-cudagraphs) + graph": "PyTorch compile (max-autotune) + graph",
    "compile (default) + graph": "PyTorch compile (default) + graph",
    "replay, fused": "capture-candle replay, fused",
}
COLOR = {
    "torch eager": "#bbbbbb",
    "eager (capture-ready layers)": "#9ecae1",
    "torch.cuda.graph": "#888888",
    "replay, unfused": "#4292c6",
    "compile (max-autotune-no-cudagraphs) + graph": "#444444",
    "compile (default) + graph": "#111111",
    "replay, fused": "#08519c",
}
MODES = ["greedy", "topk", "plain"]
HATCH = {"greedy": "", "topk": "//", "plain": ".."}
TITLE = "Llama-3.2-1B config, bf16, one H100: per-token decode (PyTorch eager, 14-31 ms, not drawn)"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--sampling", help="comma list: only these modes")
    ap.add_argument("--batches", help="comma list: only these batches")
    ap.add_argument("--positions", help="comma list: only these positions")
    ap.add_argument("--title", default=TITLE)
    a = ap.parse_args()
    only = lambda text, conv: None if text is None else {conv(x) for x in text.split(",")}
    modes_f, batches_f, positions_f = only(a.sampling, str), only(a.batches, int), only(a.positions, int)
    data = defaultdict(list)  # (batch, pos, path, sampling) -> [(ms, min, max)]
    for f in a.runs:
        for line in open(f):
            if line.startswith("json {") and '"path"' in line:
                d = json.loads(line[5:])
                mode = d.get("sampling", "greedy")
                if (modes_f and mode not in modes_f) or (batches_f and d["batch"] not in batches_f) \
                        or (positions_f and d["pos"] not in positions_f):
                    continue
                data[(d["batch"], d["pos"], d["path"], mode)].append((d["ms"], d["min"], d["max"]))
    if not data:
        raise SystemExit("plot_llama: no json line with a path in the files (or none left by the filters)")
    batches = sorted({b for (b, _, _, _) in data})
    positions = sorted({p for (_, p, _, _) in data})
    modes = [m for m in MODES if any(k[3] == m for k in data)]
    fig, axes = plt.subplots(len(batches), len(positions), squeeze=False,
                             figsize=(max(4.2, 1.1 * len(modes) + 3.1) * len(positions), 4.6 * len(batches)))
    for row, b in enumerate(batches):
        for col, p in enumerate(positions):
            ax = axes[row][col]
            if not any((b, p) == k[:2] for k in data):
                ax.set_visible(False)
                continue
            i = 0
            for x in ORDER:
                if x == "torch eager":
                    continue
                for mode in modes:
                    v = data.get((b, p, x, mode))
                    if not v:
                        continue
                    med = sum(m for m, _, _ in v) / len(v)
                    lo, hi = min(m for _, m, _ in v), max(m for _, _, m in v)
                    label = LABEL[x] if mode == "greedy" else f"{LABEL[x]}, {mode}"
                    ax.bar(i, med, color=COLOR[x], hatch=HATCH[mode], edgecolor="white" if HATCH[mode] else None,
                           label=label)
                    ax.errorbar(i, med, yerr=[[med - lo], [hi - med]], color="k", capsize=3, lw=1)
                    ax.text(i, hi, f"{med:.2f}", ha="center", va="bottom", fontsize=7)
                    i += 1
                i += 0.5 if len(modes) > 1 else 0  # a gap between paths
            ax.set_xticks([])
            ax.set_title(f"batch {b}, position {p}")
            ax.set_ylabel("ms / token (lower is better)")
    # One legend: every (path, mode) drawn anywhere.
    handles = {}
    for ax in axes.flat:
        for h, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, h)
    ncol = min(len(handles), 3)
    fig.legend(handles.values(), handles.keys(), fontsize=8, loc="lower center", ncol=ncol)
    fig.suptitle(a.title)
    # Room below the panels for the legend.
    fig.tight_layout(rect=(0, 0.03 + 0.022 * -(-len(handles) // ncol) * 4.6 / fig.get_figheight(), 1, 1))
    fig.savefig(a.out, dpi=110)


if __name__ == "__main__":
    main()
