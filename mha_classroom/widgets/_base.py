"""What every control group shares: one persistent figure, updated in place, and a message line."""

from __future__ import annotations

import functools
import html

import ipywidgets as widgets
import plotly.graph_objects as go

from mha_core import _validate, projector
from mha_core.figures._style import WIDGET_WIDTH

from .. import _theme
from .._display import STATIC_ENV, static_mode  # noqa: F401 - STATIC_ENV: the switch, named here too
from . import _words
from ._keys import show_keyboard_ready
from . import _live_figure
from ._live_figure import LiveFigure
from ._plain import PlainFigure, _plain, apply_to_figure, figure_diff
from ._states import hold, static_display


def figure_widget(fig: go.Figure | dict) -> LiveFigure:
    """The live figure for a built figure (a ``go.Figure``, or a builder's ``{"data", "layout"}`` spec), made
    once; later updates go through ``update_in_place``.

    A figure without a width gets ``WIDGET_WIDTH`` (see ``figures._style``).
    """
    shown = _plain(fig)
    if shown["layout"].get("width") is None:
        shown = PlainFigure(data=shown["data"], layout={**shown["layout"], "width": WIDGET_WIDTH})
    return LiveFigure(shown)  # drawn by the course's own view (see _live_figure), the whole figure in its first message


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


def update_in_place(target: LiveFigure | go.Figure, built: go.Figure | dict, *, words: bool = True) -> None:
    """Make ``target`` show what ``built`` shows, without re-creating or re-displaying it.

    ``built`` is a ``go.Figure`` or a builder's plain ``{"data", "layout"}`` spec (the
    ``*_spec`` functions in ``mha_core.figures``): a spec skips building and checking a
    whole ``go.Figure`` on every move. Only what differs from what is shown changes
    (``_plain.figure_diff``). A ``LiveFigure`` sends it to the page in one message without
    plotly's validators (``LiveFigure.show``); any other plotly figure is changed through
    them in one ``batch_update`` (``apply_to_figure``).

    ``words=False`` leaves the figure's words (what a screen reader announces) as they were: for the
    frames of an animation, such as 06's training, whose words a screen reader would otherwise read
    out in full on every frame (Orca read about 1,000 characters every few tenths of a second, and
    the learner's next key went unheard); the last frame is drawn with its words.
    """
    new = _plain(built)
    if isinstance(target, _live_figure.LiveFigure):  # the class itself (benchmarks/loadtest/dead_view.py swaps LiveFigure)
        target.show(new, words=_words.spoken_with(target, new) if words else None)  # its words in the same message
    else:
        old = getattr(target, "_mha_shown", None) or _plain(target)
        apply_to_figure(target, figure_diff(old, new))
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

    def redraw(self) -> None:
        """Draw the figure (and any readout) again for the controls' current values, in ``self.theme``'s sizes."""
        raise NotImplementedError

    def restyle(self, theme: projector.Theme) -> None:
        """The group in ``theme``'s sizes where it stands (``presenter`` switched the theme; ``_theme.keep``).

        Its controls' style (the first child of the box it was shown in), then its figure for the controls'
        current values, built again with ``theme``: the settings it remembered were in the old sizes.
        """
        if getattr(self, "theme", None) == theme:
            return
        self.theme = theme
        self.__dict__.pop("_remembered", None)
        shown = self.__dict__.get("_shown_box")
        if shown is not None:
            shown.children[0].value = large_controls_css(theme)
        self.redraw()
        if shown is not None and self.hold_settings:
            hold(self)  # the settings the page holds, in the new sizes

    #: True for a group whose page holds every setting (``_states.hold``): its one figure depends on its
    #: ``handout_controls`` alone, each setting has a figure of its own, and there are few. A move then switches
    #: the figure in the page by itself, and the kernel only hears the control's new value.
    hold_settings: bool = False

    def _show_live(self) -> None:
        """Show the group's controls, sized by its theme (its figure already is), and the keyboard helper (arrow
        keys for its toggle buttons, its keys kept from JupyterLab's shortcuts); it follows ``presenter`` from then.
        A group with ``hold_settings`` gives the page its settings first."""
        self._shown_box = themed_box(self.box, getattr(self, "theme", None))
        if self.hold_settings:
            hold(self)
        show_keyboard_ready(self._shown_box)
        _theme.keep(self.restyle, f"the {type(self).__name__} controls")

    def _ipython_display_(self):
        if static_mode():
            # A handout has no kernel to move a control: the page switches between settings computed here.
            static_display(self)
        else:
            self._show_live()


