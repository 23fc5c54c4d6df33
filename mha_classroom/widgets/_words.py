"""Every figure in JupyterLab in words: an image with a name and a description, for a screen reader.

The words are ``mha_classroom.describe.in_words`` of the figure being shown: its title
as the name, and a description read from the numbers it draws. Two kinds of figure carry them.

- A static figure (a ``go.Figure`` a cell ends with, or passes to ``display``): ``install()``
  has IPython show it as plotly itself does (without the mode bar: ``STATIC_CONFIG``), then
  one small HTML output holding its words
  and a few lines of script. The script makes the plot, in the output just before it, an
  image (``role="img"``) named by the title (``aria-label``) and described by the words
  (``aria-describedby``), and hides plotly's SVG from the accessibility tree (``js/static_words.js``,
  with the labelling module the live groups and the handouts use too, ``js/label.js``); under the
  figure it puts the two buttons that save it as PNG or SVG (``js/save.js``). Where the script cannot
  run (an untrusted notebook) the words are still read, right after the figure.
- A control group's live figure: the group's keyboard helper (``_keys.KeyboardHelper``)
  carries its words, and in the page it names and describes the figure the same way from
  a polite live region (``aria-live="polite"``, no focus moved). ``update_in_place`` calls
  ``refresh``, so every control change rewrites the words from the figure's new data, and a
  screen reader announces them when the learner pauses. The new words ride in the message that
  carries the figure's change (``LiveFigure.show``); the figure's view hands them to the helper's
  view in the page (a ``mha-figure-words`` event), so a change costs one message, not two.

Why the words are visually hidden (the "sr-only" clip), not shown or folded in a
``<details>``: a control group and its figure must fit one 1280 x 720 screen in
Presentation Mode, with every text at 20 px there, and an unfolded description of 600 to 950
characters would not fit; a ``<details>`` fold cannot hold a live region (a closed one is
not rendered, so nothing in it is announced). A sighted reader has the notebook's caption
under each figure, the numbers printed in the cells and the hover values; the handouts,
read without Python, show the same words under every figure. Hidden text still counts for
the page tests that read every text of an output (``tests/browser/page_text.py``): it is
clipped to one pixel, and set at 20 px so that it meets both themes' smallest size.

In static mode (``MHA_COURSE_STATIC=1``, the handouts) nothing here adds anything: the
handouts write their own "In words" under every figure.
"""

from __future__ import annotations

import html
import json
import sys
import uuid

from .. import _theme
from .._display import in_ipython, static_mode
from ..describe import in_words, spoken
from ._plain import PlainFigure, _plain

#: The class of the element holding a figure's words (static figures and live groups alike).
WORDS_CLASS = "mha-figure-words"
#: Visually hidden, still read: the usual clip technique. 20 px: see the module docstring.
#: Not ``position: absolute``: out of the flow, the pixel would stick out of a zero-height output, which then
#: counts as a scrollable region that the keyboard cannot reach (axe's scrollable-region-focusable).
SR_ONLY_STYLE = ("display:block;width:1px;height:1px;margin:-1px;padding:0;border:0;overflow:hidden;"
                 "clip:rect(0 0 0 0);clip-path:inset(50%);white-space:normal;font-size:20px")
#: A static figure's plotly configuration in JupyterLab: no mode bar, as in the handouts and on live figures.
#: Its buttons are links inside what is now one image (axe: nested-interactive), and a figure here is read,
#: not zoomed.
STATIC_CONFIG = {"displayModeBar": False}


def _static_script(words_id: str, name: str) -> str:
    """The page-side half for a static figure: ``js/label.js``, ``js/save.js`` and ``js/static_words.js``, called
    for the words ``words_id`` and the plot's ``name``. It runs once its output is in the page (JupyterLab runs the
    scripts of trusted HTML outputs), finds the plot in the output before its own, labels it and puts its PNG and
    SVG buttons under it, their text at the theme's control size (``projector``: 16 px, 20 px on a projector)."""
    from mha_core import projector
    from . import _js

    def literal(text: str) -> str:  # JSON that cannot close the <script> early
        return json.dumps(text).replace("</", "<\\/")

    px = projector.resolve(None).control_font_size
    call = f"mhaStaticWords({literal(words_id)}, {literal(name)}, {{px: {px}}});"
    return ("<script>(function () {\n" + _js.read("label.js") + _js.read("save.js") + _js.read("static_words.js") + call
            + "\n})();</script>")


def words_of(figure) -> dict:
    """``{"name", "description"}`` of ``figure`` (a figure, a builder's spec or a ``LiveFigure``), as read aloud:
    `code` marks become quotes (``describe.spoken``)."""
    if hasattr(figure, "_mha_shown"):
        figure = figure._mha_shown
    elif not isinstance(figure, dict):
        figure = _plain(figure)
    kept = figure.__dict__.get("_mha_words") if isinstance(figure, PlainFigure) else None
    if kept is None:
        words = in_words(figure)
        kept = {"name": words.name, "description": spoken(words.description)}
        if isinstance(figure, PlainFigure):
            figure._mha_words = kept  # a plain figure never changes: its words neither (a remembered setting)
    return dict(kept)


# --------------------------------------------------------------------------- static figures


