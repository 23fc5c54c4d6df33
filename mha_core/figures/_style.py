"""The course's look, shared by every figure builder: readable when projected.

Token labels on heatmap axes, one colour-blind-safe, perceptually uniform scale
(viridis) with a fixed 0..1 range for attention weights. No size lives here: every
text size comes from the ``theme`` (a ``projector.Theme``) that each helper takes as
an argument, so ``mha_core.presenter(True)`` reaches every figure. Builders resolve
``theme=None`` once (``projector.resolve``) and pass the theme down.
"""

from __future__ import annotations

import copy
import functools

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


# --- a figure that can be built again -------------------------------------------------

#: The attribute of a builder's figure holding a call that builds it again (``builder``).
AGAIN = "_mha_again"


def _kept(value):
    """``value`` as a builder's call keeps it: a figure that can be built again as the call that builds it
    (``add_reference_line`` draws on a figure built under the same theme), anything else as a deep copy,
    so an array changed in place later does not change what the figure shows when built again."""
    again = getattr(value, AGAIN, None) if isinstance(value, go.Figure) else None
    return _Again(again) if again is not None else copy.deepcopy(value)


class _Again:
    """A figure argument of a kept call, built again with it."""

    def __init__(self, again):
        self.again = again


def _fresh(value):
    return value.again() if isinstance(value, _Again) else copy.deepcopy(value)


def builder(build):
    """Mark a figure builder: the figure it returns holds ``AGAIN``, a call that builds it again from copies
    of the same inputs, under the theme in use then (a ``theme`` passed in stays). The course platform uses
    it to restyle a figure already shown when ``presenter`` switches the theme; the builder runs as before.
    Inputs that cannot be copied leave the figure without ``AGAIN``: it keeps its sizes."""

    @functools.wraps(build)
    def built(*args, **kwargs):
        figure = build(*args, **kwargs)
        try:
            args_kept, kwargs_kept = [_kept(a) for a in args], {k: _kept(v) for k, v in kwargs.items()}
        except Exception:  # noqa: BLE001 - an input that cannot be copied: no way to build it again
            return figure
        setattr(figure, AGAIN, lambda: build(*[_fresh(a) for a in args_kept],
                                             **{k: _fresh(v) for k, v in kwargs_kept.items()}))
        return figure

    return built


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
#: Height of notebook visible at once in JupyterLab's Presentation Mode at 1280 x 720 (the projector's screen).
PRESENTING_HEIGHT = 599
#: Room a message line under a row of controls takes (``widgets._base.message_box``: 1.6 em of control text).
MESSAGE_LINE_EM = 1.6


def widget_height(theme: Theme, *, rows: int = 1, message: bool = False) -> int:
    """The tallest live figure that fits on screen below ``rows`` rows of controls (and a message line).

    On a laptop that is ``WIDGET_HEIGHT`` (the 1280 x 800 screen with room for two rows); with the
    projector theme it is what Presentation Mode at 1280 x 720 leaves below the theme's taller rows.
    """
    if not theme.projector:
        return WIDGET_HEIGHT
    controls = rows * (theme.control_height + 8) + (round(MESSAGE_LINE_EM * theme.control_font_size) if message else 0)
    return PRESENTING_HEIGHT - controls - 12  # 12 px: the output area's own padding

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


def title_lines(title: str) -> int:
    """How many lines ``title`` (already wrapped, or with its own ``<br>``) takes."""
    return title.count("<br>") + 1


def title_pad(title: str, theme: Theme) -> int:
    """Pixels from the top of the figure to the top of the title's first line.

    plotly.js anchors a title of several lines at its top differently from a title of one
    line: the block rises by about 0.7 of the font size (measured in Chromium with the
    plotly.js this package ships), so the first line would be cut at the figure's top edge.
    The pad puts the first line where a one-line title sits, whatever the number of lines.
    """
    return 12 + (round(0.7 * theme.title_size) if title_lines(title) > 1 else 0)


def title_bottom_px(title: str, theme: Theme) -> int:
    """Pixels from the top of the figure to the bottom of the title's last line (for margins and panel titles)."""
    return 16 + round(0.9 * theme.title_size) + theme.title_line_px * (title_lines(title) - 1)


def title_chars(theme: Theme) -> int:
    """The most characters one title line holds at ``theme``'s title size (fewer for larger text)."""
    return TITLE_CHARS * projector.LAPTOP.title_size // theme.title_size


