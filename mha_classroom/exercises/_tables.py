"""What an exercise is made of: cases, ``Mistake`` and ``Raised`` rows, the verdict.

A notebook's catalogue (``single_head``, ``heads``, ``projection``) is an
``Exercise`` with a list of ``Case``s and two tables of rows; ``_runner`` runs them.
"""

from __future__ import annotations

import math
import re
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np

# A learner may compute in float32; every real mistake moves results by far more.
RTOL = 1e-5
ATOL = 1e-6


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

    def explain(self, ex: Exercise, case: Case, got: tuple) -> str | None:
        """This mistake's message when the learner's results ``got`` show it on ``case``, else None."""
        try:
            with warnings.catch_warnings(), np.errstate(all="ignore"):
                warnings.simplefilter("ignore")
                if self.seen is not None:
                    extra = self.seen(case, got)
                else:
                    extra = {} if close_all(got, as_tuple(ex.call(self.planted, case))) else None
        except Exception:  # a mistake that cannot apply to this result (another shape)
            return None
        return None if extra is None else self.message.format(**case.fields, **extra)


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
