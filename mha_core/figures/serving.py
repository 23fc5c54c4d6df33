"""Figures for notebook 10: what heads cost when a model serves.

Builders are pure: numbers and the theme (``theme``; None: the one in use now) in,
``go.Figure`` out. The numbers come from ``mha_core.tables`` (``growth_rows``,
``calculator_rows``, gathered from ``mha_core.costs``) or from a measurement made
beforehand (``mha_core.serving.HeadSweep``); no builder computes a cost itself.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import projector
from ..projector import Theme
from ..tables import CalculatorRows, GrowthRows
from ._style import builder, COLORS, base_layout

GiB = 2**30
#: Live figures stay under this width (JupyterLab at 1280 x 800 with the file browser open).
CALCULATOR_WIDTH = 800
CHOSEN_COLOR = COLORS[5]  # vermillion: the key/value head count you picked
OTHER_COLOR = COLORS[0]  # blue


def bytes_text(n: int) -> str:
    """2147483648 -> '2.00 GiB'; binary units, three significant digits."""
    n = int(n)
    for unit, size in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size:
            value = n / size
            return f"{value:.3g} {unit}" if value < 1000 else f"{value:,.0f} {unit}"
    return f"{n} bytes"


def kv_kind(n_kv_heads: int, n_heads: int) -> str:
    """'MHA' (every query head has its own keys and values), 'MQA' (one shared) or 'GQA' (groups)."""
    if n_kv_heads == n_heads:
        return "MHA"
    return "MQA" if n_kv_heads == 1 else "GQA"


# -- score tables (T^2) next to the KV cache (T) ---------------------------------------------


@builder
def growth_figure(rows: GrowthRows, *, theme: Theme | None = None) -> go.Figure:
    """Two panels against T: one layer's score tables (grow as T^2) and the KV cache (grows as T), in GiB."""
    theme = projector.resolve(theme)
    x = list(rows.token_counts)
    panels = (
        (1, rows.score_table_bytes, "score tables", f"score tables of one layer:<br>{rows.n_heads} heads × T² × {rows.bytes_per_value} bytes", COLORS[1]),
        (2, rows.kv_cache_bytes, "KV cache", f"KV cache of all {rows.n_layers} layers:<br>T × bytes per token", COLORS[0]),
    )
    data = [
        dict(type="scatter", mode="lines+markers+text", x=x, y=np.array(y, dtype=float) / GiB, name=name,
             xaxis=_ref("x", i), yaxis=_ref("y", i), line=dict(color=color, width=3), marker=dict(size=9),
             # Labels on the points that stand apart only: where the points crowd (T = 512 next to 1,024), a
             # label printed over its neighbour; small values would collide near zero.
             text=[bytes_text(v) if labelled else "" for v, labelled in zip(y, _apart(x, y))],
             textposition="top left",
             textfont=dict(size=theme.small_text_size),
             showlegend=False, hovertemplate="T = %{x:,}: %{text}<extra></extra>")
        for i, y, name, _, color in panels
    ]
    top = 1.15 * max(max(rows.score_table_bytes), max(rows.kv_cache_bytes)) / GiB
    layout = base_layout(
        f"{rows.model}, {8 * rows.bytes_per_value}-bit values: the score tables grow as T², the KV cache as T",
        theme=theme, height=440, margin=dict(l=80, r=30, t=110, b=70),
        annotations=[
            dict(text=title, xref="paper", yref="paper",
                 x=0.0 if i == 1 else 0.56, y=1.0, xanchor="left", yanchor="bottom", showarrow=False,
                 font=dict(size=theme.small_text_size), align="left")
            for i, _, _, title, _ in panels
        ],
    )
    for i, domain in ((1, [0.0, 0.44]), (2, [0.56, 1.0])):
        layout[f"xaxis{i}"] = dict(domain=domain, anchor=_ref("y", i), title=dict(text="tokens T"),
                                   tickvals=x, tickformat=",", gridcolor="#dddddd")
        layout[f"yaxis{i}"] = dict(anchor=_ref("x", i), range=[0, top], title=dict(text="GiB" if i == 1 else ""),
                                   gridcolor="#dddddd")
    return go.Figure(data=data, layout=layout)


