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
