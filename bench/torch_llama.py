#!/usr/bin/env python3
"""Issue #22's PyTorch peer: the Llama-3.2-1B config (`--config llama-3.1-8b`: Llama-3.1-8B's
shapes, heads of 128) with random bf16 weights and a static KV cache, decoded one token at a
time, three ways, alternated round by round:

  eager                 the module called per token
  torch.cuda.graph      the eager step captured and replayed
  compile + graph       torch.compile(mode="max-autotune-no-cudagraphs"), captured in a graph
  compile-default       torch.compile(mode="default") (no autotuning: cuBLAS's products), captured
                        in a graph; `--paths compile-default` (not in the default set). On an H100
                        it was faster than max-autotune at every batch, and max-autotune's step
                        varied from run to run (docs/gpu-runs/2026-11-26b-issue32/README.md).

The step is the same as capture-candle's: token and position read from device tensors, the
KV cache written at the position (index_put), RoPE from a table gathered at the position,
grouped-query attention (scaled_dot_product_attention over the cache with a mask of the valid
prefix, as gpt-fast does: it reads the whole cache, `--max-seq` positions, at every position),
SwiGLU, tied LM head, the next token written back into the token tensor and the position
advanced on the device. Each token counts the step and the read-back of the next token to the
host.

Sampling (issue #32), `--sampling greedy,topk,plain`, each inside the step (compiled with it,
captured with it; no host sync), as gpt-fast draws:
  greedy  argmax of the logits (the step as before)
  topk    logits / 0.8; torch.topk(50) (sorted); top-p 0.95 on those: softmax over the 50,
          cumsum, keep the shortest prefix whose sum reaches 0.95; draw among the kept
  plain   softmax of the logits over the whole vocabulary (temperature 1), draw
The draw is gpt-fast's exponential trick: q = empty_like(probs).exponential_(1),
argmax(probs / q) (q clamped away from 0, so a token of probability 0 is never drawn). The
random numbers come from PyTorch's CUDA generator, whose state graph capture handles (each
replay draws anew). Inductor is told `fallback_random = True`, so the compiled step calls the
same aten `exponential_` as eager, which is capture-safe by construction, rather than
inductor's own seeded random kernels. Greedy steps have no random op and are unchanged by it.
Each (batch, sampling mode) is its own compiled step (`dynamic=False`: specialised to the
batch, never a dynamic-shape graph reused across batches; `--compile-dynamic` gives
torch.compile's default, which the runs before issue #32 used). Compile times are printed.

Usage: python3 bench/torch_llama.py [--rounds R] [--tokens N] [--max-seq S] [--batches 1,8]
       [--positions 64,2000] [--sampling greedy,topk,plain] [--paths eager,graph,compile]
       [--no-compile] [--compile-dynamic]
Prints a markdown table and a `json` line per measurement (with a `sampling` field; with more
than greedy, the table gains a `sampling` column and each row's time over greedy's).
"""

import argparse
import ctypes
import json
import math
import time

import torch
import torch._dynamo.config
import torch._inductor.config
import torch.nn.functional as F



def peak_bandwidth(ordinal=0):
    """The device's peak memory bandwidth in bytes/s from the driver (memory clock in kHz x 2 x
    bus width in bits / 8; an H100 SXM: 3.35 TB/s), or None where the driver does not say."""
    try:
        cu = ctypes.CDLL("libcuda.so.1")
        dev, clock, bits = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        ok = cu.cuInit(0) == 0 and cu.cuDeviceGet(ctypes.byref(dev), ordinal) == 0
        # CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE (36), CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH (37).
        ok = ok and cu.cuDeviceGetAttribute(ctypes.byref(clock), 36, dev) == 0
        ok = ok and cu.cuDeviceGetAttribute(ctypes.byref(bits), 37, dev) == 0
    except OSError:
        return None
    return clock.value * 1e3 * 2 * bits.value / 8 if ok and clock.value > 0 and bits.value > 0 else None

# The sampled modes: temperature, top-k (0: every token), top-p (1: every token).
SAMPLING = {"topk": (0.8, 50, 0.95), "plain": (1.0, 0, 1.0)}
MODES = ("greedy", "topk", "plain")
PATHS = {"eager": "torch eager", "graph": "torch.cuda.graph", "compile": "compile (max-autotune-no-cudagraphs) + graph",
         "compile-default": "compile (default) + graph"}
COMPILE_MODES = {"compile": "max-autotune-no-cudagraphs", "compile-default": "default"}
# --config: the shapes of capture-candle's Config::named of the same name (tied: the LM head is
# the embedding; untied: a weight of its own, of the same size).
CONFIGS = {
    "llama-3.2-1b": dict(name="Llama-3.2-1B", hidden=2048, inter=8192, layers=16, heads=32, kv=8, hd=64, vocab=128256,
                         eps=1e-5, theta=500000.0, factor=32.0, low=1.0, high=4.0, orig=8192, tied=True),
    "llama-3.1-8b": dict(name="Llama-3.1-8B", hidden=4096, inter=14336, layers=32, heads=32, kv=8, hd=128, vocab=128256,
                         eps=1e-5, theta=500000.0, factor=8.0, low=1.0, high=4.0, orig=8192, tied=False),
}


