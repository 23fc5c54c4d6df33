"""What a blind learner hears in JupyterLab: GNOME Orca reading a notebook, driven with real keys.

For each notebook in ``LAB_NOTEBOOKS`` (a control group with a live figure and a quick check), opened in
JupyterLab in a non-headless Chromium under Xvfb with Orca running (``screen_reader.py``), run with Run All
(by mouse: not what is under test):

- Tab into the first control group with a live figure; each control's name must be spoken when Tab reaches
  it; moved with the keyboard, Orca must speak its new value and the figure's new words, and the focus, the
  active cell and command mode must stay where they were.
- The quick check: the first option chosen with Space, Check pressed with Enter; the verdict and the
  feedback must be spoken.

A part of its own in ``tools/course.py test`` (it needs JupyterLab, not the handouts), apart from the
handouts' listening (``test_screen_reader.py``). Each notebook's transcript is kept in
``artifacts/browser/screen_reader/lab_<notebook>.txt``. Without Orca, Xvfb or Chromium the test is skipped
with the reason; under CI=true it fails instead.
"""

from __future__ import annotations

import re
import time

import pytest

from browser_config import ARTIFACTS
import screen_reader
from screen_reader import Listening, ScreenReader, ScreenReaderError, heard, listened, norm, waits_and_time

pytestmark = pytest.mark.browser
TRANSCRIPTS = ARTIFACTS / "screen_reader"

#: Notebooks read in JupyterLab: a control group with a live figure and a quick check each.
LAB_NOTEBOOKS = ("03_multiple_heads", "06_heads_learn_their_views")

#: The live words of the group in cell ``cell`` (name and description, as its polite live region holds them).
LAB_WORDS = r"""([cell, cls]) => {
  const c = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')][cell];
  return c ? Array.from(c.querySelectorAll('.' + cls)).map(r => r.textContent.trim()).join(' ') : '';
}"""


def lab_focus_first(page, cell: int, selector: str) -> bool:
    return page.evaluate("""([cell, sel]) => {
      const c = [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')][cell];
      const el = c && [...c.querySelectorAll(sel)].find(e => e.getClientRects().length && !e.disabled);
      if (!el) return false; el.focus(); return document.activeElement === el; }""", [cell, selector])


def lab_focus_moved(page, arrived, timeout: float = 3.0) -> bool:
    """After a Tab: whether the focused control (``keyboard_walk.focused_control``) satisfies ``arrived`` within
    ``timeout`` seconds. On a loaded machine JupyterLab can take longer than a fixed pause to move the focus; a
    second Tab pressed meanwhile would go one stop too far."""
    from keyboard_walk import focused_control

    deadline = time.monotonic() + timeout
    while True:
        time.sleep(0.15)
        if arrived(focused_control(page) or {}):
            return True
        if time.monotonic() > deadline:
            return False


