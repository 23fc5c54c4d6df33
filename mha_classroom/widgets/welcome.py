"""The welcome notebook's smoke check: one slider that moves one figure.

If the bars move when you move the slider, widgets and plotly work in this JupyterLab.
"""

from __future__ import annotations

import ipywidgets as widgets

from mha_core import _validate, projector
from mha_core.examples import TOKENS, WELCOME_QUERY, welcome_weights
from mha_core.figures.welcome import weights_bar_figure

from ._base import ControlGroup, figure_widget, remembered, update_in_place

#: The sharpness slider's range and step.
SHARPNESS_RANGE = (0.0, 4.0)
SHARPNESS_STEP = 0.25


def static_figure(sharpness: float = 1.0, *, theme: projector.Theme | None = None):
    """The smoke check's bar chart as a plain ``go.Figure``: no control, nothing to update.

    Shown before the slider, it tells "plotly draws figures" apart from "widgets work",
    and the page has plotly.js before the first ``FigureWidget`` needs it.
    """
    return weights_bar_figure(welcome_weights(sharpness), TOKENS, query_token=WELCOME_QUERY, sharpness=sharpness,
                              theme=theme)


def _check_sharpness(sharpness) -> float:
    low, high = SHARPNESS_RANGE
    return _validate.slider_value(sharpness, "sharpness", low, high, whole=False, note=f" (in steps of {SHARPNESS_STEP:g})")


class SmokeCheck(ControlGroup):
    """A sharpness slider and the bar chart it redraws.

    Attributes: ``slider`` (the control), ``figure`` (the one ``FigureWidget``).
    """

    #: A handout records every step of the slider (``widgets._states``).
    handout_controls = {"slider": None}
    #: Every step's bars are in the page (``_states.hold``): a move switches them there, the kernel only hears it.
    hold_settings = True

    def __init__(self, sharpness: float = 1.0):
        sharpness = _check_sharpness(sharpness)
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        self.slider = widgets.FloatSlider(
            value=sharpness, min=SHARPNESS_RANGE[0], max=SHARPNESS_RANGE[1], step=SHARPNESS_STEP, description="sharpness",
            continuous_update=True, readout_format=".2f",
            style={"description_width": "initial"}, layout=widgets.Layout(width="420px"),
        )
        self.slider.add_class("mha-welcome-slider")
        self.figure = figure_widget(self._build(sharpness))
        self.slider.observe(self._on_change, names="value")

    @remembered
    def _build(self, sharpness: float):
        return static_figure(sharpness, theme=self.theme)

    def redraw(self):
        update_in_place(self.figure, self._build(self.slider.value))

    def _on_change(self, change):
        self.redraw()

    @property
    def box(self) -> widgets.VBox:
        return widgets.VBox([self.slider, self.figure])


def smoke_check(sharpness: float = 1.0) -> SmokeCheck:
    """Build the welcome slider and figure; display the result to see it."""
    return SmokeCheck(sharpness)