def inv_freq(c):
    f = 1.0 / (c["theta"] ** (torch.arange(0, c["hd"], 2, dtype=torch.float64) / c["hd"]))
    low_wl, high_wl = c["orig"] / c["low"], c["orig"] / c["high"]
    wl = 2 * math.pi / f
    smooth = (c["orig"] / wl - c["low"]) / (c["high"] - c["low"])
    mid = (1 - smooth) * f / c["factor"] + smooth * f
    return torch.where(wl < high_wl, f, torch.where(wl > low_wl, f / c["factor"], mid))


def draw(probs):
    """One index per row of `probs` (non-negative, not necessarily normalised), drawn with
    probability proportional to it: gpt-fast's exponential trick, no host sync."""
    q = torch.empty_like(probs).exponential_(1)
    return torch.argmax(probs / q.clamp_min(torch.finfo(q.dtype).tiny), dim=-1)


def sample(logits, temperature, top_k, top_p):
    """The next token of each row of `logits` [B, vocab]: softmax at `temperature` over the
    `top_k` most likely tokens (0: all), then the shortest prefix of them, most likely first,
    whose probability reaches `top_p`."""
    x = logits.float() / temperature
    if top_k == 0:
        return draw(torch.softmax(x, -1))
    v, idx = torch.topk(x, min(top_k, x.shape[-1]), dim=-1)  # sorted, most likely first
    probs = torch.softmax(v, -1)
    if top_p < 1.0:
        # Keep token i while the tokens before it add up to less than top_p.
        probs = torch.where(probs.cumsum(-1) - probs < top_p, probs, 0.0)
    return idx.gather(-1, draw(probs)[:, None])[:, 0]


class Llama(torch.nn.Module):
    def __init__(self, c, batch, max_seq, dev):
        super().__init__()
        H, I, hd, nq, nk = c["hidden"], c["inter"], c["hd"], c["heads"], c["kv"]
        g = torch.Generator(device=dev).manual_seed(1)
        rnd = lambda *s, std: (torch.randn(*s, generator=g, device=dev, dtype=torch.float32) * std).to(torch.bfloat16)
        self.c = c
        self.emb = rnd(c["vocab"], H, std=2 / math.sqrt(H))
        self.head = self.emb if c["tied"] else rnd(c["vocab"], H, std=2 / math.sqrt(H))
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

    def logits(self, tokens, pos):
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
        return self.rms(x, self.norm) @ self.head.t()

    def step(self, tokens, pos):
        """Greedy: the step as before issue #32."""
        logits = self.logits(tokens, pos)
        tokens.copy_(logits.argmax(-1).to(tokens.dtype))
        pos.add_(1)

    def step_topk(self, tokens, pos):
        tokens.copy_(sample(self.logits(tokens, pos), *SAMPLING["topk"]).to(tokens.dtype))
        pos.add_(1)

    def step_plain(self, tokens, pos):
        tokens.copy_(sample(self.logits(tokens, pos), *SAMPLING["plain"]).to(tokens.dtype))
        pos.add_(1)

    def step_for(self, mode):
        return {"greedy": self.step, "topk": self.step_topk, "plain": self.step_plain}[mode]


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


