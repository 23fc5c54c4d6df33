"""Tests for mha_core.figures.qkv: each figure shows the numbers mha_core computes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_core.attention import attention_scores
from mha_core.examples import TOKENS, single_head_example
from mha_core.figures import qkv
from mha_core.projector import LAPTOP

D_MODEL, D_HEAD = 8, 4


X, _, (Q, K, V) = single_head_example(D_MODEL, D_HEAD)  # the notebook's x (6, 8) and q, k, v (6, 4)


def test_token_vectors_figure_shows_one_row_per_token_with_its_numbers():
    fig = qkv.token_vectors_figure(X, TOKENS)
    (trace,) = fig.data
    np.testing.assert_array_equal(trace.z, X)
    assert list(trace.y) == list(TOKENS)
    assert list(trace.x) == ["f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8"]
    np.testing.assert_array_equal(np.array(trace.text, dtype=float), np.round(X, 2))
    assert all(len(t.split(".")[1]) == 2 for t in np.ravel(trace.text))  # two decimals fit a laptop's cells
    assert "(T, D) = (6, 8)" in fig.layout.title.text
    assert fig.layout.yaxis.autorange == "reversed"  # first token at the top, as in a table


def test_signed_colour_scale_is_centred_on_zero_and_fixed_by_the_largest_entry():
    trace = qkv.token_vectors_figure(X, TOKENS).data[0]
    largest = np.abs(X).max()
    assert trace.zmin == pytest.approx(-largest) and trace.zmax == pytest.approx(largest)
    assert trace.zmid == 0


def test_qkv_matrices_figure_shows_q_k_and_v_on_one_colour_scale():
    fig = qkv.qkv_matrices_figure(Q, K, V, TOKENS)
    assert len(fig.data) == 3
    for trace, expected in zip(fig.data, (Q, K, V)):
        np.testing.assert_array_equal(trace.z, expected)
        assert list(trace.y) == list(TOKENS)
    assert len({t.zmax for t in fig.data}) == 1, "the three tables must share one colour range"
    titles = [a.text for a in fig.layout.annotations]
    assert titles == ["Q = x @ w_q (queries)", "K = x @ w_k (keys)", "V = x @ w_v (values)"]
    assert "(T, Dh) = (6, 4)" in fig.layout.title.text


@pytest.mark.parametrize("i", range(len(TOKENS)))
def test_token_figure_shows_the_tokens_q_k_v_and_its_raw_scores(i):
    fig = qkv.token_qkv_figure(Q, K, V, TOKENS, i)
    strip, keys, bars = fig.data
    np.testing.assert_array_equal(strip.z, np.stack([Q[i], K[i], V[i]]))
    np.testing.assert_array_equal(keys.z, K)
    assert list(keys.y) == list(bars.y) == list(TOKENS)
    # A raw score is a query-key dot product: the scaled scores times sqrt(Dh).
    np.testing.assert_allclose(bars.x, attention_scores(Q, K)[i] * np.sqrt(D_HEAD))
    assert list(bars.text) == [f"{s:+.2f}" for s in Q[i] @ K.T]
    assert f"'{TOKENS[i]}'" in fig.layout.title.text


def test_token_figure_marks_the_token_itself_without_relying_on_colour():
    i = TOKENS.index("key")
    fig = qkv.token_qkv_figure(Q, K, V, TOKENS, i)
    widths = list(fig.data[2].marker.line.width)
    assert widths[i] > 0 and sum(w > 0 for w in widths) == 1
    (rect,) = fig.layout.shapes
    assert (rect.y0, rect.y1) == (i - 0.5, i + 0.5)


def test_token_figure_keeps_its_ranges_when_the_token_changes():
    figs = [qkv.token_qkv_figure(Q, K, V, TOKENS, i) for i in range(len(TOKENS))]
    assert len({tuple(f.layout.xaxis3.range) for f in figs}) == 1
    assert len({f.data[0].zmax for f in figs}) == 1
    lo, hi = figs[0].layout.xaxis3.range
    all_scores = Q @ K.T
    assert lo <= all_scores.min() and all_scores.max() <= hi


def test_score_table_is_q_times_k_transposed_and_not_symmetric():
    fig = qkv.score_table_figure(Q @ K.T, TOKENS, TOKENS)
    (trace,) = fig.data
    np.testing.assert_allclose(trace.z, Q @ K.T)
    assert list(trace.y) == list(TOKENS) and list(trace.x) == list(TOKENS)
    c, k = TOKENS.index("cache"), TOKENS.index("key")
    # q_cache · k_key differs from q_key · k_cache: w_q and w_k differ.
    assert trace.z[c][k] != pytest.approx(trace.z[k][c])
    assert fig.layout.xaxis.title.text == "key token" and fig.layout.yaxis.title.text == "query token"


@pytest.mark.parametrize(
    "fig",
    [
        qkv.token_vectors_figure(X, TOKENS),
        qkv.qkv_matrices_figure(Q, K, V, TOKENS),
        qkv.token_qkv_figure(Q, K, V, TOKENS, 1),
        qkv.score_table_figure(Q @ K.T, TOKENS, TOKENS),
    ],
    ids=["vectors", "matrices", "token", "scores"],
)
def test_every_figure_is_readable_when_projected(fig):
    assert fig.layout.font.size >= 16
    assert fig.layout.title.text
    for trace in fig.data:
        if trace.textfont.size is not None:
            assert trace.textfont.size >= LAPTOP.min_text_size
    for annotation in fig.layout.annotations:
        assert annotation.font.size >= 16


@settings(max_examples=20)
@given(st.integers(2, 7), st.integers(1, 6), st.integers(0, 2**16), st.data())
def test_token_figure_bars_are_dot_products_for_any_shape(T, Dh, seed, data):
    rng = np.random.default_rng(seed)
    q, k, v = (rng.standard_normal((T, Dh)) for _ in range(3))
    tokens = [f"t{j}" for j in range(T)]
    i = data.draw(st.integers(0, T - 1))
    bars = qkv.token_qkv_figure(q, k, v, tokens, i).data[2]
    np.testing.assert_allclose(bars.x, [q[i] @ k[j] for j in range(T)])


def test_q_k_v_columns_are_entries_d1_to_dh_not_the_features_of_x():
    from mha_core.examples import TOKENS

    q = k = v = np.arange(24.0).reshape(6, 4)
    for fig in (qkv.qkv_matrices_figure(q, k, v, TOKENS), qkv.token_qkv_figure(q, k, v, TOKENS, 1)):
        heatmaps = [t for t in fig.data if t.type == "heatmap"]
        assert heatmaps and all(list(t.x) == ["d1", "d2", "d3", "d4"] for t in heatmaps)


def test_meaning_figure_names_the_features_and_highlights_the_key_the_query_finds():
    from mha_core.examples import MEANING_FEATURES, meaning_example

    x, w_q, w_k = meaning_example()
    scores = (x @ w_q)[TOKENS.index("changed")] @ (x @ w_k).T  # (Tk,)
    fig = qkv.meaning_figure(x, scores, TOKENS, MEANING_FEATURES, "changed")
    heat, bars = fig.data
    assert list(heat.x) == list(MEANING_FEATURES) and list(heat.y) == list(TOKENS)
    assert np.allclose(np.asarray(bars.x), scores)
    colours = list(bars.marker.color)
    assert colours[TOKENS.index("key")] != colours[TOKENS.index("cache")]  # the winner stands out
    assert fig.layout.height <= 680
