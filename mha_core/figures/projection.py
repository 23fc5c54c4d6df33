"""Figures for notebook 04: concatenate the heads, then blend them with W_O.

Builders are pure: arrays and the theme (``theme``; None: the one in use now) in, ``go.Figure`` out. The key picture: ``W_O`` is one
block of ``d_head`` rows per head, so the output is a sum of one part per head
(plus the bias ``b_o``).
"""

from __future__ import annotations

import math

import numpy as np
import plotly.graph_objects as go

from .. import _validate, projector
from ..projector import Theme
from ._style import (
    COLORS,
    WIDGET_HEIGHT,
    WIDGET_WIDTH,
    base_layout,
    builder,
    head_blocks_figure,
    text_width_px,
    title_bottom_px,
    title_chars,
    widget_height,
    wrap_title,
)

#: Hatch patterns, one per head, so the stacked parts differ without colour.
HEAD_PATTERNS = ("", "/", ".", "x", "\\", "-", "|", "+")
ALL_HEADS_COLOR = "#000000"
BIAS_COLOR = "#999999"


def head_color(head: int) -> str:
    return COLORS[head % (len(COLORS) - 1)]  # the last colour (black) is kept for "all heads"


@builder
def concat_figure(head_outputs: np.ndarray, *, token: str, theme: Theme | None = None) -> go.Figure:
    """One token's head outputs placed side by side: the concatenation, before ``W_O``.

    Shapes:
        head_outputs: (H, Dh), the token's output in each head
    """
    head_outputs = np.asarray(head_outputs, dtype=float)
    H, Dh = head_outputs.shape
    concat = head_outputs.reshape(1, H * Dh)  # (1, H*Dh)
    return head_blocks_figure(
        concat, H, along="columns", y_labels=[f"'{token}'"], decimals=1,
        title=f"The heads' outputs for '{token}', concatenated: H × d_head = {H} × {Dh} = {H * Dh} numbers",
        hovertemplate="position %{x}: %{z:.2f}<extra></extra>", height=280,
        axis_titles=("position in the concatenated vector", ""), theme=theme,
    )


@builder
def w_o_blocks_figure(w_o: np.ndarray, n_heads: int, *, theme: Theme | None = None) -> go.Figure:
    """``W_O`` as a heatmap with its per-head blocks of rows marked.

    Shapes:
        w_o: (H*Dh, D)
    """
    w_o = np.asarray(w_o, dtype=float)
    rows, D = w_o.shape
    Dh = rows // n_heads if n_heads and rows % n_heads == 0 else None
    return head_blocks_figure(
        # "entry", not "weight": in this course a weight is an attention weight, after the softmax.
        w_o, n_heads, along="rows", of="the rows of w_o",
        title=f"W_O, shape (H × d_head, D) = ({rows}, {D}): one block of {Dh} rows per head",
        block_label=lambda h, lo, hi: f"head {h + 1}'s block<br>rows {lo}-{hi}",
        hovertemplate="row %{y}, output feature %{x}: %{z:.2f}<extra>entry</extra>",
        height=WIDGET_HEIGHT, margin=dict(l=200, r=30, t=70, b=70), axis_titles=("output feature (1 to D)", ""),
        theme=theme,
    )


@builder
def contributions_figure(
    contributions: np.ndarray,
    b_o: np.ndarray | None,
    heads_off,
    *,
    output: np.ndarray,
    output_all: np.ndarray,
    token: str,
    width: int | None = None,
    theme: Theme | None = None,
) -> go.Figure:
    """The output vector of one token, built from one part per head.

    Top: the output with the heads that are on (bars) against the output with every
    head on (black diamonds). Bottom: each head's part ``head_outputs[h] @ w_o_block(h)``,
    stacked; a head that is off contributes nothing. The y-axis range depends only on
    the parts, not on which heads are on, so the bars move against a fixed scale.
    ``width`` fixes the width in pixels (for a ``FigureWidget``, which does not follow
    its container).

    Shapes:
        contributions: (H, D), head h's part of the output (before switching off)
        b_o: (D,) or None
        heads_off: (H,) bool, True = off (or head indices, such as [0, 2])
        output: (D,), the output with the heads in ``heads_off`` switched off
        output_all: (D,), the output with every head on
    """
    return go.Figure(contributions_spec(contributions, b_o, heads_off, output=output, output_all=output_all, token=token,
                                        width=width, theme=theme))


