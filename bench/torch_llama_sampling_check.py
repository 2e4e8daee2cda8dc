#!/usr/bin/env python3
"""CPU check of bench/torch_llama.py's sampling (issue #32), no GPU needed: the top-k/top-p
draw returns only tokens of the kept set (computed here independently, over the whole
vocabulary), draws them with the kept probabilities, and `plain` draws with the softmax's; the
same with the function compiled by torch.compile (inductor's CPU backend, `fallback_random`
as in the benchmark); and each step of a tiny Llama of the benchmark's code runs, eagerly and
compiled whole (`fullgraph=True`: no graph break).

Usage: python3 bench/torch_llama_sampling_check.py
"""

import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_llama as tl  # noqa: E402


def kept_set(logits, temperature, top_k, top_p):
    """[B, vocab] bool: the tokens a row may draw, and their renormalised probabilities."""
    x = logits.double() / temperature
    order = x.argsort(-1, descending=True)
    rank = torch.arange(x.shape[-1])[None].expand_as(x)
    keep_sorted = rank < (top_k or x.shape[-1])
    # Top-p over the top-k tokens' probabilities (renormalised among them), as
    # capture-candle's sampler and transformers' warpers do.
    p_sorted = torch.softmax(torch.where(keep_sorted, x.gather(-1, order), -torch.inf), -1)
    if top_p < 1.0:
        keep_sorted &= p_sorted.cumsum(-1) - p_sorted < top_p
    keep = torch.zeros_like(keep_sorted).scatter(-1, order, keep_sorted)
    kept = torch.where(keep, torch.softmax(x, -1), 0.0)
    return keep, kept / kept.sum(-1, keepdim=True)


def check(fn, label, rows=48, vocab=3000, draws=4000):
    g = torch.Generator().manual_seed(7)
    # Rows of very different sharpness: a few tokens dominate, or the mass is spread. In
    # f32, without ties: bf16 logits tie often, and which of the tokens tied at the k-th
    # value top-k keeps is arbitrary (torch.topk's choice and a sort's may differ).
    scale = torch.logspace(-1, 1.3, rows)[:, None]
    logits = torch.randn(rows, vocab, generator=g) * scale
    for mode, (t, k, p) in tl.SAMPLING.items():
        keep, want = kept_set(logits.float(), t, k, p)
        counts = torch.zeros(rows, vocab, dtype=torch.float64)
        for _ in range(draws // 50):
            # 50 draws of every row at once.
            x = logits.repeat(50, 1)
            tok = fn(x, t, k, p).view(50, rows)
            assert tok.dtype == torch.int64 and tok.shape == (50, rows)
            inside = keep.gather(-1, tok.t())
            assert inside.all(), f"{label} {mode}: drew a token outside the kept set"
            counts.scatter_add_(-1, tok.t(), torch.ones(rows, 50, dtype=torch.float64))
        n = counts.sum(-1, keepdim=True)
        freq = counts / n
        # Each frequency against its binomial standard error (at most 0.008 at 4,000 draws),
        # with two draws of slack for the rare tokens of `plain`.
        dev = (freq - want).abs() - 2 / n
        z = (dev / (want * (1 - want) / n).sqrt()).nan_to_num(0.0).max().item()
        err = (freq - want).abs().max().item()
        assert z < 6, f"{label} {mode}: a frequency {z:.1f} standard errors from its probability"
        nkept = keep.sum(-1)
        print(f"{label} {mode}: every draw inside the kept set ({nkept.min().item()}-{nkept.max().item()} "
              f"tokens kept a row), frequencies within {err:.3f} ({z:.1f} standard errors) of the kept probabilities")


def tiny_steps():
    c = dict(tl.CFG, hidden=64, inter=128, layers=2, heads=4, kv=2, hd=16, vocab=500)
    B, max_seq = 3, 40
    m = tl.Llama(c, B, max_seq, torch.device("cpu"))
    for mode in tl.MODES:
        for how in ("eager", "compiled"):
            step = m.step_for(mode)
            if how == "compiled":
                # As the benchmark compiles it (fullgraph: no graph break), on the CPU.
                step = torch.compile(step, fullgraph=True, dynamic=False)
            tokens = torch.arange(10, 10 + B)
            pos = torch.full((B,), 5)
            for _ in range(4):
                step(tokens, pos)
            assert ((tokens >= 0) & (tokens < c["vocab"])).all() and (pos == 9).all()
            print(f"tiny Llama, {mode}: 4 {how} steps, tokens {tokens.tolist()}")


def main():
    torch.manual_seed(0)
    check(tl.sample, "eager")
    torch._inductor.config.fallback_random = True
    try:
        compiled = torch.compile(tl.sample, fullgraph=True, dynamic=False)
        compiled(torch.randn(2, 10), *tl.SAMPLING["topk"])
    except Exception as e:  # no C++ compiler: say so, the eager check stands
        print(f"compiled check skipped: {type(e).__name__}: {e}")
    else:
        check(compiled, "compiled")
    tiny_steps()


if __name__ == "__main__":
    main()
