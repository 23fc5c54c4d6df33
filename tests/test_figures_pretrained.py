"""mha_core.figures.pretrained: pure builders for notebooks 07 and 08 (real half)."""

from __future__ import annotations

import numpy as np
import pytest

from mha_core import projector

from mha_core.figures.pretrained import (
    LIVE_WIDTH,
    head_map_figure,
    head_similarity_figure,
    head_tiles,
    layer_heads_figure,
    pruning_curve_figure,
    pruning_step_figure,
    layer_tiles_gap,
    read_tile,
    tile_gap,
    removal_effect_figure,
)

CALIBRATION = {"paraphrase": (0.46, 0.78, 0.95), "unrelated": (-0.05, 0.02, 0.09)}

TOKENS = ["[CLS]", "the", "cache", "key", "changed", "after", "deploy", "[SEP]"]


def random_weights(H, T, seed=0):
    logits = np.random.default_rng(seed).standard_normal((H, T, T)) * 2
    return np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)  # (H, T, T)


def test_head_map_puts_each_heads_value_and_word_in_its_cell():
    values = np.arange(72).reshape(6, 12) / 72
    labels = np.full((6, 12), "[CLS]", dtype=object)
    labels[5, 4] = "cache"
    fig = head_map_figure(values, labels, title="t")
    np.testing.assert_allclose(np.array(fig.data[0].z), values)
    assert fig.data[0].text[5][4] == "cache"
    assert list(fig.layout.xaxis.ticktext) == [f"H{h}" for h in range(1, 13)]
    assert list(fig.layout.yaxis.ticktext) == [f"L{l}" for l in range(1, 7)]
    assert (fig.data[0].zmin, fig.data[0].zmax) == (0.0, 1.0)


def test_head_map_refuses_labels_of_another_shape():
    with pytest.raises(ValueError, match=r"shape \(L, H\)"):
        head_map_figure(np.zeros((6, 12)), np.zeros((6, 11)), title="t")


@pytest.mark.parametrize("T", [3, 8, 20])
def test_tiles_hold_every_heads_table_and_read_back(T):
    w = random_weights(12, T)
    z = head_tiles(w)
    for h in range(12):
        np.testing.assert_allclose(read_tile(z, h, T), w[h])
    assert np.isnan(z).sum() == z.size - 12 * T * T


def test_layer_heads_figure_shows_all_tiles_left_and_the_chosen_head_right():
    w = random_weights(12, 8)
    fig = layer_heads_figure(w, TOKENS, layer=2, head=6)
    tiles, big = fig.data
    outline, *largest = fig.layout.shapes
    # Each row's largest weight in the large table is outlined, on its cell's edges.
    assert [(s.xref, s.y0 + 0.5, s.x0 + 0.5) for s in largest] == [("x2", i, int(np.argmax(w[6, i]))) for i in range(8)]
    for h in range(12):
        np.testing.assert_allclose(read_tile(tiles.z, h, 8, gap=layer_tiles_gap(8, 12)), w[h])
    np.testing.assert_allclose(np.array(big.z), w[6])
    assert list(fig.layout.xaxis2.ticktext) == TOKENS and list(fig.layout.yaxis2.ticktext) == TOKENS
    assert fig.layout.title.text == "Layer 3: its 12 heads (left) and head 7 (right)"
    assert [a.text for a in fig.layout.annotations] == [f"H{h}" for h in range(1, 13)]
    gap = layer_tiles_gap(8, 12)  # room for the head labels between the tiles
    assert gap == tile_gap(8)  # on a laptop, a quarter of a tile
    # At projector sizes the gap grows until a 20 px label fits between the tiles.
    big_gap = layer_tiles_gap(8, 12, theme=projector.PROJECTOR)
    cell = min(0.33 * (LIVE_WIDTH - 40) / (4 * (8 + big_gap) - big_gap), 0.8 * (340 - 80) / (3 * (8 + big_gap)))
    assert big_gap > gap and big_gap * cell >= 1.25 * 20
    r0, c0 = gap + (8 + gap) * 1, (8 + gap) * 2  # head 7 (index 6): tile row 1, column 2
    assert (outline.x0, outline.y0) == (c0 - 0.5, r0 - 0.5)
    assert big.zmin == 0.0 and big.zmax == 1.0 and big.colorscale[0][1].lower() == "#440154"  # viridis, 0..1


