"""Notebook 02's exercise, scaled dot-product attention: its cases and its mistakes.

Every planted mistake is the core's attention (``mha_core.attention``) with one step
swapped: how the scores are made, how the mask blocks them, or which softmax runs.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from mha_core import attention, solutions

from ._runner import run
from ._tables import Case, Exercise, Mistake, Raised, close_all


def reference_attention(q, k, v, attn_mask=None):
    """The course's reference, ``mha_core.attention.scaled_dot_product_attention``.

    Shapes:
        q: (..., Tq, Dh)
        k: (..., Tk, Dh)
        v: (..., Tk, Dh)
        attn_mask: bool (True = blocked) or float, broadcastable to (..., Tq, Tk), or None
        returns: output (..., Tq, Dh), weights (..., Tq, Tk)
    """
    return attention.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)


# --- cases --------------------------------------------------------------------------


def _mixed_mask(rng, Tq: int, Tk: int) -> np.ndarray:
    """A bool (Tq, Tk) mask in which every row blocks some keys and allows others.

    So neither the mask nor its inverse blocks a whole row: the check never depends
    on what a learner's softmax does with a fully blocked row.
    """
    mask = rng.random((Tq, Tk)) < 0.4  # (Tq, Tk)
    for row in range(Tq):
        blocked, allowed = rng.choice(Tk, size=2, replace=False)
        mask[row, blocked] = True
        mask[row, allowed] = False
    return mask


def _large_scores_case(rng) -> Case:
    """Scores from 786 to 814: exp overflows float64 (above 709), so a softmax must subtract the row's max.

    Whole numbers, so float32 holds q @ k^T exactly and a float32 learner still passes.
    """
    q = rng.integers(-3, 4, size=(1, 2, 3, 4)).astype(np.float64)  # (B, H, Tq, Dh)
    k = rng.integers(-3, 4, size=(1, 2, 5, 4)).astype(np.float64)  # (B, H, Tk, Dh)
    q[..., 0] = k[..., 0] = 40.0  # every score gets 40 * 40 / sqrt(4) = 800
    v = rng.normal(size=(1, 2, 5, 4))  # (B, H, Tk, Dh)
    return Case({"q": q, "k": k, "v": v, "attn_mask": None}, dict(B=1, H=2, Tq=3, Tk=5, Dh=4, D=8))


@functools.cache
def cases() -> list[Case]:
    rng = np.random.default_rng(2024)

    def qkv(lead, Tq, Tk, Dh):
        return (
            rng.normal(size=(*lead, Tq, Dh)),  # q: (..., Tq, Dh)
            rng.normal(size=(*lead, Tk, Dh)),  # k: (..., Tk, Dh)
            rng.normal(size=(*lead, Tk, Dh)),  # v: (..., Tk, Dh)
        )

    def case(q, k, v, mask, **dims):
        return Case({"q": q, "k": k, "v": v, "attn_mask": mask}, dims)

    # Case 0 and 1 share their arrays: the mistakes are named on them. H=4 and Dh=3
    # keep the scale mistakes apart: sqrt(H) = 2, sqrt(Dh) = 1.73.
    B, H, T, Dh = 2, 4, 5, 3
    q, k, v = qkv((B, H), T, T, Dh)
    out = [
        case(q, k, v, None, B=B, H=H, Tq=T, Tk=T, Dh=Dh, D=H * Dh),
        case(q, k, v, _mixed_mask(rng, T, T), B=B, H=H, Tq=T, Tk=T, Dh=Dh, D=H * Dh),
    ]
    # Cross-attention, Tq != Tk, with a mask.
    q, k, v = qkv((1, 2), 3, 7, 4)
    out.append(case(q, k, v, _mixed_mask(rng, 3, 7), B=1, H=2, Tq=3, Tk=7, Dh=4, D=8))
    # One head, causal mask (the diagonal stays allowed, so no row is fully blocked).
    q, k, v = qkv((1, 1), 4, 4, 8)
    out.append(case(q, k, v, attention.causal_mask(4), B=1, H=1, Tq=4, Tk=4, Dh=8, D=8))
    # Eight heads, a key padding mask (B, 1, 1, Tk): the last two keys of the second sequence.
    q, k, v = qkv((2, 8), 4, 6, 2)
    padding = np.zeros((2, 1, 1, 6), dtype=bool)  # (B, 1, 1, Tk)
    padding[1, ..., 4:] = True
    out.append(case(q, k, v, padding, B=2, H=8, Tq=4, Tk=6, Dh=2, D=16))
    # One head without batch or head axes: (T, Dh), as notebook 02 starts.
    q, k, v = qkv((), 6, 6, 2)
    out.append(case(q, k, v, None, Tq=6, Tk=6, Dh=2))
    # Three heads, no batch axis, Tq != Tk.
    q, k, v = qkv((3,), 2, 5, 4)
    out.append(case(q, k, v, None, H=3, Tq=2, Tk=5, Dh=4))
    out.append(_large_scores_case(rng))
    return out


MASKED, ONE_HEAD, LARGE = 1, 5, 7  # cases some mistakes are named on; the others use case 0


# --- planted mistakes: the core's attention with one step swapped --------------------


def _weigh(scores, v, softmax=attention.softmax):
    """Softmax over the keys, then mix: (output, weights)."""
    weights = softmax(scores)  # (..., Tq, Tk)
    return attention.mix_values(weights, v), weights


def _attend(
    q, k, v, attn_mask=None, *, scores=attention.attention_scores, block=attention.apply_mask, softmax=attention.softmax
):
    """Attention made of the core's steps, any of which a mistake replaces."""
    s = scores(q, k)  # (..., Tq, Tk)
    if attn_mask is not None:
        s = block(s, attn_mask)  # (..., Tq, Tk)
    return _weigh(s, v, softmax)


