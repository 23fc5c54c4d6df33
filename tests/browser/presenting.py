"""Presenting live: a notebook in JupyterLab's Presentation Mode, at 1280 x 720, with the projector theme.

The second half of each notebook's test in ``test_browser.py``, on the page and kernel its
laptop checks just used (no second page, JupyterLab load or kernel start). As the instructor's
guide tells an instructor to do, a code cell goes in after the title, ``mha_core.presenter(True)``
(pasted into the page; autosave is off, so the notebook on disk is never touched). The test turns on
Presentation Mode and the Simple Interface from the View menu (View > Appearance; the commands
``application:toggle-presentation-mode`` and ``application:toggle-mode``), closes the file browser
(Ctrl+B, as the guide says) and runs that one cell (Ctrl+Enter), not the notebook again: every figure,
control group and quick check already shown is built again in the projector's sizes where it stands
(``mha_classroom._theme``), so each notebook runs all its cells once for both halves. The cell must
say nothing (no figure or control that could not be restyled). Then it reads the page
(``page_text``), with the window stretched to the whole notebook: every text in every cell's output
(figure titles, ticks, legends, numbers in cells, control labels, buttons, readouts, messages,
tables, solutions, the quick check) must be drawn at 20 px or more (printed text: JupyterLab's own
16 px code font in Presentation Mode), no two texts may print over each other, no text may run past
its figure, and each control group and its figure must fit the visible height together
(``lab_page.fit_problems``). In 03 the head-count buttons are also moved, from where the laptop half
left them, and the figure must show what ``mha_core`` computes for each head count.

The smallest text and the tallest control group per notebook go to the browser report
(``presenting`` rows in artifacts/browser/report.json); a screenshot per notebook to
artifacts/browser/presenting_NN.png.
"""

from __future__ import annotations

import re
from pathlib import Path

import page_text
from browser_config import ARTIFACTS, PICTURES
from lab_page import (
    CONTROL_SELECTORS,
    OUTPUT,
    PLOT,
    fit_problems,
    output_problems,
    on_whole_notebook,
    output_with,
    poll_until,
    save_screenshot,
    wait_kernel_idle,
    wait_rendered,
    wait_run_finished,
)
from notebook_checks import head_count

PROJECTOR_CELL = "import mha_core\n\nmha_core.presenter(True)  # projector sizes for every figure and control below"
#: A projector at 1280 x 720 (the common beamer resolution).
SCREEN = {"width": 1280, "height": 720}
MIN_PX = 20
#: JupyterLab's own code font in Presentation Mode (``--jp-code-presentation-font-size``), in which it prints a
#: cell's text output (``print()``, a value's repr): JupyterLab's setting, not the course's.
PRINTED_PX = 16
#: The notebook panel's cells, in the page's one shown notebook.
CELLS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell"


def appearance_menu(page, command: str) -> None:
    """View > Appearance > the item running ``command``, clicked like a person."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^View$")).click(timeout=10_000)
    page.locator(".lm-Menu-item", has_text=re.compile(r"^\s*Appearance\s*$")).hover(timeout=10_000)
    page.locator(f'.lm-Menu-item[data-command="{command}"]').click(timeout=10_000)


def toggle_presentation_mode(page) -> None:
    """View > Appearance > Presentation Mode; then the shell carries ``jp-mod-presentationMode``."""
    appearance_menu(page, "application:toggle-presentation-mode")
    page.wait_for_function("() => !!document.querySelector('.jp-LabShell.jp-mod-presentationMode')", timeout=10_000)


def toggle_simple_interface(page) -> None:
    """View > Appearance > Simple Interface (Ctrl+Shift+D); then the shell shows one document at a time."""
    appearance_menu(page, "application:toggle-mode")
    page.wait_for_function("() => !!document.querySelector('[data-shell-mode=\"single-document\"]')", timeout=10_000)


def save_group_screenshots(page, folder: Path) -> None:
    """One picture per output holding a control and a figure, as the room sees it (for a person to look at;
    none when no pictures are taken)."""
    if not PICTURES:
        return
    folder.mkdir(parents=True, exist_ok=True)
    outputs = page.locator(OUTPUT).filter(has=page.locator(CONTROL_SELECTORS)).filter(has=page.locator(PLOT))
    for i in range(min(outputs.count(), 8)):
        outputs.nth(i).screenshot(path=str(folder / f"group_{i}.png"), timeout=10_000)


def close_file_browser(page) -> None:
    """Ctrl+B, as the instructor's guide says: the left sidebar closes and the notebook takes the width."""
    shown = "() => { const fb = document.querySelector('#filebrowser'); return !!fb && fb.offsetWidth > 0; }"
    if page.evaluate(shown):
        page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first.click(position={"x": 5, "y": 5})
        page.keyboard.press("Control+b")
        page.wait_for_function(f"() => !({shown})()", timeout=10_000)


def cell_sources(page) -> list[str]:
    """The text of every cell's editor, in order (a rendered Markdown cell: its source is not read, '')."""
    return page.evaluate(f"""() => [...document.querySelectorAll('{CELLS}')].map(c => {{
        const lines = c.querySelectorAll('.jp-InputArea-editor .cm-line');
        return lines.length ? [...lines].map(l => l.textContent).join('\\n') : '';
    }})""")


