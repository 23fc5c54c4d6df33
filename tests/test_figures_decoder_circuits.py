"""mha_core.figures.decoder_circuits: the 270 heads' scores as points, asserted on the figure's data and words."""

from __future__ import annotations

import numpy as np
import pytest

from mha_classroom.describe import in_words
from mha_core.figures.decoder_circuits import head_scores_scatter_figure


@pytest.fixture
def scores():
    rng = np.random.default_rng(0)
    previous, induction = rng.random((30, 9)) * 0.3, rng.random((30, 9)) * 0.2
    induction[18, 6], previous[16, 0] = 0.9, 0.95
    return previous, induction


def test_every_head_is_one_point_and_the_named_heads_are_their_own_series(scores):
    previous, induction = scores
    fig = head_scores_scatter_figure(previous, induction, chance_previous=0.07, chance_induction=0.03,
                                     induction_heads=[(18, 6, 0.9)], previous_heads=[(16, 0)], threshold=0.4)
    rest, named_induction, named_previous = fig.data
    assert len(rest.x) == 268 and rest.name == "the other 268 heads"
    assert named_induction.name == "induction heads: L19 H7" and list(named_induction.y) == [0.9]
    assert named_previous.name == "previous-token heads: L17 H1" and list(named_previous.x) == [0.95]
    assert sorted(rest.y + named_induction.y + named_previous.y) == sorted(induction.ravel().tolist())
    assert {s.marker.symbol for s in fig.data} == {"circle", "diamond", "square"}  # not colour alone
    lines = {(s.type, s.x0 if s.xref == "x" else s.y0) for s in fig.layout.shapes}
    assert lines == {("line", 0.07), ("line", 0.03), ("line", 0.4)}


def test_the_words_name_the_heads_and_their_scores(scores):
    previous, induction = scores
    fig = head_scores_scatter_figure(previous, induction, chance_previous=0.07, chance_induction=0.03,
                                     induction_heads=[(18, 6)], previous_heads=[(16, 0)])
    words = in_words(fig)
    assert words.name.startswith("Every one of the 270 heads")
    assert "induction heads: L19 H7" in words.description and "0.90" in words.description
    assert "previous-token heads: L17 H1" in words.description and "0.95" in words.description


def test_a_head_named_twice_is_drawn_once(scores):
    previous, induction = scores
    fig = head_scores_scatter_figure(previous, induction, chance_previous=0.07, chance_induction=0.03,
                                     induction_heads=[(18, 6)], previous_heads=[(18, 6), (16, 0)])
    assert sum(len(t.x) for t in fig.data) == 270


@pytest.mark.parametrize("kwargs, words", [
    (dict(induction_heads=[(30, 0)]), r"\(30, 0\), outside 30 layers x 9 heads"),
    (dict(previous_heads=[(1,)]), "previous_heads must hold"),
])
def test_bad_heads_are_refused_by_name(scores, kwargs, words):
    with pytest.raises(ValueError, match=words):
        head_scores_scatter_figure(*scores, chance_previous=0.07, chance_induction=0.03, **kwargs)


def test_scores_of_different_shapes_are_refused(scores):
    with pytest.raises(ValueError, match=r"both have shape \(L, H\)"):
        head_scores_scatter_figure(scores[0], scores[1][:3], chance_previous=0.07, chance_induction=0.03)
