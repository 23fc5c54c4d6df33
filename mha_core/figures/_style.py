"""The course's look, shared by every figure builder: readable when projected.

Base font 16 px, token labels on heatmap axes, one colour-blind-safe, perceptually
uniform scale (viridis) with a fixed 0..1 range for attention weights.
"""

from __future__ import annotations

import numpy as np

from .. import projector

FONT_SIZE = 16
TITLE_SIZE = 18
#: Attention weights always use this scale and range, so colours mean the same everywhere.
WEIGHTS_COLORSCALE = "Viridis"
WEIGHTS_RANGE = (0.0, 1.0)
#: Signed values (vector entries, scores) use a diverging, colour-blind-safe scale.
SIGNED_COLORSCALE = "RdBu"
#: Categorical colours (Okabe-Ito, colour-blind safe).
COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


#: A FigureWidget drawn during run-all gets plotly's default width (700 px) and does not
#: follow its output area, so control figures get this fixed width: it fits a notebook in
#: a 1280-px-wide window.
WIDGET_WIDTH = 940

#: A small template instead of plotly's default one, which costs several milliseconds to
#: apply and to copy on every rebuild; plotly.js defaults fill in the rest.
TEMPLATE = {
    "layout": {
        "font": {"color": "#2a3f5f"},
        "title": {"x": 0.05},
        "hoverlabel": {"align": "left"},
        "xaxis": {"ticks": "", "automargin": True},
        "yaxis": {"ticks": "", "automargin": True},
    }
}


def base_layout(title: str, **extra) -> dict:
    """Layout every figure starts from: big fonts, a title that says what is shown.

    Sizes come from ``projector.theme()``: 16 px text, or 20 px after ``mha_core.presenter(True)``.
    """
    sizes = projector.theme()
    layout = dict(
        title=dict(text=title, font=dict(size=sizes.title_size)),
        font=dict(size=sizes.font_size),
        template=TEMPLATE,
        plot_bgcolor="white",
        paper_bgcolor="white",
        margin=dict(l=90, r=30, t=70, b=70),
    )
    layout.update(extra)
    return layout


def weights_heatmap_trace(weights: np.ndarray, query_tokens, key_tokens, *, text=None, colorbar_x: float = 1.02, **extra) -> dict:
    """One attention-weight table as a heatmap trace: viridis, fixed 0..1, the weight in each cell.

    Returned as a plain dict (``type="heatmap"``): ``go.Figure(data=[...])`` accepts it, and a
    control that rebuilds the figure on every move does not pay for validating a ``go.Heatmap``.
    ``text`` (strings, shape (Tq, Tk)) replaces the printed weights, for example "blocked".

    Shapes:
        weights: (Tq, Tk), values in 0..1
    """
    weights = np.asarray(weights, dtype=float)
    trace = dict(
        type="heatmap",
        z=weights,
        x=list(key_tokens),
        y=list(query_tokens),
        zmin=WEIGHTS_RANGE[0],
        zmax=WEIGHTS_RANGE[1],
        colorscale=WEIGHTS_COLORSCALE,
        colorbar=dict(title=dict(text="weight", side="right"), x=colorbar_x),
        text=np.char.mod("%.2f", weights) if text is None else text,
        texttemplate="%{text}",
        textfont=dict(size=projector.theme().cell_text_size),
        xgap=2,
        ygap=2,
        hovertemplate="query %{y} -> key %{x}: %{z:.2f}<extra></extra>",
    )
    trace.update(extra)
    return trace


def query_key_axes(**extra) -> dict:
    """Layout axes for a query-by-key table: queries read top to bottom, keys left to right."""
    return dict(
        xaxis=dict(side="bottom", title_text="key token"),
        yaxis=dict(autorange="reversed", title_text="query token"),
        **extra,
    )
