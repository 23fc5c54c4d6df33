"""Tests for mha_classroom.widgets.qkv: pressing a token button redraws the one figure in place."""

from __future__ import annotations

import numpy as np
import pytest

from mha_classroom.widgets.qkv import TokenExplorer, token_explorer
from mha_core.examples import TOKENS, single_head_example
from mha_core.figures.qkv import token_qkv_figure

D_MODEL, D_HEAD = 8, 4


_, _, (Q, K, V) = single_head_example(D_MODEL, D_HEAD)  # notebook 01's q, k, v (6, 4)


@pytest.fixture(scope="module")
def explorer() -> TokenExplorer:
    return token_explorer(Q, K, V, TOKENS)


def test_buttons_offer_every_token_and_start_on_cache(explorer):
    assert list(explorer.token.options) == [(word, i) for i, word in enumerate(TOKENS)]
    assert explorer.token.value == TOKENS.index("cache")
    np.testing.assert_allclose(explorer.figure.data[2].x, Q[1] @ K.T)


@pytest.mark.parametrize("word", ["deploy", "the", "key", "changed", "after", "cache"])
def test_pressing_a_token_shows_its_vectors_and_scores_in_the_same_figure(explorer, word):
    figure, traces = explorer.figure, tuple(explorer.figure.data)
    i = TOKENS.index(word)
    explorer.token.value = i
    assert explorer.figure is figure and tuple(explorer.figure.data) == traces  # updated in place, not rebuilt
    strip, keys, bars = explorer.figure.data
    assert strip is traces[0] and bars is traces[2]
    np.testing.assert_allclose(strip.z, np.stack([Q[i], K[i], V[i]]))
    np.testing.assert_allclose(keys.z, K)
    np.testing.assert_allclose(bars.x, [Q[i] @ K[j] for j in range(len(TOKENS))])
    assert explorer.figure.layout.title.text == token_qkv_figure(Q, K, V, TOKENS, i).layout.title.text
    assert explorer.figure.layout.shapes[0].y0 == i - 0.5


def test_the_box_holds_the_buttons_above_the_figure(explorer):
    assert explorer.box.children[1:] == (explorer.token, explorer.figure)


def test_arrays_that_do_not_match_the_tokens_are_refused_with_their_shapes():
    with pytest.raises(ValueError, match=r"T = 6 tokens; got q \(5, 4\)"):
        token_explorer(Q[:5], K[:5], V[:5], TOKENS)


def test_a_token_index_out_of_range_is_refused_with_the_valid_range():
    with pytest.raises(ValueError, match="token=6 .*valid tokens are 0 to 5"):
        token_explorer(Q, K, V, TOKENS, token=6)


def test_the_figure_travels_in_the_widgets_first_message(monkeypatch):
    # A figure sent in a later message can be dropped by a browser still creating the widget.
    import comm

    opened = []
    real = comm.create_comm
    monkeypatch.setattr(comm, "create_comm", lambda **kwargs: (opened.append(kwargs), real(**kwargs))[1])
    token_explorer(Q, K, V, TOKENS, token=2)
    (state,) = [c["data"]["state"]["figure"] for c in opened if c["data"]["state"].get("figure")]
    assert [t["type"] for t in state["data"]] == ["heatmap", "heatmap", "bar"]
    assert state["layout"]["title"]["text"].startswith("Token 'key'")


def test_a_token_that_is_not_an_index_is_refused_with_the_valid_indices():
    from mha_classroom.widgets.qkv import token_explorer

    with pytest.raises(TypeError, match=r"token must be a whole number from 0 to 5; got 'cache' \(str\)"):
        token_explorer(Q, K, V, TOKENS, token="cache")
    with pytest.raises(ValueError, match=r"token=6 is out of range; valid tokens are 0 to 5"):
        token_explorer(Q, K, V, TOKENS, token=6)
