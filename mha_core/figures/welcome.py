"""The welcome notebook's figure: how a query's weights spread over the tokens."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from .. import projector
from ..projector import Theme
from ._style import builder, COLORS, base_layout


@builder
def weights_bar_figure(weights: np.ndarray, tokens, *, query_token: str, sharpness: float,
                       theme: Theme | None = None) -> go.Figure:
    """A bar per key token: how much weight one query gives it; ``theme`` sets the sizes (None: the one in use).

    Shapes:
        weights: (T,), sums to 1
    """
    theme = projector.resolve(theme)
    weights = np.asarray(weights, dtype=float)
    layout = base_layout(
        f"Weights the query '{query_token}' gives each token (sharpness {sharpness:g})",
        theme=theme,
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
            textfont=dict(size=theme.font_size),
        hovertemplate="%{x}: %{y:.2f}<extra></extra>",
    )
    return go.Figure(data=[bar], layout=layout)
