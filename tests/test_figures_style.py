"""The shared look: attention weights always on viridis with a fixed 0..1 range, labelled tokens."""

import numpy as np
import plotly.graph_objects as go

from mha_core.figures._style import FONT_SIZE, base_layout, query_key_axes, weights_heatmap_trace


def test_weights_heatmap_uses_a_fixed_range_and_prints_each_weight():
    weights = np.array([[0.25, 0.75], [1.0, 0.0]])
    trace = weights_heatmap_trace(weights, ["a", "b"], ["c", "d"])
    fig = go.Figure(data=[trace], layout=base_layout("t", **query_key_axes()))
    (heatmap,) = fig.data
    assert (heatmap.zmin, heatmap.zmax) == (0.0, 1.0)
    assert heatmap.colorscale == go.Figure(go.Heatmap(colorscale="Viridis")).data[0].colorscale
    assert list(heatmap.x) == ["c", "d"] and list(heatmap.y) == ["a", "b"]
    assert [list(row) for row in heatmap.text] == [["0.25", "0.75"], ["1.00", "0.00"]]
    assert fig.layout.yaxis.autorange == "reversed" and fig.layout.yaxis.title.text == "query token"


def test_given_text_replaces_the_printed_weights():
    text = [["blocked", "0.50"]]
    trace = weights_heatmap_trace(np.array([[0.0, 1.0]]), ["q"], ["k1", "k2"], text=text)
    assert trace["text"] == text


def test_base_layout_is_readable_when_projected():
    layout = base_layout("What is shown")
    assert layout["font"]["size"] == FONT_SIZE >= 14
    assert layout["title"]["text"] == "What is shown"
