"""Presenting live: notebook 03 in JupyterLab's Presentation Mode, at 1280 x 720, with the projector theme.

A scratch copy of ``notebooks/03_multiple_heads.ipynb`` (in a temporary folder under
the served root; the real notebook is never touched) gets one cell in front,
``mha_core.presenter(True)``, as the instructor's guide tells an instructor to do.
In Chromium the test turns on Presentation Mode and the Simple Interface from the View
menu (View > Appearance; the commands ``application:toggle-presentation-mode`` and
``application:toggle-mode``), runs all
cells, clicks the head-count buttons and checks that the figure in the page shows what
``mha_core`` computes for the new head count, then reads the sizes from the page: the
figure's base and title fonts (plotly's ``layout.font.size``), the token labels on its
axes and the control's text (computed styles), all at 20 px or more.

Run: ``.venv/bin/python -m pytest tests/browser/test_presenting.py -q``.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import nbformat
import pytest
from browser_config import ARTIFACTS, REPO, SERVER_ROOT
from lab_page import (
    OUTPUT,
    PLOT,
    open_notebook,
    output_problems,
    output_with,
    run_all,
    save_screenshot,
    wait_kernel_idle,
    wait_rendered,
    wait_run_finished,
)
from notebook_checks import head_count

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

NOTEBOOK = REPO / "notebooks" / "03_multiple_heads.ipynb"
PROJECTOR_CELL = "import mha_core\n\nmha_core.presenter(True)  # projector sizes for every figure and control below"
#: A projector at 1280 x 720 (the common beamer resolution).
SCREEN = {"width": 1280, "height": 720}
MIN_PX = 20


@pytest.fixture
def scratch_notebook():
    """Notebook 03 with the projector cell in front, in a throwaway folder under the served root."""
    parent = SERVER_ROOT / "artifacts"
    parent.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="presenting-", dir=parent))
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nb.cells.insert(1, nbformat.v4.new_code_cell(PROJECTOR_CELL))  # after the title cell
    path = folder / NOTEBOOK.name
    nbformat.write(nb, path)
    yield path
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


_SIZES = """(el) => {
    const px = (e) => parseFloat(getComputedStyle(e).fontSize);
    const layout = el.layout || {};
    const ticks = [...el.querySelectorAll('.xtick text, .ytick text')];
    return {
        font: (layout.font || {}).size,
        title: ((layout.title || {}).font || {}).size,
        full_font: (el._fullLayout && el._fullLayout.font || {}).size,
        tick_labels: ticks.map(t => t.textContent),
        tick_px: ticks.map(px),
        width: el.getBoundingClientRect().width,
    };
}"""


def test_notebook_03_presents_at_projector_sizes_and_its_head_count_still_answers(scratch_notebook, lab, browser):
    lab.delete_sessions()
    page = browser.new_page()
    page.set_viewport_size(SCREEN)
    try:
        open_notebook(page, lab, scratch_notebook.relative_to(SERVER_ROOT).as_posix(), workspace="presenting-03")
        wait_kernel_idle(page, timeout_s=60)
        prose = "() => parseFloat(getComputedStyle(document.querySelector('.jp-MarkdownOutput p')).fontSize)"
        before = page.evaluate(prose)
        toggle_presentation_mode(page)
        # Presentation Mode enlarges the notebook's own text (prose and code): 14 px to 17 px in JupyterLab 4.6.
        after = page.evaluate(prose)
        assert after > before, f"prose stayed at {before} px in Presentation Mode"
        toggle_simple_interface(page)

        run_all(page)
        prompts = wait_run_finished(page, timeout_s=90)
        assert not [p for p in prompts if p in ("[ ]:", "[*]:")], f"cells did not run: {prompts}"
        wait_rendered(page, {"plots": 4, "toggle_buttons": 1, "quizzes": 1}, timeout_s=40)
        problems = output_problems(page)
        assert not problems["errors"] and not problems["widget_errors"], problems
        assert page.locator(f"{OUTPUT} .mha-presenter-style").count() == 1, "presenter(True) put no style on the page"

        # Move the control: the figure must show mha_core's weights for 2, then 8 heads.
        report = head_count(page, lab)
        assert report["latency_s"], report

        plot = output_with(page, ".mha-head-count").locator(PLOT).first
        sizes = plot.evaluate(_SIZES)
        assert sizes["font"] >= MIN_PX and sizes["full_font"] >= MIN_PX, sizes
        assert sizes["title"] > sizes["font"], sizes
        assert "changed" in sizes["tick_labels"], sizes["tick_labels"]  # token labels on the axes
        assert min(sizes["tick_px"]) >= MIN_PX, f"token labels at {sorted(set(sizes['tick_px']))} px"
        assert sizes["width"] <= SCREEN["width"], sizes["width"]

        control_px = page.evaluate("""() => [...document.querySelectorAll(
            '.mha-head-count .widget-toggle-button, .mha-head-count .widget-label')]
            .map(e => parseFloat(getComputedStyle(e).fontSize))""")
        assert control_px and min(control_px) >= MIN_PX, f"head-count control text at {control_px} px"

        # A plain figure (not live) follows the theme too.
        static_px = page.evaluate(f"""() => [...document.querySelectorAll('{OUTPUT}.js-plotly-plot, {OUTPUT} .js-plotly-plot')]
            .map(e => (e.layout && e.layout.font || {{}}).size)""")
        assert static_px and min(static_px) >= MIN_PX, f"figure base fonts in the page: {static_px}"
    finally:
        try:
            save_screenshot(page, ARTIFACTS / "presenting_03.png")
        finally:
            page.close()
            lab.delete_sessions()
