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

from .. import projector
from ..projector import Theme
from ._style import (
    COLORS,
    PLAIN_WIDTH,
    SCREEN_HEIGHT,
    SIGNED_COLORSCALE,
    WEIGHTS_COLORSCALE,
    WEIGHTS_RANGE,
    WIDGET_WIDTH,
    base_layout,
    builder,
    cell_numbers,
    cell_px,
    colorbar_px,
    head_blocks_figure,
    label_angle,
    outline_trace,
    panel_title,
    row_max_cells,
    row_max_outlines,
    text_width_px,
    title_bottom_px,
    title_chars,
    weights_colorbar,
    widget_height,
    wrap_title,
)

#: Blank cells between two tiles of the head grid.
TILE_GAP = 1
#: The tallest head grid on a laptop: with its one row of head-count buttons it fits the screen
#: (with the projector theme, ``widget_height`` of Presentation Mode sets the limit).
GRID_HEIGHT = SCREEN_HEIGHT - 80


def grid_shape(n_heads: int, cols: int | None = None) -> tuple[int, int]:
    """Rows and columns of tiles for ``n_heads`` heads: one row up to 3, 2 x 2 for 4, then two rows
    of up to 8 tiles (more rows only past 16 heads).

    Wide rows, not a square of tiles: the figure is wider than it is tall, and the room between
    two rows of tiles is where each head's title goes, so few rows keep every tile large.
    ``cols`` fixes the number of tiles across instead.
    """
    if cols is not None:
        cols = max(1, min(cols, n_heads))
    elif n_heads <= 3:
        cols = n_heads
    elif n_heads == 4:
        cols = 2
    else:
        cols = min(8, math.ceil(n_heads / 2))
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


@builder
def head_grid_figure(
    weights: np.ndarray,
    tokens,
    *,
    title: str | None = None,
    head_titles=None,
    show_values: bool | None = None,
    cols: int | None = None,
    width: int | None = None,
    decimals=(2,),
    theme: Theme | None = None,
) -> go.Figure:
    """Every head's attention weights, one tile per head, queries down, keys across.

    In every tile each query's largest weight is outlined, so the pattern reads without
    hovering at any head count. ``show_values`` also writes each weight in its cell; by
    default (None) only while the numbers fit the cells at the theme's size, with the most
    of ``decimals`` that fits. Token labels sit on every tile row and column while they
    fit; when they do not, the axis title lists the tokens in order. ``cols`` fixes the
    number of tiles across (default: see ``grid_shape``). ``width`` fixes the figure's
    width in pixels (a ``FigureWidget`` does not follow its container's width; a plain
    figure does, so leave it None there). The height never exceeds what fits on screen
    with one row of controls above it (``widget_height``: 1280 x 800, or Presentation Mode
    at 1280 x 720 with the projector theme).

    Shapes:
        weights: (H, T, T), rows sum to 1
    """
    return go.Figure(head_grid_spec(weights, tokens, title=title, head_titles=head_titles, show_values=show_values,
                                    cols=cols, width=width, decimals=decimals, theme=theme))


def _head_grid_title(H: int) -> str:
    return f"Attention weights of each of H = {H} {'head' if H == 1 else 'heads'} (rows: query, columns: key)"


