"""Quick checks in a handout page grade as the notebook does, in Chromium.

One table of cases (every option of every choice question, sets of options for the
select-all ones on a first and a later try, and typed numbers: right, wrong, known
mistakes, malformed, out of range) goes to the page's grader (``tools/handout_assets/quiz.js``,
run in Chromium) and to the package (the notebook's own ``QuestionView.check``, which grades
with ``mha_classroom.quiz.grading`` and reads numbers with ``mha_classroom.quiz.numbers``). Every
verdict must be the same, word for word, so the two cannot drift.

Then a page is driven as a learner would: choose, Check, read the feedback; the key stays
folded until asked; answers survive a reload (localStorage) and the reset clears them;
printing unfolds every answer; question text shows `code` as code, never backticks.
"""

from __future__ import annotations

import html
import json
import re
import sys

import nbformat
import numpy as np
import pytest

from browser_config import REPO
from browser_config import fail_or_skip as _fail_or_skip
from browser_config import missing_tools
from lab_page import chromium

sys.path.insert(0, str(REPO / "tools"))
import handouts  # noqa: E402

from mha_classroom.quiz._widget_parts import rich  # noqa: E402
from mha_classroom.quiz.bank import LETTERS, default_bank  # noqa: E402
from mha_classroom.quiz.numbers import format_number  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("isolated_progress")]
QUIZ_JS = REPO / "tools" / "handout_assets" / "quiz.js"

#: What a learner might type, whatever the question: the malformed, the odd and the out of range.
TYPED = ["1,5", "3e2", " 12 ", "", "   ", "abc", "3,6", "3 6", "1_000", "2 362 368", "2,362,368", "2,362,368.5",
         "12.6 million", "12.6 Million", "1.5k", "5 M", "5 m", "5 G", "2 bn", "1.26 × 10^7", "1.26 x 10^-3",
         "4*10**2", "4·10^2", "−5", "- 5", "+.5", "5.", ".", "-", "1.2.3", "0x10", "½", "٣", "NaN", "inf",
         "1e999", "1e-400", "-0", "1e3", "1E+3", "64 ", "0064", "1,000.125", "9" * 201, "\u00a064\u00a0",
         "64\u2003", "\ufeff64", "1\u202f024", "1'024", "1,0000", "12,34,567", "64 heads", "`64`", "<b>64</b>"]


def _choice_cases(q):
    n = len(q.options)
    if q.kind == "single":
        return [([i], 0) for i in range(n)]
    right = list(q.correct_indices)
    subsets = [[i] for i in range(n)] + [right, list(range(n)), [], right[:-1] or [], sorted(set(right) | {
        next((i for i in range(n) if i not in right), right[0])})]
    return [(s, tries) for s in subsets for tries in (0, 1, 2)]


def _numeric_cases(q):
    answer, tol = q.answer, q.tolerance
    own = [repr(answer), format_number(answer), f"{answer:.6g}", str(answer + tol), str(answer - tol),
           str(answer + tol * 1.01 + 1e-9), str(-answer), str(answer * 10), str(answer / 10)]
    own += [format_number(m.value) for m in q.misconceptions] + [repr(m.value) for m in q.misconceptions]
    return [(t, 0) for t in own + TYPED]


def cases() -> list[dict]:
    bank = default_bank()
    table = []
    for q in bank.all_questions():
        made = _numeric_cases(q) if q.kind == "numeric" else _choice_cases(q)
        table += [{"question": q.id, "answer": a, "wrong_tries": t} for a, t in made]
    return table


def package_verdict(case: dict) -> dict:
    """What the notebook widget shows for ``case``: its verdict, or its message when nothing can be graded."""
    from mha_classroom.quiz.question_view import QuestionView

    q = default_bank().question(case["question"])
    view = QuestionView(q, 1, 1, on_check=lambda _view, _verdict: 0)
    view._wrong_tries = case["wrong_tries"]
    if q.kind == "numeric":
        view.options_widget.value = case["answer"]
    elif case["answer"]:
        view.choose([LETTERS[view.order.index(i)] for i in case["answer"]])
    verdict = view.check()
    if verdict is None:
        inner = re.fullmatch(r'<div role="status" style="[^"]*">(.*)</div>', view.feedback.value, re.S)
        return {"message_html": inner.group(1)}
    return {"correct": verdict.correct, "headline": verdict.headline, "details": list(verdict.details)}