class TrainingGroup(ControlGroup):
    """A ControlGroup that trains a model live (or fetches it from the cache) and redraws as it goes.

    Subclasses define ``config()``, ``_show(result, config, cached=...)``, ``redraw_every`` and the hooks
    below; they hold ``progress``, ``status``, ``message``, ``figure`` and ``theme``.
    """

    #: Redraw the figure every this many steps (and at the first and last report).
    redraw_every: int = 10

    def _models(self):
        """``(is_cached, trained)``: the model module's cache test and its train-or-fetch function."""
        raise NotImplementedError

    def _started_text(self, config) -> str:
        """The status line while training starts."""
        raise NotImplementedError

    def _redraw(self, partial: list, config) -> None:
        """Show the reports so far: status line and figure."""
        raise NotImplementedError

    def redraw(self) -> None:
        """The last run shown (nothing before the first), and its status line, in ``self.theme``'s sizes."""
        status = getattr(self, "_status", None)  # _show writes its own; the line keeps what it said
        if getattr(self, "result", None) is not None:
            self._show(self.result, self.result.config, cached=False)
        if status:
            self._show_status(status[0], busy=status[1])

    def _show_status(self, text: str, *, busy: bool = False) -> None:
        self._status = (text, busy)
        colour = "#8a4b00" if busy else "#1b4f72"
        self.status.value = f'<div style="font-size:{self.theme.control_font_size}px;color:{colour}">{text}</div>'

    def train(self) -> None:
        """Train (or fetch from the cache) the current setting and show it."""
        try:
            config = self.config()
        except (TypeError, ValueError) as error:
            show_message(self.message, f"{error}. The figure still shows the last model trained.", theme=self.theme)
            return
        show_message(self.message, "", theme=self.theme)
        self.progress.max = config.max_steps
        is_cached, trained = self._models()
        if is_cached(config):
            self._show(trained(config), config, cached=True)
            return
        self._show_status(self._started_text(config), busy=True)
        partial = []

        def report(p):
            partial.append(p)
            self.progress.value = p.step
            if len(partial) == 1 or p.step % self.redraw_every == 0 or p.done:
                self._redraw(partial, config)

        # Kernel > Interrupt stops the run after the step under way and keeps it (not cached).
        result = trained(config, callback=report, interruptible=True)
        self._show(result, config, cached=False)

    def show_and_train(self):
        """Show the controls, then train the starting setting live; returns the group.

        In a handout (``static_mode()``) it trains first, then the group records its
        precomputed settings (``widgets._states``) as it is displayed.
        """
        if static_mode():
            self.train()
            from IPython.display import display

            display(self)
            return self
        self._show_live()  # as ControlGroup._ipython_display_ shows a group
        self.train()
        return self


#: The class of the box every control group is shown in (``themed_box``): its styles are scoped to it.
THEMED_CLASS = "mha-large-controls"


def large_controls_css(theme: projector.Theme) -> str:
    """Every control size of ``theme`` for the controls inside a ``THEMED_CLASS`` box.

    On a laptop: control text at 16 px (ipywidgets' default is 13 px). With the projector
    theme: ``projector.controls_css`` for the box (20 px text, taller rows, larger handles),
    so a group built under the theme is sized on the page whether the theme came from
    ``presenter(True)`` or from ``MHA_COURSE_PRESENTER=1``. Either way the live figure's
    mode bar stays hidden: it would appear over the end of the figure's title whenever the
    pointer crossed the controls, and a live figure is read, not zoomed. It is saved with the
    buttons under it instead (``js/save.js``), sized as the controls.
    """
    scope = f".{THEMED_CLASS}"
    return (f"<style>{scope} .widget-toggle-button, {scope} .widget-label, {scope} .widget-readout,"
            f" {scope} .widget-checkbox .widget-label-basic span, {scope} .widget-dropdown select, {scope} .mha-control-text,"
            f" {scope} .mha-save-button {{ font-size: {theme.control_font_size}px; }}"
            f" {scope} .modebar-container {{ display: none; }}"
            f" {scope} .mha-save {{ display: flex; gap: 8px; justify-content: flex-end; margin: 4px 0; }}</style>"
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