def base_layout(title: str, *, theme: Theme, fit_title: bool = True, **extra) -> dict:
    """Layout every figure starts from: the theme's fonts, a title that says what is shown.

    A title longer than ``title_chars(theme)`` is wrapped onto more lines, and the top
    margin grows by ``theme.title_line_px`` for each line added, so no title runs off a
    figure that fits the screen; ``title_pad`` keeps the first line of a multi-line title
    inside the figure (``fit_title=False``: the caller's top margin already holds every line, for a
    builder that lays its figure out in pixels with ``title_bottom_px``). Every size comes from ``theme``: 16 px text on a laptop,
    20 px with the projector theme. The hover labels use the theme's base font too.
    """
    wrapped = wrap_title(title, title_chars(theme))
    layout = dict(
        # From the top of the figure down, so a title of two lines grows into the margin, not onto the plot.
        title=dict(text=wrapped, font=dict(size=theme.title_size), yref="container", y=1, yanchor="top",
                   pad=dict(t=title_pad(wrapped, theme))),
        font=dict(size=theme.font_size),
        hoverlabel=dict(font=dict(size=theme.font_size)),
        template=TEMPLATE,
        plot_bgcolor="white",
        paper_bgcolor="white",
        margin=dict(l=90, r=30, t=70, b=70),
    )
    layout.update(extra)
    added = wrapped.count("<br>") - title.count("<br>")
    if added and fit_title:
        layout["margin"] = {**layout["margin"], "t": layout["margin"].get("t", 70) + theme.title_line_px * added}
    return layout


def colorbar_px(theme: Theme) -> int:
    """Width a colour bar takes right of its plot: the bar, its tick labels ("0.5") and its title along it."""
    return 18 + 12 + round(text_width_px("0.5", theme.font_size)) + round(1.4 * theme.font_size)


def weights_colorbar(*, x: float | None = None, **extra) -> dict:
    """The colour bar of attention weights: 0, 0.5, 1, its title written along the bar (never over a tick)."""
    bar = dict(title=dict(text="weight", side="right"), tickvals=[0, 0.5, 1], ticktext=["0", "0.5", "1"],
               thickness=18, outlinewidth=0, **extra)
    if x is not None:
        bar["x"] = x
    return bar


def weights_heatmap_trace(weights: np.ndarray, query_tokens, key_tokens, *, theme: Theme, text=None,
                          colorbar_x: float = 1.02, cell_px=None, **extra) -> dict:
    """One attention-weight table as a heatmap trace: viridis, fixed 0..1, the weight in each cell.

    Returned as a plain dict (``type="heatmap"``): ``go.Figure(data=[...])`` accepts it, and a
    control that rebuilds the figure on every move does not pay for validating a ``go.Heatmap``.
    ``text`` (strings, shape (Tq, Tk)) replaces the printed weights, for example "blocked".
    ``cell_px`` (width, height of one cell in pixels) drops the printed text when it does not
    fit a cell at the theme's cell text size (``cell_text_fits``); pair it with ``row_max_outlines``.

    Shapes:
        weights: (Tq, Tk), values in 0..1
    """
    weights = np.asarray(weights, dtype=float)
    text = np.char.mod("%.2f", weights) if text is None else text
    style = dict(
        zmin=WEIGHTS_RANGE[0],
        zmax=WEIGHTS_RANGE[1],
        colorscale=WEIGHTS_COLORSCALE,
        colorbar=weights_colorbar(x=colorbar_x),
        text=text,
        texttemplate="%{text}",
        hovertemplate="query %{y} -> key %{x}: %{z:.2f}<extra></extra>",
    )
    if cell_px is not None and not cell_text_fits(np.asarray(text, dtype=str).ravel(), *cell_px, theme.cell_text_size):
        style.pop("text"), style.pop("texttemplate")
    return _table_trace(weights, key_tokens, query_tokens, theme, **{**style, **extra})


# --- numbers in cells: printed only where they fit ------------------------------------

#: Width of common characters in em (Open Sans, plotly's first font; Arial is a little narrower).
_CHAR_EM = {".": 0.27, ",": 0.27, "-": 0.33, "−": 0.57, " ": 0.26, "+": 0.57}


def text_width_px(text: str, size: float) -> float:
    """About how wide ``text`` is at ``size`` px: digits and lower case 0.57 em, capitals 0.66 em."""
    return size * sum(_CHAR_EM.get(c, 0.66 if c.isupper() else 0.57) for c in str(text))


