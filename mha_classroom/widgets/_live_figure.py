"""The figure a control group redraws: the builder's plain figure, drawn in the page by a few lines of the
course's own JavaScript and one shared copy of plotly.js, and changed by one diff per move.

Why not plotly's own ``go.FigureWidget``. Its front-end module is plotly's 5 MB widget bundle, sent and
evaluated once per figure. anywidget (0.9 to 0.11) gives a model two seconds to load its module; past
that every later message to the model is dropped, for good: the figure is drawn once and never redraws.
On a busy machine evaluating 5 MB takes longer than that (measured in Chromium with its CPU slowed twelve
times: "[anywidget] Failed to initialize model." and a notebook 10 (serving cost) calculator whose figure ignored every
move). And each of its changes runs plotly's validators, most of a change's CPU time
(``benchmarks/loadtest/profile_control.py``).

What this module does instead, with public APIs only (ipywidgets' ``Widget``, ``send`` and ``on_msg``,
anywidget's ``_esm``, plotly's ``go.Figure``).

- ``PlotlyLibrary``: one widget per kernel that carries plotly.js (the copy plotly ships,
  ``package_data/plotly.min.js``) and evaluates it once per page, outside any anywidget deadline (its
  module only schedules the work and returns).
- ``LiveFigure``: an anywidget of its own (not a plotly class) whose module is a few KB
  (``js/live_figure.js``, with ``js/save.js``'s PNG and SVG buttons under the figure). Its figure is the
  builder's plain figure (``_plain``), and it lives on the figure's ``FigureChannel``: a plain ipywidgets
  widget, which anywidget's deadline cannot kill (``_channel``). The channel is made with the whole
  figure; each change (``show``) then goes to the page as one custom message ``{"n", "diff"}``: the
  course's one figure diff (``_plain.figure_diff``), applied in the page by ``js/diff.js``, the same
  function the handouts use. A view that missed a change asks for the whole figure (``{"want": n}``).
  No validator runs on a move.
- Reading it: ``data``, ``layout``, ``to_dict()`` and ``as_figure()`` give a ``go.Figure`` kept up to date
  through plotly's validators only when something reads it (``apply_to_figure``, at most once per change
  read). Changing it from Python: ``update_in_place`` (``_base``), or ``update`` / ``update_layout`` /
  ``update_traces``, which change that ``go.Figure`` and show the result.
"""

from __future__ import annotations

import contextlib
import math
from pathlib import Path

import anywidget
import numpy as np
import plotly
import plotly.graph_objects as go
import traitlets

from . import _js
from ._channel import Channel, channel_trait
from ._plain import PlainFigure, _plain, apply_to_figure, figure_diff

#: plotly.js as plotly ships it (a UMD bundle that also sets ``window.Plotly``).
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"

#: The two modules (``_js``): the library's evaluates plotly.js once per page (``js/plotly_library.js``);
#: a figure's draws it from its channel and offers it as PNG and SVG (``js/live_figure.js``, ``js/save.js``).
LIBRARY_ESM = _js.module("plotly_shared.js", "plotly_library.js")
FIGURE_ESM = _js.module("plotly_shared.js", "channel.js", "diff.js", "save.js", "live_figure.js")


class PlotlyLibrary(anywidget.AnyWidget):
    """plotly.js for every ``LiveFigure`` of the page: sent once per kernel, evaluated once per page."""

    _esm = LIBRARY_ESM
    source = traitlets.Unicode("").tag(sync=True)


_library = None


def plotly_library() -> PlotlyLibrary:
    """The kernel's one ``PlotlyLibrary`` (made on first use; it lives as long as the kernel)."""
    global _library
    if _library is None:
        _library = PlotlyLibrary(source=PLOTLY_JS.read_text(encoding="utf-8"))
    return _library