def lab_move(sr: ScreenReader, page, listening: Listening, cell: int, control: dict, start: int, tried_focus: list) -> None:
    """One control of a notebook's group: its name spoken on Tab; moved; its new value and the figure's new words
    spoken; the focus, the active cell and command mode where they were (the keys stayed in the group)."""
    from keyboard_walk import group_figures, notebook_state
    from mha_classroom.widgets._words import WORDS_CLASS

    where = f"cell {cell + 1} {control['kind']} {control['name']!r}"
    if control["name"]:
        try:
            sr.wait_speech(start, re.escape(norm(control["name"])[:30]), timeout=8, what=f"the name of {where}",
                           silent_grace=12)
        except ScreenReaderError as exc:
            listening.problems.append(f"{where}: Tab reached it and its name was not spoken ({exc})")
    sr.wait_quiet(0.8)
    if control["kind"] == "radio":
        key = "Right"
    elif control["kind"] == "slider":
        key = "Right" if control.get("now", 0) < control.get("max", 1) else "Left"
    elif control["kind"] == "select":
        key = "Down"
    elif control["kind"] == "checkbox":
        key = "space"
    else:
        return
    before_state, before_fig = notebook_state(page), group_figures(page, cell)
    before_words = page.evaluate(LAB_WORDS, [cell, WORDS_CLASS])
    moved = sr.key(key)
    changed = False
    for attempt in range(2):
        deadline = time.monotonic() + (6 if attempt == 0 and not tried_focus else 30)
        while time.monotonic() < deadline and not changed:
            time.sleep(0.2)
            changed = group_figures(page, cell) != before_fig
        if changed or tried_focus:
            break
        # Orca's browse mode kept the arrow: switch to focus mode (Orca+A), as a learner does, and press it again.
        tried_focus.append(True)
        sr.key(f"{screen_reader.ORCA_KEY}+a")
        sr.wait_quiet(0.5)
        moved = sr.key(key)
    if not changed:
        listening.problems.append(f"{where}: {key} did not redraw the figure")
        return
    try:
        page.wait_for_function(f"(a) => ({LAB_WORDS})(a) !== {json_str(before_words)}", arg=[cell, WORDS_CLASS], timeout=15_000)
    except Exception:
        pass
    after_words = page.evaluate(LAB_WORDS, [cell, WORDS_CLASS])
    try:
        sr.wait_speech(moved, re.escape(norm(after_words)[:40]), timeout=15, what=f"the new words of {where}")
    except ScreenReaderError:
        pass
    sr.wait_quiet(1.0)
    said = sr.said(moved)
    after_state = notebook_state(page)
    focus = after_state["focus"] or {}
    if not focus.get("in_group") or after_state["active"] != before_state["active"] or after_state["mode"] != "command" \
            or after_state["editing_markdown"] != before_state["editing_markdown"]:
        listening.problems.append(f"{where}: {key} left the control group or moved JupyterLab: "
                                  f"before {before_state}, after {after_state}")
    value = focus.get("value")
    value = ("checked" if value else "not checked") if control["kind"] == "checkbox" else str(value or "")
    if value and not heard(value, said):
        listening.problems.append(f"{where}: moved to {value!r}; the new value was not spoken: {said[:300]!r}")
    if after_words == before_words:
        listening.problems.append(f"{where}: the figure's words did not change when it redrew")
    elif not heard(after_words, said):
        listening.problems.append(f"{where}: the figure's new words were not spoken: words {after_words[:200]!r}; "
                                  f"said {said[:400]!r}")
    listening.controls_moved += 1


def json_str(value) -> str:
    import json

    return json.dumps(value)


def lab_quiz(sr: ScreenReader, page, listening: Listening) -> None:
    """The notebook's quick check: the first option chosen with Space, Check pressed with Enter; the verdict and
    the feedback spoken."""
    cell = page.evaluate("""() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')]
        .findIndex(c => c.querySelector('.mha-quiz-question'))""")
    if cell < 0:
        listening.problems.append("no quick check in the notebook's outputs")
        return
    page.evaluate("""(cell) => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')][cell]
        .scrollIntoView()""", cell)
    if not lab_focus_first(page, cell, ".mha-quiz-question input"):
        listening.problems.append("the quick check's first option cannot take the focus")
        return
    # Each option is a Tab stop until one is chosen: Tab to the second, Shift+Tab back onto the first. (Shift+Tab
    # from the first leaves the output for the cell's toolbar, whose first button duplicates the cell.)
    sr.key("Tab")
    sr.wait_quiet(0.4, timeout=4)
    start = sr.key("shift+Tab")
    try:
        sr.wait_speech(start, r"radio button|check box|entry|edit", timeout=8, what="the first option")
    except ScreenReaderError as exc:
        listening.problems.append(f"the quick check's first option was not announced ({exc})")
    sr.wait_quiet(0.5)
    if not page.evaluate("() => !!document.activeElement.closest('.mha-quiz-question')"):
        listening.problems.append("Shift+Tab did not land on the quick check's first option")
        return
    sr.key("space")
    sr.wait_quiet(0.5)
    if not page.evaluate("() => document.querySelectorAll('.mha-quiz-question input:checked').length"):
        listening.problems.append("Space on the quick check's first option did not choose it")
    for _ in range(8):
        start = sr.key("Tab")
        sr.wait_quiet(0.4, timeout=4)
        if page.evaluate("() => !!document.activeElement.closest('.mha-quiz-check')"):
            break
    else:
        listening.problems.append("Tab did not reach the quick check's Check button")
        return
    pressed = sr.key("Return")
    try:
        page.wait_for_function("() => { const f = document.querySelector('.mha-quiz-question .mha-quiz-feedback');"
                               " return f && f.innerText.trim(); }", timeout=20_000)
    except Exception:
        listening.problems.append("pressing Check showed no feedback")
        return
    lines = page.evaluate("""() => { const f = document.querySelector('.mha-quiz-question .mha-quiz-feedback [role=status]')
        || document.querySelector('.mha-quiz-question .mha-quiz-feedback');
        const parts = Array.from(f.querySelectorAll('div, p, li')).filter(e => !e.querySelector('div, p, li'))
          .map(e => e.innerText.trim()).filter(Boolean);
        return parts.length ? parts : f.innerText.split('\\n').map(t => t.trim()).filter(Boolean); }""")
    said = sr.said_after(pressed, lines[0], timeout=12, what="the verdict")
    missing = [line for line in lines if not heard(line, said)]
    if missing:
        listening.problems.append(f"the quick check's feedback was not all spoken; missing {missing[:2]!r}; said {said[:500]!r}")
    listening.quiz_heard = not missing


