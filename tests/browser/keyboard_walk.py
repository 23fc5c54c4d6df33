"""Every control of every notebook, from the keyboard alone, inside JupyterLab: the walk
``test_browser.py`` makes in each notebook's laptop run, after its other checks (one Run All for both).

In the notebook's page (1280 x 800, file browser open, every cell run), for every control group (a box that
``mha_classroom.widgets._keys.keyboard_ready`` marks, and whose ``KeyboardHelper`` found it; any
output with a control and a figure but no such mark fails the test):

1. reach it from the notebook with the keyboard only: Escape, ArrowUp/ArrowDown (command
   mode) to the cell below the group, then Shift+Tab, which must land on the group's last
   control (``document.activeElement``);
2. at each control, press the keys its kind answers to, as the notebooks' instructions say:
   an arrow key on a row of toggle buttons (a radio group: the choice and the focus move
   together) or on a slider, ArrowDown (or a letter) on a drop-down, Space on a checkbox,
   text and Enter in a text box, ArrowUp and Enter in a number box; the group's figure in
   the page (its plotly data and layout) must change, and JupyterLab must not move: the
   same active cell, command mode, no Markdown cell opened for editing, the focus still on
   the control;
3. Shift+Tab to the control before it, until every control has had its turn; then Tab
   forward through the group, for any control that was disabled on the way back (10's
   "cache keeps" buttons wake up when the model has a sliding window); every enabled
   control of the group must have been reached and moved; then Tab out of the group.

A figure that does not redraw fails the test. When the control moved, JupyterLab stayed
put and the kernel sent the figure its update, the failure says the figure's view in the
page is dead (``DeadFigureView``: what anywidget did to a figure whose model missed its
two-second start, before ``mha_classroom.widgets._channel``). The per-control keys and times go
to ``artifacts/browser/keyboard.json``.
"""

from __future__ import annotations

import json
import time

from browser_config import ARTIFACTS
from lab_page import parse_kernel_frame, poll_until, wait_kernel_idle

#: A control group in the page: the box ``mha_classroom.widgets._keys.keyboard_ready`` marks.
KEY_GROUP = ".mha-keys"
#: Every element a keyboard user can stop on inside a control group (one stop per radio group, on its chosen button).
#: A slider's readout is a tab stop of its own: a box to type the value into (``kind`` 'readout').
#: A figure's save buttons (``mha_classroom/widgets/js/save.js``) are Tab stops too, but not controls: the walk passes them.
SAVE_BUTTON = "button.mha-save-button"
KEY_STOPS = ("button.widget-toggle-button[tabindex='0'], .noUi-handle, .widget-readout[contenteditable='true'], select, "
             "input, textarea, button:not(.widget-toggle-button):not(.mha-save-button)")

_NOTEBOOK_CELLS = "document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')"

# describe(el): what a control is, how it reads now, and one id that stays the same while it changes.
_DESCRIBE = r"""
const describe = (el) => {
    if (!el || !(el instanceof Element)) return null;
    const cells = [...""" + _NOTEBOOK_CELLS + r"""];
    const view = el.closest('.widget-toggle-buttons, .widget-slider, .widget-dropdown, .widget-checkbox, .widget-text, '
                            + '.widget-inline-hbox, .jupyter-widgets') || el;
    const classes = [...view.classList].filter(c => c.startsWith('mha-')).join(' ');
    const label = view.querySelector(':scope > .widget-label');
    let kind = el.tagName.toLowerCase(), name = label ? label.textContent.trim() : '', value = null, extra = {};
    if (el.matches('button.widget-toggle-button')) {
        kind = 'radio';
        const chosen = el.parentElement.querySelector('[aria-checked="true"]');
        value = chosen ? chosen.textContent.trim() : null;
        extra = {focused: el.textContent.trim(), role: el.getAttribute('role'), group_role: el.parentElement.getAttribute('role'),
                 n: el.parentElement.querySelectorAll('button').length};
    } else if (el.matches('.noUi-handle')) {
        kind = 'slider';
        const readout = view.querySelector('.widget-readout');
        value = readout ? readout.innerText.trim() : el.getAttribute('aria-valuenow');
        extra = {now: Number(el.getAttribute('aria-valuenow')), max: Number(el.getAttribute('aria-valuemax'))};
    } else if (el.matches('.widget-readout')) {
        kind = 'readout'; value = el.innerText.trim();
    } else if (el.matches('select')) {
        kind = 'select';
        value = el.selectedIndex >= 0 ? el.options[el.selectedIndex].text : null;
        extra = {index: el.selectedIndex, n: el.options.length};
    } else if (el.matches('input[type=checkbox]')) {
        kind = 'checkbox';
        name = (view.querySelector('.widget-label-basic') || view).textContent.trim();
        value = el.checked;
    } else if (el.matches('input[type=number]')) {
        kind = 'number'; value = el.value;
    } else if (el.matches('input, textarea')) {
        kind = 'text'; value = el.value;
    } else if (el.matches('button')) {
        kind = 'button'; name = el.textContent.trim();
    } else if (el.matches('.jp-Cell')) {
        kind = 'cell';
    }
    const cell = cells.findIndex(c => c.contains(el));
    return {kind, name, value, classes, cell, id: `${cell}|${kind}|${classes}|${name}`,
            in_group: !!el.closest('""" + KEY_GROUP + r"""'), save: el.matches('""" + SAVE_BUTTON + r"""'), ...extra};
};
"""


