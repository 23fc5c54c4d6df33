"""Tests for mha_core.exercises: stubs, checks that name mistakes, hidden solutions.

Each catalogued mistake is written here as a small wrong function, the way a learner
might write it, and the check must name it.
"""

from __future__ import annotations

import inspect
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_core import attention, exercises, solutions

SOLUTIONS = {
    "scaled_dot_product_attention": solutions.my_attention,
    "split_heads": solutions.my_split_heads,
    "merge_heads": solutions.my_merge_heads,
    "output_projection": solutions.my_output_projection,
}


def learner_softmax(scores, axis=-1):
    """A softmax as a learner writes it (NaN for a fully blocked row)."""
    e = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def stub_function(name):
    namespace = {}
    exec(compile(exercises.stub_source(name), f"<stub {name}>", "exec"), namespace)
    return namespace[SOLUTIONS[name].__name__]


# --- attention: learner-style wrong functions, one per catalogued mistake ---------------


def att_sqrt_d_model(q, k, v, attn_mask=None):
    d_model = q.shape[-3] * q.shape[-1]  # H * Dh
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(d_model)
    if attn_mask is not None:
        scores = np.where(attn_mask, -np.inf, scores)
    weights = learner_softmax(scores)
    return weights @ v, weights


def att_not_scaled(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2)
    if attn_mask is not None:
        scores = np.where(attn_mask, -np.inf, scores)
    weights = learner_softmax(scores)
    return weights @ v, weights


