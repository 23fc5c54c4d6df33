"""The figure a control group redraws: plotly's ``FigureWidget`` in Python, drawn in the page by a
few lines of the course's own JavaScript and one shared copy of plotly.js.

Why not plotly's own view. ``go.FigureWidget`` is an anywidget whose front-end module is
plotly's 5 MB widget bundle, sent and evaluated once per figure. anywidget (0.9 to 0.11)
gives a model two seconds to load its module; past that its ``ready`` promise is
rejected, and every later message to the model is dropped, for good: the figure is
drawn once and never redraws. On a busy machine (a class on one server, or the test
suite on two cores) evaluating 5 MB takes longer than that. Measured in Chromium with
its CPU slowed twelve times: "[anywidget] Failed to initialize model." and a notebook 10
calculator whose figure ignored every move.

What this module does instead.

- ``PlotlyLibrary``: one widget per kernel that carries plotly.js (the copy plotly ships,
  ``package_data/plotly.min.js``) and evaluates it once per page, outside any
  anywidget deadline (its module only schedules the work and returns).
- ``LiveFigure``: a ``go.FigureWidget`` (the same Python API: ``data``, ``layout``,
  ``batch_update``, and ``update_in_place`` in ``_base``) whose front-end module is a
  few KB (``js/live_figure.js``), with two buttons under the figure that save it as PNG or
  SVG, offline (``js/save.js``: plotly.js's own ``downloadImage``). Python keeps the whole figure and, after each change, sends it
  whole in one message (plotly's own traits ``_widget_data`` and ``_widget_layout``, with
  its serializers: 1-D numeric arrays travel as binary buffers). The view waits for
  plotly.js and then draws the figure as the model holds it now with ``Plotly.react``, so
  a view that comes late or a message that comes early loses nothing.
- The figure each change sends travels on the figure's ``FigureChannel`` (``_channel``), not on
  the anywidget itself: anywidget drops every message to a model that missed its two-second
  start, even a model whose module is a few hundred bytes, when the page is busy at that moment
  (``_channel``). Draws asked for while one waits are merged: the next draw shows the newest figure.
- ``show_change(old, new)`` (what ``_base.update_in_place`` calls on every control move)
  changes the plain figure the page draws and sends it, without plotly's validators, which
  took most of a change's CPU time (``benchmarks/loadtest/profile_control.py``). The
  figure's own Python objects (``data``, ``layout``, ``to_dict()``, ...) catch up, through the
  validators, the next time anything reads or changes them (``_catch_up``).
"""

from __future__ import annotations

import functools
from copy import deepcopy
from pathlib import Path

import plotly
import plotly.graph_objects as go
import traitlets
from plotly.basewidget import BaseFigureWidget

from . import _js
from ._channel import Channel, channel_trait
from ._plain import apply_checked, apply_plain

#: plotly.js as plotly ships it (a UMD bundle that also sets ``window.Plotly``).
PLOTLY_JS = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"

#: The two modules (``_js``): the library's evaluates plotly.js once per page (``js/plotly_library.js``);
#: a figure's draws it from its channel and offers it as PNG and SVG (``js/live_figure.js``, ``js/save.js``).
LIBRARY_ESM = _js.module("plotly_shared.js", "plotly_library.js")
FIGURE_ESM = _js.module("plotly_shared.js", "channel.js", "save.js", "live_figure.js")

_library = None


def plotly_library():
    """The kernel's one ``PlotlyLibrary`` (made on first use; it lives as long as the kernel)."""
    global _library
    if _library is None:
        import anywidget

        class PlotlyLibrary(anywidget.AnyWidget):
            """plotly.js for every ``LiveFigure`` of the page: sent once per kernel, evaluated once per page."""

            _esm = LIBRARY_ESM
            source = traitlets.Unicode("").tag(sync=True)

        _library = PlotlyLibrary(source=PLOTLY_JS.read_text(encoding="utf-8"))
    return _library


def _plotly_serializers(trait) -> dict:
    """plotly's ``to_json`` and ``from_json`` for one of ``BaseFigureWidget``'s traits."""
    return {key: trait.metadata[key] for key in ("to_json", "from_json")}


class FigureChannel(Channel):
    """The figure a ``LiveFigure`` shows, whole, with plotly's own serializers (1-D numeric arrays travel
    as binary buffers): what the page draws, and what each change replaces."""

    _widget_data = traitlets.List().tag(sync=True, **_plotly_serializers(BaseFigureWidget._widget_data))
    _widget_layout = traitlets.Dict().tag(sync=True, **_plotly_serializers(BaseFigureWidget._widget_layout))


