"""Figures for notebook 03: one layer, several heads, several views of the same tokens.

Builders are pure: arrays and the theme (``theme``, a ``projector.Theme``; None: the
theme in use now) in, ``go.Figure`` out.

The head grid draws every head as one tile of a single heatmap, with a blank
(null) row and column between tiles. It looks like a grid of small heatmaps, but it
is one trace on one pair of axes, so a control that changes the head count updates
one trace in place instead of rebuilding a grid of subplots. ``head_tile`` reads a
head's table back out of the figure.
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import projector
from ..projector import Theme
from ._style import (
    COLORS,
    SCREEN_HEIGHT,
    SIGNED_COLORSCALE,
    WEIGHTS_COLORSCALE,
    WEIGHTS_RANGE,
    WIDGET_WIDTH,
    base_layout,
    head_blocks_figure,
)

#: Blank cells between two tiles of the head grid.
TILE_GAP = 1
#: The tallest head grid: with its one row of head-count buttons it fits the screen.
GRID_HEIGHT = SCREEN_HEIGHT - 80


def grid_shape(n_heads: int, cols: int | None = None) -> tuple[int, int]:
    """Rows and columns of tiles for ``n_heads`` heads: at most 4 across, 2 x 2 for 3-4.

    ``cols`` fixes the number of tiles across instead.
    """
    if cols is not None:
        cols = max(1, min(cols, n_heads))
    elif n_heads <= 2:
        cols = n_heads
    elif n_heads <= 4:
        cols = 2
    else:
        cols = 4
    return math.ceil(n_heads / cols), cols


def tile_origin(head: int, n_heads: int, n_tokens: int, cols: int | None = None) -> tuple[int, int]:
    """Row and column (in cells) of the top-left cell of ``head``'s tile in the grid's ``z``."""
    _, cols = grid_shape(n_heads, cols)
    r, c = divmod(head, cols)
    step = n_tokens + TILE_GAP
    return r * step, c * step


def head_tile(z: np.ndarray, head: int, n_heads: int, n_tokens: int, cols: int | None = None) -> np.ndarray:
    """The (T, T) table of ``head`` inside a head grid's ``z`` (the inverse of the tiling)."""
    r0, c0 = tile_origin(head, n_heads, n_tokens, cols)
    z = np.array(z, dtype=float)  # blank cells (None) become NaN
    return z[r0 : r0 + n_tokens, c0 : c0 + n_tokens]  # (T, T)


def _tiled(weights: np.ndarray, tokens, cols: int | None) -> tuple[np.ndarray, np.ndarray]:
    """Lay the heads' tables out as tiles; blank cells are NaN here. Returns z and a hover label per cell."""
    H, T, _ = weights.shape
    rows, cols = grid_shape(H, cols)
    height, width = rows * T + (rows - 1) * TILE_GAP, cols * T + (cols - 1) * TILE_GAP
    z = np.full((height, width), np.nan)
    hover = np.full((height, width), "", dtype=object)
    pairs = np.array([[f"query {q} -> key {k}" for k in tokens] for q in tokens], dtype=object)  # (T, T)
    for h in range(H):
        r0, c0 = tile_origin(h, H, T, cols)
        z[r0 : r0 + T, c0 : c0 + T] = weights[h]  # (T, T) tile
        hover[r0 : r0 + T, c0 : c0 + T] = f"head {h + 1}: " + pairs
    return z, hover


#: Outline of each query's largest weight: readable from the back of a room at any head count.
TOP_WEIGHT_COLOR = COLORS[5]


