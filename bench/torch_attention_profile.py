#!/usr/bin/env python3
"""Which kernels PyTorch's decode step runs, and how long each takes (issue #32): the
Llama-3.2-1B step of bench/torch_llama.py at one batch and position, compiled (default mode)
or eager, under torch.profiler, without a CUDA graph (so each kernel is seen). Prints every
kernel's count and mean time a step, most time first, and the bytes the cache's attention reads
at that position (the whole static cache: the mask covers what is past the position).

Usage: python3 bench/torch_attention_profile.py [--batch 32] [--position 8000] [--max-seq 8256]
       [--eager] [--steps 5]
"""

import argparse
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_llama import CFG, Llama  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--position", type=int, default=8000)
    p.add_argument("--max-seq", type=int, default=8256)
    p.add_argument("--steps", type=int, default=5)
    p.add_argument("--eager", action="store_true")
    a = p.parse_args()
    dev = torch.device("cuda")
    m = Llama(CFG, a.batch, a.max_seq, dev)
    tokens = torch.zeros(a.batch, dtype=torch.long, device=dev)
    pos = torch.full((a.batch,), a.position, dtype=torch.long, device=dev)

    def step():
        logits = m.logits(tokens, pos)
        return logits.argmax(-1)

    fn = step if a.eager else torch.compile(step)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(a.steps):
            fn()
        torch.cuda.synchronize()
    rows = []
    for e in prof.key_averages():
        if e.device_type.name == "CUDA" and e.count > 0:
            total = getattr(e, "device_time_total", None) or e.cuda_time_total
            rows.append((total / a.steps, e.count / a.steps, e.key))
    rows.sort(reverse=True)
    c = CFG
    kv = a.batch * c["layers"] * 2 * c["kv"] * a.max_seq * c["hd"] * 2
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, {'eager' if a.eager else 'compile (default)'}, "
          f"batch {a.batch}, position {a.position}, max_seq {a.max_seq}: the cache is {kv / 1e9:.3f} GB a step")
    print("| us a step | launches a step | kernel |")
    print("|---|---|---|")
    for t, n, k in rows[:25]:
        print(f"| {t:.1f} | {n:.0f} | {k[:160]} |")
    print("TOP_KERNEL", rows[0][2])


if __name__ == "__main__":
    main()
