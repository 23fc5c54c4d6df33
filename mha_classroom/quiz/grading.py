"""Grading an answer, and the one order and letters a question's options are shown in.

Every place that shows a question (the notebook, classroom mode, the terminal, the
answer key, the handouts) takes its order from ``option_order`` and its letters from
``option_labels``, and grades with ``grade_choice`` / ``grade_numeric``: so "the answer
is b" means one option to a whole room, and every front end gives the same feedback.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from typing import Sequence

from .bank import LETTERS, Question
from .numbers import format_number


#: Seeds the one option order of the course (it was classroom mode's order, so an instructor's
#: notes from before keep their letters).
OPTION_ORDER_SEED = "classroom"


def option_order(question: Question) -> list[int]:
    """The one order a question's options are shown in, everywhere: the notebook, classroom
    mode, the terminal, the answer key and the handouts.

    So "the answer is b" means the same option to everyone in a room, whichever of them
    they use. The order is shuffled once from the question's id (the bank's tests check
    that the right answer lands in every position), so the order the data was written in
    gives nothing away. An empty list for a numeric question.
    """
    if question.kind == "numeric":
        return []
    return shuffled_order(question, OPTION_ORDER_SEED)


def shuffled_order(question: Question, seed: str) -> list[int]:
    """A permutation of a question's options, fixed for one seed and question.

    Uses a hash, not Python's ``hash()``, which changes between processes. The course
    shows every question in ``option_order``; other seeds are for tests.
    """
    digest = hashlib.sha256(f"{seed}:{question.id}".encode()).digest()
    order = list(range(len(question.options)))
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return order


@dataclass(frozen=True)
class Verdict:
    """The result of one answer: right or not, a headline, and one line per option that matters."""

    correct: bool
    headline: str
    details: tuple[str, ...] = field(default_factory=tuple)

    def text(self) -> str:
        return "\n".join((self.headline,) + self.details)


def _without_yes(feedback: str) -> str:
    """'Yes. The softmax ...' -> 'the softmax ...': a right option's feedback, inside a sentence."""
    rest = re.sub(r"^Yes[.,:!]?\s+", "", feedback)
    if rest == feedback or not rest:
        return feedback
    return rest[0].lower() + rest[1:] if rest[:2] != rest[:2].upper() else rest


def option_labels(order: Sequence[int]) -> dict[int, str]:
    """Data index -> the letter it is shown under, for a display order."""
    return {i: f"{LETTERS[pos]})" for pos, i in enumerate(order)}


def answer_letters(question: Question) -> str:
    """The right options' letters as every place shows them ("b", or "a, c"); "" for a numeric question."""
    order = option_order(question)
    labels = option_labels(order)
    return ", ".join(labels[i].rstrip(")") for i in order if question.options[i].correct)


def grade_choice(question: Question, chosen: Sequence[int], order: Sequence[int] | None = None, *,
                 show_missed: bool = True) -> Verdict:
    """Grade chosen options, given as indices in the data's order.

    ``order`` is the display order (``option_order``); it sets the letters and
    the order of the lines. Single choice: the chosen option's feedback. Select-all:
    feedback on every option chosen and, if ``show_missed``, on every correct option
    missed. With ``show_missed=False`` (a first try) a wrong answer gets feedback on what
    was ticked and a count of what is missing, not the key.
    """
    order = list(order) if order is not None else list(range(len(question.options)))
    labels = option_labels(order)
    chosen_set = set(chosen)
    if not chosen_set <= set(range(len(question.options))):
        raise ValueError(f"chosen={sorted(chosen_set)} names options outside 0..{len(question.options) - 1}")
    correct_set = set(question.correct_indices)
    if question.kind == "single":
        if len(chosen_set) != 1:
            raise ValueError(f"a single-choice answer is one option, got chosen={sorted(chosen_set)}")
        (i,) = chosen_set
        option = question.options[i]
        headline = "Correct." if option.correct else "Not quite."
        return Verdict(option.correct, headline, (f"{labels[i]} {option.feedback}",))
    right = chosen_set == correct_set
    details = []
    for i in order:
        option = question.options[i]
        if i in chosen_set and option.correct:
            details.append(f"✓ {labels[i]} right to choose: {_without_yes(option.feedback)}")
        elif i in chosen_set:
            details.append(f"✗ {labels[i]} should not be chosen: {option.feedback}")
        elif option.correct and show_missed:
            details.append(f"✗ {labels[i]} missed, it is right too: {_without_yes(option.feedback)}")
    if right:
        headline = f"Correct: all {len(correct_set)} right options, and no others."
    else:
        wrong = len(chosen_set - correct_set)
        missed = len(correct_set - chosen_set)
        if show_missed:
            parts = ([f"{wrong} chosen that should not be"] if wrong else []) + ([f"{missed} missed"] if missed else [])
        else:
            parts = ([f"{wrong} chosen that should not be"] if wrong else []) + (
                [f"{missed} right option{'s' if missed != 1 else ''} not chosen yet"] if missed else [])
        headline = "Not quite: " + ", ".join(parts) + "."
        if not show_missed:
            headline += " Change your choice and check again."
    return Verdict(right, headline, tuple(details))


def grade_numeric(question: Question, value: float) -> Verdict:
    """Grade a number: within tolerance, a known misconception, or a general hint."""
    if abs(value - question.answer) <= question.tolerance:
        return Verdict(True, f"Correct: {question.answer_text()}.", (question.feedback,))
    for m in question.misconceptions:
        tolerance = question.tolerance if m.tolerance is None else m.tolerance
        if abs(value - m.value) <= max(tolerance, 1e-9 * abs(m.value)):
            return Verdict(False, f"Not quite: {format_number(value)}.", (m.feedback,))
    return Verdict(False, f"Not quite: {format_number(value)}.", (question.wrong_feedback,))