def att_divided_by_d_head(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / q.shape[-1]
    if attn_mask is not None:
        scores = np.where(attn_mask, -np.inf, scores)
    weights = learner_softmax(scores)
    return weights @ v, weights


def att_hard_coded_scale(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(8)  # the notebook's d_model, typed in
    if attn_mask is not None:
        scores = np.where(attn_mask, -np.inf, scores)
    weights = learner_softmax(scores)
    return weights @ v, weights


def att_scores_transposed(q, k, v, attn_mask=None):
    scores = k @ np.swapaxes(q, -1, -2) / np.sqrt(q.shape[-1])
    if attn_mask is not None:
        scores = np.where(attn_mask, -np.inf, scores)
    weights = learner_softmax(scores)
    return weights @ v, weights


def att_returns_scores(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    weights = learner_softmax(scores)
    return weights @ v, scores


def att_no_softmax(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    return scores @ v, scores


def att_softmax_over_queries(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if attn_mask is not None:
        scores = np.where(attn_mask, -np.inf, scores)
    weights = learner_softmax(scores, axis=-2)
    return weights @ v, weights


def att_softmax_over_heads(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    weights = learner_softmax(scores, axis=1)
    return weights @ v, weights


def att_not_normalised(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    weights = np.exp(scores)
    return weights @ v, weights


def att_weights_transposed(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    weights = learner_softmax(scores)
    return np.swapaxes(weights, -1, -2) @ v, weights


def att_output_is_v(q, k, v, attn_mask=None):
    weights = learner_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    return v, weights


def att_output_is_weights(q, k, v, attn_mask=None):
    weights = learner_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    return weights, weights


def att_mixes_keys(q, k, v, attn_mask=None):
    weights = learner_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    return weights @ k, weights


def att_returns_weights_first(q, k, v, attn_mask=None):
    output, weights = solutions.my_attention(q, k, v, attn_mask)
    return weights, output


def att_mask_ignored(q, k, v, attn_mask=None):
    weights = learner_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    return weights @ v, weights


def att_mask_inverted(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if attn_mask is not None:
        scores = np.where(attn_mask, scores, -np.inf)  # True treated as allowed
    weights = learner_softmax(scores)
    return weights @ v, weights


def att_mask_after_softmax(q, k, v, attn_mask=None):
    weights = learner_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]))
    if attn_mask is not None:
        weights = weights * ~attn_mask
    return weights @ v, weights


def att_returns_output_only(q, k, v, attn_mask=None):
    return solutions.my_attention(q, k, v, attn_mask)[0]


def att_forgot_return(q, k, v, attn_mask=None):
    solutions.my_attention(q, k, v, attn_mask)


ATTENTION_MISTAKES = [
    (att_sqrt_d_model, "scaled_by_sqrt_d_model", ["too small", "sqrt(4)", "sqrt(d_model)", "sqrt(d_head)"]),
    (att_not_scaled, "not_scaled", ["too large", "sqrt(3)", "forget", "sqrt(d_head)"]),
    (att_divided_by_d_head, "divided_by_d_head", ["too small", "sqrt(3)", "divide by d_head instead of sqrt(d_head)"]),
    (att_hard_coded_scale, "wrong_scale", ["divided by 2.828", "sqrt(8)", "q.shape[-1]"]),
    (att_scores_transposed, "scores_transposed", ["transposed", "q @ k^T"]),
    (att_returns_scores, "returned_scores", ["weights are the scores", "softmax"]),
    (att_no_softmax, "returned_scores", ["weights are the scores", "softmax"]),
    (att_softmax_over_queries, "softmax_wrong_axis", ["wrong axis", "axis 2", "queries", "axis=-1"]),
    (att_softmax_over_heads, "softmax_wrong_axis", ["wrong axis", "axis 1", "heads", "axis=-1"]),
    (att_not_normalised, "weights_not_normalised", ["not normalised", "sum to 1", "row sums run from"]),
    (att_weights_transposed, "weights_transposed_in_mix", ["transposed", "weights @ v"]),
    (att_output_is_v, "v_not_mixed", ["output is v itself", "weights @ v"]),
    (att_output_is_weights, "v_not_mixed", ["output is the weights", "weights @ v"]),
    (att_mixes_keys, "v_not_mixed", ["mixes the keys", "weights @ v"]),
    (att_returns_weights_first, "outputs_swapped", ["(weights, output)", "(output, weights)"]),
    (att_mask_ignored, "mask_ignored", ["ignores attn_mask", "-inf"]),
    (att_mask_inverted, "mask_inverted", ["inverted", "True means blocked"]),
    (att_mask_after_softmax, "mask_after_softmax", ["after the softmax", "sum to 1", "before the softmax"]),
    (att_returns_output_only, "wrong_return", ["returned one value", "return output, weights"]),
    (att_forgot_return, "no_return", ["returned None", "return output, weights"]),
]


# --- split_heads, merge_heads, output_projection: wrong functions --------------------------


def split_no_transpose(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, n_heads, T, D // n_heads)


def split_reshape_only(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, n_heads, D // n_heads)


def split_swapped_order(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, D // n_heads, n_heads).transpose(0, 3, 1, 2)


def split_swapped_shape(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, D // n_heads, n_heads).transpose(0, 2, 1, 3)


def split_wrong_transpose(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, n_heads, D // n_heads).transpose(0, 2, 3, 1)


SPLIT_MISTAKES = [
    (split_no_transpose, "reshape_without_transpose", ["without a transpose", "heads and tokens", "transpose(0, 2, 1, 3)"]),
    (split_reshape_only, "reshape_without_transpose", ["(B, T, H, Dh) = (2, 5, 4, 3)", "transpose(0, 2, 1, 3)"]),
    (split_swapped_order, "split_order_swapped", ["every 4th feature", "(Dh, H) instead of (H, Dh)"]),
    (split_swapped_shape, "split_order_swapped", ["(B, Dh, T, H) = (2, 3, 5, 4)", "H and Dh swapped"]),
    (split_wrong_transpose, "wrong_transpose", ["(B, H, Dh, T)", "transpose(0, 2, 1, 3)"]),
]


def merge_no_transpose(x):
    B, H, T, Dh = x.shape
    return x.reshape(B, T, H * Dh)


def merge_interleaved(x):
    B, H, T, Dh = x.shape
    return x.transpose(0, 2, 3, 1).reshape(B, T, H * Dh)


def merge_no_reshape(x):
    return x.transpose(0, 2, 1, 3)


def merge_summed(x):
    return x.sum(axis=1)


MERGE_MISTAKES = [
    (merge_no_transpose, "reshape_without_transpose", ["without a transpose", "heads and tokens", "transpose(0, 2, 1, 3)"]),
    (merge_interleaved, "heads_interleaved", ["interleaved", "(B, T, Dh, H)"]),
    (merge_no_reshape, "missing_reshape", ["(B, T, H, Dh) = (2, 5, 4, 3)", "reshape to (B, T, H*Dh)"]),
    (merge_summed, "heads_summed", ["summed the heads", "(B, T, Dh) = (2, 5, 3)", "concatenates"]),
]


def concat_heads(head_outputs):
    B, H, T, Dh = head_outputs.shape
    return head_outputs.transpose(0, 2, 1, 3).reshape(B, T, H * Dh)


def proj_missing(head_outputs, w_o, b_o):
    return concat_heads(head_outputs)


def proj_missing_with_bias(head_outputs, w_o, b_o):
    return concat_heads(head_outputs) + b_o


def proj_no_bias(head_outputs, w_o, b_o):
    return concat_heads(head_outputs) @ w_o


def proj_bias_per_head(head_outputs, w_o, b_o):
    Dh = head_outputs.shape[-1]
    return sum(head_outputs[:, h] @ w_o[h * Dh : (h + 1) * Dh] + b_o for h in range(head_outputs.shape[1]))


def proj_w_o_transposed(head_outputs, w_o, b_o):
    return concat_heads(head_outputs) @ w_o.T + b_o


def proj_heads_reversed(head_outputs, w_o, b_o):
    return concat_heads(head_outputs[:, ::-1]) @ w_o + b_o


def proj_heads_summed(head_outputs, w_o, b_o):
    Dh = head_outputs.shape[-1]
    return head_outputs.sum(axis=1) @ w_o[:Dh] + b_o


def proj_heads_summed_only(head_outputs, w_o, b_o):
    return head_outputs.sum(axis=1)


def proj_merge_without_transpose(head_outputs, w_o, b_o):
    B, H, T, Dh = head_outputs.shape
    return head_outputs.reshape(B, T, H * Dh) @ w_o + b_o


PROJECTION_MISTAKES = [
    (proj_missing, "projection_missing", ["concatenation", "projection is missing", "concat @ w_o + b_o"]),
    (proj_missing_with_bias, "projection_missing", ["concatenation of the heads plus b_o", "multiply by w_o"]),
    (proj_no_bias, "bias_missing", ["lacks the bias", "b_o"]),
    (proj_bias_per_head, "bias_added_per_head", ["once per head", "4 times"]),
    (proj_w_o_transposed, "w_o_transposed", ["w_o transposed", "(H*Dh, D)"]),
    (proj_heads_reversed, "heads_reversed", ["reverse order", "block of w_o"]),
    (proj_heads_summed, "heads_summed", ["summed the head outputs", "concatenat", "same block of w_o"]),
    (proj_heads_summed_only, "heads_summed", ["summed the head outputs", "(B, T, Dh) = (2, 5, 3)"]),
    (proj_merge_without_transpose, "merge_without_transpose", ["without a transpose", "transpose(0, 2, 1, 3)"]),
]

ALL_MISTAKES = [
    ("scaled_dot_product_attention", fn, mistake, words) for fn, mistake, words in ATTENTION_MISTAKES
] + [("split_heads", fn, mistake, words) for fn, mistake, words in SPLIT_MISTAKES] + [
    ("merge_heads", fn, mistake, words) for fn, mistake, words in MERGE_MISTAKES
] + [("output_projection", fn, mistake, words) for fn, mistake, words in PROJECTION_MISTAKES]


# --- passing ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", exercises.EXERCISES)
def test_solution_passes_and_check_returns_it(name, capsys):
    fn = SOLUTIONS[name]
    result = exercises.evaluate(name, fn)
    assert result.status == "passed", result.message
    assert result.mistake is None and result.hint is None
    assert result.n_shapes == len(exercises._EXERCISES[name].cases()) >= 5
    assert exercises.check(name, fn) is fn
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"{name}: passed on {result.n_shapes} shapes. From here on the notebook uses your function."]


@pytest.mark.parametrize("name", exercises.EXERCISES)
def test_reference_passes_its_own_check(name):
    assert exercises.evaluate(name, exercises.reference(name)).status == "passed"


def test_exercise_names_are_the_four_of_the_course():
    assert exercises.EXERCISES == ("scaled_dot_product_attention", "split_heads", "merge_heads", "output_projection")


def test_attention_in_float32_still_passes():
    def my_attention(q, k, v, attn_mask=None):
        out, weights = solutions.my_attention(q.astype(np.float32), k.astype(np.float32), v.astype(np.float32), attn_mask)
        return out.astype(np.float32), weights.astype(np.float32)

    assert exercises.evaluate("scaled_dot_product_attention", my_attention).status == "passed"


def test_output_projection_as_a_sum_of_per_head_blocks_passes():
    def my_output_projection(head_outputs, w_o, b_o):
        Dh = head_outputs.shape[-1]
        blocks = [head_outputs[:, h] @ w_o[h * Dh : (h + 1) * Dh] for h in range(head_outputs.shape[1])]
        return sum(blocks) + b_o

    assert exercises.evaluate("output_projection", my_output_projection).status == "passed"


def test_learner_softmax_passes_with_a_note_about_fully_blocked_rows():
    def my_attention(q, k, v, attn_mask=None):
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if attn_mask is not None:
            scores = np.where(attn_mask, -np.inf, scores)
        weights = learner_softmax(scores)
        return weights @ v, weights

    result = exercises.evaluate("scaled_dot_product_attention", my_attention)
    assert result.status == "passed"
    assert "every key of a query is blocked" in result.hint and "NaN" in result.hint


# --- solution equals the reference ---------------------------------------------------------


@given(
    lead=st.lists(st.integers(1, 3), min_size=0, max_size=2),
    Tq=st.integers(1, 6),
    Tk=st.integers(1, 6),
    Dh=st.integers(1, 5),
    with_mask=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_attention_solution_equals_reference(lead, Tq, Tk, Dh, with_mask, seed):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(*lead, Tq, Dh))
    k = rng.normal(size=(*lead, Tk, Dh))
    v = rng.normal(size=(*lead, Tk, Dh))
    mask = rng.random((Tq, Tk)) < 0.5 if with_mask else None  # may block whole rows
    got = solutions.my_attention(q, k, v, mask)
    want = attention.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    np.testing.assert_allclose(got[0], want[0], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(got[1], want[1], rtol=1e-12, atol=1e-12)


@given(
    B=st.integers(1, 3),
    T=st.integers(1, 5),
    H=st.integers(1, 5),
    Dh=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_head_solutions_equal_reference(B, T, H, Dh, seed):
    rng = np.random.default_rng(seed)
    D = H * Dh
    x = rng.normal(size=(B, T, D))
    heads = rng.normal(size=(B, H, T, Dh))
    w_o, b_o = rng.normal(size=(D, D)), rng.normal(size=(D,))
    np.testing.assert_array_equal(solutions.my_split_heads(x, H), attention.split_heads(x, H))
    np.testing.assert_array_equal(solutions.my_merge_heads(heads), attention.merge_heads(heads))
    np.testing.assert_allclose(
        solutions.my_output_projection(heads, w_o, b_o), attention.output_projection(heads, w_o, b_o), rtol=1e-12, atol=1e-12
    )


# --- the untouched stub ------------------------------------------------------------------------


@pytest.mark.parametrize("name", exercises.EXERCISES)
def test_untouched_stub_is_not_attempted_and_check_returns_reference(name, capsys):
    stub = stub_function(name)
    result = exercises.evaluate(name, stub)
    assert result.status == "not_attempted"
    assert result.message == "not attempted yet: the notebook carries on with the reference implementation"
    assert exercises.check(name, stub) is exercises.reference(name)
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"{name}: not attempted yet: the notebook carries on with the reference implementation"]


@pytest.mark.parametrize("name", exercises.EXERCISES)
def test_stub_compiles_with_the_solutions_name_signature_and_docstring(name):
    solution = SOLUTIONS[name]
    stub = stub_function(name)
    assert stub.__name__ == solution.__name__
    assert inspect.signature(stub) == inspect.signature(solution)
    assert stub.__doc__ == solution.__doc__
    with pytest.raises(NotImplementedError, match="your turn"):
        stub(*[None] * len(inspect.signature(stub).parameters))


@pytest.mark.parametrize("name", exercises.EXERCISES)
def test_stub_is_the_solution_with_its_code_lines_replaced(name):
    stub_lines = exercises.stub_source(name).splitlines()
    solution_lines = exercises.solution_source(name).splitlines()
    start = solution_lines.index("    " + exercises.START_MARKER)
    end = solution_lines.index("    " + exercises.END_MARKER)
    hints = [line for line in solution_lines[start + 1 : end] if line.strip().startswith("#")]
    code = [line for line in solution_lines[start + 1 : end] if line.strip() and not line.strip().startswith("#")]
    assert hints and code
    assert stub_lines == solution_lines[: start + 1] + hints + ["    " + exercises.STUB_RAISE] + solution_lines[end:]
    assert not set(code) & set(stub_lines)


@pytest.mark.parametrize("name", exercises.EXERCISES)
def test_solution_source_runs_on_its_own_and_passes(name):
    namespace = {}
    exec(exercises.solution_source(name), namespace)
    fn = namespace[SOLUTIONS[name].__name__]
    assert fn.__module__ != solutions.__name__  # really the exec'd copy
    assert exercises.evaluate(name, fn).status == "passed"


# --- named mistakes ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name, fn, mistake, words", ALL_MISTAKES, ids=[f"{n}-{fn.__name__}" for n, fn, _, _ in ALL_MISTAKES]
)
def test_catalogued_mistake_is_named(name, fn, mistake, words, capsys):
    result = exercises.evaluate(name, fn)
    assert (result.status, result.mistake) == ("mistake", mistake), result.message
    for word in words:
        assert word in result.message, (word, result.message)
    assert exercises.check(name, fn) is exercises.reference(name)
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0] == f"{name}: {result.message}"
    assert len(out) == 2 and "carries on with the reference" in out[1]


def test_every_catalogued_mistake_has_a_wrong_function_here():
    tested = {(name, mistake) for name, _, mistake, _ in ALL_MISTAKES}
    catalogued = {(name, m.name) for name in exercises.EXERCISES for m in exercises._EXERCISES[name].mistakes()}
    assert catalogued <= tested


def test_sqrt_d_model_message_reads_as_in_the_style_guide():
    message = exercises.evaluate("scaled_dot_product_attention", att_sqrt_d_model).message
    assert message.startswith(
        "Your scores are too small by a factor of sqrt(4) = 2: did you divide by sqrt(d_model) = sqrt(12) "
        "instead of sqrt(d_head) = sqrt(3)?"
    )


# --- inputs, exceptions, shapes, general mismatch ----------------------------------------------


def test_changing_q_in_place_is_caught():
    def my_attention(q, k, v, attn_mask=None):
        q /= np.sqrt(q.shape[-1])  # right numbers, but the caller's q changes
        scores = q @ np.swapaxes(k, -1, -2)
        if attn_mask is not None:
            scores = np.where(attn_mask, -np.inf, scores)
        weights = learner_softmax(scores)
        return weights @ v, weights

    result = exercises.evaluate("scaled_dot_product_attention", my_attention)
    assert (result.status, result.mistake) == ("mistake", "changed_input")
    assert "changed its input q in place" in result.message


def test_changing_head_outputs_in_place_is_caught():
    def my_output_projection(head_outputs, w_o, b_o):
        head_outputs[:] = head_outputs * 1.0 + 0.0
        head_outputs += 1.0
        return concat_heads(head_outputs - 1.0) @ w_o + b_o

    result = exercises.evaluate("output_projection", my_output_projection)
    assert (result.status, result.mistake) == ("mistake", "changed_input")
    assert "head_outputs" in result.message and "in place" in result.message


def test_exception_in_learner_code_is_reported_without_traceback(capsys):
    def my_split_heads(x, n_heads):
        raise KeyError("oops")

    result = exercises.evaluate("split_heads", my_split_heads)
    assert result.status == "error" and result.mistake is None
    assert "KeyError" in result.message and "oops" in result.message
    assert exercises.check("split_heads", my_split_heads) is exercises.reference("split_heads")
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    assert len(out.out.strip().splitlines()) == 2


def test_hard_coded_shape_fails_on_a_later_shape_with_a_hint():
    def my_split_heads(x, n_heads):
        return x.reshape(2, 5, 4, 3).transpose(0, 2, 1, 3)

    result = exercises.evaluate("split_heads", my_split_heads)
    assert result.status == "error" and result.n_shapes == 1
    assert "ValueError" in result.message and "x of shape (1, 6, 8)" in result.message
    assert "rather than typing numbers" in result.hint


def test_k_dot_t_on_four_axes_gets_a_swapaxes_hint():
    def my_attention(q, k, v, attn_mask=None):
        weights = learner_softmax(q @ k.T / np.sqrt(q.shape[-1]))
        return weights @ v, weights

    result = exercises.evaluate("scaled_dot_product_attention", my_attention)
    assert result.status == "error" and "ValueError" in result.message
    assert "np.swapaxes(k, -1, -2)" in result.hint


def test_mask_as_boolean_index_gets_a_where_hint():
    def my_attention(q, k, v, attn_mask=None):
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if attn_mask is not None:
            scores[attn_mask] = -np.inf
        weights = learner_softmax(scores)
        return weights @ v, weights

    result = exercises.evaluate("scaled_dot_product_attention", my_attention)
    assert result.status == "error" and "IndexError" in result.message
    assert result.n_shapes == 0  # it never got past the masked case the mistakes use
    assert "np.where(attn_mask, -np.inf, scores)" in result.hint


def test_not_implemented_after_the_first_case_is_an_error_not_not_attempted():
    def my_attention(q, k, v, attn_mask=None):
        if attn_mask is not None:
            raise NotImplementedError("masks later")
        return solutions.my_attention(q, k, v)

    result = exercises.evaluate("scaled_dot_product_attention", my_attention)
    assert result.status == "error" and "NotImplementedError: masks later" in result.message


def test_unnamed_wrong_shape_names_expected_and_got():
    def my_split_heads(x, n_heads):
        B, T, D = x.shape
        return x.reshape(B, T * n_heads, D // n_heads)

    result = exercises.evaluate("split_heads", my_split_heads)
    assert (result.status, result.mistake) == ("wrong", "wrong_shape")
    assert "has shape (2, 20, 3); expected (B, H, T, Dh) = (2, 4, 5, 3)" in result.message


def test_general_mismatch_reports_largest_difference_and_shape():
    def my_attention(q, k, v, attn_mask=None):
        output, weights = solutions.my_attention(q, k, v, attn_mask)
        if q.shape[-2] != k.shape[-2]:
            output = output + 0.25  # wrong only for cross-attention
        return output, weights

    result = exercises.evaluate("scaled_dot_product_attention", my_attention)
    assert (result.status, result.mistake) == ("wrong", None)
    assert "differs from the reference by up to 0.25" in result.message
    assert "q of shape (1, 2, 3, 4)" in result.message
    assert result.n_shapes == 2


def test_general_mismatch_reports_nan():
    def my_merge_heads(x):
        out = solutions.my_merge_heads(x)
        return np.where(out > 2.5, np.nan, out)

    result = exercises.evaluate("merge_heads", my_merge_heads)
    assert result.status == "wrong" and "contains NaN" in result.message


def test_not_a_function_is_an_error_not_an_exception():
    result = exercises.evaluate("merge_heads", None)
    assert result.status == "error" and "check expects your function" in result.message
    assert exercises.check("merge_heads", 42) is exercises.reference("merge_heads")


def test_fixing_the_mistake_turns_the_verdict_to_passed():
    assert exercises.evaluate("merge_heads", merge_no_transpose).status == "mistake"

    def my_merge_heads(x):
        B, H, T, Dh = x.shape
        return x.transpose(0, 2, 1, 3).reshape(B, T, H * Dh)

    assert exercises.evaluate("merge_heads", my_merge_heads).status == "passed"


def test_reference_attention_takes_attn_mask_positionally_like_the_learner():
    q = k = v = np.eye(3)
    mask = attention.causal_mask(3)
    out, weights = exercises.reference("scaled_dot_product_attention")(q, k, v, mask)
    np.testing.assert_allclose(weights, attention.scaled_dot_product_attention(q, k, v, attn_mask=mask)[1])
    assert weights[0, 1] == 0.0


# --- names, solution display, imports --------------------------------------------------------------


@pytest.mark.parametrize(
    "call",
    [
        lambda: exercises.check("attention", solutions.my_attention),
        lambda: exercises.evaluate("split", solutions.my_split_heads),
        lambda: exercises.stub_source("merge"),
        lambda: exercises.solution("projection"),
        lambda: exercises.reference("x"),
    ],
)
def test_unknown_name_raises_value_error_listing_valid_names(call):
    with pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert "is not an exercise" in message
    assert all(repr(name) in message for name in exercises.EXERCISES)


def test_solution_prints_the_source_outside_ipython(capsys, monkeypatch):
    monkeypatch.setattr(exercises, "_in_ipython", lambda: False)
    exercises.solution("merge_heads")
    out = capsys.readouterr().out
    assert out.startswith("Solution for merge_heads:")
    assert inspect.getsource(solutions.my_merge_heads) in out


def test_solution_is_behind_a_disclosure_in_ipython(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(exercises, "_in_ipython", lambda: True)
    monkeypatch.setattr(IPython.display, "display", shown.append)
    exercises.solution("scaled_dot_product_attention")
    (obj,) = shown
    page = obj.data
    assert page.startswith("<details><summary>Show the solution</summary><pre><code>")
    assert page.endswith("</code></pre></details>")
    assert "weights = softmax(scores, axis=-1)" in page
    assert "q @ np.swapaxes(k, -1, -2)" in page
    assert '"""' not in page and "&quot;&quot;&quot;" in page  # escaped for HTML


def test_importing_exercises_loads_no_torch_plotly_or_widgets():
    code = (
        "import sys, mha_core.exercises; "
        "print(sorted(m for m in ('torch', 'plotly', 'ipywidgets', 'IPython') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