def listen_to_notebook(sr: ScreenReader, lab, stem: str) -> Listening:
    from keyboard_walk import KEY_STOPS, control_groups, focused_control
    from lab_page import run_all, wait_kernel_idle, wait_run_finished

    started = time.monotonic()
    listening = Listening(stem)
    page = sr.open(lab.url(f"/lab/workspaces/orca-{stem[:2]}/tree/notebooks/{stem}.ipynb"), timeout=120)
    wait_kernel_idle(page, timeout_s=180)
    sr.wait_quiet(1.0)
    sr.note("RUN ALL (menu, by mouse: not what is under test)")
    run_all(page)
    wait_run_finished(page, timeout_s=420)
    groups = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        found = control_groups(page)["groups"]
        groups = [g for g in found if g["bound"] and g["figures"] and g["controls"]]
        if groups:
            break
        time.sleep(0.5)
    if not groups:
        listening.problems.append("no control group with a live figure came up")
    else:
        group = groups[0]
        cell = group["cell"]
        page.evaluate("""(cell) => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell')][cell]
            .scrollIntoView()""", cell)
        sr.wait_quiet(0.5)
        lab_focus_first(page, cell, ".mha-keys :is(" + KEY_STOPS + ")")
        sr.key("shift+Tab")
        sr.wait_quiet(0.4, timeout=4)
        for _ in range(3):  # back over the cell's toolbar, if Shift+Tab left for the cell itself
            start = sr.key("Tab")
            if lab_focus_moved(page, lambda c: c.get("in_group")):
                break
            sr.wait_quiet(0.4, timeout=4)
        tried_focus: list = []
        seen = set()
        for _ in range(len(group["controls"]) + 2):
            control = focused_control(page)
            if not control or not control.get("in_group") or control["id"] in seen:
                break
            seen.add(control["id"])
            lab_move(sr, page, listening, cell, control, start, tried_focus)
            start = sr.key("Tab")
            lab_focus_moved(page, lambda c, was=control["id"]: c.get("id") != was)
        if not listening.controls_moved:
            listening.problems.append(f"cell {cell + 1}: no control of the group was moved")
    lab_quiz(sr, page, listening)
    sr.close_page()
    with contextlib_suppress():
        lab.delete_sessions()
    listening.seconds = time.monotonic() - started
    return listening


def contextlib_suppress():
    import contextlib

    return contextlib.suppress(Exception)


@pytest.mark.parametrize("stem", LAB_NOTEBOOKS)
def test_a_listener_hears_a_notebook_in_jupyterlab(stem, reader, lab):
    listening = listened(reader, f"lab_{stem}", lambda: listen_to_notebook(reader, lab, stem), TRANSCRIPTS)
    summary = (f"{stem} in JupyterLab: {listening.controls_moved} controls moved, "
               f"quick check {'heard' if listening.quiz_heard else 'not heard'}, {waits_and_time(reader, listening)}")
    print(summary)
    assert not listening.problems, summary + "\n" + "\n".join(listening.problems)
