"""Presenting live: every notebook in JupyterLab's Presentation Mode, at 1280 x 720, with the projector theme.

A scratch copy of each ``notebooks/NN_*.ipynb`` (in a temporary folder under the served
root; the real notebook is never touched) gets one cell in front,
``mha_core.presenter(True)``, as the instructor's guide tells an instructor to do.
In Chromium the test turns on Presentation Mode and the Simple Interface from the View
menu (View > Appearance; the commands ``application:toggle-presentation-mode`` and
``application:toggle-mode``), closes the file browser (Ctrl+B, as the guide says) and runs all cells. Then it reads the page
(``page_text``): every text in every cell's output (figure titles, ticks, legends,
numbers in cells, control labels, buttons, readouts, messages, tables, the quick check)
must be drawn at 20 px or more, no two texts may print over each other, no text may run
past its figure, and each control group and its figure must fit the visible height
together (``lab_page.fit_problems``). In 03 the head-count buttons are also clicked and
the figure must show what ``mha_core`` computes for the new head count.

The smallest text and the tallest control group per notebook go to the browser report
(``presenting`` rows in artifacts/browser/report.json); a screenshot per notebook to
artifacts/browser/presenting_NN.png.

Run: ``.venv/bin/python -m pytest tests/browser/test_presenting.py -q``.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import nbformat
import page_text
import pytest
from browser_config import ARTIFACTS, NOTEBOOK_DIR, SERVER_ROOT
from lab_page import (
    CONTROL_SELECTORS,
    OUTPUT,
    PLOT,
    fit_problems,
    open_notebook,
    output_problems,
    output_with,
    run_all,
    save_screenshot,
    wait_kernel_idle,
    wait_rendered,
    wait_run_finished,
)
from notebook_checks import expectation_for, head_count

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
PROJECTOR_CELL = "import mha_core\n\nmha_core.presenter(True)  # projector sizes for every figure and control below"
#: A projector at 1280 x 720 (the common beamer resolution).
SCREEN = {"width": 1280, "height": 720}
MIN_PX = 20


@pytest.fixture
def scratch_copy():
    """``copy(notebook)``: the notebook with the projector cell in front, in a throwaway folder under the served root."""
    parent = SERVER_ROOT / "artifacts"
    parent.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="presenting-", dir=parent))

    def copy(notebook: Path) -> Path:
        nb = nbformat.read(notebook, as_version=4)
        nb.cells.insert(1, nbformat.v4.new_code_cell(PROJECTOR_CELL))  # after the title cell
        path = folder / notebook.name
        nbformat.write(nb, path)
        return path

    yield copy
    shutil.rmtree(folder, ignore_errors=True)


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
    """One picture per output holding a control and a figure, as the room sees it (for a person to look at)."""
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


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_notebook_presents_at_projector_sizes(notebook, scratch_copy, lab, browser, browser_run):
    expect, _ = expectation_for(notebook.stem)
    result = {"notebook": notebook.stem, "layout": "presenting", "outcome": "failed"}
    browser_run.setdefault("presenting", []).append(result)
    scratch = scratch_copy(notebook)
    lab.delete_sessions()
    page = browser.new_page()
    page.set_viewport_size(SCREEN)
    try:
        open_notebook(page, lab, scratch.relative_to(SERVER_ROOT).as_posix(), workspace=f"presenting-{notebook.stem}")
        wait_kernel_idle(page, timeout_s=60)
        toggle_presentation_mode(page)
        toggle_simple_interface(page)
        close_file_browser(page)

        run_all(page)
        prompts = wait_run_finished(page, timeout_s=120)
        assert not [p for p in prompts if p in ("[ ]:", "[*]:")], f"cells did not run: {prompts}"
        wait_rendered(page, expect.minimum, timeout_s=60)
        page.wait_for_timeout(500)  # plotly's relayout after the last figure
        problems = output_problems(page)
        assert not problems["errors"] and not problems["widget_errors"], problems
        assert page.locator(f"{OUTPUT} .mha-presenter-style").count() == 1, "presenter(True) put no style on the page"

        if notebook.stem.startswith("03"):
            # Move the control: the figure must show mha_core's weights for 2, then 8 heads.
            report = head_count(page, lab)
            assert report["latency_s"], report
            plot = output_with(page, ".mha-head-count").locator(PLOT).first
            assert "changed" in plot.evaluate("(el) => [...el.querySelectorAll('.xtick text, .ytick text')]"
                                              ".map(t => t.textContent)"), "no token labels on the head grid's axes"

        text = page_text.text_problems(page, MIN_PX)
        fit = fit_problems(page)
        result.update(smallest_px=text["smallest"], texts=text["count"], visible_height=fit["visible_height"],
                      tallest_group=max((g["height"] for g in fit["groups"]), default=None),
                      prose_px=page.evaluate("() => Math.min(...[...document.querySelectorAll('.jp-RenderedMarkdown p')]"
                                             ".map(p => parseFloat(getComputedStyle(p).fontSize)))"))
        found = page_text.failures(text) + fit["overflow"] + fit["too_tall"]
        assert not found, (f"{notebook.stem} in Presentation Mode at {SCREEN['width']} x {SCREEN['height']} "
                           f"(text at least {MIN_PX} px), {len(found)} problems:\n" + "\n".join(found[:40]))
        result["outcome"] = "passed"
    except BaseException as exc:
        result["error"] = str(exc)[:2000]
        raise
    finally:
        try:
            save_screenshot(page, ARTIFACTS / f"presenting_{notebook.stem[:2]}.png")
            save_group_screenshots(page, ARTIFACTS / "presenting" / notebook.stem[:2])
        finally:
            page.close()
            lab.delete_sessions()