def head_grid_figure(
    weights: np.ndarray,
    tokens,
    *,
    title: str | None = None,
    head_titles=None,
    show_values: bool | None = None,
    cols: int | None = None,
    width: int | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """Every head's attention weights, one tile per head, queries down, keys across.

    In every tile each query's largest weight is outlined, so the pattern reads without
    hovering at any head count. ``show_values`` also writes each weight in its cell; by
    default only while tiles are large enough to read (two tiles across at most).
    ``cols`` fixes the number of tiles across (default: see ``grid_shape``). ``width``
    fixes the figure's width in pixels (a ``FigureWidget`` does not follow its
    container's width; a plain figure does, so leave it None there). The height never
    exceeds what fits on a 1280 x 800 screen with one row of controls above it.

    Shapes:
        weights: (H, T, T), rows sum to 1
    """
    return go.Figure(head_grid_spec(weights, tokens, title=title, head_titles=head_titles, show_values=show_values,
                                    cols=cols, width=width, theme=theme))


def head_grid_spec(weights: np.ndarray, tokens, *, title: str | None = None, head_titles=None,
                   show_values: bool | None = None, cols: int | None = None, width: int | None = None,
                   theme: Theme | None = None) -> dict:
    """``head_grid_figure`` as a plain ``{"data", "layout"}`` dict, for a control that redraws it on every
    move (plotly's checks run where the control copies it into its ``FigureWidget``)."""
    theme = projector.resolve(theme)
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3 or weights.shape[1] != weights.shape[2] or weights.shape[1] != len(tokens):
        raise ValueError(f"weights must have shape (H, T, T) with T = {len(tokens)} tokens; got {weights.shape}")
    H, T, _ = weights.shape
    rows, cols = grid_shape(H, cols)
    if show_values is None:
        show_values = cols <= 2
    if head_titles is None:
        head_titles = [f"head {h + 1}" for h in range(H)]
    if title is None:
        title = f"Attention weights of each of H = {H} {'head' if H == 1 else 'heads'} (rows: query, columns: key)"

    z, hover = _tiled(weights, tokens, cols)
    blank = np.isnan(z)
    trace = dict(
        type="heatmap",
        # Blank cells go out as null: NaN is not valid JSON, and a FigureWidget sends a 2-D array as a JSON list.
        z=np.where(blank, None, z).tolist(),
        zmin=WEIGHTS_RANGE[0],
        zmax=WEIGHTS_RANGE[1],
        colorscale=WEIGHTS_COLORSCALE,
        colorbar=dict(title=dict(text="weight"), len=min(1.0, 0.45 * rows + 0.1), outlinewidth=0),
        xgap=1,
        ygap=1,
        hoverongaps=False,
        hovertext=hover,
        hovertemplate="%{hovertext}: %{z:.2f}<extra></extra>",
    )
    if show_values:
        trace.update(
            text=np.where(blank, "", np.char.mod("%.2f", np.nan_to_num(z))),
            texttemplate="%{text}",
            textfont=dict(size=theme.small_text_size),
        )

    # Cell size in pixels: big when there are few tiles, never wider or taller than the screen allows.
    step = T + TILE_GAP
    n_cells_high = rows * T + (rows - 1) * TILE_GAP
    n_cells_wide = cols * T + (cols - 1) * TILE_GAP
    margin = dict(l=110, r=30, t=100, b={1: 90, 2: 110}.get(cols, 120))
    plot_width = (width or WIDGET_WIDTH) - margin["l"] - margin["r"] - 90  # less the colour bar
    plot_height = GRID_HEIGHT - margin["t"] - margin["b"] - 12 * (rows - 1)  # less the head titles between rows
    cell_px = min({1: 62, 2: 44}.get(rows, 30), plot_width / n_cells_wide, plot_height / n_cells_high)

    # Each query's largest weight, outlined (one marker per head and query).
    top_x, top_y = [], []
    for h in range(H):
        r0, c0 = tile_origin(h, H, T, cols)
        top_x += [c0 + int(j) for j in weights[h].argmax(axis=-1)]
        top_y += [r0 + i for i in range(T)]
    outline = dict(
        type="scatter", x=top_x, y=top_y, mode="markers", hoverinfo="skip", showlegend=False,
        marker=dict(symbol="square-open", size=max(6, round(cell_px * 0.8)), color=TOP_WEIGHT_COLOR,
                    line=dict(width=3 if cell_px >= 20 else 2)),
    )

    tick_font = dict(size=theme.font_size if cols <= 2 else theme.dense_label_size)
    x_ticks = [(c * step + j, tok) for c in range(cols) for j, tok in enumerate(tokens)]
    y_ticks = [(r * step + i, tok) for r in range(rows) for i, tok in enumerate(tokens)]
    annotations = []
    for h in range(H):
        r0, c0 = tile_origin(h, H, T, cols)
        annotations.append(
            dict(
                text=head_titles[h], x=c0 + (T - 1) / 2, y=r0 - 0.55, xref="x", yref="y",
                showarrow=False, yanchor="bottom", font=tick_font,
            )
        )
    layout = base_layout(
        title,
        theme=theme,
        margin=margin,
        height=round(margin["t"] + margin["b"] + n_cells_high * cell_px + 12 * (rows - 1)),
        width=width,
        annotations=annotations,
        xaxis=dict(
            tickvals=[p for p, _ in x_ticks], ticktext=[t for _, t in x_ticks], tickfont=tick_font,
            title=dict(text="key token"), tickangle={1: 0, 2: -45}.get(cols, -90), showgrid=False, zeroline=False,
            constrain="domain", range=[-0.5, n_cells_wide - 0.5],
        ),
        yaxis=dict(
            tickvals=[p for p, _ in y_ticks], ticktext=[t for _, t in y_ticks], tickfont=tick_font,
            title=dict(text="query token", standoff=18), autorange="reversed", showgrid=False, zeroline=False,
            scaleanchor="x", scaleratio=1, constrain="domain",
        ),
    )
    # One constructor call (no update_layout afterwards): a control rebuilds this on every move.
    return {"data": [trace, outline], "layout": layout}


def head_split_figure(q: np.ndarray, n_heads: int, tokens, *, theme: Theme | None = None) -> go.Figure:
    """The queries of all tokens, (T, D), cut into ``n_heads`` slices of ``d_head`` columns.

    Shapes:
        q: (T, D)
    """
    q = np.asarray(q, dtype=float)
    T, D = q.shape
    d_head = D // n_heads if n_heads and D % n_heads == 0 else None
    return head_blocks_figure(
        q, n_heads, along="columns", y_labels=tokens,
        title=(f"q for the running sentence, shape (T, D) = ({T}, {D}), "
               f"cut into H = {n_heads} {'head' if n_heads == 1 else 'heads'} of d_head = {d_head} "
               f"{'feature' if d_head == 1 else 'features'}"),
        block_label=lambda h, lo, hi: f"head {h + 1}<br>features {lo}-{hi}" if hi > lo else f"h{h + 1}",
        hovertemplate="token %{y}, feature %{x}: %{z:.2f}<extra></extra>",
        margin=dict(l=110, r=30, t=130, b=70), axis_titles=("feature of q (0 to D-1)", "token"), of="d_model",
        theme=theme,
    )


def w_q_slices_figure(w_q: np.ndarray, n_heads: int, *, theme: Theme | None = None) -> go.Figure:
    """W_Q cut into one slice of d_head columns per head: every slice has all D rows.

    Row f is input feature f of a token vector; column c is entry c of the query. So each
    head's slice reads every input feature, and only the query entries are divided up.

    Shapes:
        w_q: (D, H*Dh)
    """
    w_q = np.asarray(w_q, dtype=float)
    D, width = w_q.shape
    d_head = width // n_heads if n_heads and width % n_heads == 0 else None
    return head_blocks_figure(
        w_q, n_heads, along="columns", of="the columns of w_q",
        title=(f"w_q, shape (D, H × d_head) = ({D}, {width}): head h's slice is {d_head} columns "
               f"and all {D} rows, one row per input feature"),
        block_label=lambda h, lo, hi: f"head {h + 1}<br>columns {lo}-{hi}" if hi > lo else f"h{h + 1}",
        hovertemplate="input feature %{y} -> query entry %{x}: %{z:.2f}<extra>entry of w_q</extra>",
        height=560, margin=dict(l=110, r=30, t=140, b=70),
        axis_titles=("query entry (column of w_q)", "input feature of x (row of w_q)"), theme=theme,
    )


def token_views_figure(q_heads: np.ndarray, weight_rows: np.ndarray, tokens, *, query_token: str,
                       theme: Theme | None = None) -> go.Figure:
    """One token seen by each head: its query slice per head (left), and where it looks (right).

    Shapes:
        q_heads: (H, Dh), the token's query in each head
        weight_rows: (H, T), the token's attention weights in each head
    """
    theme = projector.resolve(theme)
    q_heads = np.asarray(q_heads, dtype=float)
    weight_rows = np.asarray(weight_rows, dtype=float)
    H, Dh = q_heads.shape
    head_names = [f"head {h + 1}" for h in range(H)]
    limit = float(np.max(np.abs(q_heads))) or 1.0
    fig = make_subplots(
        rows=1, cols=2, column_widths=[0.42, 0.58], horizontal_spacing=0.14,
        subplot_titles=(f"its query in each head (d_head = {Dh})", "its attention weights in each head"),
    )
    fig.add_trace(
        go.Heatmap(
            z=q_heads, x=list(range(Dh)), y=head_names, colorscale=SIGNED_COLORSCALE, zmin=-limit, zmax=limit,
            # No colour bar: the values are written in the cells, and a second bar between the
            # panels would sit on the right panel's head labels.
            xgap=1, ygap=1, showscale=False,
            text=np.round(q_heads, 1), texttemplate="%{text:.1f}", textfont=dict(size=theme.small_text_size),
            hovertemplate="%{y}, feature %{x}: %{z:.2f}<extra></extra>",
        ),
        row=1, col=1,
    )
    fig.add_trace(
        go.Heatmap(
            z=weight_rows, x=list(tokens), y=head_names, colorscale=WEIGHTS_COLORSCALE,
            zmin=WEIGHTS_RANGE[0], zmax=WEIGHTS_RANGE[1], xgap=1, ygap=1,
            colorbar=dict(title=dict(text="weight"), len=0.9),
            text=np.round(weight_rows, 2), texttemplate="%{text:.2f}", textfont=dict(size=theme.small_text_size),
            hovertemplate="%{y}: key %{x} gets %{z:.2f}<extra></extra>",
        ),
        row=1, col=2,
    )
    fig.update_layout(
        **base_layout(
            f"The token '{query_token}' in each of H = {H} {'head' if H == 1 else 'heads'}: its query (left), where it looks (right)",
            margin=dict(l=100, r=30, t=110, b=80), theme=theme,
        ),
        height=170 + 70 * H,
    )
    fig.update_annotations(font=dict(size=theme.font_size))
    fig.update_yaxes(autorange="reversed", showgrid=False)
    fig.update_xaxes(showgrid=False)
    fig.update_xaxes(title_text="feature of the head's query", tickvals=list(range(Dh)), row=1, col=1)
    fig.update_xaxes(title_text="key token", row=1, col=2)
    return fig


def hand_set_figure(weights: np.ndarray, tokens, head_titles, *, theme: Theme | None = None) -> go.Figure:
    """The hand-set sketch: three heads whose weights were written by hand, not learned.

    Shapes:
        weights: (3, T, T), rows sum to 1
    """
    return head_grid_figure(
        weights,
        tokens,
        title="SET BY HAND for illustration, not learned: three made-up heads",
        head_titles=[t.replace(": ", ":<br>", 1) for t in head_titles],
        show_values=True,
        cols=len(head_titles),
        theme=theme,
    )
