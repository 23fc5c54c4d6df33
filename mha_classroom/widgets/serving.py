"""Notebook 10's control group: the KV-cache calculator with real-model presets.

Model, context length, batch, number format, GPU memory, the key/value head count
(from H, ordinary multi-head attention, through grouped-query to 1, multi-query) and,
for a model with a sliding window, whether the cache keeps only the window, redraw one
figure in place. Every number comes from ``mha_core.costs`` through
``tables.calculator_rows``; nothing here runs a model or times anything.
The presets are the models that generate text: an encoder (BERT, MiniLM) reads its
whole input at once and keeps no KV cache.
"""

from __future__ import annotations

import numbers

import ipywidgets as widgets
import plotly.graph_objects as go

from mha_core import _validate, costs, projector
from mha_core.figures.serving import bytes_text, calculator_spec, kv_kind
from mha_core.tables import calculator_rows, kv_head_choices

from ._base import ControlGroup, check_choice, figure_widget, message_box, show_message, update_in_place

TOKEN_CHOICES = (128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768)
BATCH_CHOICES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
#: GPU memory sizes on sale (GiB): 24 (consumer), 40 and 80 (A100), 141 (H200).
MEMORY_CHOICES_GIB = (24, 40, 80, 141)
#: Number formats for weights and cache: label -> bytes per value.
DTYPE_CHOICES = (("32-bit", 4), ("16-bit", 2), ("8-bit", 1))
#: What the cache keeps for a model with a sliding window: label -> windowed.
WINDOW_CHOICES = (("the window", True), ("every token", False))
#: The calculator's presets: the models that generate, so keep a KV cache.
CALCULATOR_MODELS = tuple(name for name, shape in costs.MODEL_SHAPES.items() if shape.generates)


def calculator_readout(rows, n_kv_heads: int, *, theme: projector.Theme | None = None) -> str:
    """The numbers of one setting as short HTML lines (all read from ``rows``, i.e. from ``mha_core.costs``),
    in ``theme``'s control size (None: the theme in use now)."""
    k = rows.kv_head_counts.index(n_kv_heads)
    mha = rows.kv_head_counts.index(rows.n_heads)
    per_token = rows.bytes_per_token[k]
    left = max(0, rows.memory_bytes - rows.weights_bytes)
    kind = kv_kind(n_kv_heads, rows.n_heads)
    kept = "" if rows.cached_tokens == rows.n_tokens else f", {rows.cached_tokens:,} of them kept"
    lines = [
        f"KV cache per token: 2 (K and V) &times; {rows.n_layers} layers &times; {n_kv_heads} KV heads &times; "
        f"{rows.d_head} &times; {rows.bytes_per_value} bytes = <b>{bytes_text(per_token)}</b> ({per_token:,} bytes)",
        f"for {rows.batch} &times; {rows.n_tokens:,} tokens{kept}: <b>{bytes_text(rows.batch_bytes[k])}</b> "
        f"({rows.batch_bytes[k]:,} bytes)",
        window_line(rows, n_kv_heads),
        f"weights: {rows.weights_bytes // rows.bytes_per_value / 1e9:.3g} billion parameters &times; {rows.bytes_per_value} bytes "
        f"= {bytes_text(rows.weights_bytes)}; left for the cache: <b>{bytes_text(left)}</b> of {bytes_text(rows.memory_bytes)}",
        f"sequences of {rows.n_tokens:,} tokens that fit: <b>{rows.sequences_that_fit[k]:,}</b> with {kind}"
        + ("" if k == mha else f" (with every head's own K and V, MHA: {rows.sequences_that_fit[mha]:,})"),
    ]
    theme = projector.resolve(theme)
    if theme.projector:
        # At projector sizes five lines push the figure below a 1280 x 720 screen: keep what the figure does
        # not show (the per-token arithmetic, the window), shorter; the panel titles give the batch and the fit.
        lines = [f"per token: 2 &times; {rows.n_layers} layers &times; {n_kv_heads} KV heads &times; {rows.d_head} "
                 f"&times; {rows.bytes_per_value} bytes = <b>{bytes_text(per_token)}</b>", window_line(rows, n_kv_heads)]
    px = theme.control_font_size
    return f'<div style="font-size:{px}px;line-height:1.4">' + "<br>".join(line for line in lines if line) + "</div>"


