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
anywidget, about 5 KB of JavaScript, no network) in the same cell's output. In the page
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
description from ``mha_core.figures.describe``, kept current by ``_words.refresh`` on every
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

from . import _words
from ._channel import CHANNEL_JS, Channel, channel_trait

#: The class that marks a control group's box for the helper (its keys stop there).
GROUP_CLASS = "mha-keys"
#: The class of the helper's own (hidden) element.
HELPER_CLASS = "mha-keys-helper"
#: Keys that move the choice in a row of toggle buttons: -1 previous, +1 next, "first", "last".
ROVING_KEYS = {"ArrowLeft": -1, "ArrowUp": -1, "ArrowRight": 1, "ArrowDown": 1, "Home": "first", "End": "last"}
#: Keys a group lets through to JupyterLab (besides any key held with Ctrl, Alt or Meta).
PASSED_KEYS = ("Tab", "Escape", "Shift+Enter")

_ESM = """
const GROUP = %(group)s;
const ROVING = %(roving)s;
const PASSED = new Set(%(passed)s);
const WORDS = %(words)s;
const SR_ONLY = %(sr_only)s;

// A slider's handle (noUiSlider's role="slider") is named by the slider's label, which ipywidgets
// draws beside it without tying the two together: without a name a screen reader says only "slider".
// Its readout box too (a textbox named by the label).
function nameSliders(root) {
  for (const slider of root.querySelectorAll(".widget-slider")) {
    const label = slider.querySelector(".widget-label");
    const name = label && label.textContent.trim();
    if (!name) continue;
    for (const handle of slider.querySelectorAll("[role='slider']")) set(handle, "aria-label", name);
    // Its readout is a Tab stop of its own, a box to type the value into: Orca said nothing there.
    for (const box of slider.querySelectorAll(".widget-readout[contenteditable='true']")) {
      set(box, "role", "textbox");
      set(box, "aria-label", name + ": type a value");
    }
  }
}

// One radio group per row of toggle buttons: a single Tab stop on the chosen button.
function arrange(root) {
  nameSliders(root);
  for (const control of root.querySelectorAll(".widget-toggle-buttons")) {
    const buttons = [...control.querySelectorAll("button.widget-toggle-button")];
    if (!buttons.length) continue;
    const row = buttons[0].parentElement;
    set(row, "role", "radiogroup");
    const label = control.querySelector(".widget-label");
    const name = label && label.textContent.trim();
    if (name) set(row, "aria-label", name);
    const chosen = buttons.find((b) => b.classList.contains("mod-active"));
    const stop = chosen || buttons.find((b) => !b.disabled) || buttons[0];
    for (const b of buttons) {
      set(b, "role", "radio");
      set(b, "aria-checked", String(b === chosen));
      set(b, "tabindex", b === stop ? "0" : "-1");
    }
  }
}

// Each plot of the group: one image, named by its title and described by its words (region i).
function label(root, words, ids) {
  const plots = [...root.querySelectorAll(".js-plotly-plot")];
  plots.forEach((plot, i) => {
    if (!words[i]) return;
    set(plot, "role", "img");
    set(plot, "aria-label", words[i].name);
    set(plot, "aria-describedby", ids[i]);
    for (const svg of plot.querySelectorAll("svg.main-svg")) set(svg, "aria-hidden", "true");
  });
  const tester = document.getElementById("js-plotly-tester");  // plotly's off-screen text ruler
  if (tester) set(tester, "aria-hidden", "true");
}

function set(el, name, value) {
  if (el.getAttribute(name) !== value) el.setAttribute(name, value);
}

function passes(event) {
  if (event.ctrlKey || event.altKey || event.metaKey) return true;
  return PASSED.has(event.key) || (event.shiftKey && PASSED.has("Shift+" + event.key));
}

function move(button, step) {
  const buttons = [...button.parentElement.querySelectorAll("button.widget-toggle-button")].filter((b) => !b.disabled);
  const here = buttons.indexOf(button);
  if (here < 0 || buttons.length < 2) return;
  const n = buttons.length;
  const next = step === "first" ? 0 : step === "last" ? n - 1 : (here + step + n) %% n;
  buttons[next].focus();
  buttons[next].click();  // the widget's own click handler sets the value
}

function onKeydown(event) {
  const target = event.target;
  if (passes(event) || !(target instanceof Element) || target === event.currentTarget) return;
  const button = target.closest("button.widget-toggle-button");
  if (button && event.key in ROVING && button.closest(".widget-toggle-buttons")) {
    event.preventDefault();  // no page scroll
    move(button, ROVING[event.key]);
  }
  event.stopPropagation();  // the control has the key; JupyterLab's shortcuts never see it
}

export default {
  async render({ model, el }) {
    el.classList.add(%(helper)s);
    // The words come on the helper's channel (mha_core.widgets._channel); without it the keys still work.
    const channel = await channel_of(model).catch((error) => { console.warn("mha-keys: no words:", error); return null; });
    const current = () => (channel ? channel.get("words") : null) || [];
    // The live regions sit in a visually hidden box of their own: ipywidgets' layout view owns the
    // element's own style (it removes width, height, margin and overflow that it did not set).
    const hidden = document.createElement("div");
    hidden.setAttribute("style", SR_ONLY);
    el.appendChild(hidden);
    let root = null, observer = null, timer = 0, waited = 0;
    // One polite live region per figure of the group; ids unique to this view of the helper.
    const uid = "mha-words-" + Math.random().toString(36).slice(2, 10);
    const regions = [], ids = [];
    const say = () => {
      const words = current();
      while (regions.length < words.length) {
        const region = document.createElement("div"), name = document.createElement("span"), text = document.createElement("span");
        region.className = WORDS;
        region.setAttribute("aria-live", "polite");
        region.setAttribute("aria-atomic", "true");
        text.id = uid + "-" + regions.length;
        region.append(name, " ", text);
        hidden.appendChild(region);
        regions.push({ name, text });
        ids.push(text.id);
      }
      words.forEach((w, i) => {
        if (regions[i].name.textContent !== w.name + ".") regions[i].name.textContent = w.name + ".";
        if (regions[i].text.textContent !== w.description) regions[i].text.textContent = w.description;
      });
      if (root) label(root, words, ids);
    };
    say();
    if (channel) channel.on("change:words", say);
    // The box is the output before this one; it appears once all its views exist (a figure takes seconds).
    const attach = () => {
      // The marked box shown last before this helper in the same output area (a cell's outputs).
      const area = el.closest(".jp-OutputArea, .widget-output");
      const before = area ? [...area.querySelectorAll("." + GROUP)].filter(
        (g) => g.compareDocumentPosition(el) & Node.DOCUMENT_POSITION_FOLLOWING) : [];
      root = before.pop() || null;
      if (!root) {
        waited += 1;
        if (waited < 1200) timer = setTimeout(attach, Math.min(25 * waited, 250));
        return;
      }
      arrange(root);
      label(root, current(), ids);
      root.setAttribute("data-mha-keys", "on");  // for tests and for a person reading the page
      root.addEventListener("keydown", onKeydown);
      // A plot is drawn seconds after its box: label it when it appears.
      observer = new MutationObserver(() => { arrange(root); label(root, current(), ids); });
      observer.observe(root, { subtree: true, childList: true, attributes: true, attributeFilter: ["class", "disabled"] });
    };
    attach();
    return () => {
      if (channel) channel.off("change:words", say);
      clearTimeout(timer);
      if (observer) observer.disconnect();
      if (root) {
        root.removeEventListener("keydown", onKeydown);
        root.removeAttribute("data-mha-keys");
      }
    };
  },
};
"""

_HELPER_CLASS_CACHE: list = []


def _esm() -> str:
    import json

    return CHANNEL_JS + _ESM % {
        "group": json.dumps(GROUP_CLASS),
        "helper": json.dumps(HELPER_CLASS),
        "roving": json.dumps(ROVING_KEYS),
        "passed": json.dumps(list(PASSED_KEYS)),
        "words": json.dumps(_words.WORDS_CLASS),
        "sr_only": json.dumps(_words.SR_ONLY_STYLE),
    }


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
                """One ``{"name", "description"}`` per figure of the group, kept on the helper's channel."""
                return self._channel.words

            @words.setter
            def words(self, value) -> None:
                self._channel.words = value

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
    which carries the words of the figures in ``box`` and is told whenever one is redrawn (``_words.watch``)."""
    from IPython.display import display

    helper = keyboard_helper()
    _words.watch(box, helper)
    display(keyboard_ready(box), helper)
