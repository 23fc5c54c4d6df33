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


def test_static_mode_is_read_from_the_environment_each_time(monkeypatch):
    monkeypatch.delenv(_display.STATIC_ENV, raising=False)
    assert _display.static_mode() is False
    monkeypatch.setenv(_display.STATIC_ENV, "0")
    assert _display.static_mode() is False
    monkeypatch.setenv(_display.STATIC_ENV, "1")
    assert _display.static_mode() is True