def notebook_state(page) -> dict:
    """JupyterLab's side: the active cell's index, 'command' or 'edit' mode, how many Markdown cells are open
    for editing, and the focused element (``focused_control``'s description)."""
    return page.evaluate("() => {" + _DESCRIBE + """
        const cells = [...""" + _NOTEBOOK_CELLS + """];
        const notebook = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');
        return {
            active: cells.findIndex(c => c.classList.contains('jp-mod-active')),
            mode: notebook && notebook.classList.contains('jp-mod-editMode') ? 'edit' : 'command',
            editing_markdown: document.querySelectorAll('.jp-MarkdownCell:not(.jp-mod-rendered)').length,
            focus: describe(document.activeElement),
        };
    }""")


def focused_control(page) -> dict | None:
    """What has the keyboard focus: ``kind`` (radio, slider, select, checkbox, text, number, button, cell, ...),
    ``name`` (its label), ``value`` (as it reads now), ``cell`` (index), ``in_group`` and a stable ``id``."""
    return page.evaluate("() => {" + _DESCRIBE + " return describe(document.activeElement); }")


def control_groups(page) -> list[dict]:
    """Every control group in the notebook, in page order: its cell index, its controls' descriptions (the
    enabled Tab stops, ``KEY_STOPS``) and how many figures it holds; plus every other cell output that holds
    a control and a figure but no group (``ungrouped``: a box shown without ``keyboard_ready``)."""
    return page.evaluate("""([group, stops]) => {""" + _DESCRIBE + """
        const cells = [...""" + _NOTEBOOK_CELLS + """];
        const visible = (e) => e.getClientRects().length > 0 && !e.disabled;
        const groups = [...document.querySelectorAll(group)].map(g => ({
            cell: cells.findIndex(c => c.contains(g)),
            controls: [...g.querySelectorAll(stops)].filter(visible).map(describe),
            disabled: [...g.querySelectorAll(stops + ', button.widget-toggle-button')].filter(e => e.disabled).length,
            figures: g.querySelectorAll('.js-plotly-plot').length,
            bound: g.getAttribute('data-mha-keys') === 'on',  // its KeyboardHelper found it
        }));
        const helper_px = [...document.querySelectorAll('.mha-keys-helper')].map(h => {
            const child = h.closest('.jp-OutputArea-child');
            return child ? Math.round(child.getBoundingClientRect().height) : null;
        });
        const ungrouped = [...document.querySelectorAll('.jp-OutputArea-output')]
            .filter(o => !o.querySelector(group) && o.querySelector('.js-plotly-plot')
                         && o.querySelector('.widget-slider, .widget-toggle-buttons, .widget-dropdown, .widget-checkbox'))
            .map(o => cells.findIndex(c => c.contains(o)));
        return {groups, ungrouped, helper_px};
    }""", [KEY_GROUP, KEY_STOPS])


