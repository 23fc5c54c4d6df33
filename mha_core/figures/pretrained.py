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
from ._style import (COLORS, WEIGHTS_COLORSCALE, WEIGHTS_RANGE, base_layout, reference_line, tick_step,
                     weights_heatmap_trace)

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


def head_map_figure(values: np.ndarray, labels, *, title: str, value_name: str = "weight",
                    zrange=WEIGHTS_RANGE, colorscale: str = WEIGHTS_COLORSCALE, height: int = 360,
                    theme: Theme | None = None) -> go.Figure:
    """One number per head (the colour) and a short word per head (written in the cell).

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
    trace = go.Heatmap(
        z=values, x=list(range(H)), y=list(range(L)), zmin=zrange[0], zmax=zrange[1], colorscale=colorscale,
        text=labels, texttemplate="%{text}", textfont=dict(size=theme.small_text_size),
        customdata=names, xgap=2, ygap=2,
        colorbar=dict(title=dict(text=value_name, side="right")),
        hovertemplate="%{customdata}: %{text}, " + value_name + " %{z:.2f}<extra></extra>",
    )
    layout = base_layout(title, theme=theme, height=height, margin=dict(l=80, r=30, t=100, b=20), **_head_axes(L, H))
    return go.Figure(data=[trace], layout=layout)


# --------------------------------------------------------------------------- one layer, live


def tile_gap(n_tokens: int) -> int:
    """Blank cells between two tiles: about a quarter of a tile, so head labels fit above each."""
    return max(2, round(n_tokens / 4))


def tile_corner(head: int, n_tokens: int, cols: int = 4) -> tuple[int, int]:
    """Row and column (in cells) of the top-left cell of ``head``'s tile; one gap row sits above every tile."""
    step = n_tokens + tile_gap(n_tokens)
    r, c = divmod(head, cols)
    return r * step + tile_gap(n_tokens), c * step


