"""Notebook 04's control: switch heads on and off and watch one token's output move.

The output for a token is ``b_o`` plus one part per head, ``head_outputs[h] @
w_o_block(h)``, computed by ``analysis.token_parts``. Each checkbox keeps or drops one
head's part (a ticked box is a head that is on); the output itself is computed by
``attention.output_projection(..., heads_off=...)``.
"""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from mha_core import projector
from mha_core.analysis import token_parts
from mha_core.examples import TOKENS, demo_layer, token_vectors
from mha_core.figures._style import WIDGET_WIDTH
from mha_core.figures.projection import contributions_spec

from ._base import ControlGroup, check_choice, figure_widget, message_box, show_message, update_in_place

QUERY_TOKEN = "changed"


class HeadSwitches(ControlGroup):
    """One checkbox per head and the output chart they redraw (one ``FigureWidget``).

    Attributes: ``switches`` (list of Checkbox, one per head), ``figure`` (the one
    ``FigureWidget``), ``message`` (HTML line), ``parts`` (``analysis.TokenParts``).
    """

    #: A handout records every on/off combination of the heads (``widgets._states``).
    handout_legends = {"switches": "Heads switched on"}
    #: Every on/off combination's chart is in the page, up to 32 (``_states.hold``); the message line still comes
    #: from the kernel.
    hold_settings = True

    def handout_controls(self) -> dict:
        return {f"switches[{h}]": [True, False] for h in range(len(self.switches))}

    def __init__(self, d_model: int = 16, n_heads: int = 4, *, seed: int = 0, token: str = QUERY_TOKEN):
        check_choice(token, "token", TOKENS, kind=str)
        layer = demo_layer(d_model, n_heads, seed=seed)
        self.token = token
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        self.parts = token_parts(layer, token_vectors(d_model, seed=seed), TOKENS.index(token))
        self._output_all = self.parts.output()
        self.switches = [
            widgets.Checkbox(value=True, description=f"head {h + 1}", indent=False,
                             layout=widgets.Layout(width="110px"))
            for h in range(n_heads)
        ]
        for box in self.switches:
            box.add_class("mha-head-switch")
        self.message = message_box()
        self.figure = figure_widget(self._build(self.heads_off))
        for box in self.switches:
            box.observe(self._on_change, names="value")

    @property
    def heads_off(self) -> np.ndarray:
        """(H,) bool, True = off: the boxes that are not ticked."""
        return np.array([not box.value for box in self.switches], dtype=bool)

    def _build(self, heads_off: np.ndarray) -> dict:
        return contributions_spec(
            self.parts.contributions, self.parts.layer.b_o, heads_off,
            output=self.parts.output(heads_off), output_all=self._output_all, token=self.token, width=WIDGET_WIDTH,
            theme=self.theme,
        )

    def _on_change(self, change):
        self.redraw()

    def redraw(self):
        heads_off = self.heads_off
        update_in_place(self.figure, self._build(heads_off))
        if heads_off.all():
            show_message(self.message, "Every head is off: what is left is the bias b_o (all zeros in this layer).", kind="info",
                         theme=self.theme)
        else:
            show_message(self.message, "", theme=self.theme)

    @property
    def box(self) -> widgets.VBox:
        label = widgets.HTML('<span class="mha-control-text">Heads switched on:</span>')  # sized by the group's style
        # Wraps onto a second line when there are more heads than fit across the output area.
        row = widgets.HBox([label, *self.switches], layout=widgets.Layout(flex_flow="row wrap"))
        return widgets.VBox([row, self.message, self.figure])


def head_switches(d_model: int = 16, n_heads: int = 4, *, seed: int = 0, token: str = QUERY_TOKEN) -> HeadSwitches:
    """Build the per-head switches and the output chart; display the result to see it."""
    return HeadSwitches(d_model, n_heads, seed=seed, token=token)
