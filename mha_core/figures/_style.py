"""The course's look, shared by every figure builder: readable when projected.

Token labels on heatmap axes, one colour-blind-safe, perceptually uniform scale
(viridis) with a fixed 0..1 range for attention weights. No size lives here: every
text size comes from the ``theme`` (a ``projector.Theme``) that each helper takes as
an argument, so ``mha_core.presenter(True)`` reaches every figure. Builders resolve
``theme=None`` once (``projector.resolve``) and pass the theme down.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import _validate, projector
from ..projector import Theme

#: Attention weights always use this scale and range, so colours mean the same everywhere.
WEIGHTS_COLORSCALE = "Viridis"
WEIGHTS_RANGE = (0.0, 1.0)
#: Signed values (vector entries, scores) use a diverging, colour-blind-safe scale.
SIGNED_COLORSCALE = "RdBu"
#: Categorical colours (Okabe-Ito, colour-blind safe).
COLORS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


# --- the screen the course is sized for ------------------------------------------------
# JupyterLab in a 1280 x 800 window (a laptop, a projector) with the file browser open:
# the output area of a cell is about 848 px wide, and about 680 px of notebook are visible
# below the menus, tabs and status bar. Every builder sizes its figure from these numbers.

#: Height of notebook visible at once at 1280 x 800 (what a control and its figure must share).
SCREEN_HEIGHT = 680
#: Width of a live figure. A FigureWidget drawn during run-all gets plotly's default width
#: (700 px) and does not follow its output area, so live figures get this fixed width; it
#: fits the ~848 px output area at 1280 x 800 with the file browser open. Plain figures
#: (``go.Figure``) follow their output area and need no width.
WIDGET_WIDTH = 820
#: The most characters one title line holds at the laptop theme's title size in a figure
#: WIDGET_WIDTH wide (plotly never wraps a title: a longer one runs off the figure);
#: ``base_layout`` wraps longer titles, to fewer characters for a larger title size.
TITLE_CHARS = 76
#: Room kept above a live figure for its controls (one row of buttons or a slider, a message line).
CONTROLS_HEIGHT = 120
#: The tallest live figure: with its controls it fits in SCREEN_HEIGHT.
WIDGET_HEIGHT = SCREEN_HEIGHT - CONTROLS_HEIGHT

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


def wrap_title(title: str, width: int = TITLE_CHARS) -> str:
    """``title`` with a ``<br>`` between words wherever a line would pass ``width`` characters."""
    lines = []
    for segment in title.split("<br>"):
        line = ""
        for word in segment.split(" "):
            if line and len(line) + 1 + len(word) > width:
                lines.append(line)
                line = word
            else:
                line = f"{line} {word}" if line else word
        lines.append(line)
    return "<br>".join(lines)


def title_chars(theme: Theme) -> int:
    """The most characters one title line holds at ``theme``'s title size (fewer for larger text)."""
    return TITLE_CHARS * projector.LAPTOP.title_size // theme.title_size


def base_layout(title: str, *, theme: Theme, **extra) -> dict:
    """Layout every figure starts from: the theme's fonts, a title that says what is shown.

    A title longer than ``title_chars(theme)`` is wrapped onto more lines, and the top
    margin grows by ``theme.title_line_px`` for each line added, so no title runs off a
    figure that fits the screen. Every size comes from ``theme``: 16 px text on a laptop,
    20 px with the projector theme. The hover labels use the theme's base font too.
    """
    wrapped = wrap_title(title, title_chars(theme))
    layout = dict(
        # From the top of the figure down, so a title of two lines grows into the margin, not onto the plot.
        title=dict(text=wrapped, font=dict(size=theme.title_size), yref="container", y=1, yanchor="top", pad=dict(t=12)),
        font=dict(size=theme.font_size),
        hoverlabel=dict(font=dict(size=theme.font_size)),
        template=TEMPLATE,
        plot_bgcolor="white",
        paper_bgcolor="white",
        margin=dict(l=90, r=30, t=70, b=70),
    )
    layout.update(extra)
    added = wrapped.count("<br>") - title.count("<br>")
    if added:
        layout["margin"] = {**layout["margin"], "t": layout["margin"].get("t", 70) + theme.title_line_px * added}
    return layout


