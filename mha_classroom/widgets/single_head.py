"""Notebook 02's controls: a d_head slider (why scores are divided by sqrt(d_head)) and a mask toggle."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from mha_core import projector
from mha_core.analysis import D_HEAD_VALUES, MASK_MODES, masked_attention, scaling_experiment
from mha_core.figures.single_head import masked_weights_spec, scaling_spec

from ._base import ControlGroup, check_choice, figure_widget, large_controls_box, remembered, update_in_place

MASK_TITLES = {
    "none": "No mask: every token may read every token",
    "causal": "Causal mask: each token reads itself and the tokens before it",
    "padding": "Padding mask: no token reads the two [PAD] tokens",
}


class ScalingExplorer(ControlGroup):
    """A d_head slider and the figure it redraws (looked up from ``scaling_experiment``, computed once).

    Attributes: ``d_head`` (a ``SelectionSlider`` over powers of two), ``figure``, ``data``.
    """

    #: A handout records every d_head (``widgets._states``).
    handout_controls = {"d_head": None}
    #: Every d_head's figure is in the page (``_states.hold``): a move switches it there, the kernel only hears it.
    hold_settings = True

    def __init__(self, d_head: int = 4, *, d_head_values=D_HEAD_VALUES, seed: int = 0):
        self.data = scaling_experiment(d_head_values, seed=seed)
        self.data.index(d_head)  # a clear error for a d_head that was not computed
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        self.d_head = widgets.SelectionSlider(
            options=[int(d) for d in self.data.d_head_values],
            value=int(d_head),
            description="d_head",
            continuous_update=True,
            style={"description_width": "initial"},
            layout=widgets.Layout(width="480px"),
        )
        self.d_head.add_class("mha-d-head-slider")
        self.figure = figure_widget(self._build(int(d_head)))
        self.d_head.observe(self._on_change, names="value")

    @remembered
    def _build(self, d_head: int) -> dict:
        return scaling_spec(self.data, d_head, theme=self.theme)

    def redraw(self):
        update_in_place(self.figure, self._build(self.d_head.value))

    def _on_change(self, change):
        self.redraw()

    @property
    def box(self) -> widgets.VBox:
        return large_controls_box(self.d_head, self.figure, theme=self.theme)


def scaling_explorer(d_head: int = 4, *, seed: int = 0) -> ScalingExplorer:
    """Build the d_head slider and its figure; display the result to see it."""
    return ScalingExplorer(d_head, seed=seed)


class MaskExplorer(ControlGroup):
    """Mask buttons (none / causal / padding) and the weights heatmap they redraw.

    The weights come from ``analysis.masked_attention``: 'padding' appends ``n_pad``
    ``[PAD]`` tokens and blocks them as keys.

    Attributes: ``mode`` (a ``ToggleButtons``), ``figure``, ``tokens``.
    """

    #: A handout records every mask (``widgets._states``).
    handout_controls = {"mode": None}
    #: Every mask's heatmap is in the page (``_states.hold``): a move switches it there, the kernel only hears it.
    hold_settings = True

    def __init__(self, x: np.ndarray, w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, tokens, *,
                 mode: str = "none", n_pad: int = 2):
        check_choice(mode, "mode", MASK_MODES)
        self.x = np.asarray(x, dtype=float)
        self.w_q, self.w_k, self.w_v = w_q, w_k, w_v
        self.tokens = tuple(tokens)
        self.n_pad = int(n_pad)
        self.theme = projector.theme()
        self.mode = widgets.ToggleButtons(
            options=list(MASK_MODES), value=mode, description="mask",
            style={"button_width": "auto", "description_width": "initial"},
        )
        self.mode.add_class("mha-mask-mode")
        self.figure = figure_widget(self._build(mode))
        self.mode.observe(self._on_change, names="value")

    @remembered
    def _build(self, mode: str) -> dict:
        case = masked_attention(self.x, self.w_q, self.w_k, self.w_v, self.tokens, mode, n_pad=self.n_pad)
        return masked_weights_spec(case.weights, case.tokens, case.tokens, case.blocked, title=MASK_TITLES[mode], theme=self.theme)

    def redraw(self):
        update_in_place(self.figure, self._build(self.mode.value))

    def _on_change(self, change):
        self.redraw()

    @property
    def box(self) -> widgets.VBox:
        return large_controls_box(self.mode, self.figure, theme=self.theme)


def mask_explorer(x: np.ndarray, w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, tokens, *, mode: str = "none") -> MaskExplorer:
    """Build the mask buttons and their heatmap; display the result to see it.

    Shapes:
        x: (T, D), one row per token in ``tokens``
        w_q, w_k, w_v: (D, Dh)
    """
    return MaskExplorer(x, w_q, w_k, w_v, tokens, mode=mode)
