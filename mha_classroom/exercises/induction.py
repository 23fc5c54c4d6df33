"""The heads-across-layers notebook's exercise, induction_score: its cases and its mistakes.

The classic mistakes, each named: the key one off (the earlier copy itself, or one past
the token after it), the wrong diagonal (keys after their query, where a causal
pattern is 0), counting the first repeat (the whole diagonal, which starts in the first
copy, as ``np.diagonal`` gives it), a sum where a mean belongs, and a batch axis left in.
"""

from __future__ import annotations

import functools

import numpy as np

from mha_core import circuits, solutions

from ._tables import Case, Exercise, Mistake

#: (B, H, prefix, L) for the cases; the first is the one the mistakes are named on.
LAYOUTS = [(2, 3, 1, 5), (1, 2, 0, 4), (3, 1, 2, 3), (2, 4, 1, 12), (1, 2, 3, 2), (2, 2, 1, 7)]


def causal_weights(rng: np.random.Generator, B: int, H: int, T: int) -> np.ndarray:
    """Random causal attention weights: a softmax of random scores over the keys up to each query.

    Shapes:
        returns: (B, H, T, T), rows sum to 1, zero above the diagonal
    """
    scores = rng.normal(scale=2.0, size=(B, H, T, T))  # (B, H, Tq, Tk)
    scores = np.where(np.tril(np.ones((T, T), dtype=bool)), scores, -np.inf)  # (B, H, Tq, Tk)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)  # (B, H, T, T)


@functools.cache
def cases() -> list[Case]:
    rng = np.random.default_rng(2022)
    out = []
    for B, H, prefix, L in LAYOUTS:
        T = prefix + 2 * L
        out.append(Case({"weights": causal_weights(rng, B, H, T), "repeat_length": L},
                        dict(B=B, H=H, T=T, L=L, Lm1=L - 1, first=T - L)))
    return out


def _stripe(weights, repeat_length, shift=1):
    """The weights from the second copy's queries on key t - L + shift. Shapes: (B, H, L)."""
    T = weights.shape[-1]
    queries = np.arange(T - repeat_length, T)  # (L,)
    return weights[:, :, queries, queries - repeat_length + shift]  # (B, H, L)


def _all_zero(case: Case, got: tuple):
    """Scores of 0 for every head where the right ones are not: keys after the query."""
    return {} if np.allclose(got[0], 0.0, atol=1e-12) else None


MISTAKES = (
    Mistake(
        "kept_batch_axis",
        lambda weights, repeat_length: _stripe(weights, repeat_length).mean(axis=2),  # (B, H)
        "Your scores have shape (B, H) = ({B}, {H}): you averaged over the queries only. Average over "
        "the batch too (axis 0), so each head gets one score: shape (H,).",
    ),
    Mistake(
        "offset_by_one",
        lambda weights, repeat_length: _stripe(weights, repeat_length, shift=0).mean(axis=(0, 2)),
        "Your scores measure the weight on the earlier copy of each query's own token, key t - {L}. "
        "An induction head looks one step further, at key t - {L} + 1: the token that came after the "
        "earlier copy, which is the token to predict.",
    ),
    Mistake(
        "offset_by_one",
        lambda weights, repeat_length: _stripe(weights, repeat_length, shift=2).mean(axis=(0, 2)),
        "Your scores measure key t - {L} + 2, one step past the token after the earlier copy. The "
        "induction key is t - {L} + 1: the earlier copy of the query's token is at t - {L}, and the "
        "token that followed it one step later.",
    ),
    Mistake(
        "counted_first_repeat",
        lambda weights, repeat_length: np.diagonal(weights, offset=-(repeat_length - 1), axis1=-2, axis2=-1).mean(
            axis=(0, -1)),
        "Your average counts queries before the second copy: the whole diagonal key = query - {Lm1} "
        "starts at query {Lm1}, inside the first copy, where a token has no earlier copy to look back "
        "to. Average only over the queries of the second copy, the last {L} positions ({first} to "
        "T - 1 here).",
    ),
    Mistake(
        "summed_not_averaged",
        lambda weights, repeat_length: _stripe(weights, repeat_length).sum(axis=2).mean(axis=0),
        "Your scores are {L} times too large: you summed each head's weights over the {L} queries. "
        "The score is a share of the weight, between 0 and 1: average over the queries.",
    ),
    Mistake(
        "wrong_diagonal",
        lambda weights, repeat_length: np.diagonal(weights, offset=repeat_length - 1, axis1=-2, axis2=-1).mean(
            axis=(0, -1)),
        "Your scores are 0 for every head: you read keys after their query (the diagonal above the "
        "main one, or query and key swapped), where a causal pattern is 0. In weights[b, h, query, key] "
        "the induction key comes before the query: key = query - {L} + 1 (np.diagonal with "
        "offset=-({L} - 1), axis1=-2, axis2=-1).",
        seen=_all_zero,
    ),
)

EXERCISE = Exercise(
    name="induction_score",
    notebook="09",
    solution=solutions.my_induction_score,
    reference=circuits.induction_score,
    positional=("weights", "repeat_length"),
    keyword=(),
    results=("scores",),
    result_dims=(("H",),),
    cases=cases,
    mistakes=MISTAKES,
)
