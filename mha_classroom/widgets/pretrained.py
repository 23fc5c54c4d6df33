"""Controls for notebooks 07 and 08 (real half): the heads of all-MiniLM-L6-v2.

- ``layer_head_explorer``: a layer selector, a head selector and a text box over one
  figure (every head of the layer as a tile, the chosen head large).
- ``pruning_explorer``: a slider for how many heads are switched off (in the greedy
  order a script chose on tuning sentences), over the held-out sentences' cosines.

The maths lives in ``mha_core.pretrained``; the figures in ``figures.pretrained``.
"""

from __future__ import annotations

import ipywidgets as widgets

from mha_core import projector
from mha_core.examples import RUNNING_SENTENCE
from mha_core.figures.pretrained import LIVE_WIDTH, layer_heads_figure, pruning_step_figure

from ._base import ControlGroup, figure_widget, message_box, remembered, show_message, update_in_place

#: Longer inputs make the per-head tables unreadable; the text box asks for a shorter sentence.
MAX_SHOWN_TOKENS = 32


def text_problem(model, text: str) -> str | None:
    """A plain message if ``text`` cannot be shown (empty, too long), else None."""
    if not isinstance(text, str) or not text.strip():
        return "Type a sentence first: the box is empty."
    tokens, _, n_word_pieces = model.tokenize(text)
    if n_word_pieces > MAX_SHOWN_TOKENS:
        cut = f" (the model itself reads at most {model.max_tokens})" if n_word_pieces > model.max_tokens else ""
        return (f"That text has {n_word_pieces} word pieces with [CLS] and [SEP]; this view shows up to "
                f"{MAX_SHOWN_TOKENS}{cut}. Try a shorter sentence.")
    return None


def unknown_note(model, tokens) -> str:
    """A line saying what ``[UNK]`` is when ``tokens`` hold any, else ""."""
    n = sum(t == "[UNK]" for t in tokens)
    if not n:
        return ""
    return (f"{n} of these {len(tokens)} tokens {'is' if n == 1 else 'are'} [UNK], 'unknown': the model's "
            f"vocabulary of {model.vocab_size:,} word pieces has none for what you typed there (most emoji and "
            "Chinese characters, for example), so the model sees one [UNK] token in its place and cannot tell "
            "which character it was.")


class LayerHeadExplorer(ControlGroup):
    """Layer and head selectors and a text box, over one ``FigureWidget``.

    Attributes: ``layer`` and ``head`` (ToggleButtons, values counted from 0, labels from
    1), ``text`` (Text; Enter runs the sentence), ``message`` (HTML line), ``figure``
    (the one ``FigureWidget``), ``encoding`` (the sentence shown, from ``model.encode``).
    """

    #: A handout has no model to run a typed sentence: three sentences, run while it is built, and from each
    #: every layer and every head (``widgets._states``).
    handout_controls = {"text": [RUNNING_SENTENCE, "we rotated the api key after the leak",
                                 "after the deploy, did the cache key change?"], "layer": None, "head": None}
    handout_bases = ("text",)
    handout_note = ("Typing your own sentence needs Python, so here you pick one of three sentences, each run "
                    "through the model while this page was built. In JupyterLab you type any sentence.")

    def __init__(self, model, text: str = RUNNING_SENTENCE, *, layer: int = 0, head: int = 0):
        self.model = model
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        problem = text_problem(model, text)
        if problem:
            raise ValueError(f"text={text!r}: {problem}")
        self.encoding = model.encode(text)
        buttons = {"description_width": "60px", "button_width": "40px", "font_weight": "bold"}
        self.layer = widgets.ToggleButtons(
            options=[(str(l + 1), l) for l in range(model.n_layers)], value=layer, description="layer",
            tooltips=[f"layer {l + 1}" for l in range(model.n_layers)], style=buttons,
        )
        self.head = widgets.ToggleButtons(
            options=[(str(h + 1), h) for h in range(model.n_heads)], value=head, description="head",
            tooltips=[f"head {h + 1}" for h in range(model.n_heads)], style=buttons,
        )
        self.text = widgets.Text(
            value=text, description="sentence", continuous_update=False, placeholder="type a sentence, then Enter",
            layout=widgets.Layout(width=f"{LIVE_WIDTH - 40}px"), style={"description_width": "60px"},
        )
        self.layer.add_class("mha-minilm-layer")
        self.head.add_class("mha-minilm-head")
        self.text.add_class("mha-minilm-text")
        self.message = message_box()
        self.figure = figure_widget(self._build())
        self.layer.observe(self.redraw, names="value")
        self.head.observe(self.redraw, names="value")
        self.text.observe(self._on_text, names="value")

    def _build(self):
        layer = self.layer.value
        weights = self.encoding.attentions[layer]  # (H, T, T)
        return layer_heads_figure(weights, self.encoding.tokens, layer=layer, head=self.head.value, validate=False,
                                  theme=self.theme)

    def redraw(self, change=None):
        update_in_place(self.figure, self._build())

    def _on_text(self, change):
        problem = text_problem(self.model, change["new"])
        if problem:
            show_message(self.message, problem + f" Still showing: '{self.encoding.text}'.", theme=self.theme)
            return
        self.encoding = self.model.encode(change["new"])
        show_message(self.message, unknown_note(self.model, self.encoding.tokens), kind="info", theme=self.theme)
        self.redraw()

    @property
    def box(self) -> widgets.VBox:
        return widgets.VBox([self.layer, self.head, self.text, self.message, self.figure])


