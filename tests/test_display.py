"""mha_classroom._display: one answer to "am I in a notebook?" for everything that displays itself."""

from __future__ import annotations

import subprocess
import sys

from mha_classroom import _display


def test_a_plain_python_process_is_not_ipython_and_ipython_is_not_imported_to_find_out():
    probe = "import sys, mha_classroom._display as d; print(d.in_ipython(), 'IPython' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_a_running_ipython_shell_is_ipython(monkeypatch):
    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: object())  # what a kernel's IPython answers
    assert _display.in_ipython() is True
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)  # IPython imported, no shell running
    assert _display.in_ipython() is False


def test_a_kernel_shows_every_figure_with_its_words_once_a_course_figure_is_built_not_on_import():
    # A notebook shows builders' figures before it builds any control: the first figure built registers the words;
    # importing the figures (or anything else) registers nothing.
    probe = """
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
import mha_core.figures.qkv
import plotly.graph_objects as go
shown_with = lambda: shell.display_formatter.ipython_display_formatter.lookup(go.Figure()).__module__
try:
    print(shown_with())
except KeyError:
    print("plotly")
from mha_core.examples import token_vectors
from mha_core.examples import TOKENS
mha_core.figures.qkv.token_vectors_figure(token_vectors(d_model=8, seed=0), TOKENS)
print(shown_with())
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["plotly", "mha_classroom.widgets._words"]


def test_static_mode_is_read_from_the_environment_each_time(monkeypatch):
    monkeypatch.delenv(_display.STATIC_ENV, raising=False)
    assert _display.static_mode() is False
    monkeypatch.setenv(_display.STATIC_ENV, "0")
    assert _display.static_mode() is False
    monkeypatch.setenv(_display.STATIC_ENV, "1")
    assert _display.static_mode() is True
