"""Results from the progress store: one set's standing, the course score, and the review's summary table."""

from __future__ import annotations

from dataclasses import dataclass

from .bank import COURSE_SET_IDS, Bank, default_bank
from .progress import ProgressStore, QuestionStats, default_store


@dataclass(frozen=True)
class SetResult:
    """One set's standing: questions, how many tried, right at least once (best), right on the latest try (last).

    ``repeated``: questions the set shows that belong to other sets (the review's), not counted in
    ``questions`` here so that the rows of the progress table add up to the course.
    """

    set_id: str
    title: str
    questions: int
    attempted: int
    best: int
    last: int
    tries: int
    last_time: float | None
    repeated: int = 0


def _result(set_id: str, title: str, questions, stats: dict[str, QuestionStats], repeated: int = 0) -> SetResult:
    mine = [stats.get(q.id, QuestionStats()) for q in questions]
    times = [s.last_time for s in mine if s.last_time is not None]
    return SetResult(
        set_id=set_id,
        title=title,
        questions=len(mine),
        attempted=sum(s.tries > 0 for s in mine),
        best=sum(s.ever_correct for s in mine),
        last=sum(s.last_correct for s in mine),
        tries=sum(s.tries for s in mine),
        last_time=max(times) if times else None,
        repeated=repeated,
    )


def set_result(bank: Bank, set_id: str, stats: dict[str, QuestionStats], *, through=None) -> SetResult:
    """Every question a set shows (the review: its repeated ones too, ``through`` a notebook), wherever it was answered."""
    return _result(set_id, bank.get_set(set_id).title, bank.questions(set_id, through=through), stats)


def course_score(bank: Bank, stats: dict[str, QuestionStats]) -> tuple[int, int]:
    """(questions answered correctly at least once, questions in the course), practice set left out."""
    questions = bank.course_questions()
    return sum(stats.get(q.id, QuestionStats()).ever_correct for q in questions), len(questions)


def progress_summary(store: ProgressStore | None = None, bank: Bank | None = None) -> dict[str, SetResult]:
    """Per set 01-11, the learner's results on the set's own questions; then ``"course"``, every course question once.

    A question counts in the set it belongs to, wherever it was answered, so the rows add
    up to the course row. The review (11) counts its own questions; its ``repeated`` says
    how many more it shows from notebooks 01-10 (they count in their own rows).
    """
    store = store or default_store()
    bank = bank or default_bank()
    stats = store.question_stats()
    summary = {}
    for set_id in COURSE_SET_IDS:
        if set_id in bank.sets:
            quiz_set = bank.sets[set_id]
            summary[set_id] = _result(set_id, quiz_set.title, quiz_set.questions, stats, repeated=len(quiz_set.include))
    summary["course"] = _result("course", "Whole course", bank.course_questions(), stats)
    return summary


def reset_progress(confirm: bool = False, store: ProgressStore | None = None) -> None:
    """Erase your recorded answers. Without ``confirm=True`` it only says what it would erase.

    It prints what it did and returns nothing, so a notebook cell shows one plain line.
    """
    store = store or default_store()
    n = store.count()
    if not confirm:
        print(f"This would erase {n} recorded answers from {store.path}. To do it, run reset_progress(confirm=True).")
        return
    erased = store.reset()
    print(f"Erased {erased} recorded answers. Your quiz progress starts again from zero.")
