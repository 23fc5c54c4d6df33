"""Tests for mha_core.figures.heads: the head grid, the split, one token's views, the hand-set sketch."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from mha_core.attention import split_heads
from mha_core.examples import HAND_SET_HEADS, TOKENS, demo_layer, hand_set_weights, token_vectors
from mha_core.figures import heads
from mha_core.figures._style import OUTLINE_NAME
from mha_core.projector import LAPTOP

D_MODEL = 16
T = len(TOKENS)
X = token_vectors(D_MODEL, seed=0)  # (T, D) = (6, 16)


def weights_for(n_heads: int) -> np.ndarray:
    return demo_layer(D_MODEL, n_heads, seed=0)(X).weights  # (H, T, T)


@pytest.mark.parametrize(("n_heads", "expected"),
                         [(1, (1, 1)), (2, (1, 2)), (3, (1, 3)), (4, (2, 2)), (6, (2, 3)), (8, (2, 4)), (16, (2, 8)),
                          (24, (3, 8))])
def test_grid_shape_keeps_to_two_rows_of_at_most_eight_tiles_up_to_16_heads(n_heads, expected):
    assert heads.grid_shape(n_heads) == expected
    rows, cols = expected
    assert rows * cols >= n_heads > (rows - 1) * cols


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8, 16])
def test_every_head_tile_holds_exactly_that_heads_weights(n_heads):
    weights = weights_for(n_heads)
    fig = heads.head_grid_figure(weights, TOKENS)
    assert [t.type for t in fig.data] == ["heatmap", "scatter"]
    z = np.array(fig.data[0].z, dtype=float)
    for h in range(n_heads):
        np.testing.assert_allclose(heads.head_tile(z, h, n_heads, T), weights[h])
    # Everything outside the tiles is blank (NaN), so no cell is shown twice or invented.
    assert np.count_nonzero(~np.isnan(z)) == n_heads * T * T


def test_grid_uses_viridis_with_the_fixed_range_0_to_1():
    trace = heads.head_grid_figure(weights_for(4), TOKENS).data[0]
    assert (trace.zmin, trace.zmax) == (0.0, 1.0)
    assert trace.colorscale == go.Heatmap(colorscale="Viridis").colorscale


def test_grid_labels_every_tile_row_and_column_with_the_tokens_while_they_fit():
    fig = heads.head_grid_figure(weights_for(8), TOKENS, theme=LAPTOP)  # 2 x 4 tiles
    assert list(fig.layout.xaxis.ticktext) == list(TOKENS) * 4
    assert list(fig.layout.yaxis.ticktext) == list(TOKENS) * 2
    assert fig.layout.xaxis.title.text == "key token" and fig.layout.yaxis.title.text == "query token"
    assert fig.layout.yaxis.autorange == "reversed"  # queries read top to bottom


@pytest.mark.parametrize("n_heads", [8, 16])
def test_where_key_labels_cannot_fit_the_axis_title_lists_the_keys_in_order(n_heads):
    from mha_core.projector import PROJECTOR

    fig = heads.head_grid_figure(weights_for(n_heads), TOKENS, width=820, theme=PROJECTOR)
    assert fig.layout.xaxis.showticklabels is False
    assert fig.layout.xaxis.title.text.endswith("left to right: " + " ".join(TOKENS))
    assert list(fig.layout.yaxis.ticktext) == list(TOKENS) * 2  # every query still named, on both rows of tiles


def test_grid_titles_each_head_and_says_how_many_heads_are_shown():
    fig = heads.head_grid_figure(weights_for(4), TOKENS)
    assert [a.text for a in fig.layout.annotations] == ["head 1", "head 2", "head 3", "head 4"]
    assert "H = 4 heads" in fig.layout.title.text
    # Past 8 heads a tile is too narrow for "head 16": the number alone, the same at every theme.
    many = heads.head_grid_figure(weights_for(16), TOKENS)
    assert [a.text for a in many.layout.annotations] == [str(h) for h in range(1, 17)]


def test_grid_writes_values_in_cells_only_while_they_fit_the_cells_at_the_themes_size():
    from mha_core.figures._style import text_width_px
    from mha_core.projector import PROJECTOR

    small = heads.head_grid_figure(weights_for(2), TOKENS, theme=LAPTOP).data[0]
    assert small.text is not None and small.text[0][0] == f"{weights_for(2)[0, 0, 0]:.2f}"
    assert heads.head_grid_figure(weights_for(16), TOKENS, theme=LAPTOP).data[0].text is None
    # On a projector, 4 heads' cells are narrower than a 20 px "0.00": the outlines carry the pattern instead.
    spec = heads.head_grid_spec(weights_for(4), TOKENS, width=820, theme=PROJECTOR)
    assert "text" not in spec["data"][0]
    cell_w = (820 - spec["layout"]["margin"]["l"] - spec["layout"]["margin"]["r"]) / 13  # 2 tiles of 6 and a gap
    assert text_width_px("0.00", PROJECTOR.cell_text_size) + 8 > cell_w


def test_hover_names_the_head_the_query_and_the_key():
    trace = heads.head_grid_figure(weights_for(2), TOKENS).data[0]
    r0, c0 = heads.tile_origin(1, 2, T)
    assert trace.hovertext[r0 + 3][c0 + 5] == "head 2: query changed -> key deploy"


def test_grid_spec_is_the_figure_as_a_plain_dict_that_passes_plotly_checks():
    weights = weights_for(8)
    spec = heads.head_grid_spec(weights, TOKENS)
    checked = go.Figure(spec)  # raises if any property is invalid
    assert checked == heads.head_grid_figure(weights, TOKENS)


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8, 16])
def test_every_querys_largest_weight_is_outlined_so_the_pattern_reads_without_hovering(n_heads):
    weights = weights_for(n_heads)
    fig = heads.head_grid_figure(weights, TOKENS)
    outline = fig.data[1]
    assert outline.name == OUTLINE_NAME and outline.mode == "lines" and outline.hoverinfo == "skip"
    x, y = np.array(outline.x, dtype=float).reshape(-1, 6), np.array(outline.y, dtype=float).reshape(-1, 6)
    assert np.allclose(x[:, :5].max(1) - x[:, :5].min(1), 1) and np.allclose(y[:, :5].max(1) - y[:, :5].min(1), 1)
    centres = [(round(a), round(b)) for a, b in zip(x[:, :4].mean(1), y[:, :4].mean(1))]  # each a cell's own edges
    for h in range(n_heads):
        r0, c0 = heads.tile_origin(h, n_heads, T)
        mine = [(x - c0, y - r0) for x, y in centres if 0 <= x - c0 < T and 0 <= y - r0 < T]
        assert mine == [(int(weights[h, q].argmax()), q) for q in range(T)]


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8, 16])
def test_the_live_grid_fits_beside_its_control_on_a_1280_by_800_screen_and_when_presenting(n_heads):
    from mha_core.figures._style import PRESENTING_HEIGHT, SCREEN_HEIGHT, WIDGET_WIDTH
    from mha_core.projector import PROJECTOR

    fig = heads.head_grid_figure(weights_for(n_heads), TOKENS, width=WIDGET_WIDTH, theme=LAPTOP)
    assert fig.layout.width <= 820
    assert fig.layout.height <= heads.GRID_HEIGHT <= SCREEN_HEIGHT - 40  # one row of head-count buttons above it
    shown = heads.head_grid_figure(weights_for(n_heads), TOKENS, width=WIDGET_WIDTH, theme=PROJECTOR)
    assert shown.layout.height <= PRESENTING_HEIGHT - PROJECTOR.control_height  # Presentation Mode, 1280 x 720


def test_grid_refuses_weights_that_do_not_match_the_tokens():
    with pytest.raises(ValueError, match=r"shape \(H, T, T\)"):
        heads.head_grid_figure(np.ones((2, 5, 5)) / 5, TOKENS)


def test_grid_fonts_are_readable_from_the_back_of_the_room():
    fig = heads.head_grid_figure(weights_for(4), TOKENS)
    assert fig.layout.font.size >= 14 and all(a.font.size >= 14 for a in fig.layout.annotations)


def test_hand_set_sketch_says_it_is_set_by_hand_and_shows_the_three_tables_in_one_row():
    weights = hand_set_weights()
    fig = heads.hand_set_figure(weights, TOKENS, [title for title, _ in HAND_SET_HEADS])
    title = fig.layout.title.text.lower()
    assert "set by hand" in title and "not learned" in title
    z = np.array(fig.data[0].z, dtype=float)
    for h in range(3):
        np.testing.assert_allclose(heads.head_tile(z, h, 3, T, cols=3), weights[h])
    assert z.shape == (T, 3 * T + 2 * heads.TILE_GAP)  # one row of three tiles
    texts = [a.text for a in fig.layout.annotations]
    assert "cache" in texts[0] and "key" in texts[0] and "deploy" in texts[1] and "itself" in texts[2]
    # Both keys of a 0.5 / 0.5 row are outlined: a tie has two largest weights.
    x, y = np.array(fig.data[1].x, dtype=float).reshape(-1, 6), np.array(fig.data[1].y, dtype=float).reshape(-1, 6)
    marked = {(round(a), round(b)) for a, b in zip(x[:, :4].mean(1), y[:, :4].mean(1))}
    c = TOKENS.index("changed")
    assert {(TOKENS.index("cache"), c), (TOKENS.index("key"), c)} <= marked


def test_hand_set_sketch_prints_one_decimal_where_it_fits_and_only_outlines_on_a_projector():
    from mha_core.projector import PROJECTOR

    weights = hand_set_weights()
    names = [title for title, _ in HAND_SET_HEADS]
    laptop = heads.hand_set_figure(weights, TOKENS, names, theme=LAPTOP).data[0]
    assert laptop.text[TOKENS.index("changed")][TOKENS.index("cache")] == "0.5"  # 0, 0.5, 1: one decimal says it all
    assert heads.hand_set_figure(weights, TOKENS, names, theme=PROJECTOR).data[0].text is None


def test_split_figure_shows_q_and_marks_each_heads_slice_of_features():
    layer = demo_layer(D_MODEL, 4, seed=0)
    q = X @ layer.w_q + layer.b_q  # (T, D)
    fig = heads.head_split_figure(q, 4, TOKENS)
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=float), q)
    assert list(fig.data[0].y) == list(TOKENS)
    assert len(fig.layout.shapes) == 3  # boundaries between 4 heads
    assert [s.x0 for s in fig.layout.shapes] == [4.5, 8.5, 12.5]  # entries are numbered 1 to D
    assert list(fig.data[0].x) == list(range(1, 17))
    assert "entries 5-8" in fig.layout.annotations[1].text
    assert "(6, 16)" in fig.layout.title.text and "d_head = 4" in fig.layout.title.text
    # The slices are exactly what split_heads hands each head.
    q_heads = split_heads(q[None], 4)[0]  # (H, T, Dh)
    np.testing.assert_allclose(q_heads[1], q[:, 4:8])


def test_token_views_figure_shows_the_tokens_query_and_weights_in_every_head():
    result = demo_layer(D_MODEL, 4, seed=0)(X)
    t = TOKENS.index("changed")
    fig = heads.token_views_figure(result.q[:, t], result.weights[:, t], TOKENS, query_token="changed")
    np.testing.assert_allclose(np.array(fig.data[0].z, dtype=float), result.q[:, t])
    np.testing.assert_allclose(np.array(fig.data[1].z, dtype=float), result.weights[:, t])
    assert list(fig.data[1].x) == list(TOKENS)
    assert (fig.data[1].zmin, fig.data[1].zmax) == (0.0, 1.0)
    assert "'changed'" in fig.layout.title.text
    assert fig.layout.font.size == LAPTOP.font_size  # the theme in use (the laptop sizes) when none is given


def test_grid_data_is_valid_json_without_nan():
    import json

    z = heads.head_grid_figure(weights_for(8), TOKENS).to_plotly_json()["data"][0]["z"]
    json.dumps(z, allow_nan=False)  # a FigureWidget sends its data as strict JSON
    assert z[0][heads.TILE_GAP + T - 1] is None  # the blank column between two tiles


def test_with_one_feature_per_head_each_row_looks_mostly_at_one_of_two_keys():
    # Notebook 03's claim: with d_head = 1, q and k are numbers, so q*k is largest at the key with the
    # largest or the smallest k, whatever the query.
    weights = weights_for(16)
    for h in range(16):
        assert len(set(np.argmax(weights[h], axis=-1).tolist())) <= 2


def test_changed_looks_at_the_keys_the_caption_names_in_each_head():
    # Notebook 03's caption of the token-views figure names the keys, head by head (seed 0).
    rows = weights_for(4)[:, TOKENS.index("changed")]  # (H, T)
    assert [TOKENS[i] for i in np.argmax(rows, axis=-1)] == ["the", "key", "changed", "deploy"]


def test_at_four_heads_head_2_favours_after_while_head_1_spreads_over_four_keys():
    # Notebook 03's caption of the head grid at its default of 4 heads (seed 0).
    weights = weights_for(4)  # (H, T, T)
    largest = np.argmax(weights, axis=-1)  # (H, T): each query's favourite key
    assert int(np.sum(weights[1][:, TOKENS.index("after")] > 0.5)) == 4  # "most of their weight", literally
    assert len(set(largest[0].tolist())) == 4


def test_token_views_figure_writes_the_query_values_instead_of_a_second_colour_bar():
    # A colour bar between the two panels would sit on the right panel's head labels.
    result = demo_layer(D_MODEL, 4, seed=0)(X)
    fig = heads.token_views_figure(result.q[:, 0], result.weights[:, 0], TOKENS, query_token="the")
    assert fig.data[0].showscale is False
    np.testing.assert_allclose(np.array(fig.data[0].text, dtype=float), np.round(result.q[:, 0], 1))
    assert fig.data[1].colorbar.x is None or fig.data[1].colorbar.x > fig.layout.xaxis2.domain[1]
    assert list(fig.data[0].x) == [1, 2, 3, 4]  # entries counted from 1
    # Each head's largest weight is outlined, whether or not the numbers fit.
    centres = [(round((s.x0 + s.x1) / 2), round((s.y0 + s.y1) / 2)) for s in fig.layout.shapes]
    assert centres == [(int(j), h) for h, j in enumerate(result.weights[:, 0].argmax(axis=-1))]
    assert {s.xref for s in fig.layout.shapes} == {"x2"}  # on the weights, not on the query entries


def test_one_head_and_one_feature_are_written_in_the_singular():
    grid = heads.head_grid_figure(np.full((1, 6, 6), 1 / 6), TOKENS)
    assert "H = 1 head " in grid.layout.title.text and "1 heads" not in grid.layout.title.text
    split = heads.head_split_figure(np.zeros((6, 16)), 16, TOKENS)
    assert "16 heads of<br>d_head = 1 feature" in split.layout.title.text


def test_w_q_slices_give_every_head_all_d_rows_of_w_q():
    w_q = demo_layer(16, 4, seed=0).w_q
    fig = heads.w_q_slices_figure(w_q, 4)
    assert np.allclose(np.asarray(fig.data[0].z), w_q)  # all 16 rows shown, for every head's columns
    assert len(fig.layout.shapes) == 3  # three cuts between four slices, all along the columns
    assert all(shape.x0 == shape.x1 for shape in fig.layout.shapes)
    assert "16 rows" in fig.layout.title.text.replace("<br>", " ")
    with pytest.raises(ValueError, match="n_heads=3"):
        heads.w_q_slices_figure(w_q, 3)
