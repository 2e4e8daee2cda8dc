#!/usr/bin/env python3
"""What a tensor-core attention takes for a ragged prefill's attention (a premise for a prefill
kernel, 2026-12-02): the prompts of `llama_bench --ragged MAX` at one batch (the same
pseudo-random lengths, 16 to MAX tokens), each row's causal attention over its prompt but the
last token (what `Model::prefill_rows`' rounds attend), Llama-3.2-1B's heads (32 query heads,
8 key/value heads of 64, bf16), 16 layers, through PyTorch's `scaled_dot_product_attention`
(`is_causal`, `enable_gqa`: its flash kernel). Each row is one call, all 16 layers of all rows
in one CUDA graph, timed with CUDA events; the median of ROUNDS. Prints the time, the
query-key pairs and the rate.

Usage: python3 bench/torch_prefill_attention.py [--batch 8] [--ragged 2000] [--rounds 10]
"""

import argparse

import torch
import torch.nn.functional as F

MASK = (1 << 64) - 1


def lengths(batch, most, least=16):
    """llama_bench's --ragged lengths: xorshift seeded by the batch."""
    h = (0x9E3779B97F4A7C15 ^ batch) & MASK
    out = []
    for _ in range(batch):
        h ^= (h << 13) & MASK
        h ^= h >> 7
        h ^= (h << 17) & MASK
        out.append(least + h % (most - least + 1))
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--ragged", type=int, default=2000)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--layers", type=int, default=16)
    a = p.parse_args()
    dev = torch.device("cuda")
    hq, hkv, d = 32, 8, 64
    lens = [n - 1 for n in lengths(a.batch, a.ragged) if n > 1]
    g = torch.Generator(device=dev).manual_seed(0)
    rows = []
    for n in lens:
        q = torch.randn(1, hq, n, d, device=dev, dtype=torch.bfloat16, generator=g)
        k = torch.randn(1, hkv, n, d, device=dev, dtype=torch.bfloat16, generator=g)
        v = torch.randn(1, hkv, n, d, device=dev, dtype=torch.bfloat16, generator=g)
        rows.append((q, k, v))

    def run():
        for _ in range(a.layers):
            for q, k, v in rows:
                F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)

    # In a CUDA graph, so that the host's launch rate does not time the small calls.
    run()
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(a.rounds):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        graph.replay()
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    ms = times[len(times) // 2]
    pairs = sum(n * (n + 1) // 2 for n in lens)
    flop = pairs * hq * d * 4 * a.layers
    with torch.nn.attention.sdpa_kernel(torch.nn.attention.SDPBackend.FLASH_ATTENTION):
        q, k, v = rows[0]
        F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)  # fails if flash cannot take it
    print(
        f"batch {a.batch}, prompts 16-{a.ragged} ({sum(lens) + len(lens)} tokens), {a.layers} layers: "
        f"{ms:.3f} ms (min {times[0]:.3f}, max {times[-1]:.3f}); {pairs} query-key pairs a layer; "
        f"{flop / ms / 1e9:.1f} TFLOP/s"
    )


if __name__ == "__main__":
    main()