def head_tiles(weights: np.ndarray, cols: int = 4) -> np.ndarray:
    """Every head's (T, T) table as a tile of one array; NaN between tiles.

    Shapes:
        weights: (H, T, T)
        returns: (rows * (T + gap), cols * (T + gap) - gap)
    """
    H, T, _ = weights.shape
    gap = tile_gap(T)
    rows = -(-H // cols)
    z = np.full((rows * (T + gap), cols * (T + gap) - gap), np.nan)
    for h in range(H):
        r0, c0 = tile_corner(h, T, cols)
        z[r0 : r0 + T, c0 : c0 + T] = weights[h]  # (T, T) tile
    return z


def read_tile(z, head: int, n_tokens: int, cols: int = 4) -> np.ndarray:
    """The (T, T) table of ``head`` inside ``head_tiles``' array (the inverse of the tiling)."""
    r0, c0 = tile_corner(head, n_tokens, cols)
    return np.array(z, dtype=float)[r0 : r0 + n_tokens, c0 : c0 + n_tokens]


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
    z = head_tiles(weights, cols)
    blank = np.isnan(z)
    # No per-cell hover labels on the tiles: they would double what the page holds and
    # every update sends; the large table on the right names its tokens.
    tiles = dict(
        type="heatmap", z=np.where(blank, None, z).tolist(), zmin=WEIGHTS_RANGE[0], zmax=WEIGHTS_RANGE[1],
        colorscale=WEIGHTS_COLORSCALE, showscale=False, hoverongaps=False,
        hovertemplate="weight %{z:.2f}<extra></extra>", xaxis="x", yaxis="y",
    )
    if show_values is None:
        show_values = T <= 12
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
    gap = tile_gap(T)
    annotations = []
    for h in range(H):
        r0, c0 = tile_corner(h, T, cols)
        annotations.append(dict(text=f"H{h + 1}", x=c0 + (T - 1) / 2, y=r0 - gap / 2 - 0.5, xref="x", yref="y",
                                showarrow=False, font=dict(size=theme.small_text_size,
                                                           color="black" if h == head else "#555")))
    r0, c0 = tile_corner(head, T, cols)
    outline = dict(type="rect", xref="x", yref="y", x0=c0 - 0.5, x1=c0 + T - 0.5, y0=r0 - 0.5, y1=r0 + T - 0.5,
                   line=dict(color=COLORS[5], width=3))
    label_size = theme.font_size if T <= 12 else theme.dense_label_size
    # The large table's axes: about 0.42 of the width across, 400 px down (less the margins).
    step = tick_step(T, min(0.42 * (width - 40), 400), label_size)
    shown = list(range(0, T, step))
    layout = base_layout(
        f"Layer {layer + 1}: its {H} heads (left) and head {head + 1} (right)",
        theme=theme, width=width, height=480, margin=dict(l=20, r=20, t=60, b=20),
        annotations=annotations, shapes=[outline],
        xaxis=dict(domain=[0.0, 0.33], showticklabels=False, showgrid=False, zeroline=False, constrain="domain"),
        yaxis=dict(domain=[0.18, 0.98], autorange="reversed", showticklabels=False, showgrid=False, zeroline=False,
                   scaleanchor="x", scaleratio=1, constrain="domain"),
        xaxis2=dict(domain=[0.5, 0.92], anchor="y2", tickvals=shown, ticktext=[tokens[i] for i in shown], tickangle=-60,
                    showgrid=False, zeroline=False, title=dict(text="key token"), tickfont=dict(size=label_size)),
        yaxis2=dict(domain=[0.0, 1.0], anchor="x2", tickvals=shown, ticktext=[tokens[i] for i in shown], autorange="reversed",
                    showgrid=False, zeroline=False, title=dict(text="query token"), tickfont=dict(size=label_size)),
    )
    return go.Figure(data=[tiles, big], layout=layout, _validate=validate)


# --------------------------------------------------------------------------- 08, real half


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


def pruning_step_figure(cosines: np.ndarray, labels, *, n_removed: int, threshold: float, ranking_accuracy: float,
                        ranking_accuracy_full: float, calibration=None, width: int = LIVE_WIDTH,
                        validate: bool = True, theme: Theme | None = None) -> go.Figure:
    """Each held-out sentence's cosine to the full model's embedding, after ``n_removed`` heads are off.

    One dot per sentence on an axis from a cosine of 0 (unrelated) to 1 (unchanged), with
    the calibration bands marked; dots below ``threshold`` are orange crosses. Each value
    is written in a column right of the plot, where no line or dot can run through it.

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
    band_row = N + 0.6  # a row below the sentences, for the calibration labels
    shapes, annotations = calibration_marks(calibration, axis="x", theme=theme, label_place=band_row)
    line, note = reference_line(threshold, f"threshold {threshold}", theme=theme, axis="x", label_at="end")
    shapes.append(line)
    annotations.append(note)
    annotations.append(dict(text="<b>cosine</b>", xref="paper", x=1.0, xanchor="left", yref="y", y=-1,
                            showarrow=False, font=dict(size=theme.small_text_size)))
    annotations += [dict(text=f"{c:.3f}", xref="paper", x=1.0, xanchor="left", yref="y", y=i, showarrow=False,
                         font=dict(size=theme.small_text_size, color=COLORS[5] if b else "black"))
                    for i, (c, b) in enumerate(zip(cosines, below))]
    layout = base_layout(
        title, theme=theme, width=width, height=560, margin=dict(l=300, r=70, t=80, b=60), showlegend=False,
        xaxis=dict(range=[lo, 1.02], title_text="cosine to the full model's embedding (1 = unchanged)",
                   showgrid=True, zeroline=False),
        yaxis=dict(range=[band_row + 0.6, -1.5], tickvals=list(range(N)), ticktext=[_short(t) for t in labels],
                   tickfont=dict(size=theme.small_text_size), showgrid=False, zeroline=False),
        shapes=shapes, annotations=annotations,
    )
    return go.Figure(data=[dots], layout=layout, _validate=validate)


def _short(text: str, n: int = 36) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


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
    layout = base_layout(
        f"Where each of the {L * H} heads looks, against what switching it off changes",
        theme=theme, height=520, margin=dict(l=90, r=30, t=70, b=120), shapes=shapes, annotations=annotations + notes,
        legend=dict(orientation="h", x=0, y=-0.18, xanchor="left", yanchor="top"),
        xaxis=dict(title_text="share of the head's weight on words (not [CLS], [SEP], punctuation)", range=[0, 1],
                   zeroline=False),
        yaxis=dict(title_text="1 - cosine to the full embedding (log)", type="log", range=y_range),
    )
    return go.Figure(data=data, layout=layout)
