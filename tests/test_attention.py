"""The NumPy reference (mha_core.attention): softmax, the laws of multi-head attention,
masks, unbatched input, inputs left unchanged, bad input, and a value worked out by hand.

The laws are hypothesis properties over random layouts: batch size, cross-attention
with Tq != Tk, several d_model values and head counts (and key/value head counts).
Array values come from a numpy Generator seeded by hypothesis, so a failure shrinks
to a small layout and one seed.
"""

from __future__ import annotations

import ast
import math
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from mha_core import attention as A
from mha_core._validate import divisors
from mha_core.attention import (
    MultiHeadAttention,
    causal_mask,
    merge_heads,
    output_projection,
    repeat_kv,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)

# float64 throughout; two routes to the same number differ by a few ulps, a bug by far more.
TOL = 1e-12

#: Largest absolute difference seen per law in this run (read by a measuring script;
#: the assertions do not depend on it).
LARGEST_ERRORS: dict[str, float] = {}


def assert_close(actual, expected, law: str, tol: float = TOL) -> None:
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.shape == expected.shape, f"{law}: shape {actual.shape} != {expected.shape}"
    err = float(np.max(np.abs(actual - expected), initial=0.0))
    LARGEST_ERRORS[law] = max(LARGEST_ERRORS.get(law, 0.0), err)
    np.testing.assert_allclose(actual, expected, rtol=tol, atol=tol, err_msg=law)


# --- building random cases -------------------------------------------------------------


def make_layer(d_model, n_heads, n_kv_heads=None, *, seed=0, bias=True) -> MultiHeadAttention:
    """A seeded layer with non-zero biases, so every law is checked with biases in play."""
    layer = MultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads, seed=seed, bias=bias)
    if bias:
        rng = np.random.default_rng([seed, 1])
        for name in ("b_q", "b_k", "b_v", "b_o"):
            setattr(layer, name, rng.normal(size=getattr(layer, name).shape))
    return layer


@dataclass
class Case:
    layer: MultiHeadAttention
    query: np.ndarray  # (B, Tq, D)
    key: np.ndarray  # (B, Tk, D)
    value: np.ndarray  # (B, Tk, D)
    rng: np.random.Generator

    @property
    def shape(self):
        B, Tq, D = self.query.shape
        return B, Tq, self.key.shape[1], D, self.layer.n_heads


D_MODELS = (2, 4, 6, 8, 12, 16)


@st.composite
def cases(draw, *, gqa=False, min_heads=1, min_tq=1, self_attention=False):
    d_model = draw(st.sampled_from(D_MODELS))
    n_heads = draw(st.sampled_from([h for h in divisors(d_model) if h >= min_heads]))
    if gqa:
        n_kv_heads = draw(st.sampled_from([h for h in divisors(n_heads) if h < n_heads]))
    else:
        n_kv_heads = None
    B = draw(st.integers(1, 3))
    Tq = draw(st.integers(min_tq, 5))
    Tk = Tq if self_attention else draw(st.integers(1, 5))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    layer = make_layer(d_model, n_heads, n_kv_heads, seed=seed)
    query = rng.normal(size=(B, Tq, d_model))
    if self_attention:
        key = value = query
    else:
        key = rng.normal(size=(B, Tk, d_model))
        value = rng.normal(size=(B, Tk, d_model))
    return Case(layer, query, key, value, rng)


def blocks(w: np.ndarray, n: int) -> list[np.ndarray]:
    """Cut the last axis of ``w`` into ``n`` equal blocks (one per head)."""
    return np.split(w, n, axis=-1)


# --- softmax ---------------------------------------------------------------------------


def test_softmax_is_stable_at_logits_of_plus_and_minus_1e4():
    weights = softmax(np.array([[1e4, 1e4 - 1.0, -1e4], [-1e4, -1e4, -1e4 - 2.0]]))
    assert np.all(np.isfinite(weights))
    # Row 0: e^0 : e^-1 : e^-20000 (which is 0 in float64).
    e1 = math.exp(-1.0)
    assert_close(weights[0], [1 / (1 + e1), e1 / (1 + e1), 0.0], "softmax at +1e4")
    # Row 1: only differences matter, so this is softmax([0, 0, -2]).
    e2 = math.exp(-2.0)
    assert_close(weights[1], [1 / (2 + e2), 1 / (2 + e2), e2 / (2 + e2)], "softmax at -1e4")


@given(hnp.arrays(np.float64, hnp.array_shapes(min_dims=1, max_dims=3, max_side=6), elements=st.floats(-1e4, 1e4)))
def test_unblocked_softmax_rows_are_positive_and_sum_to_one(x):
    weights = softmax(x)
    assert weights.shape == x.shape
    assert np.all((weights >= 0) & (weights <= 1))
    assert_close(weights.sum(axis=-1), np.ones(x.shape[:-1]), "softmax rows sum to 1")


@given(
    hnp.arrays(np.float64, st.integers(1, 6), elements=st.floats(-1e3, 1e3)),
    st.floats(-1e3, 1e3),
)
def test_softmax_ignores_a_constant_added_to_a_row(x, shift):
    assert_close(softmax(x + shift), softmax(x), "softmax shift invariance", tol=1e-9)


def test_softmax_matches_its_definition_on_small_logits():
    x = np.array([0.5, -1.0, 2.0])
    expected = np.exp(x) / np.exp(x).sum()
    assert_close(softmax(x), expected, "softmax definition")


def test_softmax_works_along_the_axis_it_is_given():
    x = np.array([[0.0, 1.0], [2.0, 5.0]])
    assert_close(softmax(x, axis=0), softmax(x.T, axis=-1).T, "softmax axis")
    assert_close(softmax(x, axis=0).sum(axis=0), [1.0, 1.0], "softmax axis sums")


def test_a_row_with_every_entry_blocked_gets_zeros_not_nan():
    weights = softmax(np.array([[-np.inf, -np.inf, -np.inf], [0.0, 1.0, 2.0]]))
    assert not np.isnan(weights).any()
    assert np.array_equal(weights[0], [0.0, 0.0, 0.0])
    assert_close(weights[1].sum(), 1.0, "softmax unblocked row")


def test_blocked_entries_get_exactly_zero_and_the_rest_share_the_weight():
    weights = softmax(np.array([0.0, -np.inf, 0.0, -np.inf]))
    assert weights[1] == 0.0 and weights[3] == 0.0
    assert np.array_equal(weights, [0.5, 0.0, 0.5, 0.0])


def test_softmax_leaves_its_input_unchanged():
    x = np.array([[3.0, -np.inf, 1.0], [1e4, 0.0, -1e4]])
    before = x.copy()
    softmax(x)
    assert np.array_equal(x, before)


