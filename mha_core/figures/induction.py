"""Figures for notebook 09: heads across layers, an induction head forming in a two-layer model.

Builders are pure: arrays and the theme (``theme``; None: the one in use now) in,
``go.Figure`` out. They take numbers (losses, score histories, score tables, composition
scores, ablation results), never a model, so they need no torch.

Heads are named as the prose names them, counting from 1: ``L1 H2`` is head 2 of layer 1
(the code's ``(0, 1)``). Positions on axes count from 1 too.

Builders that controls call with ``validate=False`` spell nested properties out
(``title=dict(text=...)``), as in ``figures.toy``: the in-place update compares the shown
and the new figure leaf by leaf.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import projector
from ..projector import Theme
from ._style import (
    COLORS,
    WEIGHTS_COLORSCALE,
    WEIGHTS_RANGE,
    base_layout,
    builder,
    legend_at_bottom,
    weights_colorbar,
)

#: Under the width of a notebook's output area at 1280 x 800, as the toy figures.
INDUCTION_WIDTH = 800
#: Dashes for the heads, so a line is told apart without its colour.
DASHES = ("solid", "dash", "dot", "dashdot")


def head_name(layer: int, head: int) -> str:
    """``L1 H2`` for the code's (0, 1): layers and heads counted from 1."""
    return f"L{layer + 1} H{head + 1}"


def _head_names(L: int, H: int) -> list[str]:
    return [head_name(layer, head) for layer in range(L) for head in range(H)]


def _ticks(top: float) -> list[int]:
    step = next(m * 10**e for e in range(8) for m in (1, 2, 5) if top / (m * 10**e) <= 4)
    return [t for t in range(0, int(top) + 1, int(step))]


