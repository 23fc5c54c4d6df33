"""Notebook 03's control: a head count that redraws the per-head heatmap grid.

The layer's weights come from ``examples.demo_layer`` with a fixed seed, so for
every head count the same projection matrices are cut into more, smaller heads.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from ..costs import valid_head_counts
from ..examples import TOKENS, demo_layer, token_vectors
from ..figures.heads import head_grid_figure
from ..figures._style import WIDGET_WIDTH as FIGURE_WIDTH
from ._base import ControlGroup, figure_widget, update_in_place



def head_weights(d_model: int, n_heads: int, *, seed: int = 0) -> np.ndarray:
    """Every head's attention weights for the running sentence, from a seeded demo layer.

    Shapes:
        returns: (H, T, T)
    """
    layer = demo_layer(d_model, n_heads, seed=seed)
    return layer(token_vectors(d_model, seed=seed)).weights  # (H, T, T)


class HeadGrid(ControlGroup):
    """A head-count selector and the heatmap grid it redraws (one ``FigureWidget``).

    Attributes: ``head_count`` (ToggleButtons over the valid head counts of
    ``d_model``), ``figure`` (the one ``FigureWidget``), ``d_model``, ``seed``.
    """

    def __init__(self, d_model: int = 16, n_heads: int = 4, *, seed: int = 0):
        self.d_model, self.seed = d_model, seed
        options = valid_head_counts(d_model)
        if n_heads not in options:
            raise ValueError(f"n_heads={n_heads} does not divide d_model={d_model}; valid head counts are {options}")
        self.head_count = widgets.ToggleButtons(
            options=[(str(h), h) for h in options], value=n_heads, description="heads H",
            tooltips=[f"{h} heads of d_head = {d_model // h}" for h in options],
            style={"description_width": "initial", "button_width": "56px", "font_weight": "bold"},
        )
        self.head_count.add_class("mha-head-count")
        self.figure = figure_widget(self._build(n_heads))
        self.head_count.observe(self._on_change, names="value")

    def _build(self, n_heads: int):
        weights = head_weights(self.d_model, n_heads, seed=self.seed)  # (H, T, T)
        title = (
            f"Attention weights of each head: H = {n_heads} heads of d_head = {self.d_model // n_heads} "
            f"(d_model = {self.d_model})"
        )
        return head_grid_figure(weights, TOKENS, title=title, width=FIGURE_WIDTH, validate=False)

    def _on_change(self, change):
        update_in_place(self.figure, self._build(change["new"]))

    @property
    def box(self) -> widgets.VBox:
        return widgets.VBox([self.head_count, self.figure])



def head_grid(d_model: int = 16, n_heads: int = 4, *, seed: int = 0) -> HeadGrid:
    """Build the head-count control and its heatmap grid; display the result to see it."""
    return HeadGrid(d_model, n_heads, seed=seed)
