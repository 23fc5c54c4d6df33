"""Notebook 03's control: a head count that redraws the per-head heatmap grid.

The layer's weights come from ``examples.head_weights`` (a seeded ``demo_layer``), so
for every head count the same projection matrices are cut into more, smaller heads.
"""

from __future__ import annotations

import ipywidgets as widgets

from mha_core import _validate, projector
from mha_core.costs import valid_head_counts
from mha_core.examples import TOKENS, head_weights
from mha_core.figures._style import WIDGET_WIDTH
from mha_core.figures.heads import head_grid_spec

from ._base import ControlGroup, figure_widget, remembered, update_in_place


class HeadGrid(ControlGroup):
    """A head-count selector and the heatmap grid it redraws (one ``FigureWidget``).

    Attributes: ``head_count`` (ToggleButtons over the valid head counts of
    ``d_model``), ``figure`` (the one ``FigureWidget``), ``d_model``, ``seed``.
    """

    #: A handout records every head count (``widgets._states``).
    handout_controls = {"head_count": None}
    #: Every head count's grid is in the page (``_states.hold``): a move switches it there, the kernel only hears it.
    hold_settings = True

    def __init__(self, d_model: int = 16, n_heads: int = 4, *, seed: int = 0):
        d_model, n_heads, _ = _validate.head_counts(d_model, n_heads)  # names the valid head counts
        self.d_model, self.seed = d_model, seed
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        options = valid_head_counts(d_model)
        self.head_count = widgets.ToggleButtons(
            options=[(str(h), h) for h in options], value=n_heads, description="heads H",
            tooltips=[f"{h} {'head' if h == 1 else 'heads'} of d_head = {d_model // h}" for h in options],
            style={"description_width": "initial", "button_width": "56px", "font_weight": "bold"},
        )
        self.head_count.add_class("mha-head-count")
        self.figure = figure_widget(self._build(n_heads))
        self.head_count.observe(self._on_change, names="value")

    @remembered
    def _build(self, n_heads: int) -> dict:
        # Short enough for one line at projector sizes: a second line would take a row of cells.
        title = (f"H = {n_heads} {'head' if n_heads == 1 else 'heads'} of d_head = {self.d_model // n_heads}, "
                 f"each query's top key outlined")
        return head_grid_spec(head_weights(self.d_model, n_heads, seed=self.seed), TOKENS, title=title, width=WIDGET_WIDTH,
                              theme=self.theme)

    def redraw(self):
        update_in_place(self.figure, self._build(self.head_count.value))

    def _on_change(self, change):
        self.redraw()

    @property
    def box(self) -> widgets.VBox:
        return widgets.VBox([self.head_count, self.figure])


def head_grid(d_model: int = 16, n_heads: int = 4, *, seed: int = 0) -> HeadGrid:
    """Build the head-count control and its heatmap grid; display the result to see it."""
    return HeadGrid(d_model, n_heads, seed=seed)
