"""Figures for notebook 05: how big is a head, and what grows with the head count.

Builders are pure: numbers and the theme (``theme``; None: the one in use now) in,
``go.Figure`` out. ``mha_core.tables.sizing_rows`` gathers the numbers from
``mha_core.costs`` so a figure never computes a cost itself.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .. import costs, projector
from ..projector import Theme
from ..tables import SizingRows
from ._style import builder, COLORS, base_layout

#: Vaswani et al. 2017, "Attention Is All You Need", Table 3 rows (A): the base model
#: (d_model = 512) with only the head count changed, and the head size with it (the
#: paper's h and d_k = d_v; here n_heads and d_head); perplexity (PPL, lower is better)
#: and BLEU (higher is better) on newstest2013 (dev).
VASWANI_2017_TABLE3_A: tuple[dict, ...] = (
    dict(n_heads=1, d_head=512, ppl=5.29, bleu=24.9),
    dict(n_heads=4, d_head=128, ppl=5.00, bleu=25.5),
    dict(n_heads=8, d_head=64, ppl=4.92, bleu=25.8),
    dict(n_heads=16, d_head=32, ppl=4.91, bleu=25.8),
    dict(n_heads=32, d_head=16, ppl=5.01, bleu=25.4),
)

CURRENT_COLOR = COLORS[5]  # vermillion band: the head count you picked
OTHER_COLOR = COLORS[0]  # blue bars


def sizing_height(theme: Theme) -> int:
    """The sizing figure's height at ``theme``: what the visible notebook leaves under its controls and readout.

    Laptop, 1280 x 800: 680 px visible, less two rows of controls and a readout of four lines.
    Projector, Presentation Mode at 1280 x 720: 599 px visible, less the same at projector sizes.
    """
    visible = 599 if theme.projector else 680
    readout = round(4 * 1.35 * theme.control_font_size)
    return visible - 2 * theme.control_height - readout - 24  # 24: the gaps between the rows


@builder
def sizing_figure(rows: SizingRows, *, n_heads: int, width: int | None = None, theme: Theme | None = None) -> go.Figure:
    """Four bar charts against the head count: d_head, parameters, score-table entries, FLOPs.

    The column of ``n_heads`` is marked in every panel by a shaded, outlined band and
    its value written above it; when ``n_heads`` does not divide d_model nothing is
    marked. (The mark lives in the layout, so moving the head count changes only
    the layout, not the bars.) ``width`` fixes the width in pixels (for a
    ``FigureWidget``, which does not follow its container). The height is
    ``sizing_height(theme)``, so the figure, its controls and their readout fit one screen.
    """
    return go.Figure(sizing_spec(rows, n_heads=n_heads, width=width, theme=theme))


#: The panels' titles: what each shows and which way it goes as H grows (short: a panel is under half the width).
PANEL_TITLES = {
    1: "d_head = d_model / H (shrinks)",
    2: "parameters (flat)",
    3: "score entries, H × T² (grow)",
    4: "FLOPs (hatched part grows)",
}


def sizing_spec(rows: SizingRows, *, n_heads: int, width: int | None = None, theme: Theme | None = None) -> dict:
    """``sizing_figure`` as a plain ``{"data", "layout"}`` dict, for a control that redraws it on every
    move (plotly's checks run where the control copies it into its ``FigureWidget``)."""
    theme = projector.resolve(theme)
    x = [str(h) for h in rows.head_counts]
    matmul = rows.flops_projections + rows.flops_products  # (n,) flat in H
    total = matmul + rows.flops_softmax

    def bar(axis: int, y, name: str, **marker):
        return dict(
            type="bar", x=x, y=np.asarray(y), name=name, xaxis=_ref("x", axis), yaxis=_ref("y", axis),
            marker={"color": OTHER_COLOR, **marker}, showlegend=False,
            hovertemplate=f"H = %{{x}}: %{{y:,}}<extra>{name}</extra>",
        )

    data = [
        bar(1, rows.d_head, "d_head"),
        bar(2, rows.parameters, "parameters"),
        bar(3, rows.score_entries, "score-table entries"),
        bar(4, matmul, "matrix products (flat)"),
        bar(4, rows.flops_softmax, "scale + softmax (grows with H)",
            color=COLORS[2], pattern=dict(shape="/", fgcolor="black", fillmode="overlay", solidity=0.3)),
    ]
    # Vertical room, in pixels: a one-line title, then a panel title above each row of panels, tick labels
    # below each row, and one axis title under the lower row. Nothing is a legend: the fourth panel's title
    # and the hatching name the part that grows, and the readout above the figure gives both numbers.
    height = sizing_height(theme)
    line = theme.font_size + 8  # one line of panel text
    top, bottom = 12 + round(1.35 * theme.title_size) + line, 2 * line
    plot_px = height - top - bottom
    gap = (2 * line + 6) / plot_px  # the upper row's ticks, then the lower row's panel title
    panel = (1 - gap) / 2
    panels = {1: ([0.0, 0.44], [1 - panel, 1.0]), 2: ([0.56, 1.0], [1 - panel, 1.0]),
              3: ([0.0, 0.44], [0.0, panel]), 4: ([0.56, 1.0], [0.0, panel])}
    annotations = [
        dict(text=PANEL_TITLES[i], xref="paper", yref="paper", x=panels[i][0][0], y=panels[i][1][1],
             xanchor="left", yanchor="bottom", showarrow=False, font=dict(size=theme.font_size))
        for i in panels
    ]
    shapes = []
    n = len(rows.head_counts)
    if n_heads in rows.head_counts:
        k = rows.head_counts.index(n_heads)
        # A label wider than its bar stays inside the panel: from the band's left edge near the left end,
        # to its right edge near the right end, centred in between.
        anchor, at = ("left", k - 0.5) if k < n / 3 else (("right", k + 0.5) if k >= 2 * n / 3 else ("center", k))
        marked = ((1, rows.d_head, _exact), (2, rows.parameters, _exact), (3, rows.score_entries, _short), (4, total, _short))
        for i, y, label in marked:
            shapes.append(
                dict(type="rect", xref=_ref("x", i), yref=_ref("y", i) + " domain", x0=k - 0.5, x1=k + 0.5, y0=0, y1=1,
                     fillcolor=CURRENT_COLOR, opacity=0.3, layer="below", line=dict(color="black", width=2, dash="dot"))
            )
            annotations.append(
                dict(text=f"<b>{label(int(y[k]))}</b>", xref=_ref("x", i), yref=_ref("y", i), x=at, y=float(y[k]),
                     xanchor=anchor, yanchor="bottom", showarrow=False, font=dict(size=theme.font_size),
                     bgcolor="rgba(255,255,255,0.8)")
            )
    layout = base_layout(
        _sizing_title(rows, n_heads),
        theme=theme,
        height=height,
        width=width,
        margin=dict(l=80, r=20, t=top, b=bottom),
        barmode="relative",
        showlegend=False,
        annotations=annotations,
        shapes=shapes,
    )
    # Room above the tallest bar for its value label: one line of text of the panel's height.
    headroom = 1 / (1 - min(0.5, (line + 4) / (panel * plot_px)))
    for i, (x_domain, y_domain) in panels.items():
        layout[_axis("x", i)] = dict(domain=x_domain, anchor=_ref("y", i), type="category",
                                   title=dict(text="head count H" if i >= 3 else "", standoff=4))
        layout[_axis("y", i)] = dict(domain=y_domain, anchor=_ref("x", i), gridcolor="#dddddd", tickformat="~s",
                                   nticks=4)
    for i, y in ((1, rows.d_head), (2, rows.parameters), (3, rows.score_entries), (4, total)):
        layout[_axis("y", i)]["range"] = [0, headroom * float(np.max(y))]
    return {"data": data, "layout": layout}


def _ref(letter: str, panel: int) -> str:
    """Plotly's axis reference: 'x' for the first panel, 'x2', 'x3', ... after it."""
    return letter if panel == 1 else f"{letter}{panel}"


def _axis(letter: str, panel: int) -> str:
    """Plotly's layout key of an axis: 'xaxis' for the first panel, 'xaxis2', 'xaxis3', ... after it."""
    return f"{letter}axis" if panel == 1 else f"{letter}axis{panel}"


def _exact(value: int) -> str:
    return f"{value:,}"


def _short(value: int) -> str:
    """12,582,912 -> '12.6 M': short enough to sit above a bar."""
    for size, suffix in ((1e9, " G"), (1e6, " M"), (1e3, " k")):
        if value >= size:
            return f"{value / size:.3g}{suffix}"
    return str(value)


def _sizing_title(rows: SizingRows, n_heads: int) -> str:
    """One line, short enough for a projector's title size (a second line would take the bars' room)."""
    if n_heads in rows.head_counts:
        return f"d_model = {rows.d_model}, T = {rows.n_tokens:,}: H = {n_heads} marked (d_head = {rows.d_model // n_heads})"
    return f"d_model = {rows.d_model}, T = {rows.n_tokens:,}: H = {n_heads} does not divide {rows.d_model}"


@builder
def vaswani_figure(rows=VASWANI_2017_TABLE3_A, *, theme: Theme | None = None) -> go.Figure:
    """Translation quality against head count at fixed d_model = 512 (Vaswani et al. 2017, Table 3 (A)).

    The axes start at each measure's natural floor (BLEU 0, perplexity 1, a perfect score), so a
    difference of a few tenths looks as small as it is next to the whole score. The paper reports
    one number per setting and no spread between training runs.
    """
    theme = projector.resolve(theme)
    # "8<br>(64)": heads, and the head size under them; "H=8<br>d_head=64" was too wide for a projector's
    # columns, and plotly turned every label on its side.
    x = [f"{r['n_heads']}<br>({r['d_head']})" for r in rows]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("BLEU (higher is better), from 0", "perplexity (lower is better), from 1"))
    for col, key, fmt in ((1, "bleu", ".1f"), (2, "ppl", ".2f")):
        positions = "top center"
        y = [r[key] for r in rows]
        best = max(y) if key == "bleu" else min(y)
        fig.add_trace(
            go.Scatter(
                x=x, y=y, mode="lines+markers+text", text=[format(v, fmt) for v in y], textposition=positions,
                textfont=dict(size=theme.font_size), line=dict(color=COLORS[0], width=3),
                marker=dict(size=[18 if v == best else 11 for v in y], color=COLORS[0],
                            symbol=["star" if v == best else "circle" for v in y]),
                showlegend=False, hovertemplate="%{x}: %{y}<extra></extra>",
            ),
            row=1, col=col,
        )
    fig.update_layout(
        **base_layout("Vaswani et al. 2017, Table 3 rows (A): d_model = 512, only the head count changes "
                      "(one training run per setting)",
                      margin=dict(l=80, r=30, t=100, b=100), theme=theme),
        height=520 if theme.projector else 460,
    )
    fig.update_annotations(font=dict(size=theme.font_size))
    fig.update_xaxes(title_text="heads H (and head size d_head)", tickangle=0, gridcolor="#dddddd")
    fig.update_yaxes(gridcolor="#dddddd")
    fig.update_xaxes(range=[-0.4, len(rows) - 0.6])  # room for the labels at both ends
    fig.update_yaxes(range=[0, 36], row=1, col=1)  # BLEU's floor is 0; room above for the labels, under the panel title
    fig.update_yaxes(range=[1, 7.0], row=1, col=2)  # perplexity's floor is 1: sure of every right word
    return fig


