"""A control group in a handout (static mode): its finite settings computed while the page is built.

Placeholder until the handout controls land: shows the figure at its current setting.
"""

from __future__ import annotations


def static_display(group) -> None:
    """Display ``group`` for a static page (``MHA_COURSE_STATIC=1``)."""
    import plotly.graph_objects as go
    from IPython.display import HTML, display

    from ._base import LIVE_NOTE

    display(go.Figure(group.figure), HTML(LIVE_NOTE))