def test_layer_heads_figure_fits_the_live_width_and_height_budget():
    fig = layer_heads_figure(random_weights(12, 8), TOKENS, layer=0, head=0)
    assert fig.layout.width <= 820 and fig.layout.width == LIVE_WIDTH
    assert fig.layout.height + 4 * 45 <= 680  # three rows of controls and a message line fit above it
    assert fig.layout.font.size >= 14


def test_layer_heads_figure_writes_values_only_while_they_are_readable():
    assert layer_heads_figure(random_weights(12, 8), TOKENS, layer=0, head=0).data[1].text is not None
    # 20 px numbers do not fit cells 40 px wide: on a projector the outlines carry the point instead.
    projected = layer_heads_figure(random_weights(12, 8), TOKENS, layer=0, head=0, theme=projector.PROJECTOR)
    assert projected.data[1].text is None and len(projected.layout.shapes) >= 1 + 8
    assert projected.layout.height + 252 <= 599  # under its controls (252 px measured in Presentation Mode)
    long = [f"w{i}" for i in range(20)]
    assert layer_heads_figure(random_weights(12, 20), long, layer=0, head=0).data[1].text is None


def test_layer_heads_figure_refuses_a_head_out_of_range_and_mismatched_tokens():
    with pytest.raises(ValueError, match="valid heads are 0 to 11"):
        layer_heads_figure(random_weights(12, 8), TOKENS, layer=0, head=12)
    with pytest.raises(ValueError, match=r"T = 7 tokens"):
        layer_heads_figure(random_weights(12, 8), TOKENS[:7], layer=0, head=0)


def test_head_similarity_figure_shows_the_matrix_in_the_given_order():
    sim = np.array([[1.0, 0.2, 0.9], [0.2, 1.0, 0.1], [0.9, 0.1, 1.0]])
    fig = head_similarity_figure(sim, [0, 2, 1], ["a", "b", "c"])
    assert list(fig.data[0].x) == ["a", "c", "b"]
    np.testing.assert_allclose(np.array(fig.data[0].z), sim[np.ix_([0, 2, 1], [0, 2, 1])])


def test_pruning_step_figure_shows_each_cosine_marks_those_below_the_threshold_and_says_the_totals():
    fig = pruning_step_figure([0.99, 0.93, 0.97], ["a", "b", "c"], n_removed=5, threshold=0.95,
                              ranking_accuracy=0.75, ranking_accuracy_full=0.875)
    np.testing.assert_allclose(fig.data[0].x, [0.99, 0.93, 0.97])
    colours = list(fig.data[0].marker.color)
    assert colours[0] == colours[2] != colours[1]
    assert fig.layout.title.text == "5 heads off: held-out mean 0.963, worst 0.930; pairs 75% (all heads 88%)"
    assert fig.layout.shapes[0].x0 == 0.95


def test_pruning_curve_has_the_three_lines():
    fig = pruning_curve_figure([0, 1, 2], [1, 0.99, 0.97], [1, 0.98, 0.96], [1, 0.97, 0.9], threshold=0.95)
    assert [t.name for t in fig.data] == ["tuning, mean (chosen on these)", "held out, mean", "held out, worst sentence"]
    np.testing.assert_allclose(fig.data[2].y, [1, 0.97, 0.9])


def test_pruning_step_figure_writes_each_value_in_a_column_right_of_the_plot_where_no_line_runs():
    cosines = [0.99, 0.949, 0.951, 0.93]
    fig = pruning_step_figure(cosines, list("abcd"), n_removed=5, threshold=0.95, ranking_accuracy=0.75,
                              ranking_accuracy_full=0.875, calibration=CALIBRATION)
    values = [a for a in fig.layout.annotations if a.xref == "paper" and a.x >= 1.0 and a.text != "<b>cosine</b>"]
    assert [a.text for a in values] == ["0.990", "0.949", "0.951", "0.930"] and [a.y for a in values] == [0, 1, 2, 3]
    assert all(a.xanchor == "left" for a in values)  # they start where the plot ends: no line or dot reaches them
    assert list(fig.data[0].marker.symbol) == ["circle", "x", "circle", "x"]  # not colour alone