class LiveFigure(go.FigureWidget):
    """A ``go.FigureWidget`` drawn by ``FIGURE_ESM``: every change reaches the page as the whole figure, in one
    message on its ``FigureChannel``.

    Its own comm opens only after the figure is filled in and its channel made with the
    whole figure (``_defer_open``): the page then has everything to draw it at once. Its own
    ``_widget_data`` and ``_widget_layout`` stay empty, so the figure is not sent twice.
    """

    _esm = FIGURE_ESM
    _channel = channel_trait(FigureChannel)

    def __init__(self, *args, **kwargs):
        plotly_library()  # the page's plotly.js comes with the first figure of the kernel
        self._defer_open = True
        self._behind = None  # (old, new): what show_change sent that the Python objects do not hold yet
        super().__init__(*args, **kwargs)
        self._channel = FigureChannel(**self._whole_figure())
        self._widget_data, self._widget_layout = [], {}
        self._defer_open = False
        self.open()

    def open(self):
        if not getattr(self, "_defer_open", False):
            super().open()

    def close(self):
        channel = self.__dict__.get("_trait_values", {}).get("_channel")
        super().close()
        if channel is not None:
            channel.close()

    def show_change(self, old: dict, new: dict) -> None:
        """Show ``new`` in the page, where the figure shows ``old`` (both plain, ``_plain._plain``): only
        what differs changes, and the whole figure goes to the page in one message. No validator runs
        here; the Python objects catch up when next used."""
        channel = self._channel
        apply_plain({"data": channel._widget_data, "layout": channel._widget_layout}, old, new)
        channel.send_state(["_widget_data", "_widget_layout"])
        self._behind = (self._behind[0] if self._behind else old, new)

    def _catch_up(self) -> None:
        """The Python objects to what the page shows, through plotly's validators, without a message."""
        behind = self.__dict__.get("_behind")
        if not behind:
            return
        self._behind = None
        self._quiet = True
        try:
            apply_checked(self, *behind)
        finally:
            self._quiet = False

    def _whole_figure(self) -> dict:
        return {"_widget_data": deepcopy(self._data), "_widget_layout": deepcopy(self._layout_obj._props)}

    def _push(self) -> None:
        """The figure as Python holds it now, to the page, in one message (nothing before it is shown,
        nothing while it catches up with what the page already shows)."""
        if getattr(self, "_defer_open", False) or self.__dict__.get("_quiet"):
            return
        channel = self._channel
        with channel.hold_sync():
            for name, value in self._whole_figure().items():
                setattr(channel, name, value)

    # plotly sends each change as a delta for its own view to apply and acknowledge; here every
    # one of them sends the whole figure instead (Python's state is already updated when they run).
    def _send_addTraces_msg(self, new_traces_data):
        self._push()

    def _send_moveTraces_msg(self, current_inds, new_inds):
        self._push()

    def _send_deleteTraces_msg(self, delete_inds):
        self._push()

    def _send_restyle_msg(self, restyle_data, trace_indexes=None, source_view_id=None):
        self._push()

    def _send_relayout_msg(self, layout_data, source_view_id=None):
        self._push()

    def _send_update_msg(self, restyle_data, relayout_data, trace_indexes=None, source_view_id=None):
        self._push()

    def _send_animate_msg(self, styles_data, relayout_data, trace_indexes, animation_opts):
        self._push()


def _after_catching_up(function):
    """``function`` of ``go.FigureWidget``, run once the Python objects hold what the page shows."""
    @functools.wraps(function)
    def caught_up(self, *args, **kwargs):
        self._catch_up()
        return function(self, *args, **kwargs)
    return caught_up


# Every way into the figure's Python objects; the rest of plotly's API goes through these.
for _name in ("__getitem__", "__setitem__", "__iter__", "__contains__", "__eq__", "__repr__", "to_dict",
              "add_traces", "select_traces", "update", "batch_update", "batch_animate",
              "plotly_restyle", "plotly_relayout", "plotly_update", "_repr_html_", "_repr_mimebundle_"):
    setattr(LiveFigure, _name, _after_catching_up(getattr(go.FigureWidget, _name)))
for _name in ("data", "layout", "frames"):
    _plotly = getattr(go.FigureWidget, _name)
    setattr(LiveFigure, _name, property(_after_catching_up(_plotly.fget),
                                        _after_catching_up(_plotly.fset) if _plotly.fset else None, doc=_plotly.__doc__))

