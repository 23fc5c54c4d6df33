"""Notebook 02's controls: a d_k slider (why scores are divided by sqrt(d_k)) and a mask toggle."""

from __future__ import annotations

import ipywidgets as widgets
import numpy as np

from ..attention import causal_mask, project, scaled_dot_product_attention
from ..figures.single_head import D_K_VALUES, masked_weights_figure, scaling_experiment, scaling_figure
from ._base import ControlGroup, figure_widget, update_in_place
from .qkv import large_controls_box

PAD = "[PAD]"
MASK_MODES = ("none", "causal", "padding")
MASK_TITLES = {
    "none": "No mask: every token may read every token",
    "causal": "Causal mask: each token reads itself and the tokens before it",
    "padding": "Padding mask: no token reads the two [PAD] tokens",
}


class ScalingExplorer(ControlGroup):
    """A d_k slider and the figure it redraws (looked up from ``scaling_experiment``, computed once).

    Attributes: ``d_k`` (a ``SelectionSlider`` over powers of two), ``figure``, ``data``.
    """

    def __init__(self, d_k: int = 4, *, d_k_values=D_K_VALUES, seed: int = 0):
        self.data = scaling_experiment(d_k_values, seed=seed)
        self.data.index(d_k)  # a clear error for a d_k that was not computed
        self.d_k = widgets.SelectionSlider(
            options=[int(d) for d in self.data.d_k_values],
            value=d_k,
            description="d_k",
            continuous_update=True,
            style={"description_width": "initial"},
            layout=widgets.Layout(width="480px"),
        )
        self.d_k.add_class("mha-dk-slider")
        self.figure = figure_widget(scaling_figure(self.data, d_k, validate=False))
        self.d_k.observe(self._on_change, names="value")

    def _on_change(self, change):
        update_in_place(self.figure, scaling_figure(self.data, change["new"], validate=False))

    @property
    def box(self) -> widgets.VBox:
        return large_controls_box(self.d_k, self.figure)


def scaling_explorer(d_k: int = 4, *, seed: int = 0) -> ScalingExplorer:
    """Build the d_k slider and its figure; display the result to see it."""
    return ScalingExplorer(d_k, seed=seed)


class MaskExplorer(ControlGroup):
    """Mask buttons (none / causal / padding) and the weights heatmap they redraw.

    'none' and 'causal' use the sentence as it is. 'padding' appends ``n_pad``
    ``[PAD]`` tokens whose vectors are all zeros (as when a short sentence shares a
    batch with a longer one) and blocks them as keys with a key padding mask.

    Attributes: ``mode`` (a ``ToggleButtons``), ``figure``, ``tokens``.
    """

    def __init__(self, x: np.ndarray, w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, tokens, *,
                 mode: str = "none", n_pad: int = 2):
        if mode not in MASK_MODES:
            raise ValueError(f"mode={mode!r} is not a mask mode; valid modes are {', '.join(MASK_MODES)}")
        self.x = np.asarray(x, dtype=float)
        self.w_q, self.w_k, self.w_v = w_q, w_k, w_v
        self.tokens = tuple(tokens)
        self.n_pad = int(n_pad)
        self.mode = widgets.ToggleButtons(
            options=list(MASK_MODES), value=mode, description="mask",
            style={"button_width": "auto", "description_width": "initial"},
        )
        self.mode.add_class("mha-mask-mode")
        self.figure = figure_widget(self._build(mode))
        self.mode.observe(self._on_change, names="value")

    def case(self, mode: str) -> dict:
        """What the heatmap shows for ``mode``: tokens, the bool mask (True = blocked) and the weights.

        Shapes:
            returns: query_tokens (Tq,), key_tokens (Tk,), blocked (Tq, Tk), weights (Tq, Tk)
        """
        x, tokens = self.x, self.tokens
        T = len(tokens)
        if mode == "padding":
            x = np.vstack([x, np.zeros((self.n_pad, x.shape[1]))])  # (T + n_pad, D)
            tokens = tokens + (PAD,) * self.n_pad
            key_padding_mask = np.arange(T + self.n_pad) >= T  # (Tk,), True = padding
            attn_mask = np.broadcast_to(key_padding_mask, (T + self.n_pad, T + self.n_pad))  # (Tq, Tk)
        elif mode == "causal":
            attn_mask = causal_mask(T)  # (T, T)
        else:
            attn_mask = np.zeros((T, T), dtype=bool)  # (T, T): nothing blocked
        q, k, v = (project(x, w) for w in (self.w_q, self.w_k, self.w_v))  # (T, Dh) each
        _, weights = scaled_dot_product_attention(q, k, v, attn_mask=attn_mask)
        return dict(query_tokens=tokens, key_tokens=tokens, blocked=attn_mask, weights=weights)

    def _build(self, mode: str):
        c = self.case(mode)
        return masked_weights_figure(
            c["weights"], c["query_tokens"], c["key_tokens"], c["blocked"], title=MASK_TITLES[mode], validate=False
        )

    def _on_change(self, change):
        update_in_place(self.figure, self._build(change["new"]))

    @property
    def box(self) -> widgets.VBox:
        return large_controls_box(self.mode, self.figure)


def mask_explorer(x: np.ndarray, w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, tokens, *, mode: str = "none") -> MaskExplorer:
    """Build the mask buttons and their heatmap; display the result to see it.

    Shapes:
        x: (T, D), one row per token in ``tokens``
        w_q, w_k, w_v: (D, Dh)
    """
    return MaskExplorer(x, w_q, w_k, w_v, tokens, mode=mode)