def window_line(rows, n_kv_heads: int) -> str:
    """What the sliding window does to this setting's cache ('' for a model without one).

    Kept to one line at 1280 x 800 (under about 90 characters): a second line would push
    the figure below the screen.
    """
    W = rows.sliding_window
    if W is None:
        return ""
    per_token = rows.bytes_per_token[rows.kv_head_counts.index(n_kv_heads)]
    windowed, full = per_token * min(rows.n_tokens, W) * rows.batch, per_token * rows.n_tokens * rows.batch
    if not rows.windowed:
        return f"every token kept, as if there were no window; its {W:,}-token window needs {bytes_text(windowed)}"
    if rows.n_tokens <= W:
        return f"sliding window of {W:,} tokens: all {rows.n_tokens:,} fit inside it, nothing is dropped yet"
    return (f"sliding window: keeps min(T, {W:,}) tokens; all {rows.n_tokens:,} would take {bytes_text(full)}, "
            f"{full // windowed} times as much")


def calculator_message(rows, n_kv_heads: int, context: int, positions: str = "rotary") -> tuple[str, str]:
    """A plain message for a setting that cannot serve (or goes past the model's context); '' when all is well.

    Each fits on one line at 1280 x 800 (about 100 characters): a second line, with a sliding
    window's line in the readout, pushed the figure below the screen (682 px of 679, measured).
    """
    k = rows.kv_head_counts.index(n_kv_heads)
    if rows.weights_bytes >= rows.memory_bytes:
        return (f"The weights alone ({bytes_text(rows.weights_bytes)} in {8 * rows.bytes_per_value}-bit) do not fit in "
                f"{bytes_text(rows.memory_bytes)}: choose more memory or fewer bits."), "warning"
    fit = rows.sequences_that_fit[k]
    if fit < rows.batch:
        return (f"A batch of {rows.batch} needs {bytes_text(rows.batch_bytes[k])} of cache; {fit:,} fit. "
                f"Choose fewer sequences, tokens, KV heads or bits."), "warning"
    return context_message(rows.model, rows.n_tokens, context, positions)


def context_message(model: str, n_tokens: int, context: int, positions: str) -> tuple[str, str]:
    """What a length past the model's context means: impossible (learned positions) or untested (rotary)."""
    if n_tokens <= context:
        return "", "info"
    # One line each at 1280 x 800: a second line would push the figure below the screen.
    if positions == "learned":
        return (f"{model} cannot run on {n_tokens:,} tokens: it learned position vectors for 0 to {context - 1:,} "
                f"only."), "warning"
    return (f"Past its {context:,}-token context, {model} still runs (rotary positions); how well is not measured "
            f"here."), "info"


