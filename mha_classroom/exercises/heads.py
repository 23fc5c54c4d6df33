"""Notebook 03's exercises, split_heads and merge_heads: their cases and their mistakes.

``CONCATENATIONS`` (the merge mistakes that keep the (B, T, D) shape) also serve
notebook 04: a wrong concatenation before w_o is the same mistake.
"""

from __future__ import annotations

import functools

import numpy as np

from mha_core import attention, solutions

from ._tables import Case, Exercise, Mistake

#: (B, T, H, Dh) layouts for the cases of notebooks 03 and 04; the first is the one the
#: mistakes are named on (T, H and Dh all differ, so each mix-up shows).
HEAD_LAYOUTS = [(2, 5, 4, 3), (1, 6, 2, 4), (3, 4, 3, 2), (2, 3, 8, 1), (1, 6, 1, 8), (1, 2, 4, 4)]


def dims(B, T, H, Dh) -> dict:
    return dict(B=B, T=T, H=H, Dh=Dh, D=H * Dh)


@functools.cache
def split_cases() -> list[Case]:
    rng = np.random.default_rng(2025)
    return [
        Case({"x": rng.normal(size=(B, T, H * Dh)), "n_heads": H}, dims(B, T, H, Dh)) for B, T, H, Dh in HEAD_LAYOUTS
    ]


@functools.cache
def merge_cases() -> list[Case]:
    rng = np.random.default_rng(2026)
    return [Case({"x": rng.normal(size=(B, H, T, Dh))}, dims(B, T, H, Dh)) for B, T, H, Dh in HEAD_LAYOUTS]


# --- split_heads ------------------------------------------------------------------------


