"""Tests for mha_classroom.exercises: stubs, checks that name mistakes, hidden solutions.

Every row of the mistake tables is planted and must get its own message; mistakes
written the way a learner writes them must be named too.
"""

from __future__ import annotations

import inspect
import re
import string
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_classroom import exercises
from mha_classroom.exercises._shared import SHARED
from mha_classroom.exercises._tables import Mistake
from mha_core import attention, solutions, softmax

SOLUTIONS = {
    "scaled_dot_product_attention": solutions.my_attention,
    "split_heads": solutions.my_split_heads,
    "merge_heads": solutions.my_merge_heads,
    "output_projection": solutions.my_output_projection,
    "induction_score": solutions.my_induction_score,
}


def learner_softmax(scores, axis=-1):
    """A softmax as a learner writes it (NaN for a fully blocked row)."""
    e = np.exp(scores - scores.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def stub_function(name):
    namespace = {}
    exec(compile(exercises.stub_source(name), f"<stub {name}>", "exec"), namespace)
    return namespace[SOLUTIONS[name].__name__]


# --- every row of the mistake tables, planted ---------------------------------------------
#
# The tables in mha_classroom/exercises/{single_head,heads,projection}.py hold each mistake as a
# function; planting it must give that row's message and no other (an earlier row must not
# shadow it). Below them, mistakes written the way a learner writes them.


def template_pattern(template):
    """A regular expression for a message template: its words exactly, any text for its fields."""
    parts = []
    for literal, field, _, _ in string.Formatter().parse(template):
        parts.append(re.escape(literal))
        if field is not None:
            parts.append(".+?")
    return "".join(parts)


def catalogue_rows():
    for name in exercises.EXERCISES:
        ex = exercises._EXERCISES[name]
        for row in (*ex.mistakes, *ex.raised):
            yield pytest.param(name, row, id=f"{name}-{row.name}-{len(row.message)}")


@pytest.mark.parametrize("name, row", list(catalogue_rows()))
def test_each_planted_mistake_gets_its_own_message(name, row, capsys):
    result = exercises.evaluate(name, row.planted)
    assert (result.status, result.mistake) == ("mistake", row.name), result.message
    if isinstance(row, Mistake) and row.seen is None:
        case = exercises._EXERCISES[name].cases()[row.case]
        assert result.message == row.message.format(**case.fields)
    elif isinstance(row, Mistake):
        assert re.fullmatch(template_pattern(row.message), result.message), result.message
    else:
        assert re.fullmatch(template_pattern(row.message) + r" \(Your function raised \w+: .+\.\)", result.message)
    assert exercises.check(name, row.planted) is exercises.reference(name)
    out = capsys.readouterr().out.strip().splitlines()
    assert out == [f"{name}: {result.message}", result.hint]
    assert "carries on with the reference" in result.hint


def learner_attention(block=None, scale=np.sqrt, softmax=learner_softmax):
    """A learner's attention; ``block(scores, attn_mask)`` is their masking line."""

    def my_attention(q, k, v, attn_mask=None):
        scores = q @ np.swapaxes(k, -1, -2) / scale(q.shape[-1])
        if attn_mask is not None:
            scores = block(scores, attn_mask) if block else np.where(attn_mask, -np.inf, scores)
        weights = softmax(scores)
        return weights @ v, weights

    return my_attention


def att_mixes_q_with_weights_from_heads(q, k, v, attn_mask=None):
    weights = learner_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), axis=1)
    return weights @ v, weights


def att_no_softmax(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    return scores @ v, scores


def att_torch_transpose(q, k, v, attn_mask=None):
    weights = learner_softmax(q @ k.transpose(-1, -2) / np.sqrt(q.shape[-1]))
    return weights @ v, weights


def att_masked_fill(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    if attn_mask is not None:
        scores = scores.masked_fill(attn_mask, -np.inf)
    return learner_softmax(scores) @ v, learner_softmax(scores)


def att_softmax_dim(q, k, v, attn_mask=None):
    weights = softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1]), dim=-1)
    return weights @ v, weights


def att_size_call(q, k, v, attn_mask=None):
    weights = learner_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(q.size(-1)))
    return weights @ v, weights