def planted(**step):
    """The reference attention with the named steps replaced, e.g. ``planted(block=...)``."""
    return lambda q, k, v, attn_mask=None: _attend(q, k, v, attn_mask, **step)


def _right_weights(output):
    """The reference's weights with a wrong output: ``output(weights, q, k, v)`` instead of weights @ v."""

    def fn(q, k, v, attn_mask=None):
        weights = reference_attention(q, k, v, attn_mask)[1]  # (..., Tq, Tk)
        return output(weights, q, k, v), weights

    return fn


def _d_model_of(q) -> int:
    heads = q.shape[-3] if q.ndim >= 3 else 1
    return heads * q.shape[-1]


def _rescaled(factor):
    """Scores times ``factor(d_head, d_model)``: the right scores, scaled by the wrong number."""
    return lambda q, k: attention.attention_scores(q, k) * factor(q.shape[-1], _d_model_of(q))


def _learner_softmax(scores):
    """The textbook softmax: subtracts the row's max, but gives NaN for NaN or +inf scores."""
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))  # (..., Tq, Tk)
    return e / e.sum(axis=-1, keepdims=True)


def _softmax_without_max(scores):
    """exp(scores) / sum: right for small scores, inf / inf = NaN once a score passes 709."""
    e = np.exp(scores)  # (..., Tq, Tk)
    return e / e.sum(axis=-1, keepdims=True)


def _mask_after_softmax(q, k, v, attn_mask=None):
    weights = attention.softmax(attention.attention_scores(q, k))  # (..., Tq, Tk)
    if attn_mask is not None:
        weights = np.where(attn_mask, 0.0, weights)  # rows no longer sum to 1
    return attention.mix_values(weights, v), weights


def _mask_as_index_unguarded(q, k, v, attn_mask=None):
    scores = attention.attention_scores(q, k)  # (..., Tq, Tk), a new array
    scores[attn_mask] = -np.inf  # scores[None] is every score
    return _weigh(scores, v)


def _mask_as_index(q, k, v, attn_mask=None):
    scores = attention.attention_scores(q, k)  # (..., Tq, Tk), a new array
    if attn_mask is not None:
        scores[attn_mask] = -np.inf  # a (Tq, Tk) index does not broadcast over (B, H)
    return _weigh(scores, v)


