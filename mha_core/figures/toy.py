"""Figures for notebooks 06 and 08: a toy model's heads while it trains, once trained, and when they fail.

Builders are pure: arrays, plain lists and the theme (``theme``; None: the one in use
now) in, ``go.Figure`` out. They take numbers
(histories, score tables, accuracies), never a model, so they need no torch.

Builders that controls call with ``validate=False`` spell nested properties out
(``title=dict(text=...)``, not ``title_text=...``): an unvalidated figure keeps plotly's
"magic underscore" keys as they are, and the in-place update, which compares the shown
and the new figure leaf by leaf, then wiped the axis titles in the page.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import projector
from ..projector import Theme
from ._style import builder, COLORS, SIGNED_COLORSCALE, WEIGHTS_COLORSCALE, WEIGHTS_RANGE, base_layout

#: Live figures stay under the width of a notebook's output area at 1280 x 800.
TOY_WIDTH = 800


def _relation_colour(r: int) -> str:
    return COLORS[r % len(COLORS)]


def _two_lines(name: str) -> str:
    """A relation's name on two lines ("largest<br>so far"): side by side, one-line names ran into each other."""
    words = name.split(" ")
    return " ".join(words[:1]) + ("<br>" + " ".join(words[1:]) if len(words) > 1 else "")


def _legend_below(layout, theme: Theme, *, tick_lines: int = 1) -> dict:
    """A horizontal legend under the tick labels (``tick_lines`` lines) and the axis titles, placed in pixels."""
    line = theme.font_size + 10
    plot_px = layout.height - layout.margin.t - layout.margin.b
    return dict(orientation="h", y=-((tick_lines + 1.5) * line) / plot_px, yanchor="top")


@builder
def example_targets_figure(tokens, target_positions, relations, *, theme: Theme | None = None) -> go.Figure:
    """One example sequence and, per relation, the positions a head should look at.

    Shapes:
        tokens: (T,)
        target_positions: (R, T, T) bool, [r, query, key]
    """
    theme = projector.resolve(theme)
    tokens = [int(t) for t in tokens]
    pos = np.asarray(target_positions, dtype=bool)
    R, T, _ = pos.shape
    data = []
    for r in range(R):
        q, k = np.nonzero(pos[r])
        data.append(dict(
            type="scatter", mode="markers", name=relations[r], x=k.tolist(), y=q.tolist(),
            marker=dict(size=18 - 4 * r, color=_relation_colour(r), symbol=["circle", "square", "diamond"][r % 3],
                        line=dict(width=1, color="white")),
            hovertemplate=f"{relations[r]}: query %{{y}} looks at key %{{x}}<extra></extra>",
        ))
    ticktext = [f"{t}: {tok}" for t, tok in enumerate(tokens)]
    layout = base_layout(theme=theme, title=
        "Where each relation points, for one sequence (position: token)",
        height=520, width=TOY_WIDTH,
        xaxis=dict(title_text="key position: token", tickvals=list(range(T)), ticktext=ticktext, range=[-0.5, T - 0.5],
                   tickangle=-45, gridcolor="#ddd"),
        yaxis=dict(title_text="query position: token", tickvals=list(range(T)), ticktext=ticktext, range=[T - 0.5, -0.5],
                   gridcolor="#ddd"),
    )
    # Under the tilted tick labels ("11: 7") and the axis title, placed in pixels.
    line = theme.font_size + 10
    layout["margin"] = {**layout["margin"], "b": round(6.5 * line)}
    # Tall enough for one position label per row at the theme's size.
    layout["height"] = max(520, layout["margin"]["t"] + layout["margin"]["b"] + round(1.3 * theme.font_size * T) + 20)
    layout["legend"] = dict(orientation="h", y=-(5.2 * line) / (layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]),
                            yanchor="top")
    return go.Figure(data=data, layout=layout)