_JS_VERDICTS = """([data, cases]) => cases.map(c => {
    const r = MhaQuiz.check(data[c.question], c.answer, c.wrong_tries);
    return r.message !== undefined ? {message_html: MhaQuiz.rich(r.message)}
                                   : {correct: r.correct, headline: r.headline, details: r.details};
})"""


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    problems = missing_tools()
    if problems:
        _fail_or_skip("; ".join(problems))
    with chromium(tmp_path_factory.mktemp("quiz-browser")) as context:
        yield context


@pytest.fixture(scope="module")
def grader_page(browser, tmp_path_factory):
    folder = tmp_path_factory.mktemp("grader")
    (folder / "grader.html").write_text(f'<!doctype html><html lang="en"><head><title>grader</title>'
                                        f'<script src="{QUIZ_JS.as_uri()}"></script></head><body></body></html>')
    page = browser.new_page()
    page.goto((folder / "grader.html").as_uri())
    page.wait_for_function("() => !!window.MhaQuiz")
    yield page
    page.close()


def test_the_page_and_the_package_grade_every_case_alike(grader_page):
    table = cases()
    data = {q.id: handouts.quiz_data(q) for q in default_bank().all_questions()}
    got = grader_page.evaluate(_JS_VERDICTS, [data, table])
    want = [package_verdict(c) for c in table]
    kinds = {"numeric": 0, "single": 0, "multi": 0}
    for q in default_bank().all_questions():
        kinds[q.kind] += 1
    assert min(kinds.values()) > 0, f"the table must cover every kind of question: {kinds}"
    differ = [(c, w, g) for c, w, g in zip(table, want, got) if w != g]
    assert not differ, f"{len(differ)} of {len(table)} cases differ; first: {differ[:3]}"
    # The table holds right and wrong answers, and answers that are no number at all.
    assert any(w.get("correct") for w in want) and any(w.get("correct") is False for w in want)
    assert any("message_html" in w for w in want)


def test_numbers_are_written_alike(grader_page):
    rng = np.random.default_rng(0)
    values = [1000.125, 1.0625, 0.000012345, 999.99, 999.95, -0.0, 1e300, 123456.785, 2.5e-5, 5e-324, 0.1, -1234.5,
              12.5, 0.5, 2.0**53 + 2, 1e21, 1e-7, 99.995, 9.9995, -0.00001, 1e16 + 0.5]
    values += list(rng.normal(0, 1, 200)) + list(rng.lognormal(0, 8, 200)) + list(-rng.lognormal(0, 5, 100))
    values += [round(v, 3) for v in rng.uniform(0, 2000, 100)]
    got = grader_page.evaluate("vs => vs.map(v => MhaQuiz.formatNumber(v))", [float(v) for v in values])
    want = [format_number(float(v)) for v in values]
    differ = [(v, w, g) for v, w, g in zip(values, want, got) if w != g]
    assert not differ, differ[:5]


def test_code_marks_become_code_alike(grader_page):
    texts = [t for q in default_bank().all_questions()
             for t in [q.text, q.explanation, q.feedback, q.wrong_feedback, *(o.text for o in q.options),
                       *(o.feedback for o in q.options)] if t]
    texts += ["a <b> & 'c' \"d\"", "`unclosed", "``", "`a` and `b`"]
    got = grader_page.evaluate("ts => ts.map(t => MhaQuiz.rich(t))", texts)
    assert got == [rich(t) for t in texts]
    assert any("<code>" in g for g in got)


# Exponents the package once misread (its sign class "[+-−]" was a range, digits and letters among
# them; 10.0 ** 400 raised): both graders read these as no number.
@pytest.mark.parametrize("typed", ["2 x 10^a5", "1 x 10^400", "2 x 10^0005"])
def test_exponents_are_read_alike(typed, grader_page):
    from mha_classroom.quiz.numbers import parse_number

    assert grader_page.evaluate("t => MhaQuiz.parseNumber(t)", typed) == parse_number(typed)


# --------------------------------------------------------------------------- a page, as a learner uses it


@pytest.fixture(scope="module")
def quiz_page_file(tmp_path_factory):
    """A handout page with notebook 03's quick check (no kernel needed: the build replaces that cell)."""
    out = tmp_path_factory.mktemp("quiz-page")
    handouts.copy_assets(out)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# 03 · a quick check"),
                nbformat.v4.new_code_cell('from mha_classroom.quiz import quick_check\nquick_check("03")')]
    handouts.make_static(nb, "03")
    page = out / "03_quiz.html"
    page.write_text(handouts.to_html(nb, "03 · a quick check"))
    return page


def _question(q_id):
    return default_bank().question(q_id)