def head_grid_spec(weights: np.ndarray, tokens, *, title: str | None = None, head_titles=None,
                   show_values: bool | None = None, cols: int | None = None, width: int | None = None,
                   decimals=(2,), theme: Theme | None = None) -> dict:
    """``head_grid_figure`` as a plain ``{"data", "layout"}`` dict, for a control that redraws it on every
    move (plotly's checks run where the control copies it into its ``FigureWidget``)."""
    theme = projector.resolve(theme)
    weights = np.asarray(weights, dtype=float)
    tokens = list(tokens)
    if weights.ndim != 3 or weights.shape[1] != weights.shape[2] or weights.shape[1] != len(tokens):
        raise ValueError(f"weights must have shape (H, T, T) with T = {len(tokens)} tokens; got {weights.shape}")
    H, T, _ = weights.shape
    rows, cols = grid_shape(H, cols)
    if head_titles is None:
        # The same words at every theme (the browser tests compare them): a number alone past 8 heads,
        # where "head 16" would not fit above a tile.
        head_titles = [f"head {h + 1}" if H <= 8 else str(h + 1) for h in range(H)]
    title = title or _head_grid_title(H)

    z, hover = _tiled(weights, tokens, cols)
    blank = np.isnan(z)
    n_high, n_wide = z.shape
    label_size = theme.font_size if cols <= 2 else theme.dense_label_size
    line = round(1.35 * label_size)  # one line of label text, with its leading and the annotation's padding

    # Pixels: the figure is as wide as its output (WIDGET_WIDTH for a live one) and at most as tall as fits.
    fig_width = width or WIDGET_WIDTH
    longest = max(text_width_px(tok, label_size) for tok in tokens)
    colorbar_px = 40 + round(text_width_px("0.5", theme.font_size)) + theme.font_size
    margin = dict(l=round(longest) + theme.font_size + 30, r=20 + colorbar_px)
    plot_width = fig_width - margin["l"] - margin["r"]
    cell_w = plot_width / n_wide
    # Head titles wrap to their tile's width (the hand-set sketch's long titles).
    tile_chars = max(6, int((T * cell_w) / (0.57 * label_size)))
    tile_titles = [wrap_title(str(t).replace("<br>", " "), tile_chars) for t in head_titles]
    title_rows = max(t.count("<br>") + 1 for t in tile_titles)
    horizontal_keys = longest + 8 <= cell_w
    upright_keys = 1.15 * label_size + 1 <= cell_w  # rotated a quarter turn, a label is one line thick
    margin["t"] = title_bottom_px(wrap_title(title, title_chars(theme)), theme) + 16 + title_rows * line
    height_limit = widget_height(theme, rows=1) if theme.projector else GRID_HEIGHT
    # Key labels under the tiles while the cells stay tall enough; else the axis title lists the keys.
    for key_ticks in ((True, False) if horizontal_keys or upright_keys else (False,)):
        tick_depth = (line if horizontal_keys else round(longest) + 6) if key_ticks else 0
        margin["b"] = tick_depth + round(1.3 * theme.font_size) + 24
        cell_h = (height_limit - margin["t"] - margin["b"] - (rows - 1) * max(0, title_rows - 1) * line) / n_high
        if rows == 1 or cell_h >= line:
            break
    # Cells no taller than 1.6 x their width, unless a query label needs the height.
    cell_h = min(cell_h, max(1.6 * cell_w, 1.15 * label_size + 3), 64.0)
    if rows > 1 and cell_h < line:
        # Between two rows of tiles the blank row holds the lower tiles' titles: never shorter than a line
        # (the figure may then pass the height limit: more heads than the screen holds at this size).
        cell_h = float(line)
    cell_w = min(cell_w, 1.6 * cell_h)

    if show_values is None:
        text, _ = cell_numbers(weights, cell_w, cell_h, theme.cell_text_size, decimals=decimals)
        show_values = text is not None
        chosen = decimals[0] if text is None else _
    else:
        chosen = decimals[0]
    trace = dict(
        type="heatmap",
        # Blank cells go out as null: NaN is not valid JSON, and a FigureWidget sends a 2-D array as a JSON list.
        z=np.where(blank, None, z).tolist(),
        zmin=WEIGHTS_RANGE[0],
        zmax=WEIGHTS_RANGE[1],
        colorscale=WEIGHTS_COLORSCALE,
        colorbar=weights_colorbar(len=min(1.0, max(0.5, 0.5 * rows)), x=1.02),
        xgap=1,
        ygap=1,
        hoverongaps=False,
        hovertext=hover,
        hovertemplate="%{hovertext}: %{z:.2f}<extra></extra>",
    )
    if show_values:
        trace.update(
            text=np.where(blank, "", np.char.mod(f"%.{chosen}f", np.round(np.nan_to_num(z), chosen) + 0.0)),
            texttemplate="%{text}",
            textfont=dict(size=theme.cell_text_size),
        )

    # Each query's largest weight, outlined along its cell's edges (every key that ties with it: the hand-set
    # rows split 0.5 / 0.5), so the outline never crosses a printed number.
    thick = 3 if min(cell_w, cell_h) >= 20 else 2
    outline = outline_trace([cell for h in range(H) for cell in row_max_cells(weights[h], tile_origin(h, H, T, cols))],
                            color=TOP_WEIGHT_COLOR, width=thick)

    step = T + TILE_GAP
    tick_font = dict(size=label_size)
    # Query labels on every tile row while they fit one per cell; else every second (third ...) query.
    every = max(1, math.ceil((1.15 * label_size + 2) / cell_h))
    y_ticks = [(r * step + i, tok) for r in range(rows) for i, tok in enumerate(tokens) if i % every == 0]
    x_ticks = [(c * step + j, tok) for c in range(cols) for j, tok in enumerate(tokens)] if key_ticks else []
    order = " ".join(tokens)
    x_title = "key token" if key_ticks else f"key token; in each tile, left to right: {order}"
    annotations = [
        dict(text=tile_titles[h], x=tile_origin(h, H, T, cols)[1] + (T - 1) / 2, y=tile_origin(h, H, T, cols)[0] - 0.5,
             xref="x", yref="y", showarrow=False, yanchor="bottom", font=tick_font)
        for h in range(H)
    ]
    plot_w, plot_h = n_wide * cell_w, n_high * cell_h
    x_end = min(1.0, plot_w / max(plot_width, 1))
    trace["colorbar"]["x"] = x_end + 0.02
    layout = base_layout(
        title,
        theme=theme,
        fit_title=False,
        margin=margin,
        height=round(margin["t"] + margin["b"] + plot_h),
        width=width,
        annotations=annotations,
        xaxis=dict(
            tickvals=[p for p, _ in x_ticks], ticktext=[t for _, t in x_ticks], tickfont=tick_font,
            showticklabels=key_ticks, title=dict(text=x_title, standoff=12),
            tickangle=0 if horizontal_keys else -90, showgrid=False, zeroline=False,
            range=[-0.5, n_wide - 0.5], domain=[0, x_end],
        ),
        yaxis=dict(
            tickvals=[p for p, _ in y_ticks], ticktext=[t for _, t in y_ticks], tickfont=tick_font,
            title=dict(text="query token", standoff=12), autorange="reversed", showgrid=False, zeroline=False,
        ),
    )
    # One constructor call (no update_layout afterwards): a control rebuilds this on every move.
    return {"data": [trace, outline], "layout": layout}


