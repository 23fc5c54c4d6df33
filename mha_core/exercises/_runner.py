"""The runner: call the learner's function on each case and decide the verdict.

A check runs in this order (see STYLE.md):

1. call on the first case; an untouched stub (``NotImplementedError``) is "not
   attempted yet"; any other exception is named from the exercise's table of
   ``Raised`` mistakes, or reported by type and message;
2. the shape of each result (a wrong shape that a known mistake produces is named);
3. the inputs are left unchanged;
4. each known mistake by name, in the order of the exercise's ``Mistake`` table;
5. a general comparison with the reference on every case.

Each step is a function that returns a ``CheckResult`` when it decides, else None;
the first that decides is the verdict.
"""

from __future__ import annotations

import inspect
import math
import re
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

# A learner may compute in float32; every real mistake moves results by far more.
RTOL = 1e-5
ATOL = 1e-6

NOT_ATTEMPTED = "not attempted yet: the notebook carries on with the reference implementation"
CARRY_ON = "Until it passes, the notebook carries on with the reference implementation."


@dataclass(frozen=True)
class CheckResult:
    """The verdict of one check.

    status: "passed", "not_attempted", "mistake" (a named, known mistake), "wrong"
        (a wrong shape or a mismatch with the reference) or "error" (the function
        raised an exception no known mistake explains).
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


@dataclass(frozen=True)
class Case:
    """One call of the learner's function: the arguments, and named dimensions for messages."""

    args: dict
    dims: dict

    @property
    def label(self) -> str:
        parts = []
        for name, value in self.args.items():
            if isinstance(value, np.ndarray):
                parts.append(f"{name} of shape {value.shape}")
            else:
                parts.append(f"{name}={value!r}")
        return ", ".join(parts)

    @property
    def fields(self) -> dict:
        """What a message may name: the dimensions, their square roots, the call."""
        roots = {f"{n}_sqrt": f"{math.sqrt(self.dims[n]):.3g}" for n in ("H", "Dh") if n in self.dims}
        return {**self.dims, **roots, "label": self.label}


@dataclass(frozen=True)
class Mistake:
    """A known mistake: what it computes, and the message that names it.

    planted: the mistake written as a function with the exercise's signature; the
        tests plant it and expect this message.
    message: formatted with ``Case.fields`` (and whatever ``seen`` returns).
    case: the index of the case it is looked for on.
    seen: None when the mistake is recognised by results equal to ``planted``'s;
        else ``seen(case, got)`` recognises it from a property of the learner's
        results ``got`` and returns the message's extra fields (a dict), or None.
    """

    name: str
    planted: Callable
    message: str
    case: int = 0
    seen: Callable | None = None


@dataclass(frozen=True)
class Raised:
    """A known mistake recognised by the exception it raises.

    pattern: a regular expression searched in "ExceptionType: message".
    source: a regular expression the function's source must contain too, or None.
    later: only when the first case passed and a later case raised (numbers typed in).
    planted: the mistake as a function, for the tests; None for the rows shared by
        every exercise (the tests write those per exercise).
    """

    name: str
    pattern: str
    message: str
    planted: Callable | None = None
    source: str | None = None
    later: bool = False

    def fields(self, error: str, source: str, index: int) -> dict | None:
        """The pattern's named groups when this row explains ``error``, else None."""
        found = re.search(self.pattern, error)
        if found is None or (self.source and not re.search(self.source, source)) or (self.later and index == 0):
            return None
        return found.groupdict()


@dataclass(frozen=True)
class Exercise:
    """One exercise: its solution, its reference, its cases and its mistake tables."""

    name: str
    notebook: str
    solution: Callable
    reference: Callable
    positional: tuple
    keyword: tuple
    results: tuple  # names of the results, e.g. ("output", "weights")
    result_dims: tuple  # per result, the dimension names of a full-rank result
    cases: Callable  # () -> list[Case], the first the one most mistakes are named on
    mistakes: tuple  # Mistake rows, in the order they are looked for
    raised: tuple = ()  # Raised rows, looked for before the ones every exercise shares
    after_pass: Callable | None = None  # (exercise, fn) -> a note after a pass, or None

    def call(self, fn, case: Case):
        args = [case.args[n] for n in self.positional]
        kwargs = {n: case.args[n] for n in self.keyword}
        return fn(*args, **kwargs)

    def expected(self, case: Case) -> tuple:
        return as_tuple(self.call(self.reference, case))


def as_tuple(result) -> tuple:
    return result if isinstance(result, tuple) else (result,)


