"""Notebook 02's figures: softmax, the division by sqrt(d_head), and masks.

The builders are pure: arrays and the theme (``theme``; None: the one in use now) in, ``go.Figure`` out. The numbers of the scaling figure
come from ``mha_core.analysis.scaling_experiment``, computed once, so a slider only
looks them up.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import projector
from ..analysis import ScalingData, ScalingGradients
from ..projector import Theme
from ._style import (
    COLORS,
    PLAIN_WIDTH,
    WIDGET_WIDTH,
    base_layout,
    builder,
    cell_px,
    colorbar_px,
    label_angle,
    panel_title,
    query_key_axes,
    row_max_outlines,
    signed_heatmap_trace,
    symmetric_max,
    text_width_px,
    title_bottom_px,
    title_chars,
    weights_heatmap_trace,
    widget_height,
    wrap_title,
)
#: Colours and bar patterns for the two cases, so they differ without colour too.
UNSCALED_STYLE = dict(color=COLORS[5], pattern="/", dash="solid", symbol="circle")
SCALED_STYLE = dict(color=COLORS[0], pattern="", dash="dash", symbol="square")


def unique_labels(tokens) -> list[str]:
    """Token labels that plotly keeps apart: a repeat (two ``[PAD]``) gets invisible zero-width spaces.

    A categorical axis merges equal labels, which would fold two ``[PAD]`` rows into one.
    """
    seen: dict[str, int] = {}
    labels = []
    for token in tokens:
        token = str(token)
        n = seen.get(token, 0)
        seen[token] = n + 1
        labels.append(token + "\u200b" * n)
    return labels


# --- softmax: scores in, weights out ----------------------------------------------


@builder
def softmax_spread_figure(rows: dict, key_labels, *, theme: Theme | None = None) -> go.Figure:
    """Grouped bars: the weights softmax makes of each row of scores, one colour and pattern per row.

    ``rows`` maps a legend name (for example "softmax(s)") to that row's weights.

    Shapes:
        each value of rows: (Tk,), sums to 1
    """
    theme = projector.resolve(theme)
    styles = [SCALED_STYLE, UNSCALED_STYLE, dict(color=COLORS[2], pattern=".")]
    traces = []
    for (name, weights), style in zip(rows.items(), styles):
        weights = np.asarray(weights, dtype=float)
        traces.append(dict(
            type="bar", x=list(key_labels), y=weights, name=name,
            marker=dict(color=style["color"], pattern=dict(shape=style["pattern"], fillmode="overlay", fgcolor="white",
                                                          size=10, solidity=0.3)),
            text=[f"{w:.3f}" for w in weights], textposition="outside", textfont=dict(size=theme.font_size),
            cliponaxis=False, hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>",
        ))
    layout = dict(
        **base_layout("Same order of scores, spread wider: the softmax piles the weight onto the top score",
                      margin=dict(l=90, r=30, t=110, b=70), theme=theme),
        height=440,
        barmode="group",
        legend=dict(orientation="h", x=0, y=1.03, xanchor="left", yanchor="bottom"),
        xaxis=dict(title_text="key"),
        yaxis=dict(range=[0, 1.15], title_text="weight"),
    )
    return go.Figure(data=traces, layout=layout)



@builder
def scores_and_weights_figure(scores: np.ndarray, weights: np.ndarray, tokens, *, theme: Theme | None = None) -> go.Figure:
    """Scaled scores (left) and the weights softmax makes of them (right), side by side.

    Shapes:
        scores: (T, T)
        weights: (T, T), rows sum to 1
    """
    theme = projector.resolve(theme)
    scores = np.asarray(scores, dtype=float)
    weights = np.asarray(weights, dtype=float)
    T = scores.shape[0]
    labels = unique_labels(tokens)
    left, right = [0.0, 0.45], [0.55, 1.0]
    height = 200 + 52 * T
    margin = dict(l=round(max(text_width_px(t, theme.font_size) for t in labels)) + 50, r=30 + colorbar_px(theme), t=90,
                  b=70)
    cell_w = cell_px(PLAIN_WIDTH, margin["l"] + margin["r"], left, T)
    cell_h = cell_px(height, margin["t"] + margin["b"], [0, 0.88], T)
    angle = label_angle(labels, cell_w, theme.font_size)
    if angle:
        # Key labels read upwards: the bottom margin takes the longest one.
        margin["b"] = round(max(text_width_px(t, theme.font_size) for t in labels)) + 2 * theme.font_size + 20
        height += margin["b"] - 70
    traces = [
        signed_heatmap_trace(scores, labels, labels, zmax=symmetric_max(scores), xaxis="x", yaxis="y", name="scores",
                             cell_px=(cell_w, cell_h), theme=theme),
        weights_heatmap_trace(weights, labels, labels, xaxis="x2", yaxis="y2", colorbar_x=1.02,
                              cell_px=(cell_w, cell_h), theme=theme),
    ]
    layout = dict(
        **base_layout("Each row of scores (left) becomes a row of weights that sums to 1 (right); outlined: "
                      "each row's largest", theme=theme, margin=margin),
        height=height,
        showlegend=False,
        xaxis=dict(domain=left, anchor="y", title_text="key token", tickangle=angle),
        yaxis=dict(domain=[0, 0.88], anchor="x", autorange="reversed", title_text="query token"),
        xaxis2=dict(domain=right, anchor="y2", title_text="key token", tickangle=angle),
        yaxis2=dict(domain=[0, 0.88], anchor="x2", autorange="reversed", showticklabels=False),
        annotations=[
            panel_title("scores = q·k / √d_head", left, 0.9, theme=theme),
            panel_title("weights = softmax(scores)", right, 0.9, theme=theme),
        ],
        # Each row's highest score and highest weight, outlined: the same key, in every row.
        shapes=row_max_outlines(scores) + row_max_outlines(weights, xref="x2", yref="y2"),
    )
    return go.Figure(data=traces, layout=layout)


# --- why divide by sqrt(d_head) ------------------------------------------------------


@builder
def scaling_figure(data: ScalingData, d_head: int, *, theme: Theme | None = None) -> go.Figure:
    """Left: one query's weights over six keys, without and with the division by sqrt(d_head).
    Right: how far the scores spread as d_head grows, with the current d_head marked.
    """
    return go.Figure(scaling_spec(data, d_head, theme=theme))


def scaling_spec(data: ScalingData, d_head: int, *, theme: Theme | None = None) -> dict:
    """``scaling_figure`` as a plain ``{"data", "layout"}`` dict, for a control that redraws it on every
    move (plotly's checks run where the control copies it into its ``FigureWidget``).

    Two panels stacked, each the full width: the bars on top (twelve of them need the width for
    their numbers at the theme's size), the spread against d_head below (a log axis whose ticks
    4 ... 512 need the width too). The legend sits between the title and the bars, where no axis
    title is; the two lines are named where they run.
    """
    theme = projector.resolve(theme)
    i = data.index(d_head)
    keys = list(data.key_labels)
    d = [int(v) for v in data.d_head_values]  # plain ints: a FigureWidget sends int64 arrays badly
    unscaled, scaled = data.unscaled_weights[i], data.scaled_weights[i]
    y_top = float(np.max(data.unscaled_std)) * 1.15

    def bars(weights, name, style):
        return dict(
            type="bar", x=keys, y=weights, name=name, xaxis="x", yaxis="y",
            marker=dict(color=style["color"], pattern=dict(shape=style["pattern"], fillmode="overlay", fgcolor="white", size=10, solidity=0.3)),
            text=[f"{w:.2f}" for w in weights], textposition="outside", textfont=dict(size=theme.font_size),
            constraintext="none", cliponaxis=False, hovertemplate="%{x}: %{y:.3f}<extra>" + name + "</extra>",
        )

    def spread(values, name, style):
        return dict(
            type="scatter", x=d, y=values, name=name, xaxis="x2", yaxis="y2", mode="lines+markers", showlegend=False,
            line=dict(color=style["color"], dash=style["dash"], width=3),
            marker=dict(symbol=style["symbol"], size=9),
            hovertemplate="d_head = %{x}: std %{y:.2f}<extra>" + name + "</extra>",
        )

    def here(value, style):
        return dict(
            type="scatter", x=[int(d_head)], y=[value], xaxis="x2", yaxis="y2", mode="markers", showlegend=False,
            marker=dict(symbol=style["symbol"], size=18, color=style["color"], line=dict(color="black", width=2)),
            hoverinfo="skip",
        )

    traces = [
        bars(unscaled, "without scaling: softmax(q·k)", UNSCALED_STYLE),
        bars(scaled, "with scaling: softmax(q·k / √d_head)", SCALED_STYLE),
        spread(data.unscaled_std, "q·k", UNSCALED_STYLE),
        spread(data.scaled_std, "q·k / √d_head", SCALED_STYLE),
        here(float(data.unscaled_std[i]), UNSCALED_STYLE),
        here(float(data.scaled_std[i]), SCALED_STYLE),
    ]
    title = (f"d_head = {d_head}: a query's largest weight is {data.unscaled_top[i]:.2f} without scaling, "
             f"{data.scaled_top[i]:.2f} with it (mean of {data.n_queries} queries)")
    height = min(540, widget_height(theme, rows=1))
    font = theme.font_size
    line = round(1.3 * font)
    wrapped_lines = wrap_title(title, title_chars(theme)).count("<br>") + 1
    legend_px, panel_title_px = line + 10, line + 6
    top = title_bottom_px(wrap_title(title, title_chars(theme)), theme) + 10 + legend_px + panel_title_px
    bottom = 2 * line + 20  # tick labels and the axis title of the lower panel
    margin = dict(l=80, r=30, t=top, b=bottom)
    plot = height - top - bottom
    gap = line + 8 + panel_title_px  # the keys under the bars, then the lower panel's title
    bars_px = 0.55 * (plot - gap)
    upper = [1 - bars_px / plot, 1.0]
    lower = [0.0, (plot - bars_px - gap) / plot]
    # The two lines named where they run (a legend entry would show a bar, not a line), at d_head = 128.
    at = d[-3] if len(d) >= 3 else d[-1]
    j = d.index(at)
    layout = dict(
        **base_layout(title, margin=margin, theme=theme, fit_title=False),
        height=height,
        width=WIDGET_WIDTH,
        barmode="group",
        bargap=0.18,
        legend=dict(orientation="h", x=0, xanchor="left", y=1 + (panel_title_px + 4) / plot, yanchor="bottom",
                    font=dict(size=font)),
        xaxis=dict(domain=[0, 1], anchor="y"),
        yaxis=dict(domain=upper, anchor="x", range=[0, 1.3], tickvals=[0, 0.5, 1], title_text="weight"),
        xaxis2=dict(domain=[0, 1], anchor="y2", type="log", tickvals=d, ticktext=[str(v) for v in d],
                    range=[float(np.log10(min(d))) - 0.08, float(np.log10(max(d))) + 0.08], tickangle=0,
                    title=dict(text="d_head (log scale)", standoff=6)),
        yaxis2=dict(domain=lower, anchor="x2", range=[0, y_top], title_text="std", nticks=4),
        annotations=[
            panel_title("one query's weights over six keys (random vectors)", [0, 1], upper[1], theme=theme),
            panel_title(f"spread (std) of the scores at d_head = {d_head}: {data.unscaled_std[i]:.1f} without scaling, "
                        f"{data.scaled_std[i]:.1f} with it", [0, 1], lower[1], theme=theme),
            dict(text="without scaling", x=float(np.log10(at)), y=float(data.unscaled_std[j]), xref="x2", yref="y2",
                 xanchor="right", yanchor="bottom", xshift=-8, showarrow=False, font=dict(size=font, color=UNSCALED_STYLE["color"])),
            dict(text="with scaling", x=float(np.log10(at)), y=float(data.scaled_std[j]), xref="x2", yref="y2",
                 xanchor="center", yanchor="bottom", yshift=8, showarrow=False, font=dict(size=font, color=SCALED_STYLE["color"])),
        ],
    )
    return {"data": traces, "layout": layout}


# --- masks ------------------------------------------------------------------------------


@builder
def saturation_figure(grads: ScalingGradients, *, theme: Theme | None = None) -> go.Figure:
    """Two panels over d_head, without the scale and with it: each query's largest weight
    (box plots, left) and the mean size of the softmax's Jacobian (right, from 0).

    Shapes:
        grads.raw_largest, grads.scaled_largest: (S, Nq)
        grads.raw_norm, grads.scaled_norm: (S,)
    """
    theme = projector.resolve(theme)
    sizes = [str(int(d)) for d in grads.d_head]
    traces = []
    for name, largest, norm, style in (
        ("q·k, not scaled", grads.raw_largest, grads.raw_norm, UNSCALED_STYLE),
        ("q·k / sqrt(d_head)", grads.scaled_largest, grads.scaled_norm, SCALED_STYLE),
    ):
        traces.append(dict(
            type="box", x=np.repeat(sizes, largest.shape[1]), y=largest.reshape(-1), name=name, legendgroup=name,
            marker=dict(color=style["color"]), boxpoints=False, xaxis="x", yaxis="y",
            hovertemplate="d_head %{x}: largest weight %{y:.2f}<extra>" + name + "</extra>",
        ))
        traces.append(dict(
            type="scatter", x=sizes, y=norm, name=name, legendgroup=name, showlegend=False, mode="lines+markers",
            line=dict(color=style["color"], dash=style["dash"], width=3), marker=dict(symbol=style["symbol"], size=10),
            xaxis="x2", yaxis="y2", hovertemplate="d_head %{x}: %{y:.3f}<extra>" + name + "</extra>",
        ))
    layout = dict(
        **base_layout(f"{grads.n_queries} random queries, 6 keys: unscaled scores saturate the softmax and its "
                      "gradient shrinks", margin=dict(l=80, r=30, t=120, b=80), theme=theme),
        height=480,
        boxmode="group",
        legend=dict(orientation="h", x=0, y=1.02, xanchor="left", yanchor="bottom"),
        xaxis=dict(domain=[0, 0.55], title_text="d_head", type="category"),
        yaxis=dict(range=[0, 1.05], title_text="each query's largest weight"),
        xaxis2=dict(domain=[0.68, 1], title_text="d_head", type="category"),
        yaxis2=dict(range=[0, 1.15 * float(max(grads.raw_norm.max(), grads.scaled_norm.max()))],
                    title_text="size of d weights / d scores", anchor="x2"),
    )
    return go.Figure(data=traces, layout=layout)


@builder
def masked_weights_figure(weights: np.ndarray, query_tokens, key_tokens, blocked: np.ndarray, *, title: str,
                          theme: Theme | None = None) -> go.Figure:
    """Attention weights with blocked cells written as 'blocked' (their weight is exactly 0).

    Shapes:
        weights: (Tq, Tk), rows sum to 1 (0 for a fully blocked row)
        blocked: (Tq, Tk) bool, True = blocked
    """
    return go.Figure(masked_weights_spec(weights, query_tokens, key_tokens, blocked, title=title, theme=theme))


def masked_weights_spec(weights: np.ndarray, query_tokens, key_tokens, blocked: np.ndarray, *, title: str,
                        theme: Theme | None = None) -> dict:
    """``masked_weights_figure`` as a plain ``{"data", "layout"}`` dict, for a control (see ``scaling_spec``)."""
    theme = projector.resolve(theme)
    weights = np.asarray(weights, dtype=float)
    blocked = np.broadcast_to(np.asarray(blocked, dtype=bool), weights.shape)
    Tq = weights.shape[0]
    text = np.where(blocked, "blocked", np.char.mod("%.2f", weights))
    trace = weights_heatmap_trace(weights, unique_labels(query_tokens), unique_labels(key_tokens), text=text,
                                  theme=theme)
    # At most what fits below its row of buttons: 1280 x 800, or Presentation Mode at 1280 x 720 when projecting.
    layout = dict(**base_layout(title, theme=theme), height=min(170 + 48 * Tq, widget_height(theme, rows=1)),
                  width=WIDGET_WIDTH, **query_key_axes())
    return {"data": [trace], "layout": layout}
