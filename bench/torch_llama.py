#!/usr/bin/env python3
"""Issue #22's PyTorch peer: the Llama-3.2-1B config (random bf16 weights) with a static KV
cache, decoded one token at a time, three ways, alternated round by round:

  eager                 the module called per token
  torch.cuda.graph      the eager step captured and replayed
  compile + graph       torch.compile(mode="max-autotune-no-cudagraphs"), captured in a graph

The step is the same as capture-candle's: token and position read from device tensors, the
KV cache written at the position (index_put), RoPE from a table gathered at the position,
grouped-query attention (scaled_dot_product_attention over the cache with a mask of the valid
prefix, as gpt-fast does), SwiGLU, tied LM head, greedy argmax written back into the token
tensor and the position advanced on the device. Each token counts the step and the read-back
of the next token to the host.

Usage: python3 bench/torch_llama.py [--rounds R] [--tokens N] [--max-seq S] [--batches 1,8]
       [--positions 64,2000] [--no-compile]
Prints a markdown table and a `json` line per measurement.
"""

import argparse
import json
import math
import time

import torch
import torch.nn.functional as F

HBM = 3.35e12
CFG = dict(hidden=2048, inter=8192, layers=16, heads=32, kv=8, hd=64, vocab=128256, eps=1e-5, theta=500000.0,
           factor=32.0, low=1.0, high=4.0, orig=8192)


def inv_freq(c):
    f = 1.0 / (c["theta"] ** (torch.arange(0, c["hd"], 2, dtype=torch.float64) / c["hd"]))
    low_wl, high_wl = c["orig"] / c["low"], c["orig"] / c["high"]
    wl = 2 * math.pi / f
    smooth = (c["orig"] / wl - c["low"]) / (c["high"] - c["low"])
    mid = (1 - smooth) * f / c["factor"] + smooth * f
    return torch.where(wl < high_wl, f, torch.where(wl > low_wl, f / c["factor"], mid))


class Llama(torch.nn.Module):
    def __init__(self, c, batch, max_seq, dev):
        super().__init__()
        H, I, hd, nq, nk = c["hidden"], c["inter"], c["hd"], c["heads"], c["kv"]
        g = torch.Generator(device=dev).manual_seed(1)
        rnd = lambda *s, std: (torch.randn(*s, generator=g, device=dev, dtype=torch.float32) * std).to(torch.bfloat16)
        self.c = c
        self.emb = rnd(c["vocab"], H, std=2 / math.sqrt(H))
        self.layers = []
        for _ in range(c["layers"]):
            self.layers.append(dict(
                n1=1 + rnd(H, std=0.05), n2=1 + rnd(H, std=0.05),
                qkv=rnd((nq + 2 * nk) * hd, H, std=1 / math.sqrt(H)), o=rnd(H, nq * hd, std=1 / math.sqrt(nq * hd)),
                gu=rnd(2 * I, H, std=1 / math.sqrt(H)), d=rnd(H, I, std=1 / math.sqrt(I)),
                k=torch.zeros(batch, nk, max_seq, hd, device=dev, dtype=torch.bfloat16),
                v=torch.zeros(batch, nk, max_seq, hd, device=dev, dtype=torch.bfloat16)))
        self.norm = 1 + rnd(H, std=0.05)
        ang = torch.arange(max_seq, dtype=torch.float64)[:, None] * inv_freq(c)[None]
        self.cos, self.sin = ang.cos().float().to(dev), ang.sin().float().to(dev)
        self.ar = torch.arange(max_seq, device=dev)
        self.bidx = torch.arange(batch, device=dev)

    def rms(self, x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.c["eps"])).to(x.dtype) * w

    def rope(self, x, cos, sin):  # x [B, h, hd]; cos/sin [B, 1, hd/2]
        x1, x2 = x[..., : x.shape[-1] // 2].float(), x[..., x.shape[-1] // 2:].float()
        return torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).to(x.dtype)

    def step(self, tokens, pos):
        c = self.c
        B, nq, nk, hd = tokens.shape[0], c["heads"], c["kv"], c["hd"]
        x = self.emb[tokens]
        cos, sin = self.cos[pos][:, None], self.sin[pos][:, None]
        mask = (self.ar[None] <= pos[:, None])[:, None, None, :]
        for L in self.layers:
            h = self.rms(x, L["n1"])
            qkv = h @ L["qkv"].t()
            q, k, v = qkv.split([nq * hd, nk * hd, nk * hd], -1)
            q = self.rope(q.view(B, nq, hd), cos, sin)
            k = self.rope(k.view(B, nk, hd), cos, sin)
            L["k"][self.bidx, :, pos] = k
            L["v"][self.bidx, :, pos] = v.view(B, nk, hd)
            a = F.scaled_dot_product_attention(q[:, :, None], L["k"], L["v"], attn_mask=mask, enable_gqa=True)
            x = x + a.reshape(B, nq * hd) @ L["o"].t()
            h = self.rms(x, L["n2"])
            gu = h @ L["gu"].t()
            gate, up = gu.chunk(2, -1)
            x = x + (F.silu(gate) * up) @ L["d"].t()
        logits = self.rms(x, self.norm) @ self.emb.t()
        tokens.copy_(logits.argmax(-1).to(tokens.dtype))
        pos.add_(1)