def test_a_learner_checks_answers_and_keeps_them(browser, quiz_page_file):
    page = browser.new_page()
    try:
        page.goto(quiz_page_file.as_uri())
        page.evaluate("() => localStorage.clear()")
        page.reload()
        q = _question("03-what-is-a-head")
        box = page.locator(f"#q-{q.id}")
        right = q.correct_indices[0]
        wrong = next(i for i in range(len(q.options)) if i != right)
        # The key is folded away: its text is not on screen until asked.
        assert not box.locator("details").evaluate("d => d.open")
        assert not box.locator("details p").first.is_visible()

        box.locator(f"input[value='{wrong}']").check()
        box.locator("button.mha-quiz-check").click()
        feedback = box.locator(".mha-quiz-feedback")
        want = package_verdict({"question": q.id, "answer": [wrong], "wrong_tries": 0})
        assert feedback.inner_text().splitlines()[0].endswith(want["headline"])
        assert html.unescape(re.sub("<[^>]+>", "", rich(want["details"][0]))) in feedback.inner_text()
        assert feedback.get_attribute("role") == "status" and feedback.get_attribute("aria-live") == "polite"

        box.locator(f"input[value='{right}']").check()
        box.locator("button.mha-quiz-check").click()
        assert "Correct." in feedback.inner_text()
        assert "Tries so far: 2, answered correctly" in box.locator(".mha-quiz-tries").inner_text()

        numeric = next(x for x in default_bank().questions("03") if x.kind == "numeric") if any(
            x.kind == "numeric" for x in default_bank().questions("03")) else None
        if numeric is not None:
            nbox = page.locator(f"#q-{numeric.id}")
            nbox.locator("input.mha-quiz-number").fill("abc")
            nbox.locator("button.mha-quiz-check").click()
            assert "'abc' is not a number" in nbox.locator(".mha-quiz-feedback").inner_text()

        # A reload keeps the answer and its feedback (this browser's storage); the reset clears both.
        page.reload()
        assert box.locator(f"input[value='{right}']").is_checked()
        assert "Correct." in feedback.inner_text()
        reset = page.locator("button.mha-quiz-reset")
        assert reset.is_visible()
        reset.click()
        assert not box.locator(f"input[value='{right}']").is_checked() and feedback.inner_text() == ""
        page.reload()
        assert not box.locator(f"input[value='{right}']").is_checked()
        assert page.evaluate("() => Object.keys(localStorage).filter(k => k.startsWith('mha-handout-quiz:')).length") == 0
    finally:
        page.close()


def test_quiz_text_shows_code_never_backticks(browser, quiz_page_file):
    page = browser.new_page()
    try:
        page.goto(quiz_page_file.as_uri())
        page.evaluate("() => document.querySelectorAll('.mha-handout-quiz details').forEach(d => d.open = true)")
        text = page.locator(".mha-handout-quiz").inner_text()
        assert "`" not in text
        assert page.locator(".mha-handout-quiz code").count() > 0
    finally:
        page.close()


def test_printing_unfolds_every_answer(browser, quiz_page_file):
    page = browser.new_page()
    try:
        page.goto(quiz_page_file.as_uri())
        keys = page.locator(".mha-handout-quiz details")
        assert keys.count() == len(default_bank().questions("03"))
        assert not any(keys.nth(i).locator("p").first.is_visible() for i in range(keys.count()))
        page.emulate_media(media="print")
        hidden_in_print = [i for i in range(keys.count()) if not keys.nth(i).locator("p").first.is_visible()]
        page.emulate_media(media="screen")
        page.evaluate("() => window.dispatchEvent(new Event('beforeprint'))")
        opened = page.evaluate("() => Array.from(document.querySelectorAll('.mha-handout-quiz details')).every(d => d.open)")
        page.evaluate("() => window.dispatchEvent(new Event('afterprint'))")
        folded = page.evaluate("() => Array.from(document.querySelectorAll('.mha-handout-quiz details')).every(d => !d.open)")
        assert hidden_in_print == [], f"answers {hidden_in_print} stay folded in print media"
        assert opened and folded
        pdf = page.pdf(format="A4")
        assert pdf[:4] == b"%PDF"
    finally:
        page.close()


def test_quiz_data_carries_no_rules_only_the_bank():
    for q in default_bank().all_questions():
        data = handouts.quiz_data(q)
        assert json.loads(json.dumps(data)) == data
        if q.kind != "numeric":
            assert [o["correct"] for o in data["options"]] == [o.correct for o in q.options]
