"""Tests for mha_core.circuits: pattern scores on repeated tokens, QK/OV circuits, composition and its baseline."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_core import attention, circuits


def causal_weights(rng, B, H, T):
    scores = rng.normal(scale=2.0, size=(B, H, T, T))
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)
    return attention.softmax(scores, axis=-1)


def stripe_pattern(T, back, B=1):
    """Every query puts all its weight `back` keys back (on itself where that is before the start)."""
    w = np.zeros((B, 1, T, T))
    for t in range(T):
        w[:, 0, t, t - back if t >= back else t] = 1.0
    return w


# --- repeated tokens ---------------------------------------------------------------------------


def test_repeated_tokens_are_a_prefix_then_a_stretch_twice():
    tokens = circuits.repeated_tokens(8, 5, 32, prefix=1, seed=3)
    assert tokens.shape == (8, 11) and tokens.dtype == np.int64
    np.testing.assert_array_equal(tokens[:, 1:6], tokens[:, 6:11])
    assert tokens.min() >= 0 and tokens.max() < 32


def test_repeated_tokens_depend_on_the_seed_only():
    a, b = circuits.repeated_tokens(4, 6, 32, seed=1), circuits.repeated_tokens(4, 6, 32, seed=1)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, circuits.repeated_tokens(4, 6, 32, seed=2))


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"n_sequences": 0}, ValueError, "n_sequences=0 is too small"),
    ({"repeat_length": 2.5}, TypeError, "repeat_length must be a whole number"),
    ({"vocab_size": 1}, ValueError, "vocab_size=1 is too small; vocab_size must be at least 2"),
    ({"prefix": -1}, ValueError, "prefix=-1 is negative"),
    ({"seed": "a"}, TypeError, "seed must be a whole number"),
])
def test_repeated_tokens_bad_arguments_name_the_parameter(kwargs, error, words):
    args = {"n_sequences": 2, "repeat_length": 3, "vocab_size": 10, **kwargs}
    seed = args.pop("seed", 0)
    prefix = args.pop("prefix", 1)
    with pytest.raises(error, match=words):
        circuits.repeated_tokens(**args, prefix=prefix, seed=seed)


# --- previous-token and induction scores --------------------------------------------------------


def test_a_previous_token_head_scores_one_and_a_self_head_zero():
    T = 9
    both = np.concatenate([stripe_pattern(T, 1), stripe_pattern(T, 0)], axis=1)  # (1, 2, T, T)
    np.testing.assert_allclose(circuits.previous_token_score(both), [1.0, 0.0])


def test_an_induction_head_scores_one_and_a_head_on_the_earlier_copy_zero():
    L, T = 4, 1 + 2 * 4
    induction = stripe_pattern(T, L - 1)  # key t - L + 1
    copy = stripe_pattern(T, L)  # key t - L: the earlier copy itself
    scores = circuits.induction_score(np.concatenate([induction, copy], axis=1), L)
    np.testing.assert_allclose(scores, [1.0, 0.0])


def test_only_the_second_copy_counts_for_the_induction_score():
    L, T = 3, 1 + 2 * 3
    w = stripe_pattern(T, L - 1)
    first_copy = np.arange(0, T - L)
    w[:, :, first_copy] = 0.0
    w[:, :, first_copy, 0] = 1.0  # the first copy's queries look elsewhere: the score does not move
    np.testing.assert_allclose(circuits.induction_score(w, L), [1.0])
    queries, keys = circuits.induction_positions(T, L)
    np.testing.assert_array_equal(queries, [4, 5, 6])
    np.testing.assert_array_equal(keys, [2, 3, 4])


def test_chance_is_the_score_of_a_head_that_spreads_evenly():
    T, L = 25, 12
    chance = circuits.chance_scores(T, L)
    assert chance.previous_token == pytest.approx(np.mean([1 / (t + 1) for t in range(1, T)]))
    assert chance.induction == pytest.approx(np.mean([1 / (t + 1) for t in range(T - L, T)]))
    assert chance.previous_token == pytest.approx(0.1173, abs=1e-4) and chance.induction == pytest.approx(0.0530, abs=1e-4)
    uniform = circuits.uniform_causal_weights(T)
    np.testing.assert_allclose(uniform.sum(axis=1), 1.0)
    assert np.all(np.triu(uniform, 1) == 0)


@given(st.integers(1, 3), st.integers(1, 3), st.integers(1, 6), st.integers(0, 3), st.integers(0, 2**16))
def test_scores_are_shares_of_weight_between_zero_and_one(B, H, L, prefix, seed):
    T = prefix + 2 * L
    w = causal_weights(np.random.default_rng(seed), B, H, T)
    for score in (circuits.induction_score(w, L), *([circuits.previous_token_score(w)] if T > 1 else [])):
        assert score.shape == (H,)
        assert np.all(score >= 0) and np.all(score <= 1 + 1e-12)


def test_scores_leave_their_input_unchanged():
    w = causal_weights(np.random.default_rng(0), 2, 2, 9)
    before = w.copy()
    circuits.induction_score(w, 4)
    circuits.previous_token_score(w)
    np.testing.assert_array_equal(w, before)


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: circuits.induction_score(np.ones((2, 5, 5)) / 5, 2), ValueError, r"weights has rank 3 .*\(B, H, T, T\)"),
    (lambda: circuits.induction_score(np.ones((1, 1, 5, 4)) / 4, 2), ValueError, "last two axes differ"),
    (lambda: circuits.induction_score(np.ones((1, 1, 5, 5)) / 5, 3), ValueError,
     "repeat_length=3 does not fit twice in T=5 tokens; valid repeat lengths are 1 to 2"),
    (lambda: circuits.induction_score(np.full((1, 1, 4, 4), np.nan), 2), ValueError, "weights contains NaN"),
    (lambda: circuits.induction_score(np.ones((1, 1, 4, 4)), 0), ValueError, "repeat_length=0 is too small"),
    (lambda: circuits.previous_token_score(np.ones((1, 1, 1, 1))), ValueError, "needs at least 2"),
    (lambda: circuits.previous_token_score("weights"), TypeError, "weights must hold real numbers"),
])
def test_bad_weights_raise_errors_naming_the_parameter(call, error, words):
    with pytest.raises(error, match=words):
        call()


# --- circuits ----------------------------------------------------------------------------------


@pytest.fixture
def layer():
    return attention.MultiHeadAttention(12, 3, bias=False, seed=4)


def test_qk_circuits_give_each_heads_scores(layer):
    x = np.random.default_rng(1).normal(size=(2, 5, 12))
    q = attention.split_heads(attention.project(x, layer.w_q), 3)  # (B, H, T, Dh)
    k = attention.split_heads(attention.project(x, layer.w_k), 3)  # (B, H, T, Dh)
    qk = circuits.qk_circuits(layer.w_q, layer.w_k, 3)  # (H, D, D)
    assert qk.shape == (3, 12, 12)
    expected = q @ np.swapaxes(k, -1, -2)  # (B, H, T, T), before the division by sqrt(d_head)
    np.testing.assert_allclose(np.einsum("bqd,hde,bke->bhqk", x, qk, x), expected, atol=1e-10)
    assert np.all(np.linalg.matrix_rank(qk) <= 4)


def test_ov_circuits_sum_to_the_layers_output(layer):
    x = np.random.default_rng(2).normal(size=(2, 5, 12))
    result = layer(x, is_causal=True)
    ov = circuits.ov_circuits(layer.w_v, layer.w_o, 3)  # (H, D, D)
    # Output = sum over heads of (weights^h x) W_OV^h: each head's part, read from its circuit alone.
    parts = np.einsum("bhqk,bkd,hde->bqe", result.weights, x, ov)
    np.testing.assert_allclose(parts, result.output, atol=1e-10)


def test_composition_score_is_one_for_aligned_rank_one_maps_and_zero_for_orthogonal_ones():
    u, v, w = np.eye(4)[0], np.eye(4)[1], np.eye(4)[2]
    a = np.outer(u, v)[None]  # reads v
    b_aligned = np.outer(v, w)[None]  # writes into v
    b_orthogonal = np.outer(w, w)[None]
    assert circuits.composition_score(a, b_aligned)[0, 0] == pytest.approx(1.0)
    assert circuits.composition_score(a, b_orthogonal)[0, 0] == pytest.approx(0.0)


@given(st.integers(0, 2**16))
def test_composition_scores_lie_between_zero_and_one(seed):
    rng = np.random.default_rng(seed)
    scores = circuits.composition_score(rng.normal(size=(2, 6, 6)), rng.normal(size=(3, 6, 6)))
    assert scores.shape == (2, 3)
    assert np.all(scores >= 0) and np.all(scores <= 1 + 1e-12)


def test_k_composition_is_high_when_the_later_keys_read_what_the_earlier_head_writes():
    D = 8
    basis = np.eye(D)
    writes_s = np.outer(basis[0], basis[1])  # W_OV: reads direction 0, writes direction 1
    keys_read_s = np.outer(basis[2], basis[1])  # W_QK: query 2 matches keys along direction 1
    keys_read_other = np.outer(basis[2], basis[3])
    k = circuits.k_composition(np.stack([keys_read_s, keys_read_other]), writes_s[None])  # (H0=1, H1=2)
    assert k.shape == (1, 2)
    np.testing.assert_allclose(k, [[1.0, 0.0]], atol=1e-12)
    q = circuits.q_composition(np.stack([np.outer(basis[1], basis[5]), keys_read_other]), writes_s[None])
    np.testing.assert_allclose(q, [[1.0, 0.0]], atol=1e-12)  # the query side reads direction 1


def test_the_random_baseline_is_about_one_over_root_d_and_depends_on_the_seed_only():
    base = circuits.composition_baseline(32, 2, n_draws=200, seed=0)
    assert base.mean == pytest.approx(0.176, abs=0.01)  # the prototype measured 0.18
    assert 0 < base.std < 0.05 and base.n_draws == 200
    assert circuits.composition_baseline(32, 2, n_draws=200, seed=0) == base
    assert circuits.composition_baseline(32, 2, n_draws=200, seed=1).mean != base.mean


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: circuits.qk_circuits(np.ones((4, 4)), np.ones((4, 2)), 2), ValueError, "w_q has shape .* but w_k has shape"),
    (lambda: circuits.qk_circuits(np.ones((4, 6)), np.ones((4, 6)), 4), ValueError, "n_heads=4 does not divide the width of w_q=6"),
    (lambda: circuits.ov_circuits(np.ones((4, 4)), np.ones((4, 3)), 2), ValueError, r"w_o has shape \(4, 3\); this layer needs \(4, 4\)"),
    (lambda: circuits.composition_baseline(32, 5), ValueError, "n_heads=5 does not divide d_model=32"),
    (lambda: circuits.k_composition(np.ones((2, 4, 4)), np.ones((2, 3, 3))), ValueError, "must both be"),
])
def test_bad_circuit_arguments_raise_clear_errors(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_the_previous_token_score_can_start_at_a_later_query():
    T = 5
    w = np.zeros((1, 1, T, T))
    w[0, 0, 0, 0] = w[0, 0, 1, 0] = 1.0  # the second query looks one back ...
    w[0, 0, np.arange(2, T), 0] = 1.0  # ... the later ones at the first token
    assert circuits.previous_token_score(w)[0] == pytest.approx(1 / (T - 1))
    assert circuits.previous_token_score(w, from_query=2)[0] == 0.0
    with pytest.raises(ValueError, match="from_query=0"):
        circuits.previous_token_score(w, from_query=0)
    with pytest.raises(ValueError, match="needs at least 6"):
        circuits.previous_token_score(w, from_query=5)