@pytest.mark.parametrize("bad, word", [(np.nan, "NaN"), (np.inf, "+inf")])
def test_softmax_refuses_nan_and_plus_inf(bad, word):
    with pytest.raises(ValueError, match=re.escape(f"softmax got x containing {word}") + ".*-inf \\(blocked\\)"):
        softmax(np.array([0.0, bad]))


# --- the small steps -------------------------------------------------------------------


def test_scores_are_dot_products_divided_by_sqrt_d_head():
    q = np.array([[1.0, 2.0, 0.0, 1.0]])  # (Tq=1, Dh=4)
    k = np.array([[1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 3.0, -1.0]])  # (Tk=2, Dh=4)
    # q.k = 4 and -1; sqrt(4) = 2.
    assert_close(A.attention_scores(q, k), [[2.0, -0.5]], "scores by hand")


def test_causal_mask_blocks_exactly_the_later_keys():
    assert np.array_equal(
        causal_mask(3), [[False, True, True], [False, False, True], [False, False, False]]
    )
    assert np.array_equal(causal_mask(2, 3), [[False, True, True], [False, False, True]])
    assert causal_mask(4).dtype == bool


def test_additive_mask_turns_true_into_minus_inf_and_keeps_floats():
    assert np.array_equal(A.additive_mask(np.array([True, False])), [-np.inf, 0.0])
    assert np.array_equal(A.additive_mask(np.array([-2.0, 0.5], dtype=np.float32)), [-2.0, 0.5])
    assert A.BLOCKED == -np.inf