def weights_heatmap_trace(weights: np.ndarray, query_tokens, key_tokens, *, theme: Theme, text=None,
                          colorbar_x: float = 1.02, **extra) -> dict:
    """One attention-weight table as a heatmap trace: viridis, fixed 0..1, the weight in each cell.

    Returned as a plain dict (``type="heatmap"``): ``go.Figure(data=[...])`` accepts it, and a
    control that rebuilds the figure on every move does not pay for validating a ``go.Heatmap``.
    ``text`` (strings, shape (Tq, Tk)) replaces the printed weights, for example "blocked".

    Shapes:
        weights: (Tq, Tk), values in 0..1
    """
    weights = np.asarray(weights, dtype=float)
    style = dict(
        zmin=WEIGHTS_RANGE[0],
        zmax=WEIGHTS_RANGE[1],
        colorscale=WEIGHTS_COLORSCALE,
        colorbar=dict(title=dict(text="weight", side="right"), x=colorbar_x),
        text=np.char.mod("%.2f", weights) if text is None else text,
        texttemplate="%{text}",
        hovertemplate="query %{y} -> key %{x}: %{z:.2f}<extra></extra>",
    )
    return _table_trace(weights, key_tokens, query_tokens, theme, **{**style, **extra})


def _table_trace(z, x, y, theme: Theme, **style) -> dict:
    """A heatmap trace (a dict) of a table with a number printed in every cell; ``style`` sets its scale."""
    return {"type": "heatmap", "z": z, "x": list(x), "y": list(y), "textfont": dict(size=theme.cell_text_size),
            "xgap": 2, "ygap": 2, **style}


def symmetric_max(*arrays) -> float:
    """The largest absolute entry, so a diverging scale is centred on 0 and fixed."""
    largest = max(float(np.max(np.abs(a))) for a in arrays)
    return largest if largest > 0 else 1.0


def signed_heatmap_trace(z, x, y, *, zmax: float, theme: Theme, xaxis: str = "x", yaxis: str = "y", name: str = "",
                         **extra) -> dict:
    """A heatmap trace (as a dict) of signed numbers that prints every value in its cell.

    Builders return ``go.Figure(data=[dicts], layout=dict)`` in one call: plotly
    validates everything once, several times faster than adding and updating piece
    by piece, which keeps control callbacks well under 20 ms.

    Shapes:
        z: (len(y), len(x))
    """
    z = np.asarray(z, dtype=float)
    style = dict(
        zmin=-zmax,
        zmax=zmax,
        zmid=0.0,
        colorscale=SIGNED_COLORSCALE,
        showscale=False,
        text=np.round(z, 2),
        texttemplate="%{text:.2f}",
        xaxis=xaxis,
        yaxis=yaxis,
        name=name,
        hovertemplate="%{y}, %{x}: %{z:.2f}<extra></extra>",
    )
    return _table_trace(z, x, y, theme, **{**style, **extra})


def panel_title(text: str, x_domain, y_top: float, *, theme: Theme) -> dict:
    """A panel title placed just above the panel (an annotation, so no make_subplots is needed)."""
    return dict(
        text=text,
        x=(x_domain[0] + x_domain[1]) / 2,
        y=y_top,
        xref="paper",
        yref="paper",
        xanchor="center",
        yanchor="bottom",
        showarrow=False,
        font=dict(size=theme.font_size),
    )


def head_blocks_figure(z, n_heads: int, *, along: str, title: str, x_labels=None, y_labels=None, block_label=None,
                       decimals: int | None = None, hovertemplate: str | None = None, height: int = 460,
                       margin: dict | None = None, axis_titles=("", ""), of: str | None = None,
                       theme: Theme | None = None) -> go.Figure:
    """A signed heatmap cut into ``n_heads`` equal blocks by thick lines: the picture of "one slice per head".

    ``along="columns"`` cuts the columns (a token's features: q split into heads, the
    concatenated head outputs); ``along="rows"`` cuts the rows (W_O's per-head blocks).
    ``block_label(h, lo, hi)`` names block h, which spans entries ``lo`` to ``hi``; the
    label sits above a column block, left of a row block. ``decimals`` prints every value
    in its cell (None: colour and hover only, with a colour bar). ``of`` names what is cut
    in the error for a count that does not divide it (default: "columns" or "rows").
    ``theme`` sets every size (None: the theme in use now).

    Shapes:
        z: (rows, columns); n_heads divides the axis that is cut
    """
    theme = projector.resolve(theme)
    z = np.asarray(z, dtype=float)
    if along not in ("columns", "rows"):
        raise ValueError(f"along={along!r} is not an axis to cut; valid values are 'columns', 'rows'")
    n_rows, n_cols = z.shape
    cut = n_cols if along == "columns" else n_rows
    _validate.divides(n_heads, cut, of=of or along)
    size = cut // n_heads
    if block_label is None:
        block_label = lambda h, lo, hi: f"head {h + 1}"  # noqa: E731
    x_labels = list(range(n_cols)) if x_labels is None else list(x_labels)
    y_labels = list(range(n_rows)) if y_labels is None else list(y_labels)
    trace = dict(type="heatmap", z=z, x=x_labels, y=y_labels, colorscale=SIGNED_COLORSCALE, zmin=-symmetric_max(z),
                 zmax=symmetric_max(z), xgap=1, ygap=1, hovertemplate=hovertemplate or "%{y}, %{x}: %{z:.2f}<extra></extra>")
    if decimals is None:
        trace["colorbar"] = dict(title=dict(text="value"))
    else:
        trace.update(showscale=False, text=np.round(z, decimals), texttemplate=f"%{{text:.{decimals}f}}",
                     textfont=dict(size=theme.small_text_size))
    shapes, annotations = [], []
    for h in range(n_heads):
        lo, hi = h * size, (h + 1) * size - 1
        if along == "columns":
            annotations.append(dict(text=block_label(h, lo, hi), x=(lo + hi) / 2, y=1.0, xref="x", yref="paper",
                                    yanchor="bottom", showarrow=False, font=dict(size=theme.font_size)))
        else:
            annotations.append(dict(text=block_label(h, lo, hi), x=-0.02, xref="paper", xanchor="right",
                                    y=(lo + hi) / 2, yref="y", showarrow=False, font=dict(size=theme.font_size)))
        if h:
            line = dict(type="line", line=dict(color="black", width=4))
            if along == "columns":
                shapes.append(dict(line, x0=lo - 0.5, x1=lo - 0.5, y0=0, y1=1, xref="x", yref="paper"))
            else:
                shapes.append(dict(line, y0=lo - 0.5, y1=lo - 0.5, x0=0, x1=1, yref="y", xref="paper"))
    layout = base_layout(title, theme=theme, margin=margin or dict(l=110, r=30, t=110, b=70), height=height,
                         shapes=shapes, annotations=annotations)
    layout["xaxis"] = dict(title_text=axis_titles[0], showgrid=False,
                           tickvals=x_labels if all(isinstance(v, int) for v in x_labels) else None)
    layout["yaxis"] = dict(title_text=axis_titles[1], showgrid=False, autorange="reversed",
                           showticklabels=along == "columns")
    return go.Figure(data=[trace], layout=layout)