def _apart(x, y) -> list[bool]:
    """Which points of a rising line get a value label (placed above and left of the point): those in the right
    two thirds of the x range, a quarter of the range from the next labelled one, and at least an eighth of the
    largest value. Nearer the left end the points crowd: a label there sat over the point before it (T = 512
    next to 1,024) and ran into the y axis."""
    x = [float(v) for v in x]
    span = (max(x) - min(x)) or 1.0
    keep, last = [False] * len(x), None
    for i in range(len(x) - 1, -1, -1):
        if x[i] - min(x) >= span / 3 and y[i] >= max(y) / 8 and (last is None or last - x[i] >= span / 4):
            keep[i], last = True, x[i]
    return keep


# -- the head-count sweep: what stays flat, what moves -------------------------------------------


@builder
def head_sweep_figure(sweep, *, theme: Theme | None = None) -> go.Figure:
    """Three panels against the head count at fixed d_model: KV bytes (flat), FLOPs (nearly flat), measured time.

    ``sweep``: a ``mha_core.serving.HeadSweep`` (measured beforehand, in a notebook cell).
    One line per sequence length T in the FLOPs and time panels.
    """
    theme = projector.resolve(theme)
    x = [str(h) for h in sweep.head_counts]
    data = [
        dict(type="bar", x=x, y=np.array(sweep.kv_bytes_per_token, dtype=float), name="KV bytes per token",
             xaxis="x", yaxis="y", marker=dict(color=OTHER_COLOR), showlegend=False,
             hovertemplate="H = %{x}: %{y:,} bytes<extra></extra>"),
    ]
    dashes = ("solid", "dash", "dot", "dashdot")
    for i, T in enumerate(sweep.token_counts):
        style = dict(color=COLORS[(i + 1) % len(COLORS)], width=3, dash=dashes[i % len(dashes)])
        data.append(dict(type="scatter", mode="lines+markers", x=x, y=np.array(sweep.flops[i], dtype=float) / 1e9,
                         name=f"T = {T}", legendgroup=f"T{T}", xaxis="x2", yaxis="y2", line=style, showlegend=False,
                         hovertemplate=f"T = {T}, H = %{{x}}: %{{y:.3f}} GFLOP<extra></extra>"))
        data.append(dict(type="scatter", mode="lines+markers", x=x, y=1000 * np.asarray(sweep.seconds[i], dtype=float),
                         name=f"T = {T}", legendgroup=f"T{T}", xaxis="x3", yaxis="y3", line=style,
                         hovertemplate=f"T = {T}, H = %{{x}}: %{{y:.2f}} ms<extra></extra>"))
    titles = ("KV cache per token,<br>one layer, fp32 (flat)", "calculated FLOPs<br>(GFLOP, nearly flat)",
              "measured forward time<br>(ms, here)")
    domains = ([0.0, 0.26], [0.37, 0.63], [0.74, 1.0])
    height, line = 480, round(1.3 * theme.font_size)
    top, bottom = 120, 3 * line + 16  # below the plots: tick labels, the axis titles, then the legend
    kv = [int(b) for b in sweep.kv_bytes_per_token]
    # The KV bytes written once above the bars when they are all equal (the point of the panel), else above each
    # bar; a bar's own "outside" text shrank below the theme's size where the bars are narrow (projector).
    kv_notes = ([dict(text=f"<b>{kv[0]:,}</b> at every H", xref="x domain", x=0.5, xanchor="center", yref="y", y=kv[0],
                      yanchor="bottom", showarrow=False, font=dict(size=theme.font_size))] if len(set(kv)) == 1 else
                [dict(text=f"{b:,}", xref="x", x=i, yref="y", y=b, yanchor="bottom", showarrow=False,
                      font=dict(size=theme.small_text_size)) for i, b in enumerate(kv)])
    layout = base_layout(
        f"d_model = {sweep.d_model} fixed, head count H varied: what moves and what stays flat",
        theme=theme, height=height, margin=dict(l=70, r=20, t=top, b=bottom),
        legend=dict(orientation="h", x=0.74, y=-(2 * line + 10) / (height - top - bottom), yanchor="top",
                    font=dict(size=theme.font_size)),
        annotations=[dict(text=t, xref="paper", yref="paper", x=d[0], y=1.0, xanchor="left", yanchor="bottom",
                          showarrow=False, align="left", font=dict(size=theme.small_text_size)) for t, d in zip(titles, domains)]
        + kv_notes,
    )
    kv_top = 1.3 * float(max(sweep.kv_bytes_per_token))
    for i, domain in enumerate(domains, start=1):
        layout[f"xaxis{i}"] = dict(domain=domain, anchor=_ref("y", i), type="category",
                                   title=dict(text="heads H", standoff=6), gridcolor="#dddddd")
        layout[f"yaxis{i}"] = dict(anchor=_ref("x", i), rangemode="tozero", gridcolor="#dddddd")
    layout["yaxis1"]["range"] = [0, kv_top]
    return go.Figure(data=data, layout=layout)


