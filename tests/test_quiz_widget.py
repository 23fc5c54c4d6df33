"""The in-notebook quick check, driven headless: choose, click Check, read the feedback and the score."""

from __future__ import annotations

import html
import re

import ipywidgets as widgets
import pytest

from mha_classroom.quiz import grading, progress
from mha_classroom.quiz import summary as quiz_summary
from mha_classroom.quiz.bank import load_bank
from mha_classroom.quiz.grading import option_order
from mha_classroom.quiz.progress import ProgressStore
from mha_classroom.quiz.widget import ProgressView, QuickCheck, classroom, quick_check, show_progress


pytestmark = pytest.mark.usefixtures("isolated_progress")


@pytest.fixture(scope="module")
def bank():
    return load_bank()


def view_of(quiz: QuickCheck, question_id: str):
    return next(v for v in quiz.questions if v.question.id == question_id)


def letter_of(view, data_index: int) -> str:
    return "abcdefgh"[view.order.index(data_index)]


# --------------------------------------------------------------------------- single choice


def test_a_wrong_then_right_answer_shows_feedback_tries_and_score(bank):
    quiz = quick_check("03")
    view = view_of(quiz, "03-what-is-a-head")
    q = view.question
    right = q.correct_indices[0]
    wrong = next(i for i in range(len(q.options)) if i != right)

    view.options_widget.value = wrong  # RadioButtons values are data indices
    view.check_button.click()
    assert "Not quite." in view.feedback.value
    assert html.escape(q.options[wrong].feedback) in view.feedback.value
    assert "Tries so far: 1<" in view.tries_label.value
    assert "Notebook 03: 0 of 5 questions answered correctly" in quiz.score.value

    view.options_widget.value = right
    view.check_button.click()
    assert "Correct." in view.feedback.value and "Tries so far: 2, answered correctly" in view.tries_label.value
    n_course = len(bank.course_questions())
    assert f"Notebook 03: 1 of 5 questions answered correctly. Course: 1 of {n_course}." in quiz.score.value
    attempts = quiz.store.attempts()
    assert [(a.question_id, a.set_id, a.correct, a.source) for a in attempts] == [
        ("03-what-is-a-head", "03", False, "notebook"),
        ("03-what-is-a-head", "03", True, "notebook"),
    ]
    assert attempts[1].answer == letter_of(view, right)


def test_check_without_a_choice_asks_gently_and_records_nothing():
    quiz = quick_check("03")
    view = quiz.questions[0]
    view.check_button.click()
    assert "Choose an option first" in view.feedback.value
    assert quiz.store.count() == 0 and "Tries so far: 0" in view.tries_label.value


def test_options_are_lettered_radio_buttons_in_the_one_course_order(bank):
    quiz = quick_check("03")
    view = view_of(quiz, "03-what-is-a-head")
    assert isinstance(view.options_widget, widgets.RadioButtons) and view.options_widget.value is None
    labels = [label for label, _ in view.options_widget.options]
    assert [label[:2] for label in labels] == ["a)", "b)", "c)", "d)"]
    assert [value for _, value in view.options_widget.options] == view.order
    assert view.order == option_order(view.question)


def test_the_option_order_is_the_same_after_a_restart_and_for_every_learner(tmp_path):
    # One order for everyone: "the answer is b" means the same option to the whole room.
    first = quick_check("04")
    again = QuickCheck("04", store=ProgressStore(tmp_path / "progress.sqlite3"))
    assert [v.order for v in first.questions] == [v.order for v in again.questions]
    other = QuickCheck("04", store=ProgressStore(tmp_path / "someone_else.sqlite3"))
    assert other.store.learner_id != first.store.learner_id
    assert [v.order for v in first.questions] == [v.order for v in other.questions]
    room = classroom("04", show=False)
    assert [v.order for v in room.questions] == [v.order for v in first.questions]


def test_tries_and_score_survive_a_kernel_restart(tmp_path):
    quiz = quick_check("02")
    view = view_of(quiz, "02-output-mix")
    view.choose(letter_of(view, view.question.correct_indices[0]))
    view.check()
    restarted = QuickCheck("02", store=ProgressStore(tmp_path / "progress.sqlite3"))
    assert "Tries so far: 1, answered correctly" in view_of(restarted, "02-output-mix").tries_label.value
    assert "Notebook 02: 1 of 5" in restarted.score.value


