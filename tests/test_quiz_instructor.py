"""The instructor's side (mha_classroom/quiz/instructor.py): the room on exercises, the lesson plans, the panel's clock.

The room's counts come from the real poll service on a loopback port with a stand-in for
the hub's auth (tests/poll_server.py); the real hub drives it in tests/hub/test_hub_exercises.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from poll_server import as_learner, poll_url, store  # noqa: F401 (poll_url, store: fixtures)

from mha_classroom.quiz import instructor, poll
from mha_classroom.quiz.bank import default_bank

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "instructor_guide.md"


# --------------------------------------------------------------------------- the guide's plans are the data


def guide_plans() -> dict:
    """{plan id: [[(minutes, notebook or None, what), ...] per session]} read from the guide's tables."""
    text = GUIDE.read_text(encoding="utf-8")
    found = {}
    for m in re.finditer(r"^### Plan (\w): .*$", text, re.MULTILINE):
        rest = text[m.end():]
        following = re.search(r"^#{2,3} ", rest, re.MULTILINE)
        block = rest[: following.start()] if following else rest
        sessions = []
        for table in re.split(r"\n\s*\n(?=\*\*|\|)", block):
            rows = re.findall(r"^\| (\d+) \| ([^|]+) \| ([^|]+) \|$", table, re.MULTILINE)
            if rows:
                sessions.append([(int(n), None if nb.strip() == "-" else nb.strip(), what.strip()) for n, nb, what in rows])
        found[m.group(1)] = sessions
    return found


def test_the_lesson_plans_data_is_the_guides_tables():
    data = instructor.load_plans()
    from_guide = guide_plans()
    assert from_guide and set(data) == set(from_guide) == {"A", "B"}
    for plan, sessions in from_guide.items():
        stored = [[(p["minutes"], p["notebook"], p["what"]) for p in s["parts"]] for s in data[plan]["sessions"]]
        assert stored == sessions, plan


def test_each_plans_session_adds_up_to_its_length():
    assert [sum(p["minutes"] for p in instructor.plan_parts("A"))] == [50]
    assert [sum(p["minutes"] for p in instructor.plan_parts("B", s)) for s in (1, 2)] == [90, 90]


def test_a_part_knows_its_quick_checks_and_its_notebooks_exercises():
    parts = instructor.plan_parts("A")
    assert parts[-1]["questions"] == ("03-what-is-a-head",) and parts[-1]["exercises"] == ("split_heads", "merge_heads")
    assert parts[2]["exercises"] == ("scaled_dot_product_attention",) and parts[2]["questions"] == ()
    bank_ids = {q.id for q in default_bank().all_questions()}
    for plan, session in (("A", 1), ("B", 1), ("B", 2)):
        for part in instructor.plan_parts(plan, session):
            assert set(part["questions"]) <= bank_ids


