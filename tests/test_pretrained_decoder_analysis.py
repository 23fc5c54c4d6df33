"""mha_core.pretrained.decoder_analysis, and the claims notebook 07 and the serving-cost notebook make about SmolLM2.

The notebooks print these numbers live; this module keeps their prose from drifting.
"""

from __future__ import annotations


import numpy as np
import pytest

from mha_core import RUNNING_SENTENCE, costs
from mha_core.pretrained import decoder_analysis as da
from mha_core.pretrained.data import sentence_set



def _causal_uniform(L, H, T):
    a = np.tril(np.ones((T, T)))
    return np.broadcast_to(a / a.sum(axis=-1, keepdims=True), (L, H, T, T))


def test_a_head_that_always_looks_one_back_scores_1_and_an_even_head_scores_its_baseline():
    T = 7
    previous = np.zeros((1, 1, T, T))
    previous[0, 0, 0, 0] = 1
    previous[0, 0, np.arange(1, T), np.arange(T - 1)] = 1
    assert da.previous_token_share(previous)[0, 0] == 1.0
    assert da.first_token_share(previous)[0, 0] == pytest.approx(1 / (T - 1))
    even = _causal_uniform(2, 3, T)
    np.testing.assert_allclose(da.first_token_share(even), da.uniform_first_token_share(T))
    assert da.uniform_first_token_share(2) == 0.5


def test_top_heads_are_largest_first_counted_from_0():
    scores = np.array([[0.1, 0.9], [0.5, 0.2]])
    assert da.top_heads(scores, 2) == [(0, 1, 0.9), (1, 0, 0.5)]
    with pytest.raises(ValueError, match="k=5 is too large"):
        da.top_heads(scores, 5)


def test_bad_attentions_are_refused():
    with pytest.raises(ValueError, match=r"shape \(L, H, T, T\)"):
        da.previous_token_share(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="at least 3"):
        da.previous_token_share(np.ones((1, 1, 2, 2)))
    with pytest.raises(ValueError, match="attention_sets is empty"):
        da.mean_share([], da.first_token_share)


# --------------------------------------------------------------------------- notebook 07, section 6


@pytest.fixture(scope="module")
def heads_sets(smol):
    return [smol.run(text).attentions for text in sentence_set("heads")["sentences"]]


def test_the_running_sentence_is_six_whole_word_tokens_and_no_head_looks_ahead(smol):
    run = smol.run(RUNNING_SENTENCE)
    assert run.tokens == ("the", " cache", " key", " changed", " after", " deploy")
    assert run.attentions.shape == (30, 9, 6, 6) and run.logits.shape == (6, 49152)
    assert run.attentions[..., np.triu(np.ones((6, 6), dtype=bool), k=1)].max() == 0.0
    l2_h3 = run.attentions[1, 2]  # the figure's large table: queries 2-6 put their largest weight one back
    assert l2_h3[1:].argmax(axis=-1).tolist() == [0, 1, 2, 3, 4]


def test_what_07_says_about_smollm2s_previous_token_heads(heads_sets):
    share = da.mean_share(heads_sets, da.previous_token_share)
    top = [(l + 1, h + 1, round(s, 2)) for l, h, s in da.top_heads(share, 5)]
    assert top[:4] == [(17, 1, 0.75), (2, 3, 0.74), (12, 2, 0.71), (3, 2, 0.62)]
    assert top[4] == (20, 4, 0.42)


def test_what_07_says_about_weight_parked_on_the_first_token(heads_sets):
    share = da.mean_share(heads_sets, da.first_token_share)
    assert int((share > 0.5).sum()) == 204 and share.size == 270
    even = [da.uniform_first_token_share(a.shape[-1]) for a in heads_sets]
    assert (round(min(even), 2), round(max(even), 2)) == (0.19, 0.29)
    assert round(float(share[:2].max()), 2) == 0.31


# --------------------------------------------------------------------------- the serving-cost notebook, the decoder section


def test_what_the_serving_notebook_says_about_smollm2s_cache_and_grouped_query_attention(smol):
    shape = costs.MODEL_SHAPES["SmolLM2-135M"]
    cached = smol.generate("The capital of France is", 8)
    uncached = smol.generate("The capital of France is", 8, use_cache=False)
    assert cached.new_ids.tolist() == uncached.new_ids.tolist() and cached.text.startswith(" Paris.")
    assert cached.cache.bytes_per_token == shape.kv_cache_bytes_per_token() == 23_040
    assert cached.cached_tokens[0] == 5 and np.all(np.diff(cached.cache_bytes) == 23_040)
    assert shape.kv_cache_bytes(1, n_kv_heads=9) == 69_120
    assert round(69_120 * 8192 / 2**20) == 540 and round(23_040 * 8192 / 2**20) == 180
    extra = 30 * (costs.attention_parameters(576, 9, bias=False) - costs.attention_parameters(576, 9, 3, bias=False))
    assert extra == 13_271_040 and f"{extra / shape.n_parameters:.0%}" == "10%"