def group_figures(page, cell: int) -> str:
    """What the kernel draws for the control group in cell ``cell``, as one string: its figures (their live data
    and layout) and the texts it writes beside them (HTML widgets: readouts, messages). It changes whenever the
    kernel redraws the group: a control may change only a readout (10's "cache keeps" while every token fits
    in the window). A control's own label and value are not part of it: the browser changes those itself."""
    return page.evaluate("""([cell, group]) => {
        const c = [...""" + _NOTEBOOK_CELLS + """][cell];
        const g = c && c.querySelector(group);
        const plots = g ? [...g.querySelectorAll('.js-plotly-plot')] : [];
        const texts = g ? [...g.querySelectorAll('.widget-html-content')].map(e => e.textContent) : [];
        const plain = (v) => ArrayBuffer.isView(v) ? Array.from(v) : v;
        return JSON.stringify([plots.map(p => [p.data || [], p.layout || {}]), texts],
                              (k, v) => (k.startsWith('_') ? undefined : plain(v)));
    }""", [cell, KEY_GROUP])


def move_to_cell(page, index: int, *, max_presses: int = 200) -> list[str]:
    """Make cell ``index`` the active cell with the keyboard: Escape, then ArrowUp or ArrowDown (JupyterLab's
    command mode) until it is. Returns the keys pressed."""
    pressed = ["Escape"]
    page.keyboard.press("Escape")
    # Escape leaves the focus where it was: on a control of another group, the arrow keys would move that
    # control (its keys stay in its group). From the notebook itself, as after a click on it, they move cells.
    page.evaluate("""() => {
        const el = document.activeElement;
        const notebook = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');
        if (el && notebook && el !== notebook && el.closest('.jp-OutputArea')) { el.blur(); notebook.focus(); }
    }""")
    for _ in range(max_presses):
        active = notebook_state(page)["active"]
        if active == index:
            return pressed
        key = "ArrowDown" if active < index else "ArrowUp"
        page.keyboard.press(key)
        pressed.append(key)
    raise AssertionError(f"after {len(pressed)} key presses the active cell is {notebook_state(page)['active']}, not {index}")



class DeadFigureView(AssertionError):
    """The kernel sent the figure's update, but the live figure's view in the page did not redraw."""


class FigureUpdates:
    """When the kernel sent a figure an update (a custom comm_msg holding a figure's diff or the whole figure:
    ``mha_classroom.widgets._live_figure``): so a
    figure that did not redraw tells "the key did nothing" apart from "the page's view of the figure is dead"."""

    def __init__(self):
        self.times: list[float] = []

    def attach(self, page) -> "FigureUpdates":
        page.on("websocket", lambda ws: "/api/kernels/" in ws.url and ws.on("framereceived", self._frame))
        return self

    def _frame(self, payload) -> None:
        if len(payload) > 1_000_000:  # widget code (plotly's bundle), not an update
            return
        try:
            header, _, content = parse_kernel_frame(payload)
        except Exception:  # noqa: BLE001 (a frame that is not a kernel message: nothing to count)
            return
        data = (content.get("data") or {}) if header.get("msg_type") == "comm_msg" else {}
        custom = data.get("content") if data.get("method") == "custom" else None
        if isinstance(custom, dict) and ("diff" in custom or "figure" in custom):
            self.times.append(time.monotonic())

    def since(self, moment: float) -> bool:
        return any(t >= moment for t in self.times)


# --------------------------------------------------------------------------- the keys each control answers to

#: What to type into a text box, by the box's CSS class (``add_class`` in mha_classroom.widgets); then Enter.
TEXT_TO_TYPE = {
    "mha-minilm-text": "we rotated the api key, again?",  # 07: a sentence of your own
    "mha-toy-seed": "2",  # 06: a seed the checks before the walk never choose, so the figure must change (a few s of training)
    "mha-induction-seed": "2",  # 09: likewise (600 steps of the two-layer model)
}
#: A key for a drop-down other than ArrowDown, by CSS class: a letter jumps to the first option that starts with it.
SELECT_KEYS = {"mha-serving-model": "m"}  # 10: Mistral-7B v0.1, the one preset with a sliding window
#: Seconds a control may take to redraw its figure: retraining the toy model (06) takes the longest.
REDRAW_TIMEOUT_S = {"mha-toy-": 120, "mha-induction-": 120}
DEFAULT_REDRAW_TIMEOUT_S = 30


