"""Tests for mha_core.figures.sizing: costs against the head count, Vaswani et al. Table 3, real shapes."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
import pytest

from mha_core import costs, tables
from mha_core.figures import sizing
from mha_core.figures._style import WIDGET_HEIGHT

HEADS_768 = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
ROWS = tables.sizing_rows(768, 1024, HEADS_768)


def test_sizing_figure_draws_the_rows_in_four_panels():
    fig = sizing.sizing_figure(ROWS, n_heads=12)
    d_head, params, entries, products, softmax = fig.data
    assert list(d_head.x) == [str(h) for h in HEADS_768]
    np.testing.assert_array_equal(d_head.y, ROWS.d_head)
    np.testing.assert_array_equal(params.y, ROWS.parameters)
    np.testing.assert_array_equal(entries.y, ROWS.score_entries)
    np.testing.assert_array_equal(products.y, ROWS.flops_projections + ROWS.flops_products)
    np.testing.assert_array_equal(softmax.y, ROWS.flops_softmax)
    assert [t.xaxis for t in fig.data] == ["x", "x2", "x3", "x4", "x4"]


def test_sizing_figure_marks_the_chosen_head_count_in_every_panel_with_its_numbers():
    fig = sizing.sizing_figure(ROWS, n_heads=12)
    k = HEADS_768.index(12)
    assert len(fig.layout.shapes) == 4
    assert all((s.x0, s.x1) == (k - 0.5, k + 0.5) for s in fig.layout.shapes)
    labels = [a.text for a in fig.layout.annotations]
    assert "<b>64</b>" in labels and "<b>2,362,368</b>" in labels and "<b>12.6 M</b>" in labels
    assert "H = 12 marked (d_head = 64)" in fig.layout.title.text


def test_sizing_figure_marks_nothing_for_a_head_count_that_does_not_divide_d_model():
    fig = sizing.sizing_figure(ROWS, n_heads=10)
    assert len(fig.layout.shapes) == 0
    assert "H = 10 does not divide 768" in fig.layout.title.text


def test_sizing_spec_is_the_figure_as_a_plain_dict_that_passes_plotly_checks():
    fig = go.Figure(sizing.sizing_spec(ROWS, n_heads=8))  # raises if any property is invalid
    assert fig == sizing.sizing_figure(ROWS, n_heads=8)
    assert fig.layout.height <= WIDGET_HEIGHT  # with its controls, on one 1280 x 800 screen


def test_vaswani_figure_plots_table_3_rows_a_as_published():
    fig = sizing.vaswani_figure()
    bleu, ppl = fig.data
    assert list(bleu.y) == [24.9, 25.5, 25.8, 25.8, 25.4]
    assert list(ppl.y) == [5.29, 5.00, 4.92, 4.91, 5.01]
    assert [r["d_head"] * r["n_heads"] for r in sizing.VASWANI_2017_TABLE3_A] == [512] * 5  # d_model fixed
    assert list(bleu.marker.symbol).count("star") == 2 and list(ppl.marker.symbol).count("star") == 1
    assert "Vaswani et al. 2017" in fig.layout.title.text and "Table 3" in fig.layout.title.text


def test_vaswani_figure_starts_each_axis_at_its_floor_so_tenths_look_like_tenths():
    fig = sizing.vaswani_figure()
    assert fig.layout.yaxis.range[0] == 0 and fig.layout.yaxis2.range[0] == 1
    assert fig.layout.yaxis.range[1] > max(r["bleu"] for r in sizing.VASWANI_2017_TABLE3_A)
    assert "one training run" in fig.layout.title.text.replace("<br>", " ")


@pytest.mark.parametrize("name", ["GPT-2 small", "BERT-base", "all-MiniLM-L6-v2", "Llama-2-7B"])
def test_model_table_lists_each_models_published_shape_and_checks_d_head(name):
    shapes = [costs.MODEL_SHAPES[n] for n in ("GPT-2 small", "BERT-base", "all-MiniLM-L6-v2", "Llama-2-7B")]
    table = sizing.model_shapes_figure(shapes).data[0]
    header = [h.replace("<b>", "").replace("</b>", "") for h in table.header.values]
    columns = dict(zip(header, table.cells.values))
    i = list(columns["model"]).index(name)
    shape = costs.MODEL_SHAPES[name]
    assert columns["heads H"][i] == shape.n_heads and columns["d_head"][i] == shape.d_head
    assert columns["d_model / H"][i] == str(shape.d_head)  # the published d_head is d_model / H
    assert columns["source"][i].replace("/<br>", "/").replace("<br>", " ") == shape.source and "config" in shape.source


def test_real_models_keep_d_head_between_32_and_128():
    # Notebook 05's caption of the model table.
    shapes = [costs.MODEL_SHAPES[n] for n in ("GPT-2 small", "BERT-base", "all-MiniLM-L6-v2", "Llama-2-7B")]
    assert {s.d_head for s in shapes} <= {32, 64, 128}
    assert min(s.d_model for s in shapes) == 384 and max(s.d_model for s in shapes) == 4096