def cell_text_fits(texts, cell_width: float, cell_height: float, size: float) -> bool:
    """True when every one of ``texts`` fits inside a cell ``cell_width`` x ``cell_height`` px at ``size`` px.

    A number must leave 4 px either side (so two neighbours never touch), and the cell must be
    1.2 times ``size`` tall: one line of text and a little room above and below it.
    """
    widest = max((text_width_px(t, size) for t in texts), default=0.0)
    return widest + 8 <= cell_width and 1.2 * size <= cell_height


def cell_px(figure_px: float, margin_px: float, domain, n_cells: int) -> float:
    """The size in pixels of one of ``n_cells`` equal cells along an axis of a figure ``figure_px`` wide (or
    tall) with ``margin_px`` of margins in all, on an axis spanning ``domain`` (fractions of the plot)."""
    return (figure_px - margin_px) * (domain[1] - domain[0]) / max(n_cells, 1)


def cell_numbers(z, cell_width: float, cell_height: float, size: float, decimals=(2, 1)):
    """``(text, decimals)``: ``z`` printed with the most of ``decimals`` that fits its cells, or ``(None, None)``
    when none does (then show the numbers another way: hover, a mark on each row's largest value)."""
    z = np.asarray(z, dtype=float)
    for d in decimals:
        text = np.char.mod(f"%.{d}f", np.round(z, d) + 0.0)  # + 0.0: no "-0.00"
        if cell_text_fits(text.ravel(), cell_width, cell_height, size):
            return text, d
    return None, None


def row_max_marks(weights, x, y, *, marker_px: float, xaxis: str = "x", yaxis: str = "y",
                  color: str | None = None) -> dict:
    """A scatter trace (a dict) of open squares on each row's largest weight (every cell that ties with it).

    For a figure whose cells hold no numbers (a square inside a cell would cross a printed
    number: ``row_max_outlines`` draws the cell's own edges instead).

    Shapes:
        weights: (len(y), len(x))
    """
    weights = np.asarray(weights, dtype=float)
    xs, ys = [], []
    for i, row in enumerate(weights):
        if not np.any(row > 0):
            continue  # a fully blocked row has no largest weight
        for j in np.flatnonzero(np.isclose(row, row.max(), rtol=0, atol=1e-9)):
            xs.append(list(x)[j])
            ys.append(list(y)[i])
    return dict(type="scatter", x=xs, y=ys, mode="markers", hoverinfo="skip", showlegend=False, xaxis=xaxis,
                yaxis=yaxis, marker=dict(symbol="square-open", size=max(6, round(marker_px)),
                                         color=color or COLORS[5], line=dict(width=3 if marker_px >= 20 else 2)))


#: The ``name`` of every shape ``row_max_outlines`` draws, so a reader of the figure (a text alternative) can find them.
OUTLINE_NAME = "row's largest weight"


def row_max_cells(weights, at=(0, 0)) -> list[tuple[int, int]]:
    """(row, column) of each row's largest weight, every cell that ties with it included, shifted by ``at``.

    A row with no weight above 0 (fully blocked) has no largest weight.

    Shapes:
        weights: (rows, columns)
    """
    weights = np.asarray(weights, dtype=float)
    return [(at[0] + i, at[1] + int(j)) for i, row in enumerate(weights) if np.any(row > 0)
            for j in np.flatnonzero(np.isclose(row, row.max(), rtol=0, atol=1e-9))]


def outline_trace(cells, *, xaxis: str = "x", yaxis: str = "y", color: str | None = None, width: int = 3) -> dict:
    """One line trace (a dict) that draws the edges of every cell in ``cells`` ((row, column) on numeric axes).

    The cells' own edges, so an outline never crosses a number printed in its cell, and one
    trace however many cells: a control that redraws it updates two arrays, not a list of shapes.
    """
    xs, ys = [], []
    for r, c in cells:
        xs += [c - 0.5, c + 0.5, c + 0.5, c - 0.5, c - 0.5, None]
        ys += [r - 0.5, r - 0.5, r + 0.5, r + 0.5, r - 0.5, None]
    return dict(type="scatter", x=xs, y=ys, mode="lines", name=OUTLINE_NAME, hoverinfo="skip", showlegend=False,
                xaxis=xaxis, yaxis=yaxis, line=dict(color=color or COLORS[5], width=width),
                marker=dict(symbol="square-open"))


