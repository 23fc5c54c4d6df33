"""The question bank: plain JSON, loaded and checked, and the rules for grading an answer.

One file per set under ``data/quizzes/``: ``00.json`` (a practice set for the welcome
notebook), ``01.json`` ... ``09.json`` (one per notebook) and ``10.json`` (the review,
which lists questions from the other sets under ``include`` and adds a few of its own).

A set file::

    {"set": "03", "title": "Multiple heads", "include": [],      # include: review only
     "questions": [ <question>, ... ]}

A question::

    {"id": "03-what-is-a-head",          # unique across the bank, starts with its set
     "kind": "single" | "multi" | "numeric",
     "text": "...",                       # `backticks` mark code
     "explanation": "...",                # shown by Reveal answer and --answers
     # single / multi:
     "options": [{"text": "...", "correct": true, "feedback": "why it is right"},
                 {"text": "...", "correct": false, "feedback": "which misconception"}],
     # numeric:
     "answer": 64, "tolerance": 0, "unit": "",
     "feedback": "why 64 is right", "wrong_feedback": "a hint for any other number",
     "misconceptions": [{"value": 9216, "feedback": "you multiplied"}],
     "computed_by": {"function": "d_head", "kwargs": {...}}}   # how the tests recompute it

``single`` has exactly one correct option, ``multi`` (select all that apply) at least
one. Nothing here imports ipywidgets: the terminal runner uses this module too.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

#: The sets, in course order. "00" is practice; "10" is the review.
SET_IDS: tuple[str, ...] = tuple(f"{n:02d}" for n in range(11))
#: The sets that count towards the course score (the notebooks and the review).
COURSE_SET_IDS: tuple[str, ...] = SET_IDS[1:]
REVIEW_SET_ID = "10"
KINDS = ("single", "multi", "numeric")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


class BankError(ValueError):
    """The bank's data breaks its schema; the message names the file, the question and the rule."""


# --------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Option:
    text: str
    correct: bool
    feedback: str


@dataclass(frozen=True)
class Misconception:
    """A wrong number a learner is likely to give, with feedback naming the mistake."""

    value: float
    feedback: str
    tolerance: float | None = None  # None: the question's tolerance


@dataclass(frozen=True)
class Question:
    id: str
    set_id: str
    kind: str
    text: str
    explanation: str
    options: tuple[Option, ...] = ()
    answer: float | None = None
    tolerance: float = 0.0
    unit: str = ""
    feedback: str = ""
    wrong_feedback: str = ""
    misconceptions: tuple[Misconception, ...] = ()
    computed_by: dict | None = None

    @property
    def correct_indices(self) -> tuple[int, ...]:
        """Positions (in the data's order) of the correct options."""
        return tuple(i for i, o in enumerate(self.options) if o.correct)

    def answer_text(self) -> str:
        """The correct answer in words, in the data's order (for keys and reveals)."""
        if self.kind == "numeric":
            return format_number(self.answer) + (f" {self.unit}" if self.unit else "")
        return "; ".join(self.options[i].text for i in self.correct_indices)


@dataclass(frozen=True)
class QuizSet:
    id: str
    title: str
    questions: tuple[Question, ...]
    include: tuple[str, ...] = ()

    @property
    def question_ids(self) -> tuple[str, ...]:
        return tuple(q.id for q in self.questions)


@dataclass(frozen=True)
class Bank:
    """Every set, with the review's included questions resolved."""

    sets: dict[str, QuizSet]
    directory: Path | None = None

    def questions(self, set_id: str) -> tuple[Question, ...]:
        """The questions a set shows: for the review, its included questions, then its own."""
        quiz_set = self.get_set(set_id)
        included = tuple(self.question(qid) for qid in quiz_set.include)
        return included + quiz_set.questions

    def get_set(self, set_id: str) -> QuizSet:
        set_id = normalise_set_id(set_id, self.sets)
        return self.sets[set_id]

    def question(self, question_id: str) -> Question:
        for quiz_set in self.sets.values():
            for q in quiz_set.questions:
                if q.id == question_id:
                    return q
        raise KeyError(f"question_id={question_id!r} is not in the bank")

    def all_questions(self) -> tuple[Question, ...]:
        """Every question once, in course order."""
        return tuple(q for set_id in sorted(self.sets) for q in self.sets[set_id].questions)

    def course_questions(self) -> tuple[Question, ...]:
        """The questions that make up the course score: sets 01-10, each once (practice left out)."""
        return tuple(q for set_id in COURSE_SET_IDS if set_id in self.sets for q in self.sets[set_id].questions)