def _mask_unguarded(q, k, v, attn_mask=None):
    scores = attention.attention_scores(q, k)  # (..., Tq, Tk)
    return _weigh(scores + attn_mask * -1e9, v)  # None * -1e9 raises TypeError


def _k_dot_t(q, k, v, attn_mask=None):
    return _attend(q, k, v, attn_mask, scores=lambda q, k: q @ k.T / np.sqrt(q.shape[-1]))


def _k_torch_transpose(q, k, v, attn_mask=None):
    return _attend(q, k, v, attn_mask, scores=lambda q, k: q @ k.transpose(-1, -2) / np.sqrt(q.shape[-1]))


# --- mistakes seen from a property of the results ---------------------------------------


def _wrong_axis(case, got):
    weights = got[1]
    if not np.all(np.isfinite(weights)) or np.allclose(weights.sum(axis=-1), 1.0):
        return None
    axis_names = ["the batch, B", "the heads, H", "the queries, Tq"][-(weights.ndim - 1) :]
    for axis in range(weights.ndim - 1):
        if np.allclose(weights.sum(axis=axis), 1.0):
            return {"axis": axis, "axis_name": axis_names[axis]}
    return None


def _returned_scores(case, got):
    scores = attention.attention_scores(case.args["q"], case.args["k"])  # (..., Tq, Tk)
    unscaled = scores * math.sqrt(case.args["q"].shape[-1])
    return {} if any(close_all(got[1:], (s,)) for s in (scores, unscaled)) else None


def _not_normalised(case, got):
    sums = got[1].sum(axis=-1)  # (..., Tq)
    if not np.all(np.isfinite(sums)) or np.allclose(sums, 1.0):
        return None
    return {"low": f"{sums.min():.3g}", "high": f"{sums.max():.3g}"}


def _mask_none_blocks_all(case, got):
    weights = got[1]
    return {} if np.all(weights == 0) or np.all(np.isnan(weights)) else None


def _has_nan(case, got):
    return {} if any(np.isnan(g).any() for g in got) else None


def _wrong_scale(case, got):
    """Fit the factor the learner's weights imply: log(weights) = scores * alpha + const per row."""
    q, k, v = case.args["q"], case.args["k"], case.args["v"]
    output, weights = got
    if not np.all(weights > 0):
        return None
    dots = attention.attention_scores(q, k) * math.sqrt(q.shape[-1])  # (..., Tq, Tk), unscaled
    logs = np.log(weights)
    dots_c = dots - dots.mean(axis=-1, keepdims=True)
    logs_c = logs - logs.mean(axis=-1, keepdims=True)
    alpha = float(np.sum(dots_c * logs_c) / np.sum(dots_c * dots_c))
    if alpha <= 0 or not close_all(got, _weigh(dots * alpha, v)):
        return None
    divisor, d_head = 1.0 / alpha, q.shape[-1]
    if math.isclose(divisor, math.sqrt(d_head), rel_tol=1e-4):
        return None
    square = divisor * divisor
    as_sqrt = f" (that is sqrt({round(square)}))" if abs(square - round(square)) < 1e-3 * square else ""
    return {"divisor": f"{divisor:.4g}", "as_sqrt": as_sqrt}


# --- the tables ------------------------------------------------------------------------------

_BLOCK = "np.where(attn_mask, -np.inf, scores)"
_TYPED_SCALE = (
    "Your scores are divided by {divisor}{as_sqrt} instead of sqrt(d_head) = sqrt({Dh}) = {Dh_sqrt}: "
    "take d_head from q.shape[-1] rather than typing a number (the check uses other shapes than the notebook)."
)