def close(a, b) -> bool:
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and bool(np.allclose(a, b, rtol=RTOL, atol=ATOL))


def close_all(got: tuple, expected: tuple) -> bool:
    return len(got) == len(expected) and all(close(g, e) for g, e in zip(got, expected))


def hint(specific: str | None = None) -> str:
    return f"{specific} {CARRY_ON}" if specific else CARRY_ON


def explain(ex: Exercise, m: Mistake, case: Case, got: tuple) -> str | None:
    """The mistake's message when the learner's results ``got`` show it on ``case``, else None."""
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            if m.seen is not None:
                extra = m.seen(case, got)
            else:
                extra = {} if close_all(got, as_tuple(ex.call(m.planted, case))) else None
    except Exception:  # a mistake that cannot apply to this result (another shape)
        return None
    return None if extra is None else m.message.format(**case.fields, **extra)


# --- running the learner's function -------------------------------------------------


@dataclass
class Outcome:
    """What one call of the learner's function gave (on copies of the case's arguments)."""

    results: tuple | None = None  # float64 arrays, one per result
    exception: BaseException | None = None
    form: tuple | None = None  # (mistake, message) when the returned value has the wrong form
    changed: tuple = ()  # names of the arguments changed in place


def _as_arrays(ex: Exercise, returned) -> tuple[tuple | None, tuple | None]:
    """Turn the learner's return value into float64 arrays, or say what is wrong with its form."""
    n, names = len(ex.results), ", ".join(ex.results)
    if returned is None:
        want = f"return {names}" if n > 1 else "end it with a return"
        return None, ("no_return", f"Your function returned None: did you forget the return? ({want})")
    if n > 1 and not isinstance(returned, (tuple, list)):
        return None, ("wrong_return", f"Your function returned one value; return {n} values: return {names}.")
    if n > 1 and len(returned) != n:
        return None, (
            "wrong_return",
            f"Your function returned {len(returned)} values; return {n} values: return {names}.",
        )
    if n == 1 and isinstance(returned, tuple):
        return None, ("wrong_return", f"Your function returned {len(returned)} values; return one array.")
    items = tuple(returned) if n > 1 else (returned,)
    arrays = []
    for label, item in zip(ex.results, items):
        try:
            arrays.append(np.asarray(item, dtype=np.float64))
        except Exception:
            return None, ("wrong_return", f"Your {label} is a {type(item).__name__}, not an array of numbers.")
    return tuple(arrays), None


def run(ex: Exercise, fn, case: Case) -> Outcome:
    """Call the learner's function on copies of the case's arguments; note what it changed."""
    copies = {n: (a.copy() if isinstance(a, np.ndarray) else a) for n, a in case.args.items()}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            returned = ex.call(fn, Case(copies, case.dims))
    except Exception as exc:  # the learner's code may raise anything
        return Outcome(exception=exc)
    changed = tuple(
        n
        for n, a in case.args.items()
        if isinstance(a, np.ndarray) and not (copies[n].shape == a.shape and np.array_equal(copies[n], a, equal_nan=True))
    )
    results, form = _as_arrays(ex, returned)
    return Outcome(results=results, form=form, changed=changed)


def source_of(fn) -> str:
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return ""


def _shape_text(names: tuple, shape: tuple) -> str:
    names = names[len(names) - len(shape) :] if len(shape) <= len(names) else names
    return f"({', '.join(names)}) = {tuple(shape)}"


# --- steps 1-3: exceptions, form, shape, inputs left unchanged --------------------


def _exception_verdict(ex: Exercise, fn, index: int, case: Case, exc: BaseException, n_ok: int, shared: tuple):
    if isinstance(exc, NotImplementedError) and index == 0:
        return CheckResult(ex.name, "not_attempted", None, NOT_ATTEMPTED, None, 0)
    error = f"{type(exc).__name__}: {exc}"
    source = source_of(fn)
    for row in (*ex.raised, *shared):
        extra = row.fields(error, source, index)
        if extra is not None:
            message = f"{row.message.format(**case.fields, **extra)} (Your function raised {error}.)"
            return CheckResult(ex.name, "mistake", row.name, message, hint(), n_ok)
    message = f"Your function raised {error} (called with {case.label})"
    return CheckResult(ex.name, "error", None, message, hint(GENERAL_ERROR_HINT), n_ok)


GENERAL_ERROR_HINT = (
    "Hint: run your function by hand on arrays of those shapes, in a cell of its own, to see which line fails."
)


