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


def test_a_title_of_several_lines_starts_lower_so_its_first_line_stays_inside_the_figure():
    from mha_core.figures._style import title_pad

    # plotly.js lifts a multi-line title anchored at its top by about 0.7 of its size: the pad gives it back.
    assert title_pad("one line", LAPTOP) == 12
    assert title_pad("two<br>lines", LAPTOP) == 12 + round(0.7 * LAPTOP.title_size)
    assert title_pad("two<br>lines", PROJECTOR) > title_pad("two<br>lines", LAPTOP)
    long = base_layout("word " * 30, theme=PROJECTOR)
    assert "<br>" in long["title"]["text"] and long["title"]["pad"]["t"] == title_pad(long["title"]["text"], PROJECTOR)
    assert base_layout("short", theme=PROJECTOR)["title"]["pad"]["t"] == 12


def test_base_layout_can_leave_the_top_margin_to_a_builder_that_lays_out_in_pixels():
    layout = base_layout("word " * 30, theme=PROJECTOR, margin=dict(t=140), fit_title=False)
    assert layout["margin"]["t"] == 140


def test_numbers_go_in_cells_only_where_they_fit_at_the_themes_size():
    from mha_core.figures._style import cell_numbers, cell_text_fits, text_width_px

    z = np.array([[0.123, -3.456]])
    assert cell_text_fits(["0.12"], 60, 30, 16) and not cell_text_fits(["0.12"], 30, 30, 16)
    assert not cell_text_fits(["0.12"], 60, 18, 16)  # too short for one line of 16 px text
    text, decimals = cell_numbers(z, 60, 30, 16)
    assert decimals == 2 and text.tolist() == [["0.12", "-3.46"]]
    narrow = text_width_px("-3.5", 20) + 8  # one decimal fits, two do not
    text, decimals = cell_numbers(z, narrow, 30, 20)
    assert decimals == 1 and text.tolist() == [["0.1", "-3.5"]]
    assert cell_numbers(z, 20, 30, 20) == (None, None)
    assert cell_numbers(np.array([[-0.001]]), 60, 30, 16)[0].tolist() == [["0.00"]]  # never "-0.00"


def test_a_weights_heatmap_drops_its_numbers_when_its_cells_are_too_small():
    weights = np.array([[0.25, 0.75], [1.0, 0.0]])
    roomy = weights_heatmap_trace(weights, "ab", "cd", theme=PROJECTOR, cell_px=(80, 40))
    cramped = weights_heatmap_trace(weights, "ab", "cd", theme=PROJECTOR, cell_px=(30, 40))
    assert roomy["text"].tolist() == [["0.25", "0.75"], ["1.00", "0.00"]]
    assert "text" not in cramped and "texttemplate" not in cramped


def test_each_rows_largest_weight_is_marked_ties_included_and_a_blocked_row_not_at_all():
    from mha_core.figures._style import row_max_marks, row_max_outlines

    weights = np.array([[0.5, 0.5, 0.0], [0.1, 0.2, 0.7], [0.0, 0.0, 0.0]])
    marks = row_max_marks(weights, ["a", "b", "c"], ["q1", "q2", "q3"], marker_px=30)
    assert list(zip(marks["x"], marks["y"])) == [("a", "q1"), ("b", "q1"), ("c", "q2")]
    assert marks["marker"]["symbol"] == "square-open" and marks["hoverinfo"] == "skip"
    # The same cells as rectangles on their own edges (never across a printed number), shifted into a grid.
    shapes = row_max_outlines(weights, at=(7, 10))
    assert [(s["x0"], s["x1"], s["y0"], s["y1"]) for s in shapes] == [(9.5, 10.5, 6.5, 7.5), (10.5, 11.5, 6.5, 7.5),
                                                                       (11.5, 12.5, 7.5, 8.5)]


def test_the_weights_colour_bar_writes_its_title_along_the_bar_not_over_its_top_tick():
    from mha_core.figures._style import weights_colorbar

    bar = weights_colorbar(x=1.02)
    assert bar["title"]["side"] == "right" and bar["tickvals"] == [0, 0.5, 1] and bar["x"] == 1.02


def test_tick_labels_turn_upright_only_when_they_do_not_fit_level():
    from mha_core.figures._style import label_angle

    assert label_angle(["the", "cache"], 80, 16) == 0
    assert label_angle(["the", "changed"], 50, 20) == -90


def test_a_live_figure_is_shorter_when_presenting_at_1280_by_720():
    from mha_core.figures._style import PRESENTING_HEIGHT, WIDGET_HEIGHT, widget_height

    assert widget_height(LAPTOP) == WIDGET_HEIGHT
    one_row = widget_height(PROJECTOR)
    assert one_row + PROJECTOR.control_height <= PRESENTING_HEIGHT
    assert widget_height(PROJECTOR, rows=1, message=True) < one_row < widget_height(PROJECTOR, rows=0)