def query_key_axes(**extra) -> dict:
    """Layout axes for a query-by-key table: queries read top to bottom, keys left to right."""
    return dict(
        xaxis=dict(side="bottom", title_text="key token"),
        yaxis=dict(autorange="reversed", title_text="query token"),
        **extra,
    )


def reference_line(value: float, label: str, *, theme: Theme, axis: str = "y", color: str = "black",
                   dash: str = "dash", label_at: str = "end") -> tuple[dict, dict]:
    """A labelled straight line at ``value`` across the plot: a baseline, a chance level, a threshold.

    ``axis="y"`` draws a horizontal line (its label above it, at the right end, or the
    left with ``label_at="start"``); ``axis="x"`` a vertical one (its label above the plot).
    Returns ``(shape, annotation)`` for ``layout.shapes`` and ``layout.annotations``.
    """
    if axis not in ("x", "y"):
        raise ValueError(f"axis={axis!r}; valid axes are 'x' and 'y'")
    if label_at not in ("start", "end"):
        raise ValueError(f"label_at={label_at!r}; valid places are 'start' and 'end'")
    line = dict(color=color, dash=dash, width=2)
    font = dict(size=theme.small_text_size, color=color)
    if axis == "y":
        shape = dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=value, y1=value, line=line)
        x, anchor = (1, "right") if label_at == "end" else (0, "left")
        note = dict(text=label, xref="paper", x=x, xanchor=anchor, yref="y", y=value, yanchor="bottom",
                    showarrow=False, font=font)
    else:
        shape = dict(type="line", yref="paper", y0=0, y1=1, xref="x", x0=value, x1=value, line=line)
        note = dict(text=label, yref="paper", y=1, yanchor="bottom", xref="x", x=value,
                    xanchor="right" if label_at == "end" else "left", showarrow=False, font=font)
    return shape, note


def add_reference_line(fig: go.Figure, value: float, label: str, *, theme: Theme | None = None, **style) -> go.Figure:
    """``fig`` with one more ``reference_line`` (for a figure from another builder); returns ``fig``.

    ``theme`` sizes the label (None: the theme in use now, as the builder of ``fig`` had).
    """
    shape, note = reference_line(value, label, theme=projector.resolve(theme), **style)
    fig.add_shape(shape)
    fig.add_annotation(note)
    return fig


def tick_step(n_labels: int, room_px: float, size: int) -> int:
    """Label every ``tick_step``-th tick so that labels of ``size`` px do not overlap in ``room_px``.

    1 while every label fits; a crowded axis (72 heads, a long sentence) keeps the
    theme's text size and shows fewer labels instead of smaller ones.
    """
    if n_labels <= 1:
        return 1
    # A label takes about 1.15 x its font size across the axis (its line height).
    return max(1, int(np.ceil(1.15 * size * n_labels / max(room_px, 1.0))))
