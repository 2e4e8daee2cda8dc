#!/usr/bin/env python3
"""Plots issue #22's benchmark: ms/token of every path at batch 1 and 8, positions 64 and
2,000, from the `json` lines that capture-candle/examples/llama_bench.rs and
bench/torch_llama.py print (several files: the medians of each path are averaged over files
that measured it, the bars span their min and max).

Usage: python3 bench/plot_llama.py OUT.png RUN.txt [RUN.txt ...]
"""

import json
import sys
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
    "replay, fused",
]
LABEL = {
    "torch eager": "PyTorch eager",
    "eager (capture-ready layers)": "candle eager (capture-ready layers)",
    "torch.cuda.graph": "PyTorch torch.cuda.graph",
    "replay, unfused": "capture-candle replay, unfused",
    "compile (max-autotune-no-cudagraphs) + graph": "PyTorch compile + graph",
    "replay, fused": "capture-candle replay, fused",
}
COLOR = {
    "torch eager": "#bbbbbb",
    "eager (capture-ready layers)": "#9ecae1",
    "torch.cuda.graph": "#888888",
    "replay, unfused": "#4292c6",
    "compile (max-autotune-no-cudagraphs) + graph": "#444444",
    "replay, fused": "#08519c",
}


def main():
    out, files = sys.argv[1], sys.argv[2:]
    data = defaultdict(list)  # (batch, pos, path) -> [(ms, min, max)]
    for f in files:
        for line in open(f):
            if line.startswith("json {") and '"path"' in line:
                d = json.loads(line[5:])
                data[(d["batch"], d["pos"], d["path"])].append((d["ms"], d["min"], d["max"]))
    cases = sorted({(b, p) for (b, p, _) in data})
    fig, axes = plt.subplots(1, len(cases), figsize=(4.2 * len(cases), 4.6), sharey=False)
    if len(cases) == 1:
        axes = [axes]
    for ax, (b, p) in zip(axes, cases):
        paths = [x for x in ORDER if (b, p, x) in data and x != "torch eager"]
        for i, x in enumerate(paths):
            v = data[(b, p, x)]
            med = sum(m for m, _, _ in v) / len(v)
            lo, hi = min(m for _, m, _ in v), max(m for _, _, m in v)
            ax.bar(i, med, color=COLOR[x], label=LABEL[x])
            ax.errorbar(i, med, yerr=[[med - lo], [hi - med]], color="k", capsize=3, lw=1)
            ax.text(i, med, f"{med:.2f}", ha="center", va="bottom", fontsize=8)
        ax.set_xticks([])
        ax.set_title(f"batch {b}, position {p}")
        ax.set_ylabel("ms / token (lower is better)")
    axes[0].legend(fontsize=7, loc="upper right")
    fig.suptitle("Llama-3.2-1B config, bf16, one H100: per-token decode (PyTorch eager, 14-31 ms, not drawn)")
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main()
