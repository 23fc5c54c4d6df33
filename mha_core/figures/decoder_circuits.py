"""Figures for notebook 09's real-decoder section: SmolLM2's 270 heads on repeated random words.

Builders are pure: arrays and the theme (``theme``; None: the one in use now) in, ``go.Figure``
out. Heads are named for people, layer and head counted from 1 ("L19 H7"); arrays index them
from 0.

- ``head_scores_scatter_figure``: every head as a point, previous-token score across and
  induction score up, with both chance levels; named heads drawn apart, their names in the
  legend (so ``describe.in_words`` reads them out, and colour is not the only cue).
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import projector
from ..projector import Theme
from ._style import COLORS, base_layout, builder, legend_at_bottom, reference_line

#: Under the width of a notebook's output area at 1280 x 800.
SCATTER_WIDTH = 800


def _name(layer: int, head: int) -> str:
    return f"L{layer + 1} H{head + 1}"


def _pairs(heads, L: int, H: int, name: str) -> list[tuple[int, int]]:
    pairs = []
    for pair in heads:
        if len(pair) < 2:
            raise ValueError(f"{name} must hold (layer, head) pairs counted from 0; got {pair!r}")
        layer, head = int(pair[0]), int(pair[1])
        if not (0 <= layer < L and 0 <= head < H):
            raise ValueError(f"{name} holds ({layer}, {head}), outside {L} layers x {H} heads (counted from 0)")
        pairs.append((layer, head))
    return pairs


@builder
def head_scores_scatter_figure(previous_token, induction, *, chance_previous: float, chance_induction: float,
                               induction_heads=(), previous_heads=(), threshold: float | None = None,
                               title: str | None = None, theme: Theme | None = None) -> go.Figure:
    """Each head's previous-token score (across) against its induction score (up), with chance marked.

    ``induction_heads`` and ``previous_heads``: (layer, head) pairs from 0 (or (layer, head,
    score) triples, as ``decoder_analysis.top_heads`` gives them) drawn as their own series,
    named in the legend; ``threshold`` draws a line at that induction score (ARENA's 0.4).

    Shapes:
        previous_token, induction: (L, H)
    """
    theme = projector.resolve(theme)
    previous_token = np.asarray(previous_token, dtype=float)
    induction = np.asarray(induction, dtype=float)
    if previous_token.ndim != 2 or induction.shape != previous_token.shape:
        raise ValueError(f"previous_token and induction must both have shape (L, H); got {previous_token.shape} "
                         f"and {induction.shape}")
    L, H = induction.shape
    named_induction = _pairs(induction_heads, L, H, "induction_heads")
    named_previous = [p for p in _pairs(previous_heads, L, H, "previous_heads") if p not in named_induction]
    rest = np.ones((L, H), dtype=bool)
    for layer, head in named_induction + named_previous:
        rest[layer, head] = False
    names = np.array([[_name(layer, head) for head in range(H)] for layer in range(L)], dtype=object)  # (L, H)
    hover = "%{customdata}: previous-token %{x:.2f}, induction %{y:.2f}<extra></extra>"
    data = [dict(type="scatter", mode="markers", name=f"the other {int(rest.sum())} heads",
                 x=previous_token[rest].tolist(), y=induction[rest].tolist(), customdata=names[rest].tolist(),
                 marker=dict(symbol="circle", size=8, color=COLORS[0], opacity=0.6), hovertemplate=hover)]
    for pairs, label, symbol, colour in ((named_induction, "induction heads", "diamond", COLORS[5]),
                                         (named_previous, "previous-token heads", "square", COLORS[2])):
        if not pairs:
            continue
        rows, cols = np.array(pairs).T
        data.append(dict(type="scatter", mode="markers", name=f"{label}: " + ", ".join(_name(*p) for p in pairs),
                         x=previous_token[rows, cols].tolist(), y=induction[rows, cols].tolist(),
                         customdata=[_name(*p) for p in pairs],
                         marker=dict(symbol=symbol, size=13, color=colour, line=dict(width=1, color="black")),
                         hovertemplate=hover))
    shapes, annotations = [], []
    lines = [(chance_previous, f"chance {chance_previous:.2f}", "x", "start"),
             (chance_induction, f"chance {chance_induction:.2f}", "y", "end")]
    if threshold is not None:
        lines.append((float(threshold), f"induction head from {float(threshold):g}", "y", "end"))
    for value, label, axis, at in lines:
        shape, note = reference_line(float(value), label, theme=theme, axis=axis, color="#555555", dash="dot",
                                     label_at=at)
        shapes.append(shape)
        annotations.append(note)
    height = 560
    margin = dict(l=90, r=30, t=80, b=170)
    layout = base_layout(
        title or f"Every one of the {L * H} heads: previous-token score against induction score",
        theme=theme, height=height, margin=margin, shapes=shapes, annotations=annotations,
        legend=legend_at_bottom(),
        xaxis=dict(title_text="previous-token score (weight on the token just before)", range=[-0.03, 1.03],
                   zeroline=False),
        yaxis=dict(title_text="induction score", range=[-0.03, 1.03], zeroline=False),
    )
    return go.Figure(data=data, layout=layout)
