"""A figure whose widget missed anywidget's two-second start still redraws, and its words still change.

anywidget gives each of its models two seconds from creation to load its module; a model
that misses it never hears from the kernel again (``mha_classroom.widgets._channel``). On a busy
page that happened to 02's mask figure: drawn once, deaf to every click. Here every anywidget
model misses its start on purpose (the page's ``AbortSignal.timeout`` fires at once, before any
module can load), so the failure no longer depends on how busy the machine is. Then 02's mask
buttons are clicked and the figure must show what ``mha_core`` computes for each mask (the same
check as the notebook run), and the group's live region must speak the new figure's words.

Run: ``.venv/bin/python -m pytest tests/browser/test_missed_start.py -q``.
"""

from __future__ import annotations

import pytest
from browser_config import ARTIFACTS, NOTEBOOK_DIR, SERVER_ROOT
from lab_page import OUTPUT, open_notebook, output_problems, run_all, save_screenshot, wait_kernel_idle, wait_run_finished
from notebook_checks import mask_buttons

from mha_classroom.widgets._words import WORDS_CLASS

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

#: Before any page script: every AbortSignal.timeout(...) aborts on the next turn of the event loop.
MISS_EVERY_START = """(() => {
  AbortSignal.timeout = () => { const c = new AbortController(); setTimeout(() => c.abort(), 0); return c.signal; };
})();"""
NOTEBOOK = NOTEBOOK_DIR / "02_single_head_attention.ipynb"


def test_a_figure_that_missed_anywidgets_start_still_redraws(lab, browser):
    lab.delete_sessions()
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.add_init_script(MISS_EVERY_START)
    try:
        open_notebook(page, lab, NOTEBOOK.relative_to(SERVER_ROOT).as_posix(), workspace="missed-start")
        wait_kernel_idle(page)
        run_all(page)
        wait_run_finished(page, timeout_s=90)
        group = page.locator(OUTPUT).filter(has=page.locator(".mha-mask-mode")).first
        group.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
        # The condition under test happened: anywidget gave up on the models.
        assert any("Failed to initialize model" in e for e in errors), f"no model missed its start; page errors: {errors}"
        assert not output_problems(page)["errors"]

        report = mask_buttons(page, lab)  # causal, padding, none: each redraws to what mha_core computes
        assert len(report["latency_s"]) == 3

        words = page.locator(f".{WORDS_CLASS}").filter(has_text="mask")
        page.locator(f"{OUTPUT} .mha-mask-mode .widget-toggle-button", has_text="causal").first.click()
        words.filter(has_text="Causal mask").first.wait_for(state="attached", timeout=30_000)
    finally:
        save_screenshot(page, ARTIFACTS / "missed_start_02.png")
        page.close()
        lab.delete_sessions()
