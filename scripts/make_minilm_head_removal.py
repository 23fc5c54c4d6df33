"""Switch each of the 72 heads of all-MiniLM-L6-v2 off on its own, and measure the embedding.

Notebook 07 asks whether where a head looks tells you how much it matters. It reads
this file for all 72 heads (72 runs of the model over every sentence: about a minute on
two cores, too slow for a notebook) and recomputes the heads it names live.

    .venv/bin/python scripts/make_minilm_head_removal.py

Writes ``data/models/minilm_head_removal.json``: the sentences (every sentence of
``data/sentences/heads.json``, ``key_senses.json`` and ``pruning.json``'s tuning and
held-out lists, each once), and per head (layer, head counted from 0) the cosine of
each sentence's embedding with that head off to its embedding with every head on, and
the head's share of weight on words (not [CLS], [SEP] or punctuation), averaged over
the same sentences. Deterministic: the same model and sentences give the same file.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "models" / "minilm_head_removal.json"


def removal_texts() -> list[str]:
    """The sentences the file is measured on, in a fixed order, each once."""
    from mha_core.pretrained.data import sentence_set

    pruning = sentence_set("pruning")
    texts = (sentence_set("heads")["sentences"] + sentence_set("key_senses")["sentences"]
             + pruning["tuning"] + pruning["held_out"])
    return list(dict.fromkeys(texts))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)

    from mha_core.pretrained import load_minilm
    from mha_core.pretrained.analysis import attention_on_words, single_head_removal

    model = load_minilm()
    texts = removal_texts()
    start = time.perf_counter()
    cosines = single_head_removal(model, texts)  # (L, H, N)
    on_words = attention_on_words(model, texts)  # (L, H)
    seconds = time.perf_counter() - start
    record = {
        "about": "Each head of all-MiniLM-L6-v2 switched off on its own (output zeroed before the output "
                 "projection, the bias kept); cosine of each sentence's embedding to the full model's. "
                 "Layers and heads counted from 0.",
        "made_by": "scripts/make_minilm_head_removal.py",
        "texts": texts,
        "cosines": [[[round(float(c), 7) for c in cosines[l, h]] for h in range(model.n_heads)]
                    for l in range(model.n_layers)],
        "attention_on_words": [[round(float(v), 7) for v in row] for row in on_words],
        "seconds": round(seconds, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"wrote {args.out}: {len(texts)} sentences, 72 heads, in {seconds:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
