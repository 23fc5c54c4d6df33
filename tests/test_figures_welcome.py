"""The welcome figure: one bar per token, heights equal to the weights it is given."""

import numpy as np
import pytest

pytest.importorskip("plotly")

from mha_core.examples import TOKENS
from mha_core.figures.welcome import weights_bar_figure


def test_bars_carry_the_given_weights_and_token_labels():
    weights = np.array([0.1, 0.2, 0.3, 0.1, 0.2, 0.1])
    fig = weights_bar_figure(weights, TOKENS, query_token="changed", sharpness=1.5)
    (bar,) = fig.data
    assert list(bar.x) == list(TOKENS)
    np.testing.assert_allclose(bar.y, weights)
    assert "changed" in fig.layout.title.text and "1.5" in fig.layout.title.text


def test_axis_range_is_fixed_so_bars_compare_across_settings():
    fig = weights_bar_figure(np.full(6, 1 / 6), TOKENS, query_token="changed", sharpness=0)
    assert tuple(fig.layout.yaxis.range) == (0, 1.1)
    assert fig.layout.font.size >= 14
