"""Exercises: a stub for the learner, a check that names the mistake, a hidden solution.

In a notebook::

    from mha_core import exercises
    print(exercises.stub_source("split_heads"))     # what the learner's cell starts with

    def my_split_heads(x, n_heads):
        ...

    split_heads = exercises.check("split_heads", my_split_heads)
    exercises.solution("split_heads")               # behind a "Show the solution" click

``check`` prints one verdict line (and sometimes one hint line) and returns the
function to use from then on: the learner's when it passed, otherwise the
reference from ``mha_core.attention``. Whatever the learner's function does
(raise, return None, change its inputs), ``check`` does not raise, so run-all never
stops at an exercise. ``evaluate`` returns the same verdict as a ``CheckResult``.

A check runs in this order (see STYLE.md):

1. call on the first case; an untouched stub (``NotImplementedError``) is "not
   attempted yet"; any other exception is reported by type and message;
2. the shape of each result (a wrong shape that a known mistake produces is named);
3. the inputs are left unchanged;
4. each known mistake by name: the learner's result is compared with a
   deliberately wrong implementation (the mistake catalogue below);
5. a general comparison with the reference on several shapes.

The stubs and the solutions both come from ``mha_core.solutions``: the stub is the
solution with the code between its markers replaced by ``raise
NotImplementedError("your turn")`` (the hint comments stay).

Exercise names: ``scaled_dot_product_attention`` (notebook 02), ``split_heads``
and ``merge_heads`` (03), ``output_projection`` (04).
"""

from __future__ import annotations

import html
import inspect
import math
import sys
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from . import attention, solutions

__all__ = [
    "EXERCISES",
    "CheckResult",
    "check",
    "evaluate",
    "reference",
    "solution",
    "solution_source",
    "stub_source",
]

START_MARKER = "# --- your code starts here ---"
END_MARKER = "# --- your code ends here ---"
STUB_RAISE = 'raise NotImplementedError("your turn")'

# A learner may compute in float32; every real mistake moves results by far more.
RTOL = 1e-5
ATOL = 1e-6

NOT_ATTEMPTED = "not attempted yet: the notebook carries on with the reference implementation"
CARRY_ON = "Until it passes, the notebook carries on with the reference implementation."


# --- results --------------------------------------------------------------------


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one check.

    status: "passed", "not_attempted", "mistake" (a named, known mistake), "wrong"
        (a wrong shape or a mismatch with the reference) or "error" (the function raised).
    mistake: the catalogue name of the mistake ("mask_inverted", "changed_input",
        "wrong_shape", ...), or None.
    message: the verdict in words, as ``check`` prints it after the exercise name.
    hint: a second line, or None.
    n_shapes: on how many shapes the function agreed with the reference (all of
        them when it passed).
    """

    name: str
    status: str
    mistake: str | None
    message: str
    hint: str | None = None
    n_shapes: int = 0

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def lines(self) -> list[str]:
        """What ``check`` prints: the verdict line, then the hint line if there is one."""
        out = [f"{self.name}: {self.message}"]
        if self.hint:
            out.append(self.hint)
        return out


# --- the reference each exercise falls back to ------------------------------------


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


# --- test cases -------------------------------------------------------------------


@dataclass(frozen=True)
class _Case:
    """One call of the learner's function: the arguments, and named dimensions for messages."""

    args: dict
    dims: dict

    @property
    def label(self) -> str:
        parts = []
        for name, value in self.args.items():
            if isinstance(value, np.ndarray):
                parts.append(f"{name} of shape {value.shape}")
            elif value is None:
                parts.append(f"{name}=None")
            else:
                parts.append(f"{name}={value!r}")
        return ", ".join(parts)


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


def _attention_cases() -> list[_Case]:
    rng = np.random.default_rng(2024)

    def qkv(lead, Tq, Tk, Dh):
        return (
            rng.normal(size=(*lead, Tq, Dh)),  # q: (..., Tq, Dh)
            rng.normal(size=(*lead, Tk, Dh)),  # k: (..., Tk, Dh)
            rng.normal(size=(*lead, Tk, Dh)),  # v: (..., Tk, Dh)
        )

    def case(q, k, v, mask, **dims):
        return _Case({"q": q, "k": k, "v": v, "attn_mask": mask}, dims)

    # Case 0 and 1 share their arrays: the mistakes are named on them. H=4 and Dh=3
    # keep the scale mistakes apart: sqrt(H) = 2, sqrt(Dh) = 1.73.
    B, H, T, Dh = 2, 4, 5, 3
    q, k, v = qkv((B, H), T, T, Dh)
    cases = [
        case(q, k, v, None, B=B, H=H, Tq=T, Tk=T, Dh=Dh, D=H * Dh),
        case(q, k, v, _mixed_mask(rng, T, T), B=B, H=H, Tq=T, Tk=T, Dh=Dh, D=H * Dh),
    ]
    # Cross-attention, Tq != Tk, with a mask.
    q, k, v = qkv((1, 2), 3, 7, 4)
    cases.append(case(q, k, v, _mixed_mask(rng, 3, 7), B=1, H=2, Tq=3, Tk=7, Dh=4, D=8))
    # One head, causal mask (the diagonal stays allowed, so no row is fully blocked).
    q, k, v = qkv((1, 1), 4, 4, 8)
    cases.append(case(q, k, v, attention.causal_mask(4), B=1, H=1, Tq=4, Tk=4, Dh=8, D=8))
    # Eight heads, a key padding mask (B, 1, 1, Tk): the last two keys of the second sequence.
    q, k, v = qkv((2, 8), 4, 6, 2)
    padding = np.zeros((2, 1, 1, 6), dtype=bool)  # (B, 1, 1, Tk)
    padding[1, ..., 4:] = True
    cases.append(case(q, k, v, padding, B=2, H=8, Tq=4, Tk=6, Dh=2, D=16))
    # One head without batch or head axes: (T, Dh), as notebook 02 starts.
    q, k, v = qkv((), 6, 6, 2)
    cases.append(case(q, k, v, None, Tq=6, Tk=6, Dh=2))
    # Three heads, no batch axis, Tq != Tk.
    q, k, v = qkv((3,), 2, 5, 4)
    cases.append(case(q, k, v, None, H=3, Tq=2, Tk=5, Dh=4))
    return cases