def test_pruning_step_figure_axis_starts_at_a_cosine_of_zero_with_both_calibration_bands_marked():
    fig = pruning_step_figure([0.99, 0.93], ["a", "b"], n_removed=1, threshold=0.95, ranking_accuracy=1.0,
                              ranking_accuracy_full=1.0, calibration=CALIBRATION)
    assert fig.layout.xaxis.range[0] == -0.05 and fig.layout.xaxis.range[1] >= 1.0  # the unrelated band starts at -0.05
    bands = [(s.x0, s.x1) for s in fig.layout.shapes if s.type == "rect"]
    assert bands == [(0.46, 0.95), (-0.05, 0.09)]
    means = [s.x0 for s in fig.layout.shapes if s.type == "line" and s.line.dash == "dot"]
    assert means == [0.78, 0.02]
    labels = [a.text for a in fig.layout.annotations]
    assert "paraphrase pairs: mean 0.78" in labels and "unrelated pairs: mean 0.02" in labels
    assert "threshold 0.95" in labels
    # The band labels sit in a row of their own, below every sentence's dot.
    rows = [a.y for a in fig.layout.annotations if a.text.endswith(("0.78", "0.02"))]
    assert min(rows) > 1 and fig.layout.yaxis.range[0] > max(rows)


def test_pruning_step_figure_without_calibration_still_starts_at_zero():
    fig = pruning_step_figure([0.99, 0.93], ["a", "b"], n_removed=1, threshold=0.95, ranking_accuracy=1.0,
                              ranking_accuracy_full=1.0)
    assert fig.layout.xaxis.range[0] == 0.0


@pytest.mark.parametrize("bad", [{"paraphrase": (0.5, 0.7, 0.9)}, {"paraphrase": (0.9, 0.7, 0.5), "unrelated": (0, 0, 0)},
                                 "0.78"])
def test_a_calibration_that_is_not_two_ordered_bands_is_refused_by_name(bad):
    with pytest.raises(ValueError, match="calibration"):
        pruning_curve_figure([0, 1], [1, 0.99], [1, 0.98], [1, 0.97], threshold=0.95, calibration=bad)


def test_pruning_curve_marks_the_threshold_and_the_calibration_on_an_axis_from_zero():
    fig = pruning_curve_figure([0, 1, 2], [1, 0.99, 0.97], [1, 0.98, 0.96], [1, 0.97, 0.9], threshold=0.95,
                               calibration=CALIBRATION)
    assert fig.layout.yaxis.range[0] <= -0.05 and fig.layout.yaxis.range[1] >= 1.0
    lines = {(s.y0, s.line.dash) for s in fig.layout.shapes if s.type == "line"}
    assert {(0.95, "dash"), (0.78, "dot"), (0.02, "dot")} <= lines
    assert [(s.y0, s.y1) for s in fig.layout.shapes if s.type == "rect"] == [(0.46, 0.95), (-0.05, 0.09)]


def test_removal_effect_figure_plots_each_heads_share_on_words_against_one_minus_its_cosine():
    on_words = np.linspace(0.1, 0.8, 72).reshape(6, 12)
    cosines = 1 - np.logspace(-4, -1.5, 72).reshape(6, 12)
    fig = removal_effect_figure(on_words, cosines, named=[(0, 2), (5, 9)], calibration=CALIBRATION)
    lower, top = fig.data
    np.testing.assert_allclose(lower.x, on_words[:5].ravel())
    np.testing.assert_allclose(top.y, 1 - cosines[5].ravel())
    assert (lower.marker.symbol, top.marker.symbol) == ("circle", "diamond")
    assert fig.layout.yaxis.type == "log"
    named = [a for a in fig.layout.annotations if a.text.startswith("<b>")]
    assert [a.text for a in named] == ["<b>L1 H3</b>", "<b>L6 H10</b>"]
    assert named[0].y == pytest.approx(np.log10(1 - cosines[0, 2]))  # annotations on a log axis sit at log10
    # Bands on the 1 - cosine axis: shapes by value, labels by log10 of it; the unrelated band is in range.
    rects = [(s.y0, s.y1) for s in fig.layout.shapes if s.type == "rect"]
    assert rects[0] == pytest.approx((0.05, 0.54)) and rects[1] == pytest.approx((0.91, 1.05))
    label = next(a for a in fig.layout.annotations if a.text == "unrelated pairs: mean 0.02")
    assert label.y == pytest.approx(np.log10(0.98))
    assert fig.layout.yaxis.range[1] >= np.log10(1.05)


def test_removal_effect_figure_refuses_mismatched_shapes():
    with pytest.raises(ValueError, match=r"shape \(L, H\)"):
        removal_effect_figure(np.zeros((6, 12)), np.zeros((6, 11)))