class KVCacheCalculator(ControlGroup):
    """The KV-cache calculator: seven controls, a readout, a message line and one ``FigureWidget``.

    Attributes: ``model``, ``n_tokens``, ``batch``, ``dtype``, ``memory``, ``n_kv_heads``,
    ``window`` (the controls; ``window`` only moves for a model with a sliding window),
    ``readout`` (HTML), ``message`` (HTML), ``figure``.
    """

    #: A handout records every preset (with and without its window, where it has one), and from each every
    #: setting of the other controls, one at a time (``widgets._states``).
    handout_controls = {"model": None, "memory": None, "dtype": None, "window": None, "n_tokens": None, "batch": None,
                        "n_kv_heads": None}
    handout_bases = ("model", "window")

    def __init__(self, model: str = "Llama-2-7B", n_tokens: int = 4096, batch: int = 1, bytes_per_value: int = 2,
                 memory_gib: int = 80, n_kv_heads: int | None = None, windowed: bool = True):
        if model in costs.MODEL_SHAPES and model not in CALCULATOR_MODELS:
            raise ValueError(f"model={model!r} is an encoder: it reads its whole input at once and keeps no KV cache; "
                             f"valid models are {', '.join(CALCULATOR_MODELS)}")
        if model not in CALCULATOR_MODELS:
            raise ValueError(f"model={model!r} is not a known shape; valid models are {', '.join(CALCULATOR_MODELS)}")
        windowed = _validate.flag(windowed, "windowed")
        for name, value, choices in (("n_tokens", n_tokens, TOKEN_CHOICES), ("batch", batch, BATCH_CHOICES),
                                     ("bytes_per_value", bytes_per_value, [b for _, b in DTYPE_CHOICES]),
                                     ("memory_gib", memory_gib, MEMORY_CHOICES_GIB)):
            check_choice(value, name, choices, kind=numbers.Integral)
        shape = costs.MODEL_SHAPES[model]
        n_kv_heads = shape.n_kv_heads if n_kv_heads is None else n_kv_heads
        n_kv_heads = _validate.kv_head_count(n_kv_heads, shape.n_heads, of=f"{model}'s n_heads")
        kv_choices = kv_head_choices(shape.n_heads)
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        style = {"description_width": "initial"}
        self.model = widgets.Dropdown(options=list(CALCULATOR_MODELS), value=model, description="model",
                                      style=style, layout=widgets.Layout(width="260px"))
        self.memory = widgets.Dropdown(options=[(f"{g} GiB", g) for g in MEMORY_CHOICES_GIB], value=memory_gib,
                                       description="GPU memory", style=style, layout=widgets.Layout(width="210px"))
        # Button widths in em: they grow with the projector's text ("32-bit" and "every token" were cut to "32..."
        # and "every ..." at 20 px in 70 and 110 px buttons).
        self.dtype = widgets.ToggleButtons(options=list(DTYPE_CHOICES), value=bytes_per_value, description="values",
                                           style={**style, "button_width": "4.4em"})
        self.n_tokens = widgets.SelectionSlider(options=TOKEN_CHOICES, value=n_tokens, description="tokens T",
                                                continuous_update=True, style=style, layout=widgets.Layout(width="400px"))
        self.batch = widgets.SelectionSlider(options=BATCH_CHOICES, value=batch, description="batch",
                                             style=style, layout=widgets.Layout(width="380px"))
        self.n_kv_heads = widgets.SelectionSlider(options=kv_choices, value=n_kv_heads,
                                                  description="key/value heads (H = MHA ... 1 = MQA)",
                                                  style=style, layout=widgets.Layout(width="560px"))
        self.window = widgets.ToggleButtons(options=list(WINDOW_CHOICES), value=windowed, description="cache keeps",
                                            disabled=shape.sliding_window is None,
                                            tooltips=["only the tokens inside the sliding window", "every token, as without a window"],
                                            style={**style, "button_width": "7.6em"})
        for control, name in ((self.model, "model"), (self.memory, "memory"), (self.dtype, "dtype"),
                              (self.n_tokens, "tokens"), (self.batch, "batch"), (self.n_kv_heads, "kv-heads"),
                              (self.window, "window")):
            control.add_class(f"mha-serving-{name}")
        self.readout = widgets.HTML()
        self.message = message_box()
        self._switching_model = False
        self.figure = figure_widget(self._build())
        self._show_numbers()
        for control in (self.memory, self.dtype, self.n_tokens, self.batch, self.n_kv_heads, self.window):
            control.observe(self._on_change, names="value")
        self.model.observe(self._on_model, names="value")

    @property
    def shape(self) -> costs.ModelShape:
        return costs.MODEL_SHAPES[self.model.value]

    def rows(self):
        """The calculator's numbers for the current setting (``tables.CalculatorRows``)."""
        return calculator_rows(self.shape, n_tokens=self.n_tokens.value, batch=self.batch.value,
                               bytes_per_value=self.dtype.value, memory_bytes=self.memory.value * 2**30,
                               windowed=self.window.value)

    def _build(self, rows=None):
        # A go.Figure, which update_in_place reads; where _base takes a builder's plain spec,
        # passing calculator_spec(...) itself saves plotly's checks (about 5 ms a move).
        return go.Figure(calculator_spec(rows or self.rows(), self.n_kv_heads.value, theme=self.theme))

    def _show_numbers(self, rows=None):
        rows = rows or self.rows()
        self.readout.value = calculator_readout(rows, self.n_kv_heads.value, theme=self.theme)
        text, kind = calculator_message(rows, self.n_kv_heads.value, self.shape.context, self.shape.positions)
        show_message(self.message, text, kind=kind, theme=self.theme)

    def redraw(self):
        rows = self.rows()
        update_in_place(self.figure, self._build(rows))
        self._show_numbers(rows)

    def _on_change(self, change):
        if not self._switching_model:
            self.redraw()

    def _on_model(self, change):
        # A new model has its own head count: its key/value choices, starting at its published Hkv.
        self._switching_model = True
        try:
            shape = self.shape
            self.n_kv_heads.options = kv_head_choices(shape.n_heads)
            self.n_kv_heads.value = shape.n_kv_heads
            # Only a model with a sliding window can keep less than every token.
            self.window.value = True
            self.window.disabled = shape.sliding_window is None
        finally:
            self._switching_model = False
        self.redraw()

    @property
    def box(self) -> widgets.VBox:
        controls = widgets.VBox([
            widgets.HBox([self.model, self.memory]),
            # One row for both: a row of its own pushed the figure below a 1280 x 800 screen.
            widgets.HBox([self.dtype, self.window]),
            widgets.HBox([self.n_tokens, self.batch]),
            self.n_kv_heads,
        ])
        return widgets.VBox([controls, self.message, self.readout, self.figure])


def kv_cache_calculator(model: str = "Llama-2-7B", n_tokens: int = 4096, batch: int = 1, bytes_per_value: int = 2,
                        memory_gib: int = 80, n_kv_heads: int | None = None, windowed: bool = True) -> KVCacheCalculator:
    """Build the KV-cache calculator; display the result to see it."""
    return KVCacheCalculator(model, n_tokens, batch, bytes_per_value, memory_gib, n_kv_heads, windowed)