# (B, T, H, Dh) layouts for split/merge/projection cases; the first is the one the
# mistakes are named on (T, H and Dh all differ, so each mix-up shows).
_HEAD_LAYOUTS = [(2, 5, 4, 3), (1, 6, 2, 4), (3, 4, 3, 2), (2, 3, 8, 1), (1, 6, 1, 8), (1, 2, 4, 4)]


def _split_cases() -> list[_Case]:
    rng = np.random.default_rng(2025)
    return [
        _Case({"x": rng.normal(size=(B, T, H * Dh)), "n_heads": H}, dict(B=B, T=T, H=H, Dh=Dh, D=H * Dh))
        for B, T, H, Dh in _HEAD_LAYOUTS
    ]


def _merge_cases() -> list[_Case]:
    rng = np.random.default_rng(2026)
    return [
        _Case({"x": rng.normal(size=(B, H, T, Dh))}, dict(B=B, T=T, H=H, Dh=Dh, D=H * Dh))
        for B, T, H, Dh in _HEAD_LAYOUTS
    ]


def _projection_cases() -> list[_Case]:
    rng = np.random.default_rng(2027)
    cases = []
    for B, T, H, Dh in _HEAD_LAYOUTS:
        D = H * Dh
        args = {
            "head_outputs": rng.normal(size=(B, H, T, Dh)),  # (B, H, T, Dh)
            "w_o": rng.normal(size=(D, D)),  # (H*Dh, D)
            "b_o": rng.normal(size=(D,)),  # (D,)
        }
        cases.append(_Case(args, dict(B=B, T=T, H=H, Dh=Dh, D=D)))
    return cases


# --- the mistake catalogue ----------------------------------------------------------


@dataclass(frozen=True)
class _Mistake:
    """A known mistake, looked for on case ``case`` (0: plain, 1: masked for attention).

    ``detect(case, got, expected)`` returns the message when the learner's results
    ``got`` (a tuple of arrays) show this mistake, else None.
    """

    name: str
    case: int
    detect: Callable


def _close(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=RTOL, atol=ATOL))


def _same_as(name: str, wrong: Callable, message: str, case: int = 0) -> _Mistake:
    """A mistake seen by comparison with a deliberately wrong implementation.

    ``wrong(**case.args)`` returns what that mistake computes; ``message`` is
    formatted with the case's named dimensions.
    """

    def detect(c, got, expected):
        with np.errstate(all="ignore"):
            wrong_result = wrong(**c.args)
        if not isinstance(wrong_result, tuple):
            wrong_result = (wrong_result,)
        if len(wrong_result) == len(got) and all(_close(g, w) for g, w in zip(got, wrong_result)):
            return message.format(**c.dims)
        return None

    return _Mistake(name, case, detect)


def _predicate(name: str, test: Callable, case: int = 0) -> _Mistake:
    """A mistake seen from a property of the result; ``test`` returns the message or None."""
    return _Mistake(name, case, test)


def _sqrt_text(n) -> str:
    return f"sqrt({n}) = {math.sqrt(n):.3g}"


# attention: wrong implementations, built from the reference's steps


def _scores(q, k, divisor):
    return q @ np.swapaxes(k, -1, -2) / divisor  # (..., Tq, Tk)


def _finish(scores, v, attn_mask):
    weights = attention.softmax(attention.apply_mask(scores, attn_mask), axis=-1)  # (..., Tq, Tk)
    return weights @ v, weights


def _d_model_of(q):
    heads = q.shape[-3] if q.ndim >= 3 else 1
    return heads * q.shape[-1]