def row_max_outlines(weights, *, xref: str = "x", yref: str = "y", at=(0, 0), color: str | None = None,
                     width: int = 3) -> list[dict]:
    """Rectangles (layout shapes) round each row's largest weight, every cell that ties with it included.

    A rectangle follows the cell's own edges, so it never crosses the number printed inside;
    with the numbers left out of small cells it keeps the point readable from the back of a
    room without hovering: which key each query favours. Cells are addressed by position
    (column j at x = j, row i at y = i, as a heatmap on a category axis places them), shifted
    by ``at`` = (rows, columns) for a table drawn inside a larger grid. A row with no weight
    above 0 (fully blocked) has no largest weight and gets no rectangle.

    Shapes:
        weights: (rows, columns)
    """
    weights = np.asarray(weights, dtype=float)
    r0, c0 = at
    line = dict(color=color or COLORS[5], width=width)
    shapes = []
    for i, row in enumerate(weights):
        if not np.any(row > 0):
            continue
        for j in np.flatnonzero(np.isclose(row, row.max(), rtol=0, atol=1e-9)):
            shapes.append(dict(type="rect", name=OUTLINE_NAME, xref=xref, yref=yref, x0=c0 + j - 0.5, x1=c0 + j + 0.5,
                               y0=r0 + i - 0.5, y1=r0 + i + 0.5, line=line, layer="above"))
    return shapes


def _table_trace(z, x, y, theme: Theme, **style) -> dict:
    """A heatmap trace (a dict) of a table with a number printed in every cell; ``style`` sets its scale."""
    return {"type": "heatmap", "z": z, "x": list(x), "y": list(y), "textfont": dict(size=theme.cell_text_size),
            "xgap": 2, "ygap": 2, **style}


def symmetric_max(*arrays) -> float:
    """The largest absolute entry, so a diverging scale is centred on 0 and fixed."""
    largest = max(float(np.max(np.abs(a))) for a in arrays)
    return largest if largest > 0 else 1.0