MISTAKES = (
    # the plain case: B=2, H=4, Tq=Tk=5, Dh=3, no mask
    Mistake(
        "mask_none_not_handled",
        _mask_as_index_unguarded,
        "With attn_mask=None (no mask) all your weights are 0 or NaN, as if every key were blocked: did you "
        "mask without if attn_mask is not None:? In NumPy scores[None] selects every score.",
        seen=_mask_none_blocks_all,
    ),
    Mistake(
        "outputs_swapped",
        lambda q, k, v, attn_mask=None: reference_attention(q, k, v, attn_mask)[::-1],
        "You returned (weights, output); return them in the order (output, weights).",
    ),
    Mistake(
        "scaled_by_sqrt_d_model",
        planted(scores=_rescaled(lambda d_head, d_model: math.sqrt(d_head / d_model))),
        "Your scores are too small by a factor of sqrt({H}) = {H_sqrt}: did you divide by "
        "sqrt(d_model) = sqrt({D}) instead of sqrt(d_head) = sqrt({Dh})? Each head works in its "
        "own d_head = {Dh} dimensions; d_head is q.shape[-1].",
    ),
    Mistake(
        "not_scaled",
        planted(scores=_rescaled(lambda d_head, d_model: math.sqrt(d_head))),
        "Your scores are too large by a factor of sqrt({Dh}) = {Dh_sqrt}: did you forget to divide "
        "q @ k^T by sqrt(d_head)? Without it the softmax saturates as d_head grows.",
    ),
    Mistake(
        "divided_by_d_head",
        planted(scores=_rescaled(lambda d_head, d_model: 1 / math.sqrt(d_head))),
        "Your scores are too small by a factor of sqrt({Dh}) = {Dh_sqrt}: did you divide by d_head "
        "instead of sqrt(d_head)?",
    ),
    Mistake(
        "multiplied_by_sqrt_d_head",
        planted(scores=_rescaled(lambda d_head, d_model: d_head)),
        "Your scores are too large by a factor of d_head = {Dh}: you multiplied q @ k^T by "
        "sqrt(d_head) = {Dh_sqrt} instead of dividing by it. Write q @ k^T / np.sqrt(d_head).",
    ),
    Mistake(
        "scores_transposed",
        planted(scores=lambda q, k: attention.attention_scores(k, q)),
        "Your scores are transposed (k @ q^T): compute q @ k^T, so that each row is a query and "
        "each column a key.",
    ),
    Mistake(
        "returned_scores",
        lambda q, k, v, attn_mask=None: (reference_attention(q, k, v, attn_mask)[0], attention.attention_scores(q, k)),
        "Your weights are the scores, from before the softmax: apply the softmax over the "
        "keys so that each row of weights is positive and sums to 1, and mix v with those.",
        seen=_returned_scores,
    ),
    Mistake(
        "softmax_wrong_axis",
        planted(softmax=lambda scores: attention.softmax(scores, axis=-2)),
        "Your softmax runs over the wrong axis: your weights sum to 1 along axis {axis} "
        "({axis_name}) instead of along the keys. Take the softmax over the last "
        "axis (axis=-1), so each query's weights over the keys sum to 1.",
        seen=_wrong_axis,
    ),
    Mistake(
        "weights_not_normalised",
        planted(softmax=np.exp),
        "Your weights are not normalised: each query's row should sum to 1, but your row sums "
        "run from {low} to {high}. Divide exp(scores) by its sum over the keys, or use "
        "softmax(scores, axis=-1).",
        seen=_not_normalised,
    ),
    Mistake(
        "weights_transposed_in_mix",
        _right_weights(lambda weights, q, k, v: np.swapaxes(weights, -1, -2) @ v),
        "Your weights are right, but your output uses them transposed (weights^T @ v): use "
        "weights @ v, so that each query's row of weights averages the value vectors.",
    ),
    Mistake(
        "v_not_mixed",
        _right_weights(lambda weights, q, k, v: v),
        "Your weights are right, but your output is v itself: each query's output is the weighted "
        "average of the value vectors, weights @ v.",
    ),
    Mistake(
        "v_not_mixed",
        _right_weights(lambda weights, q, k, v: weights),
        "Your weights are right, but your output is the weights again: mix the value vectors with "
        "them, output = weights @ v.",
    ),
    Mistake(
        "v_not_mixed",
        _right_weights(lambda weights, q, k, v: weights @ k),
        "Your weights are right, but your output mixes the keys (weights @ k): mix the values, "
        "weights @ v.",
    ),
    Mistake(
        "v_not_mixed",
        _right_weights(lambda weights, q, k, v: weights @ q),
        "Your weights are right, but your output mixes the queries (weights @ q): mix the values, "
        "weights @ v.",
    ),
    Mistake(
        "wrong_scale",
        planted(scores=_rescaled(lambda d_head, d_model: math.sqrt(d_head / 8))),
        _TYPED_SCALE,
        seen=_wrong_scale,
    ),
    # the masked case: the same arrays with a mask that blocks some keys in every row
    Mistake(
        "mask_ignored",
        planted(block=lambda scores, mask: scores),
        f"Your function ignores attn_mask: blocked keys still get weight. Where attn_mask is True, "
        f"set the score to -inf before the softmax: {_BLOCK}.",
        case=MASKED,
    ),
    Mistake(
        "mask_inverted",
        planted(block=lambda scores, mask: attention.apply_mask(scores, ~mask)),
        "Your mask is inverted: True means blocked (as in torch.nn.MultiheadAttention), so the score "
        "becomes -inf where attn_mask is True, not where it is False.",
        case=MASKED,
    ),
    Mistake(
        "mask_filled_with_zero",
        planted(block=lambda scores, mask: np.where(mask, 0.0, scores)),
        f"Your blocked scores are 0, not -inf (from np.where(attn_mask, 0, scores) or scores * ~attn_mask): "
        f"a score of 0 still gets weight, since exp(0) = 1. Set them to -inf: {_BLOCK}.",
        case=MASKED,
    ),
    Mistake(
        "mask_multiplied",
        planted(block=lambda scores, mask: scores * mask),
        f"You multiplied the scores by attn_mask: True counts as 1 and False as 0, so the blocked scores "
        f"stay and the allowed ones become 0. Multiplying cannot block a key; set blocked scores to "
        f"-inf: {_BLOCK}.",
        case=MASKED,
    ),
    Mistake(
        "bool_mask_added",
        planted(block=lambda scores, mask: scores + mask),
        f"You added the bool mask to the scores: True counts as 1, so a blocked key's score grows by 1 "
        f"instead of becoming -inf. Turn the mask into -inf first: {_BLOCK}.",
        case=MASKED,
    ),
    Mistake(
        "bool_mask_subtracted",
        planted(block=lambda scores, mask: scores - mask),
        f"You subtracted the bool mask from the scores: True counts as 1, so a blocked key's score "
        f"shrinks by 1 instead of becoming -inf. Turn the mask into -inf first: {_BLOCK}.",
        case=MASKED,
    ),
    Mistake(
        "mask_after_softmax",
        _mask_after_softmax,
        "You zeroed the blocked weights after the softmax, so the rows no longer sum to 1: block "
        "the scores (set them to -inf) before the softmax instead.",
        case=MASKED,
    ),
    Mistake(
        "mask_makes_nan",
        planted(block=lambda scores, mask: scores + mask * -np.inf, softmax=_learner_softmax),
        f"Your results turn into NaN once a mask is given: in floating point 0 * inf and inf - inf are "
        f"NaN, so attn_mask * -np.inf (False * -inf) or a score of +inf spoils a whole row. Block with "
        f"{_BLOCK}, which never multiplies by inf.",
        case=MASKED,
        seen=_has_nan,
    ),
    # one head, (T, Dh) = (6, 2): a number typed in that happens to fit the first case
    Mistake(
        "wrong_scale",
        planted(scores=_rescaled(lambda d_head, d_model: math.sqrt(d_head / 3))),
        _TYPED_SCALE,
        case=ONE_HEAD,
        seen=_wrong_scale,
    ),
    # large scores, 786 to 814, no mask
    Mistake(
        "softmax_overflow",
        planted(softmax=_softmax_without_max),
        "Your softmax overflows on large scores: exp(800) is inf in float64 and inf / inf is NaN. "
        "Subtract each row's largest score before np.exp (softmax(x - c) = softmax(x), so the "
        "weights do not change), or use softmax from mha_core.",
        case=LARGE,
        seen=_has_nan,
    ),
)

