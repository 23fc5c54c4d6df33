"""The welcome notebook's figure: how a query's weights spread over the tokens."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from ._style import COLORS, base_layout


def weights_bar_figure(weights: np.ndarray, tokens, *, query_token: str, sharpness: float) -> go.Figure:
    """A bar per key token: how much weight one query gives it.

    Shapes:
        weights: (T,), sums to 1
    """
    weights = np.asarray(weights, dtype=float)
    layout = base_layout(
        f"Weights the query '{query_token}' gives each token (sharpness {sharpness:g})",
        height=380,
        yaxis=dict(range=[0, 1.1], title=dict(text="weight (sums to 1)")),
        xaxis=dict(title=dict(text="key token")),
    )
    bar = go.Bar(
            x=list(tokens),
            y=weights,
            marker_color=COLORS[0],
            text=[f"{w:.2f}" for w in weights],
            textposition="outside",
        hovertemplate="%{x}: %{y:.2f}<extra></extra>",
    )
    return go.Figure(data=[bar], layout=layout)
