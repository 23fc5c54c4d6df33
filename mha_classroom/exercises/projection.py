"""Notebook 04's exercise, output_projection: its cases and its mistakes.

A wrong concatenation before w_o is notebook 03's merge mistake; those rows come from
``heads.CONCATENATIONS``, followed by the right projection.
"""

from __future__ import annotations

import functools

import numpy as np

from mha_core import attention, solutions

from ._tables import Case, Exercise, Mistake, Raised
from .heads import CONCATENATIONS, HEAD_LAYOUTS, dims


@functools.cache
def cases() -> list[Case]:
    rng = np.random.default_rng(2027)
    out = []
    for B, T, H, Dh in HEAD_LAYOUTS:
        D = H * Dh
        args = {
            "head_outputs": rng.normal(size=(B, H, T, Dh)),  # (B, H, T, Dh)
            "w_o": rng.normal(size=(D, D)),  # (H*Dh, D)
            "b_o": rng.normal(size=(D,)),  # (D,)
        }
        out.append(Case(args, dims(B, T, H, Dh)))
    return out


def _concat(head_outputs):
    return attention.merge_heads(head_outputs)  # (B, T, H*Dh)


def _projected(merge_mistake: Mistake) -> Mistake:
    """A merge mistake followed by the right projection."""
    return Mistake(
        merge_mistake.name,
        lambda head_outputs, w_o, b_o: merge_mistake.planted(head_outputs) @ w_o + b_o,
        f"Your concatenation before w_o is wrong. {merge_mistake.message}",
    )


MISTAKES = (
    Mistake(
        "projection_missing",
        lambda head_outputs, w_o, b_o: _concat(head_outputs),
        "Your output is the concatenation of the heads: the output projection is missing. "
        "Multiply by w_o and add b_o: output = concat @ w_o + b_o.",
    ),
    Mistake(
        "projection_missing",
        lambda head_outputs, w_o, b_o: _concat(head_outputs) + b_o,
        "Your output is the concatenation of the heads plus b_o: multiply by w_o before adding the "
        "bias, output = concat @ w_o + b_o.",
    ),
    Mistake(
        "bias_missing",
        lambda head_outputs, w_o, b_o: _concat(head_outputs) @ w_o,
        "Your output lacks the bias: add b_o after multiplying by w_o.",
    ),
    Mistake(
        "bias_added_per_head",
        lambda head_outputs, w_o, b_o: _concat(head_outputs) @ w_o + head_outputs.shape[1] * b_o,
        "You added b_o once per head ({H} times): add it once, after the heads are combined.",
    ),
    Mistake(
        "w_o_transposed",
        lambda head_outputs, w_o, b_o: _concat(head_outputs) @ w_o.T + b_o,
        "You multiplied by w_o transposed: in this course w_o has shape (H*Dh, D) and acts on the "
        "right, output = concat @ w_o + b_o (torch.nn.Linear stores the transpose).",
    ),
    Mistake(
        "heads_reversed",
        lambda head_outputs, w_o, b_o: _concat(head_outputs[:, ::-1]) @ w_o + b_o,
        "Your heads are concatenated in reverse order, so each head meets another head's block of "
        "w_o: head h owns rows h*Dh to (h+1)*Dh - 1 of w_o. Keep the heads in order 0, 1, ..., H-1.",
    ),
    Mistake(
        "heads_summed",
        lambda head_outputs, w_o, b_o: head_outputs.sum(axis=1) @ w_o[: head_outputs.shape[3]] + b_o,
        "You summed the head outputs instead of concatenating them, so every head goes through the "
        "same block of w_o. Concatenate to (B, T, H*Dh) so each head meets its own block of Dh rows.",
    ),
    Mistake(
        "heads_summed",
        lambda head_outputs, w_o, b_o: head_outputs.sum(axis=1),  # (B, T, Dh)
        "You summed the head outputs, giving (B, T, Dh) = ({B}, {T}, {Dh}): concatenate them to "
        "(B, T, H*Dh), then apply the output projection, concat @ w_o + b_o.",
    ),
    *(_projected(m) for m in CONCATENATIONS),
)

RAISED = (
    Raised(
        "not_concatenated",
        r"matmul: .*core dimension",
        "The product with w_o does not line up: w_o has shape (H*Dh, D) = ({D}, {D}) and multiplies the "
        "concatenated heads, (B, T, H*Dh), from the right. Concatenate head_outputs (B, H, T, Dh) first, "
        "then output = concat @ w_o + b_o.",
        planted=lambda head_outputs, w_o, b_o: head_outputs @ w_o + b_o,
    ),
)

EXERCISE = Exercise(
    name="output_projection",
    notebook="04",
    solution=solutions.my_output_projection,
    reference=attention.output_projection,
    positional=("head_outputs", "w_o", "b_o"),
    keyword=(),
    results=("output",),
    result_dims=(("B", "T", "D"),),
    cases=cases,
    mistakes=MISTAKES,
    raised=RAISED,
)
