"""Every notebook, in JupyterLab, in Chromium: run all, no errors, figures and controls live.

For each ``notebooks/NN_name.ipynb``: open it in a fresh workspace (a fresh kernel),
Run menu -> Run All Cells, wait until every cell has run and the kernel is idle, then
assert no error output and no 'Error displaying widget', and that the figures and
controls in ``notebook_checks.NOTEBOOKS`` rendered; move each live control the way a
person would and assert the figure in the page shows what ``mha_core`` computes;
answer a quick check. The page is 1280 x 800 with JupyterLab's file browser open (a
laptop or a projector): no figure, table or control may stick out of its output area,
each control and the figure it moves must fit on the screen together, and no text of an output anywhere in the
notebook (read with the window stretched to the notebook's height) may be under the laptop theme's 14 px, print
over another or run past its figure (``page_text``); then the
window is widened to 1920 x 1080 and nothing may stick out there either. Back at 1280 x 800,
axe-core finds no WCAG 2.1 A/AA violation in the outputs and every figure is an image named
by its title and described by the words ``mha_classroom.describe`` reads from its data
(``lab_axe``; in 03 also after a head-count change). Last, every control group is walked
with the keyboard alone (``keyboard_walk``: reached with Tab, every control moved by its keys,
JupyterLab never moving; a figure the kernel sent an update that did not redraw is named as a dead view), and
every live figure offers its PNG and SVG buttons, the first one saved both ways (``lab_save``). A screenshot
per notebook goes to artifacts/browser/, and the
time to interactive and kernel-websocket bytes to the report (see conftest.py); the
keyboard walk's keys and times to artifacts/browser/keyboard.json.

Then, on the same page and kernel (one JupyterLab page and one kernel per notebook, not two), the
notebook is presented: ``mha_core.presenter(True)`` typed into a cell after the title, Presentation
Mode and the Simple Interface on, the file browser closed, 1280 x 720, that one cell run (it restyles
every figure and control already shown, so the notebook runs once for both halves); every output
text at 20 px or more, nothing over anything, every group fits (``presenting.py``). Both halves run
even when the first fails; the test fails with every failure.

Run: ``.venv/bin/python -m pytest tests/browser -q``.
"""

from __future__ import annotations

import hashlib
import time
import traceback

import keyboard_walk
import lab_axe
import lab_save
import page_text
import presenting
import pytest
from browser_config import ARTIFACTS, NOTEBOOK_DIR, SERVER_ROOT
from lab_page import (
    VIEWPORT,
    WIDE_VIEWPORT,
    WebsocketMeter,
    code_prompts,
    fit_problems,
    open_file_browser,
    on_whole_notebook,
    open_notebook,
    output_problems,
    rendered_counts,
    run_all,
    save_screenshot,
    wait_kernel_idle,
    wait_rendered,
    wait_run_finished,
)
from notebook_checks import answer_quiz, expectation_for

from mha_core.projector import LAPTOP

NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))

# Per-notebook limits (seconds). A notebook runs in < 20 s in a fresh kernel on two
# cores; the rest is JupyterLab loading, widgets rendering, and a busy shared machine.
OPEN_TIMEOUT_S = 60
RUN_TIMEOUT_S = 75
RENDER_TIMEOUT_S = 30

#: Both halves: 420 s at laptop size, 240 s presenting (what each had as a test of its own).
pytestmark = [pytest.mark.browser, pytest.mark.timeout(660)]
#: JupyterLab 4's code font on a laptop (``--jp-code-font-size``), in which it prints a cell's text output.
JUPYTERLAB_CODE_PX = 13


