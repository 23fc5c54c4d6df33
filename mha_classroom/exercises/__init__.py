"""Exercises: a stub for the learner, a check that names the mistake, a hidden solution.

In a notebook::

    from mha_classroom import exercises
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
On the course hub, ``check`` also sends the verdict (the exercise, its status and the
mistake's name from ``catalogue()``, never the code) to the class poll, in the
background (``mha_classroom.quiz.poll.send_verdict_in_background``), for the instructor's
``mha_classroom.quiz.instructor.room_view``.

The package:
    _tables       what an exercise is made of: cases, Mistake and Raised rows, CheckResult
    _runner       the check, in this order: shape, inputs unchanged, each
                  known mistake by name, then the reference on several shapes
    _shared       exceptions every exercise can meet (PyTorch habits, typed-in sizes)
    single_head   notebook 02: scaled_dot_product_attention
    heads         notebook 03: split_heads, merge_heads
    projection    notebook 04: output_projection
    induction     heads across layers (after 08): induction_score

Each notebook's module holds its cases and two tables: ``Mistake`` rows (what the
mistake computes, the message that names it) and ``Raised`` rows (the exception it
raises, the message). The tests plant every row and expect its message.

The stubs and the solutions both come from ``mha_core.solutions``: the stub is the
solution with the code between its markers replaced by ``raise
NotImplementedError("your turn")`` (the hint comments stay).
"""

from __future__ import annotations

import html
import inspect
import os
from typing import Callable

from mha_core import solutions

from .. import _display
from . import _runner, heads, induction, projection, single_head
from ._tables import CheckResult, Exercise

__all__ = [
    "EXERCISES",
    "STATUSES",
    "CheckResult",
    "catalogue",
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

_EXERCISES = {ex.name: ex for ex in (single_head.EXERCISE, heads.SPLIT, heads.MERGE, projection.EXERCISE,
                                      induction.EXERCISE)}

#: The exercise names, in the order of the notebooks.
EXERCISES = tuple(_EXERCISES)
#: A verdict's status (``CheckResult.status``).
STATUSES = ("passed", "not_attempted", "mistake", "wrong", "error")
#: The mistake names the runner gives any exercise (``_runner``: the return's form, its shape, an input changed).
RUNNER_MISTAKES = ("no_return", "wrong_return", "wrong_shape", "changed_input")


def _exercise(name) -> Exercise:
    if name not in _EXERCISES:
        raise ValueError(f"name={name!r} is not an exercise; valid names are {', '.join(map(repr, EXERCISES))}")
    return _EXERCISES[name]


def catalogue() -> dict[str, dict]:
    """Each exercise's notebook and every mistake name its check can give: ``{name: {"notebook", "mistakes"}}``.

    What the class poll accepts as a verdict (deploy/poll_service.py) and what the
    instructor's view lists, in the order the check looks for them.
    """
    from ._shared import SHARED

    found = {}
    for name, ex in _EXERCISES.items():
        names = [m.name for m in ex.mistakes] + [r.name for r in (*ex.raised, *SHARED)] + list(RUNNER_MISTAKES)
        found[name] = {"notebook": ex.notebook, "mistakes": tuple(dict.fromkeys(names))}
    return found


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


def solution_html(source: str, theme=None) -> str:
    """The solution behind a one-click disclosure, its text at ``theme``'s control size (None: the theme in use),
    long lines wrapped inside the output rather than running past it."""
    from mha_core import projector

    px = projector.resolve(theme).control_font_size
    return (f'<details style="font-size:{px}px"><summary>Show the solution</summary>'
            f'<pre style="font-size:{px}px;white-space:pre-wrap"><code>{html.escape(source)}</code></pre></details>')


def solution(name: str) -> None:
    """Show the solution behind a one-click disclosure (in a notebook), or print it.

    In a notebook it follows ``mha_core.presenter``: a switch of the theme resizes it where it stands.
    """
    source = solution_source(name)
    if _display.in_ipython():
        import uuid

        from IPython.display import HTML, display, update_display

        from .. import _theme

        shown = f"mha-solution-{uuid.uuid4().hex[:12]}"
        display(HTML(solution_html(source)), display_id=shown)
        _theme.keep(lambda theme: update_display(HTML(solution_html(source, theme)), display_id=shown),
                    f"the solution of {name}")
    else:
        print(f"Solution for {name}:\n\n{source}")


# --- the public checks ---------------------------------------------------------------


def evaluate(name: str, fn) -> CheckResult:
    """Check ``fn`` against exercise ``name`` and return the verdict; never raises for anything ``fn`` does.

    An unknown ``name`` raises ``ValueError`` listing the valid names.
    """
    ex = _exercise(name)
    try:
        return _runner.evaluate(ex, fn)
    except Exception as exc:  # a fault in the checker itself must not stop the notebook
        message = f"the check itself failed ({type(exc).__name__}: {exc}); please report it"
        return CheckResult(name, "error", None, message, _runner.hint(), 0)


def check(name: str, fn) -> Callable:
    """Check the learner's ``fn``, print the verdict, and return the function to use from now on.

    Returns ``fn`` when it passed, otherwise the reference (``reference(name)``), so the
    rest of the notebook runs either way.
    """
    result = evaluate(name, fn)
    print("\n".join(result.lines()))
    _send_to_poll(result)
    return fn if result.passed else _exercise(name).reference


def _send_to_poll(result: CheckResult) -> None:
    """On the course hub, the verdict (name, status, mistake; nothing of the code) to the class poll.

    In a thread of its own, so the check never waits for it; a no-op without a hub.
    """
    try:
        if not os.environ.get("MHA_POLL_URL"):  # off the hub (poll.URL_VAR): not even the client's import
            return
        from ..quiz import poll

        poll.send_verdict_in_background(result.name, result.status, result.mistake)
    except Exception:  # the poll never stops a check
        pass