# --------------------------------------------------------------------------- select all


def test_select_all_right_set_is_correct():
    quiz = quick_check("02")
    view = view_of(quiz, "02-softmax-row")
    assert isinstance(view.options_widget, widgets.VBox) and all(isinstance(c, widgets.Checkbox) for c in view.checkboxes)
    right = view.question.correct_indices
    for pos, box in enumerate(view.checkboxes):
        box.value = view.order[pos] in right
    view.check_button.click()
    assert f"Correct: all {len(right)} right options" in view.feedback.value
    assert quiz.store.attempts()[-1].correct


def test_select_all_first_try_comments_on_the_ticks_and_keeps_the_key_back():
    quiz = quick_check("02")
    view = view_of(quiz, "02-softmax-row")
    q = view.question
    right = list(q.correct_indices)
    wrong = next(i for i in range(len(q.options)) if i not in right)
    assert view.reveal_button.layout.display == "none"
    view.choose([letter_of(view, right[0]), letter_of(view, wrong)])
    verdict = view.check()
    assert not verdict.correct
    shown = view.feedback.value
    assert "should not be chosen" in shown and f"{letter_of(view, wrong)})" in shown
    assert "right to choose" in shown
    # The key is not given away on the first try: no missed option is named.
    assert "missed" not in shown and f"{len(right) - 1} right options not chosen yet" in shown
    for i in right[1:]:
        assert html.escape(grading._without_yes(q.options[i].feedback)) not in shown
    assert not quiz.store.attempts()[-1].correct
    # On request ("Show the answer") or after a second wrong try, the key.
    assert view.reveal_button.layout.display is None
    view.check()
    assert view.feedback.value.count("missed, it is right too:") == len(right) - 1
    view.reveal_button.click()
    assert "Answer: " in view.feedback.value and "Why not the others" in view.feedback.value


# --------------------------------------------------------------------------- numeric


def test_numeric_answers_accept_commas_and_explain_a_known_mistake(bank):
    quiz = quick_check("05")
    view = view_of(quiz, "05-mha-parameters")
    assert isinstance(view.options_widget, widgets.Text)
    view.options_widget.value = "2,359,296"
    view.check_button.click()
    assert "Not quite" in view.feedback.value and "weights only" in view.feedback.value
    view.options_widget.value = "2,362,368"
    view.check_button.click()
    assert "Correct: 2,362,368 parameters." in view.feedback.value
    assert [a.correct for a in quiz.store.attempts()] == [False, True]


def test_numeric_text_that_is_not_a_number_is_not_counted():
    quiz = quick_check("03")
    view = view_of(quiz, "03-d-head")
    view.options_widget.value = "sixty-four"
    view.check_button.click()
    assert "is not a number" in view.feedback.value
    view.options_widget.value = ""
    view.check_button.click()
    assert "Type a number first" in view.feedback.value
    assert quiz.store.count() == 0


def test_the_numeric_hints_suggest_no_number_that_a_question_takes_or_refuses():
    # "e.g. 64" was 07-minilm-d-head's wrong answer (BERT's d_head) and 03-d-head's right one.
    from mha_classroom.quiz.bank import default_bank
    from mha_classroom.quiz.widget import QuestionView

    for question in (q for q in default_bank().all_questions() if q.kind == "numeric"):
        view = QuestionView(question, 1, 1, on_check=lambda *a: None)
        view.options_widget.value = "many"
        view.check()
        shown = view.options_widget.placeholder + " " + html.unescape(re.sub(r"<[^>]+>", " ", view.feedback.value))
        numbers = {float(n.replace(",", "")) for n in re.findall(r"\d[\d,]*(?:\.\d+)?", shown)}
        values = {float(question.answer)} | {float(m.value) for m in question.misconceptions}
        assert not numbers & values, (question.id, shown)


# --------------------------------------------------------------------------- classroom mode


def test_classroom_mode_records_nothing_and_reveals_the_answer(tmp_path, bank):
    room = classroom("03")
    assert room.classroom and room.store is None
    view = view_of(room, "03-what-is-a-head")
    assert view.reveal_button is not None and "mha-quiz-reveal" in view.reveal_button._dom_classes
    q = view.question
    right = q.correct_indices[0]
    view.choose(letter_of(view, right))
    view.check_button.click()
    assert "Correct." in view.feedback.value
    view.reveal_button.click()
    assert "Answer: " + letter_of(view, right) + ")" in view.feedback.value
    assert "learned Q/K/V projection path" in view.feedback.value
    assert q.explanation.split(".")[0] in view.feedback.value
    assert "Why not the others" in view.feedback.value
    assert not (tmp_path / "progress.sqlite3").exists()
    assert "nothing is recorded" in room.score.value