def _sha256(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def keyboard_report():
    """Each notebook's keyboard walk, written to artifacts/browser/keyboard.json when the module ends."""
    records: list[dict] = []
    yield records
    keyboard_walk.write_report(records)


def check_laptop(page, lab, notebook, expect, result: dict, keys: dict, meter, updates) -> None:
    """The checks at 1280 x 800 with the file browser open (the module docstring), from opening the notebook on."""
    start = time.monotonic()
    open_notebook(page, lab, notebook.relative_to(SERVER_ROOT).as_posix(), workspace=f"browser-test-{notebook.stem}",
                  timeout_s=OPEN_TIMEOUT_S)
    wait_kernel_idle(page, timeout_s=OPEN_TIMEOUT_S)
    result["kernel_ready_s"] = time.monotonic() - start
    result["file_browser_px"] = open_file_browser(page)
    prompts = code_prompts(page)
    assert prompts, f"{notebook.name} shows no code cells"
    assert all(p == "[ ]:" for p in prompts), f"the kernel is not fresh: prompts {prompts} before Run All"

    run_started = time.monotonic()
    run_all(page)
    prompts = wait_run_finished(page, timeout_s=RUN_TIMEOUT_S)
    result["run_all_s"] = time.monotonic() - run_started
    result["time_to_interactive_s"] = time.monotonic() - start
    not_run = [i for i, p in enumerate(prompts) if p in ("[ ]:", "[*]:")]
    assert not not_run, f"code cells {not_run} did not run (Run All stops at an error); prompts {prompts}"

    result["counts"] = wait_rendered(page, expect.minimum, timeout_s=RENDER_TIMEOUT_S)
    result["rendered_s"] = time.monotonic() - start
    problems = output_problems(page)
    result["stderr"] = problems["stderr"]
    assert not problems["errors"], "error output in the notebook:\n" + "\n---\n".join(problems["errors"])
    assert not problems["widget_errors"], "widgets failed to display:\n" + "\n".join(problems["widget_errors"])

    for check in expect.controls:
        try:
            result["controls"].append(check(page, lab))
        except AssertionError as exc:
            if not meter.callback_errors:
                raise
            raise AssertionError(f"{exc}\nmeanwhile the kernel wrote to stderr while handling a control:\n"
                                 + "\n---\n".join(meter.callback_errors)) from exc
    if expect.quiz:
        result["quiz"] = answer_quiz(page, expect.quiz)

    problems = output_problems(page)  # a control or the quiz may have written an error
    assert not problems["errors"], "error output after using the controls:\n" + "\n---\n".join(problems["errors"])

    fit = fit_problems(page)
    result["fit"] = {k: fit[k] for k in ("output_width", "visible_height", "groups")}
    # Printed text (print() output) is in JupyterLab's code font, 13 px on a laptop: JupyterLab's setting.
    # Every text of the whole notebook, not only the screen the run ended on.
    # The notebook's screenshot in the same stretch of the window (the finally below takes one only if this failed).
    text = on_whole_notebook(page, lambda: page_text.text_problems(page, LAPTOP.min_text_size,
                                                                   printed_min_px=JUPYTERLAB_CODE_PX),
                             picture=ARTIFACTS / f"{notebook.stem}.png")
    result["pictured"] = True
    result.update(smallest_px=text["smallest"], printed_px=text["printed_px"], texts=text["count"], visible_height=fit["visible_height"],
                  tallest_group=max((g["height"] for g in fit["groups"]), default=None))
    screen = f"{VIEWPORT['width']} x {VIEWPORT['height']} with the file browser open"
    assert not fit["overflow"], f"at {screen}, outside the output area:\n" + "\n".join(fit["overflow"])
    assert not fit["too_tall"], f"at {screen}, a control and its figure do not fit on screen:\n" + "\n".join(fit["too_tall"])
    unreadable = page_text.failures(text)
    assert not unreadable, (f"at {screen}, text under {LAPTOP.min_text_size} px, printed over other text or cut off "
                            f"({len(unreadable)}):\n" + "\n".join(unreadable[:40]))
    page.set_viewport_size(WIDE_VIEWPORT)
    page.wait_for_timeout(800)  # layout, and plotly's relayout on resize
    wide = fit_problems(page)
    page.set_viewport_size(VIEWPORT)
    assert not wide["overflow"], (f"at {WIDE_VIEWPORT['width']} x {WIDE_VIEWPORT['height']}, outside the output area:\n"
                                  + "\n".join(wide["overflow"]))
    lab_axe.check_outputs(page, notebook.stem, result)  # axe-core on the outputs; every figure named and described
    assert not meter.callback_errors, "a control's callback wrote to stderr in the kernel:\n" + "\n---\n".join(
        meter.callback_errors)
    result["counts"] = rendered_counts(page)
    keyboard_walk.walk_page(page, keys, updates)
    result["save"] = lab_save.check(page, ARTIFACTS / "saved" / notebook.stem)  # PNG and SVG from each live figure
    result["outcome"] = "passed"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_notebook_runs_and_its_controls_answer_in_jupyterlab(notebook, lab, browser, browser_run, keyboard_report):
    expect, has_entry = expectation_for(notebook.stem)
    result = {"notebook": notebook.stem, "outcome": "failed", "has_expectations": has_entry, "controls": []}
    shown = {"notebook": notebook.stem, "layout": "presenting", "outcome": "failed"}
    browser_run["results"].append(result)
    browser_run.setdefault("presenting", []).append(shown)
    keys = {"notebook": notebook.stem}
    keyboard_report.append(keys)
    stored = _sha256(notebook)
    lab.delete_sessions()  # a fresh kernel for this notebook
    page = browser.new_page()
    meter = WebsocketMeter().attach(page)
    updates = keyboard_walk.FigureUpdates().attach(page)
    page_errors = []
    page.on("pageerror", lambda exc: page_errors.append(str(exc)[:300]))
    failures = []
    try:
        for half, record, check in (
            ("at 1280 x 800", result, lambda: check_laptop(page, lab, notebook, expect, result, keys, meter, updates)),
            ("presenting", shown, lambda: presenting.check_presenting(page, lab, notebook.stem, expect, shown)),
        ):
            started = time.monotonic()
            try:
                check()
            except Exception as exc:  # noqa: BLE001 - the other half still runs; both failures are reported
                record["outcome"] = "failed"
                record["error"] = "".join(traceback.format_exception_only(type(exc), exc)).strip()[:4000]
                failures.append((half, exc))
            finally:
                record["check_s"] = round(time.monotonic() - started, 1)
                try:  # a screenshot must not hide the real failure
                    if record is result:
                        if not result.pop("pictured", False):
                            save_screenshot(page, ARTIFACTS / f"{notebook.stem}.png")
                    else:
                        presenting.save_presenting_screenshots(page, notebook.stem, whole=not shown.pop("pictured", False))
                except Exception as exc:  # noqa: BLE001
                    record["screenshot_error"] = str(exc)[:300]
    finally:
        result["ws_received_bytes"], result["ws_sent_bytes"] = meter.received, meter.sent
        result["callback_errors"] = meter.callback_errors
        result["page_errors"] = page_errors
        page.close()
        try:
            lab.delete_sessions()  # shuts this notebook's kernel down
        except OSError as exc:
            result.setdefault("error", f"could not delete the sessions afterwards: {exc}; server log:\n{lab.log_tail()}")
    # Autosave is off: the notebook on disk (stored without outputs) must be untouched.
    if _sha256(notebook) != stored:
        result["outcome"], result["error"] = "failed", f"{notebook.name} changed on disk while the test ran it"
        failures.append(("on disk", AssertionError(result["error"])))
    if len(failures) == 1:
        raise failures[0][1]
    if failures:
        raise AssertionError(f"{notebook.stem}: {len(failures)} failures\n\n" + "\n\n".join(
            f"{half}: {''.join(traceback.format_exception_only(type(exc), exc)).strip()}" for half, exc in failures))
