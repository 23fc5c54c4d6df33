"""Tests for mha_classroom.widgets.single_head: the d_head slider and the mask buttons redraw in place."""

from __future__ import annotations

import numpy as np
import pytest

from mha_classroom.widgets.single_head import MaskExplorer, ScalingExplorer, mask_explorer, scaling_explorer
from mha_core.analysis import D_HEAD_VALUES, PAD_TOKEN as PAD
from mha_core.attention import causal_mask, scaled_dot_product_attention, softmax
from mha_core.examples import TOKENS, single_head_example

D_MODEL, D_HEAD = 8, 4
T = len(TOKENS)


X, (W_Q, W_K, W_V), (Q, K, V) = single_head_example(D_MODEL, D_HEAD)  # notebook 02's x (6, 8), w_* (8, 4), q, k, v (6, 4)


# --- the d_head slider --------------------------------------------------------------------


@pytest.fixture(scope="module")
def scaling() -> ScalingExplorer:
    return scaling_explorer()


def test_slider_offers_powers_of_two_from_4_to_512_and_starts_at_4(scaling):
    assert list(scaling.d_head.options) == [4, 8, 16, 32, 64, 128, 256, 512] == list(D_HEAD_VALUES)
    assert scaling.d_head.value == 4


@pytest.mark.parametrize("d_head", [512, 64, 8, 256, 4])
def test_moving_the_slider_redraws_both_weight_rows_in_place(scaling, d_head):
    figure, traces = scaling.figure, tuple(scaling.figure.data)
    scaling.d_head.value = d_head
    assert scaling.figure is figure and tuple(scaling.figure.data) == traces
    # The same random vectors the experiment documents: their first d_head entries.
    rng = np.random.default_rng(0)
    q = rng.standard_normal((256, 512))[0, :d_head]
    k = rng.standard_normal((6, 512))[:, :d_head]
    unscaled, scaled = scaling.figure.data[:2]
    np.testing.assert_allclose(unscaled.y, softmax(q @ k.T))
    np.testing.assert_allclose(scaled.y, softmax(q @ k.T / np.sqrt(d_head)))
    assert list(scaling.figure.data[4].x) == [d_head]
    assert scaling.figure.layout.title.text.startswith(f"d_head = {d_head}:")


def test_at_the_largest_d_head_the_unscaled_row_is_nearly_one_hot_and_the_scaled_one_is_not(scaling):
    scaling.d_head.value = 512
    unscaled, scaled = scaling.figure.data[:2]
    assert max(unscaled.y) > 0.85
    assert max(scaled.y) < 0.5


def test_a_d_head_that_was_not_computed_is_refused_with_the_valid_values():
    with pytest.raises(ValueError, match="valid values are 4, 8, 16"):
        scaling_explorer(d_head=100)


# --- the mask buttons --------------------------------------------------------------------


@pytest.fixture(scope="module")
def masks() -> MaskExplorer:
    return mask_explorer(X, W_Q, W_K, W_V, TOKENS)


def heatmap_of(explorer):
    trace = explorer.figure.data[0]
    return np.asarray(trace.z), np.asarray(trace.text), [label.replace("\u200b", "") for label in trace.y]


def test_buttons_offer_none_causal_and_padding(masks):
    assert list(masks.mode.options) == ["none", "causal", "padding"]


def test_no_mask_shows_scaled_dot_product_attention_weights(masks):
    masks.mode.value = "causal"
    masks.mode.value = "none"
    z, text, labels = heatmap_of(masks)
    _, expected = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(z, expected)
    assert labels == list(TOKENS)
    assert not (text == "blocked").any()


def test_causal_mask_blocks_every_later_token_and_matches_is_causal(masks):
    figure, trace = masks.figure, masks.figure.data[0]
    masks.mode.value = "causal"
    assert masks.figure is figure and masks.figure.data[0] is trace
    z, text, _ = heatmap_of(masks)
    _, expected = scaled_dot_product_attention(Q, K, V, is_causal=True)
    np.testing.assert_allclose(z, expected)
    assert ((text == "blocked") == causal_mask(T)).all()
    assert z[0, 0] == pytest.approx(1.0)  # the first token can read only itself
    assert "Causal" in masks.figure.layout.title.text


def test_padding_adds_two_pad_tokens_nobody_reads(masks):
    figure = masks.figure
    masks.mode.value = "padding"
    assert masks.figure is figure
    z, text, labels = heatmap_of(masks)
    assert labels == list(TOKENS) + [PAD, PAD]
    assert z.shape == (T + 2, T + 2)
    np.testing.assert_array_equal(z[:, T:], 0.0)
    assert (text[:, T:] == "blocked").all() and not (text[:, :T] == "blocked").any()
    # Blocking the padding leaves the real tokens' weights exactly as without padding.
    _, unpadded = scaled_dot_product_attention(Q, K, V)
    np.testing.assert_allclose(z[:T, :T], unpadded)


def test_switching_back_to_no_mask_restores_the_six_token_table(masks):
    masks.mode.value = "padding"
    masks.mode.value = "none"
    z, _, labels = heatmap_of(masks)
    assert z.shape == (T, T) and labels == list(TOKENS)


def test_an_unknown_mask_mode_is_refused_with_the_valid_modes():
    with pytest.raises(ValueError, match="mode='future' .*valid values are 'none', 'causal', 'padding'"):
        mask_explorer(X, W_Q, W_K, W_V, TOKENS, mode="future")


def test_both_figures_travel_in_their_widgets_first_message(monkeypatch):
    # A figure sent in a later message can be dropped by a browser still creating the widget.
    import comm

    opened = []
    real = comm.create_comm
    monkeypatch.setattr(comm, "create_comm", lambda **kwargs: (opened.append(kwargs), real(**kwargs))[1])
    scaling_explorer(d_head=16)
    mask_explorer(X, W_Q, W_K, W_V, TOKENS, mode="causal")
    states = [c["data"]["state"]["figure"] for c in opened if c["data"]["state"].get("figure")]
    assert [len(s["data"]) for s in states] == [6, 1]
    assert states[0]["layout"]["title"]["text"].startswith("d_head = 16:")
    assert states[1]["layout"]["title"]["text"].startswith("Causal mask")