def test_classroom_order_is_the_same_in_every_lesson():
    room = quick_check("05", classroom=True)
    assert all(v.order == option_order(v.question) for v in room.questions)
    assert all(v.order == [] for v in room.questions if v.question.kind == "numeric")


def test_normal_mode_offers_no_reveal_before_a_wrong_try():
    for view in quick_check("01").questions:
        assert view.reveal_button.layout.display == "none"


@pytest.mark.parametrize("question_id", ["03-what-is-a-head", "05-mha-parameters"])
def test_after_a_wrong_try_every_kind_of_question_offers_the_answer(bank, question_id):
    # The terminal's rule too: try again as often as you like, or ask for the answer.
    view = view_of(quick_check(question_id[:2]), question_id)
    q = view.question
    if q.kind == "numeric":
        view.options_widget.value = "1"
    else:
        view.choose(letter_of(view, next(i for i, o in enumerate(q.options) if not o.correct)))
    view.check()
    assert view.reveal_button.layout.display is None and view.reveal_button.description == "Show the answer"
    view.reveal_button.click()
    assert "Answer: " in view.feedback.value


def test_classroom_reveal_of_a_numeric_question_gives_the_number():
    view = view_of(classroom("10"), "10-kv-kib-llama2-70b")
    text = view.reveal()
    assert text.startswith("Answer: 320 KiB.") and "2,560" in view.feedback.value


# --------------------------------------------------------------------------- broken progress file


def test_a_corrupt_progress_file_still_lets_the_quiz_work(tmp_path, capsys):
    (tmp_path / "progress.sqlite3").write_bytes(b"\x13\x37 not sqlite" * 200)
    quiz = quick_check("01")
    assert "cannot be saved" in quiz.note.value
    view = view_of(quiz, "01-score-count")
    view.choose("36")
    view.check_button.click()
    assert "Correct" in view.feedback.value and "Notebook 01: 1 of 5" in quiz.score.value
    assert capsys.readouterr().out.count("Note:") == 1


# --------------------------------------------------------------------------- the review and the progress table


def test_the_review_shows_questions_from_every_notebook_and_counts_them_there(bank):
    quiz = quick_check("11")
    shown = [v.question.id for v in quiz.questions]
    assert {qid[:2] for qid in shown} == {f"{n:02d}" for n in range(1, 12)}
    view = view_of(quiz, "03-what-is-a-head")
    view.choose(letter_of(view, view.question.correct_indices[0]))
    view.check()
    summary = quiz_summary.progress_summary(quiz.store, bank)
    # It counts once, in notebook 03's row; the review's own score counts it too.
    assert summary["03"].best == 1 and summary["11"].best == 0
    assert f"Review: 1 of {len(bank.questions('11'))} questions answered correctly" in quiz.score.value


def test_the_review_says_that_earlier_answers_count_already(bank):
    notebook = quick_check("03")
    view = view_of(notebook, "03-what-is-a-head")
    view.choose(letter_of(view, view.question.correct_indices[0]))
    view.check()
    review = QuickCheck("11", store=notebook.store)
    repeated = len(bank.sets["11"].include)
    assert f"The first {repeated} questions repeat one question from each of notebooks 01 to 10" in review.header.value
    assert "answered correctly in notebook 03, so it counts here already" in view_of(review, "03-what-is-a-head").tries_label.value
    assert f"Review: 1 of {len(bank.questions('11'))}" in review.score.value
    # Answered in the review itself, it reads as plainly answered.
    own = view_of(review, "11-mental-model")
    own.choose(letter_of(own, own.question.correct_indices[0]))
    own.check()
    assert own.tries_label.value.endswith("Tries so far: 1, answered correctly</span>")