# -- the KV-cache calculator --------------------------------------------------------------------


@builder
def calculator_figure(rows: CalculatorRows, n_kv_heads: int, *, width: int | None = CALCULATOR_WIDTH,
                      theme: Theme | None = None) -> go.Figure:
    """Two bar charts over the key/value head counts (H ... 1): the batch's KV cache, and how many sequences fit.

    The chosen count is drawn in another colour and labelled with its value; a dashed
    line marks the memory left for the cache once the weights are loaded.
    """
    return go.Figure(calculator_spec(rows, n_kv_heads, width=width, theme=theme))


def calculator_height(theme: Theme) -> int:
    """The calculator figure's height at ``theme``.

    Laptop: with four rows of controls, the message line and a readout of five lines it fits in
    the 679 px of notebook a 1280 x 800 screen shows (measured). Projector: the controls are
    40 px rows and the readout keeps two lines (the per-token arithmetic, and the sliding window's
    line for a model with one; the figure's panel titles give the rest), so 292 px keeps the group
    within the 599 px of Presentation Mode at 1280 x 720. At 320 px a model with a window (two
    lines) took 621 px of the 607 shown (measured).
    """
    return 292 if theme.projector else 356


def _integer_ticks(top: float) -> dict:
    """Whole-number ticks from 0 to about ``top`` (a count of sequences: never "200m" for 0.2)."""
    steps = (m * 10**e for e in range(12) for m in (1, 2, 5))  # 1, 2, 5, 10, 20, 50, ...
    step = next(s for s in steps if top / s <= 4)
    return dict(tick0=0, dtick=step, tickformat=",d")