@pytest.mark.parametrize("plan, session, message", [
    ("C", 1, "plan='C' is not a lesson plan; valid plans are 'A', 'B'"),
    ("A", 2, "session=2: plan A has sessions 1 to 1"),
    ("B", 0, "session=0: plan B has sessions 1 to 2"),
])
def test_a_plan_or_session_that_does_not_exist_is_refused_naming_the_valid_ones(plan, session, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        instructor.plan_parts(plan, session)


@pytest.mark.parametrize("what, message", [
    ("05", "what='05' is neither an exercise nor a notebook with exercises; valid are scaled_dot_product_attention"),
    ("split_head", "what='split_head' is neither"),
    ([], "names no exercise"),
])
def test_what_names_no_exercise_is_refused_naming_the_valid_ones(what, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        instructor.exercises_for(what)


# --------------------------------------------------------------------------- the clock


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_the_clock_keeps_minutes_per_part_from_start_and_next():
    t = FakeClock()
    clock = instructor.LessonClock(instructor.plan_parts("A"), clock=t)
    assert clock.current is None and clock.minutes() == [0.0] * 7
    clock.start()
    t.t += 180  # 3 minutes on 00
    clock.next()
    t.t += 90  # 1.5 minutes on 01 so far
    assert clock.current == 1 and clock.minutes()[:3] == [3.0, 1.5, 0.0]
    t.t += 30
    assert clock.minutes()[1] == 2.0  # the running part's minutes grow without a click
    text = clock.text()
    assert text.splitlines()[1].startswith(">  2.0 of  7 min  01")
    assert text.splitlines()[-1] == "   5.0 of 50 min in all"


def test_a_part_over_its_minutes_is_marked_and_the_plan_ends_after_the_last_next():
    t = FakeClock()
    clock = instructor.LessonClock(instructor.plan_parts("A"), clock=t)
    clock.start()
    t.t += 4 * 60
    assert clock.text().splitlines()[0].endswith("(over)")
    for _ in range(7):
        clock.next()
    frozen = clock.minutes()
    t.t += 600
    assert clock.current == 7 and clock.minutes() == frozen  # nothing runs after the plan is over


# --------------------------------------------------------------------------- the room, off and on the hub


def test_off_the_hub_the_views_say_so_in_a_sentence(monkeypatch):
    monkeypatch.delenv(poll.URL_VAR, raising=False)
    view = instructor.room_view("03", show=False)
    assert view.results is None and instructor.NOT_ON_HUB in view.output.value.replace("&#x27;", "'")
    p = instructor.panel("A", show=False)
    p.start_button.click()
    assert "only on the course hub" in p.room_text.value
    assert "&gt;  0.0 of  3 min  00" in p.plan_text.value


def test_the_instructor_sees_the_room_on_a_notebooks_exercises_and_refresh_redraws(poll_url, monkeypatch, store):
    store.record_verdict("ada", "split_heads", "passed")
    store.record_verdict("bob", "split_heads", "mistake", "reshape_without_transpose")
    store.record_verdict("cy", "merge_heads", "not_attempted")
    as_learner(monkeypatch, poll_url, "teacher")
    view = instructor.room_view("03", show=False)
    split = view.results["split_heads"]
    assert (split["passed"], split["mistakes"], split["not_tried"], split["present"]) == (1, {"reshape_without_transpose": 1}, 1, 3)
    text = instructor.room_text(view.results)
    assert "split_heads (3 learners seen in the last 10 minutes):\n  passed: 1\n  mistake: reshape_without_transpose: 1" in text
    assert "merge_heads (3 learners seen in the last 10 minutes):\n  passed: 0" in text and "not tried yet: 3" in text
    store.record_verdict("cy", "split_heads", "mistake", "reshape_without_transpose")
    view.refresh_button.click()
    assert view.results["split_heads"]["mistakes"] == {"reshape_without_transpose": 2}
    assert "<td>mistake: reshape_without_transpose</td><td style='text-align:right'>2</td>" in view.output.value


def test_a_learners_account_gets_the_sentence_not_the_counts(poll_url, monkeypatch, store):
    store.record_verdict("ada", "split_heads", "passed")
    as_learner(monkeypatch, poll_url, "learner-ada")
    view = instructor.room_view("split_heads", show=False)
    assert view.results == {"split_heads": None} and "hub role instructor" in view.output.value


def test_the_panel_shows_the_room_for_the_current_parts_question_and_exercises(poll_url, monkeypatch, store):
    from mha_classroom.quiz.grading import option_labels, option_order

    question = next(q for q in default_bank().all_questions() if q.id == "03-what-is-a-head")
    right = question.correct_indices[0]
    store.record("ada", question.id, [str(right)])
    store.record_verdict("bob", "split_heads", "mistake", "reshape_without_transpose")
    as_learner(monkeypatch, poll_url, "teacher")
    t = FakeClock()
    p = instructor.Panel("A", clock=t)
    p.start_button.click()
    for _ in range(6):  # to the last part: the classroom quick check of 03
        t.t += 60
        p.next_button.click()
    letter = option_labels(option_order(question))[right].rstrip(")")
    room = p.room_text.value
    assert f"03-what-is-a-head (1 learners answered): " in room and f"{letter}: 1" in room
    assert "mistake: reshape_without_transpose: 1" in room
    assert "&gt;  0.0 of  3 min  03" in p.plan_text.value


def test_the_room_html_shows_a_hostile_polls_reply_as_text():
    """Issue 37: a fake poll's "present": "<img src=x onerror=...>" ran in the instructor's JupyterLab."""
    payload = "<img src=x onerror=alert(1)>"
    page = instructor.room_html({
        "split_heads": {"window_s": payload, "present": payload, "passed": payload, "mistakes": {payload: payload},
                        "other": 1.0, "not_tried": True},
        payload: None,
        "merge_heads": payload,
    })
    assert "<img" not in page and "<script" not in page, page
    assert "&lt;img" in page  # the names are shown, escaped
    assert ">?</td>" in page and ">1</td>" in page  # counts coerced to whole numbers or "?"
