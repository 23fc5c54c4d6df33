"""Tests for mha_classroom.widgets.heads: the head-count control redraws the grid in place."""

from __future__ import annotations

import numpy as np
import pytest

from mha_classroom.widgets.heads import HeadGrid, head_grid
from mha_core.examples import TOKENS, demo_layer, token_vectors
from mha_core.figures.heads import head_tile

T = len(TOKENS)


@pytest.fixture(scope="module")
def grid() -> HeadGrid:
    return head_grid(d_model=16, n_heads=4, seed=0)


def test_head_count_offers_exactly_the_divisors_of_d_model(grid):
    assert [value for _, value in grid.head_count.options] == [1, 2, 4, 8, 16]
    assert grid.head_count.value == 4


@pytest.mark.parametrize("n_heads", [16, 1, 8, 2, 4])
def test_choosing_a_head_count_redraws_the_same_figure_with_the_layers_weights(grid, n_heads):
    figure = grid.figure
    grid.head_count.value = n_heads
    assert grid.figure is figure and len(figure.data) == 2  # the weights and their outlines
    expected = demo_layer(16, n_heads, seed=0)(token_vectors(16, seed=0)).weights  # (H, T, T)
    z = np.array(figure.data[0].z, dtype=float)
    for h in range(n_heads):
        np.testing.assert_allclose(head_tile(z, h, n_heads, T), expected[h])
    assert len(figure.layout.annotations) == n_heads
    assert f"H = {n_heads} {'head' if n_heads == 1 else 'heads'} of d_head = {16 // n_heads}" in figure.layout.title.text


def test_a_head_count_that_does_not_divide_d_model_is_refused_with_the_valid_choices():
    with pytest.raises(ValueError, match=r"n_heads=3 does not divide d_model=16; valid head counts are 1, 2, 4, 8, 16"):
        head_grid(d_model=16, n_heads=3)


def test_other_d_model_offers_its_own_head_counts():
    grid = head_grid(d_model=24, n_heads=6)
    assert [value for _, value in grid.head_count.options] == [1, 2, 3, 4, 6, 8, 12, 24]
    z = np.array(grid.figure.data[0].z, dtype=float)
    expected = demo_layer(24, 6, seed=0)(token_vectors(24, seed=0)).weights
    np.testing.assert_allclose(head_tile(z, 5, 6, T), expected[5])


def test_the_figure_has_a_fixed_width_because_a_figure_widget_does_not_follow_its_container(grid):
    from mha_core.figures._style import WIDGET_WIDTH as FIGURE_WIDTH

    assert grid.figure.layout.width == FIGURE_WIDTH
    grid.head_count.value = 16
    assert grid.figure.layout.width == FIGURE_WIDTH


@pytest.mark.parametrize(("n_heads", "error", "message"), [
    (0, ValueError, "n_heads=0 is too small"),
    (2.0, TypeError, r"n_heads must be a whole number of at least 1; got 2.0 \(float\)"),
    (32, ValueError, "n_heads=32 does not divide d_model=16; valid head counts are 1, 2, 4, 8, 16"),
])
def test_a_head_count_the_buttons_cannot_show_is_refused_by_name(n_heads, error, message):
    with pytest.raises(error, match=message):
        head_grid(d_model=16, n_heads=n_heads)