def normalise_set_id(set_id: Any, valid: Sequence[str] = SET_IDS) -> str:
    """'3', 3, '03' -> '03'; anything else raises a ValueError listing the valid ids."""
    text = str(set_id).strip()
    if text.isdigit():
        text = f"{int(text):02d}"
    if text not in valid:
        raise ValueError(f"set_id={set_id!r} is not a quiz; valid quizzes are {', '.join(sorted(valid))}")
    return text


# --------------------------------------------------------------------------- where the data lives


def quizzes_dir() -> Path:
    """The folder holding the bank's JSON files, installed or in a checkout.

    An installed wheel carries the top-level ``data/`` folder as the package
    ``mha_core.data`` (see pyproject.toml). A checkout (and the editable install, where
    ``mha_core.data`` does not import as a namespace package) has it next to the
    ``mha_core`` folder.
    """
    candidates: list[Path] = []
    try:
        from importlib.resources import files

        candidates.append(Path(str(files("mha_core.data") / "quizzes")))
    except (ImportError, TypeError, ValueError, AttributeError):
        pass
    import mha_core

    package_dir = Path(mha_core.__file__).resolve().parent
    candidates += [package_dir / "data" / "quizzes", package_dir.parent / "data" / "quizzes"]
    for candidate in candidates:
        if (candidate / "01.json").is_file():
            return candidate
    raise FileNotFoundError("the quiz bank was not found; looked in " + ", ".join(str(c) for c in candidates))


# --------------------------------------------------------------------------- loading and validation