def _attention_mistakes() -> list[_Mistake]:
    ref = reference_attention

    def with_divisor(divide):
        return lambda q, k, v, attn_mask: _finish(_scores(q, k, divide(q)), v, attn_mask)

    def wrong_axis(c, got, expected):
        weights = got[1]
        if weights.shape != expected[1].shape or not np.all(np.isfinite(weights)):
            return None
        if np.allclose(weights.sum(axis=-1), 1.0, rtol=RTOL, atol=ATOL):
            return None
        axis_names = ["the batch, B", "the heads, H", "the queries, Tq"][-(weights.ndim - 1):]
        for axis in range(weights.ndim - 1):
            if np.allclose(weights.sum(axis=axis), 1.0, rtol=RTOL, atol=ATOL):
                return (
                    f"Your softmax runs over the wrong axis: your weights sum to 1 along axis {axis} "
                    f"({axis_names[axis]}) instead of along the keys. Take the softmax over the last "
                    f"axis (axis=-1), so each query's weights over the keys sum to 1."
                )
        return None

    def returned_scores(c, got, expected):
        q, k = c.args["q"], c.args["k"]
        weights = got[1]
        for divisor in (math.sqrt(q.shape[-1]), 1.0):
            if _close(weights, _scores(q, k, divisor)):
                return (
                    "Your weights are the scores, from before the softmax: apply the softmax over the "
                    "keys so that each row of weights is positive and sums to 1, and mix v with those."
                )
        return None

    def not_normalised(c, got, expected):
        weights = got[1]
        if weights.shape != expected[1].shape or not np.all(np.isfinite(weights)):
            return None
        sums = weights.sum(axis=-1)
        if np.allclose(sums, 1.0, rtol=RTOL, atol=ATOL):
            return None
        return (
            f"Your weights are not normalised: each query's row should sum to 1, but your row sums "
            f"run from {sums.min():.3g} to {sums.max():.3g}. Divide exp(scores) by its sum over the "
            f"keys, or use softmax(scores, axis=-1)."
        )

    def wrong_scale(c, got, expected):
        # Fit the factor the learner's weights imply: log(weights) = scores * alpha + const per row.
        q, k, v = c.args["q"], c.args["k"], c.args["v"]
        output, weights = got
        if weights.shape != expected[1].shape or not np.all(weights > 0):
            return None
        dots = _scores(q, k, 1.0)  # (..., Tq, Tk), unscaled
        logs = np.log(weights)
        dots_c = dots - dots.mean(axis=-1, keepdims=True)
        logs_c = logs - logs.mean(axis=-1, keepdims=True)
        alpha = float(np.sum(dots_c * logs_c) / np.sum(dots_c * dots_c))
        if alpha <= 0:
            return None
        fitted = _finish(dots * alpha, v, None)
        if not (_close(output, fitted[0]) and _close(weights, fitted[1])):
            return None
        divisor, d_head = 1.0 / alpha, q.shape[-1]
        if math.isclose(divisor, math.sqrt(d_head), rel_tol=1e-4):
            return None
        square = divisor * divisor
        as_sqrt = f" (that is sqrt({round(square)}))" if abs(square - round(square)) < 1e-3 * square else ""
        return (
            f"Your scores are divided by {divisor:.4g}{as_sqrt} instead of sqrt(d_head) = "
            f"{_sqrt_text(d_head)}: take d_head from q.shape[-1] rather than typing a number "
            f"(the check uses other shapes than the notebook)."
        )

    return [
        # plain case (0): B=2, H=4, Tq=Tk=5, Dh=3, no mask
        _same_as(
            "outputs_swapped",
            lambda q, k, v, attn_mask: ref(q, k, v, attn_mask)[::-1],
            "You returned (weights, output); return them in the order (output, weights).",
        ),
        _same_as(
            "scaled_by_sqrt_d_model",
            with_divisor(lambda q: math.sqrt(_d_model_of(q))),
            "Your scores are too small by a factor of sqrt({H}) = {H_sqrt}: did you divide by "
            "sqrt(d_model) = sqrt({D}) instead of sqrt(d_head) = sqrt({Dh})? Each head works in its "
            "own d_head = {Dh} dimensions; d_head is q.shape[-1].",
        ),
        _same_as(
            "not_scaled",
            with_divisor(lambda q: 1.0),
            "Your scores are too large by a factor of sqrt({Dh}) = {Dh_sqrt}: did you forget to divide "
            "q @ k^T by sqrt(d_head)? Without it the softmax saturates as d_head grows.",
        ),
        _same_as(
            "divided_by_d_head",
            with_divisor(lambda q: q.shape[-1]),
            "Your scores are too small by a factor of sqrt({Dh}) = {Dh_sqrt}: did you divide by d_head "
            "instead of sqrt(d_head)?",
        ),
        _same_as(
            "scores_transposed",
            lambda q, k, v, attn_mask: _finish(
                np.swapaxes(_scores(q, k, math.sqrt(q.shape[-1])), -1, -2), v, attn_mask
            ),
            "Your scores are transposed (k @ q^T): compute q @ k^T, so that each row is a query and "
            "each column a key.",
        ),
        _predicate("returned_scores", returned_scores),
        _predicate("softmax_wrong_axis", wrong_axis),
        _predicate("weights_not_normalised", not_normalised),
        _same_as(
            "weights_transposed_in_mix",
            lambda q, k, v, attn_mask: (
                np.swapaxes(ref(q, k, v, attn_mask)[1], -1, -2) @ v,  # (..., Tq, Dh) when Tq = Tk
                ref(q, k, v, attn_mask)[1],
            ),
            "Your weights are right, but your output uses them transposed (weights^T @ v): use "
            "weights @ v, so that each query's row of weights averages the value vectors.",
        ),
        _same_as(
            "v_not_mixed",
            lambda q, k, v, attn_mask: (v, ref(q, k, v, attn_mask)[1]),
            "Your weights are right, but your output is v itself: each query's output is the weighted "
            "average of the value vectors, weights @ v.",
        ),
        _same_as(
            "v_not_mixed",
            lambda q, k, v, attn_mask: (ref(q, k, v, attn_mask)[1],) * 2,
            "Your weights are right, but your output is the weights again: mix the value vectors with "
            "them, output = weights @ v.",
        ),
        _same_as(
            "v_not_mixed",
            lambda q, k, v, attn_mask: (ref(q, k, v, attn_mask)[1] @ k, ref(q, k, v, attn_mask)[1]),
            "Your weights are right, but your output mixes the keys (weights @ k): mix the values, "
            "weights @ v.",
        ),
        _same_as(
            "v_not_mixed",
            lambda q, k, v, attn_mask: (ref(q, k, v, attn_mask)[1] @ q, ref(q, k, v, attn_mask)[1]),
            "Your weights are right, but your output mixes the queries (weights @ q): mix the values, "
            "weights @ v.",
        ),
        _predicate("wrong_scale", wrong_scale),
        # masked case (1): the same arrays with a mask that blocks some keys in every row
        _same_as(
            "mask_ignored",
            lambda q, k, v, attn_mask: ref(q, k, v, None),
            "Your function ignores attn_mask: blocked keys still get weight. Where attn_mask is True, "
            "set the score to -inf before the softmax.",
            case=1,
        ),
        _same_as(
            "mask_inverted",
            lambda q, k, v, attn_mask: ref(q, k, v, ~attn_mask),
            "Your mask is inverted: True means blocked (as in torch.nn.MultiheadAttention), so the score "
            "becomes -inf where attn_mask is True, not where it is False.",
            case=1,
        ),
        _same_as(
            "mask_after_softmax",
            lambda q, k, v, attn_mask: _mask_after_softmax(q, k, v, attn_mask),
            "You zeroed the blocked weights after the softmax, so the rows no longer sum to 1: block "
            "the scores (set them to -inf) before the softmax instead.",
            case=1,
        ),
    ]


