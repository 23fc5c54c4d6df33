"""mha_core._display: one answer to "am I in a notebook?" for everything that displays itself."""

from __future__ import annotations

import subprocess
import sys

from mha_core import _display


def test_a_plain_python_process_is_not_ipython_and_ipython_is_not_imported_to_find_out():
    probe = "import sys, mha_core._display as d; print(d.in_ipython(), 'IPython' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["False", "False"]


def test_a_running_ipython_shell_is_ipython(monkeypatch):
    import IPython

    monkeypatch.setattr(IPython, "get_ipython", lambda: object())  # what a kernel's IPython answers
    assert _display.in_ipython() is True
    monkeypatch.setattr(IPython, "get_ipython", lambda: None)  # IPython imported, no shell running
    assert _display.in_ipython() is False


def test_a_kernel_that_imports_only_the_figures_shows_every_figure_with_its_words():
    # A notebook shows builders' figures before it imports any widget: importing mha_core.figures is enough.
    probe = """
import sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
import mha_core.figures
import plotly.graph_objects as go
print(shell.display_formatter.ipython_display_formatter.lookup(go.Figure()) is not None,
      any(m.startswith('mha_core.widgets') for m in sys.modules))
"""
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False"]  # registered, and the widgets not imported for it
    assert _display.show_figures_with_words() is False  # outside a kernel: nothing registered
