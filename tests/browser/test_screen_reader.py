"""What a blind learner hears: GNOME Orca reads every handout page, driven with real keys.

For each handout page (``tools/handouts.py``), opened in a non-headless Chromium under Xvfb with
Orca running (``screen_reader.py``):

- Tab onto every control of every control group (the page focuses the control, a real Shift+Tab
  steps back and a real Tab steps onto it). Each control's name must be spoken when Tab reaches it; then it is moved with the keyboard (a slider with
  an arrow; a row of radio buttons with an arrow in Orca's focus mode, Orca+A; a checkbox with
  Space; a list with an arrow) and Orca must speak its new value and then the figure's new
  words, not the old ones.
- Answer the first question of the quick check (the first option, or a number) and press
  Check: the verdict and the explanation the page shows must be spoken.
- From the top, Orca's next-graphic key (g) must reach every figure and speak its title as an
  image and its description, with the numbers the page's description holds.

Each page's transcript (every key, then what Orca said) is kept in
``artifacts/browser/screen_reader/<page>.txt``. Without Orca, Xvfb or Chromium the test is
skipped with the reason; under CI=true it fails instead.
"""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

from browser_config import ARTIFACTS, REPO

sys.path.insert(0, str(REPO / "tools"))
import handouts  # noqa: E402
import screen_reader  # noqa: E402
from screen_reader import (Listening, ScreenReader, ScreenReaderError, heard, listened, norm,  # noqa: E402
                           numbers_in, waits_and_time)

pytestmark = pytest.mark.browser
PAGES = [p.stem for p in handouts.notebooks()]
TRANSCRIPTS = ARTIFACTS / "screen_reader"
DRAWN = "() => Array.from(document.querySelectorAll('.mha-plot')).every(p => p.dataset.mhaDrawn)"
TYPESET = "() => !window.MathJax || (MathJax.Hub && MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running)"

#: What the focused element is, for the walk.
FOCUSED = r"""() => {
  const el = document.activeElement;
  if (!el || el === document.body) return null;
  const box = el.closest('.mha-states');
  const quiz = el.closest('.mha-quiz-question');
  return {
    tag: el.tagName.toLowerCase(), type: el.type || '', id: el.id || '', name: el.name || '',
    control: el.dataset ? (el.dataset.control ?? null) : null,
    group: box ? box.id : null,
    quiz: quiz ? quiz.id : null,
    check: el.classList.contains('mha-quiz-check'),
    choice: el.classList.contains('mha-quiz-choice') || el.classList.contains('mha-quiz-number'),
  };
}"""

#: A control group's state as the page shows it: words, figure name, each control's value text.
GROUP_STATE = r"""(id) => {
  const box = document.getElementById(id);
  const words = box.querySelector('.mha-figure-words-text');
  const plot = box.querySelector('.mha-plot');
  const controls = {};
  box.querySelectorAll('[data-control]').forEach(el => {
    const k = el.dataset.control;
    const legend = el.closest('fieldset') ? el.closest('fieldset').querySelector('legend').innerText
                 : (box.querySelector('label[for="' + el.id + '"]') || {}).innerText;
    let value;
    if (el.type === 'range') value = el.getAttribute('aria-valuetext');
    else if (el.type === 'radio') { if (!el.checked) return; value = el.parentElement.innerText; }
    else if (el.type === 'checkbox') value = el.checked ? 'checked' : 'not checked';
    else if (el.tagName === 'SELECT') value = el.options[el.selectedIndex].text;
    controls[k] = {legend: (legend || '').trim(), value: (value || '').trim(), type: el.type || el.tagName.toLowerCase(),
                   label: el.type === 'checkbox' ? el.parentElement.innerText.trim() : ''};
  });
  return {words: words ? words.textContent : '', name: plot ? plot.getAttribute('aria-label') : '',
          shown: box.dataset.mhaShown, state: box.dataset.mhaState, controls: controls,
          texts: Array.from(box.querySelectorAll('.mha-states-text:not([data-text="mha-figure-name"])'))
                   .map(t => t.innerText.trim())};
}"""


