"""Figures for notebooks 07 and 08 (real half): the heads of all-MiniLM-L6-v2.

Builders are pure: arrays in, ``go.Figure`` out. Heads are named for people, layer and
head counted from 1 ("L3 H7"); arrays index them from 0.

- ``head_map_figure``: one value per head, as a layers-by-heads table with a word in each cell.
- ``layer_heads_figure``: one layer's heads as small tiles (left) and one head large (right);
  the live figure of notebook 07.
- ``head_similarity_figure``: how alike the 72 heads attend, in cluster order.
- ``pruning_step_figure``: the held-out sentences' cosines after n heads are switched off;
  the live figure of notebook 08's real half.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ._style import COLORS, FONT_SIZE, WEIGHTS_COLORSCALE, WEIGHTS_RANGE, base_layout, weights_heatmap_trace

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
                    zrange=WEIGHTS_RANGE, colorscale: str = WEIGHTS_COLORSCALE, height: int = 360) -> go.Figure:
    """One number per head (the colour) and a short word per head (written in the cell).

    Shapes:
        values: (L, H)
        labels: (L, H) strings
    """
    values = np.asarray(values, dtype=float)
    labels = np.asarray(labels, dtype=object)
    if values.ndim != 2 or labels.shape != values.shape:
        raise ValueError(f"values and labels must both have shape (L, H); got {values.shape} and {labels.shape}")
    L, H = values.shape
    names = np.array([[f"L{l + 1} H{h + 1}" for h in range(H)] for l in range(L)], dtype=object)  # (L, H)
    trace = go.Heatmap(
        z=values, x=list(range(H)), y=list(range(L)), zmin=zrange[0], zmax=zrange[1], colorscale=colorscale,
        text=labels, texttemplate="%{text}", textfont=dict(size=FONT_SIZE - 3),
        customdata=names, xgap=2, ygap=2,
        colorbar=dict(title=dict(text=value_name, side="right")),
        hovertemplate="%{customdata}: %{text}, " + value_name + " %{z:.2f}<extra></extra>",
    )
    layout = base_layout(title, height=height, margin=dict(l=80, r=30, t=100, b=20), **_head_axes(L, H))
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
                       width: int = LIVE_WIDTH, validate: bool = True) -> go.Figure:
    """Every head of one layer as a small tile (left), the chosen head large (right).

    ``layer`` and ``head`` count from 0; the figure names them from 1. The chosen
    head's tile is outlined. Values are written in the large table while T <= 12.

    Shapes:
        weights: (H, T, T), one layer's weights, rows sum to 1
    """
    weights = np.asarray(weights, dtype=float)
    if weights.ndim != 3 or weights.shape[1:] != (len(tokens), len(tokens)):
        raise ValueError(f"weights must have shape (H, T, T) with T = {len(tokens)} tokens; got {weights.shape}")
    H, T, _ = weights.shape
    if not 0 <= head < H:
        raise ValueError(f"head={head} is out of range; valid heads are 0 to {H - 1}")
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
        weights[head], tokens, tokens, xaxis="x2", yaxis="y2", colorbar_x=1.0,
        hovertemplate=f"head {head + 1}: " + "query %{y} -> key %{x}: %{z:.2f}<extra></extra>",
        textfont=dict(size=FONT_SIZE - 4),  # "0.00" fits a cell of an 8-token table
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
                                showarrow=False, font=dict(size=FONT_SIZE - 2,
                                                           color="black" if h == head else "#555")))
    r0, c0 = tile_corner(head, T, cols)
    outline = dict(type="rect", xref="x", yref="y", x0=c0 - 0.5, x1=c0 + T - 0.5, y0=r0 - 0.5, y1=r0 + T - 0.5,
                   line=dict(color=COLORS[5], width=3))
    label_size = FONT_SIZE if T <= 12 else max(9, FONT_SIZE - (T - 12) // 2)
    layout = base_layout(
        f"Layer {layer + 1}: its {H} heads (left) and head {head + 1} (right)",
        width=width, height=480, margin=dict(l=20, r=20, t=60, b=20),
        annotations=annotations, shapes=[outline],
        xaxis=dict(domain=[0.0, 0.33], showticklabels=False, showgrid=False, zeroline=False, constrain="domain"),
        yaxis=dict(domain=[0.18, 0.98], autorange="reversed", showticklabels=False, showgrid=False, zeroline=False,
                   scaleanchor="x", scaleratio=1, constrain="domain"),
        xaxis2=dict(domain=[0.5, 0.92], anchor="y2", tickvals=list(range(T)), ticktext=tokens, tickangle=-60,
                    showgrid=False, zeroline=False, title=dict(text="key token"), tickfont=dict(size=label_size)),
        yaxis2=dict(domain=[0.0, 1.0], anchor="x2", tickvals=list(range(T)), ticktext=tokens, autorange="reversed",
                    showgrid=False, zeroline=False, title=dict(text="query token"), tickfont=dict(size=label_size)),
    )
    return go.Figure(data=[tiles, big], layout=layout, _validate=validate)


# --------------------------------------------------------------------------- 08, real half


def head_similarity_figure(similarity: np.ndarray, order, names) -> go.Figure:
    """How alike every pair of heads attends (1 - Jensen-Shannon divergence), rows and columns in ``order``.

    Shapes:
        similarity: (N, N) with N = L*H
    """
    similarity = np.asarray(similarity, dtype=float)
    order = list(order)
    names = [names[i] for i in order]
    shown = similarity[np.ix_(order, order)]  # (N, N)
    trace = go.Heatmap(
        z=shown, x=names, y=names, zmin=0.0, zmax=1.0, colorscale="Cividis",
        colorbar=dict(title=dict(text="similarity", side="right")),
        hovertemplate="%{y} and %{x}: %{z:.2f}<extra></extra>",
    )
    layout = base_layout(
        f"How alike the {len(order)} heads attend, similar heads side by side",
        width=800, height=800, margin=dict(l=70, r=30, t=70, b=70),
        xaxis=dict(tickfont=dict(size=9), tickangle=-90, showgrid=False, type="category"),
        yaxis=dict(tickfont=dict(size=9), autorange="reversed", showgrid=False, type="category"),
    )
    return go.Figure(data=[trace], layout=layout)


def pruning_step_figure(cosines: np.ndarray, labels, *, n_removed: int, threshold: float, ranking_accuracy: float,
                        ranking_accuracy_full: float, width: int = LIVE_WIDTH, validate: bool = True) -> go.Figure:
    """Each held-out sentence's cosine to the full model's embedding, after ``n_removed`` heads are off.

    Shapes:
        cosines: (N,), one per held-out sentence
    """
    cosines = np.asarray(cosines, dtype=float)
    colours = [COLORS[0] if c >= threshold else COLORS[5] for c in cosines]
    bars = dict(type="bar", x=cosines, y=list(range(len(cosines))), orientation="h", marker=dict(color=colours),
                text=[f"{c:.3f}" for c in cosines], textposition="outside", textfont=dict(size=FONT_SIZE - 3),
                hovertext=list(labels), hovertemplate="%{hovertext}: %{x:.3f}<extra></extra>")
    lo = min(0.8, float(np.floor(cosines.min() * 20) / 20)) if cosines.size else 0.8
    title = (f"{n_removed} heads off: held-out mean {cosines.mean():.3f}, worst {cosines.min():.3f}; "
             f"pairs {ranking_accuracy:.0%} (all heads {ranking_accuracy_full:.0%})")
    layout = base_layout(
        title, width=width, height=560, margin=dict(l=330, r=30, t=60, b=60), showlegend=False,
        xaxis=dict(range=[lo, 1.01], title_text="cosine to the full model's embedding", showgrid=True),
        yaxis=dict(tickvals=list(range(len(cosines))), ticktext=[_short(t) for t in labels], autorange="reversed",
                   tickfont=dict(size=FONT_SIZE - 3)),
        shapes=[dict(type="line", x0=threshold, x1=threshold, y0=-0.5, y1=len(cosines) - 0.5, xref="x", yref="y",
                     line=dict(color="black", dash="dash", width=2))],
    )
    return go.Figure(data=[bars], layout=layout, _validate=validate)


def _short(text: str, n: int = 36) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def pruning_curve_figure(n_removed, tuning_mean, held_out_mean, held_out_worst, *, threshold: float) -> go.Figure:
    """Mean cosine on the tuning sentences (what the search saw) and on held-out ones, per head removed.

    Shapes:
        n_removed, tuning_mean, held_out_mean, held_out_worst: (K+1,)
    """
    fig = go.Figure()
    for y, name, colour, dash in ((tuning_mean, "tuning, mean (chosen on these)", COLORS[0], "solid"),
                                  (held_out_mean, "held out, mean", COLORS[1], "solid"),
                                  (held_out_worst, "held out, worst sentence", COLORS[5], "dot")):
        fig.add_trace(go.Scatter(x=list(n_removed), y=list(y), name=name, mode="lines+markers",
                                 line=dict(color=colour, dash=dash, width=3)))
    fig.add_hline(y=threshold, line=dict(color="black", dash="dash"), annotation_text=f"threshold {threshold}",
                  annotation_position="bottom left")
    fig.update_layout(**base_layout("Embedding cosine to the full model as heads are switched off, greedily",
                                    height=440, legend=dict(x=0.01, y=0.05, xanchor="left", yanchor="bottom")),
                      xaxis_title="heads switched off (of 72)", yaxis_title="cosine")
    return fig
