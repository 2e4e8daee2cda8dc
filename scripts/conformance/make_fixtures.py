#!/usr/bin/env python3
"""Conformance fixtures for capture-candle's Llama and Qwen2 decoders (issue #31).

Makes small seeded checkpoints of `LlamaForCausalLM` and `Qwen2ForCausalLM` with Hugging
Face transformers (`save_pretrained(..., safe_serialization=True)`), and records what
transformers computes with them in float32 (eager attention): for each of two prompts, the
logits of the prompt's last position and a greedy continuation, each step's token and full
logits. capture-candle's `tests/conformance.rs` loads every fixture with `Model::from_dir`
and compares.

    python3 scripts/conformance/make_fixtures.py            # writes the fixtures
    python3 scripts/conformance/make_fixtures.py --check    # recomputes, compares, writes nothing

Needs `pip install torch transformers safetensors` (transformers 5: it writes the
`rope_parameters` form by itself). The weights are seeded, so a rerun with the same torch
gives the same checkpoints; the goldens may move in the last bits with another torch build.

Each fixture folder, `capture-candle/tests/fixtures/transformers/<case>/`, holds:

- `config.json`, in one of two forms:
  - `v5`: as transformers 5 writes it (`rope_parameters` holding `rope_theta` and
    `rope_type`, the dtype as `dtype`);
  - `v4`: the classic form of transformers 4.4x, made here by rewriting the keys of the
    config.json that transformers 5 wrote: `rope_parameters.rope_theta` becomes the top-level
    `rope_theta`; the rest of `rope_parameters` becomes `rope_scaling` (or `null` for
    `rope_type: "default"`); `dtype` becomes `torch_dtype`; Qwen2's `layer_types`, which 4.4x
    did not write, is dropped. Nothing else changes (`transformers_version` included). The
    goldens of a v4 case are computed from the rewritten file, reloaded by transformers, and
    the script checks they equal those of the v5 file it was made from, bit for bit.
- `model.safetensors`: the weights, in bfloat16 (what real Llama 3 and Qwen2.5 checkpoints
  hold, and half the bytes of float32) except for one case in float32 (the other load
  path). transformers computes the goldens after upcasting the stored weights to float32,
  and so does the Rust test: both run on exactly the same numbers, so bfloat16 storage costs
  nothing in what the test can see.
- `golden.safetensors`: for each prompt `P` (`short`: 13 tokens; `long`: 150 tokens, so that
  decoding reads more than 128 keys):
  - `P.prompt`, int64 `[L]`: the prompt's token ids;
  - `P.tokens`, int64 `[N]`: the greedy continuation: `tokens[0]` is the argmax of the
    prompt's last logits, `tokens[i]` the argmax after `tokens[..i]` were appended;
  - `P.logits`, float32 `[N, vocab]`: `logits[0]` the prompt's last position, `logits[i]`
    the last position after `tokens[..i]` were appended (each a full forward over the whole
    sequence, no KV cache).
  The header's metadata records the case, the transformers and torch versions, and the
  config form.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "capture-candle", "tests", "fixtures", "transformers")

# The hidden size: 64, or a multiple of the query heads where 64 is not one (transformers
# checks that hidden_size divides by num_attention_heads even where head_dim is given).
HIDDEN = {7: 56, 6: 48, 3: 48}
INTERMEDIATE = 128
LAYERS = 2
VOCAB = 384
SHORT = 13
LONG = 150
STEPS = 10  # greedy tokens per prompt

# Llama 3.2's RoPE scaling, and one whose original context (64) is short enough that the
# scaling changes the angles at the fixtures' positions (at 8192, positions below 160 barely
# feel it).
LLAMA32_ROPE = {"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                "original_max_position_embeddings": 8192}
SHORT_LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                     "original_max_position_embeddings": 64}

# name, family, query heads, key/value heads, head_dim, tied, rope theta, llama3 scaling,
# config form, stored dtype
CASES = [
    ("llama-v5-gqa4-d64-tied-llama3", "llama", 8, 2, 64, True, 500000.0, LLAMA32_ROPE, "v5", "bfloat16"),
    ("llama-v4-gqa1-d128-untied", "llama", 2, 2, 128, False, 10000.0, None, "v4", "float32"),
    ("llama-v4-gqa7-d64-untied-llama3", "llama", 7, 1, 64, False, 500000.0, SHORT_LLAMA3_ROPE, "v4", "bfloat16"),
    ("llama-v5-gqa3-d128-tied", "llama", 6, 2, 128, True, 500000.0, None, "v5", "bfloat16"),
    ("qwen2-v5-gqa7-d64-tied", "qwen2", 7, 1, 64, True, 1000000.0, None, "v5", "bfloat16"),
    ("qwen2-v4-gqa3-d128-untied", "qwen2", 3, 1, 128, False, 1000000.0, None, "v4", "bfloat16"),
    ("qwen2-v4-gqa4-d64-tied", "qwen2", 4, 1, 64, True, 1000000.0, None, "v4", "bfloat16"),
    ("qwen2-v5-gqa1-d128-untied", "qwen2", 2, 2, 128, False, 10000.0, None, "v5", "bfloat16"),
]


def make_config(family, nq, nk, d, tied, theta, scaling):
    rope = {"rope_type": "default", "rope_theta": theta}
    if scaling is not None:
        rope = dict(scaling, rope_theta=theta)
    common = dict(
        hidden_size=HIDDEN.get(nq, 64),
        intermediate_size=INTERMEDIATE,
        num_hidden_layers=LAYERS,
        num_attention_heads=nq,
        num_key_value_heads=nk,
        head_dim=d,
        vocab_size=VOCAB,
        rope_parameters=rope,
        tie_word_embeddings=tied,
        max_position_embeddings=131072 if scaling is LLAMA32_ROPE else 4096,
        rms_norm_eps=1e-5 if family == "llama" else 1e-6,
    )
    if family == "llama":
        return LlamaForCausalLM, LlamaConfig(**common, bos_token_id=1, eos_token_id=2)
    return Qwen2ForCausalLM, Qwen2Config(**common)


@torch.no_grad()
def init_weights(model, gen):
    """Weights large enough that the logits spread (transformers' own init, std 0.02, gives
    near-uniform logits whose argmax is a coin toss): linear layers N(0, 1/fan_in), except the
    output and down projections, N(0, 16/fan_in), so that the layers move the residual stream
    away from the token's own embedding (else a tied head mostly predicts the input token
    again), and an untied LM head, N(0, 4/fan_in); the embedding N(0, 0.5^2); RMSNorm weights
    1 + N(0, 0.1^2); Qwen2's q/k/v biases N(0, 0.2^2)."""
    for name, p in sorted(model.named_parameters()):
        if name.endswith("embed_tokens.weight"):
            p.copy_(torch.randn(p.shape, generator=gen) * 0.5)
        elif "norm" in name:
            p.copy_(1.0 + torch.randn(p.shape, generator=gen) * 0.1)
        elif name.endswith(".bias"):
            p.copy_(torch.randn(p.shape, generator=gen) * 0.2)
        elif name == "lm_head.weight":
            p.copy_(torch.randn(p.shape, generator=gen) * 2 / p.shape[1] ** 0.5)
        elif name.endswith(("o_proj.weight", "down_proj.weight")):
            p.copy_(torch.randn(p.shape, generator=gen) * 4 / p.shape[1] ** 0.5)
        else:
            p.copy_(torch.randn(p.shape, generator=gen) / p.shape[1] ** 0.5)


