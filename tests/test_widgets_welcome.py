"""The welcome slider: moving it redraws the one figure with the package's weights."""

import numpy as np
import pytest

pytest.importorskip("ipywidgets")

from mha_classroom.widgets.welcome import smoke_check, static_figure
from mha_core.attention import softmax
from mha_core.examples import welcome_scores


def test_slider_updates_the_same_figure_with_softmax_of_scaled_scores():
    check = smoke_check(sharpness=1.0)
    figure = check.figure
    for sharpness in (0.0, 2.5, 4.0):
        check.slider.value = sharpness
        assert check.figure is figure  # updated in place, never rebuilt
        np.testing.assert_allclose(figure.data[0].y, softmax(sharpness * welcome_scores()))
        assert f"sharpness {sharpness:g}" in figure.layout.title.text


def test_zero_sharpness_spreads_weight_evenly():
    check = smoke_check(sharpness=2.0)
    check.slider.value = 0.0
    np.testing.assert_allclose(check.figure.data[0].y, np.full(6, 1 / 6))


def test_higher_sharpness_concentrates_weight_on_the_top_token():
    check = smoke_check()
    tops = []
    for sharpness in (0.5, 1.0, 2.0, 4.0):
        check.slider.value = sharpness
        tops.append(max(check.figure.data[0].y))
    assert tops == sorted(tops) and tops[-1] > tops[0]


def test_static_figure_is_a_plain_figure_matching_the_slider_at_the_same_sharpness():
    import plotly.graph_objects as go

    figure = static_figure(sharpness=1.0)
    assert type(figure) is go.Figure  # no widget: JupyterLab draws it with its own plotly.js
    np.testing.assert_allclose(figure.data[0].y, softmax(welcome_scores()))
    np.testing.assert_allclose(figure.data[0].y, smoke_check(sharpness=1.0).figure.data[0].y)
    assert list(figure.data[0].x) == ["the", "cache", "key", "changed", "after", "deploy"]


@pytest.mark.parametrize(("sharpness", "error", "message"), [
    (100.0, ValueError, r"sharpness=100.0 is outside the slider; valid values are 0 to 4"),
    (-1, ValueError, r"sharpness=-1 is outside the slider; valid values are 0 to 4"),
    ("2", TypeError, r"sharpness must be a number from 0 to 4; got '2' \(str\)"),
])
def test_a_sharpness_the_slider_cannot_show_is_refused_rather_than_shown_as_another(sharpness, error, message):
    # SmokeCheck(100.0) used to show 4.00 on the slider while the figure said 100.
    with pytest.raises(error, match=message):
        smoke_check(sharpness)
