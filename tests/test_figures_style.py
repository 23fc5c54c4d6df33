"""The shared look: attention weights always on viridis with a fixed 0..1 range, labelled tokens."""

import numpy as np
import plotly.graph_objects as go

from mha_core.figures._style import base_layout, query_key_axes, weights_heatmap_trace
from mha_core.projector import LAPTOP, PROJECTOR


def test_weights_heatmap_uses_a_fixed_range_and_prints_each_weight():
    weights = np.array([[0.25, 0.75], [1.0, 0.0]])
    trace = weights_heatmap_trace(weights, ["a", "b"], ["c", "d"], theme=LAPTOP)
    fig = go.Figure(data=[trace], layout=base_layout("t", **query_key_axes(), theme=LAPTOP))
    (heatmap,) = fig.data
    assert (heatmap.zmin, heatmap.zmax) == (0.0, 1.0)
    assert heatmap.colorscale == go.Figure(go.Heatmap(colorscale="Viridis")).data[0].colorscale
    assert list(heatmap.x) == ["c", "d"] and list(heatmap.y) == ["a", "b"]
    assert [list(row) for row in heatmap.text] == [["0.25", "0.75"], ["1.00", "0.00"]]
    assert fig.layout.yaxis.autorange == "reversed" and fig.layout.yaxis.title.text == "query token"


def test_given_text_replaces_the_printed_weights():
    text = [["blocked", "0.50"]]
    trace = weights_heatmap_trace(np.array([[0.0, 1.0]]), ["q"], ["k1", "k2"], text=text, theme=LAPTOP)
    assert trace["text"] == text


def test_base_layout_is_readable_when_projected():
    layout = base_layout("What is shown", theme=LAPTOP)
    assert layout["font"]["size"] == LAPTOP.font_size >= 14
    assert base_layout("What is shown", theme=PROJECTOR)["font"]["size"] == PROJECTOR.font_size >= 20
    assert layout["title"]["text"] == "What is shown"


def test_a_long_title_wraps_between_words_and_the_top_margin_makes_room_for_it():
    from mha_core.figures._style import TITLE_CHARS, wrap_title

    title = "word " * 40 + "end"
    wrapped = wrap_title(title)
    lines = wrapped.split("<br>")
    assert len(lines) > 1 and all(len(line) <= TITLE_CHARS for line in lines)
    assert " ".join(lines) == title.strip()
    assert wrap_title("short<br>title") == "short<br>title"  # explicit breaks stay, short lines too
    layout = base_layout(title, margin=dict(l=10, r=10, t=50, b=10), theme=LAPTOP)
    assert layout["margin"]["t"] == 50 + LAPTOP.title_line_px * (len(lines) - 1)
    assert base_layout("short", theme=LAPTOP)["margin"]["t"] == 70


def test_the_screen_constants_describe_1280_by_800_with_the_file_browser_open():
    from mha_core.figures._style import CONTROLS_HEIGHT, SCREEN_HEIGHT, WIDGET_HEIGHT, WIDGET_WIDTH

    assert WIDGET_WIDTH <= 848 - 20  # the output area is ~848 px wide; room for its padding
    assert WIDGET_HEIGHT + CONTROLS_HEIGHT == SCREEN_HEIGHT == 680


def test_a_reference_line_is_a_labelled_line_across_the_plot_at_its_value():
    import plotly.graph_objects as go

    import pytest

    from mha_core.figures._style import add_reference_line, reference_line

    shape, note = reference_line(0.652, "always answering 0: 0.652", axis="y", label_at="start", theme=LAPTOP)
    assert (shape["y0"], shape["y1"], shape["xref"], shape["x0"], shape["x1"]) == (0.652, 0.652, "paper", 0, 1)
    assert (note["text"], note["y"], note["x"], note["xanchor"]) == ("always answering 0: 0.652", 0.652, 0, "left")
    shape, note = reference_line(0.95, "threshold 0.95", axis="x", theme=LAPTOP)
    assert (shape["x0"], shape["yref"], note["yref"], note["y"], note["yanchor"]) == (0.95, "paper", "paper", 1, "bottom")
    fig = add_reference_line(go.Figure(), 0.5, "chance")
    assert fig.layout.shapes[0].y0 == 0.5 and fig.layout.annotations[0].text == "chance"
    with pytest.raises(ValueError, match="axis='z'"):
        reference_line(0.5, "x", axis="z", theme=LAPTOP)
    with pytest.raises(ValueError, match="label_at='middle'"):
        reference_line(0.5, "x", label_at="middle", theme=LAPTOP)