def _require_text(value: Any, where: str, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise BankError(f"{where}: '{name}' must be non-empty text, got {value!r}")
    return value.strip()


def _require_number(value: Any, where: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise BankError(f"{where}: '{name}' must be a finite number, got {value!r}")
    return value


def parse_question(raw: Any, set_id: str, where: str) -> Question:
    """Check one question's fields and build it; a BankError names what is wrong."""
    if not isinstance(raw, dict):
        raise BankError(f"{where}: a question must be a JSON object, got {type(raw).__name__}")
    qid = _require_text(raw.get("id"), where, "id")
    where = f"{where} (id {qid!r})"
    if not qid.startswith(f"{set_id}-"):
        raise BankError(f"{where}: id must start with its set, '{set_id}-'")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise BankError(f"{where}: kind={kind!r}; valid kinds are {', '.join(KINDS)}")
    common = dict(
        id=qid,
        set_id=set_id,
        kind=kind,
        text=_require_text(raw.get("text"), where, "text"),
        explanation=_require_text(raw.get("explanation"), where, "explanation"),
    )
    if kind == "numeric":
        if raw.get("options"):
            raise BankError(f"{where}: a numeric question has no options")
        answer = _require_number(raw.get("answer"), where, "answer")
        tolerance = _require_number(raw.get("tolerance"), where, "tolerance")
        if tolerance < 0:
            raise BankError(f"{where}: tolerance must be >= 0, got {tolerance!r}")
        misconceptions = []
        for j, m in enumerate(raw.get("misconceptions", [])):
            mwhere = f"{where} misconception {j}"
            if not isinstance(m, dict):
                raise BankError(f"{mwhere}: must be an object with 'value' and 'feedback'")
            value = _require_number(m.get("value"), mwhere, "value")
            m_tolerance = _require_number(m["tolerance"], mwhere, "tolerance") if "tolerance" in m else None
            if abs(value - answer) <= tolerance + (m_tolerance or 0):
                raise BankError(f"{mwhere}: value {value} overlaps the tolerance of the answer {answer}")
            misconceptions.append(Misconception(value, _require_text(m.get("feedback"), mwhere, "feedback"), m_tolerance))
        computed_by = raw.get("computed_by")
        if computed_by is not None and not (isinstance(computed_by, dict) and isinstance(computed_by.get("function"), str)):
            raise BankError(f"{where}: computed_by must be an object naming a 'function' of mha_core.costs")
        return Question(
            **common,
            answer=answer,
            tolerance=tolerance,
            unit=str(raw.get("unit", "")),
            feedback=_require_text(raw.get("feedback"), where, "feedback"),
            wrong_feedback=_require_text(raw.get("wrong_feedback"), where, "wrong_feedback"),
            misconceptions=tuple(misconceptions),
            computed_by=computed_by,
        )
    raw_options = raw.get("options")
    if not isinstance(raw_options, list) or len(raw_options) < 2:
        raise BankError(f"{where}: a {kind} question needs a list of at least 2 options, got {raw_options!r}")
    if len(raw_options) > len(LETTERS):
        raise BankError(f"{where}: at most {len(LETTERS)} options, got {len(raw_options)}")
    options = []
    for j, o in enumerate(raw_options):
        owhere = f"{where} option {j}"
        if not isinstance(o, dict):
            raise BankError(f"{owhere}: must be an object with 'text', 'correct' and 'feedback'")
        if not isinstance(o.get("correct"), bool):
            raise BankError(f"{owhere}: 'correct' must be true or false, got {o.get('correct')!r}")
        options.append(Option(_require_text(o.get("text"), owhere, "text"), o["correct"], _require_text(o.get("feedback"), owhere, "feedback")))
    texts = [o.text for o in options]
    if len(set(texts)) != len(texts):
        raise BankError(f"{where}: two options have the same text")
    n_correct = sum(o.correct for o in options)
    if kind == "single" and n_correct != 1:
        raise BankError(f"{where}: a single-choice question needs exactly one correct option, found {n_correct}")
    if kind == "multi" and n_correct < 1:
        raise BankError(f"{where}: a select-all question needs at least one correct option, found none")
    return Question(**common, options=tuple(options))


def parse_set(raw: Any, expected_id: str, where: str) -> QuizSet:
    """Check one set file's fields and build it."""
    if not isinstance(raw, dict):
        raise BankError(f"{where}: a set must be a JSON object")
    if raw.get("set") != expected_id:
        raise BankError(f"{where}: 'set' is {raw.get('set')!r}, expected {expected_id!r} (the file name)")
    title = _require_text(raw.get("title"), where, "title")
    raw_questions = raw.get("questions", [])
    if not isinstance(raw_questions, list):
        raise BankError(f"{where}: 'questions' must be a list")
    questions = tuple(parse_question(q, expected_id, f"{where} question {i}") for i, q in enumerate(raw_questions))
    include = raw.get("include", [])
    if not isinstance(include, list) or not all(isinstance(i, str) for i in include):
        raise BankError(f"{where}: 'include' must be a list of question ids")
    if not questions and not include:
        raise BankError(f"{where}: the set has no questions")
    return QuizSet(expected_id, title, questions, tuple(include))


def validate_bank(sets: dict[str, QuizSet]) -> None:
    """Rules that span files: unique ids, and included ids that exist in another set, once each."""
    seen: dict[str, str] = {}
    for set_id, quiz_set in sets.items():
        for q in quiz_set.questions:
            if q.id in seen:
                where = f"twice in set {set_id}" if seen[q.id] == set_id else f"in set {seen[q.id]} and set {set_id}"
                raise BankError(f"question id {q.id!r} appears {where}; ids must be unique")
            seen[q.id] = set_id
    for set_id, quiz_set in sets.items():
        for qid in quiz_set.include:
            if qid not in seen:
                raise BankError(f"set {set_id} includes {qid!r}, which no set defines")
            if seen[qid] == set_id:
                raise BankError(f"set {set_id} includes its own question {qid!r}")
        if len(set(quiz_set.include)) != len(quiz_set.include):
            raise BankError(f"set {set_id} includes a question twice")


def load_bank(directory: str | Path | None = None) -> Bank:
    """Read and check every ``NN.json`` in ``directory`` (default: the installed bank)."""
    directory = Path(directory) if directory is not None else quizzes_dir()
    sets: dict[str, QuizSet] = {}
    for path in sorted(directory.glob("*.json")):
        if not re.fullmatch(r"\d\d", path.stem):
            raise BankError(f"{path.name}: quiz files are named NN.json")
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise BankError(f"{path.name}: not valid JSON ({exc})") from None
        sets[path.stem] = parse_set(raw, path.stem, path.name)
    if not sets:
        raise BankError(f"no quiz files (NN.json) in {directory}")
    validate_bank(sets)
    return Bank(sets, directory)


@lru_cache(maxsize=1)
def default_bank() -> Bank:
    """The installed bank, read once per process."""
    return load_bank()


# --------------------------------------------------------------------------- display order


def shuffled_order(question: Question, seed: str) -> list[int]:
    """The order to show a question's options in: fixed for one seed (a learner) and question.

    The same learner sees the same order in every session and in the terminal; two
    learners see different orders. Uses a hash, not Python's ``hash()``, which changes
    between processes.
    """
    digest = hashlib.sha256(f"{seed}:{question.id}".encode()).digest()
    order = list(range(len(question.options)))
    random.Random(int.from_bytes(digest[:8], "big")).shuffle(order)
    return order


# --------------------------------------------------------------------------- grading


@dataclass(frozen=True)
class Verdict:
    """The result of one answer: right or not, a headline, and one line per option that matters."""

    correct: bool
    headline: str
    details: tuple[str, ...] = field(default_factory=tuple)

    def text(self) -> str:
        return "\n".join((self.headline,) + self.details)


def format_number(value: float | None) -> str:
    """64 -> '64', 2362368 -> '2,362,368', 27.7128 -> '27.71'."""
    if value is None:
        return ""
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.4g}" if abs(value) < 1000 else f"{value:,.2f}"


def parse_number(text: str) -> float | None:
    """'2,362,368' / '2_362_368' / ' 64 ' / '3.2e2' -> a float; anything else -> None."""
    cleaned = re.sub(r"[\s,_]", "", str(text))
    if not cleaned:
        return None
    try:
        value = float(cleaned)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def _without_yes(feedback: str) -> str:
    """'Yes. The softmax ...' -> 'the softmax ...': a right option's feedback, inside a sentence."""
    rest = re.sub(r"^Yes[.,:!]?\s+", "", feedback)
    if rest == feedback or not rest:
        return feedback
    return rest[0].lower() + rest[1:] if rest[:2] != rest[:2].upper() else rest


def option_labels(order: Sequence[int]) -> dict[int, str]:
    """Data index -> the letter it is shown under, for a display order."""
    return {i: f"{LETTERS[pos]})" for pos, i in enumerate(order)}


def grade_choice(question: Question, chosen: Sequence[int], order: Sequence[int] | None = None) -> Verdict:
    """Grade chosen options, given as indices in the data's order.

    ``order`` is the display order (from ``shuffled_order``); it sets the letters and
    the order of the lines. Single choice: the chosen option's feedback. Select-all:
    feedback on every option chosen, and on every correct option missed.
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
        elif option.correct:
            details.append(f"✗ {labels[i]} missed, it is right too: {_without_yes(option.feedback)}")
    if right:
        headline = f"Correct: all {len(correct_set)} right options, and no others."
    else:
        wrong = len(chosen_set - correct_set)
        missed = len(correct_set - chosen_set)
        parts = ([f"{wrong} chosen that should not be"] if wrong else []) + ([f"{missed} missed"] if missed else [])
        headline = "Not quite: " + ", ".join(parts) + "."
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
