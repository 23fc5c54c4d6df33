"""Quick checks in a notebook: one call shows a set's questions as ipywidgets.

    from mha_classroom.quiz import quick_check
    quick_check("03")                    # records your answers in the progress file
    quick_check("03", classroom=True)    # for a room: one question at a time, records nothing,
                                         # has "Reveal answer" (QuickCheck._classroom_check)
    show_progress()                      # the review's table of every set, with a reset button

What ``quick_check`` returns (a ``QuickCheck``), for tests and the browser test:

    .set_id, .classroom, .store (None in classroom mode)
    .questions        list of QuestionView, in the order shown
    .score            HTML: this set's score and the course score   (CSS class mha-quiz-score)
    .note             HTML: a note when progress cannot be saved, when the
                      file is busy, or why a broken set cannot be shown (mha-quiz-note)
    .box              the VBox holding everything                   (mha-quiz)
    classroom mode, one question at a time:
    .current          index of the question shown (0-based); .show_question(i) moves there
    .previous_button, .next_button   Buttons "Previous question" / "Next question"
                      (mha-quiz-previous, mha-quiz-next), above the question shown

    QuestionView:
    .question         the bank's Question
    .order            data indices of the options, in display order (letters a, b, c ...)
    .options_widget   RadioButtons (single; value = data index of the option),
                      VBox of Checkbox (multi; .checkboxes in display order),
                      Text (numeric; type the number)                (mha-quiz-option)
    .checkboxes       the Checkbox widgets (multi only)              (mha-quiz-option each)
    .check_button     Button "Check"                                 (mha-quiz-check)
    .reveal_button    Button "Reveal answer" in classroom mode; in normal mode "Show the answer",
                      shown after a wrong try (the terminal's ?)      (mha-quiz-reveal)
    .feedback         HTML: feedback on the last check or reveal     (mha-quiz-feedback)
    .tries_label      HTML: tries so far                             (mha-quiz-tries)
    .tries            int, the same number
    .choose(answer)   set the controls: "b", ["a", "c"] or "a,c", or a number
    .check() / .reveal()   what the buttons do (they return the Verdict or the text shown)

All controls are native ipywidgets. In JupyterLab, Tab moves from option to option
(ipywidgets' radio buttons are not one arrow-key group, and JupyterLab keeps the
arrow keys for moving between cells), Space chooses, Enter presses Check. Text is
18 px, readable on a projector.
"""

from __future__ import annotations

import html
import threading

import ipywidgets as widgets

from .bank import REVIEW_SET_ID, Bank, BankError, default_bank, normalise_set_id, review_through
from .grading import Verdict, option_labels
from .numbers import format_number
from .._display import in_ipython
from . import poll
from ._widget_parts import KEYS_HINT, Displayable, css, button, html_widget, message
from .progress import ProgressStore, default_store
from .summary import course_score, set_result
from .progress_view import ProgressView, progress_table_html, show_progress
from .question_view import QuestionView

__all__ = ["ProgressView", "QuestionView", "QuickCheck", "classroom", "progress_table_html", "quick_check", "show_progress"]


# --------------------------------------------------------------------------- a set