@builder
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
        block_label=lambda h, lo, hi: f"head {h + 1}<br>entries {lo}-{hi}" if hi > lo else f"h{h + 1}",
        hovertemplate="token %{y}, entry %{x} of q: %{z:.2f}<extra></extra>",
        margin=dict(l=110, r=30, t=130, b=70), axis_titles=("entry of q (1 to D)", "token"), of="d_model",
        theme=theme,
    )


@builder
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


@builder
def token_views_figure(q_heads: np.ndarray, weight_rows: np.ndarray, tokens, *, query_token: str,
                       theme: Theme | None = None) -> go.Figure:
    """One token seen by each head: its query slice per head (left), and where it looks (right).

    Numbers are printed in the cells while they fit a figure ``PLAIN_WIDTH`` wide at the theme's
    size; each head's largest weight is outlined on the right either way.

    Shapes:
        q_heads: (H, Dh), the token's query in each head
        weight_rows: (H, T), the token's attention weights in each head
    """
    theme = projector.resolve(theme)
    q_heads = np.asarray(q_heads, dtype=float)
    weight_rows = np.asarray(weight_rows, dtype=float)
    tokens = list(tokens)
    H, Dh = q_heads.shape
    T = len(tokens)
    head_names = [f"head {h + 1}" for h in range(H)]
    limit = float(np.max(np.abs(q_heads))) or 1.0
    font = theme.font_size
    left, right = [0.0, 0.40], [0.55, 1.0]
    title = (f"The token '{query_token}' in each of H = {H} {'head' if H == 1 else 'heads'}: its query (left), "
             f"where it looks (right)")
    names_px = round(text_width_px("head 10", font))
    height = 170 + 70 * H
    margin = dict(l=names_px + 40, r=30 + colorbar_px(theme), t=90, b=80)
    key_pitch = cell_px(PLAIN_WIDTH, margin["l"] + margin["r"], right, T)
    angle = label_angle(tokens, key_pitch, font)
    if angle:
        margin["b"] = round(max(text_width_px(t, font) for t in tokens)) + 2 * font + 20
        height += margin["b"] - 80
    cell_h = cell_px(height, margin["t"] + margin["b"], [0, 0.9], H)
    q_text, _ = cell_numbers(q_heads, cell_px(PLAIN_WIDTH, margin["l"] + margin["r"], left, Dh), cell_h,
                             theme.cell_text_size, decimals=(1,))
    w_text, _ = cell_numbers(weight_rows, key_pitch, cell_h, theme.cell_text_size, decimals=(2,))
    entries = list(range(1, Dh + 1))
    query = dict(
        type="heatmap", z=q_heads, x=entries, y=head_names, colorscale=SIGNED_COLORSCALE, zmin=-limit, zmax=limit,
        # No colour bar: a second bar between the panels would sit on the right panel's head labels.
        xgap=1, ygap=1, showscale=False, xaxis="x", yaxis="y",
        hovertemplate="%{y}, entry %{x}: %{z:.2f}<extra></extra>",
    )
    if q_text is not None:
        query.update(text=q_text, texttemplate="%{text}", textfont=dict(size=theme.cell_text_size))
    looks = dict(
        type="heatmap", z=weight_rows, x=tokens, y=head_names, colorscale=WEIGHTS_COLORSCALE,
        zmin=WEIGHTS_RANGE[0], zmax=WEIGHTS_RANGE[1], xgap=1, ygap=1, xaxis="x2", yaxis="y2",
        colorbar=weights_colorbar(x=1.02, len=0.9, y=0.45),
        hovertemplate="%{y}: key %{x} gets %{z:.2f}<extra></extra>",
    )
    if w_text is not None:
        looks.update(text=w_text, texttemplate="%{text}", textfont=dict(size=theme.cell_text_size))
    layout = dict(
        **base_layout(title, margin=margin, theme=theme),
        height=height,
        showlegend=False,
        xaxis=dict(domain=left, anchor="y", title_text="entry of the head's query", tickvals=entries, showgrid=False),
        yaxis=dict(domain=[0, 0.9], anchor="x", autorange="reversed", showgrid=False),
        xaxis2=dict(domain=right, anchor="y2", title_text="key token", tickangle=angle, showgrid=False),
        yaxis2=dict(domain=[0, 0.9], anchor="x2", autorange="reversed", showgrid=False),
        annotations=[panel_title(f"its query in each head (d_head = {Dh})", left, 0.92, theme=theme),
                     panel_title("its attention weights in each head", right, 0.92, theme=theme)],
        # Each head's largest weight, outlined: which key the token favours in each head.
        shapes=row_max_outlines(weight_rows, xref="x2", yref="y2", color=TOP_WEIGHT_COLOR),
    )
    return go.Figure(data=[query, looks], layout=layout)


@builder
def hand_set_figure(weights: np.ndarray, tokens, head_titles, *, theme: Theme | None = None) -> go.Figure:
    """The hand-set sketch: three heads whose weights were written by hand, not learned.

    The weights are 0, 0.5 and 1, so one decimal says everything: it is printed while it fits
    the cells (a laptop), and every query's largest weight, ties included, is outlined either way.

    Shapes:
        weights: (3, T, T), rows sum to 1
    """
    return head_grid_figure(
        weights,
        tokens,
        title="SET BY HAND for illustration, not learned: three made-up heads",
        head_titles=list(head_titles),
        cols=len(head_titles),
        decimals=(2, 1),
        theme=theme,
    )