def jsonable(value):
    """``value`` as strict JSON holds it: NumPy arrays and numbers as lists and numbers, NaN and infinities as
    null (a blank cell), tuples as lists, plotly objects as their JSON."""
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "f" and not np.isfinite(value).all():
            return np.where(np.isfinite(value), value, None).tolist()
        return value.tolist() if value.dtype.kind in "biuf" else [jsonable(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "to_plotly_json"):
        return jsonable(value.to_plotly_json())
    return value


def same_setting(a: list, b: list) -> bool:
    """Two settings' values, as the page compares them (``sameSetting`` in ``js/live_figure.js``): numbers within
    1e-9, everything else equal."""
    if a is None or b is None or len(a) != len(b):
        return False
    for x, y in zip(a, b):
        numbers = isinstance(x, (int, float)) and isinstance(y, (int, float))
        if numbers and not isinstance(x, bool) and not isinstance(y, bool):
            if abs(x - y) > 1e-9:
                return False
        elif x != y or type(x) is not type(y):
            return False
    return True


class FigureChannel(Channel):
    """A ``LiveFigure``'s figure in the page: ``figure``, the whole figure it was made with (sent once, with the
    channel's creation); every change after that is a custom message on it (``LiveFigure.show``)."""

    figure = traitlets.Dict().tag(sync=True, to_json=lambda value, widget: jsonable(value))
    #: The settings the page switches between by itself (``LiveFigure.hold``): ``controls``, each a control's
    #: model and the trait the page reads (``index`` for a choice, else ``value``), and ``states``, each a setting's
    #: values of those traits, its figure and its words. Empty: every change comes from the kernel.
    held = traitlets.Dict().tag(sync=True, to_json=lambda value, widget: jsonable(value))


class LiveFigure(anywidget.AnyWidget):
    """A control group's figure: the builder's plain figure, drawn by ``FIGURE_ESM``, changed by ``show``.

    ``figure``: a ``go.Figure`` or a builder's plain ``{"data", "layout"}`` spec. Its every property is checked
    once here, through plotly's validators (``as_figure``), so a bad spec fails where it is made.
    """

    _esm = FIGURE_ESM
    _channel = channel_trait(FigureChannel)

    def __init__(self, figure, **kwargs):
        plotly_library()  # the page's plotly.js comes with the first figure of the kernel
        shown = _plain(figure)
        # The channel first, made with the whole figure: it is in the page before the view that reads it.
        super().__init__(_channel=FigureChannel(figure=shown), **kwargs)
        self._mha_shown: PlainFigure = shown  # what the page shows (``_words`` reads its words from it)
        self._changes = 0  # how many diffs the page has been sent
        self._checked: go.Figure | None = None  # as_figure's figure ...
        self._checked_shows: PlainFigure | None = None  # ... and the plain figure it holds
        self._quiet = False  # True while ``quiet``: what is shown changes here only
        self._held: list | None = None  # ``hold``'s controls and states
        self._held_at: list | None = None  # the held controls' values when the page last switched by itself
        self._channel.on_msg(self._on_page_message)
        self.as_figure()

    @property
    def shown(self) -> PlainFigure:
        """The plain figure the page shows now (shared, never to be changed)."""
        return self._mha_shown

    def show(self, built, *, words: dict | None = None) -> None:
        """Show ``built`` (a figure or a builder's spec) where the page shows ``shown``: one message with what
        differs (``figure_diff``), none when nothing does. No validator runs here. A spec without a width keeps
        the width shown. ``words`` (``{"name", "description"}``, from ``_words``) ride in the same message: the
        view hands them to the group's keyboard helper in the page."""
        new = _plain(built)
        width = self._mha_shown["layout"].get("width")
        if "width" not in new["layout"] and width is not None:
            # Kept on the plain figure (it never changes): a remembered setting shown again is the same object as
            # the one held or shown before, so ``figure_diff`` knows it at once.
            widened = new.__dict__.get("_mha_widened")
            if widened is None or widened["layout"]["width"] != width:
                widened = new._mha_widened = PlainFigure(data=new["data"], layout={**new["layout"], "width": width})
            new = widened
        if self._quiet:
            self._mha_shown = new
            return
        shown, said = self._mha_shown, self.__dict__.get("_spoken")
        state = self._switched()
        if state is not None:  # the page switched to it by itself when the control moved: it shows that
            shown, said = state[1], state[2]
        diff = figure_diff(shown, new)
        self._mha_shown = new
        if words is not None or state is not None:
            self._spoken = words if words is not None else said
        if diff:
            self._changes += 1
            self._channel.send({"n": self._changes, "diff": jsonable(diff),
                                **({"words": words} if words is not None else {})})
        elif words is not None and words != said:
            # The drawing is already shown (an animation's last frame, drawn without its words): the words alone.
            self._channel.send({"n": self._changes, "words": words})

    @contextlib.contextmanager
    def quiet(self):
        """While inside: ``show`` changes what the figure holds, and nothing goes to the page (``hold`` walks a
        group through its settings this way; the group ends where it started, so the page is still right)."""
        before, self._quiet = self._quiet, True
        try:
            yield self
        finally:
            self._quiet = before

    def hold(self, controls: list, states: list) -> None:
        """Give the page every setting, so that it switches by itself when a control moves: no message from the
        kernel, and the kernel's ``show`` for that setting then sends nothing (``_switched``).

        ``controls``: ``[(widget, trait)]``, the trait the page reads (``"index"`` for a choice of options,
        ``"value"`` otherwise). ``states``: ``[(values, figure, words)]``, the traits' values of a setting, its
        plain figure (what ``show`` is given for it) and its words (``{"name", "description"}``). Sent once, as
        the channel's ``held``; a view drawn later reads it there.
        """
        self._held = [list(controls), [(list(v), _plain(f), dict(w)) for v, f, w in states]]
        self._held_at = self._held_values()
        self._channel.held = {
            "controls": [{"model": f"IPY_MODEL_{widget.model_id}", "trait": trait} for widget, trait in controls],
            "states": [{"values": v, "figure": f, "words": w} for v, f, w in self._held[1]],
        }

    def _held_values(self) -> list:
        return [getattr(widget, trait) for widget, trait in self._held[0]]

    def _switched(self):
        """The held state the page switched to by itself since the last ``show`` (a held control moved), or None."""
        if self._held is None:
            return None
        now = self._held_values()
        if same_setting(now, self._held_at):
            return None
        self._held_at = now
        return next((s for s in self._held[1] if same_setting(s[0], now)), None)

    def _on_page_message(self, channel, content, buffers) -> None:
        """A view that missed a change asks for the whole figure (``{"want": n}``, ``js/live_figure.js``)."""
        if isinstance(content, dict) and "want" in content and content["want"] != self._changes:
            words = self.__dict__.get("_spoken")
            self._channel.send({"n": self._changes, "figure": jsonable(self._mha_shown),
                                **({"words": words} if words is not None else {})})

    def as_figure(self) -> go.Figure:
        """The figure shown, as a ``go.Figure`` (through plotly's validators, brought up to date here, without a
        message). One object for the figure's life, its traces changed in place: read it; to change what the
        page shows, use ``update_in_place`` or this object's ``update`` methods."""
        if self._checked is None:
            self._checked = go.Figure(self._mha_shown)
        elif self._checked_shows is not self._mha_shown:
            apply_to_figure(self._checked, figure_diff(self._checked_shows, self._mha_shown))
        self._checked_shows = self._mha_shown
        return self._checked

    @property
    def data(self) -> tuple:
        """The traces shown (``as_figure().data``)."""
        return self.as_figure().data

    @property
    def layout(self) -> go.Layout:
        """The layout shown (``as_figure().layout``)."""
        return self.as_figure().layout

    def to_dict(self) -> dict:
        """``as_figure().to_dict()``."""
        return self.as_figure().to_dict()

    def to_plotly_json(self) -> dict:
        """``as_figure().to_plotly_json()``."""
        return self.as_figure().to_plotly_json()

    def to_json(self, *args, **kwargs) -> str:
        """``as_figure().to_json(...)``."""
        return self.as_figure().to_json(*args, **kwargs)

    def _changed_in_python(self, method: str, *args, **kwargs) -> LiveFigure:
        figure = self.as_figure()
        getattr(figure, method)(*args, **kwargs)
        self.show(figure)
        self._checked_shows = self._mha_shown  # the go.Figure already holds it
        return self

    def update(self, *args, **kwargs) -> LiveFigure:
        """``go.Figure.update`` of the figure shown, then the change to the page (one message)."""
        return self._changed_in_python("update", *args, **kwargs)

    def update_layout(self, *args, **kwargs) -> LiveFigure:
        """``go.Figure.update_layout`` of the figure shown, then the change to the page (one message)."""
        return self._changed_in_python("update_layout", *args, **kwargs)

    def update_traces(self, *args, **kwargs) -> LiveFigure:
        """``go.Figure.update_traces`` of the figure shown, then the change to the page (one message)."""
        return self._changed_in_python("update_traces", *args, **kwargs)

    def close(self):
        channel = self._channel
        super().close()
        channel.close()
