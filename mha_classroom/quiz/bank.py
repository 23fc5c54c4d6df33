"""The question bank: plain JSON, loaded and checked (grading lives in ``grading``).

One file per set under ``data/quizzes/``: ``00.json`` (a practice set for the welcome
notebook), ``01.json`` ... ``10.json`` (one per notebook) and ``11.json`` (the review,
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
one. Keys not listed here are refused (a typo such as ``units`` or ``misconception``
would otherwise be ignored without a word), and ``include`` belongs to the review only.

A broken file costs only its own set: ``load_bank`` keeps the others and records the
problem, naming the file and the line, in ``Bank.problems``; asking for that set raises
a BankError with that message. ``load_bank(strict=True)`` raises at the first problem
(the tests use it). Nothing here imports ipywidgets: the terminal runner uses this
module too.
"""

from __future__ import annotations

import difflib
import json
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

from mha_core._data import data_candidates

from .numbers import format_number

#: The sets, in course order. "00" is practice; "11" is the review.
SET_IDS: tuple[str, ...] = tuple(f"{n:02d}" for n in range(12))
#: The sets that count towards the course score (the notebooks and the review).
COURSE_SET_IDS: tuple[str, ...] = SET_IDS[1:]
#: The review: the one set that repeats ("include"s) questions of the other sets.
REVIEW_SET_ID = "11"
KINDS = ("single", "multi", "numeric")
LETTERS = "abcdefghijklmnopqrstuvwxyz"

#: The keys each object of a set file may have; anything else is a typo or a leftover.
SET_KEYS = ("set", "title", "include", "questions")
QUESTION_KEYS = {
    "single": ("id", "kind", "text", "explanation", "options"),
    "multi": ("id", "kind", "text", "explanation", "options"),
    "numeric": ("id", "kind", "text", "explanation", "answer", "tolerance", "unit", "feedback", "wrong_feedback",
                "misconceptions", "computed_by"),
}
OPTION_KEYS = ("text", "correct", "feedback")
MISCONCEPTION_KEYS = ("value", "feedback", "tolerance")
COMPUTED_BY_KEYS = ("function", "kwargs", "model", "divide_by", "then")
#: What ``computed_by.then`` may apply to the computed value.
COMPUTED_BY_THEN = ("sqrt",)


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
    #: set id (or file name) -> why that file was left out, naming the file and the line
    problems: dict[str, str] = field(default_factory=dict)
    #: set id -> what a set lost through another set's broken file (the review's repeated questions)
    notes: dict[str, str] = field(default_factory=dict)

    def questions(self, set_id: str, *, through: Any = None) -> tuple[Question, ...]:
        """The questions a set shows: for the review, its included questions, then its own.

        ``through`` (the review only): the last notebook the class took, "01" to "10".
        A class that stops after 05 gets ``through="05"``: the review repeats questions
        of notebooks 01-05 only. Its own questions draw on the core (01-05), so every
        class gets them.
        """
        quiz_set = self.get_set(set_id)
        included = tuple(self.question(qid) for qid in quiz_set.include)
        if through is not None:
            if quiz_set.id != REVIEW_SET_ID:
                raise ValueError(f"through= applies only to the review ({REVIEW_SET_ID}), not to quiz {quiz_set.id}")
            last = review_through(through)
            included = tuple(q for q in included if q.set_id <= last)
        return included + quiz_set.questions

    def get_set(self, set_id: str) -> QuizSet:
        """The set; a BankError naming the file and the line if its file is broken."""
        set_id = normalise_set_id(set_id, tuple(self.sets) + tuple(k for k in self.problems if k in SET_IDS))
        if set_id not in self.sets:
            raise BankError(f"quiz {set_id} cannot be shown: {self.problems[set_id]}")
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
        """The questions that make up the course score: sets 01-11, each once (practice left out)."""
        return tuple(q for set_id in COURSE_SET_IDS if set_id in self.sets for q in self.sets[set_id].questions)


def _short_repr(value: Any, limit: int = 40) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        return f"<{type(value).__name__} too long to show>"
    return text if len(text) <= limit else text[: limit - 5] + "...'" + f" ({len(text)} characters)"


