"""The runner: call the learner's function on each case and decide the verdict.

A check runs in this order:

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
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ._shared import SHARED
from ._tables import Case, CheckResult, Exercise, close, close_all

NOT_ATTEMPTED = "not attempted yet: the notebook carries on with the reference implementation"
CARRY_ON = "Until it passes, the notebook carries on with the reference implementation."
GENERAL_ERROR_HINT = (
    "Hint: run your function by hand on arrays of those shapes, in a cell of its own, to see which line fails."
)


def hint(specific: str | None = None) -> str:
    return f"{specific} {CARRY_ON}" if specific else CARRY_ON


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
            array = np.asarray(item)
        except Exception:  # a ragged list, for example
            array = np.asarray(None)
        if array.dtype.kind not in "biuf":  # bool, integers, floats
            what = f"an array of {array.dtype}" if isinstance(item, np.ndarray) else f"a {type(item).__name__}"
            return None, ("wrong_return", f"Your {label} is {what}, not an array of real numbers.")
        arrays.append(array.astype(np.float64))
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
        if isinstance(a, np.ndarray)
        and not (copies[n].shape == a.shape and np.array_equal(copies[n], a, equal_nan=True))
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


def _exception_verdict(ex: Exercise, fn, index: int, case: Case, exc: BaseException, n_ok: int):
    if isinstance(exc, NotImplementedError) and index == 0:
        return CheckResult(ex.name, "not_attempted", None, NOT_ATTEMPTED, None, 0)
    error = f"{type(exc).__name__}: {exc}"
    source = source_of(fn)
    for row in (*ex.raised, *SHARED):
        extra = row.fields(error, source, index)
        if extra is not None:
            message = f"{row.message.format(**case.fields, **extra)} (Your function raised {error}.)"
            return CheckResult(ex.name, "mistake", row.name, message, hint(), n_ok)
    message = f"Your function raised {error} (called with {case.label})"
    return CheckResult(ex.name, "error", None, message, hint(GENERAL_ERROR_HINT), n_ok)


def screen(ex: Exercise, fn, index: int, case: Case, outcome: Outcome, expected: tuple, n_ok: int):
    """Steps 1-3 on one case: the verdict if the call raised, has the wrong form or shape, or changed an input."""
    if outcome.exception is not None:
        return _exception_verdict(ex, fn, index, case, outcome.exception, n_ok)
    if outcome.form is not None:
        mistake, message = outcome.form
        return CheckResult(ex.name, "mistake", mistake, message, hint(), n_ok)
    got = outcome.results
    if any(g.shape != e.shape for g, e in zip(got, expected)):
        for m in ex.mistakes:
            message = m.explain(ex, case, got) if m.case == index and m.seen is None else None
            if message:
                return CheckResult(ex.name, "mistake", m.name, message, hint(), n_ok)
        for label, dims, g, e in zip(ex.results, ex.result_dims, got, expected):
            if g.shape != e.shape:
                message = (
                    f"Your {label} has shape {tuple(g.shape)}; expected {_shape_text(dims, e.shape)} "
                    f"(called with {case.label})"
                )
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
        verdict = screen(self.ex, self.fn, i, self.cases[i], outcome, self.expected[i], n_ok)
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
        message = m.explain(ex, attempts.cases[m.case], got)
        if message:
            return CheckResult(ex.name, "mistake", m.name, message, hint(), 0)
    return None


def _general(attempts: _Attempts) -> CheckResult | None:
    """Step 5: every case against the reference."""
    for i, case in enumerate(attempts.cases):
        got, verdict = attempts.get(i, i)
        if verdict is not None:
            return verdict
        problem = compare(attempts.ex, case, got, attempts.expected[i])
        if problem:
            return CheckResult(attempts.ex.name, "wrong", None, problem, hint(), i)
    return None


def evaluate(ex: Exercise, fn) -> CheckResult:
    """The verdict on ``fn`` for exercise ``ex``."""
    if not callable(fn):
        example, given = ex.solution.__name__, f"{type(fn).__name__} {fn!r:.60}"
        message = f"check expects your function (for example {example}); got {given}"
        return CheckResult(ex.name, "error", None, message, hint(), 0)
    attempts = _Attempts(ex, fn)
    verdict = attempts.get(0, 0)[1] or _named_mistake(attempts) or _general(attempts)
    if verdict is not None:
        return verdict
    n = len(attempts.cases)
    note = ex.after_pass(ex, fn) if ex.after_pass else None
    message = f"passed on {n} shapes. From here on the notebook uses your function."
    return CheckResult(ex.name, "passed", None, message, note, n)
