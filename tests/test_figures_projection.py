"""Tests for mha_core.figures.projection: concatenation, W_O's blocks, one part per head."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from mha_core.attention import merge_heads, output_projection
from mha_core.examples import TOKENS, demo_layer, token_vectors
from mha_core.figures import projection

D_MODEL, N_HEADS = 16, 4
LAYER = demo_layer(D_MODEL, N_HEADS, seed=0)
X = token_vectors(D_MODEL, seed=0)
RESULT = LAYER(X[None])  # batched: head_outputs (1, H, T, Dh)
T_CHANGED = TOKENS.index("changed")
HEAD_OUTPUTS = RESULT.head_outputs[0, :, T_CHANGED]  # (H, Dh)
CONTRIBUTIONS = np.stack([HEAD_OUTPUTS[h] @ LAYER.w_o_block(h) for h in range(N_HEADS)])  # (H, D)


def output(heads_off=None) -> np.ndarray:
    return output_projection(RESULT.head_outputs, LAYER.w_o, LAYER.b_o, heads_off=heads_off)[0, T_CHANGED]  # (D,)


def contributions_figure(heads_off, **kw):
    return projection.contributions_figure(
        CONTRIBUTIONS, LAYER.b_o, heads_off, output=output(heads_off), output_all=output(), token="changed", **kw
    )


def test_concat_figure_shows_the_heads_side_by_side_as_merge_heads_does():
    fig = projection.concat_figure(HEAD_OUTPUTS, token="changed")
    merged = merge_heads(RESULT.head_outputs)[0, T_CHANGED]  # (H*Dh,)
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=float)[0], merged)
    assert [a.text for a in fig.layout.annotations] == [f"head {h + 1}" for h in range(N_HEADS)]
    assert [s.x0 for s in fig.layout.shapes] == [4.5, 8.5, 12.5]  # positions are numbered 1 to 16
    assert list(fig.data[0].x) == list(range(1, 17))
    assert "4 × 4 = 16" in fig.layout.title.text


def test_w_o_figure_shows_w_o_and_marks_one_block_of_d_head_rows_per_head():
    fig = projection.w_o_blocks_figure(LAYER.w_o, N_HEADS)
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=float), LAYER.w_o)
    assert [s.y0 for s in fig.layout.shapes] == [4.5, 8.5, 12.5]  # rows are numbered 1 to 16
    assert "rows 5-8" in fig.layout.annotations[1].text
    np.testing.assert_allclose(LAYER.w_o[4:8], LAYER.w_o_block(1))


def test_head_parts_plus_the_bias_add_up_to_the_layers_output():
    np.testing.assert_allclose(CONTRIBUTIONS.sum(axis=0) + LAYER.b_o, RESULT.output[0, T_CHANGED])


@pytest.mark.parametrize("heads_off", [[False] * 4, [False, True, False, False], [True, True, True, False], [True] * 4])
def test_contributions_figure_draws_the_output_the_all_heads_output_and_each_heads_part(heads_off):
    off = np.array(heads_off)
    on = ~off
    fig = contributions_figure(off)
    bars, diamonds, *parts, bias = fig.data
    np.testing.assert_allclose(bars.y, output(off))
    np.testing.assert_allclose(diamonds.y, output())
    assert diamonds.marker.symbol == "diamond"
    for h, part in enumerate(parts):
        np.testing.assert_allclose(part.y, CONTRIBUTIONS[h] * on[h])
        assert part.name == f"head {h + 1}" + ("" if on[h] else " (off)")
    np.testing.assert_allclose(bias.y, LAYER.b_o)
    # The stack in the lower panel adds up to the bars in the upper one.
    np.testing.assert_allclose(np.sum([p.y for p in parts], axis=0) + bias.y, bars.y)
    assert fig.layout.barmode == "relative"


def test_contributions_figure_keeps_one_y_range_whichever_heads_are_on():
    ranges = {tuple(contributions_figure(np.array(off, bool)).layout.yaxis.range) for off in ([0, 0, 0, 0], [1, 0, 1, 1], [1, 1, 1, 1])}
    assert len(ranges) == 1
    low, high = ranges.pop()
    assert low <= output().min() and high >= output().max()


def test_contributions_title_lists_the_heads_on_and_the_distance_moved():
    fig = contributions_figure(np.array([False, True, False, False]))
    distance = np.linalg.norm(output([1]) - output())
    assert fig.layout.title.text.startswith("Heads on: 1, 3, 4 (3 of 4).")
    assert f"{distance:.2f}" in fig.layout.title.text
    assert contributions_figure(np.ones(4, bool)).layout.title.text.startswith("Heads on: none (0 of 4)")


def test_contributions_figure_refuses_a_wrong_number_of_switches():
    with pytest.raises(ValueError, match=r"heads_off as a bool array must have shape \(4,\), one entry per head"):
        projection.contributions_spec(CONTRIBUTIONS, LAYER.b_o, np.array([True, True]), output=output(), output_all=output(),
                                      token="changed")


def test_contributions_spec_is_the_figure_as_a_plain_dict_and_patterns_tell_the_heads_apart():
    heads_off = np.array([False, True, False, True])
    spec = projection.contributions_spec(CONTRIBUTIONS, LAYER.b_o, heads_off, output=output(heads_off), output_all=output(),
                                         token="changed")
    fig = go.Figure(spec)  # raises if any property is invalid
    assert fig == contributions_figure(heads_off)
    # head patterns tell the parts apart without colour
    shapes = [t.marker.pattern.shape for t in fig.data[2:6]]
    assert len(set(shapes)) == 4


def test_head_3_moves_features_5_and_7_most_as_the_guide_says_counting_from_1():
    # The instructor's guide (04, section 5): untick head 3 and features 5 and 7 jump up by about 1.0.
    part = CONTRIBUTIONS[2]  # head 3 is index 2
    fig = contributions_figure(np.array([False, False, True, False]))
    features = list(fig.data[0].x)
    assert features == list(range(1, 17))  # the figure counts features from 1
    most = sorted(features[j] for j in np.argsort(part)[:2])
    assert most == [5, 7] and np.allclose(part[[4, 6]], -1.0, atol=0.05)
