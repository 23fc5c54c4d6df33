"""Notebook 04's control: switch heads on and off and watch one token's output move.

The output for a token is ``b_o`` plus one part per head, ``head_outputs[h] @
w_o_block(h)``. Each checkbox keeps or drops one head's part; the output itself is
computed by ``attention.output_projection(..., heads_on=...)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as widgets
import numpy as np

from ..attention import MultiHeadAttention, output_projection
from ..examples import TOKENS, demo_layer, token_vectors
from ..figures.projection import contributions_figure
from ..figures._style import WIDGET_WIDTH as FIGURE_WIDTH
from ._base import ControlGroup, figure_widget, message_box, show_message, update_in_place


QUERY_TOKEN = "changed"


@dataclass(frozen=True)
class TokenParts:
    """One token's head outputs and each head's part of its output.

    Shapes:
        head_outputs: (B, H, T, Dh) = (1, H, T, Dh), the whole sentence (for output_projection)
        contributions: (H, D), head_outputs[0, h, t] @ w_o_block(h)
    """

    layer: MultiHeadAttention
    head_outputs: np.ndarray
    contributions: np.ndarray
    token_index: int

    def output(self, heads_on=None) -> np.ndarray:
        """The token's output with only the heads in ``heads_on`` (all when None). Shape (D,)."""
        out = output_projection(self.head_outputs, self.layer.w_o, self.layer.b_o, heads_on=heads_on)  # (1, T, D)
        return out[0, self.token_index]  # (D,)


def token_parts(layer: MultiHeadAttention, x: np.ndarray, token: str = QUERY_TOKEN) -> TokenParts:
    """Run ``layer`` on the sentence ``x`` (T, D) and split ``token``'s output into head parts."""
    t = TOKENS.index(token)
    head_outputs = layer(x[None]).head_outputs  # (1, H, T, Dh)
    contributions = np.stack([head_outputs[0, h, t] @ layer.w_o_block(h) for h in range(layer.n_heads)])  # (H, D)
    return TokenParts(layer, head_outputs, contributions, t)


class HeadSwitches(ControlGroup):
    """One checkbox per head and the output chart they redraw (one ``FigureWidget``).

    Attributes: ``switches`` (list of Checkbox, one per head), ``figure`` (the one
    ``FigureWidget``), ``message`` (HTML line), ``parts`` (``TokenParts``).
    """

    def __init__(self, d_model: int = 16, n_heads: int = 4, *, seed: int = 0, token: str = QUERY_TOKEN):
        layer = demo_layer(d_model, n_heads, seed=seed)
        self.token = token
        self.parts = token_parts(layer, token_vectors(d_model, seed=seed), token)
        self._output_all = self.parts.output()
        self.switches = [
            widgets.Checkbox(value=True, description=f"head {h + 1}", indent=False,
                             layout=widgets.Layout(width="110px"))
            for h in range(n_heads)
        ]
        for box in self.switches:
            box.add_class("mha-head-switch")
        self.message = message_box()
        self.figure = figure_widget(self._build(self.heads_on))
        for box in self.switches:
            box.observe(self._on_change, names="value")

    @property
    def heads_on(self) -> np.ndarray:
        return np.array([box.value for box in self.switches], dtype=bool)

    def _build(self, heads_on: np.ndarray):
        return contributions_figure(
            self.parts.contributions, self.parts.layer.b_o, heads_on,
            output=self.parts.output(heads_on), output_all=self._output_all, token=self.token,
            width=FIGURE_WIDTH, validate=False,
        )

    def _on_change(self, change):
        heads_on = self.heads_on
        update_in_place(self.figure, self._build(heads_on))
        if not heads_on.any():
            show_message(self.message, "Every head is off: what is left is the bias b_o (all zeros in this layer).", kind="info")
        else:
            show_message(self.message, "")

    @property
    def box(self) -> widgets.VBox:
        label = widgets.HTML('<span style="font-size:16px">Heads switched on:</span>')
        return widgets.VBox([widgets.HBox([label, *self.switches]), self.message, self.figure])



def head_switches(d_model: int = 16, n_heads: int = 4, *, seed: int = 0, token: str = QUERY_TOKEN) -> HeadSwitches:
    """Build the per-head switches and the output chart; display the result to see it."""
    return HeadSwitches(d_model, n_heads, seed=seed, token=token)