class QuickCheck(Displayable):
    """A set's questions, with a running score; see the module docstring for its attributes.

    Classroom mode (``classroom=True``) lives in ``_classroom_check`` (what a Check does in
    a room: nothing recorded, a count for this session) and ``_classroom_score``; the rest
    of the class is the same in both modes.
    """

    def __init__(self, set_id: str, *, classroom: bool = False, store: ProgressStore | None = None, bank: Bank | None = None,
                 through=None):
        self.bank = bank or default_bank()
        self.through = through
        self.set_id = normalise_set_id(set_id, tuple(self.bank.sets) + tuple(self.bank.problems))
        self.classroom = classroom
        # Classroom mode touches no file at all: nothing recorded, a fixed option order.
        self.store = None if classroom else (store or default_store())
        self._session_correct: set[str] = set()
        self.note = html_widget("", "mha-quiz-note")
        self.score = html_widget("", "mha-quiz-score")
        try:
            title = self.bank.get_set(self.set_id).title
            questions = self.bank.questions(self.set_id, through=through)
            self.through = review_through(through) if through is not None else None
        except (BankError, ValueError) as exc:
            # A broken file costs only its own set: say which file and line, show nothing else.
            title, questions = "cannot be shown", ()
            self.note.value = message(str(exc), "wrong")
        self._bank_note = self.bank.notes.get(self.set_id, "")
        stats = {} if classroom else self.store.question_stats()
        self.questions = [
            QuestionView(
                q, n, len(questions), on_check=self._record,
                on_reveal=(lambda view: None) if classroom else None,
                on_room=_room_answers if classroom and poll.available() else None,
                tries=stats[q.id].tries if q.id in stats else 0,
                solved=stats[q.id].ever_correct if q.id in stats else False,
                solved_in=stats[q.id].first_correct_set if q.id in stats else None,
                shown_in=self.set_id,
            )
            for n, q in enumerate(questions, start=1)
        ]
        mode = " (classroom mode: nothing is recorded)" if classroom else ""
        self._heading = (f'<div style="font-size:1.15em"><b>Quick check {self.set_id}: {html.escape(title)}</b>{mode}</div>'
                         f"{self._review_note()}"
                         f'<div class="mha-quiz-hint">{KEYS_HINT}</div>')
        self.header = html_widget(css() + self._heading, "mha-quiz-title")
        self._update_score(stats)
        self.current = 0
        self.previous_button = self.next_button = None
        if classroom and len(self.questions) > 1:
            # A room takes one question at a time: vote, look at the room's answers, reveal, next.
            self.previous_button = button("Previous question", "mha-quiz-previous", "Show the question before this one")
            self.next_button = button("Next question", "mha-quiz-next", "Show the next question")
            self.previous_button.on_click(lambda _: self.show_question(self.current - 1))
            self.next_button.on_click(lambda _: self.show_question(self.current + 1))
            # The question itself says "Question 2 of 5", right below the buttons.
            self._nav = widgets.HBox([self.previous_button, self.next_button], layout=widgets.Layout(align_items="center"))
        self.box = widgets.VBox(layout=widgets.Layout(width="100%"))
        self.box.add_class("mha-quiz")
        self.show_question(0)

    def restyle(self, theme) -> None:
        """The quick check's text in ``theme``'s sizes: its style rides in the header."""
        self.header.value = css(theme) + self._heading

    def show_question(self, index: int) -> None:
        """Classroom mode: show question ``index`` (0-based) alone; elsewhere every question is shown."""
        if self.next_button is None:
            self.box.children = [self.header, self.note] + [v.box for v in self.questions] + [self.score]
            return
        self.current = max(0, min(int(index), len(self.questions) - 1))
        self.previous_button.disabled = self.current == 0
        self.next_button.disabled = self.current == len(self.questions) - 1
        self.box.children = [self.header, self.note, self._nav, self.questions[self.current].box, self.score]

    def _review_note(self) -> str:
        """The review repeats questions of notebooks 01-10: say that earlier answers count here."""
        if self.set_id != REVIEW_SET_ID or self.set_id not in self.bank.sets:
            return ""
        repeated = sum(v.question.set_id != REVIEW_SET_ID for v in self.questions) if self.questions else 0
        if not repeated:
            return ""
        last = self.through or max(q.set_id for q in self.bank.questions(self.set_id) if q.set_id != REVIEW_SET_ID)
        text = (f"The first {repeated} questions repeat one question from each of notebooks 01 to {last}. "
                "If you answered one correctly there, it shows here as answered correctly already; "
                "answer it again to check that you still know it.")
        if self.classroom:
            text = f"The first {repeated} questions repeat one question from each of notebooks 01 to {last}."
        return f'<div class="mha-quiz-hint mha-quiz-review-note">{html.escape(text)}</div>'

    def _record(self, view: QuestionView, verdict: Verdict) -> int:
        """Called by a Check: record the try (classroom mode: see _classroom_check), refresh the score; returns tries so far."""
        if self.classroom:
            return self._classroom_check(view, verdict)
        self.store.record(view.question.id, self.set_id, verdict.correct, view.answer_text(), source="notebook")
        if poll.available():  # on the course hub: the class poll, sent without making Check wait
            choice = view.chosen() if view.question.kind != "numeric" else [format_number(view.chosen())]
            threading.Thread(target=poll.send, args=(view.question.id, choice), daemon=True).start()
        stats = self.store.question_stats()
        self._update_score(stats)
        return stats[view.question.id].tries if view.question.id in stats else view.tries + 1

    # -- classroom mode, in one place

    def _classroom_check(self, view: QuestionView, verdict: Verdict) -> int:
        """What a Check does in classroom mode: nothing is recorded; the session's count goes up."""
        if verdict.correct:
            self._session_correct.add(view.question.id)
        self._classroom_score()
        return view.tries + 1

    def _classroom_score(self) -> None:
        n = len(self.questions)
        self.score.value = f"<div>Classroom mode: nothing is recorded. Answered correctly here: {len(self._session_correct)} of {n}.</div>"

    def _update_score(self, stats) -> None:
        if self.questions:  # with no questions, the note says why
            notes = [n for n in (self._bank_note, self.store.note if self.store is not None else None) if n]
            self.note.value = "".join(message(n, "wrong") for n in notes)
        if self.classroom:
            self._classroom_score()
            return
        if not self.questions:
            self.score.value = ""
            return
        result = set_result(self.bank, self.set_id, stats, through=self.through)
        right, total = course_score(self.bank, stats)
        label = {"00": "Practice set", REVIEW_SET_ID: "Review"}.get(self.set_id, f"Notebook {self.set_id}")
        self.score.value = (
            f"<div><b>Score.</b> {label}: {result.best} of {result.questions} questions answered correctly. "
            f"Course: {right} of {total}.</div>"
        )