def test_repeat_kv_gives_query_head_h_the_kv_head_h_over_n_rep():
    kv = np.arange(2 * 3 * 1 * 1, dtype=float).reshape(2, 3, 1, 1)  # (B=2, Hkv=3, T=1, Dh=1)
    out = repeat_kv(kv, 2)  # (2, 6, 1, 1)
    assert out.shape == (2, 6, 1, 1)
    for h in range(6):
        assert np.array_equal(out[:, h], kv[:, h // 2])


def test_split_heads_gives_head_h_the_feature_slice_h():
    x = np.arange(2 * 3 * 6, dtype=float).reshape(2, 3, 6)  # (B, T, D=6)
    heads = split_heads(x, 3)  # (B, H=3, T, Dh=2)
    assert heads.shape == (2, 3, 3, 2)
    for h in range(3):
        assert np.array_equal(heads[:, h], x[:, :, 2 * h : 2 * h + 2])


# --- laws ------------------------------------------------------------------------------


@given(cases())
def test_weight_rows_sum_to_one_when_nothing_is_blocked(case):
    result = case.layer(case.query, case.key, case.value)
    B, Tq, Tk, D, H = case.shape
    assert result.weights.shape == (B, H, Tq, Tk)
    assert result.output.shape == (B, Tq, D)
    assert np.all(result.weights >= 0)
    assert_close(result.weights.sum(axis=-1), np.ones((B, H, Tq)), "weight rows sum to 1")


@given(cases())
def test_one_head_equals_single_head_attention_with_the_full_projections(case):
    B, Tq, Tk, D, H = case.shape
    layer = make_layer(D, 1, seed=int(case.rng.integers(2**31)))
    result = layer(case.query, case.key, case.value)
    q = case.query @ layer.w_q + layer.b_q  # (B, Tq, D)
    k = case.key @ layer.w_k + layer.b_k  # (B, Tk, D)
    v = case.value @ layer.w_v + layer.b_v  # (B, Tk, D)
    head_output, weights = scaled_dot_product_attention(q, k, v)  # (B, Tq, D), (B, Tq, Tk)
    assert_close(result.weights[:, 0], weights, "one head = single head (weights)")
    assert_close(result.output, head_output @ layer.w_o + layer.b_o, "one head = single head (output)")


@given(cases())
def test_a_loop_over_heads_then_concatenation_equals_the_batched_form(case):
    layer = case.layer
    H = layer.n_heads
    result = layer(case.query, case.key, case.value)
    head_outputs = []
    for h, (w_q, w_k, w_v, b_q, b_k, b_v) in enumerate(
        zip(*(blocks(getattr(layer, n), H) for n in ("w_q", "w_k", "w_v", "b_q", "b_k", "b_v")))
    ):
        q = case.query @ w_q + b_q  # (B, Tq, Dh)
        k = case.key @ w_k + b_k  # (B, Tk, Dh)
        v = case.value @ w_v + b_v  # (B, Tk, Dh)
        out, weights = scaled_dot_product_attention(q, k, v)
        assert_close(result.weights[:, h], weights, "loop over heads (weights)")
        head_outputs.append(out)
    concat = np.concatenate(head_outputs, axis=-1)  # (B, Tq, H*Dh)
    assert_close(merge_heads(result.head_outputs), concat, "loop over heads (concatenation)")
    assert_close(result.output, concat @ layer.w_o + layer.b_o, "loop over heads (output)")


@given(cases())
def test_output_projection_equals_the_sum_of_per_head_blocks_of_w_o(case):
    layer = case.layer
    result = layer(case.query, case.key, case.value)
    total = sum(result.head_outputs[:, h] @ layer.w_o_block(h) for h in range(layer.n_heads))  # (B, Tq, D)
    assert_close(output_projection(result.head_outputs, layer.w_o, layer.b_o), total + layer.b_o, "W_O as blocks")
    assert_close(result.output, total + layer.b_o, "W_O as blocks (layer)")


@given(cases(), st.randoms(use_true_random=False))
def test_permuting_heads_with_their_weight_blocks_leaves_the_output_unchanged(case, random):
    layer = case.layer
    D, H, Dh = layer.d_model, layer.n_heads, layer.d_head
    perm = list(range(H))
    random.shuffle(perm)
    permuted = make_layer(D, H)
    for name in ("w_q", "w_k", "w_v"):
        w = getattr(layer, name).reshape(D, H, Dh)  # (D, H, Dh)
        setattr(permuted, name, w[:, perm].reshape(D, H * Dh))  # (D, H*Dh)
    for name in ("b_q", "b_k", "b_v"):
        b = getattr(layer, name).reshape(H, Dh)  # (H, Dh)
        setattr(permuted, name, b[perm].reshape(H * Dh))  # (H*Dh,)
    w_o = layer.w_o.reshape(H, Dh, D)  # (H, Dh, D)
    permuted.w_o = w_o[perm].reshape(H * Dh, D)  # (H*Dh, D)
    permuted.b_o = layer.b_o

    before = layer(case.query, case.key, case.value)
    after = permuted(case.query, case.key, case.value)
    assert_close(after.weights, before.weights[:, perm], "permuted heads (weights follow)")
    assert_close(after.output, before.output, "permuted heads (output)")


@given(cases(self_attention=True, min_tq=2), st.data())
def test_with_a_causal_mask_later_tokens_do_not_change_earlier_outputs(case, data):
    B, T, _, D, H = case.shape
    cut = data.draw(st.integers(1, T - 1), label="first changed token")
    changed = case.query.copy()
    changed[:, cut:] = case.rng.normal(size=(B, T - cut, D))
    before = case.layer(case.query, is_causal=True)
    after = case.layer(changed, is_causal=True)
    assert_close(after.output[:, :cut], before.output[:, :cut], "causal: earlier outputs unchanged")
    assert_close(after.weights[:, :, :cut], before.weights[:, :, :cut], "causal: earlier weights unchanged")
    # The law is not vacuous: the changed tokens' own outputs did move.
    assert not np.allclose(after.output[:, cut:], before.output[:, cut:])


@given(cases())
def test_n_kv_heads_equal_to_n_heads_is_plain_multi_head_attention(case):
    layer = case.layer
    explicit = MultiHeadAttention(layer.d_model, layer.n_heads, n_kv_heads=layer.n_heads, seed=0)
    for name in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"):
        setattr(explicit, name, getattr(layer, name))
    a = layer(case.query, case.key, case.value)
    b = explicit(case.query, case.key, case.value)
    assert explicit.n_kv_heads == layer.n_kv_heads == layer.n_heads
    assert_close(b.output, a.output, "n_kv_heads = n_heads")
    assert_close(b.weights, a.weights, "n_kv_heads = n_heads (weights)")


@given(cases(gqa=True, min_heads=2))
def test_grouped_query_attention_equals_multi_head_with_repeated_kv_blocks(case):
    gqa = case.layer
    D, H, Hkv, Dh = gqa.d_model, gqa.n_heads, gqa.n_kv_heads, gqa.d_head
    n_rep = H // Hkv
    plain = make_layer(D, H)
    plain.w_q, plain.b_q, plain.w_o, plain.b_o = gqa.w_q, gqa.b_q, gqa.w_o, gqa.b_o
    for name in ("w_k", "w_v"):
        w = getattr(gqa, name).reshape(D, Hkv, Dh)  # (D, Hkv, Dh)
        setattr(plain, name, np.repeat(w, n_rep, axis=1).reshape(D, H * Dh))  # (D, H*Dh)
    for name in ("b_k", "b_v"):
        b = getattr(gqa, name).reshape(Hkv, Dh)  # (Hkv, Dh)
        setattr(plain, name, np.repeat(b, n_rep, axis=0).reshape(H * Dh))  # (H*Dh,)
    a = gqa(case.query, case.key, case.value)
    b = plain(case.query, case.key, case.value)
    assert a.k.shape[1] == Hkv and b.k.shape[1] == H
    assert_close(a.weights, b.weights, "GQA = MHA with repeated K/V (weights)")
    assert_close(a.output, b.output, "GQA = MHA with repeated K/V (output)")


@given(cases(gqa=True, min_heads=2))
def test_grouped_query_layers_have_fewer_key_value_parameters(case):
    gqa = case.layer
    assert gqa.w_k.shape == gqa.w_v.shape == (gqa.d_model, gqa.n_kv_heads * gqa.d_head)
    assert gqa.n_parameters < MultiHeadAttention(gqa.d_model, gqa.n_heads).n_parameters


@given(st.sampled_from(D_MODELS), st.integers(1, 3), st.integers(1, 5), st.data())
def test_split_heads_and_merge_heads_undo_each_other(d_model, B, T, data):
    n_heads = data.draw(st.sampled_from(divisors(d_model)), label="n_heads")
    rng = np.random.default_rng(d_model * 100 + B * 10 + T)
    x = rng.normal(size=(B, T, d_model))
    heads = split_heads(x, n_heads)  # (B, H, T, Dh)
    assert heads.shape == (B, n_heads, T, d_model // n_heads)
    assert np.array_equal(merge_heads(heads), x)
    assert np.array_equal(split_heads(merge_heads(heads), n_heads), heads)


@given(cases())
def test_no_head_off_equals_no_switch_at_all(case):
    layer = case.layer
    head_outputs = layer(case.query, case.key, case.value).head_outputs
    plain = output_projection(head_outputs, layer.w_o, layer.b_o)
    none_off = np.zeros(layer.n_heads, dtype=bool)
    assert_close(output_projection(head_outputs, layer.w_o, layer.b_o, heads_off=none_off), plain, "heads_off all False")
    assert_close(output_projection(head_outputs, layer.w_o, layer.b_o, heads_off=[]), plain, "heads_off no indices")


@given(cases(), st.data())
def test_switching_a_head_off_removes_its_block_of_w_o(case, data):
    layer = case.layer
    off = data.draw(st.integers(0, layer.n_heads - 1), label="head switched off")
    head_outputs = layer(case.query, case.key, case.value).head_outputs
    heads_off = np.zeros(layer.n_heads, dtype=bool)
    heads_off[off] = True
    others = sum(
        (head_outputs[:, h] @ layer.w_o_block(h) for h in range(layer.n_heads) if h != off),
        np.zeros_like(head_outputs[:, 0] @ layer.w_o_block(0)),
    )
    assert_close(
        output_projection(head_outputs, layer.w_o, layer.b_o, heads_off=heads_off), others + layer.b_o, "head switched off"
    )
    # The same switch written as a list of head indices.
    assert_close(output_projection(head_outputs, layer.w_o, layer.b_o, heads_off=[off]), others + layer.b_o, "index list")


# --- masks -----------------------------------------------------------------------------


@given(cases(), st.data())
def test_bool_and_float_attn_masks_agree(case, data):
    B, Tq, Tk, D, H = case.shape
    blocked = data.draw(hnp.arrays(bool, (Tq, Tk)), label="blocked")
    as_float = np.where(blocked, -np.inf, 0.0)
    a = case.layer(case.query, case.key, case.value, attn_mask=blocked)
    b = case.layer(case.query, case.key, case.value, attn_mask=as_float)
    assert np.array_equal(a.weights, b.weights)
    assert np.array_equal(a.output, b.output)
    # Blocked entries are exactly 0; rows with a free key sum to 1; fully blocked rows are 0.
    assert np.all(a.weights[:, :, blocked] == 0.0)
    free_rows = ~blocked.all(axis=-1)
    assert_close(a.weights.sum(axis=-1)[:, :, free_rows], np.ones((B, H, int(free_rows.sum()))), "masked rows sum to 1")
    assert np.all(a.weights[:, :, ~free_rows] == 0.0)


@given(cases())
def test_a_float_attn_mask_is_added_to_the_scores(case):
    B, Tq, Tk, D, H = case.shape
    mask = case.rng.normal(size=(Tq, Tk))
    plain = case.layer(case.query, case.key, case.value)
    masked = case.layer(case.query, case.key, case.value, attn_mask=mask)
    assert_close(masked.scores, plain.scores + mask, "float mask added to scores")
    assert_close(masked.weights, softmax(plain.scores + mask), "float mask then softmax")


@given(cases(), st.data())
def test_key_padding_mask_removes_the_padded_keys(case, data):
    B, Tq, Tk, D, H = case.shape
    padded = data.draw(hnp.arrays(bool, (B, Tk)), label="padded")
    padded[:, 0] = False  # keep at least one real key per sequence
    result = case.layer(case.query, case.key, case.value, key_padding_mask=padded)
    for b in range(B):
        assert np.all(result.weights[b][:, :, padded[b]] == 0.0)
        keep = ~padded[b]
        # Same as if the padded keys were never there.
        alone = case.layer(case.query[b], case.key[b][keep], case.value[b][keep])
        assert_close(result.output[b], alone.output, "padding = keys removed")
    as_float = case.layer(case.query, case.key, case.value, key_padding_mask=np.where(padded, -np.inf, 0.0))
    assert np.array_equal(as_float.output, result.output)


@given(cases(self_attention=True))
def test_is_causal_equals_passing_the_causal_mask(case):
    B, T, _, D, H = case.shape
    a = case.layer(case.query, is_causal=True)
    b = case.layer(case.query, attn_mask=causal_mask(T))
    assert np.array_equal(a.weights, b.weights)
    assert np.array_equal(a.output, b.output)
    assert np.all(np.triu(a.weights, k=1) == 0.0)


@given(cases(), st.data())
def test_a_per_head_attn_mask_of_shape_b_times_h_reaches_the_right_head(case, data):
    B, Tq, Tk, D, H = case.shape
    blocked = data.draw(hnp.arrays(bool, (B * H, Tq, Tk)), label="blocked")
    result = case.layer(case.query, case.key, case.value, attn_mask=blocked)
    k = repeat_kv(result.k, H // case.layer.n_kv_heads)  # (B, H, Tk, Dh)
    v = repeat_kv(result.v, H // case.layer.n_kv_heads)  # (B, H, Tk, Dh)
    for b in range(B):
        for h in range(H):
            # Row b*H + h belongs to batch b, head h (torch's layout).
            out, weights = scaled_dot_product_attention(result.q[b, h], k[b, h], v[b, h], attn_mask=blocked[b * H + h])
            assert_close(result.weights[b, h], weights, "(B*H, Tq, Tk) mask (weights)")
            assert_close(result.head_outputs[b, h], out, "(B*H, Tq, Tk) mask (head outputs)")


def test_the_same_mask_for_every_head_equals_the_two_dimensional_mask():
    layer = make_layer(8, 4, seed=3)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(2, 5, 8))
    blocked = np.triu(np.ones((5, 5), dtype=bool), k=2)
    a = layer(x, attn_mask=blocked)
    b = layer(x, attn_mask=np.broadcast_to(blocked, (2 * 4, 5, 5)))
    assert np.array_equal(a.output, b.output)


def test_a_fully_blocked_query_gets_zero_weights_and_a_zero_head_output():
    layer = make_layer(8, 2, seed=1)
    x = np.random.default_rng(1).normal(size=(1, 4, 8))
    blocked = np.zeros((4, 4), dtype=bool)
    blocked[2] = True  # query 2 may look at nothing
    result = layer(x, attn_mask=blocked)
    assert not np.isnan(result.output).any()
    assert np.all(np.isneginf(result.scores[:, :, 2]))
    assert np.array_equal(result.weights[:, :, 2], np.zeros((1, 2, 4)))
    assert np.array_equal(result.head_outputs[:, :, 2], np.zeros((1, 2, 4)))
    # Its output is the output projection of zeros: the bias b_o alone.
    assert_close(result.output[0, 2], layer.b_o, "fully blocked row output")
    # The other queries are untouched.
    free = layer(x)
    assert_close(result.output[0, [0, 1, 3]], free.output[0, [0, 1, 3]], "other rows unchanged")


def test_scaled_dot_product_attention_accepts_a_mask_that_broadcasts_over_heads():
    rng = np.random.default_rng(0)
    q, k, v = rng.normal(size=(2, 3, 4, 5)), rng.normal(size=(2, 3, 6, 5)), rng.normal(size=(2, 3, 6, 7))
    blocked = np.zeros((2, 1, 4, 6), dtype=bool)
    blocked[1, 0, :, 5] = True  # batch 1: the last key blocked for every head
    out, weights = scaled_dot_product_attention(q, k, v, attn_mask=blocked)
    assert out.shape == (2, 3, 4, 7) and weights.shape == (2, 3, 4, 6)
    assert np.all(weights[1, :, :, 5] == 0.0) and np.all(weights[0, :, :, 5] > 0.0)


# --- unbatched input -------------------------------------------------------------------


@given(cases())
def test_unbatched_input_equals_a_batch_of_one(case):
    q, k, v = case.query[0], case.key[0], case.value[0]  # (Tq, D), (Tk, D), (Tk, D)
    Tk = k.shape[0]
    padded = np.zeros(Tk, dtype=bool)
    padded[Tk - 1 :] = Tk > 1  # pad the last key when there is more than one
    single = case.layer(q, k, v, key_padding_mask=padded)
    batched = case.layer(q[None], k[None], v[None], key_padding_mask=padded[None])
    for name in ("output", "weights", "scores", "head_outputs", "q", "k", "v"):
        got, want = getattr(single, name), getattr(batched, name)[0]
        assert got.shape == want.shape, name
        assert_close(np.nan_to_num(got, neginf=-1.0), np.nan_to_num(want, neginf=-1.0), f"unbatched {name}")


# --- inputs are never changed ------------------------------------------------------------


def test_the_layer_never_changes_its_inputs_or_its_weights():
    layer = make_layer(8, 4, 2, seed=5)
    rng = np.random.default_rng(5)
    query, key, value = rng.normal(size=(2, 3, 8)), rng.normal(size=(2, 4, 8)), rng.normal(size=(2, 4, 8))
    attn_mask = np.zeros((3, 4), dtype=bool)
    attn_mask[0, 1] = True
    key_padding_mask = np.array([[0.0, 0.0, -np.inf, 0.0], [0.0, -1.0, 0.0, 0.0]])
    inputs = (query, key, value, attn_mask, key_padding_mask)
    names = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")
    before = [x.copy() for x in inputs] + [getattr(layer, n).copy() for n in names]
    result = layer(query, key, value, attn_mask=attn_mask, key_padding_mask=key_padding_mask)
    after = list(inputs) + [getattr(layer, n) for n in names]
    for old, new in zip(before, after):
        assert np.array_equal(old, new)
    # The results are fresh arrays: changing one cannot reach back into an input.
    for array in (result.output, result.q, result.k, result.v, result.head_outputs):
        for x in inputs[:3]:
            assert not np.shares_memory(array, x)


def test_the_steps_never_change_their_inputs():
    rng = np.random.default_rng(6)
    q, k, v = rng.normal(size=(2, 3, 5)), rng.normal(size=(2, 4, 5)), rng.normal(size=(2, 4, 5))
    mask = rng.random((3, 4)) < 0.3
    head_outputs, w_o, b_o = rng.normal(size=(2, 2, 3, 4)), rng.normal(size=(8, 8)), rng.normal(size=8)
    heads_off = np.array([False, True])
    arrays = (q, k, v, mask, head_outputs, w_o, b_o, heads_off)
    before = [a.copy() for a in arrays]
    scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=True)
    A.apply_mask(A.attention_scores(q, k), mask)
    output_projection(head_outputs, w_o, b_o, heads_off=heads_off)
    merge_heads(split_heads(w_o[None], 2))
    for old, new in zip(before, arrays):
        assert np.array_equal(old, new)


def test_w_o_block_is_a_copy_that_cannot_change_the_layer():
    layer = make_layer(8, 2, seed=0)
    w_o = layer.w_o.copy()
    block = layer.w_o_block(1)
    assert np.array_equal(block, w_o[4:8])
    block[:] = 0.0
    assert np.array_equal(layer.w_o, w_o)


# --- bad input: the type, and a message naming the parameter and what is valid ----------------

LAYER = make_layer(8, 2, seed=0)


def x(*shape):
    return np.ones(shape)


BAD_INPUT = [
    (
        lambda: MultiHeadAttention(64, 5),
        ValueError,
        "n_heads=5 does not divide d_model=64; valid head counts are 1, 2, 4, 8, 16, 32, 64",
    ),
    (lambda: MultiHeadAttention(64, 0), ValueError, "n_heads=0 is too small; n_heads must be at least 1"),
    (lambda: MultiHeadAttention(64, -2), ValueError, "n_heads=-2 is too small; n_heads must be at least 1"),
    (lambda: MultiHeadAttention(64, 2.5), TypeError, "n_heads must be a whole number of at least 1; got 2.5 (float)"),
    (lambda: MultiHeadAttention(64, "8"), TypeError, "n_heads must be a whole number of at least 1; got '8' (str)"),
    (lambda: MultiHeadAttention(64, True), TypeError, "n_heads must be a whole number of at least 1; got True (bool)"),
    (lambda: MultiHeadAttention(64.0, 8), TypeError, "d_model must be a whole number of at least 1; got 64.0"),
    (
        lambda: MultiHeadAttention(64, 8, n_kv_heads=3),
        ValueError,
        "n_kv_heads=3 does not divide n_heads=8; valid key/value head counts are 1, 2, 4, 8 "
        "(1 is multi-query attention, 8 is ordinary multi-head attention)",
    ),
    (lambda: MultiHeadAttention(64, 8, n_kv_heads=0), ValueError, "n_kv_heads=0 is too small; n_kv_heads must be at least 1"),
    (
        lambda: MultiHeadAttention(768, 100),
        ValueError,
        "n_heads=100 does not divide d_model=768; valid head counts are 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, ..., 384, 768; "
        "the nearest to 100 are 96 and 128",
    ),
    # rank
    (lambda: LAYER(x(8)), ValueError, "query has rank 1 (shape (8,)); expected shape (B, T, D) or (T, D)"),
    (lambda: LAYER(x(1, 1, 3, 8)), ValueError, "query has rank 4 (shape (1, 1, 3, 8)); expected shape (B, T, D) or (T, D)"),
    (lambda: LAYER(x(2, 3, 8), x(4, 8)), ValueError, "key has rank 2 but query has rank 3; use (B, T, D) for all three or (T, D) for all three"),
    # batch, d_model, Tk
    (lambda: LAYER(x(2, 3, 8), x(3, 4, 8)), ValueError, "batch sizes differ: query 2, key 3, value 3; they must be equal"),
    (lambda: LAYER(x(2, 3, 8), x(2, 4, 6)), ValueError, "key has d_model=6 (shape (2, 4, 6)); this layer expects d_model=8"),
    (lambda: LAYER(x(2, 3, 8), x(2, 4, 8), x(2, 4, 7)), ValueError, "value has d_model=7 (shape (2, 4, 7)); this layer expects d_model=8"),
    (lambda: LAYER(x(3, 6)), ValueError, "query has d_model=6 (shape (3, 6)); this layer expects d_model=8"),
    (
        lambda: LAYER(x(2, 3, 8), x(2, 4, 8), x(2, 5, 8)),
        ValueError,
        "key and value must have the same number of tokens Tk; got 4 and 5",
    ),
    # masks
    (
        lambda: LAYER(x(2, 3, 8), x(2, 4, 8), attn_mask=np.zeros((3, 3), dtype=bool)),
        ValueError,
        "attn_mask has shape (3, 3); valid shapes are (Tq, Tk) = (3, 4) or (B*H, Tq, Tk) = (4, 3, 4)",
    ),
    (
        lambda: LAYER(x(2, 3, 8), attn_mask=np.zeros((2, 3, 3), dtype=bool)),
        ValueError,
        "attn_mask has shape (2, 3, 3); valid shapes are (Tq, Tk) = (3, 3) or (B*H, Tq, Tk) = (4, 3, 3)",
    ),
    (
        lambda: LAYER(x(2, 3, 8), attn_mask=np.zeros((3, 3), dtype=np.int64)),
        TypeError,
        "attn_mask has dtype int64; use bool (True = blocked) or float (added to the scores, -inf = blocked)",
    ),
    (
        lambda: LAYER(x(2, 3, 8), key_padding_mask=np.zeros((2, 3), dtype=np.int32)),
        TypeError,
        "key_padding_mask has dtype int32; use bool (True = blocked) or float",
    ),
    (
        lambda: LAYER(x(2, 3, 8), x(2, 4, 8), key_padding_mask=np.zeros((2, 3), dtype=bool)),
        ValueError,
        "key_padding_mask has shape (2, 3); the valid shape is (B, Tk) = (2, 4) (or (Tk,) for unbatched input)",
    ),
    (
        lambda: LAYER(x(2, 3, 8), key_padding_mask=np.zeros(3, dtype=bool)),
        ValueError,
        "key_padding_mask has shape (3,); the valid shape is (B, Tk) = (2, 3)",
    ),
    (
        lambda: LAYER(x(3, 8), attn_mask=np.array([[np.nan, 0, 0]] * 3)),
        ValueError,
        "attn_mask contains NaN; a float mask holds finite numbers or -inf (blocked)",
    ),
    (
        lambda: LAYER(x(3, 8), attn_mask=np.array([[np.inf, 0, 0]] * 3)),
        ValueError,
        "attn_mask contains +inf; a float mask holds finite numbers or -inf (blocked)",
    ),
    # empty, NaN, inf, not numbers
    (lambda: LAYER(x(0, 8)), ValueError, "query is empty (shape (0, 8)); it needs at least one token and one feature"),
    (lambda: LAYER(x(2, 0, 8)), ValueError, "query is empty (shape (2, 0, 8))"),
    (lambda: LAYER(x(3, 8), x(0, 8)), ValueError, "key is empty (shape (0, 8))"),
    (lambda: LAYER(np.full((3, 8), np.nan)), ValueError, "query contains NaN; every entry must be a finite number"),
    (lambda: LAYER(x(3, 8), x(3, 8), np.full((3, 8), np.inf)), ValueError, "value contains inf; every entry must be a finite number"),
    (lambda: LAYER(np.ones((3, 8), dtype=bool)), TypeError, "query must hold real numbers (a float array) with shape (B, T, D) or (T, D); got dtype bool"),
    (lambda: LAYER([["a"] * 8] * 3), TypeError, "query must hold real numbers"),
    # the steps
    (
        lambda: split_heads(x(1, 2, 64), 5),
        ValueError,
        "n_heads=5 does not divide d_model=64; valid head counts are 1, 2, 4, 8, 16, 32, 64",
    ),
    (lambda: split_heads(x(1, 2, 64), 0), ValueError, "n_heads=0 is too small; n_heads must be at least 1"),
    (lambda: split_heads(x(1, 2, 64), 2.0), TypeError, "n_heads must be a whole number of at least 1; got 2.0"),
    (lambda: split_heads(x(2, 64), 2), ValueError, "x has rank 2 (shape (2, 64)); expected shape (B, T, D)"),
    (lambda: merge_heads(x(2, 3, 4)), ValueError, "x has rank 3 (shape (2, 3, 4)); expected shape (B, H, T, Dh)"),
    (
        lambda: scaled_dot_product_attention(x(3, 4), x(5, 2), x(5, 4)),
        ValueError,
        "q and k must have the same last dimension Dh; got q (3, 4) and k (5, 2)",
    ),
    (
        lambda: scaled_dot_product_attention(x(3, 4), x(5, 4), x(6, 4)),
        ValueError,
        "k and v must have the same number of keys Tk; got k (5, 4) and v (6, 4)",
    ),
    (
        lambda: scaled_dot_product_attention(x(3, 4), x(5, 4), x(5, 4), attn_mask=np.zeros((2, 3, 5), dtype=bool)),
        ValueError,
        "attn_mask has shape (2, 3, 5); it must broadcast to the scores' shape (3, 5), for example (3, 5)",
    ),
    (
        lambda: scaled_dot_product_attention(x(3, 4), x(5, 4), x(5, 4), attn_mask=np.zeros((3, 4), dtype=bool)),
        ValueError,
        "attn_mask has shape (3, 4); it must broadcast to the scores' shape (3, 5)",
    ),
    (lambda: scaled_dot_product_attention(x(4), x(5, 4), x(5, 4)), ValueError, "q has rank 1 (shape (4,)); expected shape (..., Tq, Dh)"),
    (
        lambda: output_projection(x(1, 2, 3, 4), x(6, 8)),
        ValueError,
        "w_o has shape (6, 8); it must be (H*Dh, D) with H*Dh = 2*4 = 8 rows",
    ),
    (
        lambda: output_projection(x(1, 2, 3, 4), x(8, 8), heads_off=[True, False, True]),
        ValueError,
        "heads_off as a bool array must have shape (2,), one entry per head; got shape (3,)",
    ),
    (
        lambda: output_projection(x(1, 2, 3, 4), x(8, 8), heads_off=[2]),
        ValueError,
        "heads_off has head 2; valid heads are 0 to 1 (counted from 0)",
    ),
    (
        lambda: output_projection(x(1, 3, 3, 4), x(12, 8), heads_off=[1, 0, 1]),
        ValueError,
        "heads_off lists 1 twice",
    ),
    (
        lambda: output_projection(x(1, 2, 3, 4), x(8, 8), heads_off=np.array([1.0, 0.0])),
        TypeError,
        "heads_off must be a bool array of shape (2,) (True = off) or head indices counted from 0",
    ),
    (lambda: output_projection(x(2, 3, 4), x(8, 8)), ValueError, "head_outputs must have shape (B, H, T, Dh); got rank 3"),
    (lambda: LAYER.w_o_block(2), ValueError, "head=2 is out of range; valid heads are 0 to 1"),
    (lambda: LAYER.w_o_block(-1), ValueError, "head=-1 is out of range; valid heads are 0 to 1"),
    (lambda: LAYER.w_o_block(1.0), TypeError, "head must be a whole number from 0 to 1; got 1.0 (float)"),
    (lambda: causal_mask(0), ValueError, "T=0 is too small; T must be at least 1"),
]


@pytest.mark.parametrize("make, error, message", [pytest.param(*case, id=case[2][:70]) for case in BAD_INPUT])
def test_bad_input_raises_an_error_naming_the_parameter_and_the_valid_choices(make, error, message):
    with pytest.raises(error, match=re.escape(message)) as info:
        make()
    assert type(info.value) is error


def test_split_heads_accepts_numpy_integers_as_n_heads():
    assert split_heads(x(1, 2, 8), np.int64(4)).shape == (1, 4, 2, 2)


# --- a value worked out by hand ------------------------------------------------------------


def identity_layer(n_heads: int) -> MultiHeadAttention:
    """D = 2, identity projections, zero biases: q = k = v = x and output = concat."""
    layer = MultiHeadAttention(2, n_heads, seed=0)
    layer.w_q = layer.w_k = layer.w_v = layer.w_o = np.eye(2)
    layer.b_q = layer.b_k = layer.b_v = layer.b_o = np.zeros(2)
    return layer


def test_one_head_on_two_tokens_matches_arithmetic_done_by_hand():
    # x = [[1, 0], [0, 1]], so q = k = v = x and q k^T = I.
    # scores = I / sqrt(2): [[0.70711, 0], [0, 0.70711]].
    # Row 0: e^0.70711 = 2.02811; weights = [2.02811 / 3.02811, 1 / 3.02811] = [0.66976, 0.33024].
    # Output row 0 = 0.66976 * v0 + 0.33024 * v1 = [0.66976, 0.33024]; row 1 is its mirror.
    result = identity_layer(1)(np.eye(2))
    assert_close(result.scores[0], [[0.7071068, 0.0], [0.0, 0.7071068]], "hand: scores", tol=1e-6)
    assert_close(result.weights[0], [[0.6697615, 0.3302385], [0.3302385, 0.6697615]], "hand: weights", tol=1e-6)
    assert_close(result.output, [[0.6697615, 0.3302385], [0.3302385, 0.6697615]], "hand: output", tol=1e-6)


def test_one_head_with_a_causal_mask_matches_arithmetic_done_by_hand():
    # Token 0 sees only itself: weights [1, 0], output = v0 = [1, 0].
    # Token 1 sees both, as in the unmasked case: [0.33024, 0.66976].
    result = identity_layer(1)(np.eye(2), is_causal=True)
    assert_close(result.weights[0], [[1.0, 0.0], [0.3302385, 0.6697615]], "hand: causal weights", tol=1e-6)
    assert_close(result.output, [[1.0, 0.0], [0.3302385, 0.6697615]], "hand: causal output", tol=1e-6)


def test_two_heads_on_two_tokens_match_arithmetic_done_by_hand():
    # Dh = 1, so head 0 sees feature 0 only and head 1 sees feature 1 only; sqrt(1) = 1.
    # Head 0: q = k = v = [1, 0] (one number per token); scores [[1, 0], [0, 0]].
    #   row 0: softmax([1, 0]) = [e/(e+1), 1/(e+1)] = [0.73106, 0.26894]; output 0.73106
    #   row 1: softmax([0, 0]) = [0.5, 0.5];                               output 0.5
    # Head 1 is the mirror image. Concatenated, through the identity W_O:
    #   output = [[0.73106, 0.5], [0.5, 0.73106]].
    result = identity_layer(2)(np.eye(2))
    assert_close(result.weights[0], [[0.7310586, 0.2689414], [0.5, 0.5]], "hand: head 0 weights", tol=1e-6)
    assert_close(result.weights[1], [[0.5, 0.5], [0.2689414, 0.7310586]], "hand: head 1 weights", tol=1e-6)
    assert_close(result.head_outputs[:, :, 0], [[0.7310586, 0.5], [0.5, 0.7310586]], "hand: head outputs", tol=1e-6)
    assert_close(result.output, [[0.7310586, 0.5], [0.5, 0.7310586]], "hand: two-head output", tol=1e-6)


# --- from_parameters: the one constructor every loader uses -------------------------


def test_from_parameters_reproduces_a_layer_and_copies_its_arrays():
    layer = MultiHeadAttention(8, 2, n_kv_heads=1, seed=3)
    names = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")
    rng = np.random.default_rng(0)
    for name in names:
        setattr(layer, name, rng.normal(size=getattr(layer, name).shape))
    given = {name: getattr(layer, name) for name in names}
    rebuilt = MultiHeadAttention.from_parameters(**given, n_heads=2, n_kv_heads=1)
    x = rng.normal(size=(2, 5, 8))
    np.testing.assert_array_equal(rebuilt(x).output, layer(x).output)
    assert (rebuilt.d_model, rebuilt.n_heads, rebuilt.n_kv_heads, rebuilt.d_head, rebuilt.bias) == (8, 2, 1, 4, True)
    given["w_q"][0, 0] += 1.0  # changing the caller's array later must not change the layer
    assert rebuilt.w_q[0, 0] != given["w_q"][0, 0]


def test_from_parameters_without_biases_has_none():
    w = np.eye(4)
    layer = MultiHeadAttention.from_parameters(w_q=w, w_k=w, w_v=w, w_o=w, n_heads=2)
    assert layer.bias is False and layer.b_q is None and layer.n_parameters == 4 * 16


@pytest.mark.parametrize(
    "change, message",
    [
        ({"w_k": np.zeros((4, 3))}, "w_k has shape (4, 3); this layer needs (4, 4)"),
        ({"b_q": np.zeros(4)}, "give all four biases or none; b_k, b_v, b_o missing"),
        ({"w_o": np.full((4, 4), np.nan)}, "w_o holds NaN or infinite values"),
        ({"w_v": "weights"}, "w_v must be an array of numbers; got str"),
        ({"n_heads": 3}, "n_heads=3 does not divide d_model=4"),
    ],
)
def test_from_parameters_rejects_bad_weights_by_name(change, message):
    args = {"w_q": np.eye(4), "w_k": np.eye(4), "w_v": np.eye(4), "w_o": np.eye(4), "n_heads": 2} | change
    with pytest.raises((TypeError, ValueError)) as info:
        MultiHeadAttention.from_parameters(**args)
    assert message in str(info.value)


# --- the NumPy reference stands on its own: nothing of torch, not even lazily ------------


def test_the_numpy_reference_runs_where_torch_cannot_be_imported():
    # sys.modules["torch"] = None makes every `import torch` raise ImportError in that process.
    script = (
        "import sys; sys.modules['torch'] = None\n"
        "import numpy as np\n"
        "from mha_core.attention import MultiHeadAttention\n"
        "layer = MultiHeadAttention(8, 2, seed=0)\n"
        "again = MultiHeadAttention.from_parameters(**{n: getattr(layer, n) for n in "
        "('w_q', 'w_k', 'w_v', 'w_o', 'b_q', 'b_k', 'b_v', 'b_o')}, n_heads=2)\n"
        "x = np.random.default_rng(0).normal(size=(5, 8))\n"
        "assert np.array_equal(again(x).output, layer(x).output)\n"
        "loaded = sorted(m for m in sys.modules if m.startswith('mha_core.'))\n"
        "print(loaded, sys.modules['torch'])\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    loaded, torch_entry = run.stdout.strip().rsplit(" ", 1)
    assert torch_entry == "None" and "'mha_core.attention'" in loaded, run.stdout
    assert "torch" not in loaded and "kv_cache" not in loaded, f"torch-side modules were loaded: {loaded}"


def test_attention_source_imports_nothing_of_torch():
    source = Path(A.__file__).read_text(encoding="utf-8")
    imported = []
    for node in ast.walk(ast.parse(source)):  # every import, inside functions too
        if isinstance(node, ast.Import):
            imported += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            imported += [f"{'.' * node.level}{node.module or ''}:{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in (
            "__import__", "import_module"
        ):
            imported.append(ast.unparse(node))
    assert imported, "the scan found no imports at all: it is not reading attention.py"
    torch_side = [name for name in imported if "torch" in name or "kv_cache" in name]
    assert not torch_side, f"attention.py imports from the torch side: {torch_side}"
    assert sorted(imported) == [".:_validate", "__future__:annotations", "dataclasses:dataclass", "numpy"]


# --- hostile input: every bad value named, never a silent wrong answer ------------------


@pytest.mark.parametrize(
    "make, error, message",
    [
        (lambda: split_heads("abc", 1), TypeError, "x must hold real numbers (a float array) with shape (B, T, D); got dtype <U3"),
        (lambda: split_heads(np.array([[[object()]]]), 1), TypeError, "x must hold real numbers"),
        (lambda: split_heads(np.ones((1, 2, 4), dtype=complex), 2), TypeError, "x must hold real numbers (a float array) with shape (B, T, D); got dtype complex128"),
        (lambda: split_heads(np.full((1, 2, 4), np.nan), 2), ValueError, "x contains NaN; every entry must be a finite number"),
        (lambda: merge_heads("abcd"), TypeError, "x must hold real numbers (a float array) with shape (B, H, T, Dh); got dtype <U4"),
        (lambda: merge_heads(np.ones((1, 2, 3, 4), dtype=complex)), TypeError, "got dtype complex128"),
        (lambda: merge_heads(np.full((1, 2, 3, 4), np.inf)), ValueError, "x contains inf; every entry must be a finite number"),
        (lambda: softmax(np.array([1 + 2j, 3])), TypeError, "softmax got x of dtype complex128; scores must be real numbers"),
        (lambda: softmax(np.zeros((2, 0))), ValueError, "softmax got an empty x (shape (2, 0)); there is nothing to normalise along axis -1"),
        (lambda: softmax(np.array(["a", "b"])), TypeError, "softmax got x of dtype <U1; scores must be real numbers"),
        (lambda: MultiHeadAttention(8, 2)(np.ones((2, 8)), is_causal="no"), TypeError, "is_causal must be True or False; got 'no' (str)"),
        (lambda: scaled_dot_product_attention(np.ones((2, 4)), np.ones((2, 4)), np.ones((2, 4)), is_causal=1), TypeError, "is_causal must be True or False; got 1 (int)"),
        (lambda: MultiHeadAttention(8, 2, seed="zero"), TypeError, "seed must be a whole number from 0 to 4,294,967,295 (2**32 - 1), a numpy Generator, or None; got 'zero' (str)"),
        (lambda: MultiHeadAttention(8, 2, seed=-1), ValueError, "seed=-1 is negative; seed must be a whole number from 0 to 4,294,967,295 (2**32 - 1), a numpy Generator, or None"),
        (lambda: MultiHeadAttention(8, 2, seed=1.5), TypeError, "seed must be a whole number from 0 to 4,294,967,295"),
    ],
    ids=lambda v: v if isinstance(v, str) else None,
)
def test_hostile_input_raises_an_error_naming_the_parameter(make, error, message):
    with pytest.raises(error) as info:
        make()
    assert type(info.value) is error
    assert message in str(info.value)


def test_split_and_merge_heads_still_accept_integer_arrays():
    x = np.arange(16).reshape(1, 2, 8)
    assert np.array_equal(merge_heads(split_heads(x, 4)), x)


def test_numpy_bool_is_a_valid_is_causal():
    layer = MultiHeadAttention(8, 2, seed=0)
    x = np.random.default_rng(0).normal(size=(3, 8))
    np.testing.assert_array_equal(layer(x, is_causal=np.bool_(True)).output, layer(x, is_causal=True).output)


def test_seed_accepts_numpy_integers_and_generators():
    a = MultiHeadAttention(8, 2, seed=np.int64(3))
    b = MultiHeadAttention(8, 2, seed=np.random.default_rng(3))
    np.testing.assert_array_equal(a.w_q, b.w_q)


# --- scores that overflow are not blocked scores ------------------------------------------------


def test_overflowing_scores_raise_instead_of_looking_blocked():
    # q.k = -4e400 overflows float64 to -inf, which the blocking rule would read as
    # "every key blocked" and answer with zeros; the right answer (equal scores) is
    # the mean of v. The reference refuses: its scores cannot be represented.
    q, k = np.full((1, 4), -1e200), np.full((3, 4), 1e200)
    v = np.arange(12.0).reshape(3, 4)
    with pytest.raises(ValueError, match=r"attention scores overflow float64: q and k are too large \(largest \|q\| entry 1e\+200, \|k\| entry 1e\+200;"):
        scaled_dot_product_attention(q, k, v)
    layer = MultiHeadAttention(4, 1, seed=0)
    layer.w_q = layer.w_k = np.eye(4) * 1e200
    with pytest.raises(ValueError, match="attention scores overflow float64"):
        layer(np.ones((2, 4)))


def test_large_but_representable_scores_still_give_the_right_softmax():
    # 1e150 * 1e150 = 1e300 per product, under float64's 1.8e308: no refusal, the exact hard maximum.
    q = np.array([[1e150, 0.0]])
    k = np.array([[1e150, 0.0], [-1e150, 0.0], [1e150, 0.0]])
    v = np.array([[1.0], [5.0], [3.0]])
    output, weights = scaled_dot_product_attention(q, k, v)
    np.testing.assert_array_equal(weights, [[0.5, 0.0, 0.5]])
    np.testing.assert_array_equal(output, [[2.0]])


# --- sizes: divisors fast, absurd layers refused before allocating ---------------------------------


@given(st.integers(1, 5000))
def test_divisors_are_every_divisor_in_order(n):
    assert divisors(n) == [d for d in range(1, n + 1) if n % d == 0]


def test_divisors_of_a_large_number_take_square_root_steps():
    # 10**12 + 1 = 73 * 137 * 99990001: a linear search would take hours.
    assert divisors(10**12 + 1) == [1, 73, 137, 10001, 99990001, 7299270073, 13698630137, 10**12 + 1]


def test_a_layer_no_machine_could_hold_is_refused_before_allocating():
    with pytest.raises(ValueError) as info:
        MultiHeadAttention(10**6, 8)
    message = str(info.value)
    assert message.startswith("d_model=1000000 ")
    assert "would need 32,000,032,000,000 bytes (32.0 TB)" in message
    assert "refuses more than 8,589,934,592 bytes (8 GiB)" in message


def test_the_largest_published_layers_are_not_refused(monkeypatch):
    from mha_core import _validate

    # Not refused by the 8 GiB cap; on a machine with room for them (this test's own limit).
    monkeypatch.setattr(_validate, "memory_limit", lambda: 64 * 2**30)
    _validate.layer_fits(12288, 96, 96, True, 8)  # GPT-3 175B's attention, float64: 4.8 GB
    _validate.layer_fits(16384, 128, 8, True, 8)  # Llama-3-405B's, float64: 4.6 GB
    with pytest.raises(ValueError, match="d_model=32768"):
        _validate.layer_fits(32768, 128, 128, True, 8)  # 34 GB