def figure_words_html(figure, *, words_id: str | None = None) -> str:
    """The HTML output shown after ``figure``: its words, visually hidden, and the script that labels the plot."""
    words = words_of(figure)
    words_id = words_id or f"mha-words-{uuid.uuid4().hex[:12]}"
    return (f'<div class="{WORDS_CLASS}" id="{words_id}" style="{SR_ONLY_STYLE}">'
            f'{html.escape(words["description"])}</div>'
            + _static_script(words_id, words["name"]))


def show_figure(figure) -> None:
    """Display ``figure`` as plotly does, without its mode bar (``STATIC_CONFIG``), then its words.

    In static mode (the handouts) plotly's own display, unchanged: the handouts add their own words.
    """
    if static_mode():
        figure._ipython_display_()
        return
    import plotly.io as pio
    from IPython.display import HTML, display

    if not (pio.renderers.render_on_display and pio.renderers.default):
        figure._ipython_display_()  # no renderer of plotly's own: shown as plotly does, without words
        return
    shown, told = (f"mha-{part}-{uuid.uuid4().hex[:12]}" for part in ("figure", "words"))
    display(figure._repr_mimebundle_(config=STATIC_CONFIG), raw=True, display_id=shown)
    try:
        words = figure_words_html(figure)
    except Exception:  # noqa: BLE001 - a figure of the learner's own that describe cannot read: shown without words
        return
    display(HTML(words), display_id=told)
    from mha_core.figures._style import AGAIN

    again = getattr(figure, AGAIN, None)
    if again is not None:
        # Named by its title as drawn (its words were read once above, for a screen reader: not read again here).
        _theme.keep(lambda theme: restyle_figure(again, shown, told), f"the figure {figure.layout.title.text!r}")


def restyle_figure(again, shown: str, told: str) -> None:
    """Build a shown builder's figure again (``again``, under the theme now in use) and put it, and its words
    and save buttons, where the first stood (the outputs ``shown`` and ``told``)."""
    from IPython.display import HTML, update_display

    figure = again()
    # JupyterLab's plotly renderer draws a figure once and ignores a new one for the same output; a plain text in
    # between has JupyterLab replace the renderer, and the next one draws the new figure.
    update_display({"text/plain": ""}, raw=True, display_id=shown)
    update_display(figure._repr_mimebundle_(config=STATIC_CONFIG), raw=True, display_id=shown)
    update_display(HTML(figure_words_html(figure)), display_id=told)


def install() -> bool:
    """Have this kernel show every ``go.Figure`` with its words (``show_figure``); True if it now does.

    Called by each notebook's first cell (``mha_classroom.show_figures_with_words``: a notebook shows builders'
    figures before it builds any control) and whenever a control group is shown (``_keys.show_keyboard_ready``),
    never on import, and never by ``mha_core``, which does not know this package. Registered by type name, so plotly is not imported
    for it; once per kernel, a second call changes nothing. Outside IPython (a script, the tests)
    nothing is registered.
    """
    global _installed_in
    if not in_ipython():
        return False
    shell = sys.modules["IPython"].get_ipython()
    if _installed_in is not shell:
        shell.display_formatter.ipython_display_formatter.for_type_by_name("plotly.graph_objs._figure", "Figure",
                                                                           show_figure)
        _installed_in = shell
    return True


#: The shell ``install`` registered ``show_figure`` with (None: none yet).
_installed_in = None


# --------------------------------------------------------------------------- live figures


def figures_in(box) -> list:
    """The live figures (``LiveFigure``, or plotly's own ``FigureWidget``) inside ``box`` (an ipywidgets tree), in
    the order the page draws them."""
    import plotly.graph_objects as go

    from ._live_figure import LiveFigure

    found, stack = [], [box]
    while stack:
        widget = stack.pop(0)
        if isinstance(widget, (LiveFigure, go.FigureWidget)):
            found.append(widget)
        else:
            stack[0:0] = list(getattr(widget, "children", ()) or ())
    return found


def watch(box, helper) -> None:
    """Give ``helper`` (a shown group's keyboard helper) the words of every figure in ``box``, and keep them
    current: ``update_in_place`` calls ``refresh`` with each figure it redraws."""
    figures = figures_in(box)
    helper.words = [words_of(f) for f in figures]
    for index, figure in enumerate(figures):
        sinks = figure.__dict__.setdefault("_mha_word_sinks", [])
        if not any(h is helper for h, _ in sinks):
            sinks.append((helper, index))


def refresh(figure, shown: dict) -> dict | None:
    """After ``figure`` was redrawn to ``shown`` (its plain spec): its new words to every helper that shows it.

    Nothing is computed for a figure that no page shows (a test, a benchmark): None. A ``LiveFigure``'s
    words ride in the message that carries its change (``update_in_place`` asks for them first, ``spoken``):
    the helpers hold them without a message of their own (``KeyboardHelper.heard``). Any other figure's helper
    sends its words only when they differ from the last ones (traitlets compares the lists).
    """
    sinks = figure.__dict__.get("_mha_word_sinks")
    if not sinks:
        return None
    words = words_of(shown)
    for helper, index in sinks:
        current = list(helper.words)
        if index < len(current) and current[index] != words:
            current[index] = words
            if hasattr(figure, "shown") and hasattr(helper, "heard"):
                helper.heard(current)  # the page has them from the figure's own message
            else:
                helper.words = current
    return words


def spoken_with(figure, shown: dict) -> dict | None:
    """The words ``figure`` will speak once it shows ``shown`` (None when no page shows it): what a ``LiveFigure``'s
    change carries to the page, in the same message."""
    return words_of(shown) if figure.__dict__.get("_mha_word_sinks") else None