def to_v4(path):
    """Rewrites a transformers 5 config.json into the transformers 4 form (see the module
    docstring)."""
    with open(path) as f:
        cfg = json.load(f)
    rope = dict(cfg.pop("rope_parameters"))
    cfg["rope_theta"] = rope.pop("rope_theta")
    cfg["rope_scaling"] = None if rope.get("rope_type", "default") == "default" else rope
    cfg["torch_dtype"] = cfg.pop("dtype")
    cfg.pop("layer_types", None)
    with open(path, "w") as f:
        json.dump(dict(sorted(cfg.items())), f, indent=2)
        f.write("\n")


@torch.no_grad()
def golden(model_dir, cls, prompts):
    """Greedy continuations and logits computed by transformers in float32."""
    model = cls.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    model.eval()
    out = {}
    for pname, prompt in prompts.items():
        seq = list(prompt)
        toks, logits = [], []
        for _ in range(STEPS):
            ids = torch.tensor([seq], dtype=torch.long)
            last = model(input_ids=ids, use_cache=False).logits[0, -1].float()
            t = int(torch.argmax(last))
            toks.append(t)
            logits.append(last.clone())
            seq.append(t)
        out[f"{pname}.prompt"] = torch.tensor(prompt, dtype=torch.int64)
        out[f"{pname}.tokens"] = torch.tensor(toks, dtype=torch.int64)
        out[f"{pname}.logits"] = torch.stack(logits).contiguous()
    return out


