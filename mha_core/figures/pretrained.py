"""Figures for notebooks 07 and 08 (real half): the heads of all-MiniLM-L6-v2.

Builders are pure: arrays and the theme (``theme``; None: the one in use now) in, ``go.Figure`` out. Heads are named for people, layer and
head counted from 1 ("L3 H7"); arrays index them from 0.

- ``head_map_figure``: one value per head, as a layers-by-heads table with a word in each cell.
- ``layer_heads_figure``: one layer's heads as small tiles (left) and one head large (right);
  the live figure of notebook 07.
- ``head_similarity_figure``: how alike the 72 heads attend, in cluster order.
- ``pruning_step_figure``: the held-out sentences' cosines after n heads are switched off;
  the live figure of notebook 08's real half.
- ``pruning_curve_figure``: the mean and worst cosines as heads go, greedily.
- ``removal_effect_figure``: where each head looks against what switching it off changes.

Every figure that reads a cosine between embeddings takes ``calibration``, the bands of
``analysis.CosineCalibration.as_dict()``: ``{"paraphrase": (lowest, mean, highest),
"unrelated": (...)}``, and marks them, so a reader can tell a large change from a small one.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import _validate, projector
from ..projector import Theme
from ._style import (COLORS, PLAIN_WIDTH, WEIGHTS_COLORSCALE, WEIGHTS_RANGE, base_layout, cell_text_fits, reference_line,
                     builder, text_width_px, tick_step, weights_heatmap_trace)

#: Live figures stay within this width (JupyterLab at 1280 x 800 with the file browser open).
LIVE_WIDTH = 800


def _head_axes(L: int, H: int) -> dict:
    return dict(
        # Ticks read H1..H12 across the top; an axis title there would sit on the figure's title.
        xaxis=dict(tickvals=list(range(H)), ticktext=[f"H{h + 1}" for h in range(H)], side="top",
                   showgrid=False, zeroline=False),
        yaxis=dict(tickvals=list(range(L)), ticktext=[f"L{l + 1}" for l in range(L)], title_text="layer",
                   autorange="reversed", showgrid=False, zeroline=False),
    )


@builder
def head_map_figure(values: np.ndarray, labels, *, title: str, value_name: str = "weight",
                    zrange=WEIGHTS_RANGE, colorscale: str = WEIGHTS_COLORSCALE, height: int = 360,
                    theme: Theme | None = None) -> go.Figure:
    """One number per head (the colour) and a short word per head (written in the cell).

    The words are sized for the narrowest output area (``PLAIN_WIDTH``): a word too wide for
    its cell goes on two lines (at its space, "escape<br>(8)"), and the rows grow to hold
    them. Where even that does not fit (20 px words in twelve columns), the table turns: heads
    down, layers across, so each cell is twice as wide.

    Shapes:
        values: (L, H)
        labels: (L, H) strings
    """
    theme = projector.resolve(theme)
    values = np.asarray(values, dtype=float)
    labels = np.asarray(labels, dtype=object)
    if values.ndim != 2 or labels.shape != values.shape:
        raise ValueError(f"values and labels must both have shape (L, H); got {values.shape} and {labels.shape}")
    L, H = values.shape
    names = np.array([[f"L{l + 1} H{h + 1}" for h in range(H)] for l in range(L)], dtype=object)  # (L, H)
    size = theme.small_text_size
    margin = dict(l=80, r=30, t=100, b=20)
    room = PLAIN_WIDTH - margin["l"] - margin["r"] - 86  # less the colour bar and its labels
    texts = [str(t) for t in labels.ravel()]
    halves = [part for t in texts for part in t.split(" ", 1)]
    turned = not cell_text_fits(halves, room / H, 1e9, size)  # heads down, layers across: cells twice as wide
    lines = 1 if cell_text_fits(texts, room / (L if turned else H), 1e9, size) else 2
    shown = labels.T if turned else labels
    z = values.T if turned else values
    hover = names.T if turned else names
    text = np.vectorize(lambda t: str(t).replace(" ", "<br>", 1) if lines == 2 else str(t), otypes=[object])(shown)
    n_rows = z.shape[0]
    row_px = max((height - margin["t"] - margin["b"]) / L, lines * 1.25 * size + 6)
    trace = go.Heatmap(
        z=z, x=list(range(z.shape[1])), y=list(range(n_rows)), zmin=zrange[0], zmax=zrange[1], colorscale=colorscale,
        text=text, texttemplate="%{text}", textfont=dict(size=size),
        customdata=hover, xgap=2, ygap=2,
        colorbar=dict(title=dict(text=value_name, side="right")),
        hovertemplate="%{customdata}: %{text}, " + value_name + " %{z:.2f}<extra></extra>",
    )
    axes = _head_axes(L, H)
    if turned:
        axes = dict(xaxis=dict(tickvals=list(range(L)), ticktext=[f"L{l + 1}" for l in range(L)], side="top",
                               title_text="", showgrid=False, zeroline=False),
                    yaxis=dict(tickvals=list(range(H)), ticktext=[f"H{h + 1}" for h in range(H)], title_text="head",
                               autorange="reversed", showgrid=False, zeroline=False))
    layout = base_layout(title, theme=theme, height=round(margin["t"] + margin["b"] + n_rows * row_px), margin=margin,
                         **axes)
    return go.Figure(data=[trace], layout=layout)


# --------------------------------------------------------------------------- one layer, live


def tile_gap(n_tokens: int) -> int:
    """Blank cells between two tiles: about a quarter of a tile, so head labels fit above each."""
    return max(2, round(n_tokens / 4))


def tile_corner(head: int, n_tokens: int, cols: int = 4, gap: int | None = None) -> tuple[int, int]:
    """Row and column (in cells) of the top-left cell of ``head``'s tile; one gap row sits above every tile.
    ``gap``: blank cells between tiles (None: ``tile_gap(n_tokens)``)."""
    gap = tile_gap(n_tokens) if gap is None else gap
    step = n_tokens + gap
    r, c = divmod(head, cols)
    return r * step + gap, c * step


def head_tiles(weights: np.ndarray, cols: int = 4, gap: int | None = None) -> np.ndarray:
    """Every head's (T, T) table as a tile of one array; NaN between tiles.

    Shapes:
        weights: (H, T, T)
        returns: (rows * (T + gap), cols * (T + gap) - gap)
    """
    H, T, _ = weights.shape
    gap = tile_gap(T) if gap is None else gap
    rows = -(-H // cols)
    z = np.full((rows * (T + gap), cols * (T + gap) - gap), np.nan)
    for h in range(H):
        r0, c0 = tile_corner(h, T, cols, gap)
        z[r0 : r0 + T, c0 : c0 + T] = weights[h]  # (T, T) tile
    return z


def read_tile(z, head: int, n_tokens: int, cols: int = 4, gap: int | None = None) -> np.ndarray:
    """The (T, T) table of ``head`` inside ``head_tiles``' array (the inverse of the tiling)."""
    r0, c0 = tile_corner(head, n_tokens, cols, gap)
    return np.array(z, dtype=float)[r0 : r0 + n_tokens, c0 : c0 + n_tokens]


