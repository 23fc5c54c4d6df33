"""Quick checks: a question bank as data, shown in notebooks and in a terminal, with progress kept.

In a notebook::

    from mha_classroom.quiz import quick_check
    quick_check("03")                   # the questions of notebook 03, with feedback and a score
    quick_check("03", classroom=True)   # for a room: one question at a time, nothing recorded, "Reveal answer"
    from mha_classroom.quiz import show_progress, progress_summary, reset_progress
    show_progress()                     # every notebook's results, and a reset button

In a terminal::

    python -m mha_classroom.quiz 03          # or: all, --answers, --no-record

Modules: ``bank`` (the JSON bank, its checks, grading, the one option order),
``progress`` (the SQLite store; ``_progress_file``, the file itself), ``summary``
(results, the course score), ``poll`` (the class poll's client, on the hub), and
``__main__`` (the terminal runner, which never imports ipywidgets). The notebook side,
imported only when a notebook function is used: ``widget`` (a set: ``quick_check``,
classroom mode one question at a time), ``question_view`` (one question),
``progress_view`` (the progress table), ``_widget_parts`` (what those share). And
``instructor`` (the room's exercise results and the lesson-plan panel, on the hub), imported by
its own name (``from mha_classroom.quiz.instructor import room_view, panel``), never by this package:
it reads ``mha_classroom.exercises``, which sends verdicts through ``poll``, so a way from here to it
would close a ring of imports.
"""

from __future__ import annotations

import sys as _sys

if _sys.argv[:1] == ["-m"]:
    # `python -m mha_classroom.quiz` is starting (Python sets argv[0] to "-m" while it locates the
    # module): a Ctrl-C from here until the quiz runs ends the program quietly with status 130.
    # The terminal runner's main() puts Python's own handler back.
    # The C module, loaded with the interpreter: `import signal` builds its enums first, long enough for a
    # Ctrl-C to land before the handler is set.
    import _signal
    import os as _os

    _signal.signal(_signal.SIGINT, lambda *_: _os._exit(130))

from .bank import BankError, default_bank, load_bank
from .progress import ProgressStore, default_store
from .summary import progress_summary, reset_progress

__all__ = [
    "BankError",
    "ProgressStore",
    "classroom",
    "default_bank",
    "default_store",
    "load_bank",
    "progress_summary",
    "quick_check",
    "reset_progress",
    "show_progress",
]

_WIDGET_NAMES = ("quick_check", "classroom", "show_progress", "QuickCheck", "ProgressView")


def __getattr__(name):
    # ipywidgets loads only when a notebook function is asked for.
    if name in _WIDGET_NAMES:
        from . import widget

        return getattr(widget, name)
    raise AttributeError(f"module 'mha_classroom.quiz' has no attribute {name!r}")