def layer_head_explorer(model, text: str = RUNNING_SENTENCE, *, layer: int = 0, head: int = 0) -> LayerHeadExplorer:
    """Build notebook 07's explorer for ``model`` (from ``load_minilm()``); display the result to see it."""
    return LayerHeadExplorer(model, text, layer=layer, head=head)


class PruningExplorer(ControlGroup):
    """A slider for how many heads are off, over the held-out sentences' cosines (one ``FigureWidget``).

    Reads the steps a script computed (``data/models/minilm_pruning.json``): per number
    of heads off, each held-out sentence's cosine and the pair-ranking accuracy.
    ``calibration`` (``CosineCalibration.as_dict()``) marks what paraphrases and unrelated
    sentences score. Attributes: ``n_off`` (IntSlider), ``figure``, ``message``, ``record`` (the JSON).
    """

    #: A handout records every step of the search (``widgets._states``).
    handout_controls = {"n_off": None}

    def __init__(self, record: dict, *, n_off: int | None = None, calibration=None):
        self.record = record
        self.calibration = calibration
        self.theme = projector.theme()  # read once: every redraw keeps the sizes the group was built with
        steps = record["steps"]
        last = len(steps) - 1
        self.n_off = widgets.IntSlider(
            value=last if n_off is None else n_off, min=0, max=last, step=1, description="heads off",
            continuous_update=True, style={"description_width": "80px"}, layout=widgets.Layout(width="520px"),
        )
        self.n_off.add_class("mha-minilm-pruned")
        self.message = message_box()
        self.figure = figure_widget(self._build(self.n_off.value))
        self.n_off.observe(self._on_change, names="value")

    @remembered
    def _build(self, n_off: int):
        return pruning_step(self.record, n_off, self.calibration, theme=self.theme)

    def redraw(self):
        update_in_place(self.figure, self._build(self.n_off.value))
        show_message(self.message, heads_off_text(self.record, self.n_off.value, theme=self.theme), kind="info",
                     theme=self.theme)

    def _on_change(self, change):
        self.redraw()

    @property
    def box(self) -> widgets.VBox:
        return widgets.VBox([self.n_off, self.message, self.figure])


def heads_off_text(record: dict, n_off: int, *, theme: projector.Theme | None = None) -> str:
    """Which heads are off after ``n_off`` steps: their names on a laptop; on a projector, where 38 names take
    four lines and push the figure off the screen, how many in each layer."""
    if not n_off:
        return "Every head is on."
    if not projector.resolve(theme).projector:
        return "Off: " + ", ".join(record["removed_names"][:n_off])
    layers = [int(layer) for layer, _ in record["removed"][:n_off]]
    n_layers = max(max(layers) + 1, 6)
    counts = ", ".join(f"L{l + 1} {layers.count(l)}" for l in range(n_layers))
    return f"Off: {n_off} {'head' if n_off == 1 else 'heads'}; per layer {counts}"


def pruning_step(record: dict, n_off: int, calibration=None, *, theme: projector.Theme | None = None):
    """The figure for ``n_off`` heads off, from the script's record (used by the widget and its checks)."""
    step = record["steps"][n_off]
    return pruning_step_figure(
        step["held_out_cosines"], record["held_out"], n_removed=n_off, threshold=record["threshold"],
        ranking_accuracy=step["pair_accuracy"], ranking_accuracy_full=record["steps"][0]["pair_accuracy"],
        calibration=calibration, validate=False, theme=theme,
    )


def pruning_explorer(record: dict | None = None, *, n_off: int | None = None, calibration=None) -> PruningExplorer:
    """Build notebook 08's pruning slider; ``record`` defaults to ``data/models/minilm_pruning.json``.

    ``calibration``: the bands of ``analysis.cosine_calibration(...).as_dict()``, marked on the figure.
    """
    if record is None:
        from mha_core.pretrained.data import precomputed

        record = precomputed("minilm_pruning")
    return PruningExplorer(record, n_off=n_off, calibration=calibration)
