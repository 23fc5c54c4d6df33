"""Classroom mode in the page: one question at a time, reveal, next, with the keyboard alone.

A scratch notebook (in a temporary folder under the served root) holds the one cell an
instructor types, ``quick_check("03", classroom=True)``. In Chromium the test runs it,
checks that exactly one question shows, reveals its answer with the keyboard (Tab to
the button, Enter), moves to the next question the same way, and checks that the page
shows the second question alone, that the first question's reveal is kept, and that
the letters shown are the ones the package gives (one order everywhere).

Run: ``.venv/bin/python -m pytest tests/browser/test_classroom.py -q``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import nbformat
import pytest
from browser_config import ARTIFACTS, SERVER_ROOT
from lab_page import OUTPUT, open_notebook, output_problems, run_all, save_screenshot, wait_kernel_idle, wait_run_finished

from mha_classroom.quiz.bank import load_bank
from mha_classroom.quiz.grading import option_labels, option_order

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

CELL = 'from mha_classroom.quiz import quick_check\n\nquick_check("03", classroom=True)'
QUIZ = f"{OUTPUT} .mha-quiz"


@pytest.fixture
def scratch_notebook():
    parent = SERVER_ROOT / "artifacts"
    parent.mkdir(exist_ok=True)
    folder = Path(tempfile.mkdtemp(prefix="classroom-", dir=parent))
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)", "language": "python"}
    nb.cells = [nbformat.v4.new_markdown_cell("# Classroom mode"), nbformat.v4.new_code_cell(CELL)]
    path = folder / "classroom.ipynb"
    nbformat.write(nb, path)
    yield path
    shutil.rmtree(folder, ignore_errors=True)


def _visible_questions(page) -> list[str]:
    return page.evaluate(f"""() => [...document.querySelectorAll('{QUIZ} .mha-quiz-question')]
        .filter(e => e.offsetParent !== null).map(e => e.innerText)""")


def _press_button(page, css_class: str) -> None:
    """Reach the button with Tab from the quiz's first control, then press Enter: the keyboard alone."""
    target = page.locator(f"{QUIZ} .{css_class}").first
    page.locator(f"{QUIZ} button:not([disabled])").first.focus()
    for _ in range(40):
        if page.evaluate(f"() => document.activeElement && document.activeElement.classList.contains('{css_class}')"):
            break
        page.keyboard.press("Tab")
    else:
        raise AssertionError(f"Tab never reached .{css_class}")
    assert target.evaluate("e => e === document.activeElement")
    page.keyboard.press("Enter")


def test_classroom_mode_runs_one_question_at_a_time_with_reveal(scratch_notebook, lab, browser):
    bank = load_bank()
    questions = bank.questions("03")
    lab.delete_sessions()
    page = browser.new_page()
    page.set_viewport_size({"width": 1280, "height": 800})
    try:
        open_notebook(page, lab, scratch_notebook.relative_to(SERVER_ROOT).as_posix(), workspace="classroom-03")
        wait_kernel_idle(page, timeout_s=60)
        run_all(page)
        wait_run_finished(page, timeout_s=60)
        page.wait_for_selector(f"{QUIZ} .mha-quiz-next", timeout=30_000)
        assert not output_problems(page)["errors"]

        shown = _visible_questions(page)
        assert len(shown) == 1 and shown[0].startswith(f"Question 1 of {len(questions)}"), shown
        first = questions[0]
        labels = option_labels(option_order(first))
        for i in option_order(first):  # the letters in the page are the package's one order
            assert f"{labels[i]} {first.options[i].text.replace('`', '')}" in shown[0]

        _press_button(page, "mha-quiz-reveal")
        page.wait_for_function(f"() => document.querySelector('{QUIZ} .mha-quiz-feedback').innerText.includes('Answer:')",
                               timeout=15_000)
        revealed = page.locator(f"{QUIZ} .mha-quiz-feedback").first.inner_text()
        right = [labels[i] for i in option_order(first) if first.options[i].correct]
        assert f"Answer: {right[0]}" in revealed, revealed

        _press_button(page, "mha-quiz-next")
        page.wait_for_function(
            f"() => [...document.querySelectorAll('{QUIZ} .mha-quiz-question')].some(e => e.innerText.startsWith('Question 2 of'))",
            timeout=15_000,
        )
        shown = _visible_questions(page)
        assert len(shown) == 1 and shown[0].startswith("Question 2 of"), shown
        assert "Answer:" not in shown[0]
        assert shown[0].startswith(f"Question 2 of {len(questions)}.")

        _press_button(page, "mha-quiz-previous")
        page.wait_for_function(
            f"() => [...document.querySelectorAll('{QUIZ} .mha-quiz-question')].some(e => e.innerText.startsWith('Question 1 of'))",
            timeout=15_000,
        )
        assert "Answer:" in _visible_questions(page)[0], "the first question's reveal was lost"
    finally:
        try:
            save_screenshot(page, ARTIFACTS / "classroom_03.png")
        finally:
            page.close()
            lab.delete_sessions()