def parse_list(text, what, ok):
    out = [x.strip() for x in text.split(",") if x.strip()]
    bad = [x for x in out if not ok(x)]
    if not out or bad:
        raise SystemExit(f"torch_llama: {what}: {bad or 'empty'} not accepted")
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--config", default="llama-3.2-1b", choices=sorted(CONFIGS))
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--tokens", type=int, default=32)
    ap.add_argument("--max-seq", type=int, default=2112)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--positions", default="64,2000")
    ap.add_argument("--sampling", default="greedy", help="comma list of greedy, topk, plain")
    ap.add_argument("--paths", default="eager,graph,compile",
                    help="comma list of eager, graph, compile (max-autotune-no-cudagraphs), compile-default (mode default)")
    ap.add_argument("--no-compile", action="store_true", help="the same as leaving compile out of --paths")
    ap.add_argument("--compile-dynamic", action="store_true",
                    help="torch.compile's default dynamic=None (automatic dynamic shapes), as before issue #32")
    a = ap.parse_args()
    CFG = CONFIGS[a.config]
    batches = [int(x) for x in parse_list(a.batches, "--batches", lambda x: x.isdigit() and int(x) > 0)]
    positions = [int(x) for x in parse_list(a.positions, "--positions", str.isdigit)]
    modes = list(dict.fromkeys(parse_list(a.sampling, "--sampling", lambda x: x in MODES)))
    paths = list(dict.fromkeys(parse_list(a.paths, "--paths", lambda x: x in PATHS)))
    if a.no_compile and "compile" in paths:
        paths.remove("compile")
    if not paths:
        raise SystemExit("torch_llama: no path left to time")
    for P in positions:
        if P + a.tokens > a.max_seq:
            raise SystemExit(f"torch_llama: position {P} + {a.tokens} tokens = {P + a.tokens} does not fit "
                             f"--max-seq {a.max_seq}; raise --max-seq to at least {P + a.tokens}")
    dev = torch.device("cuda")
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = True
    # Random ops in compiled code: aten's (capture-safe), not inductor's (see the docstring).
    torch._inductor.config.fallback_random = True
    # One compiled step per (batch, mode) of the same code object: stay below the limit.
    for name in ("recompile_limit", "cache_size_limit"):
        if hasattr(torch._dynamo.config, name):
            setattr(torch._dynamo.config, name, max(getattr(torch._dynamo.config, name), 64))
    sampled = any(m != "greedy" for m in modes)
    peak = peak_bandwidth(torch.cuda.current_device())
    against = f"this device's peak, {peak / 1e12:.2f} TB/s" if peak else "nothing (the driver does not say)"
    print(f"# torch {torch.__version__}, {torch.cuda.get_device_name()}: {CFG['name']} config, bf16, max_seq {a.max_seq}; "
          f"HBM share against {against}")
    if sampled:
        print("\n| batch | position | path | ms/token (median) | min | max | tokens/s | HBM share | kernels/step | capture+instantiate ms | sampling | ÷ greedy |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    else:
        print("\n| batch | position | path | ms/token (median) | min | max | tokens/s | HBM share | kernels/step | capture+instantiate ms |")
        print("|---|---|---|---|---|---|---|---|---|---|")
    for B in batches:
        torch.manual_seed(0)
        m = Llama(CFG, B, a.max_seq, dev)
        weights = sum(t.numel() * 2 for t in [m.emb, m.norm] + ([] if CFG["tied"] else [m.head]) + [L[k] for L in m.layers for k in ("n1", "n2", "qkv", "o", "gu", "d")])
        tokens = torch.arange(1000, 1000 + B, device=dev, dtype=torch.int64)
        pos = torch.full((B,), 64, device=dev, dtype=torch.int64)
        runs = []  # (mode, path name, eager fn or None, graph or None, capture ms)
        for mode in modes:
            step = m.step_for(mode)
            if "eager" in paths:
                runs.append((mode, PATHS["eager"], step, None, None))
            if "graph" in paths:
                g, ms = capture(step, tokens, pos)
                runs.append((mode, PATHS["graph"], None, g, ms))
            for path in ("compile", "compile-default"):
                if path not in paths:
                    continue
                t0 = time.perf_counter()
                kw = {} if a.compile_dynamic else {"dynamic": False}
                if path == "compile-default":
                    torch._dynamo.reset()  # a fresh compile, not the autotuned one's cache
                cstep = torch.compile(step, mode=COMPILE_MODES[path], fullgraph=True, **kw)
                cstep(tokens, pos)
                torch.cuda.synchronize()
                label = f"batch {B}" if mode == "greedy" else f"batch {B}, sampling {mode}"
                print(f"<!-- {path} for {label}: {time.perf_counter() - t0:.0f} s -->", flush=True)
                g2, ms2 = capture(cstep, tokens, pos)
                runs.append((mode, PATHS[path], None, g2, ms2))
        kernels = [kernels_per_replay(g) if g is not None else "-" for (_, _, _, g, _) in runs]
        for P in positions:
            kv_bytes = 2 * CFG["layers"] * B * CFG["kv"] * CFG["hd"] * 2 * (P + a.tokens / 2)
            times = [[] for _ in runs]
            # Round by round, every mode, every path.
            for r in range(a.rounds + 1):
                for i, (mode, name, fn, g, _) in enumerate(runs):
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
            meds = {}
            for (mode, name, _, _, _), t in zip(runs, times):
                t.sort()
                meds[(mode, name)] = t[len(t) // 2]
            for (mode, name, fn, g, cap), t, kern in zip(runs, times, kernels):
                med = meds[(mode, name)]
                share = f"{(weights + kv_bytes) / (med * 1e-3) / peak * 100:.0f}%" if peak else "-"
                capt = f"{cap:.1f}" if cap is not None else "-"
                greedy = meds.get(("greedy", name))
                row = f"| {B} | {P} | {name} | {med:.3f} | {t[0]:.3f} | {t[-1]:.3f} | {B * 1e3 / med:.0f} | {share} | {kern} | {capt} |"
                if sampled:
                    row += f" {mode} | {med / greedy:.3f} |" if greedy else f" {mode} | - |"
                print(row)
                d = dict(side="torch", batch=B, pos=P, path=name, sampling=mode, ms=med, min=t[0], max=t[-1], kernels=kern, capture_ms=cap)
                if greedy and mode != "greedy":
                    d["vs_greedy"] = med / greedy
                print("json " + json.dumps(d), flush=True)
        del m, runs
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