def keys_for(control: dict) -> list[str]:
    """The keys that move ``control`` (a ``focused_control`` description), as the notebooks tell a learner."""
    kind, classes = control["kind"], control["classes"].split()
    if kind == "radio":
        return ["ArrowRight"]  # the next button, wrapping round after the last
    if kind == "slider":
        if "mha-toy-head-count" in classes:
            # 06: the checks before leave 4 heads; 5 does not divide d_model = 48 (a message, then every other
            # control of the group answers with the same message): one step down stays a valid count.
            return ["ArrowLeft" if control["now"] > 1 else "ArrowRight"]
        return ["ArrowLeft" if control["now"] >= control["max"] else "ArrowRight"]
    if kind == "select":
        special = [SELECT_KEYS[c] for c in classes if c in SELECT_KEYS]
        return special[:1] or ["ArrowUp" if control["index"] == control["n"] - 1 else "ArrowDown"]
    if kind == "checkbox":
        return ["Space"]
    if kind == "number":
        return ["ArrowUp", "Enter"]
    if kind == "text":
        typed = [TEXT_TO_TYPE[c] for c in classes if c in TEXT_TO_TYPE]
        if typed and typed[0] == control["value"] and ("mha-toy-seed" in classes or "mha-induction-seed" in classes):
            typed = ["1"]  # the seed shown already would redraw nothing
        assert typed, (f"text box {control['id']}: no entry in TEXT_TO_TYPE for its CSS classes {classes}; "
                       "add what a learner would type")
        return ["Control+a", ("type", typed[0]), "Enter"]
    raise AssertionError(f"{control['id']}: no keys known for a control of kind {kind!r}")


def press(page, keys) -> str:
    for key in keys:
        if isinstance(key, tuple):
            page.keyboard.type(key[1], delay=20)
        else:
            page.keyboard.press(key)
    return " ".join(k if isinstance(k, str) else repr(k[1]) for k in keys)


def redraw_timeout(control: dict) -> float:
    return max([t for prefix, t in REDRAW_TIMEOUT_S.items() if prefix in control["classes"]] or [DEFAULT_REDRAW_TIMEOUT_S])


def wait_settled(page, cell: int, *, quiet_s: float = 0.3, timeout_s: float = 60) -> str:
    """Wait for the kernel to be idle and the group's figures to stay the same for ``quiet_s``; return them."""
    wait_kernel_idle(page, timeout_s=timeout_s)
    deadline = time.monotonic() + timeout_s
    last = group_figures(page, cell)
    while time.monotonic() < deadline:
        page.wait_for_timeout(int(quiet_s * 1000))
        now = group_figures(page, cell)
        if now == last:
            return now
        last = now
    return last


def move_control(page, cell: int, log: list, updates: FigureUpdates) -> dict:
    """Press the keys of the focused control; assert its figure changed and JupyterLab stayed where it was."""
    control = focused_control(page)
    assert control and control["in_group"] and control["cell"] == cell, (
        f"the focus is on {control!r}, not on a control of the group in cell {cell}")
    before_state = notebook_state(page)
    before = wait_settled(page, cell)
    keys = keys_for(control)
    started = time.monotonic()
    pressed = press(page, keys)
    deadline = started + redraw_timeout(control)
    while group_figures(page, cell) == before:
        state = notebook_state(page)
        assert state["active"] == cell and state["mode"] == "command", (
            f"{control['id']}: {pressed} reached JupyterLab: the active cell is now {state['active']} "
            f"({state['mode']} mode), the focus on {state['focus']!r}")
        if time.monotonic() > deadline:
            what = (f"{control['id']}: after {pressed} the figure did not change in {redraw_timeout(control):.0f} s "
                    f"(the control reads {state['focus']!r}; JupyterLab stayed put)")
            if updates.since(started):
                raise DeadFigureView(f"{what}, although the kernel sent the figure its update: the live figure's view "
                                     "in the page no longer redraws")
            raise AssertionError(what)
        page.wait_for_timeout(100)
    seconds = time.monotonic() - started
    wait_settled(page, cell)
    after = notebook_state(page)
    now = after["focus"]
    where = f"{control['id']} ({control['value']!r}) after {pressed}"
    assert after["active"] == before_state["active"] == cell, (
        f"{where}: JupyterLab's active cell moved from {before_state['active']} to {after['active']}")
    assert after["mode"] == "command", f"{where}: the notebook went into edit mode"
    assert after["editing_markdown"] == 0, f"{where}: a Markdown cell opened for editing"
    assert now and now["id"] == control["id"], f"{where}: the focus moved to {now!r}"
    assert now["value"] != control["value"], f"{where}: the figure changed but the control still reads {now['value']!r}"
    if control["kind"] == "radio":
        assert now["role"] == "radio" and now["group_role"] == "radiogroup", f"{where}: not a radio group: {now!r}"
        assert now["focused"] == now["value"], f"{where}: the focus ({now['focused']!r}) is not on the chosen button"
    log.append({"control": control["id"], "from": control["value"], "to": now["value"], "keys": pressed,
                "figure_s": round(seconds, 2)})
    return now