def contributions_spec(contributions: np.ndarray, b_o: np.ndarray | None, heads_off, *, output: np.ndarray,
                       output_all: np.ndarray, token: str, width: int | None = None,
                       theme: Theme | None = None) -> dict:
    """``contributions_figure`` as a plain ``{"data", "layout"}`` dict, for a control that redraws it on
    every click (plotly's checks run where the control copies it into its ``FigureWidget``)."""
    theme = projector.resolve(theme)
    contributions = np.asarray(contributions, dtype=float)
    H, D = contributions.shape
    b_o = np.zeros(D) if b_o is None else np.asarray(b_o, dtype=float)
    on = ~_validate.heads_off(heads_off, H)  # (H,) bool, True = on
    parts = contributions * on[:, None]  # (H, D): an off head adds zeros
    output_now = np.asarray(output, dtype=float)  # (D,)
    output_all = np.asarray(output_all, dtype=float)  # (D,)

    # A range that holds every possible selection: all positive parts stacked up, all negative down.
    top = max(np.max(np.clip(contributions, 0, None).sum(axis=0) + b_o), 0.0)
    bottom = min(np.min(np.clip(contributions, None, 0).sum(axis=0) + b_o), 0.0)
    pad = 0.08 * (top - bottom or 1.0)
    y_range = [bottom - pad, top + pad]

    features = list(range(1, D + 1))  # numbered from 1, as the figures and the prose count
    data = [
        dict(
            type="bar", x=features, y=output_now, name="output, heads on", xaxis="x", yaxis="y",
            marker=dict(color=COLORS[4], line=dict(color="black", width=1)),
            hovertemplate="feature %{x}: %{y:.2f}<extra>heads on</extra>",
        ),
        dict(
            type="scatter", x=features, y=output_all, name="output, all heads on", mode="markers", xaxis="x", yaxis="y",
            marker=dict(symbol="diamond", size=13, color=ALL_HEADS_COLOR),
            hovertemplate="feature %{x}: %{y:.2f}<extra>all heads</extra>",
        ),
    ]
    for h in range(H):
        data.append(
            dict(
                type="bar", x=features, y=parts[h], name=f"head {h + 1}" + ("" if on[h] else " (off)"),
                xaxis="x2", yaxis="y2",
                marker=dict(
                    color=head_color(h),
                    pattern=dict(shape=HEAD_PATTERNS[h % len(HEAD_PATTERNS)], fillmode="overlay", fgcolor="white", solidity=0.35),
                ),
                hovertemplate=f"head {h + 1}, feature %{{x}}: %{{y:.2f}}<extra></extra>",
            )
        )
    data.append(
        dict(
            type="bar", x=features, y=b_o, name="bias b_o", xaxis="x2", yaxis="y2", marker=dict(color=BIAS_COLOR),
            hovertemplate="b_o, feature %{x}: %{y:.2f}<extra></extra>",
        )
    )
    names = [str(h + 1) for h in range(H) if on[h]]
    which = ", ".join(names) if names else "none"
    distance = float(np.linalg.norm(output_now - output_all))
    axis_y = dict(range=y_range, zeroline=True, zerolinecolor="black", zerolinewidth=2, gridcolor="#dddddd")
    font, line = theme.font_size, round(1.3 * theme.font_size)
    panel_title = dict(xref="paper", yref="paper", x=0, xanchor="left", yanchor="bottom", showarrow=False,
                       font=dict(size=font))
    title = f"Heads on: {which} ({len(names)} of {H}). Distance from the all-heads output: {distance:.2f}"
    # In pixels, top to bottom: title, the output's panel, its parts' panel, their feature numbers and axis
    # title, then the legend in rows of its own below everything (never over an axis title).
    fig_width = width or WIDGET_WIDTH
    entries = [t["name"] for t in data]
    # plotly lines a horizontal legend up in columns as wide as its widest entry.
    per_row = max(1, int((fig_width - 60) // (max(text_width_px(n, font) for n in entries) + 46)))
    legend_rows = math.ceil(len(entries) / per_row)
    height = widget_height(theme, rows=1, message=True)
    margin = dict(l=90, r=30, t=title_bottom_px(wrap_title(title, title_chars(theme)), theme) + line + 14,
                  b=2 * line + 22 + legend_rows * (line + 4))
    plot = height - margin["t"] - margin["b"]
    gap = line + 14  # the parts' panel title
    upper = [1 - 0.5 * (plot - gap) / plot, 1.0]
    lower = [0.0, 0.5 * (plot - gap) / plot]
    layout = base_layout(
        title,
        theme=theme,
        fit_title=False,
        margin=margin,
        barmode="relative",
        height=height,
        width=width,
        legend=dict(orientation="h", yanchor="top", y=-(2 * line + 16) / plot, x=0, font=dict(size=font)),
        xaxis=dict(domain=[0, 1], anchor="y", tickvals=features, showticklabels=False),
        yaxis=dict(domain=upper, anchor="x", title=dict(text="value"), **axis_y),
        xaxis2=dict(domain=[0, 1], anchor="y2", matches="x", tickvals=features,
                    title=dict(text="output feature (1 to D)", standoff=6)),
        yaxis2=dict(domain=lower, anchor="x2", title=dict(text="part"), **axis_y),
        annotations=[
            dict(text=f"output for '{token}': heads on (bars), all heads on (diamonds)", y=1.0, yshift=4, **panel_title),
            dict(text="each head's part of it, stacked (a head that is off adds nothing)", y=lower[1], yshift=4,
                 **panel_title),
        ],
    )
    return {"data": data, "layout": layout}
