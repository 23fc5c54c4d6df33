"""What the kernel tells an anywidget's view after it is shown, carried by a widget anywidget cannot drop.

Why. anywidget (0.9 to 0.11) gives each of its models two seconds, from the model's creation,
to load its front-end module; past that it rejects the model's ``ready`` promise, and from
then on it drops every message the kernel sends that model (``_handle_comm_msg`` awaits
``ready``), for good. The view is still drawn, from the state the model was created with.
A page whose main thread is busy for two seconds at the wrong moment (Run All on a slow
laptop, a class on one server, plotly.js being evaluated) therefore shows a figure drawn
once that never moves again, with "[anywidget] Failed to initialize model." in the browser's
console. Measured: notebook 02 run with Chromium's CPU slowed eight times, its mask figure
ignored every click (``benchmarks/loadtest/dead_view.py``).

What this module does. A ``Channel`` is a plain ``ipywidgets.Widget``: in the page its model is
ipywidgets' own ``WidgetModel`` (``@jupyter-widgets/base``), which is always loaded and has no
deadline. An anywidget that has to hear from the kernel after it is shown keeps that state on
a channel (its trait ``_channel``, a reference the page resolves with ``channel_of(model)`` in
``js/channel.js``, which ``_js.module`` puts in front of the widget's own module) and listens to the channel's changes instead of its own. Everything the
widget is made with still travels in its own first message.
"""

from __future__ import annotations

import ipywidgets as widgets
import traitlets


class Channel(widgets.Widget):
    """Synced state an anywidget's views read; a subclass declares its traits with ``.tag(sync=True)``.

    Give its whole first state to the constructor: that travels with the widget's creation."""


def channel_trait(channel_class: type[Channel]) -> traitlets.Instance:
    """The trait an anywidget holds its channel in (``_channel``): sent to the page as a model reference."""
    return traitlets.Instance(channel_class).tag(sync=True, **widgets.widget_serialization)
