#!/usr/bin/env python3
"""Real-shape conformance checkpoints for capture-candle (issue #31, part 5), made on the GPU
machine, where torch and transformers are installed (they are too large to commit).

For the Llama-3.2-1B and Qwen2.5-0.5B shapes (random seeded weights, initialised as
make_fixtures.py initialises its small models), saves each model with transformers'
`save_pretrained` in bfloat16, in the transformers 5 config form and, beside it, the
transformers 4 form (the same weights, config.json rewritten by make_fixtures.to_v4), and
records transformers' float32 goldens computed on the GPU with eager attention and TF32 off:
prompts of 13, 150, 300, 4,200 and 8,100 tokens, 40 greedy steps, each step's full logits.
The long prompts make capture-candle's decode attention cut the prefix into many chunks (up to
16), which the short ones never reach; the longest takes decode to positions 8,100 to 8,139,
where the benchmarks time it (docs/benchmarks-llama.md), near the end of the Llama 3 RoPE's
original 8,192 positions. The folders have
make_fixtures.py's layout, so capture-candle's `real_shapes_match_transformers_gpu` reads them:

    python3 scripts/conformance/real_shapes.py --out /tmp/real
    CAPTURE_CONFORMANCE_REAL=/tmp/real <conformance test binary> --ignored real_shapes

The small text fixture's tokenizer (capture-candle/tests/fixtures/text) is copied into each
folder, so `generate --model DIR --prompt "..."` runs on them (random weights: the text is
noise; the pipeline is what runs).
"""

import argparse
import importlib.util
import json
import os
import shutil

import torch
import transformers
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
spec = importlib.util.spec_from_file_location("make_fixtures", os.path.join(HERE, "make_fixtures.py"))
mf = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mf)

LLAMA_3_2_1B = dict(
    family="llama",
    hidden_size=2048,
    intermediate_size=8192,
    num_hidden_layers=16,
    num_attention_heads=32,
    num_key_value_heads=8,
    head_dim=64,
    vocab_size=128256,
    rms_norm_eps=1e-5,
    max_position_embeddings=131072,
    tie_word_embeddings=True,
    rope_parameters=dict(
        rope_type="llama3",
        rope_theta=500000.0,
        factor=32.0,
        low_freq_factor=1.0,
        high_freq_factor=4.0,
        original_max_position_embeddings=8192,
    ),
)
QWEN2_5_0_5B = dict(
    family="qwen2",
    hidden_size=896,
    intermediate_size=4864,
    num_hidden_layers=24,
    num_attention_heads=14,
    num_key_value_heads=2,
    head_dim=64,
    vocab_size=151936,
    rms_norm_eps=1e-6,
    max_position_embeddings=32768,
    tie_word_embeddings=True,
    rope_parameters=dict(rope_type="default", rope_theta=1000000.0),
)
PROMPTS = {"p13": 13, "p150": 150, "p300": 300, "p4200": 4200, "p8100": 8100}
STEPS = 40


@torch.no_grad()
def golden(model, prompts):
    """transformers' greedy continuation and every step's logits, in float32 on the GPU."""
    out = {}
    for name, prompt in prompts.items():
        seq = list(prompt)
        toks, logits = [], []
        for _ in range(STEPS):
            ids = torch.tensor([seq], dtype=torch.long, device="cuda")
            last = model(input_ids=ids, use_cache=False).logits[0, -1].float()
            t = int(torch.argmax(last))
            toks.append(t)
            logits.append(last.cpu().clone())
            seq.append(t)
        out[f"{name}.prompt"] = torch.tensor(prompt, dtype=torch.int64)
        out[f"{name}.tokens"] = torch.tensor(toks, dtype=torch.int64)
        out[f"{name}.logits"] = torch.stack(logits).contiguous()
    return out


def make(name, shape, out):
    shape = dict(shape)
    family = shape.pop("family")
    seed = sum(ord(c) for c in name) * 1009
    gen = torch.Generator().manual_seed(seed)
    if family == "llama":
        cls, cfg = transformers.LlamaForCausalLM, transformers.LlamaConfig(**shape, bos_token_id=1, eos_token_id=2)
    else:
        cls, cfg = transformers.Qwen2ForCausalLM, transformers.Qwen2Config(**shape)
    torch.manual_seed(seed)
    model = cls(cfg)
    mf.init_weights(model, gen)
    model = model.to(torch.bfloat16)
    v5 = os.path.join(out, f"{name}-v5")
    shutil.rmtree(v5, ignore_errors=True)
    model.save_pretrained(v5, safe_serialization=True)
    gc = os.path.join(v5, "generation_config.json")
    if os.path.exists(gc):
        os.remove(gc)
    vocab = shape["vocab_size"]
    prompts = {p: torch.randint(0, vocab, (n,), generator=gen).tolist() for p, n in PROMPTS.items()}
    # The goldens: the saved bfloat16 weights, upcast to float32, on the GPU.
    ref = cls.from_pretrained(v5, dtype=torch.float32, attn_implementation="eager").cuda().eval()
    g = golden(ref, prompts)
    del ref
    torch.cuda.empty_cache()
    v4 = os.path.join(out, f"{name}-v4")
    shutil.rmtree(v4, ignore_errors=True)
    shutil.copytree(v5, v4)
    mf.to_v4(os.path.join(v4, "config.json"))
    for form, d in (("v5", v5), ("v4", v4)):
        meta = {
            "case": f"{name}-{form}",
            "family": family,
            "config_form": form,
            "stored_dtype": "bfloat16",
            "transformers_version": transformers.__version__,
            "torch_version": torch.__version__,
            "attention": "eager",
            "compute_dtype": "float32 (cuda, tf32 off)",
            "steps": str(STEPS),
            "prompts": ",".join(PROMPTS),
        }
        save_file(g, os.path.join(d, "golden.safetensors"), metadata=meta)
        text = os.path.join(ROOT, "capture-candle", "tests", "fixtures", "text")
        for f in ("tokenizer.json", "tokenizer_config.json", "generation_config.json"):
            if os.path.exists(os.path.join(text, f)):
                shutil.copy(os.path.join(text, f), d)
        with open(os.path.join(d, "config.json")) as f:
            cfg = json.load(f)
        print(d, {k: cfg.get(k) for k in ("rope_parameters", "rope_theta", "rope_scaling", "dtype", "torch_dtype")})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    make("llama-3.2-1b", LLAMA_3_2_1B, args.out)
    make("qwen2.5-0.5b", QWEN2_5_0_5B, args.out)
    print("transformers", transformers.__version__, "torch", torch.__version__)


if __name__ == "__main__":
    main()