@builder
def role_history_figure(steps, role_scores, relations, *, max_steps: int | None = None, title: str | None = None,
                        validate: bool = True, theme: Theme | None = None) -> go.Figure:
    """Each head's role scores over the training steps: one panel per head, one line per relation.

    Shapes:
        steps: (N,)
        role_scores: (N, H, R), each in 0..1
    """
    theme = projector.resolve(theme)
    steps = np.asarray(steps, dtype=float)
    scores = np.asarray(role_scores, dtype=float)
    N, H, R = scores.shape
    gap = 0.04
    width = (1 - gap * (H - 1)) / H
    data, layout_axes = [], {}
    top = max_steps if max_steps else (steps[-1] if N else 1)
    step = next(m * 10**e for e in range(8) for m in (1, 2, 5) if top / (m * 10**e) <= 3)
    ticks = [t for t in range(0, int(top) + 1, int(step)) if t < top]  # e.g. 0, 100, 200 for 300 steps
    for h in range(H):
        suffix = "" if h == 0 else str(h + 1)
        for r in range(R):
            data.append(dict(
                type="scatter", mode="lines", x=steps, y=scores[:, h, r], xaxis=f"x{suffix}", yaxis=f"y{suffix}",
                name=relations[r], legendgroup=relations[r], showlegend=h == 0,
                line=dict(color=_relation_colour(r), width=3, dash=["solid", "dash", "dot"][r % 3]),
                hovertemplate=f"head {h + 1}, {relations[r]}: %{{y:.2f}} at step %{{x}}<extra></extra>",
            ))
        lo = h * (width + gap)
        # No tick at the right end: there it sat against the next panel's "0" ("300 0" read as one number).
        layout_axes[f"xaxis{suffix}"] = dict(domain=[lo, lo + width], range=[0, top], title=dict(text="step"),
                                             tickvals=ticks, anchor=f"y{suffix}", gridcolor="#eee")
        # The range starts a little below 0 so the y axis' "0" sits above the x axis' "0", not on it.
        layout_axes[f"yaxis{suffix}"] = dict(range=[-0.07, 1.04], tickvals=[0, 0.5, 1], anchor=f"x{suffix}",
                                             gridcolor="#eee", zeroline=False, showticklabels=h == 0,
                                             title=dict(text="share of weight" if h == 0 else ""))
    annotations = [dict(text=f"head {h + 1}", x=h * (width + gap) + width / 2, y=1.0, xref="paper", yref="paper",
                        yanchor="bottom", showarrow=False, font=dict(size=theme.font_size)) for h in range(H)]
    layout = base_layout(theme=theme, title=
        title or f"Share of each head's weight on each relation's targets, H\u00a0=\u00a0{H}",
        height=420, width=TOY_WIDTH, annotations=annotations,
        margin=dict(l=80, r=20, t=90, b=120), **layout_axes,
    )
    # The legend goes below the tick labels and the "step" titles, placed in pixels (a fraction of the
    # plot put it on those titles at projector sizes, where the plot is shorter).
    line = theme.font_size + 10
    plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    layout["legend"] = dict(orientation="h", y=-(3 * line) / plot_px, yanchor="top")
    return go.Figure(data=data, layout=layout, _validate=validate)