# --------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def handouts_dir(request, tmp_path_factory) -> Path:
    """The built handouts: MHA_HANDOUTS_DIR (a folder built before), the session's shared build, or a build here."""
    given = os.environ.get("MHA_HANDOUTS_DIR")
    if given:
        return Path(given)
    try:
        built = request.getfixturevalue("built_handouts")
        return Path(built[0] if isinstance(built, tuple) else built)
    except pytest.FixtureLookupError:
        out = tmp_path_factory.mktemp("handouts-sr")
        handouts.build(out, log=lambda *_: None)
        return out


# --------------------------------------------------------------------------- the walk


def tab(sr: ScreenReader, page) -> tuple[int, dict | None]:
    """One real Tab; where focus went and the speech offset before the key."""
    start = sr.key("Tab")
    focused = None
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        time.sleep(0.15)
        focused = page.evaluate(FOCUSED)
        if sr.offset() > start:
            break
    return start, focused


def move_control(sr: ScreenReader, page, listening: Listening, focused: dict, start: int) -> None:
    """The control Tab has reached: its name spoken, then moved, then its new value and the new words spoken."""
    group, k = focused["group"], focused["control"]
    before = page.evaluate(GROUP_STATE, group)
    control = before["controls"].get(k) or next(iter(before["controls"].values()))
    where = f"{group} control {int(k) + 1} ({control['legend']})"
    # A checkbox inside a group is named by its own label (Orca says the group's legend on entering it only).
    name = control["label"] if kind_of(control) == "checkbox" and control["label"] else control["legend"]
    try:
        said = sr.wait_speech(start, re.escape(norm(name)[:30]), timeout=8, what=f"the name of {where}", silent_grace=12)
    except ScreenReaderError as exc:
        listening.problems.append(f"{where}: Tab reached it and its name was not spoken ({exc})")
        said = sr.said(start)
    sr.wait_quiet(0.8)
    kind = control["type"]
    # Radio buttons and lists answer arrows in Orca's focus mode: Orca enters it by itself on a list (and
    # says so), not on a radio button; a learner presses Orca+A where it has not.
    focus_mode = kind in ("radio", "select-one") and sr.mode() != "focus"
    if focus_mode:
        sr.key(f"{screen_reader.ORCA_KEY}+a")
        sr.wait_quiet(0.5)
    if kind == "checkbox":
        key = "space"
    elif kind == "radio":
        radios = page.evaluate("""(g) => Array.from(document.getElementById(g).querySelectorAll('input[type=radio]'))
            .filter(r => r === document.activeElement || r.name === document.activeElement.name)
            .map(r => [r.checked, r.disabled])""", group)
        at = next((i for i, (c, _) in enumerate(radios) if c), 0)
        if not any(not d for i, (_, d) in enumerate(radios) if i != at):
            sr.note(f"{where}: every other choice is disabled here; not moved")
            sr.key(f"{screen_reader.ORCA_KEY}+a")
            return
        key = "Right" if any(not d for _, d in radios[at + 1:]) else "Left"
    elif kind == "range":
        at = page.evaluate("() => [Number(document.activeElement.value), Number(document.activeElement.max)]")
        key = "Right" if at[0] < at[1] else "Left"
    else:
        key = "Down"
    moved = sr.key(key)
    try:
        page.wait_for_function(f"""() => {{ const b = document.getElementById({group!r});
            return b.dataset.mhaState !== {before['state']!r} && b.dataset.mhaShown === b.dataset.mhaState; }}""",
                               timeout=10_000)
    except Exception:
        listening.problems.append(f"{where}: {key} did not change the setting (still setting {before['state']})")
        return
    after = page.evaluate(GROUP_STATE, group)
    new = after["controls"].get(k, control)
    try:
        changed = (after["words"] if after["words"] != before["words"] else after["name"] if after["name"] != before["name"]
                   else " ".join(after["texts"]).split("\n")[-1])
        sr.wait_speech(moved, re.escape(norm(changed)[:40]) if changed else r".", timeout=10,
                       what=f"the new words of {where}")
    except ScreenReaderError:
        pass
    sr.wait_quiet(1.0)
    said = sr.said(moved)
    value = new["value"] if kind != "checkbox" else ("not checked" if new["value"] == "not checked" else "checked")
    if not heard(value, said):
        listening.problems.append(f"{where}: moved to {value!r}; the new value was not spoken: {said[:300]!r}")
    if before["name"] != after["name"] and not heard(after["name"], said):
        listening.problems.append(f"{where}: the figure's new title was not spoken after the move: "
                                  f"title {after['name']!r}; said {said[:400]!r}")
    if before["words"] != after["words"] and not heard(after["words"], said):
        listening.problems.append(f"{where}: the figure's new words were not spoken after the move: "
                                  f"words {after['words'][:200]!r}; said {said[:400]!r}")
    elif before["words"] != after["words"] and heard(before["words"], said):
        listening.problems.append(f"{where}: the figure's old words were spoken again after the move")
    new_lines = [line for old_line, text in zip(before["texts"], after["texts"]) if text != old_line
                 for line in text.split("\n") if line.strip() and line not in old_line]
    unheard = [line for line in new_lines if not heard(line, said)]
    if unheard:
        listening.problems.append(f"{where}: the group's new lines were not spoken after the move: "
                                  f"{unheard[:2]!r}; said {said[:400]!r}")
    if before["words"] == after["words"] and before["name"] == after["name"] and before["texts"] == after["texts"]:
        listening.problems.append(f"{where}: neither the figure's title, its words nor the group's lines changed when "
                                  f"the setting did ({control['value']!r} -> {new['value']!r}): a listener cannot tell "
                                  "what changed")
    listening.controls_moved += 1
    if focus_mode:
        sr.key(f"{screen_reader.ORCA_KEY}+a")
        sr.wait_quiet(0.5)