def _room_answers(view: QuestionView) -> str:
    """The class poll's counts for ``view``'s question, one per option in the order shown, as HTML."""
    result = poll.counts(view.question.id)
    if result is None:
        return message("The room's answers are shown only to an instructor on the course hub.", "info")
    counts = result["counts"]
    if view.order:
        labels = option_labels(view.order)
        parts = [f"{labels[i].rstrip(')')}: {counts.get(str(i), 0)}" for i in view.order]
    else:  # a numeric question: each number given
        parts = [f"{value}: {n}" for value, n in sorted(counts.items())]
    minutes = round(result["window_s"] / 60)
    return message(f"The room ({result['answered']} learners, last {minutes} minutes): " + ", ".join(parts), "info")


def quick_check(set_id, *, classroom: bool = False, show: bool | None = None, store: ProgressStore | None = None,
                through=None) -> QuickCheck:
    """Show a notebook's quick check and return it. ``set_id``: "00" to "11" (3 works too).

    ``classroom=True`` records nothing and adds "Reveal answer" to every question.
    ``through`` (the review, 11, only): the last notebook your class took, say "05";
    the review then repeats questions of notebooks 01 to that one only.
    ``show`` defaults to True inside IPython (a notebook), False elsewhere (tests).
    """
    quiz = QuickCheck(set_id, classroom=classroom, store=store, through=through)
    if show if show is not None else in_ipython():
        from IPython.display import display

        display(quiz)
    return quiz


def classroom(set_id, *, show: bool | None = None, through=None) -> QuickCheck:
    """The instructor's view: the questions, nothing recorded, an answer revealed on demand."""
    return quick_check(set_id, classroom=True, show=show, through=through)
