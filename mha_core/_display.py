"""Whether code runs in an IPython kernel (a notebook): one answer for everything that displays itself.

``mha_core.exercises`` and ``mha_core.quiz.widget`` each carried a private copy of this
check; both can import ``in_ipython`` from here instead.
"""

from __future__ import annotations

import sys


def in_ipython() -> bool:
    """True inside an IPython shell or kernel (a notebook cell), False in a plain Python process.

    IPython is not imported to find out: a kernel has always imported it already.
    """
    ipython = sys.modules.get("IPython")
    return ipython is not None and ipython.get_ipython() is not None


def show_figures_with_words() -> bool:
    """In a kernel, have every ``go.Figure`` shown with its words for a screen reader
    (``mha_core.widgets._words``); True if it now is. Nothing is imported until a figure is shown.

    Called when ``mha_core.figures`` is imported, since a notebook shows figures before it
    imports any widget; ``mha_core.widgets`` installs the same on its own import.
    """
    if not in_ipython():
        return False
    shell = sys.modules["IPython"].get_ipython()

    def show(figure):
        from .widgets._words import show_figure

        show_figure(figure)

    shell.display_formatter.ipython_display_formatter.for_type_by_name("plotly.graph_objs._figure", "Figure", show)
    return True