def kind_of(control: dict) -> str:
    return control["type"]


def answer_quiz(sr: ScreenReader, page, listening: Listening, focused: dict) -> None:
    """The first question of the quick check: choose, Tab to Check, press it; the verdict and explanation spoken."""
    question = focused["quiz"]
    sr.wait_quiet(0.5)
    if focused["type"] == "text":
        subprocess_type(sr, "4")
    else:
        sr.key("space")
        sr.wait_quiet(0.5)
        chosen = page.evaluate(f"() => document.getElementById({question!r}).querySelectorAll('input:checked').length")
        if not chosen:
            listening.problems.append(f"{question}: Space on the first option did not choose it")
    for _ in range(12):
        start, focused = tab(sr, page)
        if focused and focused.get("check"):
            break
    else:
        listening.problems.append(f"{question}: Tab did not reach the Check button")
        return
    try:
        sr.wait_speech(start, r"check", timeout=5, what="the Check button")
    except ScreenReaderError as exc:
        listening.problems.append(f"{question}: the Check button was not named ({exc})")
    sr.wait_quiet(0.5)
    pressed = sr.key("Return")
    try:
        page.wait_for_function(f"() => document.getElementById({question!r}).querySelector('.mha-quiz-feedback').innerText.trim()",
                               timeout=10_000)
    except Exception:
        listening.problems.append(f"{question}: pressing Check showed no feedback")
        return
    feedback = page.evaluate(f"""() => Array.from(document.getElementById({question!r})
        .querySelectorAll('.mha-quiz-feedback p, .mha-quiz-feedback li')).map(p => p.innerText.trim()).filter(Boolean)""")
    said = sr.said_after(pressed, feedback[0], timeout=10, what="the verdict")
    if not heard(feedback[0], said):
        listening.problems.append(f"{question}: the verdict {feedback[0]!r} was not spoken: {said[:300]!r}")
    missing = [f for f in feedback[1:] if not heard(f, said)]
    if missing:
        listening.problems.append(f"{question}: the explanation was not all spoken; missing {missing[:2]!r}; said {said[:500]!r}")
    listening.quiz_heard = not missing and heard(feedback[0], said)


def subprocess_type(sr: ScreenReader, text: str) -> None:
    import subprocess

    sr.note(f"TYPE {text}")
    subprocess.run(["xdotool", "type", "--delay", "80", text], env=sr.env, check=True, timeout=30)
    sr.wait_quiet(0.5)