def capture(fn, tokens, pos):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    save_t, save_p = tokens.clone(), pos.clone()
    with torch.cuda.stream(s):
        for _ in range(3):
            fn(tokens, pos)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    tokens.copy_(save_t), pos.copy_(save_p)
    g = torch.cuda.CUDAGraph()
    t0 = time.perf_counter()
    with torch.cuda.graph(g):
        fn(tokens, pos)
    g.replay()  # instantiation and upload happen lazily by the first replay
    torch.cuda.synchronize()
    return g, (time.perf_counter() - t0) * 1e3


def kernels_per_replay(g):
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as p:
        g.replay()
        torch.cuda.synchronize()
    return sum(1 for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--max-seq", type=int, default=2112)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--positions", default="64,2000")
    ap.add_argument("--no-compile", action="store_true")
    a = ap.parse_args()
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}: Llama-3.2-1B config, bf16, max_seq {a.max_seq}")
    print("\n| batch | position | path | ms/token (median) | min | max | tokens/s | HBM share | kernels/step | capture+instantiate ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for B in [int(x) for x in a.batches.split(",")]:
        torch.manual_seed(0)
        m = Llama(CFG, B, a.max_seq, dev)
        weights = sum(t.numel() * 2 for t in [m.emb, m.norm] + [L[k] for L in m.layers for k in ("n1", "n2", "qkv", "o", "gu", "d")])
        tokens = torch.arange(1000, 1000 + B, device=dev, dtype=torch.int64)
        pos = torch.full((B,), 64, device=dev, dtype=torch.int64)
        paths = [("torch eager", m.step, None, None)]
        g, ms = capture(m.step, tokens, pos)
        paths.append(("torch.cuda.graph", None, g, ms))
        if not a.no_compile:
            t0 = time.perf_counter()
            cstep = torch.compile(m.step, mode="max-autotune-no-cudagraphs", fullgraph=True)
            cstep(tokens, pos)
            torch.cuda.synchronize()
            print(f"<!-- compile for batch {B}: {time.perf_counter() - t0:.0f} s -->")
            g2, ms2 = capture(cstep, tokens, pos)
            paths.append(("compile (max-autotune-no-cudagraphs) + graph", None, g2, ms2))
        for P in [int(x) for x in a.positions.split(",")]:
            kv_bytes = 2 * CFG["layers"] * B * CFG["kv"] * CFG["hd"] * 2 * (P + a.tokens / 2)
            times = [[] for _ in paths]
            for r in range(a.rounds + 1):
                for i, (name, fn, g, _) in enumerate(paths):
                    pos.fill_(P)
                    tokens.copy_(torch.arange(1000, 1000 + B, device=dev))
                    torch.cuda.synchronize()
                    t0 = time.perf_counter()
                    for _ in range(a.tokens):
                        if g is None:
                            fn(tokens, pos)
                        else:
                            g.replay()
                        _ = tokens.tolist()
                    if r > 0:
                        times[i].append((time.perf_counter() - t0) * 1e3 / a.tokens)
            for (name, fn, g, cap), t in zip(paths, times):
                t.sort()
                med = t[len(t) // 2]
                kern = kernels_per_replay(g) if g is not None else "-"
                share = (weights + kv_bytes) / (med * 1e-3) / HBM
                capt = f"{cap:.1f}" if cap is not None else "-"
                print(f"| {B} | {P} | {name} | {med:.3f} | {t[0]:.3f} | {t[-1]:.3f} | {B * 1e3 / med:.0f} | {share * 100:.0f}% | {kern} | {capt} |")
                print("json " + json.dumps(dict(side="torch", batch=B, pos=P, path=name, ms=med, min=t[0], max=t[-1], kernels=kern, capture_ms=cap)))
        del m, paths
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