@builder
def role_table_figure(role_scores, relations, *, roles=None, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """The role table: each head's share of weight on each relation's targets, as a heatmap.

    Shapes:
        role_scores: (H, R)
    """
    theme = projector.resolve(theme)
    scores = np.asarray(role_scores, dtype=float)
    H, R = scores.shape
    rows = [f"head {h + 1}" + (f" ({roles[h]})" if roles else "") for h in range(H)]
    trace = dict(type="heatmap", z=scores, x=list(relations), y=rows, zmin=WEIGHTS_RANGE[0], zmax=WEIGHTS_RANGE[1],
                 colorscale=WEIGHTS_COLORSCALE, text=np.char.mod("%.2f", scores), texttemplate="%{text}",
                 textfont=dict(size=theme.cell_text_size), xgap=2, ygap=2, colorbar=dict(title=dict(text="share", side="right")),
                 hovertemplate="%{y}, %{x}: %{z:.2f}<extra></extra>")
    layout = base_layout(theme=theme, title=title or "Share of each head's weight on each relation's targets",
                         height=200 + 50 * H, width=TOY_WIDTH,
                         yaxis=dict(autorange="reversed", type="category"), xaxis=dict(type="category", side="top"))
    return go.Figure(data=[trace], layout=layout)


def baseline_traces(baselines: dict | None, relations) -> list[dict]:
    """One labelled line per baseline (``{"chance": (R,), ...}``): a short bar across each relation.

    The label is the legend entry (values printed on the bars' colours were hard to read);
    hovering gives the value.

    Shapes:
        each baseline: (R,)
    """
    traces = []
    for i, (name, values) in enumerate((baselines or {}).items()):
        values = np.asarray(values, dtype=float)
        colour = ["#222222", "#b8003e", "#1b4f72"][i % 3]
        traces.append(dict(
            type="scatter", mode="markers", name=name, x=list(relations), y=values,
            marker=dict(symbol="line-ew", size=70, color=colour, line=dict(width=4 if i == 0 else 3, color=colour)),
            text=[f"{v:.2f}" for v in values], hovertemplate=f"{name}, %{{x}}: %{{text}}<extra></extra>",
        ))
    return traces


@builder
def accuracy_comparison_figure(accuracies: dict, relations, *, baselines: dict | None = None,
                               title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Per-relation accuracy of several models side by side (``{"1 head": acc, "3 heads": acc}``).

    ``baselines`` (``{"label": (R,)}``) adds one labelled line per baseline, such as chance.

    Shapes:
        each accuracy: (R,)
    """
    theme = projector.resolve(theme)
    data = []
    for i, (name, acc) in enumerate(accuracies.items()):
        acc = np.asarray(acc, dtype=float)
        data.append(dict(type="bar", name=name, x=list(relations), y=acc, marker=dict(color=COLORS[i % len(COLORS)]),
                         text=[f"{a:.2f}" for a in acc], textposition="outside",
                         hovertemplate=f"{name}, %{{x}}: %{{y:.3f}}<extra></extra>"))
    data += baseline_traces(baselines, relations)
    layout = base_layout(theme=theme, title=title or "Accuracy per relation", barmode="group", height=460, width=TOY_WIDTH,
                         yaxis=dict(range=[0, 1.12], title=dict(text="accuracy")), xaxis=dict(type="category"),
                         legend=dict(orientation="h", y=-0.18, yanchor="top"), margin=dict(l=90, r=30, t=70, b=120))
    return go.Figure(data=data, layout=layout)


@builder
def steps_to_target_figure(table: dict, *, budget: int | None = None, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Training steps each head count needed to reach the target on every relation, per seed (log scale).

    ``table`` is what ``mha_core.models.steps_to_target.steps_table`` returns; a run that
    did not reach the target is drawn at the table's budget and labelled "not by ...".
    ``budget`` draws a dashed line at a step count (notebook 06's 300 steps).
    """
    theme = projector.resolve(theme)
    seeds = list(table["seeds"])
    data = []
    for i, H in enumerate(sorted({row["n_heads"] for row in table["rows"]})):
        rows = {row["seed"]: row for row in table["rows"] if row["n_heads"] == H}
        steps = [rows[s]["steps"] for s in seeds]
        text = [f"{rows[s]['steps']:,}" if rows[s]["reached"] else f"not by {table['max_steps']:,}" for s in seeds]
        data.append(dict(type="bar", name=f"{H} head{'s' if H > 1 else ''}", x=[f"seed {s}" for s in seeds], y=steps,
                         text=text, textposition="outside", marker=dict(color=COLORS[i % len(COLORS)]),
                         hovertemplate=f"{H} head(s), %{{x}}: %{{text}} steps<extra></extra>"))
    top = max(row["steps"] for row in table["rows"])
    shapes, annotations = [], []
    if budget:
        shapes.append(dict(type="line", xref="paper", x0=0, x1=1, yref="y", y0=budget, y1=budget,
                           line=dict(color="#444444", width=2, dash="dash")))
        # named in the legend (a label on the plot sat on the bars)
        data.append(dict(type="scatter", mode="lines", name=f"notebook budget: {budget:,} steps", x=[None], y=[None],
                         line=dict(color="#444444", width=2, dash="dash"), hoverinfo="skip"))
    target = table.get("target_accuracy", 0.99)
    layout = base_layout(theme=theme, title=
        title or f"Training steps until every relation is right at {target:.0%} of positions",
        barmode="group", height=460, width=TOY_WIDTH, shapes=shapes, annotations=annotations,
        yaxis=dict(type="log", range=[1, np.log10(top) + 0.45], title=dict(text="steps (log scale)"),
                   tickvals=[10, 100, 1_000, 10_000, 100_000], ticktext=["10", "100", "1,000", "10,000", "100,000"]),
        xaxis=dict(type="category"), legend=dict(orientation="h", y=-0.15, yanchor="top"),
        margin=dict(l=90, r=30, t=70, b=110),
        # plotly shrinks a bar's outside text to the bar's width; at projector sizes that went below the theme's minimum
        uniformtext=dict(minsize=theme.min_text_size, mode="show"),
    )
    return go.Figure(data=data, layout=layout)


@builder
def share_and_removal_figure(role_scores, removal_cost, relations, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Two ways to find a head's role, side by side: where it looks, and what breaks without it.

    Left: each head's share of weight on each relation's targets. Right: the accuracy
    each relation loses when that head alone is switched off.

    Shapes:
        role_scores, removal_cost: (H, R), each in 0..1
    """
    theme = projector.resolve(theme)
    from plotly.subplots import make_subplots

    share = np.asarray(role_scores, dtype=float)
    cost = np.clip(np.asarray(removal_cost, dtype=float), 0.0, 1.0)
    H, R = share.shape
    heads = [f"head {h + 1}" for h in range(H)]
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("share of weight on the targets", "accuracy lost with the head off"))
    for col, (z, name) in enumerate(((share, "share"), (cost, "lost")), start=1):
        # one colour bar for both tables: they share the 0..1 scale
        fig.add_trace(go.Heatmap(z=z, x=list(relations), y=heads, zmin=0, zmax=1, colorscale=WEIGHTS_COLORSCALE,
                                 text=np.char.mod("%.2f", z), texttemplate="%{text}", textfont=dict(size=theme.cell_text_size),
                                 xgap=2, ygap=2, showscale=col == 2, colorbar=dict(title=dict(text="0 to 1", side="right"), len=0.8),
                                 hovertemplate=f"%{{y}}, %{{x}}: {name} %{{z:.2f}}<extra></extra>"), row=1, col=col)
    fig.update_layout(**base_layout(theme=theme, title=title or "Where a head looks, and what switching it off costs",
                                    height=260 + 50 * H, width=TOY_WIDTH, margin=dict(l=80, r=30, t=110, b=90)))
    fig.update_yaxes(autorange="reversed", type="category")
    fig.update_xaxes(type="category", tickangle=0, tickvals=list(relations),
                     ticktext=[_two_lines(r) for r in relations])
    for a in fig.layout.annotations:
        a.font = dict(size=theme.font_size)
    return fig


@builder
def key_similarity_figure(similarity, token: int, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """How close every token's key is to ``token``'s key, through each head (cosine similarity).

    Shapes:
        similarity: (H, V), in -1..1
    """
    theme = projector.resolve(theme)
    s = np.asarray(similarity, dtype=float)
    H, V = s.shape
    trace = dict(type="heatmap", z=s, x=[str(v) for v in range(V)], y=[f"head {h + 1}" for h in range(H)],
                 zmin=-1, zmax=1, colorscale=SIGNED_COLORSCALE, text=np.char.mod("%.1f", s), texttemplate="%{text}",
                 textfont=dict(size=theme.small_text_size), xgap=2, ygap=2, colorbar=dict(title=dict(text="cosine", side="right")),
                 hovertemplate="%{y}: key of token %{x} vs key of token " + str(token) + ": %{z:.2f}<extra></extra>")
    layout = base_layout(theme=theme, title=title or f"Token {token}'s key next to every token's key, through each head",
                         height=200 + 50 * H, width=TOY_WIDTH,
                         xaxis=dict(type="category", title_text="token"), yaxis=dict(type="category", autorange="reversed"))
    return go.Figure(data=[trace], layout=layout)


@builder
def similarity_matrix_figure(similarity, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Mean Jensen-Shannon divergence between every pair of heads' patterns (0 = identical).

    Shapes:
        similarity: (H, H), in 0..1
    """
    theme = projector.resolve(theme)
    s = np.asarray(similarity, dtype=float)
    H = len(s)
    names = [f"head {h + 1}" for h in range(H)]
    trace = dict(type="heatmap", z=s, x=names, y=names, zmin=0, zmax=1, colorscale="Cividis",
                 text=np.char.mod("%.2f", s), texttemplate="%{text}", textfont=dict(size=theme.cell_text_size), xgap=2, ygap=2,
                 colorbar=dict(title=dict(text="divergence", side="right")), hovertemplate="%{y} vs %{x}: %{z:.2f}<extra></extra>")
    layout = base_layout(theme=theme, title=title or "How differently each pair of heads attends (0 = the same pattern)",
                         height=220 + 60 * H, width=min(TOY_WIDTH, 320 + 80 * H),
                         xaxis=dict(type="category"), yaxis=dict(type="category", autorange="reversed"))
    return go.Figure(data=[trace], layout=layout)


@builder
def ablation_figure(accuracy, relations, heads_off, *, baseline=None, baselines: dict | None = None,
                    title: str | None = None, validate: bool = True, theme: Theme | None = None) -> go.Figure:
    """Per-relation accuracy with some heads switched off (bars), beside all heads on (markers).

    ``baselines`` (``{"label": (R,)}``) adds one labelled line per baseline, such as chance.

    Shapes:
        accuracy, baseline: (R,)
        heads_off: (H,) bool, True = off (the package's one encoding; the widget passes it)
    """
    theme = projector.resolve(theme)
    acc = np.asarray(accuracy, dtype=float)
    switched_off = np.asarray(heads_off)
    if switched_off.dtype != bool or switched_off.ndim != 1:
        raise TypeError(f"heads_off must be an (H,) bool array, True = off; got dtype {switched_off.dtype}, "
                        f"shape {switched_off.shape}")
    on = [not x for x in switched_off]
    off = [str(h + 1) for h, flag in enumerate(on) if not flag]
    label = "every head on" if not off else ("every head off" if len(off) == len(on) else f"head{'s' if len(off) > 1 else ''} {', '.join(off)} off")
    data = [dict(type="bar", name=label, x=list(relations), y=acc, marker=dict(color=COLORS[0]),
                 text=[f"{a:.2f}" for a in acc], textposition="outside",
                 hovertemplate="%{x}: %{y:.3f}<extra></extra>")]
    if baseline is not None:
        data.append(dict(type="scatter", mode="markers", name="reference: every head on", x=list(relations),
                         y=np.asarray(baseline, dtype=float), marker=dict(symbol="line-ew", size=40, color="black",
                                                                          line=dict(width=3, color="black")),
                         hovertemplate="all heads on, %{x}: %{y:.3f}<extra></extra>"))
    data += baseline_traces(baselines, relations)
    layout = base_layout(theme=theme, title=title or f"Accuracy per relation, {label}", height=420, width=TOY_WIDTH,
                         yaxis=dict(range=[0, 1.12], title=dict(text="accuracy")), xaxis=dict(type="category"),
                         legend=dict(orientation="h", y=-0.2))
    return go.Figure(data=data, layout=layout, _validate=validate)


@builder
def removal_figure(single, greedy, relations, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Left: accuracy with each head off alone. Right: accuracy as heads are removed greedily.

    Shapes:
        single: (H, R)
        greedy: list of (heads off, accuracy (R,)), from none off to all off
    """
    theme = projector.resolve(theme)
    from plotly.subplots import make_subplots

    single = np.asarray(single, dtype=float)
    H, R = single.shape
    fig = make_subplots(rows=1, cols=2, horizontal_spacing=0.12,
                        subplot_titles=("one head off at a time", "heads removed greedily"))
    heads = [f"head {h + 1}" for h in range(H)]
    labels = ["none"] + [f"+ head {off[-1] + 1}" for off, _ in greedy[1:]]
    acc = np.array([a for _, a in greedy])  # (H + 1, R)
    for r in range(R):
        colour = _relation_colour(r)
        fig.add_trace(go.Bar(x=heads, y=single[:, r], name=relations[r], legendgroup=relations[r],
                             marker=dict(color=colour), hovertemplate=f"%{{x}} off, {relations[r]}: %{{y:.2f}}<extra></extra>"),
                      row=1, col=1)
        fig.add_trace(go.Scatter(x=list(range(H + 1)), y=acc[:, r], mode="lines+markers", name=relations[r],
                                 legendgroup=relations[r], showlegend=False, line=dict(color=colour, width=3),
                                 customdata=labels, hovertemplate=f"%{{customdata}} off, {relations[r]}: %{{y:.2f}}<extra></extra>"),
                      row=1, col=2)
    fig.update_layout(**base_layout(theme=theme, title=title or "What switching heads off costs", height=480, width=TOY_WIDTH,
                                    barmode="group", margin=dict(l=80, r=20, t=100, b=150)))
    fig.update_layout(legend=_legend_below(fig.layout, theme, tick_lines=2))
    fig.update_xaxes(tickangle=0, tickvals=heads, ticktext=[h.replace(" ", "<br>") for h in heads], row=1, col=1)
    # Each y axis starts a little below 0, so its "0" sits above the first x label, not on it.
    fig.update_yaxes(range=[-0.07, 1.05], tickvals=[0, 0.5, 1], zeroline=False, title_text="accuracy", row=1, col=1)
    fig.update_yaxes(range=[-0.07, 1.05], tickvals=[0, 0.5, 1], zeroline=False, row=1, col=2)
    # "+3": head 3 goes off next; "+ head 3" tilted ran into its neighbours at projector sizes.
    fig.update_xaxes(tickvals=list(range(H + 1)), ticktext=[label.replace("+ head ", "+") for label in labels],
                     tickangle=0, title_text="next head off (+number), in order", row=1, col=2)
    for a in fig.layout.annotations:
        a.font = dict(size=theme.font_size)
    return fig


@builder
def bottleneck_figure(sweep: dict, *, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Accuracy against head count at a fixed d_model: every seed as a dot, the mean as a line.

    ``sweep`` is what ``mha_core.models.bottleneck_sweep`` returns (rows of n_heads,
    d_head, accuracy per seed, mean, min, max).
    """
    theme = projector.resolve(theme)
    rows = sweep["rows"]
    labels = [f"{r['n_heads']}<br>d_head {r['d_head']}" for r in rows]
    mean = [r["mean"] for r in rows]
    data = [dict(type="scatter", mode="lines+markers", name="mean over seeds", x=labels, y=mean,
                 line=dict(color=COLORS[0], width=3), marker=dict(size=10),
                 error_y=dict(type="data", symmetric=False, array=[r["max"] - r["mean"] for r in rows],
                              arrayminus=[r["mean"] - r["min"] for r in rows], thickness=2, width=8),
                 hovertemplate="%{x}: mean %{y:.3f}<extra></extra>")]
    xs = [lab for lab, r in zip(labels, rows) for _ in r["accuracy"]]
    ys = [a for r in rows for a in r["accuracy"]]
    data.append(dict(type="scatter", mode="markers", name="one seed", x=xs, y=ys,
                     marker=dict(size=8, color=COLORS[1], symbol="circle-open", line=dict(width=2)),
                     hovertemplate="%{x}: %{y:.3f}<extra></extra>"))
    layout = base_layout(theme=theme, title=
        title or f"Accuracy on 'last match' against head count, d_model = {sweep['d_model']} fixed",
        height=460, width=TOY_WIDTH, legend=dict(orientation="h", y=-(4 * (theme.font_size + 10)) / (460 - 80 - 150),
                                                  yanchor="top"),
        xaxis=dict(type="category", title_text="heads H (and d_head = d_model / H)"),
        # From a little below 0.5, so "0.5" sits above the first (two-line) x label, not on it.
        yaxis=dict(title_text=f"accuracy after {sweep['steps']} steps", range=[0.46, 1.02],
                   tickvals=[0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
        margin=dict(l=80, r=20, t=80, b=150),
    )
    return go.Figure(data=data, layout=layout)
