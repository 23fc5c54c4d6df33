"""Tests for mha_classroom.widgets.sizing: d_model, head count and T redraw the costs in place."""

from __future__ import annotations

import numpy as np
import pytest

from mha_classroom.widgets.sizing import HeadSizing, head_sizing, impossible_split_message, shown_head_counts
from mha_core import costs


@pytest.fixture()
def sizing() -> HeadSizing:
    return head_sizing(d_model=768, n_heads=12, n_tokens=1024)


def test_starts_at_gpt2_small_shape_with_its_numbers(sizing):
    assert "768 / 12 = <b>64</b>" in sizing.readout.value
    assert "<b>2,362,368</b>" in sizing.readout.value
    assert f"<b>{12 * 1024**2:,}</b>" in sizing.readout.value
    assert sizing.message.value == ""


def test_head_count_control_allows_counts_that_do_not_divide_d_model(sizing):
    assert (sizing.n_heads.min, sizing.n_heads.max) == (1, 64)
    assert any(768 % h for h in range(sizing.n_heads.min, sizing.n_heads.max + 1))


@pytest.mark.parametrize("n_heads", [1, 3, 8, 24, 64])
def test_valid_head_counts_redraw_in_place_with_costs_numbers(sizing, n_heads):
    figure = sizing.figure
    sizing.n_heads.value = n_heads
    assert sizing.figure is figure
    k = shown_head_counts(768).index(n_heads)
    assert all(s.x0 == k - 0.5 for s in figure.layout.shapes) and len(figure.layout.shapes) == 4
    flops = costs.attention_flops(768, n_heads, 1024)
    readout = sizing.readout.value
    assert f"= <b>{768 // n_heads}</b> features" in readout
    assert f"<b>{costs.attention_parameters(768, n_heads):,}</b>" in readout
    assert f"<b>{costs.score_table_entries(n_heads, 1024):,}</b>" in readout
    assert f"<b>{flops['softmax']:,}</b>" in readout
    assert f"<b>{flops['projections'] + flops['scores'] + flops['mix']:,}</b>" in readout


@pytest.mark.parametrize(
    ("d_model", "n_heads", "nearest"), [(768, 10, "8 or 12"), (128, 12, "8 or 16"), (4096, 33, "32 or 64"), (384, 7, "6 or 8")]
)
def test_an_impossible_head_count_shows_a_plain_message_with_the_nearest_valid_ones(sizing, d_model, n_heads, nearest):
    sizing.d_model.value = d_model
    sizing.n_heads.value = n_heads  # no exception
    assert f"Nearest valid head counts: {nearest}." in sizing.message.value
    assert f"{n_heads} heads do not split d_model = {d_model} evenly" in sizing.message.value
    assert "Traceback" not in sizing.message.value and "Error" not in sizing.message.value
    assert sizing.readout.value == ""
    assert len(sizing.figure.layout.shapes) == 0
    assert "does not divide" in sizing.figure.layout.title.text
    # Back to a valid count: the message goes away and the numbers return.
    sizing.n_heads.value = int(nearest.split()[0])
    assert sizing.message.value == "" and "features per head" in sizing.readout.value


def test_changing_d_model_redraws_the_bars_for_its_own_head_counts(sizing):
    figure = sizing.figure
    sizing.d_model.value = 128
    assert sizing.figure is figure
    assert list(figure.data[0].x) == ["1", "2", "4", "8", "16", "32", "64"] == [str(h) for h in shown_head_counts(128)]
    np.testing.assert_array_equal(figure.data[1].y, [costs.attention_parameters(128, h) for h in shown_head_counts(128)])


def test_changing_the_sequence_length_redraws_the_score_tables(sizing):
    sizing.n_tokens.value = 4096
    np.testing.assert_array_equal(sizing.figure.data[2].y, [h * 4096**2 for h in shown_head_counts(768)])
    assert f"<b>{12 * 4096**2:,}</b>" in sizing.readout.value


def test_impossible_split_message_gives_the_quotient_and_choices():
    text = impossible_split_message(768, 10)
    assert "768 / 10 = 76.80" in text and "8 or 12" in text
    assert impossible_split_message(16, 17).endswith("Nearest valid head counts: 16.")


def test_the_figure_has_a_fixed_width_because_a_figure_widget_does_not_follow_its_container(sizing):
    from mha_core.figures._style import WIDGET_WIDTH as FIGURE_WIDTH

    sizing.d_model.value = 64
    assert sizing.figure.layout.width == FIGURE_WIDTH


# --- bad settings: a clear error naming the parameter and the valid choices, never a TraitError or a silent clamp


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    (dict(d_model=100), ValueError, r"d_model=100 is not a valid choice; valid values are 16, 64, 128, 256, 384, 512, 768, 1024, 4096"),
    (dict(n_tokens=7), ValueError, r"n_tokens=7 is not a valid choice; valid values are 6, 128, 512, 1024, 2048, 4096"),
    (dict(n_heads=0), ValueError, r"n_heads=0 is outside the slider; valid values are whole numbers from 1 to 64"),
    (dict(n_heads=100), ValueError, r"n_heads=100 is outside the slider; valid values are whole numbers from 1 to 64"),
    (dict(n_heads=12.5), TypeError, r"n_heads must be a whole number from 1 to 64; got 12.5 \(float\)"),
    (dict(d_model="768"), TypeError, r"d_model must be one of 16, 64, .*; got '768' \(str\)"),
])
def test_a_setting_the_controls_cannot_show_is_refused_by_name_with_the_valid_choices(kwargs, error, message):
    with pytest.raises(error, match=message):
        head_sizing(**kwargs)


def test_a_head_count_that_does_not_divide_d_model_is_allowed_and_explained():
    sizing = head_sizing(d_model=768, n_heads=7)
    assert sizing.n_heads.value == 7 and "Nearest valid head counts: 6 or 8" in sizing.message.value


def test_one_head_and_one_feature_are_singular():
    sizing = head_sizing(d_model=16, n_heads=16, n_tokens=6)
    assert "<b>1</b> feature per head" in sizing.readout.value
    sizing.n_heads.value = 1
    assert "1 head &times;" in sizing.readout.value and "1 heads" not in sizing.readout.value


def test_the_readout_sits_between_the_controls_and_the_figure_and_the_message_takes_its_place():
    # The guide has the room read these numbers with the sliders in view: above the figure, not below it.
    sizing = head_sizing(d_model=768, n_heads=12, n_tokens=1024)
    controls, numbers, figure = sizing.box.children
    assert figure is sizing.figure and list(numbers.children) == [sizing.message, sizing.readout]
    assert sizing.readout.layout.display is None and sizing.message.layout.display == "none"
    sizing.n_heads.value = 10
    assert sizing.readout.layout.display == "none" and sizing.message.layout.display is None
    sizing.n_heads.value = 12
    assert sizing.readout.value.count("<br>") == 3  # four lines: the slot the figure's height leaves room for


@pytest.mark.parametrize("theme_name, visible", [("LAPTOP", 680), ("PROJECTOR", 599)])
def test_controls_readout_and_figure_fit_the_visible_notebook(theme_name, visible):
    from mha_classroom.widgets.sizing import READOUT_LINE_HEIGHT
    from mha_core import projector
    from mha_core.figures.sizing import sizing_height

    theme = getattr(projector, theme_name)
    readout = 4 * READOUT_LINE_HEIGHT * theme.control_font_size
    assert 2 * theme.control_height + readout + sizing_height(theme) <= visible - 20
    assert sizing_height(theme) >= 380  # and the four panels keep a useful height
