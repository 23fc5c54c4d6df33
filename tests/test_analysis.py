"""Tests for mha_core.analysis: the experiments the notebooks show, computed with the core."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_core.analysis import (
    MASK_MODES,
    PAD_TOKEN,
    head_contributions,
    masked_attention,
    scaling_experiment,
    token_parts,
)
from mha_core.attention import MultiHeadAttention, causal_mask, output_projection, scaled_dot_product_attention, softmax
from mha_core.examples import TOKENS, demo_layer, single_head_example, token_vectors

DATA = scaling_experiment()
X, (W_Q, W_K, W_V), (Q, K, V) = single_head_example(8, 4)  # notebook 02's x (6, 8), w_* (8, 4), q, k, v (6, 4)
T = len(TOKENS)


# --- why divide by sqrt(d_head) ---------------------------------------------------------------


def test_unscaled_scores_spread_like_sqrt_d_head_and_scaled_ones_stay_near_one():
    d_head = DATA.d_head_values
    np.testing.assert_allclose(DATA.unscaled_std / np.sqrt(d_head), 1.0, atol=0.15)
    np.testing.assert_allclose(DATA.scaled_std, 1.0, atol=0.15)


def test_without_scaling_the_softmax_saturates_as_d_head_grows():
    assert DATA.unscaled_top[-1] > 0.9  # d_head = 512: almost one-hot
    assert DATA.unscaled_top[-1] > DATA.unscaled_top[0] + 0.3
    # With the division the typical largest weight stays put.
    assert np.ptp(DATA.scaled_top) < 0.1
    assert DATA.scaled_top.max() < 0.6


def test_scaling_experiment_weights_are_the_softmax_of_the_documented_random_vectors():
    rng = np.random.default_rng(0)
    q_all = rng.standard_normal((256, 512))
    k_all = rng.standard_normal((6, 512))
    for i, d_head in enumerate(DATA.d_head_values):
        raw = q_all[0, :d_head] @ k_all[:, :d_head].T
        np.testing.assert_allclose(DATA.unscaled_weights[i], softmax(raw))
        np.testing.assert_allclose(DATA.scaled_weights[i], softmax(raw / np.sqrt(d_head)))
    np.testing.assert_allclose(DATA.unscaled_weights.sum(axis=1), 1.0)


def test_scaling_data_names_the_valid_d_head_values_for_one_it_did_not_compute():
    with pytest.raises(ValueError, match=r"d_head=100 .*valid values are 4, 8, 16, 32, 64, 128, 256, 512"):
        DATA.index(100)


# --- masks -----------------------------------------------------------------------------------


def test_no_mask_and_causal_mask_give_the_core_attention_weights():
    none = masked_attention(X, W_Q, W_K, W_V, TOKENS, "none")
    causal = masked_attention(X, W_Q, W_K, W_V, TOKENS, "causal")
    np.testing.assert_allclose(none.weights, scaled_dot_product_attention(Q, K, V)[1])
    np.testing.assert_allclose(causal.weights, scaled_dot_product_attention(Q, K, V, is_causal=True)[1])
    assert not none.blocked.any() and (causal.blocked == causal_mask(T)).all()
    assert none.tokens == causal.tokens == TOKENS


def test_padding_blocks_the_pad_keys_and_matches_a_layer_called_with_key_padding_mask():
    padded = masked_attention(X, W_Q, W_K, W_V, TOKENS, "padding", n_pad=2)
    assert padded.tokens == TOKENS + (PAD_TOKEN, PAD_TOKEN)
    assert padded.blocked[:, T:].all() and not padded.blocked[:, :T].any()
    np.testing.assert_array_equal(padded.weights[:, T:], 0.0)
    # A two-head layer whose first head holds the notebook's matrices: key_padding_mask gives the same table.
    layer = MultiHeadAttention(8, 2, bias=False, seed=0)
    layer.w_q, layer.w_k, layer.w_v = (np.hstack([w, np.zeros((8, 4))]) for w in (W_Q, W_K, W_V))
    x_padded = np.vstack([X, np.zeros((2, 8))])
    head_0 = layer(x_padded, key_padding_mask=np.array([False] * T + [True] * 2)).weights[0]
    np.testing.assert_allclose(padded.weights, head_0)
    # Blocking the padding leaves the real tokens' weights exactly as without padding.
    np.testing.assert_allclose(padded.weights[:T, :T], masked_attention(X, W_Q, W_K, W_V, TOKENS, "none").weights)


def test_an_unknown_mask_mode_is_refused_with_the_valid_modes():
    assert MASK_MODES == ("none", "causal", "padding")
    with pytest.raises(ValueError, match="mode='future' .*valid modes are none, causal, padding"):
        masked_attention(X, W_Q, W_K, W_V, TOKENS, "future")


# --- each head's part of the output ----------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(n_heads=st.sampled_from([1, 2, 4, 8]), d_head=st.integers(1, 4), seed=st.integers(0, 10_000), data=st.data())
def test_the_heads_parts_plus_the_bias_add_up_to_the_output_projection(n_heads, d_head, seed, data):
    rng = np.random.default_rng(seed)
    T_ = data.draw(st.integers(1, 5))
    head_outputs = rng.standard_normal((2, n_heads, T_, d_head))  # (B, H, T, Dh)
    w_o = rng.standard_normal((n_heads * d_head, 6))  # (H*Dh, D)
    b_o = rng.standard_normal(6)
    parts = head_contributions(head_outputs.transpose(0, 2, 1, 3), w_o)  # (B, T, H, D)
    np.testing.assert_allclose(parts.sum(axis=-2) + b_o, output_projection(head_outputs, w_o, b_o), atol=1e-10)


def test_head_contributions_refuses_a_w_o_of_the_wrong_height():
    with pytest.raises(ValueError, match="w_o has 6 rows; head_outputs of 2 heads of 4 need H\\*Dh = 8"):
        head_contributions(np.ones((2, 4)), np.ones((6, 3)))


def test_token_parts_splits_one_tokens_output_into_one_part_per_head():
    layer = demo_layer(16, 4, seed=0)
    x = token_vectors(16, seed=0)
    t = TOKENS.index("changed")
    parts = token_parts(layer, x, t)
    blocks = [layer(x[None]).head_outputs[0, h, t] @ layer.w_o_block(h) for h in range(4)]
    np.testing.assert_allclose(parts.contributions, np.stack(blocks))
    np.testing.assert_allclose(parts.output(), layer(x[None]).output[0, t])
    np.testing.assert_allclose(parts.output([True, False, True, False]), blocks[0] + blocks[2] + layer.b_o)
    with pytest.raises(ValueError, match="token_index=6 .*valid indices are 0 to 5"):
        token_parts(layer, x, 6)
