"""Tests for mha_core.figures.single_head: softmax, the sqrt(d_head) figure, masks."""

from __future__ import annotations

import numpy as np
import pytest

from mha_core.analysis import D_HEAD_VALUES, scaling_experiment
from mha_core.attention import attention_scores, causal_mask, scaled_dot_product_attention, softmax
from mha_core.examples import TOKENS, single_head_example
from mha_core.figures import single_head as sh

D_MODEL, D_HEAD = 8, 4


_, _, (Q, K, V) = single_head_example(D_MODEL, D_HEAD)  # notebook 02's q, k, v (6, 4)

DATA = scaling_experiment()


def test_unique_labels_keeps_repeated_tokens_apart_and_readable():
    labels = sh.unique_labels(["a", "[PAD]", "[PAD]", "[PAD]"])
    assert len(set(labels)) == 4
    assert [label.replace("\u200b", "") for label in labels] == ["a", "[PAD]", "[PAD]", "[PAD]"]
    assert sh.unique_labels(TOKENS) == list(TOKENS)


def test_scores_and_weights_figure_shows_scaled_scores_and_their_softmax():
    scores = attention_scores(Q, K)
    _, weights = scaled_dot_product_attention(Q, K, V)
    fig = sh.scores_and_weights_figure(scores, weights, TOKENS)
    left, right = fig.data
    np.testing.assert_allclose(left.z, Q @ K.T / np.sqrt(D_HEAD))
    np.testing.assert_allclose(right.z, softmax(left.z, axis=-1))
    np.testing.assert_allclose(np.sum(right.z, axis=1), 1.0)
    assert (right.zmin, right.zmax, right.colorscale[0][1]) == (0.0, 1.0, "#440154")  # viridis, fixed 0..1
    assert list(right.x) == list(TOKENS) and list(left.y) == list(TOKENS)
    # Each row's highest score and highest weight are outlined: the same key, row by row.
    def outlined(xref):
        return [(round((s.x0 + s.x1) / 2), round((s.y0 + s.y1) / 2)) for s in fig.layout.shapes if s.xref == xref]
    assert outlined("x") == outlined("x2") == [(int(j), i) for i, j in enumerate(np.argmax(scores, axis=-1))]


@pytest.mark.parametrize("d_head", D_HEAD_VALUES)
def test_scaling_figure_shows_the_weights_and_spread_for_its_d_head(d_head):
    i = DATA.index(d_head)
    fig = sh.scaling_figure(DATA, d_head)
    unscaled, scaled, unscaled_line, scaled_line, unscaled_here, scaled_here = fig.data
    np.testing.assert_allclose(unscaled.y, DATA.unscaled_weights[i])
    np.testing.assert_allclose(scaled.y, DATA.scaled_weights[i])
    np.testing.assert_allclose(unscaled_line.y, DATA.unscaled_std)
    assert list(unscaled_here.x) == [d_head] and unscaled_here.y[0] == pytest.approx(DATA.unscaled_std[i])
    assert list(scaled_here.x) == [d_head] and scaled_here.y[0] == pytest.approx(DATA.scaled_std[i])
    assert fig.layout.title.text.startswith(f"d_head = {d_head}:")
    assert f"{DATA.unscaled_top[i]:.2f}" in fig.layout.title.text
    assert tuple(fig.layout.yaxis.range) == (0, 1.3)  # fixed: the bars move, the axis does not (room for a label over 1)
    # The spread panel's ticks read as the numbers they are, each one written out: 4, 8, ... 512.
    assert list(fig.layout.xaxis2.ticktext) == [str(d) for d in D_HEAD_VALUES] and fig.layout.xaxis2.type == "log"
    assert fig.data[0].constraintext == "none"  # plotly would shrink the bar labels below the theme's size
    # The two cases differ by pattern and line style, not colour alone.
    assert unscaled.marker.pattern.shape != scaled.marker.pattern.shape
    assert unscaled.marker.pattern.fillmode == "overlay"  # hatching over the colour, not instead of it
    assert unscaled_line.line.dash != scaled_line.line.dash


def test_masked_figure_writes_blocked_in_every_blocked_cell_and_zero_weight_there():
    mask = causal_mask(len(TOKENS))
    _, weights = scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    fig = sh.masked_weights_figure(weights, TOKENS, TOKENS, mask, title="causal")
    (trace,) = fig.data
    np.testing.assert_allclose(trace.z, weights)
    text = np.array(trace.text)
    assert (text == "blocked").tolist() == mask.tolist()
    assert np.all(np.asarray(trace.z)[mask] == 0.0)
    assert text[1, 0] == f"{weights[1, 0]:.2f}"
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert fig.layout.yaxis.autorange == "reversed" and fig.layout.xaxis.title.text == "key token"


def test_masked_figure_keeps_two_pad_tokens_as_two_rows():
    tokens = list(TOKENS) + ["[PAD]", "[PAD]"]
    weights = np.full((8, 8), 1 / 8)
    fig = sh.masked_weights_figure(weights, tokens, tokens, np.zeros((8, 8), bool), title="padding")
    assert len(set(fig.data[0].y)) == 8 and len(set(fig.data[0].x)) == 8


def test_softmax_spread_figure_shows_each_rows_weights_with_their_values():
    row = np.array([2.0, 1.0, 0.0])
    fig = sh.softmax_spread_figure({"s": softmax(row), "10 s": softmax(10 * row)}, ["k1", "k2", "k3"])
    narrow, wide = fig.data
    np.testing.assert_allclose(narrow.y, np.exp(row) / np.exp(row).sum())
    np.testing.assert_allclose(wide.y, softmax(10 * row))
    assert list(wide.text) == ["1.000", "0.000", "0.000"]
    assert list(narrow.x) == ["k1", "k2", "k3"] and (narrow.name, wide.name) == ("s", "10 s")
    assert narrow.marker.pattern.shape != wide.marker.pattern.shape


def test_saturation_figure_shows_every_querys_largest_weight_and_the_gradient_size_both_ways():
    from mha_core.analysis import scaling_gradients
    from mha_core.figures.single_head import saturation_figure

    grads = scaling_gradients()
    fig = saturation_figure(grads)
    boxes = [t for t in fig.data if t.type == "box"]
    lines = [t for t in fig.data if t.type == "scatter"]
    assert len(boxes) == 2 and len(lines) == 2
    assert np.allclose(np.asarray(boxes[0].y), grads.raw_largest.reshape(-1))
    assert np.allclose(np.asarray(boxes[1].y), grads.scaled_largest.reshape(-1))
    assert np.allclose(np.asarray(lines[0].y), grads.raw_norm) and np.allclose(np.asarray(lines[1].y), grads.scaled_norm)
    assert fig.layout.yaxis2.range[0] == 0 and fig.layout.yaxis2.range[1] > grads.scaled_norm.max()
    assert fig.layout.height <= 680
