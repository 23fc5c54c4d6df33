"""The keyboard inside JupyterLab: every control of a group answers its own keys, and only its own.

Why this is needed. JupyterLab reads every key press at the document, after the page
element that had the focus (Lumino's ``CommandRegistry``, listening in the bubbling
phase). Its notebook shortcuts match any focused element of a notebook in command mode
(selector ``.jp-Notebook.jp-mod-commandMode:not(.jp-mod-readWrite) :focus``), so a key
pressed on a button, a slider handle, a drop-down or a checkbox inside a cell's output
runs a notebook command: ArrowLeft and ArrowRight move to another cell, ArrowUp and
ArrowDown too, ``M`` turns the cell into Markdown, ``D D`` deletes it. Text boxes are
spared (JupyterLab marks the notebook read-write while one has the focus). The
registry skips a key press whose default was prevented, or one that never reaches the
document.

What this module adds. ``show_keyboard_ready(box)`` marks a control group's box
(``keyboard_ready``) and shows it, followed by one invisible ``KeyboardHelper`` (an
anywidget, about 5 KB of JavaScript in ``js/keys.js``, no network) in the same cell's output. In the page
the helper finds the marked box shown just before it and:

- turns each row of toggle buttons into a radio group (``role=radiogroup``, each button
  ``role=radio`` with ``aria-checked``) with one Tab stop, on the chosen button: the
  arrow keys (and Home, End) move the choice to the previous or next button, wrapping
  at the ends, and Space or Enter choose the button in focus;
- names each slider's handle (``role=slider``) by the slider's label (``aria-label``), which
  ipywidgets draws beside the handle without tying the two together;
- keeps every key a control of the group uses from reaching JupyterLab: a key pressed
  inside the group goes no further than the group's box, unless it is Tab, Escape,
  Shift+Enter (run the cell) or held with Ctrl, Alt or Meta (JupyterLab's own
  shortcuts, such as Ctrl+S, keep working). The controls' own behaviour is untouched:
  a slider still steps, a drop-down still changes, a checkbox still toggles.

In plain Python and in the static handouts nothing of this runs: the helper is a widget
with no view until a JupyterLab page draws it, and ``ControlGroup`` shows a plain
figure instead of the box when ``MHA_COURSE_STATIC`` is set.

The helper also carries the words of the group's figure (``words``: the figure's name and
description from ``mha_classroom.describe``, kept current by ``_words.refresh`` on every
redraw). In the page it writes them into a polite live region of its own (``aria-live="polite"``,
``aria-atomic="true"``, visually hidden: see ``_words``), so a screen reader announces the new
words after a control changes the figure, without moving the focus; and it makes the group's
plot an image (``role="img"``) named by the figure's title and described by those words, its
SVG hidden from the accessibility tree.

Why the helper is not a child of the box (measured in JupyterLab 4.6, plotly 7.1, on a busy
two-core machine): adding it to the box's children after the box exists sent a second
``children`` message, and then the group's FigureWidget often stopped redrawing (in the
page, the first click left the figure as it was in 4 of 5 fresh notebooks, against 3 of 11
without the helper); shown as an output of its own it did so in 2 of 9, as often as
without it.
"""

from __future__ import annotations

import ipywidgets as widgets
import traitlets

from . import _js, _words
from ._channel import Channel, channel_trait

#: The class that marks a control group's box for the helper (its keys stop there).
GROUP_CLASS = "mha-keys"
#: The class of the helper's own (hidden) element.
HELPER_CLASS = "mha-keys-helper"
#: Keys that move the choice in a row of toggle buttons: -1 previous, +1 next, "first", "last".
ROVING_KEYS = {"ArrowLeft": -1, "ArrowUp": -1, "ArrowRight": 1, "ArrowDown": 1, "Home": "first", "End": "last"}
#: Keys a group lets through to JupyterLab (besides any key held with Ctrl, Alt or Meta).
PASSED_KEYS = ("Tab", "Escape", "Shift+Enter")

_HELPER_CLASS_CACHE: list = []


def _esm() -> str:
    """The helper's module: the constants above, ``js/label.js``, ``js/channel.js`` and ``js/keys.js`` (``_js``)."""
    return _js.module("label.js", "channel.js", "keys.js", values={
        "GROUP": GROUP_CLASS, "HELPER": HELPER_CLASS, "ROVING": ROVING_KEYS, "PASSED": PASSED_KEYS,
        "WORDS": _words.WORDS_CLASS, "SR_ONLY": _words.SR_ONLY_STYLE})


class WordsChannel(Channel):
    """What a ``KeyboardHelper`` tells a screen reader: the words of its group's figures, changed on every redraw
    (on a channel: ``_channel``)."""

    words = traitlets.List(traitlets.Dict(), default_value=[]).tag(sync=True)


def _helper_class():
    """The anywidget class, made on first use (anywidget is imported only when a group is shown)."""
    if not _HELPER_CLASS_CACHE:
        import anywidget

        class KeyboardHelper(anywidget.AnyWidget):
            """Invisible; in the page it gives its group's toggle buttons arrow keys and keeps the group's keys,
            and names and describes its figures (``words``: one ``{"name", "description"}`` per figure)."""

            _esm = _esm()
            _channel = channel_trait(WordsChannel)

            def __init__(self, **kwargs):
                super().__init__(_channel=WordsChannel(), **kwargs)

            @property
            def words(self) -> list:
                """One ``{"name", "description"}`` per figure of the group: on the helper's channel, or as they came
                with their figures' changes (``heard``)."""
                heard = self.__dict__.get("_heard")
                return heard if heard is not None else self._channel.words

            @words.setter
            def words(self, value) -> None:
                self._heard = None
                self._channel.words = value

            def heard(self, value) -> None:
                """The words, already in the page: each came in its figure's own message (``LiveFigure.show``)."""
                self._heard = list(value)

            def close(self):
                self._channel.close()
                super().close()

        _HELPER_CLASS_CACHE.append(KeyboardHelper)
    return _HELPER_CLASS_CACHE[0]


def keyboard_helper() -> widgets.DOMWidget:
    """A new ``KeyboardHelper`` (see the module docstring). Not ``display: none``: in the page its element
    holds the live regions in a visually hidden box (``_words.SR_ONLY_STYLE``), and a region that is not
    rendered is never announced."""
    helper = _helper_class()()
    helper.add_class(HELPER_CLASS)
    return helper


def keyboard_ready(box: widgets.Box) -> widgets.Box:
    """``box`` itself, marked as one control group (``GROUP_CLASS``); its children are left as they are.

    Raises TypeError for anything but an ipywidgets ``Box`` (VBox, HBox, ...) holding the group's controls.
    """
    if not isinstance(box, widgets.Box):
        raise TypeError(f"box={type(box).__name__}: keyboard_ready needs an ipywidgets Box (VBox, HBox, ...) holding "
                        "the group's controls")
    if GROUP_CLASS not in box._dom_classes:
        box.add_class(GROUP_CLASS)
    return box


def show_keyboard_ready(box: widgets.Box) -> None:
    """Display ``box`` marked as a control group, then its ``KeyboardHelper`` (two outputs of the cell),
    which carries the words of the figures in ``box`` and is told whenever one is redrawn (``_words.watch``).
    From then on the kernel shows every ``go.Figure`` with its words too (``_words.install``), as a notebook's
    first cell has it do (``mha_classroom.show_figures_with_words``)."""
    from IPython.display import display

    _words.install()
    helper = keyboard_helper()
    _words.watch(box, helper)
    display(keyboard_ready(box), helper)
