"""Notebook 01's control: pick a token, see its q, k, v and its raw scores against every token."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from mha_core import _validate, projector
from mha_core.figures.qkv import token_qkv_spec

from ._base import ControlGroup, figure_widget, large_controls_box, remembered, update_in_place

class TokenExplorer(ControlGroup):
    """Token buttons and the one figure they redraw.

    Attributes: ``token`` (a ``ToggleButtons``; its value is the token's index),
    ``figure`` (the one ``FigureWidget``), ``q``, ``k``, ``v`` (shape (T, Dh) each),
    ``tokens``.
    """

    #: A handout records every token (``widgets._states``).
    handout_controls = {"token": None}
    #: Every token's figure is in the page (``_states.hold``): a move switches it there, the kernel only hears it.
    hold_settings = True

    def __init__(self, q: np.ndarray, k: np.ndarray, v: np.ndarray, tokens, token: int = 1):
        self.q, self.k, self.v = (np.asarray(a, dtype=float) for a in (q, k, v))
        self.tokens = tuple(tokens)
        if not (self.q.shape == self.k.shape == self.v.shape and self.q.ndim == 2 and self.q.shape[0] == len(self.tokens)):
            raise ValueError(
                f"q, k and v must each have shape (T, Dh) with T = {len(self.tokens)} tokens; "
                f"got q {self.q.shape}, k {self.k.shape}, v {self.v.shape}"
            )
        token = _validate.index(token, "token", len(self.tokens), "tokens")
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        self.token = widgets.ToggleButtons(
            options=[(word, i) for i, word in enumerate(self.tokens)],
            value=token,
            description="token",
            style={"button_width": "auto", "description_width": "initial"},
        )
        self.token.add_class("mha-qkv-token")
        self.figure = figure_widget(self._build(token))
        self.token.observe(self._on_change, names="value")

    @remembered
    def _build(self, token: int):
        return token_qkv_spec(self.q, self.k, self.v, self.tokens, token, theme=self.theme)

    def redraw(self):
        update_in_place(self.figure, self._build(self.token.value))

    def _on_change(self, change):
        self.redraw()

    @property
    def box(self) -> widgets.VBox:
        return large_controls_box(self.token, self.figure, theme=self.theme)


def token_explorer(q: np.ndarray, k: np.ndarray, v: np.ndarray, tokens, *, token: int = 1) -> TokenExplorer:
    """Build the token picker and its figure; display the result to see it.

    Shapes:
        q, k, v: (T, Dh), one row per token in ``tokens``
    """
    return TokenExplorer(q, k, v, tokens, token)