def screen(ex: Exercise, fn, index: int, case: Case, outcome: Outcome, expected: tuple, n_ok: int, shared: tuple):
    """Steps 1-3 on one case: the verdict if the call raised, has the wrong form or shape, or changed an input."""
    if outcome.exception is not None:
        return _exception_verdict(ex, fn, index, case, outcome.exception, n_ok, shared)
    if outcome.form is not None:
        mistake, message = outcome.form
        return CheckResult(ex.name, "mistake", mistake, message, hint(), n_ok)
    got = outcome.results
    if any(g.shape != e.shape for g, e in zip(got, expected)):
        for m in ex.mistakes:
            message = explain(ex, m, case, got) if m.case == index and m.seen is None else None
            if message:
                return CheckResult(ex.name, "mistake", m.name, message, hint(), n_ok)
        label, dims, g, e = next(item for item in zip(ex.results, ex.result_dims, got, expected) if item[2].shape != item[3].shape)
        message = f"Your {label} has shape {tuple(g.shape)}; expected {_shape_text(dims, e.shape)} (called with {case.label})"
        return CheckResult(ex.name, "wrong", "wrong_shape", message, hint(), n_ok)
    if outcome.changed:
        message = (
            f"Your function changed its input {' and '.join(outcome.changed)} in place, so the caller's array is "
            f"different after the call. Compute new arrays instead: write x = x / 2, not x /= 2 or x[...] = ..."
        )
        return CheckResult(ex.name, "mistake", "changed_input", message, hint(), n_ok)
    return None


# --- step 5: the general comparison ---------------------------------------------------


def compare(ex: Exercise, case: Case, got: tuple, expected: tuple) -> str | None:
    """None when the results agree with the reference; else where and by how much they differ."""
    for label, g, e in zip(ex.results, got, expected):
        if close(g, e):
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


# --- the check --------------------------------------------------------------------------


@dataclass
class _Attempts:
    """The learner's function run once per case, on demand."""

    ex: Exercise
    fn: Callable
    shared: tuple
    cases: list = field(init=False)
    expected: list = field(init=False)
    outcomes: dict = field(default_factory=dict)

    def __post_init__(self):
        self.cases = self.ex.cases()
        self.expected = [self.ex.expected(c) for c in self.cases]

    def get(self, i: int, n_ok: int) -> tuple[tuple | None, CheckResult | None]:
        """(results, None), or (None, the verdict of steps 1-3) for case ``i``."""
        if i not in self.outcomes:
            self.outcomes[i] = run(self.ex, self.fn, self.cases[i])
        outcome = self.outcomes[i]
        verdict = screen(self.ex, self.fn, i, self.cases[i], outcome, self.expected[i], n_ok, self.shared)
        return outcome.results, verdict


def _named_mistake(attempts: _Attempts) -> CheckResult | None:
    """Step 4: the first mistake of the table that the learner's results show."""
    ex = attempts.ex
    for m in ex.mistakes:
        got, verdict = attempts.get(m.case, 0)
        if verdict is not None:
            return verdict
        if close_all(got, attempts.expected[m.case]):
            continue
        message = explain(ex, m, attempts.cases[m.case], got)
        if message:
            return CheckResult(ex.name, "mistake", m.name, message, hint(), 0)
    return None


def _general(attempts: _Attempts) -> CheckResult | None:
    """Step 5: every case against the reference."""
    for i, case in enumerate(attempts.cases):
        got, verdict = attempts.get(i, i)
        problem = verdict or compare(attempts.ex, case, got, attempts.expected[i])
        if isinstance(problem, str):
            return CheckResult(attempts.ex.name, "wrong", None, problem, hint(), i)
        if problem is not None:
            return problem
    return None


def evaluate(ex: Exercise, fn, shared: tuple = ()) -> CheckResult:
    """The verdict on ``fn`` for exercise ``ex``; ``shared`` are the Raised rows every exercise uses."""
    if not callable(fn):
        message = f"check expects your function (for example {ex.solution.__name__}); got {type(fn).__name__} {fn!r:.60}"
        return CheckResult(ex.name, "error", None, message, hint(), 0)
    attempts = _Attempts(ex, fn, shared)
    verdict = attempts.get(0, 0)[1] or _named_mistake(attempts) or _general(attempts)
    if verdict is not None:
        return verdict
    n = len(attempts.cases)
    note = ex.after_pass(ex, fn) if ex.after_pass else None
    return CheckResult(ex.name, "passed", None, f"passed on {n} shapes. From here on the notebook uses your function.", note, n)