@builder
def training_figure(loss_steps, losses, score_steps, previous_token, induction, *, chance_previous: float,
                    chance_induction: float, threshold: float, max_steps: int | None = None, title: str | None = None,
                    validate: bool = True, theme: Theme | None = None) -> go.Figure:
    """The loss on each half (left) and every head's previous-token and induction score (right), over the steps.

    Shapes:
        loss_steps: (S,), the training steps 1..S
        losses: (S, 2), the loss on the first half and on the repeated half of each step's batch
        score_steps: (N,), the steps where the scores were measured
        previous_token, induction: (N, L, H), each in 0..1
    """
    theme = projector.resolve(theme)
    loss_steps = np.asarray(loss_steps, dtype=float)
    losses = np.asarray(losses, dtype=float).reshape(-1, 2)
    steps = np.asarray(score_steps, dtype=float)
    previous, ind = np.asarray(previous_token, dtype=float), np.asarray(induction, dtype=float)
    N, L, H = previous.shape
    top = float(max_steps or (steps[-1] if N else 1) or 1)
    # No tick at step 0: its "0" would sit on the score's or the loss's "0" in the corner.
    ticks = [t for t in _ticks(top) if t > 0]
    data = []
    for k, (name, dash) in enumerate((("first half (random)", "dot"), ("repeated half", "solid"))):
        data.append(dict(type="scatter", mode="lines", x=loss_steps, y=losses[:, k], name=f"loss, {name}",
                         xaxis="x", yaxis="y", line=dict(color=("#555", COLORS[5])[k], width=2 + k, dash=dash),
                         hovertemplate=f"loss on the {name}: %{{y:.2f}} at step %{{x}}<extra></extra>"))
    for panel, (label, scores, chance, axis) in enumerate((("previous-token", previous, chance_previous, "2"),
                                                           ("induction", ind, chance_induction, "3"))):
        for i, name in enumerate(_head_names(L, H)):
            layer, head = divmod(i, H)
            data.append(dict(type="scatter", mode="lines", x=steps, y=scores[:, layer, head],
                             name=name if panel == 0 else f"{name}, induction",
                             legendgroup=name, showlegend=panel == 0, xaxis=f"x{axis}", yaxis=f"y{axis}",
                             line=dict(color=COLORS[i % len(COLORS)], width=3, dash=DASHES[i % len(DASHES)]),
                             hovertemplate=f"{name}, {label} score: %{{y:.2f}} at step %{{x}}<extra></extra>"))
        data.append(dict(type="scatter", mode="lines", x=[0, top], y=[chance, chance], name=f"chance, {label}",
                         showlegend=not theme.projector,  # on a projector the caption names them: two rows of legend fit
                         xaxis=f"x{axis}", yaxis=f"y{axis}", hovertemplate=f"chance, {label}: {chance:.2f}<extra></extra>",
                         line=dict(color="#555", width=1.5, dash="dot")))
    data.append(dict(type="scatter", mode="lines", x=[0, top], y=[threshold, threshold], name="induction head from here",
                     showlegend=not theme.projector,
                     xaxis="x3", yaxis="y3", hovertemplate=f"an induction head from {threshold:g}<extra></extra>",
                     line=dict(color="black", width=1.5, dash="dash")))
    highest = max(4.0, float(np.nanmax(losses)) if losses.size else 4.0)
    axis = dict(range=[0, top], tickvals=ticks, gridcolor="#eee", title=dict(text="step"))
    score = dict(domain=[0, 1], range=[-0.03, 1.03], gridcolor="#eee")
    # Three panels side by side, each named by its y axis; the chance levels and the threshold are named in the
    # legend. (Stacked, the two score panels had no room for their titles at projector sizes.)
    layout = base_layout(
        theme=theme, title=title or "Loss on each half, and every head's scores, as the model trains",
        # In Presentation Mode the group (controls, status and figure) must fit the 607 px shown.
        height=370 if theme.projector else 470, width=INDUCTION_WIDTH,
        margin=dict(l=70, r=20, t=60, b=165) if theme.projector else dict(l=70, r=20, t=70, b=150),
        xaxis=dict(domain=[0, 0.24], anchor="y", **axis),
        yaxis=dict(domain=[0, 1], range=[0, highest * 1.05], title=dict(text="loss"), anchor="x", gridcolor="#eee",
                   dtick=2 if theme.projector else None),
        xaxis2=dict(domain=[0.38, 0.62], anchor="y2", **axis),
        yaxis2=dict(anchor="x2", tickvals=[0, 0.5, 1], title=dict(text="prev. token"), **score),
        xaxis3=dict(domain=[0.76, 1], anchor="y3", **axis),
        yaxis3=dict(anchor="x3", tickvals=[0, 0.4, 1], title=dict(text="induction"), **score),
    )
    line = theme.font_size + 10
    plot_px = layout["height"] - layout["margin"]["t"] - layout["margin"]["b"]
    layout["legend"] = dict(orientation="h", y=-((3.0 if theme.projector else 2.4) * line) / plot_px,
                            yanchor="top")  # below the "step" titles
    return go.Figure(data=data, layout=layout, _validate=validate)