def insert_projector_cell(page) -> None:
    """A code cell after the title holding ``PROJECTOR_CELL``, put there as a person does: the title cell
    selected, Esc, B (a code cell below), Enter, the lines pasted from the instructor's guide, Esc.

    Each line goes in as one input (what a paste sends), not key by key: typed, its 95 keys cost about a CPU-second
    per notebook, each one an edit JupyterLab's notebook model and editor handle, and checked nothing more."""
    before = len(cell_sources(page))
    page.evaluate("() => { const p = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) "
                  ".jp-WindowedPanel-outer'); if (p) p.scrollTop = 0; }")
    page.locator(CELLS).first.locator(".jp-InputPrompt").click(timeout=10_000)  # selects the title, keeps it rendered
    page.keyboard.press("Escape")
    page.keyboard.press("b")
    page.wait_for_function(f"(n) => document.querySelectorAll('{CELLS}').length === n + 1", arg=before, timeout=10_000)
    page.keyboard.press("Enter")
    for n, line in enumerate(PROJECTOR_CELL.split("\n")):
        if n:
            page.keyboard.press("Enter")
        page.keyboard.insert_text(line)
    page.keyboard.press("Escape")
    typed = cell_sources(page)[1]
    assert typed == PROJECTOR_CELL, f"the cell put after the title reads {typed!r}, not {PROJECTOR_CELL!r}"


def run_projector_cell(page) -> None:
    """Ctrl+Enter on the projector cell (selected after ``insert_projector_cell``): that cell runs, no other."""
    page.locator(CELLS).nth(1).locator(".jp-InputPrompt").click(timeout=10_000)
    page.keyboard.press("Control+Enter")
    page.wait_for_function(f"() => {{ const c = document.querySelectorAll('{CELLS}')[1];"
                           f" const p = c && c.querySelector('.jp-InputPrompt');"
                           f" return !!p && /^\\[\\d+\\]:$/.test(p.innerText.trim()); }}", timeout=60_000, polling=100)


def check_presenting(page, lab, notebook: str, expect, result: dict) -> None:
    """The projector checks (the module docstring) on ``page``, whose notebook has run at laptop size."""
    page.set_viewport_size(SCREEN)
    wait_kernel_idle(page, timeout_s=60)
    insert_projector_cell(page)
    toggle_presentation_mode(page)
    toggle_simple_interface(page)
    close_file_browser(page)

    run_projector_cell(page)
    prompts = wait_run_finished(page, timeout_s=120)
    assert not [p for p in prompts if p in ("[ ]:", "[*]:")], f"cells did not run: {prompts}"
    said = page.locator(CELLS).nth(1).locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stdout']")
    assert not said.count(), f"the projector cell printed: {said.all_inner_texts()}"
    wait_rendered(page, expect.minimum, timeout_s=60)
    problems = output_problems(page)
    assert not problems["errors"] and not problems["widget_errors"], problems
    assert page.locator(f"{OUTPUT} .mha-presenter-style").count() == 1, "presenter(True) put no style on the page"

    if notebook.startswith("03"):
        # Move the control from where the laptop half left it (the switch kept its setting): the figure must
        # show mha_core's weights for each head count.
        report = head_count(page, lab, initial=None)
        assert report["latency_s"], report
        plot = output_with(page, ".mha-head-count").locator(PLOT).first
        assert "changed" in plot.evaluate("(el) => [...el.querySelectorAll('.xtick text, .ytick text')]"
                                          ".map(t => t.textContent)"), "no token labels on the head grid's axes"

    fit = fit_problems(page)
    # Every text of the whole notebook, not one screen. Each figure is drawn again from the kernel's messages,
    # which the page may still be drawing: read again (up to 20 s) until the projector's sizes are there.
    text, _, _ = poll_until(lambda: on_whole_notebook(page, lambda: page_text.text_problems(
                                page, MIN_PX, printed_min_px=PRINTED_PX), picture=ARTIFACTS / f"presenting_{notebook[:2]}.png"),
                            lambda t: not page_text.failures(t), timeout_s=20, interval_s=1)
    result["pictured"] = True
    result.update(smallest_px=text["smallest"], printed_px=text["printed_px"], texts=text["count"], visible_height=fit["visible_height"],
                  tallest_group=max((g["height"] for g in fit["groups"]), default=None),
                  prose_px=page.evaluate("() => Math.min(...[...document.querySelectorAll('.jp-RenderedMarkdown p')]"
                                         ".map(p => parseFloat(getComputedStyle(p).fontSize)))"))
    found = page_text.failures(text) + fit["overflow"] + fit["too_tall"]
    assert not found, (f"{notebook} in Presentation Mode at {SCREEN['width']} x {SCREEN['height']} "
                       f"(text at least {MIN_PX} px), {len(found)} problems:\n" + "\n".join(found[:40]))
    result["outcome"] = "passed"


def save_presenting_screenshots(page, notebook: str, *, whole: bool = True) -> None:
    """Each group as the room sees it; and the whole notebook, unless the text check already took it (``whole``)."""
    if whole:
        save_screenshot(page, ARTIFACTS / f"presenting_{notebook[:2]}.png")
    save_group_screenshots(page, ARTIFACTS / "presenting" / notebook[:2])