def _mask_after_softmax(q, k, v, attn_mask):
    weights = attention.softmax(_scores(q, k, math.sqrt(q.shape[-1])), axis=-1)  # (..., Tq, Tk)
    weights = np.where(attn_mask, 0.0, weights)  # (..., Tq, Tk)
    return weights @ v, weights


# split, merge, projection: wrong implementations


def _split_mistakes() -> list[_Mistake]:
    def no_transpose_bhtd(x, n_heads):
        B, T, D = x.shape
        return x.reshape(B, n_heads, T, D // n_heads)  # (B, H, T, Dh), tokens and heads mixed

    def no_transpose_bthd(x, n_heads):
        B, T, D = x.shape
        return x.reshape(B, T, n_heads, D // n_heads)  # (B, T, H, Dh)

    def swapped_then_heads_first(x, n_heads):
        B, T, D = x.shape
        return x.reshape(B, T, D // n_heads, n_heads).transpose(0, 3, 1, 2)  # (B, H, T, Dh), strided

    def swapped(x, n_heads):
        B, T, D = x.shape
        return x.reshape(B, T, D // n_heads, n_heads).transpose(0, 2, 1, 3)  # (B, Dh, T, H)

    def wrong_transpose(x, n_heads):
        B, T, D = x.shape
        return x.reshape(B, T, n_heads, D // n_heads).transpose(0, 2, 3, 1)  # (B, H, Dh, T)

    return [
        _same_as(
            "reshape_without_transpose",
            no_transpose_bhtd,
            "You reshaped (B, T, D) straight to (B, H, T, Dh) without a transpose, so heads and tokens "
            "are mixed up: each of your 'heads' holds pieces of several tokens. Reshape to "
            "(B, T, H, Dh) first, then transpose(0, 2, 1, 3).",
        ),
        _same_as(
            "reshape_without_transpose",
            no_transpose_bthd,
            "Your result has the axes (B, T, H, Dh) = ({B}, {T}, {H}, {Dh}): after the reshape, move the "
            "head axis in front of the tokens with transpose(0, 2, 1, 3) to get (B, H, T, Dh).",
        ),
        _same_as(
            "split_order_swapped",
            swapped_then_heads_first,
            "Each of your heads takes every {H}th feature: you reshaped the features to (Dh, H) instead of "
            "(H, Dh). Reshape to (B, T, H, Dh), so head h gets the neighbouring features h*Dh to "
            "(h+1)*Dh - 1, then transpose(0, 2, 1, 3).",
        ),
        _same_as(
            "split_order_swapped",
            swapped,
            "Your result has the axes (B, Dh, T, H) = ({B}, {Dh}, {T}, {H}): you reshaped to (B, T, Dh, H), "
            "with H and Dh swapped. Reshape to (B, T, H, Dh), then transpose(0, 2, 1, 3).",
        ),
        _same_as(
            "wrong_transpose",
            wrong_transpose,
            "Your result has the axes (B, H, Dh, T) = ({B}, {H}, {Dh}, {T}): the transpose moved the wrong "
            "axes. From (B, T, H, Dh), transpose(0, 2, 1, 3) gives (B, H, T, Dh).",
        ),
    ]


def _merge_mistakes() -> list[_Mistake]:
    def no_transpose(x):
        B, H, T, Dh = x.shape
        return x.reshape(B, T, H * Dh)  # (B, T, D), tokens and heads mixed

    def interleaved(x):
        B, H, T, Dh = x.shape
        return x.transpose(0, 2, 3, 1).reshape(B, T, H * Dh)  # (B, T, D), features in (Dh, H) order

    def no_reshape(x):
        return x.transpose(0, 2, 1, 3)  # (B, T, H, Dh)

    def summed(x):
        return x.sum(axis=1)  # (B, T, Dh)

    return [
        _same_as(
            "reshape_without_transpose",
            no_transpose,
            "You reshaped (B, H, T, Dh) straight to (B, T, D) without a transpose, so heads and tokens "
            "are mixed up: a token's vector holds pieces of other tokens. Apply transpose(0, 2, 1, 3) "
            "to get (B, T, H, Dh) first, then reshape to (B, T, H*Dh).",
        ),
        _same_as(
            "heads_interleaved",
            interleaved,
            "Your heads are interleaved feature by feature: you transposed to (B, T, Dh, H). Transpose to "
            "(B, T, H, Dh) with transpose(0, 2, 1, 3), so each head's Dh features stay together, then "
            "reshape.",
        ),
        _same_as(
            "missing_reshape",
            no_reshape,
            "Your result has the axes (B, T, H, Dh) = ({B}, {T}, {H}, {Dh}): the transpose is right; now "
            "reshape to (B, T, H*Dh) to put the heads side by side.",
        ),
        _same_as(
            "heads_summed",
            summed,
            "You summed the heads, giving (B, T, Dh) = ({B}, {T}, {Dh}): merging concatenates them, so each "
            "token gets H*Dh = {D} features.",
        ),
    ]


def _projection_mistakes() -> list[_Mistake]:
    def concat(head_outputs):
        B, H, T, Dh = head_outputs.shape
        return head_outputs.transpose(0, 2, 1, 3).reshape(B, T, H * Dh)  # (B, T, H*Dh)

    return [
        _same_as(
            "projection_missing",
            lambda head_outputs, w_o, b_o: concat(head_outputs),
            "Your output is the concatenation of the heads: the output projection is missing. "
            "Multiply by w_o and add b_o: output = concat @ w_o + b_o.",
        ),
        _same_as(
            "projection_missing",
            lambda head_outputs, w_o, b_o: concat(head_outputs) + b_o,
            "Your output is the concatenation of the heads plus b_o: multiply by w_o before adding the "
            "bias, output = concat @ w_o + b_o.",
        ),
        _same_as(
            "bias_missing",
            lambda head_outputs, w_o, b_o: concat(head_outputs) @ w_o,
            "Your output lacks the bias: add b_o after multiplying by w_o.",
        ),
        _same_as(
            "bias_added_per_head",
            lambda head_outputs, w_o, b_o: concat(head_outputs) @ w_o + head_outputs.shape[1] * b_o,
            "You added b_o once per head ({H} times): add it once, after the heads are combined.",
        ),
        _same_as(
            "w_o_transposed",
            lambda head_outputs, w_o, b_o: concat(head_outputs) @ w_o.T + b_o,
            "You multiplied by w_o transposed: in this course w_o has shape (H*Dh, D) and acts on the "
            "right, output = concat @ w_o + b_o (torch.nn.Linear stores the transpose).",
        ),
        _same_as(
            "heads_reversed",
            lambda head_outputs, w_o, b_o: concat(head_outputs[:, ::-1]) @ w_o + b_o,
            "Your heads are concatenated in reverse order, so each head meets another head's block of "
            "w_o: head h owns rows h*Dh to (h+1)*Dh - 1 of w_o. Keep the heads in order 0, 1, ..., H-1.",
        ),
        _same_as(
            "heads_summed",
            lambda head_outputs, w_o, b_o: head_outputs.sum(axis=1) @ w_o[: head_outputs.shape[3]] + b_o,
            "You summed the head outputs instead of concatenating them, so every head goes through the "
            "same block of w_o. Concatenate to (B, T, H*Dh) so each head meets its own block of Dh rows.",
        ),
        _same_as(
            "heads_summed",
            lambda head_outputs, w_o, b_o: head_outputs.sum(axis=1),
            "You summed the head outputs, giving (B, T, Dh) = ({B}, {T}, {Dh}): concatenate them to "
            "(B, T, H*Dh), then apply the output projection, concat @ w_o + b_o.",
        ),
        _same_as(
            "merge_without_transpose",
            lambda head_outputs, w_o, b_o: head_outputs.reshape(
                head_outputs.shape[0], head_outputs.shape[2], -1
            )
            @ w_o
            + b_o,
            "You reshaped (B, H, T, Dh) straight to (B, T, D) without a transpose, so tokens and heads are "
            "mixed up before the projection: transpose(0, 2, 1, 3) to (B, T, H, Dh) first, then reshape.",
        ),
    ]


# --- the exercises ------------------------------------------------------------------


def _message_dims(case: _Case) -> dict:
    dims = dict(case.dims)
    for name in ("H", "Dh"):
        if name in dims:
            dims[f"{name}_sqrt"] = f"{math.sqrt(dims[name]):.3g}"
    return dims


def _attention_error_hint(exc: BaseException, source: str) -> str | None:
    text = str(exc)
    if isinstance(exc, IndexError) and "boolean index" in text:
        return (
            "Hint: a (Tq, Tk) mask used as an index picks out the first axes of a (B, H, Tq, Tk) array; "
            "np.where(attn_mask, -np.inf, scores) broadcasts it over B and H."
        )
    if ".T" in source and ("matmul" in text or "shapes" in text or "align" in text):
        return (
            "Hint: on a (B, H, Tk, Dh) array, k.T reverses all four axes; np.swapaxes(k, -1, -2) swaps "
            "only the last two."
        )
    return None


def _reshape_error_hint(exc: BaseException, source: str) -> str | None:
    if "reshape" in str(exc):
        return "Hint: read B, T, H and the other sizes from the array's .shape rather than typing numbers: the check tries several shapes."
    return None


@dataclass(frozen=True)
class _Exercise:
    name: str
    notebook: str
    solution: Callable
    reference: Callable
    positional: tuple
    keyword: tuple
    results: tuple  # names of the results, e.g. ("output", "weights")
    result_dims: tuple  # per result, the dimension names of a full-rank result
    cases: Callable
    mistakes: Callable
    error_hint: Callable = field(default=_reshape_error_hint)

    def call(self, fn, case: _Case):
        args = [case.args[n] for n in self.positional]
        kwargs = {n: case.args[n] for n in self.keyword}
        return fn(*args, **kwargs)


_EXERCISES = {
    ex.name: ex
    for ex in (
        _Exercise(
            name="scaled_dot_product_attention",
            notebook="02",
            solution=solutions.my_attention,
            reference=reference_attention,
            positional=("q", "k", "v"),
            keyword=("attn_mask",),
            results=("output", "weights"),
            result_dims=(("B", "H", "Tq", "Dh"), ("B", "H", "Tq", "Tk")),
            cases=_attention_cases,
            mistakes=_attention_mistakes,
            error_hint=_attention_error_hint,
        ),
        _Exercise(
            name="split_heads",
            notebook="03",
            solution=solutions.my_split_heads,
            reference=attention.split_heads,
            positional=("x", "n_heads"),
            keyword=(),
            results=("result",),
            result_dims=(("B", "H", "T", "Dh"),),
            cases=_split_cases,
            mistakes=_split_mistakes,
        ),
        _Exercise(
            name="merge_heads",
            notebook="03",
            solution=solutions.my_merge_heads,
            reference=attention.merge_heads,
            positional=("x",),
            keyword=(),
            results=("result",),
            result_dims=(("B", "T", "D"),),
            cases=_merge_cases,
            mistakes=_merge_mistakes,
        ),
        _Exercise(
            name="output_projection",
            notebook="04",
            solution=solutions.my_output_projection,
            reference=attention.output_projection,
            positional=("head_outputs", "w_o", "b_o"),
            keyword=(),
            results=("output",),
            result_dims=(("B", "T", "D"),),
            cases=_projection_cases,
            mistakes=_projection_mistakes,
        ),
    )
}

#: The exercise names, in the order of the notebooks.
EXERCISES = tuple(_EXERCISES)


def _exercise(name) -> _Exercise:
    if name not in _EXERCISES:
        raise ValueError(f"name={name!r} is not an exercise; valid names are {', '.join(map(repr, EXERCISES))}")
    return _EXERCISES[name]


# --- stub and solution text ------------------------------------------------------------


def solution_source(name: str) -> str:
    """The solution as a learner's cell would hold it: imports, then the function."""
    ex = _exercise(name)
    source = inspect.getsource(ex.solution)
    return f"{solutions.STUB_IMPORTS[ex.solution.__name__]}\n\n\n{source}"


def _stub_from(source: str) -> str:
    """Replace the code between the markers with the stub's raise; keep the comment lines."""
    lines = source.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == START_MARKER]
    ends = [i for i, line in enumerate(lines) if line.strip() == END_MARKER]
    if len(starts) != 1 or len(ends) != 1 or not starts[0] < ends[0]:
        raise ValueError("a solution needs exactly one start marker followed by one end marker")
    start, end = starts[0], ends[0]
    indent = lines[start][: len(lines[start]) - len(lines[start].lstrip())]
    hints = [line for line in lines[start + 1 : end] if line.strip().startswith("#")]
    body = [lines[start], *hints, indent + STUB_RAISE, lines[end]]
    return "\n".join(lines[:start] + body + lines[end + 1 :]) + "\n"


def stub_source(name: str) -> str:
    """The code a learner's cell starts with: imports, signature, docstring, hints, a raise."""
    return _stub_from(solution_source(name))


def reference(name: str) -> Callable:
    """The function the notebook uses when the learner's has not passed (from mha_core.attention)."""
    return _exercise(name).reference


def _in_ipython() -> bool:
    ipython = sys.modules.get("IPython")
    return ipython is not None and ipython.get_ipython() is not None


def solution(name: str) -> None:
    """Show the solution behind a one-click disclosure (in a notebook), or print it."""
    source = solution_source(name)
    if _in_ipython():
        from IPython.display import HTML, display

        display(
            HTML(
                "<details><summary>Show the solution</summary>"
                f"<pre><code>{html.escape(source)}</code></pre></details>"
            )
        )
    else:
        print(f"Solution for {name}:\n\n{source}")


# --- running the learner's function ------------------------------------------------------


@dataclass
class _Outcome:
    results: tuple | None = None  # float64 arrays, one per result
    exception: BaseException | None = None
    form: tuple | None = None  # (mistake, message) when the returned value has the wrong form
    changed: tuple = ()  # names of the arguments changed in place


def _as_arrays(ex: _Exercise, returned) -> tuple[tuple | None, tuple | None]:
    """Turn the learner's return value into float64 arrays, or say what is wrong with its form."""
    n = len(ex.results)
    if returned is None:
        want = "return " + ", ".join(ex.results) if n > 1 else "end it with a return"
        return None, ("no_return", f"Your function returned None: did you forget the return? ({want})")
    if n > 1:
        if not isinstance(returned, (tuple, list)):
            return None, (
                "wrong_return",
                f"Your function returned one value; return {n} values: return {', '.join(ex.results)}.",
            )
        if len(returned) != n:
            return None, (
                "wrong_return",
                f"Your function returned {len(returned)} values; return {n} values: return {', '.join(ex.results)}.",
            )
        items = tuple(returned)
    else:
        if isinstance(returned, tuple):
            return None, ("wrong_return", f"Your function returned {len(returned)} values; return one array.")
        items = (returned,)
    arrays = []
    for label, item in zip(ex.results, items):
        try:
            arrays.append(np.asarray(item, dtype=np.float64))
        except Exception:
            return None, (
                "wrong_return",
                f"Your {label} is a {type(item).__name__}, not an array of numbers.",
            )
    return tuple(arrays), None


def _run(ex: _Exercise, fn, case: _Case) -> _Outcome:
    """Call the learner's function on copies of the case's arguments; note what it changed."""
    copies = {n: (a.copy() if isinstance(a, np.ndarray) else a) for n, a in case.args.items()}
    given = _Case(copies, case.dims)
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            returned = ex.call(fn, given)
    except Exception as exc:  # the learner's code may raise anything
        return _Outcome(exception=exc)
    changed = tuple(
        n
        for n, a in case.args.items()
        if isinstance(a, np.ndarray)
        and not (copies[n].shape == a.shape and np.array_equal(copies[n], a, equal_nan=True))
    )
    results, form = _as_arrays(ex, returned)
    return _Outcome(results=results, form=form, changed=changed)


def _expected(ex: _Exercise, case: _Case) -> tuple:
    result = ex.call(ex.reference, case)
    return result if isinstance(result, tuple) else (result,)


def _shape_text(names: tuple, shape: tuple) -> str:
    names = names[len(names) - len(shape) :] if len(shape) <= len(names) else names
    return f"({', '.join(names)}) = {tuple(shape)}"


def _source_of(fn) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


class _Verdict(Exception):
    """Carries a finished CheckResult out of the nested checks."""

    def __init__(self, result: CheckResult):
        self.result = result


def _screen(ex: _Exercise, fn, index: int, case: _Case, outcome: _Outcome, expected: tuple, mistakes, n_ok: int):
    """Exceptions, the form and shape of the results, inputs left unchanged: raise a verdict if any fails."""
    name = ex.name
    if outcome.exception is not None:
        exc = outcome.exception
        if isinstance(exc, NotImplementedError) and index == 0:
            raise _Verdict(CheckResult(name, "not_attempted", None, NOT_ATTEMPTED, None, 0))
        hint = ex.error_hint(exc, _source_of(fn))
        message = f"Your function raised {type(exc).__name__}: {exc} (called with {case.label})"
        raise _Verdict(CheckResult(name, "error", None, message, _hint(hint), n_ok))
    if outcome.form is not None:
        mistake, message = outcome.form
        raise _Verdict(CheckResult(name, "mistake", mistake, message, _hint(None), n_ok))
    got = outcome.results
    if any(g.shape != e.shape for g, e in zip(got, expected)):
        for m in mistakes:
            if m.case == index:
                message = _detect(m, case, got, expected)
                if message:
                    raise _Verdict(CheckResult(name, "mistake", m.name, message, _hint(None), n_ok))
        for label, dims, g, e in zip(ex.results, ex.result_dims, got, expected):
            if g.shape != e.shape:
                message = (
                    f"Your {label} has shape {tuple(g.shape)}; expected {_shape_text(dims, e.shape)} "
                    f"(called with {case.label})"
                )
                raise _Verdict(CheckResult(name, "wrong", "wrong_shape", message, _hint(None), n_ok))
    if outcome.changed:
        which = " and ".join(outcome.changed)
        message = (
            f"Your function changed its input {which} in place, so the caller's array is different after "
            f"the call. Compute new arrays instead: write x = x / 2, not x /= 2 or x[...] = ..."
        )
        raise _Verdict(CheckResult(name, "mistake", "changed_input", message, _hint(None), n_ok))


def _detect(m: _Mistake, case: _Case, got: tuple, expected: tuple) -> str | None:
    dims_case = _Case(case.args, _message_dims(case))
    try:
        return m.detect(dims_case, got, expected)
    except Exception:  # a detector that does not apply to this result
        return None


def _hint(specific: str | None) -> str:
    return f"{specific} {CARRY_ON}" if specific else CARRY_ON


def _compare(ex: _Exercise, case: _Case, got: tuple, expected: tuple) -> str | None:
    """None when the results agree with the reference; else where and by how much they differ."""
    for label, g, e in zip(ex.results, got, expected):
        if _close(g, e):
            continue
        if np.isnan(g).any() and not np.isnan(e).any():
            return f"Your {label} contains NaN where the reference has numbers (called with {case.label})"
        with np.errstate(invalid="ignore"):
            diff = np.abs(g - e)
        diff = np.where(np.isnan(diff), np.inf, diff)
        worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
        return (
            f"Your {label} differs from the reference by up to {float(diff[worst]):.3g} "
            f"(at index {tuple(int(i) for i in worst)}; called with {case.label})"
        )
    return None


def _blocked_row_note(ex: _Exercise, fn) -> str | None:
    """After a pass: say if a fully blocked query row gives something other than the reference's zeros."""
    if ex.name != "scaled_dot_product_attention":
        return None
    case = ex.cases()[1]
    mask = case.args["attn_mask"].copy()
    mask[0] = True  # query 0 may look at no key
    probe = _Case({**case.args, "attn_mask": mask}, case.dims)
    outcome = _run(ex, fn, probe)
    if outcome.results is not None and all(_close(g, e) for g, e in zip(outcome.results, _expected(ex, probe))):
        return None
    return (
        "Note: when every key of a query is blocked, the reference gives that query zero weights and a "
        "zero output; yours gives something else (often NaN). softmax from mha_core handles that row."
    )


def _evaluate(ex: _Exercise, fn) -> CheckResult:
    if not callable(fn):
        message = (
            f"check expects your function (for example {ex.solution.__name__}); got {type(fn).__name__} {fn!r:.60}"
        )
        return CheckResult(ex.name, "error", None, message, _hint(None), 0)
    cases = ex.cases()
    mistakes = ex.mistakes()
    expected = [_expected(ex, c) for c in cases]
    outcomes: dict[int, _Outcome] = {}

    def outcome(i: int, n_ok: int) -> _Outcome:
        if i not in outcomes:
            outcomes[i] = _run(ex, fn, cases[i])
            _screen(ex, fn, i, cases[i], outcomes[i], expected[i], mistakes, n_ok)
        return outcomes[i]

    try:
        # 1-3: exceptions, shapes and unchanged inputs on the first case
        outcome(0, 0)
        # 4: each known mistake by name, in catalogue order
        for m in mistakes:
            got = outcome(m.case, 0).results
            if _close_all(got, expected[m.case]):
                continue
            message = _detect(m, cases[m.case], got, expected[m.case])
            if message:
                return CheckResult(ex.name, "mistake", m.name, message, _hint(None), 0)
        # 5: the general comparison on every case
        for i, case in enumerate(cases):
            problem = _compare(ex, case, outcome(i, i).results, expected[i])
            if problem:
                return CheckResult(ex.name, "wrong", None, problem, _hint(None), i)
    except _Verdict as verdict:
        return verdict.result
    n = len(cases)
    message = f"passed on {n} shapes. From here on the notebook uses your function."
    return CheckResult(ex.name, "passed", None, message, _blocked_row_note(ex, fn), n)


def _close_all(got: tuple, expected: tuple) -> bool:
    return all(_close(g, e) for g, e in zip(got, expected))


# --- the public checks ---------------------------------------------------------------


def evaluate(name: str, fn) -> CheckResult:
    """Check ``fn`` against exercise ``name`` and return the verdict; never raises for anything ``fn`` does.

    An unknown ``name`` raises ``ValueError`` listing the valid names.
    """
    ex = _exercise(name)
    try:
        return _evaluate(ex, fn)
    except Exception as exc:  # a fault in the checker itself must not stop the notebook
        message = f"the check itself failed ({type(exc).__name__}: {exc}); please report it"
        return CheckResult(name, "error", None, message, _hint(None), 0)


def check(name: str, fn) -> Callable:
    """Check the learner's ``fn``, print the verdict, and return the function to use from now on.

    Returns ``fn`` when it passed, otherwise the reference (``reference(name)``), so the
    rest of the notebook runs either way.
    """
    result = evaluate(name, fn)
    print("\n".join(result.lines()))
    return fn if result.passed else _exercise(name).reference