def test_progress_table_rows_add_up_to_the_course_total(bank):
    quiz = quick_check("11")
    for view in quiz.questions[::2]:
        if view.question.kind != "numeric":
            view.choose(letter_of(view, view.question.correct_indices[0]))
            view.check()
    summary = quiz_summary.progress_summary(quiz.store, bank)
    rows = [r for key, r in summary.items() if key != "course"]
    course = summary["course"]
    for column in ("questions", "attempted", "best", "last", "tries"):
        assert sum(getattr(r, column) for r in rows) == getattr(course, column), column
    assert course.questions == len(bank.course_questions()) == sum(len(bank.sets[s].questions) for s in summary if s != "course")
    table = show_progress().table.value
    body = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1])
    cells = [re.findall(r"<td[^>]*>(.*?)</td>", row) for row in body]
    assert sum(int(c[2]) for c in cells[:-1]) == int(cells[-1][2]) == len(bank.course_questions())
    assert f"repeats {len(bank.sets['11'].include)} questions of notebooks 01-10" in table


def test_progress_table_lists_every_notebook_and_reset_asks_first(bank):
    quiz = quick_check("04")
    view = view_of(quiz, "04-concat-shape")
    view.choose(letter_of(view, view.question.correct_indices[0]))
    view.check()
    table = show_progress()
    assert isinstance(table, ProgressView)
    for n in range(1, 12):
        assert f">{n:02d}<" in table.table.value
    assert ">Concatenation and the output projection<" in table.table.value
    assert table.confirm_button.layout.display == "none"
    table.reset_button.click()
    assert "erases all 1 recorded answers" in table.message.value and table.confirm_button.layout.display is None
    table.cancel_button.click()
    assert quiz.store.count() == 1 and "Nothing was erased" in table.message.value
    table.reset_button.click()
    table.confirm_button.click()
    assert quiz.store.count() == 0 and "Erased 1" in table.message.value


# --------------------------------------------------------------------------- for the browser test and the projector


def test_controls_carry_stable_css_classes():
    quiz = quick_check("02")
    assert "mha-quiz" in quiz.box._dom_classes and "mha-quiz-score" in quiz.score._dom_classes
    for view in quiz.questions:
        assert "mha-quiz-check" in view.check_button._dom_classes
        assert "mha-quiz-feedback" in view.feedback._dom_classes
        assert "mha-quiz-option" in view.options_widget._dom_classes
        assert "mha-quiz-tries" in view.tries_label._dom_classes


def test_text_is_large_enough_to_read_on_a_projector():
    quiz = quick_check("02")
    assert "font-size: 18px" in quiz.header.value
    assert all(v.check_button.style.font_size == "18px" for v in quiz.questions)


def test_choose_rejects_letters_the_question_does_not_have():
    view = view_of(quick_check("03"), "03-what-is-a-head")
    with pytest.raises(ValueError, match="answer='z' is not valid for 03-what-is-a-head; give one letter from a to d"):
        view.choose("z")
    with pytest.raises(ValueError, match="one letter"):
        view.choose("a,b")


def test_a_bad_set_id_lists_the_valid_ones():
    with pytest.raises(ValueError, match="valid quizzes are 00, 01"):
        quick_check("12")
    assert quick_check(3).set_id == "03"


# --------------------------------------------------------------------------- hostile ids and broken files


@pytest.mark.parametrize("set_id", ["²", "³", "9" * 5000, None, 3.5, "03 "[:-1] + "x"], ids=["sup2", "sup3", "5000", "none", "float", "03x"])
def test_quick_check_with_a_bad_id_lists_the_valid_ones(set_id):
    with pytest.raises(ValueError, match="is not a quiz; valid quizzes are 00, 01"):
        quick_check(set_id)


def test_a_broken_set_shows_its_file_and_line_and_the_others_still_work(tmp_path):
    import json

    from mha_classroom.quiz.bank import load_bank as load, quizzes_dir

    folder = tmp_path / "quizzes"
    folder.mkdir()
    for path in quizzes_dir().glob("*.json"):
        (folder / path.name).write_bytes(path.read_bytes())
    data = json.loads((folder / "04.json").read_text(encoding="utf-8"))
    data["questions"][1]["units"] = "heads"
    (folder / "04.json").write_text(json.dumps(data, indent=2, ensure_ascii=False), encoding="utf-8")
    bank = load(folder)
    broken = QuickCheck("04", bank=bank)
    assert broken.questions == [] and "04.json line" in broken.note.value and "unknown key 'units'" in html.unescape(broken.note.value)
    fine = QuickCheck("03", bank=bank)
    assert len(fine.questions) == 5 and fine.note.value == ""
    review = QuickCheck("11", bank=bank)
    assert "04-w-o-blocks" not in [v.question.id for v in review.questions]
    assert "left out because their file is broken" in review.note.value


