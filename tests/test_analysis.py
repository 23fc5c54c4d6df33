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
    head_write_maps,
    heads_vs_one_head,
    masked_attention,
    scaling_experiment,
    scaling_gradients,
    softmax_jacobian,
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
    np.testing.assert_allclose(parts.output([False, True, False, True]), blocks[0] + blocks[2] + layer.b_o)  # True = off
    np.testing.assert_allclose(parts.output([1, 3]), blocks[0] + blocks[2] + layer.b_o)  # the same heads, as indices
    with pytest.raises(ValueError, match="token_index=6 .*valid indices are 0 to 5"):
        token_parts(layer, x, 6)


# --- the softmax's gradient, with and without the scale ----------------------------------------


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-5, 5), min_size=2, max_size=6))
def test_softmax_jacobian_matches_finite_differences(row):
    scores = np.array(row)
    eps = 1e-6
    numeric = np.stack([(softmax(scores + eps * e) - softmax(scores - eps * e)) / (2 * eps)
                        for e in np.eye(len(row))], axis=1)  # (Tk, Tk): column j = d weights / d score j
    assert np.allclose(softmax_jacobian(scores), numeric, atol=1e-6)


def test_softmax_jacobian_vanishes_when_one_score_dominates():
    assert np.abs(softmax_jacobian(np.array([40.0, 0.0, 0.0]))).max() < 1e-15
    assert np.linalg.norm(softmax_jacobian(np.zeros(4))) > 0.4  # even weights: the most room to move


def test_without_the_scale_the_gradient_shrinks_as_d_head_grows_and_with_it_stays_put():
    grads = scaling_gradients()
    assert np.all(np.diff(grads.raw_norm) < 0)  # every doubling of d_head shrinks it
    assert grads.raw_norm[-1] < grads.raw_norm[0] / 4
    assert grads.scaled_norm.max() / grads.scaled_norm.min() < 1.5
    assert np.all(grads.raw_norm < grads.scaled_norm)  # the unscaled scores spread more, so saturate more


def test_scaling_gradients_uses_the_scaling_experiments_queries_and_keys():
    grads = scaling_gradients()
    assert grads.raw_largest.shape == grads.scaled_largest.shape == (len(DATA.d_head_values), DATA.n_queries)
    assert np.allclose(grads.raw_largest.mean(axis=1), DATA.unscaled_top)
    assert np.allclose(grads.scaled_largest.mean(axis=1), DATA.scaled_top)


def test_scaling_gradients_names_a_bad_query_count():
    with pytest.raises(ValueError, match="n_queries"):
        scaling_gradients(n_queries=0)


# --- several heads against one wide head ------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16]), st.integers(0, 10_000))
def test_one_heads_scores_are_the_heads_scores_summed_over_sqrt_h(n_heads, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.standard_normal((5, 16)), rng.standard_normal((7, 16))
    result = heads_vs_one_head(q, k, n_heads)
    assert result.head_scores.shape == (n_heads, 5, 7)
    assert np.allclose(result.summed_scores, result.one_head_scores)
    assert np.allclose(result.one_head_scores, q @ k.T / 4.0)
    assert np.allclose(result.one_head_weights.sum(-1), 1) and np.allclose(result.head_weights.sum(-1), 1)


def test_heads_vs_one_head_refuses_a_head_count_that_does_not_divide_d():
    with pytest.raises(ValueError, match="n_heads=3 does not divide d_model=16"):
        heads_vs_one_head(np.ones((2, 16)), np.ones((2, 16)), 3)
    with pytest.raises(ValueError, match="same D"):
        heads_vs_one_head(np.ones((2, 16)), np.ones((2, 8)), 2)


@pytest.mark.parametrize("n_heads", [1, 2, 4, 8])
def test_each_heads_write_map_has_rank_at_most_d_head_and_gives_its_part_of_the_output(n_heads):
    layer = demo_layer(16, n_heads, seed=3)
    x = token_vectors(16, seed=0)
    maps = head_write_maps(layer.w_v, layer.w_o, n_heads)  # (H, D, D)
    assert maps.shape == (n_heads, 16, 16)
    assert all(np.linalg.matrix_rank(m) <= 16 // n_heads for m in maps)
    result = layer(x)
    parts = head_contributions(result.head_outputs.transpose(1, 0, 2), layer.w_o)  # (T, H, D)
    b_v = np.zeros(16) if layer.b_v is None else layer.b_v
    for h in range(n_heads):
        block = slice(h * 16 // n_heads, (h + 1) * 16 // n_heads)
        bias_part = b_v[block] @ layer.w_o[block]  # (D,): each row of weights sums to 1
        assert np.allclose(parts[:, h], result.weights[h] @ x @ maps[h] + bias_part)


def test_write_maps_refuse_mismatched_matrices():
    with pytest.raises(ValueError, match="w_v must be"):
        head_write_maps(np.ones((4, 8)), np.ones((4, 4)), 2)
    with pytest.raises(ValueError, match="n_heads=3"):
        head_write_maps(np.ones((4, 8)), np.ones((8, 4)), 3)
