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
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from browser_config import ARTIFACTS, CHROMIUM, REPO, missing_tools
from browser_config import fail_or_skip as _fail_or_skip

sys.path.insert(0, str(REPO / "tools"))
import handouts  # noqa: E402
import screen_reader  # noqa: E402
from screen_reader import ScreenReader, ScreenReaderError, norm, plain  # noqa: E402

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


@dataclass
class Listening:
    """What one page's walk heard, and what was missing."""

    stem: str
    problems: list[str] = field(default_factory=list)
    controls_moved: int = 0
    figures_heard: int = 0
    quiz_heard: bool = False
    seconds: float = 0.0


def numbers_in(text: str) -> list[str]:
    return re.findall(r"\d[\d,]*(?:\.\d+)?(?:e-?\d+)?", text)


def heard(words: str, said: str) -> bool:
    """Whether ``words`` (a page text) were spoken in ``said``: the text, whatever Orca split it into."""
    w, s = norm(words), plain(said)
    return bool(w) and w in s


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


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    problems = missing_tools() + screen_reader.missing(CHROMIUM)
    if problems:
        _fail_or_skip("screen reader: " + "; ".join(problems))
    try:
        with ScreenReader(tmp_path_factory.mktemp("orca"), chromium=CHROMIUM) as sr:
            yield sr
    except ScreenReaderError as exc:
        pytest.fail(f"Orca did not start: {exc}", pytrace=False)


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
        said = sr.wait_speech(start, re.escape(norm(name)[:30]), timeout=8, what=f"the name of {where}")
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
    try:
        sr.wait_speech(pressed, re.escape(norm(feedback[0])[:30]), timeout=10, what="the verdict")
    except ScreenReaderError:
        pass
    sr.wait_quiet(1.0)
    said = sr.said(pressed)
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
    listening = listened(reader, stem, lambda: listen_to_handout(reader, path))
    summary = (f"{stem}: {listening.controls_moved} controls moved, {listening.figures_heard} figures heard, "
               f"quick check {'heard' if listening.quiz_heard else 'not heard'}, {waits_and_time(reader, listening)}")
    print(summary)
    assert not listening.problems, summary + "\n" + "\n".join(listening.problems)


def listened(reader: ScreenReader, transcript: str, listen) -> Listening:
    """``listen()`` from a clean transcript, its keys and utterances written to ``TRANSCRIPTS/<transcript>.txt``."""
    reader.events.clear()
    reader.waited_out.clear()
    reader.speech_file.write_text("")
    try:
        return listen()
    finally:
        TRANSCRIPTS.mkdir(parents=True, exist_ok=True)
        (TRANSCRIPTS / f"{transcript}.txt").write_text(reader.transcript())


def waits_and_time(reader: ScreenReader, listening: Listening) -> str:
    """The listening's seconds, and how many waits for speech ran to their timeout (seconds heard of nothing)."""
    return (f"{listening.seconds:.0f} s, {len(reader.waited_out)} waits for speech ran out "
            f"({sum(t for _, t in reader.waited_out):.0f} s)")


# --------------------------------------------------------------------------- JupyterLab

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


def lab_move(sr: ScreenReader, page, listening: Listening, cell: int, control: dict, start: int, tried_focus: list) -> None:
    """One control of a notebook's group: its name spoken on Tab; moved; its new value and the figure's new words
    spoken; the focus, the active cell and command mode where they were (the keys stayed in the group)."""
    from keyboard_walk import group_figures, notebook_state
    from mha_classroom.widgets._words import WORDS_CLASS

    where = f"cell {cell + 1} {control['kind']} {control['name']!r}"
    if control["name"]:
        try:
            sr.wait_speech(start, re.escape(norm(control["name"])[:30]), timeout=8, what=f"the name of {where}")
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
    try:
        sr.wait_speech(pressed, re.escape(norm(lines[0])[:30]), timeout=12, what="the verdict")
    except ScreenReaderError:
        pass
    sr.wait_quiet(1.0)
    said = sr.said(pressed)
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
            time.sleep(0.3)
            if (focused_control(page) or {}).get("in_group"):
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
            time.sleep(0.3)
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
    listening = listened(reader, f"lab_{stem}", lambda: listen_to_notebook(reader, lab, stem))
    summary = (f"{stem} in JupyterLab: {listening.controls_moved} controls moved, "
               f"quick check {'heard' if listening.quiz_heard else 'not heard'}, {waits_and_time(reader, listening)}")
    print(summary)
    assert not listening.problems, summary + "\n" + "\n".join(listening.problems)