RAISED = (
    Raised(
        "torch_transpose",
        r"ValueError: axes don't match array|transpose\(\) takes",
        "k.transpose(-1, -2) is PyTorch's way to swap the last two axes; NumPy's transpose wants the new "
        "order of every axis, so it refuses two. Write np.swapaxes(k, -1, -2): (..., Tk, Dh) becomes "
        "(..., Dh, Tk).",
        planted=_k_torch_transpose,
    ),
    Raised(
        "k_dot_T",
        r"matmul: .*core dimension",
        "k.T reverses all the axes of k, (B, H, Tk, Dh) = ({B}, {H}, {Tk}, {Dh}) becomes ({Dh}, {Tk}, {H}, {B}), "
        "not just the last two, so q @ k.T does not line up. Write np.swapaxes(k, -1, -2), which gives "
        "(..., Dh, Tk).",
        planted=_k_dot_t,
        source=r"\bk\.T\b",
    ),
    Raised(
        "k_not_transposed",
        r"matmul: .*core dimension",
        "The scores' matrix product does not line up: q is (..., Tq, Dh) and k is (..., Tk, Dh), so k "
        "needs its last two axes swapped first. q @ np.swapaxes(k, -1, -2) gives the (..., Tq, Tk) scores.",
        planted=planted(scores=lambda q, k: q @ k),
    ),
    Raised(
        "mask_none_not_handled",
        r"operand type.*'NoneType'",  # None + ..., None * ..., ~None
        "Your function fails when attn_mask is None (no mask, as in the first call): put the masking step "
        "under if attn_mask is not None:.",
        planted=_mask_unguarded,
    ),
    Raised(
        "mask_as_index",
        r"IndexError: .*boolean index",
        f"A (Tq, Tk) mask used as an index, scores[attn_mask], picks out the first axes of a (B, H, Tq, Tk) "
        f"array; {_BLOCK} broadcasts it over B and H.",
        planted=_mask_as_index,
    ),
    Raised(
        "mask_makes_nan",
        r"ValueError: softmax got x containing NaN",
        "Your scores contain NaN, which softmax refuses: in floating point 0 * inf is NaN, so "
        f"attn_mask * -np.inf is NaN wherever the mask is False. Block with {_BLOCK}.",
        planted=planted(block=lambda scores, mask: scores + mask * -np.inf),
    ),
    Raised(
        "mask_plus_inf",
        r"ValueError: softmax got x containing \+inf",
        "Some of your scores are +inf: a blocked score must be -inf (weight 0), and +inf would take all "
        "the weight. Multiplying a negative score by -inf also gives +inf. Block with "
        f"{_BLOCK}.",
        planted=planted(block=lambda scores, mask: np.where(mask, np.inf, scores)),
    ),
)


def _blocked_row_note(ex: Exercise, fn) -> str | None:
    """After a pass: say if a fully blocked query row gives something other than the reference's zeros."""
    case = cases()[MASKED]
    mask = case.args["attn_mask"].copy()
    mask[0] = True  # query 0 may look at no key
    probe = Case({**case.args, "attn_mask": mask}, case.dims)
    outcome = run(ex, fn, probe)
    if outcome.results is not None and close_all(outcome.results, ex.expected(probe)):
        return None
    return (
        "Note: when every key of a query is blocked, the reference gives that query zero weights and a "
        "zero output; yours gives something else (often NaN). softmax from mha_core handles that row."
    )


EXERCISE = Exercise(
    name="scaled_dot_product_attention",
    notebook="02",
    solution=solutions.my_attention,
    reference=reference_attention,
    positional=("q", "k", "v"),
    keyword=("attn_mask",),
    results=("output", "weights"),
    result_dims=(("B", "H", "Tq", "Dh"), ("B", "H", "Tq", "Tk")),
    cases=cases,
    mistakes=MISTAKES,
    raised=RAISED,
    after_pass=_blocked_row_note,
)