def test_a_busy_file_note_clears_once_the_answers_are_saved(tmp_path, monkeypatch):
    import subprocess
    import sys
    import textwrap

    monkeypatch.setattr(progress, "BUSY_TIMEOUT_S", 0.2)
    monkeypatch.setattr(progress, "RETRY_TIMEOUT_S", 0.05)
    quiz = quick_check("03")
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent("""
        import sqlite3, sys, time
        conn = sqlite3.connect(sys.argv[1], isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE"); print("locked", flush=True); time.sleep(1.0); conn.execute("COMMIT")
        """), str(quiz.store.path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    view = view_of(quiz, "03-d-head")
    view.choose("64")
    view.check()
    assert "is busy" in quiz.note.value and "Notebook 03: 1 of 5" in quiz.score.value
    holder.wait(timeout=60)
    view.choose("8")
    view.check()
    assert quiz.note.value == "" and [a.answer for a in quiz.store.attempts()] == ["64", "8"]
    assert not quiz.store.pending


@pytest.mark.parametrize("answer", [5, None, 2.5, ["a", 1]])
def test_choose_with_a_non_letter_names_the_answer_and_the_valid_letters(answer):
    from mha_classroom.quiz.bank import default_bank
    from mha_classroom.quiz.widget import QuestionView

    question = next(q for q in default_bank().all_questions() if q.kind == "single")
    view = QuestionView(question, 1, 1, on_check=lambda *a: None)
    with pytest.raises(TypeError, match=r"answer=.* is not valid for .*give one letter from a to [a-z]"):
        view.choose(answer)


# --------------------------------------------------------------------------- the review for a class that stops after 05


def test_the_review_through_05_shows_and_scores_only_the_core(bank):
    quiz = quick_check("11", through="05")
    shown = [v.question.id for v in quiz.questions]
    assert {qid[:2] for qid in shown} == {"01", "02", "03", "04", "05", "11"}
    assert "repeat one question from each of notebooks 01 to 05" in quiz.header.value
    total = len(bank.questions("11", through="05"))
    assert f"Review: 0 of {total} questions answered correctly" in quiz.score.value
    view = view_of(quiz, "03-what-is-a-head")
    view.choose(letter_of(view, view.question.correct_indices[0]))
    view.check()
    assert f"Review: 1 of {total} questions answered correctly" in quiz.score.value


def test_classroom_mode_takes_through_too():
    quiz = classroom("11", through="05")
    assert {v.question.id[:2] for v in quiz.questions} == {"01", "02", "03", "04", "05", "11"}
    assert "from each of notebooks 01 to 05" in quiz.header.value


def test_a_bad_through_is_a_plain_message_not_a_traceback():
    quiz = quick_check("11", through="12")
    assert not quiz.questions
    assert "through=&#x27;12&#x27;" in quiz.note.value or "through='12'" in quiz.note.value
    assert "valid choices are 01" in quiz.note.value


# --------------------------------------------------------------------------- classroom: one question at a time


def _shown(quiz):
    return [v for v in quiz.questions if v.box in quiz.box.children]


def test_classroom_mode_shows_one_question_at_a_time_and_moves_on():
    room = classroom("03", show=False)
    n = len(room.questions)
    assert n > 1
    assert _shown(room) == [room.questions[0]]
    assert room.previous_button.disabled and not room.next_button.disabled
    room.next_button.click()
    assert _shown(room) == [room.questions[1]] and room.current == 1
    assert f"Question 2 of {n}." in room.questions[1].prompt.value and not room.previous_button.disabled
    room.previous_button.click()
    assert _shown(room) == [room.questions[0]]
    room.show_question(n + 5)  # past the end: the last one
    assert _shown(room) == [room.questions[-1]] and room.next_button.disabled


def test_classroom_reveal_then_next_keeps_each_questions_state():
    room = classroom("03", show=False)
    first = room.questions[0]
    first.reveal_button.click()
    revealed = first.feedback.value
    assert "Answer: " in revealed
    room.next_button.click()
    assert room.questions[1].feedback.value == ""
    room.previous_button.click()
    assert room.questions[0].feedback.value == revealed


def test_a_learners_quick_check_still_shows_every_question():
    quiz = quick_check("03")
    assert quiz.next_button is None
    assert _shown(quiz) == quiz.questions
