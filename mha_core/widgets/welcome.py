"""The welcome notebook's smoke check: one slider that moves one figure.

If the bars move when you move the slider, widgets and plotly work in this JupyterLab.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from ..attention import attention_scores, softmax
from ..examples import TOKENS, demo_layer, token_vectors
from ..figures.welcome import weights_bar_figure
from ._base import ControlGroup, figure_widget, update_in_place

QUERY_TOKEN = "changed"


def welcome_scores() -> np.ndarray:
    """The scores of the query 'changed' against every token, from a small seeded layer. Shape (T,)."""
    layer = demo_layer(d_model=8, n_heads=1, seed=0, sharpness=1.0)
    result = layer(token_vectors(d_model=8, seed=0))
    return result.scores[0, TOKENS.index(QUERY_TOKEN)]  # (Tk,)


def welcome_weights(sharpness: float) -> np.ndarray:
    """softmax(sharpness x scores): higher sharpness, more weight on the top token. Shape (T,)."""
    return softmax(sharpness * welcome_scores())


def static_figure(sharpness: float = 1.0):
    """The smoke check's bar chart as a plain ``go.Figure``: no control, nothing to update.

    Shown before the slider, it tells "plotly draws figures" apart from "widgets work",
    and the page has plotly.js before the first ``FigureWidget`` needs it.
    """
    return weights_bar_figure(welcome_weights(sharpness), TOKENS, query_token=QUERY_TOKEN, sharpness=sharpness)


class SmokeCheck(ControlGroup):
    """A sharpness slider and the bar chart it redraws.

    Attributes: ``slider`` (the control), ``figure`` (the one ``FigureWidget``),
    ``scores`` (the query's scores, shape (T,)).
    """

    def __init__(self, sharpness: float = 1.0):
        self.scores = welcome_scores()
        self.slider = widgets.FloatSlider(
            value=sharpness, min=0.0, max=4.0, step=0.25, description="sharpness",
            continuous_update=True, readout_format=".2f",
            style={"description_width": "initial"}, layout=widgets.Layout(width="420px"),
        )
        self.slider.add_class("mha-welcome-slider")
        self.figure = figure_widget(self._build(sharpness))
        self.slider.observe(self._on_change, names="value")

    def weights(self, sharpness: float) -> np.ndarray:
        """softmax(sharpness x scores): higher sharpness, more weight on the top token. Shape (T,)."""
        return softmax(sharpness * self.scores)

    def _build(self, sharpness: float):
        return weights_bar_figure(self.weights(sharpness), TOKENS, query_token=QUERY_TOKEN, sharpness=sharpness)

    def _on_change(self, change):
        update_in_place(self.figure, self._build(change["new"]))

    @property
    def box(self) -> widgets.VBox:
        return widgets.VBox([self.slider, self.figure])



def smoke_check(sharpness: float = 1.0) -> SmokeCheck:
    """Build the welcome slider and figure; display the result to see it."""
    return SmokeCheck(sharpness)