def calculator_spec(rows: CalculatorRows, n_kv_heads: int, *, width: int | None = CALCULATOR_WIDTH,
                    theme: Theme | None = None) -> dict:
    """``calculator_figure`` as a plain ``{"data", "layout"}`` dict, for the control that redraws it on every move.

    The chosen count's numbers are written in the panel titles, above the plots, where no bar can
    run through them; the chosen bars are drawn in another colour. The dashed line (memory left
    once the weights are loaded) is labelled just above it at the panel's left edge; when the
    weights fill the memory there is no line, and the right panel's title says so.
    """
    theme = projector.resolve(theme)
    x = [f"{h} {kv_kind(h, rows.n_heads)}" if h in (rows.n_heads, 1) else str(h) for h in rows.kv_head_counts]
    # The MHA and MQA names go under their numbers: beside them they ran into the next label.
    ticktext = [label.replace(" ", "<br>") for label in x]
    k = rows.kv_head_counts.index(n_kv_heads) if n_kv_heads in rows.kv_head_counts else None
    colors = [CHOSEN_COLOR if i == k else OTHER_COLOR for i in range(len(x))]
    left = max(0, rows.memory_bytes - rows.weights_bytes)
    data = [
        dict(type="bar", x=x, y=np.array(rows.batch_bytes, dtype=float) / GiB, xaxis="x", yaxis="y",
             marker=dict(color=colors), name="KV cache", showlegend=False,
             hovertemplate="Hkv = %{x}: %{y:.3g} GiB<extra>KV cache of the batch</extra>"),
        dict(type="bar", x=x, y=np.array(rows.sequences_that_fit, dtype=float), xaxis="x2", yaxis="y2",
             marker=dict(color=colors), name="sequences", showlegend=False,
             hovertemplate="Hkv = %{x}: %{y:,} sequences<extra>that fit</extra>"),
    ]
    kept = f"<br>the window keeps the last {rows.cached_tokens:,}" if rows.cached_tokens < rows.n_tokens else ""
    if k is None:
        cache_value = fit_value = ""
    else:
        cache_value = f"<br><b>{bytes_text(rows.batch_bytes[k])}</b> with {n_kv_heads} KV heads"
        fit_value = ("<br><b>none</b>: the weights fill the memory" if not left
                     else f"<br><b>{rows.sequences_that_fit[k]:,}</b> with {n_kv_heads} KV heads")
    annotations = [
        dict(text=f"KV cache of {rows.batch} × {rows.n_tokens:,} tokens (GiB){kept}{cache_value}", xref="paper",
             yref="paper", x=0.0, y=1.0, xanchor="left", yanchor="bottom", showarrow=False, align="left",
             font=dict(size=theme.small_text_size)),
        dict(text=f"sequences of {rows.n_tokens:,} tokens that fit{fit_value}", xref="paper", yref="paper", x=0.56,
             y=1.0, xanchor="left", yanchor="bottom", showarrow=False, align="left", font=dict(size=theme.small_text_size)),
    ]
    shapes = []
    if left:
        shapes.append(dict(type="line", xref="x domain", yref="y", x0=0, x1=1, y0=left / GiB, y1=left / GiB,
                           line=dict(color="black", width=2, dash="dash")))
        annotations.append(dict(text=f"free after the weights: {bytes_text(left)}", xref="x domain", yref="y", x=0.0,
                                y=left / GiB, xanchor="left", yanchor="bottom", showarrow=False,
                                font=dict(size=theme.small_text_size), bgcolor="rgba(255,255,255,0.8)"))
    height = calculator_height(theme)
    line = round(1.3 * theme.small_text_size)
    title_lines = 1 + max(annotations[0]["text"].count("<br>"), annotations[1]["text"].count("<br>"))
    top = 20 + round(1.35 * theme.title_size) + line * title_lines
    bottom = 2 * line + 8 + (0 if theme.projector else theme.font_size + 10)  # two-line ticks; an axis title on a laptop
    chosen = "" if k is None else f": {n_kv_heads} KV heads ({kv_kind(n_kv_heads, rows.n_heads)})"
    layout = base_layout(
        f"{rows.model}, {8 * rows.bytes_per_value}-bit, {bytes_text(rows.memory_bytes)} GPU{chosen}",
        theme=theme, width=width, height=height, margin=dict(l=70, r=20, t=top, b=bottom), bargap=0.25,
        annotations=annotations, shapes=shapes,
    )
    plot_px = height - top - bottom
    room = 1 / (1 - min(0.5, (line + 6) / plot_px))  # the dashed line's label fits above it, inside the plot
    top_bytes = room * max(max(rows.batch_bytes), left) / GiB or 1.0
    top_fit = 1.1 * max(max(rows.sequences_that_fit), 3)
    axis_title = "" if theme.projector else "key/value heads Hkv"  # the slider above names them; the room is the bars'
    for i, domain, top_y in ((1, [0.0, 0.44], top_bytes), (2, [0.56, 1.0], top_fit)):
        layout[f"xaxis{i}"] = dict(domain=domain, anchor=_ref("y", i), type="category", tickvals=x, ticktext=ticktext,
                                   title=dict(text=axis_title))
        layout[f"yaxis{i}"] = dict(anchor=_ref("x", i), range=[0, top_y], gridcolor="#dddddd", nticks=5,
                                   tickformat="~g")  # GiB as plain numbers (0.5, not 500m)
    layout["yaxis2"].update(_integer_ticks(top_fit))
    return {"data": data, "layout": layout}


def _ref(letter: str, panel: int) -> str:
    """Plotly's axis reference: 'x' for the first panel, 'x2', 'x3', ... after it."""
    return letter if panel == 1 else f"{letter}{panel}"