#: The notebooks a review can stop after: a class may stop after 05 (the core) or go on to 10.
THROUGH_CHOICES: tuple[str, ...] = tuple(f"{n:02d}" for n in range(1, 11))


def review_through(through: Any) -> str:
    """'5', 5, '05' -> '05': the last notebook the review draws on; anything else raises a ValueError."""
    message = f"through={_short_repr(through)} is not a notebook the review can stop after; valid choices are {', '.join(THROUGH_CHOICES)}"
    try:
        return normalise_set_id(through, THROUGH_CHOICES)
    except ValueError:
        raise ValueError(message) from None


def normalise_set_id(set_id: Any, valid: Sequence[str] = SET_IDS) -> str:
    """'3', 3, '03' -> '03'; anything else raises a ValueError listing the valid ids.

    Only the ASCII digits 0-9 count as digits: '²' or '٣' is not a quiz number.
    """
    valid = sorted(valid)
    message = f"set_id={_short_repr(set_id)} is not a quiz; valid quizzes are {', '.join(valid)}"
    if isinstance(set_id, bool) or not isinstance(set_id, (str, int)):
        raise ValueError(message)
    text = str(set_id).strip() if isinstance(set_id, str) else (str(set_id) if 0 <= set_id < 1000 else "")
    if re.fullmatch(r"[0-9]{1,3}", text):
        text = f"{int(text):02d}"
    if text not in valid:
        raise ValueError(message)
    return text


# --------------------------------------------------------------------------- where the data lives


def quizzes_dir() -> Path:
    """The folder holding the bank's JSON files, installed or in a checkout.

    An installed wheel carries the top-level ``data/`` folder as the package
    ``mha_core.data`` (see pyproject.toml). A checkout (and the editable install, where
    ``mha_core.data`` does not import as a namespace package) has it next to the
    ``mha_core`` folder.
    """
    candidates = data_candidates("quizzes")
    for candidate in candidates:
        if (candidate / "01.json").is_file():
            return candidate
    raise FileNotFoundError("the quiz bank was not found; looked in " + ", ".join(str(c) for c in candidates))


# --------------------------------------------------------------------------- loading and validation


def _check_keys(raw: dict, allowed: Sequence[str], where: str, what: str) -> None:
    """Refuse keys the schema does not know, suggesting the nearest known one."""
    for key in raw:
        if key not in allowed:
            near = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise BankError(f"{where}: unknown key {key!r} in {what}{hint}; valid keys are {', '.join(allowed)}")


