"""The projector theme: one switch that makes figures and controls readable from the back of a room.

    import mha_core
    mha_core.presenter(True)     # projector sizes for every figure and control
    mha_core.presenter(False)    # back to the laptop sizes

or, before JupyterLab starts, ``MHA_COURSE_PRESENTER=1`` (read when this module is
first imported). Every figure builder takes the sizes as an argument, ``theme`` (a
``Theme``); left out, it is the theme in use when the builder is called, read once by
``resolve``. A control reads the theme once, when it is built, and hands it to every
redraw. The switch acts on every figure and control built after it. What is already
on the page follows it too when something shows it that listens (``follow``): the course
platform, ``mha_classroom``, builds each figure and control group it has shown again in
the new sizes, in place, without running a cell.

The module is named ``projector`` (not ``presenter``) so that importing it never
replaces the function ``mha_core.presenter`` with a module of the same name.

It imports nothing heavy: ``ipywidgets`` and IPython load only when ``presenter()``
runs inside a notebook, to put the control styles on the page.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from . import _validate

#: Set to 1 (before the kernel starts) to start in projector sizes.
PRESENTER_ENV = "MHA_COURSE_PRESENTER"


@dataclass(frozen=True)
class Theme:
    """Every size, in CSS pixels, that a figure or a control uses.

    Figure builders take a ``Theme`` as their ``theme`` argument (``None``: the theme in use
    now, ``theme()``), so no builder reads a size from a module constant or a global.
    """

    name: str
    #: Base font of a figure: axis titles and tick labels, legends, panel titles, values beside bars.
    font_size: int
    #: Figure titles.
    title_size: int
    #: Numbers printed inside heatmap cells.
    cell_text_size: int
    #: Token labels and head titles where several panels sit side by side (the head grid): smaller on a laptop.
    dense_label_size: int
    #: Secondary text: notes beside a line or a band, numbers in small cells, table headers.
    small_text_size: int
    #: The smallest text any figure may draw; every other text size is at least this.
    min_text_size: int
    #: Pixels one more line of a wrapped title takes from the top margin.
    title_line_px: int
    #: Control text: labels, buttons, readouts, messages.
    control_font_size: int
    #: Height of one row of controls (a slider, a row of buttons).
    control_height: int
    #: Diameter of a slider's handle.
    slider_handle_size: int

    @property
    def projector(self) -> bool:
        return self.name == "projector"

    def text_sizes(self) -> dict[str, int]:
        """Every text size of the theme, by field name (not the control rows and handles)."""
        return {name: getattr(self, name) for name in ("font_size", "title_size", "cell_text_size", "dense_label_size",
                                                       "small_text_size", "control_font_size")}


#: The sizes the course is designed with (a laptop, 1280 x 800): the course uses 14 px or more.
LAPTOP = Theme(name="laptop", font_size=16, title_size=18, cell_text_size=16, dense_label_size=14, small_text_size=14,
               min_text_size=14, title_line_px=24, control_font_size=16, control_height=28, slider_handle_size=16)
#: Projector sizes: text of 20 px or more everywhere, larger handles and rows.
PROJECTOR = Theme(name="projector", font_size=20, title_size=24, cell_text_size=20, dense_label_size=20,
                  small_text_size=20, min_text_size=20, title_line_px=31, control_font_size=20, control_height=40,
                  slider_handle_size=26)


def resolve(theme: "Theme | None" = None) -> Theme:
    """``theme`` itself, or the theme in use now when it is None (what every builder's ``theme=None`` means).

    A ``TypeError`` names anything else, so a size passed where a theme belongs fails at once.
    """
    if theme is None:
        return _current
    if not isinstance(theme, Theme):
        raise TypeError(f"theme must be a projector.Theme (LAPTOP, PROJECTOR) or None; got {theme!r:.60} "
                        f"({type(theme).__name__})")
    return theme


def _from_environment() -> Theme:
    return PROJECTOR if os.environ.get(PRESENTER_ENV, "") not in ("", "0") else LAPTOP


_current: Theme = _from_environment()


def theme() -> Theme:
    """The sizes figure builders and controls use now (``LAPTOP`` or ``PROJECTOR``)."""
    return _current


def enabled() -> bool:
    """True while the projector theme is on."""
    return _current.projector


def controls_css(current: Theme | None = None, scope: str = "body") -> str:
    """The ``<style>`` block that sizes every ipywidgets control under ``scope`` for ``current``.

    ipywidgets 8 sizes its controls from CSS variables (``--jp-widgets-font-size``, ...)
    set on ``:root``; setting them on ``scope`` (the page's ``body`` for ``presenter()``, a
    control group's own box for a group built under the theme) overrides them for every
    control inside it. The explicit rules cover text whose size is set by a more specific
    rule (a control group's own 16 px style, for example). Empty for the laptop theme.
    """
    current = current or _current
    if not current.projector:
        return ""
    px = current.control_font_size
    inside = ", ".join(f"{scope} {part}" for part in (
        ".widget-label", ".widget-readout", ".widget-button", ".widget-toggle-button", ".widget-dropdown select",
        ".widget-radio-box label", ".widget-checkbox label", ".widget-html-content", ".widget-text input"))
    return (
        "<style>"
        f"{scope} {{"
        f" --jp-widgets-font-size: {px}px;"
        f" --jp-widgets-inline-height: {current.control_height}px;"
        f" --jp-widgets-slider-handle-size: {current.slider_handle_size}px;"
        " --jp-widgets-slider-track-thickness: 6px;"
        " --jp-widgets-inline-label-width: 120px;"
        " }"
        f" {inside} {{ font-size: {px}px !important; line-height: 1.4; }}"
        f" {scope} .widget-readout {{ min-width: 4em; }}"
        "</style>"
    )


#: The one style widget this kernel has put on the page, so switching off can empty it.
_style_widget = None


def _show_controls_css() -> None:
    """Put the control styles on the page (inside a notebook only; nothing in a plain Python)."""
    global _style_widget
    try:
        from IPython import get_ipython
    except ImportError:
        return
    if get_ipython() is None or os.environ.get("MHA_COURSE_STATIC", "") not in ("", "0"):
        return  # no page to style (a script, a test, or static handouts without controls)
    import ipywidgets as widgets
    from IPython.display import display

    if _style_widget is None:
        _style_widget = widgets.HTML(value=controls_css())
        _style_widget.add_class("mha-presenter-style")
        display(_style_widget)
    else:
        # The style already on the page follows the switch, both ways.
        _style_widget.value = controls_css()
        if _current.projector:
            display(_style_widget)


#: What ``presenter`` calls with the new theme after each switch (``follow``).
_followers: list = []


def follow(callback) -> None:
    """Have ``presenter`` call ``callback(theme)`` after every switch, with the theme now in use.

    For what shows figures and controls (``mha_classroom``): it restyles what it has already
    shown. Once per callback: a second call with the same one changes nothing.
    """
    if not callable(callback):
        raise TypeError(f"callback must be callable, with the new theme as its one argument; got {callback!r:.60}")
    if callback not in _followers:  # equal, not the same object: a bound method is made anew on each access
        _followers.append(callback)


def presenter(on: bool = True) -> Theme:
    """Switch the projector theme on (``True``) or off (``False``); return the theme now in use.

    Every figure and control built after the call uses the theme's sizes: base font
    20 px, titles 24 px, larger token labels, numbers in heatmap cells, control text,
    rows and slider handles. Inside a notebook the call also puts the control styles
    on the page, and every figure and control group the course has shown in the notebook
    is built again in the new sizes where it stands (``follow``); a figure of the
    learner's own keeps its sizes until its cell runs again.
    """
    global _current
    _current = PROJECTOR if _validate.flag(on, "on") else LAPTOP
    _show_controls_css()
    for callback in list(_followers):
        callback(_current)
    return _current