def hear_figures(sr: ScreenReader, page, listening: Listening) -> None:
    """From the top, Orca's next-graphic key on every figure: its title as an image, then its description."""
    figures = page.evaluate("""() => Array.from(document.querySelectorAll('.mha-plot')).map(p => ({
        name: p.getAttribute('aria-label'),
        words: document.getElementById(p.getAttribute('aria-describedby')).innerText}))""")
    sr.key("Control+Home")
    sr.wait_quiet(0.6)
    pending = list(figures)
    said_all = []
    for _ in range(len(figures) + 2):
        if not pending:
            break
        start = sr.key("g")
        try:
            sr.wait_speech(start, r"image", timeout=6, what="a graphic")
        except ScreenReaderError:
            pass
        sr.wait_quiet(0.7)
        said = sr.said(start)
        said_all.append(said)
        for fig in pending:
            if heard(fig["name"] + " image", said) or heard(fig["name"], said):
                pending.remove(fig)
                words = re.sub(r"^In words:\s*", "", fig["words"].strip())
                if not heard(words, said):
                    listening.problems.append(f"figure {fig['name'][:60]!r}: its description was not spoken in full; "
                                              f"said {said[:400]!r}")
                elif not numbers_in(said):
                    listening.problems.append(f"figure {fig['name'][:60]!r}: no number was spoken")
                else:
                    listening.figures_heard += 1
                break
    for fig in pending:
        listening.problems.append(f"figure {fig['name'][:60]!r}: never reached with the next-graphic key (g)")


#: Focus ``el`` from the page (not announced reliably), so that the real keys after it start from there.
FOCUS = r"""(sel) => { const el = document.querySelector(sel); if (!el) return false; el.focus(); return document.activeElement === el; }"""


def reach(sr: ScreenReader, page, selector: str) -> tuple[int, dict | None]:
    """Bring focus to ``selector`` with a real Tab: the page focuses it, Shift+Tab steps back, Tab steps onto it.

    Tabbing from the top of every page would read every cell on the way (minutes per page); this way
    Orca announces the control exactly as a learner's Tab reaches it.
    """
    if not page.evaluate(FOCUS, selector):
        return sr.offset(), None
    sr.key("shift+Tab")
    sr.wait_quiet(0.4, timeout=4)
    return tab(sr, page)


def listen_to_handout(sr: ScreenReader, path: Path) -> Listening:
    started = time.monotonic()
    listening = Listening(path.stem)
    page = sr.open(path.as_uri())
    sr.wait_loaded()
    page.wait_for_function(TYPESET, timeout=60_000)
    page.wait_for_function(DRAWN, timeout=60_000)
    sr.wait_quiet(1.0)
    groups = page.evaluate("""() => Array.from(document.querySelectorAll('.mha-states')).map(b => [b.id,
        Array.from(new Set(Array.from(b.querySelectorAll('[data-control]')).map(e => e.dataset.control)))])""")
    for group, controls in groups:
        for k in controls:
            selector = f"[id='{group}'] [data-control='{k}']:is([type=radio]:checked, :not([type=radio]))"
            start, focused = reach(sr, page, selector)
            if not focused or focused["group"] != group or focused["control"] != k:
                listening.problems.append(f"{group} control {int(k) + 1}: Tab did not land on it (focus on {focused})")
                continue
            move_control(sr, page, listening, focused, start)
    if page.evaluate("() => !!document.querySelector('.mha-quiz-question')"):
        start, focused = reach(sr, page, ".mha-quiz-question :is(.mha-quiz-choice, .mha-quiz-number)")
        if not focused or not focused["choice"]:
            listening.problems.append(f"the quick check: Tab did not land on its first question (focus on {focused})")
        else:
            try:
                sr.wait_speech(start, r"radio button|check box|entry|edit", timeout=6, what="the first option")
            except ScreenReaderError as exc:
                listening.problems.append(f"the quick check: its first option was not announced ({exc})")
            answer_quiz(sr, page, listening, focused)
    hear_figures(sr, page, listening)
    sr.close_page()
    listening.seconds = time.monotonic() - started
    return listening


@pytest.mark.parametrize("stem", PAGES)
def test_a_listener_hears_the_handout(stem, handouts_dir, reader):
    path = handouts_dir / f"{stem}.html"
    assert path.is_file(), f"{path} was not built"
    listening = listened(reader, stem, lambda: listen_to_handout(reader, path), TRANSCRIPTS)
    summary = (f"{stem}: {listening.controls_moved} controls moved, {listening.figures_heard} figures heard, "
               f"quick check {'heard' if listening.quiz_heard else 'not heard'}, {waits_and_time(reader, listening)}")
    print(summary)
    assert not listening.problems, summary + "\n" + "\n".join(listening.problems)