def make_case(case, dest):
    name, family, nq, nk, d, tied, theta, scaling, form, dtype = case
    seed = sum(ord(c) for c in name) * 1009
    gen = torch.Generator().manual_seed(seed)
    cls, cfg = make_config(family, nq, nk, d, tied, theta, scaling)
    torch.manual_seed(seed)
    model = cls(cfg)
    init_weights(model, gen)
    model = model.to(getattr(torch, dtype))
    os.makedirs(dest, exist_ok=True)
    model.save_pretrained(dest, safe_serialization=True)
    gc = os.path.join(dest, "generation_config.json")
    if os.path.exists(gc):
        os.remove(gc)  # the Rust side reads config.json and *.safetensors only
    prompts = {
        "short": torch.randint(0, VOCAB, (SHORT,), generator=gen).tolist(),
        "long": torch.randint(0, VOCAB, (LONG,), generator=gen).tolist(),
    }
    g = golden(dest, cls, prompts)
    if form == "v4":
        to_v4(os.path.join(dest, "config.json"))
        g4 = golden(dest, cls, prompts)
        for k in g:
            assert torch.equal(g[k], g4[k]), f"{name}: the v4 rewrite changed {k}"
    meta = {
        "case": name,
        "family": family,
        "config_form": form,
        "stored_dtype": dtype,
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
        "attention": "eager",
        "compute_dtype": "float32",
        "steps": str(STEPS),
    }
    save_file(g, os.path.join(dest, "golden.safetensors"), metadata=meta)
    return g


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="recompute into a temporary folder and compare")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    bad = 0
    for case in CASES:
        name = case[0]
        if args.check:
            with tempfile.TemporaryDirectory() as tmp:
                g = make_case(case, os.path.join(tmp, name))
            have = load_file(os.path.join(args.out, name, "golden.safetensors"))
            for k, v in g.items():
                if v.dtype == torch.float32:
                    scale = have[k].abs().max().item()
                    err = (v - have[k]).abs().max().item() / scale
                    ok = err <= 1e-6
                else:
                    err, ok = 0.0, torch.equal(v, have[k])
                bad += not ok
                print(f"{name} {k}: {'ok' if ok else 'DIFFERS'} (max |diff| / max |logit| {err:.2e})")
        else:
            dest = os.path.join(args.out, name)
            shutil.rmtree(dest, ignore_errors=True)
            g = make_case(case, dest)
            size = sum(os.path.getsize(os.path.join(dest, f)) for f in os.listdir(dest))
            gaps = []
            for p in ("short", "long"):
                top2 = torch.topk(g[f"{p}.logits"], 2, dim=1).values
                gaps.append((top2[:, 0] - top2[:, 1]).min().item())
            print(f"{name}: {size / 1024:.0f} KiB, tokens short {g['short.tokens'].tolist()} "
                  f"long {g['long.tokens'].tolist()}, smallest top-2 gap {min(gaps):.3g}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