def _cut(x, n_heads, order="H, Dh"):
    """The split's reshape: the last axis into (H, Dh), or the wrong way round, (Dh, H)."""
    B, T, D = x.shape
    if order == "H, Dh":
        return x.reshape(B, T, n_heads, D // n_heads)  # (B, T, H, Dh)
    return x.reshape(B, T, D // n_heads, n_heads)  # (B, T, Dh, H)


SPLIT_MISTAKES = (
    Mistake(
        "reshape_without_transpose",
        lambda x, n_heads: x.reshape(x.shape[0], n_heads, x.shape[1], -1),  # (B, H, T, Dh), tokens and heads mixed
        "You reshaped (B, T, D) straight to (B, H, T, Dh) without a transpose, so heads and tokens "
        "are mixed up: each of your 'heads' holds pieces of several tokens. Reshape to "
        "(B, T, H, Dh) first, then transpose(0, 2, 1, 3).",
    ),
    Mistake(
        "reshape_without_transpose",
        _cut,
        "Your result has the axes (B, T, H, Dh) = ({B}, {T}, {H}, {Dh}): after the reshape, move the "
        "head axis in front of the tokens with transpose(0, 2, 1, 3) to get (B, H, T, Dh).",
    ),
    Mistake(
        "split_order_swapped",
        lambda x, n_heads: _cut(x, n_heads, "Dh, H").transpose(0, 3, 1, 2),  # (B, H, T, Dh), strided
        "Each of your heads takes every {H}th feature: you reshaped the features to (Dh, H) instead of "
        "(H, Dh). Reshape to (B, T, H, Dh), so head h gets the neighbouring features h*Dh to "
        "(h+1)*Dh - 1, then transpose(0, 2, 1, 3).",
    ),
    Mistake(
        "split_order_swapped",
        lambda x, n_heads: _cut(x, n_heads, "Dh, H").transpose(0, 2, 1, 3),  # (B, Dh, T, H)
        "Your result has the axes (B, Dh, T, H) = ({B}, {Dh}, {T}, {H}): you reshaped to (B, T, Dh, H), "
        "with H and Dh swapped. Reshape to (B, T, H, Dh), then transpose(0, 2, 1, 3).",
    ),
    Mistake(
        "wrong_transpose",
        lambda x, n_heads: _cut(x, n_heads).transpose(0, 2, 3, 1),  # (B, H, Dh, T)
        "Your result has the axes (B, H, Dh, T) = ({B}, {H}, {Dh}, {T}): the transpose moved the wrong "
        "axes. From (B, T, H, Dh), transpose(0, 2, 1, 3) gives (B, H, T, Dh).",
    ),
    Mistake(
        "transposed_all_axes",
        lambda x, n_heads: _cut(x, n_heads).T,  # (Dh, H, T, B)
        "Your result has the axes (Dh, H, T, B) = ({Dh}, {H}, {T}, {B}): .T reverses all four axes. "
        "Swap only the tokens and the heads: transpose(0, 2, 1, 3) gives (B, H, T, Dh).",
    ),
    Mistake(
        "swapped_last_two_axes",
        lambda x, n_heads: _cut(x, n_heads).transpose(0, 1, 3, 2),  # (B, T, Dh, H)
        "Your result has the axes (B, T, Dh, H) = ({B}, {T}, {Dh}, {H}): transpose(0, 1, 3, 2) swaps the "
        "last two axes (PyTorch's habit transpose(-1, -2)). Splitting swaps the tokens and the heads: "
        "transpose(0, 2, 1, 3) gives (B, H, T, Dh).",
    ),
)

# --- merge_heads --------------------------------------------------------------------------


def _merged(x, axes):
    """Transpose (B, H, T, Dh) by ``axes`` (None: not at all), then reshape to (B, T, H*Dh)."""
    B, H, T, Dh = x.shape
    moved = x if axes is None else x.transpose(axes)  # the axes in the order ``axes`` gives
    return moved.reshape(B, T, H * Dh)  # (B, T, D)


#: Merges of the right (B, T, D) shape and the wrong order; notebook 04 reuses them.
CONCATENATIONS = (
    Mistake(
        "reshape_without_transpose",
        lambda x: _merged(x, None),  # (B, T, D), tokens and heads mixed
        "You reshaped (B, H, T, Dh) straight to (B, T, D) without a transpose, so heads and tokens "
        "are mixed up: a token's vector holds pieces of other tokens. Apply transpose(0, 2, 1, 3) "
        "to get (B, T, H, Dh) first, then reshape to (B, T, H*Dh).",
    ),
    Mistake(
        "heads_interleaved",
        lambda x: _merged(x, (0, 2, 3, 1)),  # (B, T, D), features in (Dh, H) order
        "Your heads are interleaved feature by feature: you transposed to (B, T, Dh, H). Transpose to "
        "(B, T, H, Dh) with transpose(0, 2, 1, 3), so each head's Dh features stay together, then "
        "reshape.",
    ),
    Mistake(
        "transposed_all_axes",
        lambda x: _merged(x, (3, 2, 1, 0)),  # .T: (Dh, T, H, B), then (B, T, D)
        "You reversed all four axes with .T, (B, H, T, Dh) to (Dh, T, H, B), so the reshape mixes "
        "batches, tokens and heads. Swap only the heads and the tokens: transpose(0, 2, 1, 3), then "
        "reshape to (B, T, H*Dh).",
    ),
    Mistake(
        "swapped_last_two_axes",
        lambda x: _merged(x, (0, 1, 3, 2)),  # (B, H, Dh, T), then (B, T, D)
        "You swapped the last two axes with transpose(0, 1, 3, 2) (PyTorch's habit transpose(-1, -2)), "
        "giving (B, H, Dh, T); merging swaps the heads and the tokens: transpose(0, 2, 1, 3) to "
        "(B, T, H, Dh), then reshape to (B, T, H*Dh).",
    ),
)

MERGE_MISTAKES = (
    *CONCATENATIONS,
    Mistake(
        "heads_reversed",
        lambda x: _merged(x[:, ::-1], (0, 2, 1, 3)),  # (B, T, D), head H first, head 1 last
        "Your heads are merged in reverse order: each token's vector starts with head {H}'s {Dh} features "
        "and ends with head 1's. The head axis was flipped (x[:, ::-1] or np.flip(x, axis=1)); keep the "
        "heads in order 1 to {H}: transpose(0, 2, 1, 3), then reshape to (B, T, H*Dh).",
    ),
    Mistake(
        "missing_reshape",
        lambda x: x.transpose(0, 2, 1, 3),  # (B, T, H, Dh)
        "Your result has the axes (B, T, H, Dh) = ({B}, {T}, {H}, {Dh}): the transpose is right; now "
        "reshape to (B, T, H*Dh) to put the heads side by side.",
    ),
    Mistake(
        "heads_summed",
        lambda x: x.sum(axis=1),  # (B, T, Dh)
        "You summed the heads, giving (B, T, Dh) = ({B}, {T}, {Dh}): merging concatenates them, so each "
        "token gets H*Dh = {D} features.",
    ),
)

SPLIT = Exercise(
    name="split_heads",
    notebook="03",
    solution=solutions.my_split_heads,
    reference=attention.split_heads,
    positional=("x", "n_heads"),
    keyword=(),
    results=("result",),
    result_dims=(("B", "H", "T", "Dh"),),
    cases=split_cases,
    mistakes=SPLIT_MISTAKES,
)

MERGE = Exercise(
    name="merge_heads",
    notebook="03",
    solution=solutions.my_merge_heads,
    reference=attention.merge_heads,
    positional=("x",),
    keyword=(),
    results=("result",),
    result_dims=(("B", "T", "D"),),
    cases=merge_cases,
    mistakes=MERGE_MISTAKES,
)
