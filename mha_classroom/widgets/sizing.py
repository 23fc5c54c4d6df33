"""Notebook 05's controls: d_model, head count and sequence length, with live costs.

The head-count slider allows every whole number from 1 to 64 on purpose: a count
that does not divide d_model is a question worth asking, and the answer is a plain
message with the nearest valid choices, never a traceback.
"""

from __future__ import annotations

import numbers

import ipywidgets as widgets

from mha_core import _validate, costs, projector
from mha_core.figures._style import WIDGET_WIDTH
from mha_core.figures.sizing import sizing_spec
from mha_core.tables import sizing_rows

from ._base import ControlGroup, check_choice, figure_widget, message_box, show_message, update_in_place

D_MODEL_CHOICES = (16, 64, 128, 256, 384, 512, 768, 1024, 4096)
TOKEN_CHOICES = (6, 128, 512, 1024, 2048, 4096)
MAX_HEADS = 64


def shown_head_counts(d_model: int, max_heads: int = MAX_HEADS) -> list[int]:
    """The valid head counts of ``d_model`` that the bar charts show (up to ``max_heads``)."""
    return [h for h in costs.valid_head_counts(d_model) if h <= max_heads]


def impossible_split_message(d_model: int, n_heads: int) -> str:
    """Plain words for a head count that does not divide d_model, with the nearest valid ones."""
    nearest = costs.nearest_valid_head_counts(d_model, n_heads)
    choices = " or ".join(str(h) for h in nearest)
    return (
        f"{n_heads} heads do not split d_model = {d_model} evenly: {d_model} / {n_heads} = "
        f"{d_model / n_heads:.2f}, and every head needs a whole number of features. "
        f"Nearest valid head counts: {choices}."
    )


def sizing_readout(d_model: int, n_heads: int, n_tokens: int, *, theme: projector.Theme | None = None) -> str:
    """The numbers for one setting, as short HTML lines (all from ``mha_core.costs``), in ``theme``'s control size."""
    Dh = costs.d_head(d_model, n_heads)
    params = costs.attention_parameters(d_model, n_heads)
    entries = costs.score_table_entries(n_heads, n_tokens)
    flops = costs.attention_flops(d_model, n_heads, n_tokens)
    products = flops["projections"] + flops["scores"] + flops["mix"]
    lines = [
        f"d_head = {d_model} / {n_heads} = <b>{Dh}</b> {'feature' if Dh == 1 else 'features'} per head",
        f"parameters: 4 &times; {d_model}&sup2; + 4 &times; {d_model} = <b>{params:,}</b>, the same for every H",
        f"score tables: {n_heads} {'head' if n_heads == 1 else 'heads'} &times; {n_tokens:,}&sup2; = <b>{entries:,}</b> "
        "entries per layer",
        f"FLOPs: products <b>{products:,}</b> (flat) + softmax <b>{flops['softmax']:,}</b> (grows with H)",
    ]
    px = projector.resolve(theme).control_font_size
    return f'<div style="font-size:{px}px;line-height:{READOUT_LINE_HEIGHT}">' + "<br>".join(lines) + "</div>"


#: Line height of the readout (times its font size); ``figures.sizing.sizing_height`` leaves room for four lines.
READOUT_LINE_HEIGHT = 1.35


class HeadSizing(ControlGroup):
    """d_model, head-count and token-count controls; a readout; one ``FigureWidget``.

    Attributes: ``d_model``, ``n_heads``, ``n_tokens`` (the controls), ``readout``
    (HTML), ``message`` (HTML line for an impossible split; it takes the readout's
    place while it shows), ``numbers`` (the box holding both), ``figure``.
    """

    #: A handout records, for every T, every d_model and every head count (the impossible ones with their
    #: message), one control at a time (``widgets._states``).
    handout_controls = {"n_tokens": None, "d_model": None, "n_heads": None}
    handout_bases = ("n_tokens",)

    def __init__(self, d_model: int = 768, n_heads: int = 12, n_tokens: int = 1024):
        check_choice(d_model, "d_model", D_MODEL_CHOICES, kind=numbers.Integral)
        check_choice(n_tokens, "n_tokens", TOKEN_CHOICES, kind=numbers.Integral)
        _validate.slider_value(n_heads, "n_heads", 1, MAX_HEADS, note=f" (the valid head counts of d_model={d_model} among "
                               f"them: {', '.join(map(str, shown_head_counts(d_model)))})")
        d_model, n_heads, n_tokens = int(d_model), int(n_heads), int(n_tokens)
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        style = {"description_width": "initial"}
        self.d_model = widgets.Dropdown(options=D_MODEL_CHOICES, value=d_model, description="d_model",
                                        style=style, layout=widgets.Layout(width="200px"))
        self.n_heads = widgets.IntSlider(value=n_heads, min=1, max=MAX_HEADS, step=1, description="heads H",
                                         style=style, layout=widgets.Layout(width="640px"))
        self.n_tokens = widgets.SelectionSlider(options=TOKEN_CHOICES, value=n_tokens, description="tokens T",
                                                style=style, layout=widgets.Layout(width="420px"))
        for control, name in ((self.d_model, "d-model"), (self.n_heads, "head-count"), (self.n_tokens, "tokens")):
            control.add_class(f"mha-sizing-{name}")
        self.readout = widgets.HTML()
        self.message = message_box()
        # The readout and the impossible-split message take turns in one slot of four lines, between the
        # controls and the figure: the numbers the room reads stay in view with the sliders, and the
        # figure does not jump when one replaces the other.
        self.message.layout.min_height = "0px"
        self.numbers = widgets.VBox([self.message, self.readout])
        self.figure = figure_widget(self._build())
        self._show_numbers()
        for control in (self.d_model, self.n_heads, self.n_tokens):
            control.observe(self._on_change, names="value")

    @property
    def valid(self) -> bool:
        return self.d_model.value % self.n_heads.value == 0

    def _build(self):
        D, T = self.d_model.value, self.n_tokens.value
        rows = sizing_rows(D, T, shown_head_counts(D))
        return sizing_spec(rows, n_heads=self.n_heads.value, width=WIDGET_WIDTH, theme=self.theme)

    def _show_numbers(self):
        self.numbers.layout.min_height = f"{round(4 * READOUT_LINE_HEIGHT * self.theme.control_font_size)}px"
        D, H, T = self.d_model.value, self.n_heads.value, self.n_tokens.value
        if self.valid:
            show_message(self.message, "", theme=self.theme)
            self.readout.value = sizing_readout(D, H, T, theme=self.theme)
        else:
            show_message(self.message, impossible_split_message(D, H), theme=self.theme)
            self.readout.value = ""
        self.message.layout.display = "none" if self.valid else None
        self.readout.layout.display = None if self.valid else "none"

    def redraw(self):
        update_in_place(self.figure, self._build())
        self._show_numbers()

    def _on_change(self, change):
        self.redraw()

    @property
    def box(self) -> widgets.VBox:
        controls = widgets.VBox([widgets.HBox([self.d_model, self.n_tokens]), self.n_heads])
        # Controls, then the numbers, then the figure: all three on one screen (figures.sizing.sizing_height).
        return widgets.VBox([controls, self.numbers, self.figure])


def head_sizing(d_model: int = 768, n_heads: int = 12, n_tokens: int = 1024) -> HeadSizing:
    """Build the sizing controls, readout and figure; display the result to see it."""
    return HeadSizing(d_model, n_heads, n_tokens)