def visit(page, control: dict, cell: int, log: list, updates: FigureUpdates) -> str:
    """Move the focused control (a slider's readout, the box beside its handle, is only passed: the
    handle was moved with the arrow keys); its id."""
    if control["kind"] != "readout":
        move_control(page, cell, log, updates)
    return control["id"]


def press_past_save_buttons(page, key: str) -> dict | None:
    """Press ``key`` (Tab or Shift+Tab), then again while the focus is on a figure's save button: the buttons
    are reached, and passed, like any Tab stop. What has the focus then."""
    page.keyboard.press(key)
    control = focused_control(page)
    for _ in range(8):
        if not (control and control.get("save")):
            break
        page.keyboard.press(key)
        control = focused_control(page)
    return control


def tab(page, key: str, cell: int) -> dict:
    control = press_past_save_buttons(page, key)
    assert control and control["in_group"] and control["cell"] == cell, (
        f"{key} inside the group of cell {cell} left it: the focus is on {control!r}")
    return control


def walk_group(page, group: dict, log: list, updates: FigureUpdates) -> None:
    """Reach the group from the notebook, move every control, leave it: all with the keyboard (module docstring)."""
    cell = group["cell"]
    move_to_cell(page, cell + 1)
    last = press_past_save_buttons(page, "Shift+Tab")
    assert last and last["id"] == group["controls"][-1]["id"], (
        f"Shift+Tab from the cell below the group of cell {cell} focused {last!r}, not its last control "
        f"{group['controls'][-1]['id']}; the element: "
        + page.evaluate("() => document.activeElement ? document.activeElement.outerHTML.slice(0, 300) : ''"))
    moved = {visit(page, last, cell, log, updates)}
    for _ in range(len(group["controls"]) - 1):
        moved.add(visit(page, tab(page, "Shift+Tab", cell), cell, log, updates))
    # Forward again: a control that was disabled on the way back may be enabled now.
    enabled = control_groups(page)["groups"]
    (now,) = [g for g in enabled if g["cell"] == cell]
    for _ in range(len(now["controls"]) - 1):
        control = tab(page, "Tab", cell)
        if control["id"] not in moved:
            moved.add(visit(page, control, cell, log, updates))
    missing = [c["id"] for c in now["controls"] if c["id"] not in moved]
    assert not missing, f"group of cell {cell}: never reached with Tab/Shift+Tab: {missing}"
    out = press_past_save_buttons(page, "Tab")  # out of the group, onto the next cell
    assert out is None or not out["in_group"] or out["cell"] != cell, f"Tab past the group's last control stays on {out!r}"


# --------------------------------------------------------------------------- a notebook's walk


def write_report(records: list[dict]) -> None:
    """Per notebook: seconds to interactive, control groups walked, each control's keys and redraw time."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "keyboard.json").write_text(json.dumps(records, indent=2))


def walk_page(page, record: dict, updates: FigureUpdates) -> None:
    """Every control group of the notebook open in ``page`` (every cell run), walked with the keyboard alone."""
    record.update(groups=0, controls=[])
    started = time.monotonic()
    # The walk starts from the notebook, as after Run All: the checks before it may have left the focus on a control.
    page.evaluate("""() => {
        if (document.activeElement) document.activeElement.blur();
        const notebook = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook');
        if (notebook) notebook.focus();
    }""")
    found, _, bound = poll_until(lambda: control_groups(page), lambda f: all(g["bound"] for g in f["groups"]),
                                 timeout_s=20)
    assert bound, f"a control group's keyboard helper did not start: {[g['cell'] for g in found['groups'] if not g['bound']]}"
    record["helper_output_px"] = found["helper_px"]
    assert not found["ungrouped"], (f"cells {found['ungrouped']} show controls and a figure without keyboard_ready "
                                    "(display the group, or show_keyboard_ready(box))")
    groups = [g for g in found["groups"] if g["figures"]]
    record["groups"] = len(groups)
    for group in groups:
        assert group["controls"], f"the group in cell {group['cell']} has no control the keyboard can reach"
        walk_group(page, group, record["controls"], updates)
    record["walk_s"] = round(time.monotonic() - started, 1)
