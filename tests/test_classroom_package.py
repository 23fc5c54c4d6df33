"""mha_classroom (its ``__init__``): importing it changes nothing; ``show_figures_with_words`` has the kernel show
every figure with its words, and building a figure of ``mha_core`` never does."""

from __future__ import annotations

import subprocess
import sys

#: An IPython shell; then $STEPS, each printing what the shell shows a ``go.Figure`` with (the module of the
#: function, or "plotly" when nothing of the course is registered), and which modules of mha_classroom are loaded.
PROBE = """
import sys
from IPython.core.interactiveshell import InteractiveShell
shell = InteractiveShell.instance()
import plotly.graph_objects as go


def report():
    try:
        shown = shell.display_formatter.ipython_display_formatter.lookup(go.Figure()).__module__
    except KeyError:
        shown = "plotly"
    print(shown, any(m.startswith("mha_classroom") for m in sys.modules))


import mha_core.figures.qkv
from mha_core.examples import TOKENS, token_vectors
mha_core.figures.qkv.token_vectors_figure(token_vectors(d_model=8, seed=0), TOKENS)
report()
import mha_classroom
report()
mha_classroom.show_figures_with_words()
report()
mha_classroom.show_figures_with_words()
report()
"""


def test_a_kernel_shows_figures_with_their_words_once_the_notebook_asks_not_when_a_figure_is_built():
    # A notebook shows builders' figures before it builds any control: its first cell asks for the words.
    # Building a figure of mha_core registers nothing and loads nothing of the classroom; importing it changes
    # nothing; asking twice registers once.
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["plotly False", "plotly True", "mha_classroom.widgets._words True",
                                        "mha_classroom.widgets._words True"]


def test_outside_ipython_asking_for_the_words_changes_nothing():
    probe = ("import mha_classroom, sys; print(mha_classroom.show_figures_with_words(), "
             "'IPython' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["None", "False"]