def att_undefined_name(q, k, v, attn_mask=None):
    weights = softmx(q @ np.swapaxes(k, -1, -2))  # noqa: F821 - the typo is the point
    return weights @ v, weights


def att_mask_unguarded(q, k, v, attn_mask=None):
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores[attn_mask] = -np.inf  # with None: every score
    return learner_softmax(scores) @ v, learner_softmax(scores)


def att_returns_output_only(q, k, v, attn_mask=None):
    return solutions.my_attention(q, k, v, attn_mask)[0]


def att_forgot_return(q, k, v, attn_mask=None):
    solutions.my_attention(q, k, v, attn_mask)


def split_torch_transpose(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, n_heads, D // n_heads).transpose(1, 2)


def split_view(x, n_heads):
    B, T, D = x.shape
    return x.view(B, T, n_heads, D // n_heads).transpose(0, 2, 1, 3)


def split_permute(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, n_heads, D // n_heads).permute(0, 2, 1, 3)


def split_hard_coded(x, n_heads):
    return x.reshape(2, 5, 4, 3).transpose(0, 2, 1, 3)


def split_wrong_sizes(x, n_heads):
    B, T, D = x.shape
    return x.reshape(B, T, n_heads, D).transpose(0, 2, 1, 3)


def merge_dot_t(x):
    B, H, T, Dh = x.shape
    return x.T.reshape(B, T, H * Dh)


def merge_swapaxes_last_two(x):
    B, H, T, Dh = x.shape
    return np.swapaxes(x, -1, -2).reshape(B, T, H * Dh)


def merge_torch_transpose(x):
    B, H, T, Dh = x.shape
    return x.transpose(1, 2).reshape(B, T, H * Dh)


def merge_heads_flipped(x):
    B, H, T, Dh = x.shape
    return np.flip(x, axis=1).transpose(0, 2, 1, 3).reshape(B, T, H * Dh)


def merge_heads_last_first(x):
    B, H, T, Dh = x.shape
    return np.concatenate([x[:, h] for h in reversed(range(H))], axis=-1)  # (B, T, H*Dh), head H first


def proj_interleaved(head_outputs, w_o, b_o):
    B, H, T, Dh = head_outputs.shape
    concat = np.stack([head_outputs[:, h] for h in range(H)], axis=-1).reshape(B, T, H * Dh)  # (B, T, Dh, H) flattened
    return concat @ w_o + b_o


def proj_bias_per_head(head_outputs, w_o, b_o):
    Dh = head_outputs.shape[-1]
    return sum(head_outputs[:, h] @ w_o[h * Dh : (h + 1) * Dh] + b_o for h in range(head_outputs.shape[1]))


def proj_not_concatenated(head_outputs, w_o, b_o):
    return head_outputs @ w_o + b_o


A = "scaled_dot_product_attention"
LEARNER_MISTAKES = [
    # scale
    (A, learner_attention(scale=lambda d_head: np.sqrt(8)), "wrong_scale", ["divided by 2.828", "sqrt(8)", "q.shape[-1]"]),
    (A, learner_attention(scale=lambda d_head: 1 / np.sqrt(d_head)), "multiplied_by_sqrt_d_head",
     ["too large by a factor of d_head = 3", "multiplied q @ k^T by sqrt(d_head) = 1.73 instead of dividing"]),
    (A, learner_attention(scale=lambda d_head: 1.0), "not_scaled", ["too large", "sqrt(3)", "forget"]),
    # softmax
    (A, att_mixes_q_with_weights_from_heads, "softmax_wrong_axis", ["wrong axis", "axis 1", "heads", "axis=-1"]),
    (A, att_no_softmax, "returned_scores", ["weights are the scores", "softmax"]),
    (A, learner_attention(softmax=lambda s: np.exp(s) / np.exp(s).sum(-1, keepdims=True)), "softmax_overflow",
     ["overflows on large scores", "exp(800) is inf", "Subtract each row's largest score"]),
    # masks
    (A, learner_attention(block=lambda s, m: s * ~m), "mask_filled_with_zero", ["blocked scores are 0, not -inf", "exp(0) = 1"]),
    (A, learner_attention(block=lambda s, m: np.where(m, 0, s)), "mask_filled_with_zero", ["blocked scores are 0, not -inf"]),
    (A, learner_attention(block=lambda s, m: s * m), "mask_multiplied", ["multiplied the scores by attn_mask", "cannot block"]),
    (A, learner_attention(block=lambda s, m: s + m), "bool_mask_added", ["added the bool mask", "True counts as 1"]),
    (A, learner_attention(block=lambda s, m: s - m), "bool_mask_subtracted", ["subtracted the bool mask"]),
    (A, learner_attention(block=lambda s, m: s + m * -np.inf), "mask_makes_nan", ["NaN", "0 * inf", "attn_mask * -np.inf"]),
    (A, learner_attention(block=lambda s, m: s + m * -np.inf, softmax=softmax), "mask_makes_nan",
     ["softmax refuses", "attn_mask * -np.inf is NaN", "ValueError: softmax got x containing NaN"]),
    (A, learner_attention(block=lambda s, m: np.where(m, np.inf, s), softmax=softmax), "mask_plus_inf", ["+inf", "must be -inf"]),
    (A, learner_attention(block=lambda s, m: np.where(m, s, -np.inf)), "mask_inverted", ["inverted", "True means blocked"]),
    (A, learner_attention(block=lambda s, m: s), "mask_ignored", ["ignores attn_mask", "-inf"]),
    (A, att_mask_unguarded, "mask_none_not_handled", ["attn_mask=None", "if attn_mask is not None"]),
    # PyTorch habits and other exceptions
    (A, att_torch_transpose, "torch_transpose", ["k.transpose(-1, -2) is PyTorch's", "np.swapaxes(k, -1, -2)", "axes don't match array"]),
    (A, att_masked_fill, "torch_method", ["no .masked_fill(...)", "np.where(mask, value, x)"]),
    (A, att_softmax_dim, "torch_keyword", ["dim= is PyTorch's spelling", "axis=-1"]),
    (A, att_size_call, "torch_size", ["x.size(-1) is PyTorch's", "x.shape[-1]"]),
    (A, att_undefined_name, "undefined_name", ["uses softmx", "check the spelling"]),
    (A, att_returns_output_only, "wrong_return", ["returned one value", "return output, weights"]),
    (A, att_forgot_return, "no_return", ["returned None", "return output, weights"]),
    ("split_heads", split_torch_transpose, "torch_transpose", ["PyTorch's x.transpose(1, 2)", "np.swapaxes(x, 1, 2)"]),
    ("split_heads", split_view, "torch_view", ["PyTorch's reshape", "x.reshape(...)"]),
    ("split_heads", split_permute, "torch_method", ["no .permute(...)", "x.transpose(...)"]),
    ("split_heads", split_wrong_sizes, "reshape_sizes", ["keeps the number of entries", "D = H * Dh"]),
    ("merge_heads", merge_dot_t, "transposed_all_axes", [".T", "(Dh, T, H, B)", "transpose(0, 2, 1, 3)"]),
    ("merge_heads", merge_swapaxes_last_two, "swapped_last_two_axes", ["transpose(0, 1, 3, 2)", "(B, H, Dh, T)"]),
    ("merge_heads", merge_torch_transpose, "torch_transpose", ["PyTorch's x.transpose(1, 2)"]),
    ("merge_heads", merge_heads_flipped, "heads_reversed", ["reverse order", "starts with head 4's 3 features",
                                                             "in order 1 to 4"]),
    ("merge_heads", merge_heads_last_first, "heads_reversed", ["reverse order", "ends with head 1's"]),
    ("output_projection", proj_interleaved, "heads_interleaved", ["concatenation before w_o is wrong", "interleaved"]),
    ("output_projection", proj_bias_per_head, "bias_added_per_head", ["once per head", "4 times"]),
    ("output_projection", proj_not_concatenated, "not_concatenated", ["(H*Dh, D) = (12, 12)", "Concatenate head_outputs"]),
]


@pytest.mark.parametrize(
    "name, fn, mistake, words", LEARNER_MISTAKES, ids=[f"{n}-{m}-{i}" for i, (n, _, m, _) in enumerate(LEARNER_MISTAKES)]
)
def test_learner_written_mistake_is_named(name, fn, mistake, words):
    result = exercises.evaluate(name, fn)
    assert (result.status, result.mistake) == ("mistake", mistake), result.message
    for word in words:
        assert word in result.message, (word, result.message)


def test_every_shared_exception_row_is_met_by_a_learner_mistake_here():
    tested = {mistake for _, _, mistake, _ in LEARNER_MISTAKES} | {"hard_coded_shape"}
    assert {row.name for row in SHARED} <= tested


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


def test_exercise_names_are_the_five_of_the_course():
    assert exercises.EXERCISES == ("scaled_dot_product_attention", "split_heads", "merge_heads", "output_projection",
                                   "induction_score")


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


# --- named mistakes: the style guide, the check order, exceptions ---------------------------------


def test_sqrt_d_model_message_reads_as_in_the_style_guide():
    def my_attention(q, k, v, attn_mask=None):
        d_model = q.shape[-3] * q.shape[-1]  # H * Dh
        weights = learner_softmax(q @ np.swapaxes(k, -1, -2) / np.sqrt(d_model))
        return weights @ v, weights

    message = exercises.evaluate("scaled_dot_product_attention", my_attention).message
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
        return attention.merge_heads(head_outputs - 1.0) @ w_o + b_o

    result = exercises.evaluate("output_projection", my_output_projection)
    assert (result.status, result.mistake) == ("mistake", "changed_input")
    assert "head_outputs" in result.message and "in place" in result.message


def test_unknown_exception_is_reported_by_type_and_message_without_traceback(capsys):
    def my_split_heads(x, n_heads):
        raise KeyError("oops")

    result = exercises.evaluate("split_heads", my_split_heads)
    assert result.status == "error" and result.mistake is None
    assert result.message == "Your function raised KeyError: 'oops' (called with x of shape (2, 5, 12), n_heads=4)"
    assert "which line fails" in result.hint
    assert exercises.check("split_heads", my_split_heads) is exercises.reference("split_heads")
    out = capsys.readouterr()
    assert "Traceback" not in out.out + out.err
    assert len(out.out.strip().splitlines()) == 2


@pytest.mark.parametrize("name", exercises.EXERCISES)
@pytest.mark.parametrize(
    "exc", [TypeError("t"), ValueError("v"), IndexError("i"), AttributeError("a"), ZeroDivisionError("z"), RuntimeError("r")]
)
def test_any_exception_gives_a_verdict_and_the_reference(name, exc, capsys):
    def raises(*args, **kwargs):
        raise exc

    result = exercises.evaluate(name, raises)
    assert result.status == "error" and type(exc).__name__ in result.message
    assert exercises.check(name, raises) is exercises.reference(name)
    assert "Traceback" not in capsys.readouterr().out


@pytest.mark.parametrize("name", exercises.EXERCISES)
@pytest.mark.parametrize(
    "returned",
    ["text", {"a": 1}, [[1.0, 2.0], [3.0]], np.array(["a"]), np.ones((2, 2)) * 1j, (x for x in "ab")],
    ids=["str", "dict", "ragged", "strings", "complex", "generator"],
)
def test_a_return_value_that_is_not_real_numbers_is_named(name, returned):
    n = len(exercises._EXERCISES[name].results)
    result = exercises.evaluate(name, lambda *args, **kwargs: (returned,) * n if n > 1 else returned)
    assert (result.status, result.mistake) == ("mistake", "wrong_return"), result.message
    assert "not an array of real numbers" in result.message


def test_hard_coded_shape_is_named_on_a_later_shape():
    result = exercises.evaluate("split_heads", split_hard_coded)
    assert (result.status, result.mistake, result.n_shapes) == ("mistake", "hard_coded_shape", 1)
    assert "worked on the first shape but not on x of shape (1, 6, 8), n_heads=2" in result.message
    assert "rather than typing numbers" in result.message
    assert "ValueError: cannot reshape" in result.message


def test_k_dot_t_on_four_axes_is_named():
    def my_attention(q, k, v, attn_mask=None):
        weights = learner_softmax(q @ k.T / np.sqrt(q.shape[-1]))
        return weights @ v, weights

    result = exercises.evaluate("scaled_dot_product_attention", my_attention)
    assert (result.status, result.mistake) == ("mistake", "k_dot_T")
    assert "(B, H, Tk, Dh) = (2, 4, 5, 3) becomes (3, 5, 4, 2)" in result.message
    assert "np.swapaxes(k, -1, -2)" in result.message


def test_mask_as_boolean_index_is_named():
    def my_attention(q, k, v, attn_mask=None):
        scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
        if attn_mask is not None:
            scores[attn_mask] = -np.inf
        weights = learner_softmax(scores)
        return weights @ v, weights

    result = exercises.evaluate("scaled_dot_product_attention", my_attention)
    assert (result.status, result.mistake) == ("mistake", "mask_as_index")
    assert result.n_shapes == 0  # it never got past the masked case the mistakes use
    assert "np.where(attn_mask, -np.inf, scores)" in result.message and "IndexError" in result.message


def test_large_scores_overflow_exp_and_a_max_subtracting_softmax_passes():
    case = exercises._EXERCISES[A].cases()[-1]
    scores = attention.attention_scores(case.args["q"], case.args["k"])
    assert scores.min() > 709  # exp overflows float64 on every score
    assert exercises.evaluate(A, learner_attention()).status == "passed"


# --- the check order: shape, input unchanged, named mistakes, general ------------------------


def test_a_wrong_shape_is_reported_before_a_changed_input():
    def my_merge_heads(x):
        out = x.sum(axis=1)  # heads_summed
        x += 1.0  # and changes the input
        return out

    assert exercises.evaluate("merge_heads", my_merge_heads).mistake == "heads_summed"


def test_a_changed_input_is_reported_before_a_named_mistake():
    def my_merge_heads(x):
        B, H, T, Dh = x.shape
        out = x.reshape(B, T, H * Dh).copy()  # reshape_without_transpose
        x *= 1.0 + 1e-3  # and changes the input
        return out

    assert exercises.evaluate("merge_heads", my_merge_heads).mistake == "changed_input"


def test_a_named_mistake_is_reported_before_the_general_comparison():
    result = exercises.evaluate(A, learner_attention(block=lambda s, m: s + m))
    assert (result.status, result.mistake, result.n_shapes) == ("mistake", "bool_mask_added", 0)


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
    def my_merge_heads(x):
        B, H, T, Dh = x.shape
        return x.reshape(B, T, H * Dh)

    assert exercises.evaluate("merge_heads", my_merge_heads).mistake == "reshape_without_transpose"

    def my_merge_heads(x):  # noqa: F811 - the fixed version
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
    monkeypatch.setattr(exercises._display, "in_ipython", lambda: False)
    exercises.solution("merge_heads")
    out = capsys.readouterr().out
    assert out.startswith("Solution for merge_heads:")
    assert inspect.getsource(solutions.my_merge_heads) in out


def test_solution_is_behind_a_disclosure_in_ipython(monkeypatch):
    import IPython.display

    from mha_classroom import _theme
    from mha_core import projector

    shown, updated = [], []
    monkeypatch.setattr(exercises._display, "in_ipython", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda obj, **kw: shown.append((obj, kw)))
    monkeypatch.setattr(IPython.display, "update_display", lambda obj, **kw: updated.append((obj, kw)))
    monkeypatch.setattr(projector, "_current", projector.LAPTOP)
    monkeypatch.setattr(projector, "_followers", [])
    monkeypatch.setattr(projector, "_show_controls_css", lambda: None)
    monkeypatch.setattr(_theme, "_shown", [])
    exercises.solution("scaled_dot_product_attention")
    ((obj, how),) = shown
    page = obj.data
    assert page.startswith('<details style="font-size:16px"><summary>Show the solution</summary>'
                           '<pre style="font-size:16px;white-space:pre-wrap"><code>')
    assert page.endswith("</code></pre></details>")
    projector.presenter(True)  # the solution shown follows the switch, in place
    ((new, new_how),) = updated
    assert new_how["display_id"] == how["display_id"] and 'font-size:20px' in new.data and "font-size:16px" not in new.data
    assert "weights = softmax(scores, axis=-1)" in page
    assert "q @ np.swapaxes(k, -1, -2)" in page
    assert '"""' not in page and "&quot;&quot;&quot;" in page  # escaped for HTML


def test_importing_exercises_loads_no_torch_plotly_or_widgets():
    code = (
        "import sys, mha_classroom.exercises; "
        "print(sorted(m for m in ('torch', 'plotly', 'ipywidgets', 'IPython') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