def signed_heatmap_trace(z, x, y, *, zmax: float, theme: Theme, xaxis: str = "x", yaxis: str = "y", name: str = "",
                         cell_px=None, **extra) -> dict:
    """A heatmap trace (as a dict) of signed numbers that prints every value in its cell.

    Builders return ``go.Figure(data=[dicts], layout=dict)`` in one call: plotly
    validates everything once, several times faster than adding and updating piece
    by piece, which keeps control callbacks well under 20 ms. ``cell_px`` (width, height
    of one cell in pixels) prints two decimals where they fit, else one, else none (the
    colour and the hover label remain; ``cell_numbers``).

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
    if cell_px is not None:
        text, _ = cell_numbers(z, *cell_px, theme.cell_text_size)
        if text is None:
            style.pop("text"), style.pop("texttemplate")
        else:
            style.update(text=text, texttemplate="%{text}")
    return _table_trace(z, x, y, theme, **{**style, **extra})


def label_angle(labels, pitch_px: float, size: float) -> int:
    """0 (level) when every one of ``labels`` fits the ``pitch_px`` between two ticks at ``size`` px,
    else -90 (read upwards: one line of text thick, so it needs only about 1.2 x ``size``)."""
    widest = max((text_width_px(str(t), size) for t in labels), default=0.0)
    return 0 if widest + 8 <= pitch_px else -90


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


#: The narrowest a plain figure (``go.Figure``, no width of its own) is drawn: the output area at 1280 x 800 with
#: the file browser open. Builders of plain figures size their cells for this width.
PLAIN_WIDTH = 848


@builder
def head_blocks_figure(z, n_heads: int, *, along: str, title: str, x_labels=None, y_labels=None, block_label=None,
                       decimals: int | None = None, hovertemplate: str | None = None, height: int = 460,
                       margin: dict | None = None, axis_titles=("", ""), of: str | None = None,
                       theme: Theme | None = None) -> go.Figure:
    """A signed heatmap cut into ``n_heads`` equal blocks by thick lines: the picture of "one slice per head".

    ``along="columns"`` cuts the columns (a token's features: q split into heads, the
    concatenated head outputs); ``along="rows"`` cuts the rows (W_O's per-head blocks).
    ``block_label(h, lo, hi)`` names block h, which spans entries ``lo`` to ``hi`` counted
    from 1, as the figures and the prose count; the label sits above a column block, left
    of a row block. The columns and rows are numbered from 1 too (unless ``x_labels`` or
    ``y_labels`` name them). ``decimals`` prints every value in its cell while the numbers
    fit the cells of a figure ``PLAIN_WIDTH`` wide (else colour and hover only, with a
    colour bar, as for None). ``of`` names what is cut in the error for a count that does
    not divide it (default: "columns" or "rows"). ``theme`` sets every size (None: the
    theme in use now).

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
    x_labels = list(range(1, n_cols + 1)) if x_labels is None else list(x_labels)
    y_labels = list(range(1, n_rows + 1)) if y_labels is None else list(y_labels)
    # Where column (row) i sits on its axis: at its number when the labels are numbers, else at i.
    x_at = (lambda i: x_labels[i]) if all(isinstance(v, int) for v in x_labels) else (lambda i: i)
    y_at = (lambda i: y_labels[i]) if all(isinstance(v, int) for v in y_labels) else (lambda i: i)
    margin = margin or dict(l=110, r=30, t=110, b=70)
    trace = dict(type="heatmap", z=z, x=x_labels, y=y_labels, colorscale=SIGNED_COLORSCALE, zmin=-symmetric_max(z),
                 zmax=symmetric_max(z), xgap=1, ygap=1, hovertemplate=hovertemplate or "%{y}, %{x}: %{z:.2f}<extra></extra>")
    text = None
    if decimals is not None:
        width = cell_px(PLAIN_WIDTH, margin.get("l", 80) + margin.get("r", 80), (0, 1), n_cols)
        tall = cell_px(height, margin.get("t", 100) + margin.get("b", 80), (0, 1), n_rows)
        text, _ = cell_numbers(z, width, tall, theme.small_text_size, decimals=(decimals,))
    if text is None:
        trace["colorbar"] = dict(title=dict(text="value", side="right"), thickness=18, outlinewidth=0)
    else:
        trace.update(showscale=False, text=text, texttemplate="%{text}", textfont=dict(size=theme.small_text_size))
    shapes, annotations = [], []
    for h in range(n_heads):
        lo, hi = h * size, (h + 1) * size - 1
        label = block_label(h, lo + 1, hi + 1)
        if along == "columns":
            annotations.append(dict(text=label, x=(x_at(lo) + x_at(hi)) / 2, y=1.0, xref="x", yref="paper",
                                    yanchor="bottom", showarrow=False, font=dict(size=theme.font_size)))
        else:
            annotations.append(dict(text=label, x=-0.02, xref="paper", xanchor="right",
                                    y=(y_at(lo) + y_at(hi)) / 2, yref="y", showarrow=False, font=dict(size=theme.font_size)))
        if h:
            line = dict(type="line", line=dict(color="black", width=4))
            if along == "columns":
                shapes.append(dict(line, x0=x_at(lo) - 0.5, x1=x_at(lo) - 0.5, y0=0, y1=1, xref="x", yref="paper"))
            else:
                shapes.append(dict(line, y0=y_at(lo) - 0.5, y1=y_at(lo) - 0.5, x0=0, x1=1, yref="y", xref="paper"))
    layout = base_layout(title, theme=theme, margin=margin, height=height, shapes=shapes, annotations=annotations)
    numbered = all(isinstance(v, int) for v in x_labels)
    # Numbered columns: every one labelled while the numbers fit side by side, else every second (third ...).
    pitch = cell_px(PLAIN_WIDTH, margin.get("l", 80) + margin.get("r", 80), (0, 1), n_cols)
    step = max(1, int(np.ceil((text_width_px(str(max(x_labels, default=0)), theme.font_size) + 8) / pitch))) if numbered else 1
    layout["xaxis"] = dict(title_text=axis_titles[0], showgrid=False,
                           tickvals=x_labels[::step] if numbered else None)
    layout["yaxis"] = dict(title_text=axis_titles[1], showgrid=False, autorange="reversed",
                           showticklabels=along == "columns")
    return go.Figure(data=[trace], layout=layout)


def legend_at_bottom(**extra) -> dict:
    """A horizontal legend on the figure's bottom edge, below the x axis's tick labels and title.

    Placed in the figure's own coordinates (``yref="container"``), not as a fraction of the plot's height: a
    fraction moves with the figure's height and the theme's text sizes, and put the legend on the axis title
    at one theme or the other. The figure's bottom margin holds the tick labels, the title and the legend's rows.
    """
    return dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0, xanchor="left", **extra)


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


@builder
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
