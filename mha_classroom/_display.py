"""Where code is shown: in an IPython kernel (a notebook) or not, and live or for a static page.

One answer for everything that displays itself (``mha_classroom.exercises``, ``mha_classroom.quiz``,
the control groups in ``mha_classroom.widgets``). This module imports nothing of the course, so
every other module can ask it; and importing it changes nothing.
"""

from __future__ import annotations

import os
import sys

#: Set to 1 when notebooks are executed for static pages (``make handouts``).
STATIC_ENV = "MHA_COURSE_STATIC"


def in_ipython() -> bool:
    """True inside an IPython shell or kernel (a notebook cell), False in a plain Python process.

    IPython is not imported to find out: a kernel has always imported it already.
    """
    ipython = sys.modules.get("IPython")
    return ipython is not None and ipython.get_ipython() is not None


def static_mode() -> bool:
    """True while notebooks run for static handouts: control groups show plain figures."""
    return os.environ.get(STATIC_ENV, "") not in ("", "0")