def label_gap(n_tokens: int, n_heads: int, *, across_px: float, down_px: float, label_px: float, cols: int = 4) -> int:
    """The fewest blank cells between tiles (at least ``tile_gap``) that leave ``label_px`` for a head's label,
    when the tiles share ``across_px`` by ``down_px`` with square cells."""
    rows = -(-n_heads // cols)
    for gap in range(tile_gap(n_tokens), 4 * n_tokens + 1):
        cell = min(across_px / (cols * (n_tokens + gap) - gap), down_px / (rows * (n_tokens + gap)))
        if gap * cell >= label_px:
            return gap
    return 4 * n_tokens


def layer_heads_height(theme: Theme) -> int:
    """The live figure of 07 under its three rows of controls: 680 px visible on a laptop; 599 px in Presentation
    Mode, where the layer and head buttons, the sentence box and the message line took 252 px (measured)."""
    return 340 if theme.projector else 480


def layer_tiles_gap(n_tokens: int, n_heads: int, *, width: int = LIVE_WIDTH, theme: Theme | None = None) -> int:
    """Blank cells between the tiles of ``layer_heads_figure``: room for each head's label at the theme's size
    (the tiles take 0.33 of the width and 0.8 of the plot's height). ``read_tile(z, h, T, gap=...)`` reads them back."""
    theme = projector.resolve(theme)
    if not theme.projector:
        return tile_gap(n_tokens)  # a quarter of a tile holds the laptop's 14 px labels
    return label_gap(n_tokens, n_heads, across_px=0.33 * (width - 40), down_px=0.8 * (layer_heads_height(theme) - 80),
                     label_px=1.25 * theme.small_text_size)


@builder
def layer_heads_figure(weights: np.ndarray, tokens, *, layer: int, head: int, show_values: bool | None = None,
                       width: int = LIVE_WIDTH, validate: bool = True, theme: Theme | None = None) -> go.Figure:
    """Every head of one layer as a small tile (left), the chosen head large (right).

    ``layer`` and ``head`` count from 0; the figure names them from 1. The chosen
    head's tile is outlined. Values are written in the large table while T <= 12. A
    sentence too long for every token label at the theme's size labels every second
    (or third ...) token instead of shrinking the text.

    Shapes:
        weights: (H, T, T), one layer's weights, rows sum to 1
    """
    theme = projector.resolve(theme)
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3 or weights.shape[1:] != (len(tokens), len(tokens)):
        raise ValueError(f"weights must have shape (H, T, T) with T = {len(tokens)} tokens; got {weights.shape}")
    H, T, _ = weights.shape
    head = _validate.index(head, "head", H, "heads")
    cols = 4
    tokens = list(tokens)
    # Under three rows of controls: 680 px visible on a laptop; 599 px in Presentation Mode, where the layer and
    # head buttons, the sentence box and the message line took 252 px (measured).
    height = layer_heads_height(theme)
    gap = layer_tiles_gap(T, H, width=width, theme=theme)
    z = head_tiles(weights, cols, gap)
    blank = np.isnan(z)
    # No per-cell hover labels on the tiles: they would double what the page holds and
    # every update sends; the large table on the right names its tokens.
    tiles = dict(
        type="heatmap", z=np.where(blank, None, z).tolist(), zmin=WEIGHTS_RANGE[0], zmax=WEIGHTS_RANGE[1],
        colorscale=WEIGHTS_COLORSCALE, showscale=False, hoverongaps=False,
        hovertemplate="weight %{z:.2f}<extra></extra>", xaxis="x", yaxis="y",
    )
    # The large table's cells, in pixels: its x domain is 0.42 of the plot's width, its y domain the plot's height.
    cell_w, cell_h = 0.42 * (width - 40) / T, (height - 80) / T
    if show_values is None:
        show_values = T <= 12 and cell_text_fits(np.char.mod("%.2f", weights[head]).ravel(), cell_w, cell_h,
                                                 theme.small_text_size)
    big = weights_heatmap_trace(
        weights[head], tokens, tokens, xaxis="x2", yaxis="y2", colorbar_x=1.0, theme=theme,
        hovertemplate=f"head {head + 1}: " + "query %{y} -> key %{x}: %{z:.2f}<extra></extra>",
        textfont=dict(size=theme.small_text_size),  # "0.00" fits a cell of an 8-token table
    )
    # Tokens repeat (two 'the's): position on the axis, the word as its label.
    big["x"], big["y"] = list(range(T)), list(range(T))
    # Plain lists, as the tiles: one restyle then carries the same kind of value for both traces.
    big["z"] = weights[head].tolist()
    big["text"] = big["text"].tolist()
    if not show_values:
        big.pop("text"), big.pop("texttemplate")
    annotations = []
    for h in range(H):
        r0, c0 = tile_corner(h, T, cols, gap)
        annotations.append(dict(text=f"H{h + 1}", x=c0 + (T - 1) / 2, y=r0 - gap / 2 - 0.5, xref="x", yref="y",
                                showarrow=False, font=dict(size=theme.small_text_size,
                                                           color="black" if h == head else "#555")))
    r0, c0 = tile_corner(head, T, cols, gap)
    outline = dict(type="rect", xref="x", yref="y", x0=c0 - 0.5, x1=c0 + T - 0.5, y0=r0 - 0.5, y1=r0 + T - 0.5,
                   line=dict(color=COLORS[5], width=3))
    label_size = theme.font_size if T <= 12 else theme.dense_label_size
    # The large table's axes: about 0.42 of the width across; down, the height less the margins, the key labels
    # (written upwards, as tall as the longest shown) and the axis title under them.
    step = tick_step(T, 0.42 * (width - 40), label_size)
    shown = list(range(0, T, step))
    below = max(text_width_px(tokens[i], label_size) for i in shown) + 1.5 * theme.font_size + 16
    rows_shown = list(range(0, T, max(step, tick_step(T, height - 80 - below, label_size))))
    layout = base_layout(
        f"Layer {layer + 1}: its {H} heads (left) and head {head + 1} (right)",
        theme=theme, width=width, height=height, margin=dict(l=20, r=20, t=60, b=20),
        annotations=annotations, shapes=[outline],
        xaxis=dict(domain=[0.0, 0.33], showticklabels=False, showgrid=False, zeroline=False, constrain="domain"),
        yaxis=dict(domain=[0.18, 0.98], autorange="reversed", showticklabels=False, showgrid=False, zeroline=False,
                   scaleanchor="x", scaleratio=1, constrain="domain"),
        # Upright labels' boxes overlap their neighbours' at -60 degrees; at -90 each keeps to its column.
        xaxis2=dict(domain=[0.5, 0.92], anchor="y2", tickvals=shown, ticktext=[tokens[i] for i in shown], tickangle=-90,
                    showgrid=False, zeroline=False, title=dict(text="key token"), tickfont=dict(size=label_size)),
        yaxis2=dict(domain=[0.0, 1.0], anchor="x2", tickvals=rows_shown, ticktext=[tokens[i] for i in rows_shown],
                    autorange="reversed",
                    showgrid=False, zeroline=False, title=dict(text="query token"), tickfont=dict(size=label_size)),
    )
    # Each query's largest weight outlined in the large table: the point stays readable where the numbers do not
    # fit the cells (a projector), and it costs no trace, so every redraw keeps the same two.
    layout["shapes"] = [outline] + largest_weight_outlines(weights[head], xref="x2", yref="y2")
    return go.Figure(data=[tiles, big], layout=layout, _validate=validate)


def largest_weight_outlines(weights: np.ndarray, *, xref: str = "x", yref: str = "y") -> list[dict]:
    """Rectangles (layout shapes) round each row's largest weight, ties included, on the cells' own edges.

    Shapes:
        weights: (Tq, Tk); row i at y = i, column j at x = j
    """
    weights = np.asarray(weights, dtype=float)
    line = dict(color=COLORS[5], width=3)  # vermillion: visible on viridis' dark and bright ends
    return [dict(type="rect", xref=xref, yref=yref, x0=j - 0.5, x1=j + 0.5, y0=i - 0.5, y1=i + 0.5, line=line)
            for i, row in enumerate(weights) if np.any(row > 0)
            for j in np.flatnonzero(np.isclose(row, row.max(), rtol=0, atol=1e-9))]


# --------------------------------------------------------------------------- 08, real half


@builder
def head_similarity_figure(similarity: np.ndarray, order, names, *, theme: Theme | None = None) -> go.Figure:
    """How alike every pair of heads attends (1 - Jensen-Shannon divergence), rows and columns in ``order``.

    Every head is named on hover; the axes name every head that fits at the theme's
    smallest text size (every second or third of 72), so no label shrinks below it.

    Shapes:
        similarity: (N, N) with N = L*H
    """
    theme = projector.resolve(theme)
    similarity = np.asarray(similarity, dtype=float)
    order = list(order)
    names = [names[i] for i in order]
    shown = similarity[np.ix_(order, order)]  # (N, N)
    trace = go.Heatmap(
        z=shown, x=names, y=names, zmin=0.0, zmax=1.0, colorscale="Cividis",
        colorbar=dict(title=dict(text="similarity", side="right")),
        hovertemplate="%{y} and %{x}: %{z:.2f}<extra></extra>",
    )
    size = theme.min_text_size
    step = tick_step(len(names), 800 - 70 - 70, size)  # the plot's 660 px
    ticks = dict(tickvals=names[::step], ticktext=names[::step], tickfont=dict(size=size), showgrid=False,
                 type="category")
    layout = base_layout(
        f"How alike the {len(order)} heads attend, similar heads side by side",
        theme=theme, width=800, height=800, margin=dict(l=70, r=30, t=70, b=70),
        xaxis=dict(tickangle=-90, **ticks),
        yaxis=dict(autorange="reversed", **ticks),
    )
    return go.Figure(data=[trace], layout=layout)


#: How each calibration band is drawn: its label and colour.
CALIBRATION_STYLE = {"paraphrase": ("paraphrase pairs", COLORS[2]), "unrelated": ("unrelated pairs", COLORS[3])}


def _check_calibration(calibration) -> dict:
    if calibration is None or (isinstance(calibration, dict) and not calibration):
        return {}
    if not isinstance(calibration, dict) or set(calibration) != set(CALIBRATION_STYLE):
        raise ValueError("calibration must map 'paraphrase' and 'unrelated' to (lowest, mean, highest) cosines "
                         f"(analysis.CosineCalibration.as_dict()); got {calibration!r:.80}")
    for kind, band in calibration.items():
        lo, mean, hi = (float(v) for v in band)
        if not -1 <= lo <= mean <= hi <= 1:
            raise ValueError(f"calibration[{kind!r}]={band!r} must be cosines with lowest <= mean <= highest")
    return {kind: tuple(float(v) for v in band) for kind, band in calibration.items()}


def calibration_marks(calibration, *, axis: str, theme: Theme, transform=None, log: bool = False,
                      label_place: float | None = None) -> tuple[list, list]:
    """Shapes and annotations marking each calibration band along ``axis`` ("x" or "y").

    A shaded band from the lowest to the highest cosine of the pairs, and a dotted line at
    their mean, labelled "paraphrase pairs: mean 0.78". ``transform`` maps a cosine to the
    axis' value (for an axis of 1 - cosine); ``log`` says the axis is a log axis (plotly
    places shapes there by value, annotations by log10 of it). On an x axis the labels sit
    at ``label_place`` (in the y axis' units, inside the plot), on a y axis at its left edge.
    """
    transform = transform or (lambda c: c)
    place = (lambda v: float(np.log10(v))) if log else (lambda v: v)
    shapes, notes = [], []
    for kind, (lo, mean, hi) in _check_calibration(calibration).items():
        name, colour = CALIBRATION_STYLE[kind]
        a, b = sorted((transform(lo), transform(hi)))
        label = f"{name}: mean {mean:.2f}"
        if axis == "x":
            shapes.append(dict(type="rect", xref="x", x0=a, x1=b, yref="paper", y0=0, y1=1, fillcolor=colour,
                               opacity=0.15, line=dict(width=0), layer="below"))
            line, _ = reference_line(transform(mean), label, theme=theme, axis="x", color=colour, dash="dot")
            notes.append(dict(text=label, xref="x", x=place(transform(mean)), xanchor="center", yref="y",
                              y=label_place, showarrow=False, font=dict(size=theme.small_text_size, color="black"),
                              bgcolor="rgba(255,255,255,0.8)"))
        else:
            shapes.append(dict(type="rect", yref="y", y0=a, y1=b, xref="paper", x0=0, x1=1, fillcolor=colour,
                               opacity=0.15, line=dict(width=0), layer="below"))
            line, note = reference_line(transform(mean), label, theme=theme, axis="y", color=colour, dash="dot",
                                        label_at="start")
            note.update(y=place(transform(mean)), font=dict(size=theme.small_text_size, color="black"))
            notes.append(note)
        line["layer"] = "below"
        shapes.append(line)
    return shapes, notes


def cosine_floor(*values) -> float:
    """The low end of a cosine axis: 0, or lower (in steps of 0.05) when a value drawn is negative."""
    low = min([0.0] + [float(np.min(v)) for v in values if np.size(v)])
    return float(np.floor(low * 20) / 20)


def pruning_step_height(theme: Theme) -> int:
    """The pruning figure's height: under its slider and message line it fits the visible notebook
    (680 px at 1280 x 800; 599 px in Presentation Mode at 1280 x 720, at the projector's 40 px rows)."""
    return 510 if theme.projector else 560


@builder
def pruning_step_figure(cosines: np.ndarray, labels, *, n_removed: int, threshold: float, ranking_accuracy: float,
                        ranking_accuracy_full: float, calibration=None, width: int = LIVE_WIDTH,
                        validate: bool = True, theme: Theme | None = None) -> go.Figure:
    """Each held-out sentence's cosine to the full model's embedding, after ``n_removed`` heads are off.

    One dot per sentence on an axis from a cosine of 0 (unrelated) to 1 (unchanged), with
    the calibration bands marked; dots below ``threshold`` are orange crosses. Each value
    is written in a column right of the plot, where no line or dot can run through it.
    Each sentence is written in full left of its row while it fits the room the figure
    leaves at the theme's size; a longer one ends at a word, with "…" (hover: the whole
    sentence). A calibration label that would reach the threshold's line sits beside it.

    Shapes:
        cosines: (N,), one per held-out sentence
    """
    theme = projector.resolve(theme)
    cosines = np.asarray(cosines, dtype=float)
    calibration = _check_calibration(calibration)
    N = len(cosines)
    below = cosines < threshold
    dots = dict(type="scatter", mode="markers", x=cosines.tolist(), y=list(range(N)),
                marker=dict(color=[COLORS[5] if b else COLORS[0] for b in below],
                            symbol=["x" if b else "circle" for b in below], size=12),
                hovertext=list(labels), hovertemplate="%{hovertext}: %{x:.3f}<extra></extra>")
    lo = cosine_floor(cosines, *[band[0] for band in calibration.values()])
    title = (f"{n_removed} heads off: held-out mean {cosines.mean():.3f}, worst {cosines.min():.3f}; "
             f"pairs {ranking_accuracy:.0%} (all heads {ranking_accuracy_full:.0%})")
    if theme.projector:  # one line at the projector's title size: a second would take two sentences' rows
        title = (f"{n_removed} off: mean {cosines.mean():.3f}, worst {cosines.min():.3f}; "
                 f"pairs {ranking_accuracy:.0%} (all on {ranking_accuracy_full:.0%})")
    size = theme.small_text_size
    # The sentences take what the plot (at least 40% of the width, for the bands' labels) and the value column leave.
    right = round(text_width_px("0.000", size)) + 24
    left = min(max(round(text_width_px(t, size)) for t in labels) + 16 if N else 80, round(0.6 * width) - right)
    band_row = N + 0.3  # a row below the sentences, for the calibration labels
    shapes, annotations = calibration_marks(calibration, axis="x", theme=theme, label_place=band_row)
    plot_px = width - left - right
    for note in annotations:
        if theme.projector:  # two labels of 27 characters do not fit side by side in the projector's narrower plot
            note["text"] = note["text"].replace(" pairs: mean", ":")
        # A label centred on its mean that would reach the threshold's line ends just before it instead.
        half = (text_width_px(note["text"], size) / 2 + 6) / plot_px * (1.02 - lo)
        if note["x"] < threshold < note["x"] + half:
            note.update(x=threshold - 0.01, xanchor="right")
    line, note = reference_line(threshold, f"threshold {threshold}", theme=theme, axis="x", label_at="end")
    shapes.append(line)
    annotations.append(note)
    # The column's header sits above the plot, on the threshold label's line, so every row is a sentence's.
    annotations.append(dict(text="<b>cosine</b>", xref="paper", x=1.0, xanchor="left", yref="paper", y=1,
                            yanchor="bottom", showarrow=False, font=dict(size=size)))
    annotations += [dict(text=f"{c:.3f}", xref="paper", x=1.0, xanchor="left", yref="y", y=i, showarrow=False,
                         font=dict(size=size, color=COLORS[5] if b else "black"))
                    for i, (c, b) in enumerate(zip(cosines, below))]
    # The axis title only where there is room under the rows (on a projector the title and labels say "cosine").
    axis_title = "" if theme.projector else "cosine to the full model's embedding (1 = unchanged)"
    layout = base_layout(
        title, theme=theme, width=width, height=pruning_step_height(theme),
        margin=dict(l=left, r=right, t=12 + round(1.35 * theme.title_size) + round(1.3 * size) + 8,
                    b=60 if axis_title else 36), showlegend=False,
        xaxis=dict(range=[lo, 1.02], title_text=axis_title, showgrid=True, zeroline=False),
        yaxis=dict(range=[band_row + 0.6, -0.6], tickvals=list(range(N)),
                   ticktext=[_fit_words(t, left - 16, size) for t in labels], tickfont=dict(size=size),
                   showgrid=False, zeroline=False),
        shapes=shapes, annotations=annotations,
    )
    return go.Figure(data=[dots], layout=layout, _validate=validate)


def _fit_words(text: str, room_px: float, size: int) -> str:
    """``text`` whole if it fits ``room_px`` at ``size`` px; else as many whole words as fit, then "…"."""
    if text_width_px(text, size) <= room_px:
        return text
    words, kept = text.split(" "), ""
    for word in words:
        trial = f"{kept} {word}" if kept else word
        if text_width_px(trial + " …", size) > room_px:
            break
        kept = trial
    return (kept or text[: max(1, int(room_px // (0.57 * size)) - 1)]) + " …"


@builder
def pruning_curve_figure(n_removed, tuning_mean, held_out_mean, held_out_worst, *, threshold: float,
                         calibration=None, theme: Theme | None = None) -> go.Figure:
    """Mean cosine on the tuning sentences (what the search saw) and on held-out ones, per head removed.

    The y axis runs from a cosine of 0 (or below, if a band goes there) to 1, with the
    calibration bands marked.

    Shapes:
        n_removed, tuning_mean, held_out_mean, held_out_worst: (K+1,)
    """
    theme = projector.resolve(theme)
    calibration = _check_calibration(calibration)
    fig = go.Figure()
    for y, name, colour, dash in ((tuning_mean, "tuning, mean (chosen on these)", COLORS[0], "solid"),
                                  (held_out_mean, "held out, mean", COLORS[1], "solid"),
                                  (held_out_worst, "held out, worst sentence", COLORS[5], "dot")):
        fig.add_trace(go.Scatter(x=list(n_removed), y=list(y), name=name, mode="lines+markers",
                                 line=dict(color=colour, dash=dash, width=3)))
    shapes, annotations = calibration_marks(calibration, axis="y", theme=theme)
    for band_note in annotations:
        # At the right end, where the curves have fallen below the threshold's label: at the left the two
        # labels met on a projector's shorter plot.
        band_note.update(xref="paper", x=1, xanchor="right")
    line, note = reference_line(threshold, f"threshold {threshold}", theme=theme, axis="y", label_at="start")
    note["yanchor"] = "top"  # below the line: the curves run just above it
    shapes.append(line)
    annotations.append(note)
    lo = cosine_floor(held_out_worst, *[band[0] for band in calibration.values()])
    fig.update_layout(**base_layout("Embedding cosine to the full model as heads are switched off, greedily",
                                    theme=theme, height=500, legend=dict(orientation="h", x=0, y=-0.2, xanchor="left", yanchor="top"),
                                    margin=dict(l=90, r=30, t=70, b=130), shapes=shapes, annotations=annotations),
                      xaxis_title="heads switched off (of 72)", yaxis=dict(title_text="cosine", range=[lo, 1.03]))
    return fig


# --------------------------------------------------------------------------- 07: where a head looks, what it does


@builder
def removal_effect_figure(on_words: np.ndarray, cosines: np.ndarray, *, named=(), calibration=None,
                          theme: Theme | None = None) -> go.Figure:
    """Each head: its share of weight on words (x) against how much switching it off changes the embedding (y).

    The y axis is 1 - cosine (0 = unchanged) on a log scale, with the calibration bands
    (1 - their cosines) marked. Layer 6's heads are diamonds, the others circles; heads
    in ``named`` ((layer, head) pairs from 0) are labelled.

    Shapes:
        on_words: (L, H), each head's mean share of weight on words
        cosines: (L, H), each head's mean cosine to the full embedding when it alone is off
    """
    theme = projector.resolve(theme)
    on_words = np.asarray(on_words, dtype=float)
    cosines = np.asarray(cosines, dtype=float)
    if on_words.ndim != 2 or cosines.shape != on_words.shape:
        raise ValueError(f"on_words and cosines must both have shape (L, H); got {on_words.shape} and {cosines.shape}")
    L, H = on_words.shape
    change = np.clip(1.0 - cosines, 1e-6, None)  # (L, H): log axis needs > 0
    names = np.array([[f"L{l + 1} H{h + 1}" for h in range(H)] for l in range(L)], dtype=object)
    data = []
    for rows, name, symbol, colour in ((slice(0, L - 1), f"layers 1-{L - 1}", "circle", COLORS[0]),
                                       (slice(L - 1, L), f"layer {L}", "diamond", COLORS[5])):
        data.append(dict(type="scatter", mode="markers", name=name, x=on_words[rows].ravel().tolist(),
                         y=change[rows].ravel().tolist(), customdata=names[rows].ravel().tolist(),
                         marker=dict(symbol=symbol, size=10, color=colour, line=dict(width=1, color="white")),
                         hovertemplate="%{customdata}: %{x:.2f} of its weight on words, 1 - cosine %{y:.4f}"
                                       "<extra></extra>"))
    annotations = [dict(x=float(on_words[l, h]), y=float(np.log10(change[l, h])), xref="x", yref="y",
                        text=f"<b>{names[l, h]}</b>", showarrow=True, arrowhead=0, ax=0, ay=-26,
                        font=dict(size=theme.small_text_size), bgcolor="rgba(255,255,255,0.85)")
                   for l, h in named]
    shapes, notes = calibration_marks(calibration, axis="y", theme=theme, transform=lambda c: max(1.0 - c, 1e-6), log=True)
    bands = _check_calibration(calibration)
    top = max([change.max()] + [1 - band[0] for band in bands.values()])
    y_range = [float(np.log10(change.min())) - 0.3, float(np.log10(top)) + 0.15]
    decades = list(range(int(np.ceil(y_range[0])), int(np.floor(y_range[1])) + 1))
    layout = base_layout(
        f"Where each of the {L * H} heads looks, against what switching it off changes",
        theme=theme, height=520, margin=dict(l=90, r=30, t=70, b=120), shapes=shapes, annotations=annotations + notes,
        # Below the tick labels and the axis title, in pixels (a fraction of the plot put it on the title).
        legend=dict(orientation="h", x=0, y=-(3.3 * (theme.font_size + 10)) / (520 - 70 - 120), xanchor="left",
                    yanchor="top"),
        xaxis=dict(title_text="share of the head's weight on words (not [CLS], [SEP], punctuation)", range=[0, 1],
                   zeroline=False),
        # Decades only, written as the numbers they are: plotly's own log ticks add small "2" and "5" labels
        # between decades, below the theme's size.
        yaxis=dict(title_text="1 - cosine to the full embedding (log)", type="log", range=y_range,
                   tickvals=[10.0**e for e in decades], ticktext=[f"{10.0**e:.{max(0, -e)}f}" for e in decades]),
    )
    return go.Figure(data=data, layout=layout)