def _check_computed_by(spec: Any, where: str) -> dict:
    """computed_by names a public function of mha_core.costs, with kwargs or a model of MODEL_SHAPES."""
    if not isinstance(spec, dict) or not isinstance(spec.get("function"), str):
        raise BankError(f"{where}: computed_by must be an object naming a 'function' of mha_core.costs")
    _check_keys(spec, COMPUTED_BY_KEYS, where, "computed_by")
    from mha_core import costs

    name = spec["function"]
    if name.startswith("_") or not callable(getattr(costs, name, None)):
        known = sorted(n for n in dir(costs) if not n.startswith("_") and callable(getattr(costs, n))
                       and getattr(getattr(costs, n), "__module__", None) == costs.__name__ and n.islower())
        raise BankError(f"{where}: computed_by names function {name!r}, which mha_core.costs does not have; "
                        f"it has {', '.join(known)}")
    if "kwargs" in spec and not (isinstance(spec["kwargs"], dict) and all(isinstance(k, str) for k in spec["kwargs"])):
        raise BankError(f"{where}: computed_by.kwargs must be an object of argument names")
    if "model" in spec and spec["model"] not in costs.MODEL_SHAPES:
        raise BankError(f"{where}: computed_by.model={spec['model']!r}; valid models are {', '.join(costs.MODEL_SHAPES)}")
    if ("kwargs" in spec) == ("model" in spec):
        raise BankError(f"{where}: computed_by needs exactly one of 'kwargs' and 'model'")
    if "divide_by" in spec:
        _require_number(spec["divide_by"], where, "computed_by.divide_by")
        if spec["divide_by"] == 0:
            raise BankError(f"{where}: computed_by.divide_by must not be 0")
    if "then" in spec and spec["then"] not in COMPUTED_BY_THEN:
        raise BankError(f"{where}: computed_by.then={spec['then']!r}; valid: {', '.join(COMPUTED_BY_THEN)}")
    return spec


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
    _check_keys(raw, QUESTION_KEYS[kind], where, f"a {kind} question")
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
        raw_misconceptions = raw.get("misconceptions", [])
        if not isinstance(raw_misconceptions, list):
            raise BankError(f"{where}: 'misconceptions' must be a list")
        for j, m in enumerate(raw_misconceptions):
            mwhere = f"{where} misconception {j}"
            if not isinstance(m, dict):
                raise BankError(f"{mwhere}: must be an object with 'value' and 'feedback'")
            _check_keys(m, MISCONCEPTION_KEYS, mwhere, "a misconception")
            value = _require_number(m.get("value"), mwhere, "value")
            m_tolerance = _require_number(m["tolerance"], mwhere, "tolerance") if "tolerance" in m else None
            if abs(value - answer) <= tolerance + (m_tolerance or 0):
                raise BankError(f"{mwhere}: value {value} overlaps the tolerance of the answer {answer}")
            misconceptions.append(Misconception(value, _require_text(m.get("feedback"), mwhere, "feedback"), m_tolerance))
        computed_by = raw.get("computed_by")
        if computed_by is not None:
            computed_by = _check_computed_by(computed_by, where)
        unit = raw.get("unit", "")
        if not isinstance(unit, str):
            raise BankError(f"{where}: 'unit' must be text, got {unit!r}")
        return Question(
            **common,
            answer=answer,
            tolerance=tolerance,
            unit=unit,
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
        _check_keys(o, OPTION_KEYS, owhere, "an option")
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


def _line_of(source: str, needle: str, nth: int = 0) -> int | None:
    """The 1-based line of the ``nth`` occurrence of ``needle`` in ``source``, or None."""
    at = -1
    for _ in range(nth + 1):
        at = source.find(needle, at + 1)
        if at < 0:
            return None
    return source.count("\n", 0, at) + 1


def parse_set(raw: Any, expected_id: str, where: str, source: str = "") -> QuizSet:
    """Check one set file's fields and build it. ``source``: the file's text, to name the line of a problem."""
    if not isinstance(raw, dict):
        raise BankError(f"{where}: a set must be a JSON object")
    _check_keys(raw, SET_KEYS, where, "a set")
    if raw.get("set") != expected_id:
        raise BankError(f"{where}: 'set' is {raw.get('set')!r}, expected {expected_id!r} (the file name)")
    if "include" in raw and expected_id != REVIEW_SET_ID:
        raise BankError(f"{where}: only the review ({REVIEW_SET_ID}.json) repeats questions with 'include'")
    title = _require_text(raw.get("title"), where, "title")
    raw_questions = raw.get("questions", [])
    if not isinstance(raw_questions, list):
        raise BankError(f"{where}: 'questions' must be a list")
    questions = []
    for i, q in enumerate(raw_questions):
        qid = q.get("id") if isinstance(q, dict) else None
        line = (_line_of(source, json.dumps(qid)) if isinstance(qid, str) else None) or _line_of(source, '"id"', i)
        at = f"{where} line {line}, question {i}" if line else f"{where} question {i}"
        questions.append(parse_question(q, expected_id, at))
    include = raw.get("include", [])
    if not isinstance(include, list) or not all(isinstance(i, str) for i in include):
        raise BankError(f"{where}: 'include' must be a list of question ids")
    if not questions and not include:
        raise BankError(f"{where}: the set has no questions")
    return QuizSet(expected_id, title, tuple(questions), tuple(include))


def validate_bank(sets: dict[str, QuizSet], problems: dict[str, str] | None = None, notes: dict[str, str] | None = None) -> None:
    """Rules that span files: unique ids, and included ids that exist in another set, once each.

    With ``problems`` (a dict), a set that breaks a rule is removed from ``sets`` and its
    problem recorded there, and an included question of a set that was left out is
    dropped (said in ``notes``); without it, the first problem raises.
    """

    def fail(set_id: str, message: str) -> None:
        if problems is None:
            raise BankError(message)
        problems[set_id] = message
        sets.pop(set_id, None)

    seen: dict[str, str] = {}
    for set_id, quiz_set in list(sets.items()):
        mine: dict[str, str] = {}
        for q in quiz_set.questions:
            first = mine.get(q.id) or seen.get(q.id)
            if first is not None:
                where = f"twice in set {set_id}" if first == set_id else f"in set {first} and set {set_id}"
                fail(set_id, f"{set_id}.json: question id {q.id!r} appears {where}; ids must be unique")
                break
            mine[q.id] = set_id
        else:
            seen.update(mine)
    for set_id, quiz_set in list(sets.items()):
        lost = [qid for qid in quiz_set.include if qid not in seen and problems and qid[:2] in problems]
        if lost:
            quiz_set = sets[set_id] = QuizSet(set_id, quiz_set.title, quiz_set.questions,
                                              tuple(q for q in quiz_set.include if q not in lost))
            if notes is not None:
                notes[set_id] = (f"{len(lost)} repeated question(s) are left out because their file is broken: "
                                 + "; ".join(problems[q[:2]] for q in lost))
        for qid in quiz_set.include:
            if qid not in seen:
                fail(set_id, f"{set_id}.json: set {set_id} includes {qid!r}, which no set defines")
                break
            if seen[qid] == set_id:
                fail(set_id, f"{set_id}.json: set {set_id} includes its own question {qid!r}")
                break
        else:
            if len(set(quiz_set.include)) != len(quiz_set.include):
                fail(set_id, f"{set_id}.json: set {set_id} includes a question twice")


def read_set_file(path: Path) -> QuizSet:
    """Read and check one ``NN.json``; every failure is a BankError naming the file (and the line where known)."""
    name = path.name
    if not re.fullmatch(r"[0-9][0-9]", path.stem):
        raise BankError(f"{name}: quiz files are named NN.json, two digits")
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise BankError(f"{name}: is a folder, not a file") from None
    except OSError as exc:
        raise BankError(f"{name}: cannot be read ({exc.strerror or exc})") from None
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise BankError(f"{name} line {line}: not UTF-8 text (byte {exc.start} is {data[exc.start:exc.start + 1]!r}); "
                        "save the file as UTF-8") from None
    try:
        raw = json.loads(source)
    except json.JSONDecodeError as exc:
        raise BankError(f"{name} line {exc.lineno}: not valid JSON ({exc.msg}, column {exc.colno})") from None
    except RecursionError:
        raise BankError(f"{name}: not a quiz set (its JSON is nested too deeply to read)") from None
    try:
        return parse_set(raw, path.stem, name, source)
    except RecursionError:
        raise BankError(f"{name}: not a quiz set (nested too deeply)") from None


def load_bank(directory: str | Path | None = None, *, strict: bool = False) -> Bank:
    """Read and check every ``NN.json`` in ``directory`` (default: the installed bank).

    A broken file leaves out only its own set (see ``Bank.problems``); ``strict=True``
    raises a BankError at the first problem instead.
    """
    directory = Path(directory) if directory is not None else quizzes_dir()
    sets: dict[str, QuizSet] = {}
    problems: dict[str, str] = {}
    for path in sorted(directory.glob("*.json")):
        try:
            sets[path.stem] = read_set_file(path)
        except BankError as exc:
            if strict:
                raise
            problems[path.stem if path.stem in SET_IDS else path.name] = str(exc)
    if not sets:
        raise BankError(f"no usable quiz files (NN.json) in {directory}"
                        + ("".join(f"\n  {p}" for p in problems.values()) if problems else ""))
    notes: dict[str, str] = {}
    validate_bank(sets, None if strict else problems, notes)
    return Bank(sets, directory, problems, notes)


@lru_cache(maxsize=1)
def default_bank() -> Bank:
    """The installed bank, read once per process."""
    return load_bank()