@builder
def model_shapes_figure(shapes, *, theme: Theme | None = None) -> go.Figure:
    """A table of real models' attention shapes, with d_model / heads checked against d_head.

    ``shapes``: ``costs.ModelShape`` objects. At projector sizes the table keeps the columns the
    notebook reads (model, d_model, heads, d_head, d_model / H, KV heads, source): nine columns
    of 20 px text do not fit the ~848 px output area, and words were cut inside their cells.
    Each row is as tall as its longest cell (the source takes two or three lines).
    """
    theme = projector.resolve(theme)
    shapes = list(shapes)
    columns = {
        "model": [s.name.replace("-L6-v2", "-<br>L6-v2") if theme.projector else s.name for s in shapes],
        "layers": [s.n_layers for s in shapes],
        "d_model": [f"{s.d_model:,}" for s in shapes],
        "heads H": [s.n_heads for s in shapes],
        "d_head": [s.d_head for s in shapes],
        "d_model / H": [f"{s.d_model // s.n_heads}" + ("" if s.d_model == s.n_heads * s.d_head else " (!)") for s in shapes],
        "KV heads": [s.n_kv_heads for s in shapes],
        "parameters per layer (no biases)": [
            f"{costs.attention_parameters(s.d_model, s.n_heads, s.n_kv_heads, bias=False):,}" for s in shapes
        ],
        # Line breaks after the organisation and before the file keep long repository names inside their column.
        "source": [_source_lines(s.source, theme) for s in shapes],
    }
    # Pixels at the ~805 px a table gets at 1280 x 800 with the file browser open (plotly scales them).
    widths = {"model": 138, "layers": 50, "d_model": 80, "heads H": 55, "d_head": 70, "d_model / H": 80, "KV heads": 52,
              "parameters per layer (no biases)": 100, "source": 185}
    if theme.projector:
        for dropped in ("layers", "parameters per layer (no biases)"):
            columns.pop(dropped)
        widths = {"model": 145, "d_model": 100, "heads H": 75, "d_head": 85, "d_model / H": 95, "KV heads": 80,
                  "source": 220}
    line = round(1.3 * theme.font_size)
    lines = [max(1, *(str(column[i]).count("<br>") + 1 for column in columns.values())) for i in range(len(shapes))]
    header_lines = 2 if theme.projector else 3
    fig = go.Figure(
        go.Table(
            columnwidth=[widths[c] for c in columns],
            header=dict(values=[f"<b>{c}</b>" for c in columns], font=dict(size=theme.small_text_size), align="left",
                        fill_color="#e8eef4", height=header_lines * line + 8),
            cells=dict(values=list(columns.values()), font=dict(size=theme.font_size), align="left",
                       height=max(lines) * line + 10),
        )
    )
    top = 12 + round(1.35 * theme.title_size) + theme.title_line_px + 10  # a title of up to two lines
    fig.update_layout(
        **base_layout("Attention shapes of real models, from each model's published config",
                      margin=dict(l=20, r=20, t=top, b=10), theme=theme),
        height=top + 20 + header_lines * line + 8 + len(shapes) * (max(lines) * line + 10),
    )
    return fig


def _source_lines(source: str, theme: Theme) -> str:
    """'openai-community/gpt2 config.json' as lines that fit the source column: after the organisation, before the file."""
    text = source.replace("/", "/<br>", 1).replace(" ", "<br>")
    if theme.projector:
        text = text.replace("sentence-transformers/", "sentence-<br>transformers/")
    return text
