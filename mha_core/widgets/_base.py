"""What every control group shares: one persistent figure, updated in place, and a message line."""

from __future__ import annotations

import functools
import html
import os

import ipywidgets as widgets
import plotly.graph_objects as go

from .. import _validate, projector
from ..figures._style import WIDGET_WIDTH
from . import _words
from ._keys import show_keyboard_ready
from ._live_figure import LiveFigure
from ._plain import _plain, apply_checked

_words.install()  # in a kernel, every go.Figure shown carries its words (see _words)


def figure_widget(fig: go.Figure | dict) -> go.FigureWidget:
    """Wrap a built figure (a ``go.Figure``, or a builder's ``{"data", "layout"}`` spec) once;
    later updates go through ``update_in_place``.

    A figure without a width gets ``WIDGET_WIDTH`` (see ``figures._style``).
    """
    shown = _plain(fig)  # for update_in_place's diff: a later figure without a width keeps this one's
    fig = go.Figure(fig)  # a copy; a spec's every property is checked here, once
    if fig.layout.width is None:
        fig.layout.width = WIDGET_WIDTH
    target = LiveFigure(fig)  # drawn by the course's own view (see _live_figure), the whole figure in its first message
    target._mha_shown = shown
    return target


#: How many settings' figures a ``remembered`` builder keeps per group (the oldest goes first).
REMEMBERED = 32


def remembered(build):
    """For a group's builder whose figure depends only on its arguments and on what the group fixed when it
    was built (its data, seed and theme): each setting's figure is built once per group, and kept in
    plotly's spelling (``_plain``) with its words once read, so a setting shown again costs only its
    message. The figures are shared, never changed (``update_in_place`` copies what it changes)."""

    @functools.wraps(build)
    def built_once(self, *args):
        cache = self.__dict__.setdefault("_remembered", {})
        key = (build.__name__, args)
        if key not in cache:
            if len(cache) >= REMEMBERED:
                cache.pop(next(iter(cache)))
            cache[key] = _plain(build(self, *args))
        return cache[key]

    return built_once


def update_in_place(target: go.FigureWidget, built: go.Figure | dict, *, words: bool = True) -> None:
    """Make ``target`` show what ``built`` shows, without re-creating or re-displaying it.

    ``built`` is a ``go.Figure`` or a builder's plain ``{"data", "layout"}`` spec (the
    ``*_spec`` functions in ``mha_core.figures``): a spec skips building and checking a
    whole ``go.Figure`` on every move. Only the properties that differ from what is shown
    change (``_plain``), and the page gets them in one message. A ``LiveFigure`` sends them
    to the page at once without plotly's validators (which cost most of a change's time)
    and brings its own Python objects up to date when they are next read; any other
    figure is changed through plotly's validators in one ``batch_update``.

    ``words=False`` leaves the figure's words (what a screen reader announces) as they were: for the
    frames of an animation, such as 06's training, whose words a screen reader would otherwise read
    out in full on every frame (Orca read about 1,000 characters every few tenths of a second, and
    the learner's next key went unheard); the last frame is drawn with its words.
    """
    new = _plain(built)
    old = getattr(target, "_mha_shown", None) or _plain(target)
    if isinstance(target, LiveFigure):
        target.show_change(old, new)
    else:
        apply_checked(target, old, new)
    target._mha_shown = new
    if words:
        _words.refresh(target, new)  # the words of what is now shown, to a screen reader (nothing when not shown)


class ControlGroup:
    """A set of controls and the one figure they redraw; subclasses define ``box``.

    Displaying the object displays ``box``, so a notebook cell can end with the call
    that builds it.
    """

    @property
    def box(self) -> widgets.Widget:
        raise NotImplementedError

    def _ipython_display_(self):
        if static_mode():
            # A handout has no kernel to move a control: the page switches between settings computed here.
            from ._states import static_display

            static_display(self)
        else:
            # The group's controls sized by the theme it was built with (its figure already is).
            # Then the keyboard helper: arrow keys for its toggle buttons, its keys kept from JupyterLab's shortcuts.
            show_keyboard_ready(themed_box(self.box, getattr(self, "theme", None)))


#: Set to 1 when notebooks are executed for static pages (``make handouts``).
STATIC_ENV = "MHA_COURSE_STATIC"
LIVE_NOTE = "<p><i>This control is live in JupyterLab; here it shows its default setting.</i></p>"


def static_mode() -> bool:
    """True while notebooks run for static handouts: control groups show plain figures."""
    return os.environ.get(STATIC_ENV, "") not in ("", "0")


#: The class of the box every control group is shown in (``themed_box``): its styles are scoped to it.
THEMED_CLASS = "mha-large-controls"


def large_controls_css(theme: projector.Theme) -> str:
    """Every control size of ``theme`` for the controls inside a ``THEMED_CLASS`` box.

    On a laptop: control text at 16 px (ipywidgets' default is 13 px). With the projector
    theme: ``projector.controls_css`` for the box (20 px text, taller rows, larger handles),
    so a group built under the theme is sized on the page whether the theme came from
    ``presenter(True)`` or from ``MHA_COURSE_PRESENTER=1``. Either way the live figure's
    mode bar stays hidden: it would appear over the end of the figure's title whenever the
    pointer crossed the controls, and a live figure is read, not zoomed.
    """
    scope = f".{THEMED_CLASS}"
    return (f"<style>{scope} .widget-toggle-button, {scope} .widget-label, {scope} .widget-readout,"
            f" {scope} .widget-checkbox .widget-label-basic span, {scope} .widget-dropdown select"
            f" {{ font-size: {theme.control_font_size}px; }}"
            f" {scope} .modebar-container {{ display: none; }}</style>"
            + projector.controls_css(theme, scope=scope))


def large_controls_box(*children, theme: projector.Theme | None = None) -> widgets.VBox:
    """A VBox whose controls use ``theme``'s control sizes (None: the theme in use)."""
    box = widgets.VBox([widgets.HTML(large_controls_css(projector.resolve(theme))), *children])
    box.add_class(THEMED_CLASS)
    return box


def themed_box(box: widgets.Widget, theme: projector.Theme | None = None) -> widgets.Widget:
    """``box`` itself when it is already a ``large_controls_box``; else ``box`` inside one."""
    if THEMED_CLASS in getattr(box, "_dom_classes", ()):
        return box
    return large_controls_box(box, theme=theme)


def check_choice(value, name: str, choices, *, kind: type | tuple = ()) -> object:
    """``value`` if it is one of ``choices``; else a clear error (``_validate.choice``). A control built
    from a bad setting would otherwise fail deep inside ipywidgets ("Invalid selection") or clamp it
    without a word."""
    return _validate.choice(value, name, choices, kind=kind)


def message_box() -> widgets.HTML:
    """A line for plain messages (an impossible setting, a hint); empty when all is well."""
    return widgets.HTML(value="", layout=widgets.Layout(min_height="1.6em"))


def show_message(box: widgets.HTML, text: str, *, kind: str = "warning", theme: projector.Theme | None = None) -> None:
    """Show ``text`` (plain text, escaped) in ``box``; ``kind`` is 'warning' or 'info'.

    The text uses ``theme``'s control size (None: the theme in use now).
    """
    colour = {"warning": "#8a4b00", "info": "#1b4f72"}.get(kind, "#333")
    px = projector.resolve(theme).control_font_size
    box.value = f'<div style="font-size:{px}px;color:{colour}" role="status">{html.escape(text)}</div>' if text else ""