@builder
def head_scores_figure(previous_token, induction, *, chance_previous: float, chance_induction: float,
                       threshold: float, title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Every head's previous-token and induction score (bars), with each score's chance level and the threshold.

    Shapes:
        previous_token, induction: (L, H)
    """
    theme = projector.resolve(theme)
    previous, ind = np.asarray(previous_token, dtype=float), np.asarray(induction, dtype=float)
    L, H = previous.shape
    names = _head_names(L, H)
    data = [
        dict(type="bar", name="previous-token score", x=names, y=previous.ravel(), marker=dict(color=COLORS[0]),
             text=[f"{v:.2f}" for v in previous.ravel()], textposition="outside",
             hovertemplate="%{x}: previous-token score %{y:.3f}<extra></extra>"),
        dict(type="bar", name="induction score", x=names, y=ind.ravel(),
             marker=dict(color=COLORS[1], pattern=dict(shape="/", fillmode="overlay", fgcolor="white", solidity=0.3)),
             text=[f"{v:.2f}" for v in ind.ravel()], textposition="outside",
             hovertemplate="%{x}: induction score %{y:.3f}<extra></extra>"),
        dict(type="scatter", mode="lines", name=f"chance, previous token ({chance_previous:.2f})",
             x=[names[0], names[-1]], y=[chance_previous] * 2, line=dict(color=COLORS[0], width=2, dash="dot")),
        dict(type="scatter", mode="lines", name=f"chance, induction ({chance_induction:.2f})",
             x=[names[0], names[-1]], y=[chance_induction] * 2, line=dict(color=COLORS[1], width=2, dash="dash")),
        dict(type="scatter", mode="lines", name=f"induction head from {threshold:g} (ARENA)",
             x=[names[0], names[-1]], y=[threshold] * 2, line=dict(color="black", width=1.5, dash="dashdot")),
    ]
    layout = base_layout(theme=theme, title=title or "Every head's scores on repeated random tokens",
                         height=440, width=INDUCTION_WIDTH, barmode="group",
                         xaxis=dict(type="category", title=dict(text="head (layer, head)")),
                         yaxis=dict(range=[0, 1.1], title=dict(text="score (share of weight)")),
                         legend=legend_at_bottom(), margin=dict(l=80, r=20, t=70, b=150))
    return go.Figure(data=data, layout=layout)


@builder
def induction_pattern_figure(weights, tokens, repeat_length: int, *, head: str, title: str | None = None,
                             theme: Theme | None = None) -> go.Figure:
    """One head's attention weights on one sequence of repeated tokens, with the induction keys marked.

    Queries down, keys across, positions counted from 1 and labelled with their tokens.
    The marked cells are each second-copy query's induction key: one after the earlier copy
    of its token.

    Shapes:
        weights: (T, T), rows sum to 1
        tokens: (T,)
    """
    theme = projector.resolve(theme)
    w = np.asarray(weights, dtype=float)
    T = w.shape[-1]
    tokens = [int(t) for t in np.asarray(tokens).ravel()]
    positions = list(range(1, T + 1))
    labels = [f"{p}:{t}" for p, t in zip(positions, tokens)]
    queries = np.arange(T - repeat_length, T)  # 0-based, the second copy
    keys = queries - repeat_length + 1
    data = [
        dict(type="heatmap", z=w, x=positions, y=positions, zmin=WEIGHTS_RANGE[0], zmax=WEIGHTS_RANGE[1],
             colorscale=WEIGHTS_COLORSCALE, colorbar=weights_colorbar(), name="attention weight",
             hovertemplate="query %{y}, key %{x}: weight %{z:.2f}<extra></extra>"),
        dict(type="scatter", mode="markers", x=(keys + 1).tolist(), y=(queries + 1).tolist(),
             name="induction key: one after the earlier copy", hoverinfo="skip",
             marker=dict(symbol="square-open", size=max(8, theme.font_size - 4), color="white", line=dict(width=2))),
    ]
    tick = dict(tickmode="array", tickvals=positions[::2], ticktext=labels[::2], tickangle=-90)
    layout = base_layout(theme=theme, title=title or f"{head}'s attention on one sequence: the induction stripe",
                         height=640, width=INDUCTION_WIDTH,
                         xaxis=dict(title=dict(text="key (position:token)"), constrain="domain", **tick),
                         yaxis=dict(title=dict(text="query (position:token)"), autorange="reversed",
                                    scaleanchor="x", **{**tick, "tickangle": 0}),
                         legend=dict(orientation="h", y=-0.22, yanchor="top"), margin=dict(l=110, r=20, t=70, b=160))
    return go.Figure(data=data, layout=layout)


@builder
def composition_figure(k_composition: dict, baseline_mean: float, baseline_std: float, *, title: str | None = None,
                       theme: Theme | None = None) -> go.Figure:
    """K-composition of each first-layer head into each second-layer head, per model, against the random baseline.

    ``k_composition``: {label: (H, H) array}, [h0, h1] = head h0 of layer 1 into head h1 of layer 2.
    The baseline is drawn as its mean and a band of 3 standard deviations above it.
    """
    theme = projector.resolve(theme)
    data, pairs = [], None
    for i, (label, scores) in enumerate(k_composition.items()):
        scores = np.asarray(scores, dtype=float)
        H = scores.shape[0]
        pairs = [f"{head_name(0, a)} → {head_name(1, b)}" for a in range(H) for b in range(H)]
        # fillmode "overlay": white stripes over the colour (plotly's default draws the stripes alone, on nothing).
        pattern = dict(shape=["", "x", "/"][i % 3], fillmode="overlay", fgcolor="white", solidity=0.3)
        data.append(dict(type="bar", name=label, x=pairs, y=scores.ravel(), marker=dict(
            color=COLORS[i % len(COLORS)], pattern=pattern),
            text=[f"{v:.2f}" for v in scores.ravel()], textposition="outside",
            hovertemplate=f"{label}, %{{x}}: %{{y:.3f}}<extra></extra>"))
    pairs = pairs or []
    for name, value, dash in ((f"random baseline ({baseline_mean:.3f})", baseline_mean, "dash"),
                              (f"baseline + 3 std ({baseline_mean + 3 * baseline_std:.3f})",
                               baseline_mean + 3 * baseline_std, "dot")):
        data.append(dict(type="scatter", mode="lines", name=name, x=[pairs[0], pairs[-1]] if pairs else [],
                         y=[value, value], line=dict(color="black", width=2, dash=dash)))
    highest = max([baseline_mean + 3 * baseline_std] + [float(np.max(v)) for v in k_composition.values()])
    layout = base_layout(theme=theme, title=title or "K-composition: does a second-layer head read a first-layer "
                                                     "head's output through its keys?",
                         height=460, width=INDUCTION_WIDTH, barmode="group",
                         # Each pair's label on two lines: upright and narrow enough for a phone (at 390 px the
                         # one-line labels were turned and ran into the legend).
                         xaxis=dict(type="category", title=dict(text="first-layer head → second-layer head"),
                                    tickvals=pairs, ticktext=[p.replace(" → ", "<br>→ ") for p in pairs]),
                         yaxis=dict(range=[0, highest * 1.25], title=dict(text="K-composition score")),
                         legend=legend_at_bottom(), margin=dict(l=80, r=20, t=90, b=160))
    return go.Figure(data=data, layout=layout)


@builder
def ablation_figure(induction_on: float, loss_on: float, induction_off: float, loss_off: float, *, label: str,
                    chance_induction: float, title: str | None = None, validate: bool = True,
                    theme: Theme | None = None) -> go.Figure:
    """With every head on, and with one head switched off: the best induction score in the last layer
    (left) and the loss on the second repeat (right)."""
    theme = projector.resolve(theme)
    cats = ["every head on", label]
    data = [
        dict(type="bar", name="best induction score, last layer", x=cats, y=[induction_on, induction_off],
             xaxis="x", yaxis="y", marker=dict(color=COLORS[1]), text=[f"{induction_on:.2f}", f"{induction_off:.2f}"],
             textposition="outside", hovertemplate="%{x}: induction score %{y:.3f}<extra></extra>"),
        dict(type="bar", name="loss on the second repeat", x=cats, y=[loss_on, loss_off], xaxis="x2", yaxis="y2",
             marker=dict(color=COLORS[5], pattern=dict(shape="/", fillmode="overlay", fgcolor="white", solidity=0.3)),
             text=[f"{loss_on:.2f}", f"{loss_off:.2f}"], textposition="outside",
             hovertemplate="%{x}: loss %{y:.2f}<extra></extra>"),
        dict(type="scatter", mode="lines", name=f"chance, induction ({chance_induction:.2f})", x=cats,
             y=[chance_induction] * 2, xaxis="x", yaxis="y", line=dict(color="black", width=2, dash="dot")),
    ]
    layout = base_layout(
        theme=theme, title=title or f"Induction and the second repeat's loss, {label}", height=400 if theme.projector else 440,
        width=INDUCTION_WIDTH, margin=dict(l=70, r=20, t=90, b=130),
        xaxis=dict(domain=[0, 0.45], type="category", anchor="y"),
        yaxis=dict(range=[0, 1.1], title=dict(text="induction score"), anchor="x"),
        xaxis2=dict(domain=[0.58, 1], type="category", anchor="y2"),
        yaxis2=dict(range=[0, 4.6], title=dict(text="loss (nats)"), anchor="x2"),
        legend=dict(orientation="h", y=-0.25, yanchor="top"),
    )
    return go.Figure(data=data, layout=layout, _validate=validate)
