"""Tests for mha_core.figures.induction: pure builders, data in, figure out, words from what they draw."""

from __future__ import annotations

import numpy as np
import pytest

from mha_classroom.describe import in_words
from mha_core import projector
from mha_core.figures.induction import (
    ablation_figure,
    composition_figure,
    head_name,
    head_scores_figure,
    induction_pattern_figure,
    training_figure,
)


def test_heads_are_named_counting_from_one():
    assert head_name(0, 1) == "L1 H2" and head_name(1, 0) == "L2 H1"


def _history(n=6):
    rng = np.random.default_rng(0)
    steps = np.arange(n) * 10
    return steps, rng.uniform(0, 4, (n - 1, 2)), rng.uniform(0, 1, (n, 2, 2)), rng.uniform(0, 1, (n, 2, 2))


@pytest.mark.parametrize("presenting", [False, True])
def test_training_figure_draws_both_losses_and_every_heads_two_scores(presenting):
    steps, losses, previous, induction = _history()
    theme = projector.PROJECTOR if presenting else projector.LAPTOP
    fig = training_figure(steps[1:], losses, steps, previous, induction, chance_previous=0.12, chance_induction=0.05,
                          threshold=0.4, max_steps=50, theme=theme)
    by_name = {t.name: t for t in fig.data}
    assert np.allclose(by_name["loss, repeated half"].y, losses[:, 1])
    assert np.allclose(by_name["loss, first half (random)"].y, losses[:, 0])
    assert np.allclose(by_name["L1 H2"].y, previous[:, 0, 1]) and np.allclose(by_name["L2 H1, induction"].y, induction[:, 1, 0])
    assert list(by_name["chance, induction"].y) == [0.05, 0.05] and list(by_name["induction head from here"].y) == [0.4, 0.4]
    assert fig.layout.font.size == theme.font_size and fig.layout.width <= 820
    words = in_words(fig)
    assert words.name.startswith("Loss on each half") and "L2 H1, induction" in words.description


def test_head_scores_figure_marks_chance_and_the_threshold():
    previous, induction = np.array([[0.5, 0.05], [0.04, 0.04]]), np.array([[0.08, 0.1], [0.8, 0.81]])
    fig = head_scores_figure(previous, induction, chance_previous=0.117, chance_induction=0.053, threshold=0.4)
    bars = [t for t in fig.data if t.type == "bar"]
    assert list(bars[0].x) == ["L1 H1", "L1 H2", "L2 H1", "L2 H2"]
    assert np.allclose(bars[0].y, previous.ravel()) and np.allclose(bars[1].y, induction.ravel())
    names = [t.name for t in fig.data]
    assert "chance, previous token (0.12)" in names and "induction head from 0.4 (ARENA)" in names
    assert "0.81" in in_words(fig).description


def test_pattern_figure_marks_the_key_one_after_the_earlier_copy():
    T, L = 25, 12
    w = np.tril(np.ones((T, T)))
    w /= w.sum(axis=1, keepdims=True)
    fig = induction_pattern_figure(w, np.arange(T) % 32, L, head="L2 H2")
    marks = fig.data[1]
    assert list(marks.y) == list(range(14, 26)) and list(marks.x) == [q - L + 1 for q in range(14, 26)]
    assert fig.data[0].zmin == 0 and fig.data[0].zmax == 1 and fig.data[0].colorscale[0][1].lower() == "#440154"
    assert "L2 H2" in fig.layout.title.text


def test_composition_figure_draws_each_model_against_the_baseline():
    k = {"varying": np.array([[0.22, 0.23], [0.13, 0.12]]), "fixed": np.array([[0.12, 0.12], [0.11, 0.11]])}
    fig = composition_figure(k, 0.176, 0.011)
    bars = [t for t in fig.data if t.type == "bar"]
    assert [b.name for b in bars] == ["varying", "fixed"]
    assert list(bars[0].x)[1] == "L1 H1 → L2 H2" and np.allclose(bars[1].y, k["fixed"].ravel())
    assert [t.name for t in fig.data if t.type == "scatter"] == ["random baseline (0.176)", "baseline + 3 std (0.209)"]


def test_ablation_figure_puts_every_head_on_beside_the_head_off():
    fig = ablation_figure(0.81, 0.63, 0.13, 3.73, label="L1 H1 off (zero)", chance_induction=0.05)
    assert np.allclose(fig.data[0].y, [0.81, 0.13]) and np.allclose(fig.data[1].y, [0.63, 3.73])
    assert list(fig.data[0].x) == ["every head on", "L1 H1 off (zero)"]
    assert "3.73" in in_words(fig).description


def painted(bar) -> bool:
    """A bar trace is drawn in its colour: no pattern, or a pattern over the colour (``fillmode="overlay"``) or on a
    background of its own. plotly's default ("replace") draws only the stripes, in ``fgcolor``: white stripes on
    nothing, an invisible bar."""
    pattern = bar.marker.pattern
    return not pattern.shape or pattern.fillmode == "overlay" or pattern.bgcolor is not None


def test_every_bar_of_the_induction_figures_is_drawn_in_its_colour():
    """The loss bars of 09's head-off figure and the second model's K-composition bars were white stripes on
    nothing: invisible on the page, their numbers floating over an empty axis."""
    k = {"varying": np.ones((2, 2)) * 0.2, "fixed": np.ones((2, 2)) * 0.1, "third": np.ones((2, 2)) * 0.15}
    figures = [head_scores_figure(np.full((2, 2), 0.1), np.full((2, 2), 0.5), chance_previous=0.1, chance_induction=0.05,
                                  threshold=0.4),
               composition_figure(k, 0.176, 0.011),
               ablation_figure(0.81, 0.63, 0.13, 3.73, label="L1 H1 off (zero)", chance_induction=0.05)]
    bars = [t for fig in figures for t in fig.data if t.type == "bar"]
    assert len(bars) == 2 + 3 + 2
    assert [b.name for b in bars if not painted(b)] == []
