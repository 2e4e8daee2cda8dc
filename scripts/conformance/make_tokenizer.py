#!/usr/bin/env python3
"""Builds the small tokenizer that capture-candle's text tests read (issue #31, parts 3-4).

Writes into capture-candle/tests/fixtures/text/:

- tokenizer.json: a byte-level BPE trained here on a few sentences (a few hundred tokens),
  pre-tokenized as Llama 3's is (its split pattern, then byte-level), with Llama 3's special
  tokens (added tokens after the BPE vocabulary) and a post-processor that puts <|begin_of_text|> in front;
- tokenizer_config.json: bos/eos tokens and a Llama-3-style chat template (written for
  these tests; it uses `.strip()`, `trim`, `raise_exception`, `loop_controls` and relies on
  trim_blocks/lstrip_blocks, as transformers renders templates);
- generation_config.json: the stop tokens (<|end_of_text|>, <|eot_id|>);
- expected.json: what the Python tokenizers and transformers give for the same inputs — the
  ids of some texts, and the chat template rendered by `apply_chat_template` (as text and
  as ids). The Rust tests compare against these.

Run: pip install tokenizers transformers jinja2 && python3 scripts/conformance/make_tokenizer.py
The output is deterministic for one version of tokenizers (the versions used are recorded
in expected.json).
"""

import json
import os
import sys

import tokenizers
import transformers
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "capture-candle", "tests", "fixtures", "text")

SPECIAL = [
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
]

# Llama 3's pre-tokenizer split pattern (contractions, letters, numbers of up to three
# digits, punctuation, newlines, spaces with a look-ahead).
SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

CORPUS = [
    "Hello world! This is a tiny tokenizer for the text tests of capture-candle.",
    "The quick brown fox jumps over the lazy dog. héllo wörld, ça va? 🙂",
    "Text in, text out: prompts are encoded, tokens decoded as they stream.",
    "Numbers like 12345 and 2024 are split in groups of three digits.",
    "You are a helpful assistant. Be brief. Say hello again, please.",
    "Données, naïve café, 東京, Ελληνικά — multi-byte text decodes whole.",
    "user assistant system\n\nline one\nline two\n",
] * 4

# A Llama-3-style chat template written for these tests.
CHAT_TEMPLATE = """{%- if messages[0].role == 'system' %}
    {%- set system = messages[0].content.strip() %}
    {%- set rest = messages[1:] %}
{%- else %}
    {%- set system = 'You are a small test model.' %}
    {%- set rest = messages %}
{%- endif %}
{{- bos_token }}<|start_header_id|>system<|end_header_id|>

{{ system }}<|eot_id|>
{% for m in rest %}
    {% if m.role not in ['user', 'assistant'] %}
        {{ raise_exception('after the system message, roles are user or assistant, not ' + m.role) }}
    {% endif %}
    {% if m.content == '' %}
        {% continue %}
    {% endif %}
<|start_header_id|>{{ m.role }}<|end_header_id|>

{{ m.content | trim }}<|eot_id|>
{% endfor %}
{% if add_generation_prompt %}
<|start_header_id|>assistant<|end_header_id|>

{% endif %}"""

MESSAGES = [
    {"role": "system", "content": "  Be brief.  "},
    {"role": "user", "content": "Say héllo 🙂"},
    {"role": "assistant", "content": "héllo 🙂 "},
    {"role": "user", "content": ""},
    {"role": "user", "content": "Again, in 東京?"},
]

TEXTS = [
    "Hello world!",
    "héllo 🙂",
    "Text in, text out: 12345 tokens.\n\nDone",
    "東京 ça Ελληνικά — 🙂🙂",
]


def build() -> Tokenizer:
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(SPLIT), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False),
        ]
    )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS, trainer=trainer)
    # Added after training, so that their ids follow the BPE vocabulary, as Llama 3's do.
    tok.add_special_tokens(SPECIAL)
    bos = tok.token_to_id("<|begin_of_text|>")
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A",
        pair="<|begin_of_text|> $A <|begin_of_text|> $B",
        special_tokens=[("<|begin_of_text|>", bos)],
    )
    return tok


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    tok = build()
    tok.save(os.path.join(OUT, "tokenizer.json"), pretty=False)
    ids = {t: tok.token_to_id(t) for t in SPECIAL}
    added = {
        str(ids[t]): {
            "content": t,
            "lstrip": False,
            "normalized": False,
            "rstrip": False,
            "single_word": False,
            "special": True,
        }
        for t in SPECIAL
    }
    config = {
        "added_tokens_decoder": added,
        "bos_token": "<|begin_of_text|>",
        "chat_template": CHAT_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "eos_token": "<|eot_id|>",
        "model_input_names": ["input_ids", "attention_mask"],
        "model_max_length": 131072,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }
    with open(os.path.join(OUT, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=2, ensure_ascii=False)
        f.write("\n")
    generation = {
        "bos_token_id": ids["<|begin_of_text|>"],
        "do_sample": True,
        "eos_token_id": [ids["<|end_of_text|>"], ids["<|eot_id|>"]],
        "temperature": 0.6,
        "top_p": 0.9,
        "transformers_version": transformers.__version__,
    }
    with open(os.path.join(OUT, "generation_config.json"), "w") as f:
        json.dump(generation, f, indent=2)
        f.write("\n")

    # What transformers makes of these files.
    hf = transformers.AutoTokenizer.from_pretrained(OUT)
    rendered = hf.apply_chat_template(MESSAGES, tokenize=False, add_generation_prompt=True)
    chat_ids = hf.apply_chat_template(MESSAGES, tokenize=True, add_generation_prompt=True)
    if isinstance(chat_ids, dict) or hasattr(chat_ids, "keys"):
        chat_ids = chat_ids["input_ids"]
    plain = [{"role": "user", "content": "Hi"}]
    expected = {
        "versions": {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__},
        "vocab_size": tok.get_vocab_size(with_added_tokens=True),
        "special_ids": ids,
        "texts": [
            {
                "text": t,
                "ids": hf.encode(t, add_special_tokens=True),
                "ids_no_special": hf.encode(t, add_special_tokens=False),
            }
            for t in TEXTS
        ],
        "chat": {
            "messages": MESSAGES,
            "rendered": rendered,
            "ids": list(chat_ids),
        },
        "chat_no_system": {
            "messages": plain,
            "rendered": hf.apply_chat_template(plain, tokenize=False, add_generation_prompt=True),
            "rendered_no_generation_prompt": hf.apply_chat_template(
                plain, tokenize=False, add_generation_prompt=False
            ),
        },
    }
    with open(os.path.join(OUT, "expected.json"), "w") as f:
        json.dump(expected, f, indent=2, ensure_ascii=False)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(OUT, n)) for n in os.listdir(OUT))
    print(f"wrote {OUT}: vocabulary {expected['vocab_size']}, {total} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
