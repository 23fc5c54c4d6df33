"""Quick checks in a notebook: one call shows a set's questions as ipywidgets.

    from mha_core.quiz import quick_check
    quick_check("03")                    # records your answers in the progress file
    quick_check("03", classroom=True)    # for a room: records nothing, has "Reveal answer"
                                         # (classroom behaviour: QuickCheck._classroom_check)
    show_progress()                      # the review's table of every set, with a reset button

What ``quick_check`` returns (a ``QuickCheck``), for tests and the browser test:

    .set_id, .classroom, .store (None in classroom mode)
    .questions        list of QuestionView, in the order shown
    .score            HTML: this set's score and the course score   (CSS class mha-quiz-score)
    .note             HTML: a note when progress cannot be saved, when the
                      file is busy, or why a broken set cannot be shown (mha-quiz-note)
    .box              the VBox holding everything                   (mha-quiz)

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
import re
import threading
import time

import ipywidgets as widgets

from .bank import (
    LETTERS,
    REVIEW_SET_ID,
    Bank,
    BankError,
    Question,
    Verdict,
    default_bank,
    format_number,
    grade_choice,
    grade_numeric,
    normalise_set_id,
    option_labels,
    option_order,
    parse_number,
    review_through,
)
from .._display import in_ipython
from . import poll
from .progress import ProgressStore, course_score, default_store, progress_summary, set_result

FONT_PX = 18
KEYS_HINT = "Keyboard: Tab moves to the next option or button, Space chooses an option, Enter presses Check."

_CSS = f"""
<style>
.mha-quiz {{ font-size: {FONT_PX}px; line-height: 1.45; max-width: 60em; }}
.mha-quiz .widget-html-content, .mha-quiz .widget-radio-box label, .mha-quiz .widget-checkbox label,
.mha-quiz .widget-checkbox span, .mha-quiz input, .mha-quiz button {{ font-size: {FONT_PX}px !important; }}
.mha-quiz .widget-html-content {{ line-height: 1.45; white-space: normal; }}
.mha-quiz .widget-radio-box {{ width: 100%; }}
.mha-quiz .widget-radio-box label {{ white-space: normal; height: auto; line-height: 1.45; margin: 0.15em 0;
  display: flex; flex-direction: row-reverse; justify-content: flex-end; align-items: flex-start; }}
.mha-quiz .widget-radio-box input {{ float: none; flex: 0 0 auto; margin-top: 0.35em; }}
.mha-quiz .widget-checkbox {{ height: auto; width: 100%; }}
.mha-quiz .widget-checkbox label {{ white-space: normal; height: auto; line-height: 1.45; }}
.mha-quiz .widget-label {{ font-size: {FONT_PX}px !important; }}
.mha-quiz .jupyter-button {{ flex: 0 0 auto; width: auto; min-width: 6em; height: auto; overflow: visible; margin-right: 0.6em; }}
.mha-quiz .mha-quiz-question {{ border-top: 1px solid #bbb; padding-top: 0.5em; margin-top: 0.5em; }}
.mha-quiz code {{ font-size: 0.95em; background: #f2f2f2; padding: 0 0.2em; }}
</style>
"""

_COLOURS = {"right": "#1a6b35", "wrong": "#8a4b00", "info": "#1b4f72"}


# --------------------------------------------------------------------------- formatting


def _label(text: str) -> str:
    """Option text for a control label, which shows plain text: code marks (`...`) dropped."""
    return text.replace("`", "")


def _rich(text: str) -> str:
    """Plain text to HTML: escaped, with `backticks` as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _message(text: str, kind: str) -> str:
    return f'<div role="status" style="color:{_COLOURS[kind]}">{_rich(text)}</div>'


def _verdict_html(verdict: Verdict) -> str:
    colour = _COLOURS["right" if verdict.correct else "wrong"]
    lines = "".join(f"<div>{_rich(d)}</div>" for d in verdict.details)
    return f'<div role="status"><div style="color:{colour};font-weight:bold">{_rich(verdict.headline)}</div>{lines}</div>'


def _html(value: str = "", css_class: str | None = None) -> widgets.HTML:
    w = widgets.HTML(value=value, style={"font_size": f"{FONT_PX}px"}, layout=widgets.Layout(width="100%"))
    if css_class:
        w.add_class(css_class)
    return w


def _button(description: str, css_class: str, tooltip: str) -> widgets.Button:
    b = widgets.Button(description=description, tooltip=tooltip, style={"font_size": f"{FONT_PX}px"},
                       layout=widgets.Layout(width="auto", height="auto", padding="0.2em 1em"))
    b.add_class(css_class)
    return b


# --------------------------------------------------------------------------- one question


class QuestionView:
    """One question's controls, Check button and feedback (see the module docstring)."""

    def __init__(self, question: Question, number: int, total: int, *, on_check, on_reveal=None, tries: int = 0,
                 on_room=None, solved: bool = False, solved_in: str | None = None, shown_in: str | None = None):
        self.question = question
        # The review repeats questions: where one was first answered correctly, and where it is shown now.
        self.solved_in = solved_in
        self.shown_in = shown_in or question.set_id
        self.order = option_order(question)
        self.tries = tries
        self._solved = solved
        self._on_check = on_check
        self._on_reveal = on_reveal
        labels = option_labels(self.order)
        self.checkboxes: list[widgets.Checkbox] = []
        if question.kind == "single":
            self.options_widget = widgets.RadioButtons(
                options=[(f"{labels[i]} {_label(question.options[i].text)}", i) for i in self.order],
                value=None, layout=widgets.Layout(width="100%"),
            )
            hint = "Choose one answer."
        elif question.kind == "multi":
            self.checkboxes = [
                widgets.Checkbox(value=False, description=f"{labels[i]} {_label(question.options[i].text)}", indent=False,
                                 layout=widgets.Layout(width="100%"))
                for i in self.order
            ]
            for c in self.checkboxes:
                c.add_class("mha-quiz-option")
            self.options_widget = widgets.VBox(self.checkboxes, layout=widgets.Layout(width="100%"))
            hint = "Select all that apply."
        else:
            self.options_widget = widgets.Text(
                value="", placeholder="type a number, e.g. 64", description="Your answer:",
                style={"description_width": "initial", "font_size": f"{FONT_PX}px"},
                layout=widgets.Layout(width="24em"),
            )
            hint = "Type a number" + (f" (in {question.unit})." if question.unit else ".")
        self.options_widget.add_class("mha-quiz-option")
        self.prompt = _html(
            f"<div><b>Question {number} of {total}.</b> {_rich(question.text)}</div>"
            f'<div style="color:#555;font-size:0.9em">{html.escape(hint)}</div>',
            "mha-quiz-text",
        )
        self.check_button = _button("Check", "mha-quiz-check", "Check your answer and show feedback")
        self.check_button.on_click(lambda _: self.check())
        buttons = [self.check_button]
        self.reveal_button = None
        self._wrong_tries = 0
        if on_reveal is not None:
            self.reveal_button = _button("Reveal answer", "mha-quiz-reveal", "Show the correct answer and why")
        else:
            # After a wrong try you may try again as often as you like, or ask for the answer
            # (the terminal quiz offers the same with ?).
            self.reveal_button = _button("Show the answer", "mha-quiz-reveal", "Show the right answer, and why")
            self.reveal_button.layout.display = "none"
        if self.reveal_button is not None:
            self.reveal_button.on_click(lambda _: self.reveal())
            buttons.append(self.reveal_button)
        self.room_button = None
        if on_room is not None:  # on the course hub, instructor's classroom view: the room's answers
            self.room_button = _button("Room's answers", "mha-quiz-room", "How the room answered (live poll)")
            self.room_button.on_click(lambda _: setattr(self.feedback, "value", on_room(self)))
            buttons.append(self.room_button)
        self.tries_label = _html("", "mha-quiz-tries")
        self.feedback = _html("", "mha-quiz-feedback")
        self._show_tries()
        self.box = widgets.VBox(
            [self.prompt, self.options_widget, widgets.HBox(buttons + [self.tries_label], layout=widgets.Layout(align_items="center")), self.feedback],
            layout=widgets.Layout(width="100%"),
        )
        self.box.add_class("mha-quiz-question")

    # -- reading and setting the controls

    def chosen(self):
        """The current answer: data indices (single, multi), a float (numeric), or None if nothing usable."""
        kind = self.question.kind
        if kind == "single":
            return None if self.options_widget.value is None else [self.options_widget.value]
        if kind == "multi":
            picked = [i for i, c in zip(self.order, self.checkboxes) if c.value]
            return picked or None
        return parse_number(self.options_widget.value)

    def choose(self, answer) -> None:
        """Set the controls as a learner would: "b", ["a", "c"], "a,c", or a number / its text."""
        kind = self.question.kind
        if kind == "numeric":
            self.options_widget.value = str(answer)
            return
        valid = LETTERS[: len(self.order)]
        if not isinstance(answer, (str, list, tuple)) or not all(isinstance(a, str) for a in answer):
            count = "one letter" if kind == "single" else "letters"
            raise TypeError(f"answer={answer!r} is not valid for {self.question.id}; give {count} from a to {valid[-1]}, "
                            f"as a string such as 'b' or 'a,c'")
        letters = [a.strip().lower() for a in (answer.split(",") if isinstance(answer, str) else answer)]
        if not letters or any(len(a) != 1 or a not in valid for a in letters) or (kind == "single" and len(letters) != 1):
            count = "one letter" if kind == "single" else "letters"
            raise ValueError(f"answer={answer!r} is not valid for {self.question.id}; give {count} from a to {valid[-1]}")
        positions = [valid.index(a) for a in letters]
        if kind == "single":
            self.options_widget.value = self.order[positions[0]]
        else:
            for pos, box in enumerate(self.checkboxes):
                box.value = pos in positions

    def answer_text(self) -> str:
        """The current answer as the learner sees it ('b', 'a,c', '64'), for the record."""
        if self.question.kind == "numeric":
            return self.options_widget.value.strip()
        chosen = self.chosen() or []
        return ",".join(LETTERS[self.order.index(i)] for i in sorted(chosen, key=self.order.index))

    # -- the buttons

    def check(self) -> Verdict | None:
        """Grade the current answer, show its feedback, count the try. None if nothing was chosen."""
        answer = self.chosen()
        if answer is None:
            if self.question.kind == "numeric":
                typed = self.options_widget.value.strip()
                text = (f"'{typed}' is not a number. Type digits, for example 64 (commas are fine)."
                        if typed else "Type a number first, then press Check.")
            else:
                text = "Choose an option first, then press Check."
            self.feedback.value = _message(text, "info")
            return None
        if self.question.kind == "numeric":
            verdict = grade_numeric(self.question, answer)
        else:
            # Select-all: the first wrong try gets feedback on what was ticked; later ones name what was missed.
            verdict = grade_choice(self.question, answer, self.order, show_missed=self._wrong_tries >= 1)
        if not verdict.correct:
            self._wrong_tries += 1
            if self.reveal_button is not None:
                self.reveal_button.layout.display = None
        self._solved = self._solved or verdict.correct
        self.tries = self._on_check(self, verdict)
        self.feedback.value = _verdict_html(verdict)
        self._show_tries()
        return verdict

    def reveal(self) -> str:
        """Show the correct answer with its explanation (classroom mode, or asked for after a wrong try)."""
        q = self.question
        if q.kind == "numeric":
            lines = [f"Answer: {q.answer_text()}.", q.feedback, q.explanation]
            others = [f"{format_number(m.value)}: {m.feedback}" for m in q.misconceptions]
        else:
            labels = option_labels(self.order)
            right = [i for i in self.order if q.options[i].correct]
            lines = [f"Answer: {', '.join(labels[i] + ' ' + q.options[i].text for i in right)}", q.explanation]
            lines += [f"{labels[i]} {q.options[i].feedback}" for i in right]
            others = [f"{labels[i]} {q.options[i].feedback}" for i in self.order if not q.options[i].correct]
        text = "\n".join(lines + (["Why not the others:"] + others if others else []))
        body = "".join(f"<div>{_rich(line)}</div>" for line in lines)
        if others:
            body += '<div style="margin-top:0.4em"><i>Why not the others:</i></div>' + "".join(f"<div>{_rich(o)}</div>" for o in others)
        self.feedback.value = f'<div role="status" style="color:{_COLOURS["info"]}">{body}</div>'
        if self._on_reveal is not None:
            self._on_reveal(self)
        return text

    def _show_tries(self) -> None:
        done = ", answered correctly" if self._solved else ""
        if self._solved and self.solved_in and self.solved_in != self.shown_in:
            where = "the practice set" if self.solved_in == "00" else f"notebook {self.solved_in}"
            done += f" in {where}, so it counts here already"
        self.tries_label.value = f'<span style="color:#555">Tries so far: {self.tries}{done}</span>'


# --------------------------------------------------------------------------- a set


class _Displayable:
    """Shows ``self.box``; skips the second display IPython makes of a cell's last value."""

    _displayed_in: int | None = None

    def _ipython_display_(self):
        from IPython.display import display

        # quick_check() displays the quiz itself; when its result is also the cell's last
        # value, IPython would show it a second time in the same cell. Skip that one.
        count = _execution_count()
        if count is not None and count == self._displayed_in:
            self._displayed_in = None
            return
        self._displayed_in = count
        display(self.box)


class QuickCheck(_Displayable):
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
        self.note = _html("", "mha-quiz-note")
        self.score = _html("", "mha-quiz-score")
        try:
            title = self.bank.get_set(self.set_id).title
            questions = self.bank.questions(self.set_id, through=through)
            self.through = review_through(through) if through is not None else None
        except (BankError, ValueError) as exc:
            # A broken file costs only its own set: say which file and line, show nothing else.
            title, questions = "cannot be shown", ()
            self.note.value = _message(str(exc), "wrong")
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
        self.header = _html(
            f'{_CSS}<div style="font-size:1.15em"><b>Quick check {self.set_id}: {html.escape(title)}</b>{mode}</div>'
            f"{self._review_note()}"
            f'<div style="color:#555;font-size:0.9em">{KEYS_HINT}</div>',
            "mha-quiz-title",
        )
        self._update_score(stats)
        self.box = widgets.VBox([self.header, self.note] + [v.box for v in self.questions] + [self.score], layout=widgets.Layout(width="100%"))
        self.box.add_class("mha-quiz")

    def _review_note(self) -> str:
        """The review repeats questions of notebooks 01-09: say that earlier answers count here."""
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
        return f'<div style="color:#555;font-size:0.9em" class="mha-quiz-review-note">{html.escape(text)}</div>'

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
            self.note.value = "".join(_message(n, "wrong") for n in notes)
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
        return _message("The room's answers are shown only to an instructor on the course hub.", "info")
    counts = result["counts"]
    if view.order:
        labels = option_labels(view.order)
        parts = [f"{labels[i].rstrip(')')}: {counts.get(str(i), 0)}" for i in view.order]
    else:  # a numeric question: each number given
        parts = [f"{value}: {n}" for value, n in sorted(counts.items())]
    minutes = round(result["window_s"] / 60)
    return _message(f"The room ({result['answered']} learners, last {minutes} minutes): " + ", ".join(parts), "info")


def _execution_count() -> int | None:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return getattr(shell, "execution_count", None) if shell is not None else None


def quick_check(set_id, *, classroom: bool = False, show: bool | None = None, store: ProgressStore | None = None,
                through=None) -> QuickCheck:
    """Show a notebook's quick check and return it. ``set_id``: "00" to "10" (3 works too).

    ``classroom=True`` records nothing and adds "Reveal answer" to every question.
    ``through`` (the review, 10, only): the last notebook your class took, say "05";
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


# --------------------------------------------------------------------------- progress table


class ProgressView(_Displayable):
    """The review's table of every set, and a reset button that asks first.

    Attributes: .table (HTML, mha-quiz-progress), .reset_button, .confirm_button,
    .cancel_button (shown only while asking), .message (HTML), .box, .store.
    """

    def __init__(self, store: ProgressStore | None = None, bank: Bank | None = None):
        self.store = store or default_store()
        self.bank = bank or default_bank()
        self.table = _html("", "mha-quiz-progress")
        self.message = _html("", "mha-quiz-note")
        self.reset_button = _button("Reset progress…", "mha-quiz-reset", "Erase your recorded answers (asks first)")
        self.confirm_button = _button("Yes, erase my answers", "mha-quiz-reset-confirm", "Erase every recorded answer")
        self.confirm_button.button_style = "danger"
        self.cancel_button = _button("Cancel", "mha-quiz-reset-cancel", "Keep your answers")
        self.confirm_button.layout.display = "none"
        self.cancel_button.layout.display = "none"
        self.reset_button.on_click(lambda _: self.ask_reset())
        self.confirm_button.on_click(lambda _: self.confirm_reset())
        self.cancel_button.on_click(lambda _: self.cancel_reset())
        self.box = widgets.VBox([_html(_CSS), self.table, widgets.HBox([self.reset_button, self.confirm_button, self.cancel_button]), self.message])
        self.box.add_class("mha-quiz")
        self.refresh()

    def refresh(self) -> None:
        summary = progress_summary(self.store, self.bank)
        self.table.value = progress_table_html(summary)
        if self.store.note:
            self.message.value = _message(self.store.note, "wrong")

    def ask_reset(self) -> None:
        n = self.store.count()
        self.message.value = _message(f"This erases all {n} recorded answers. Are you sure?", "wrong")
        self.confirm_button.layout.display = None
        self.cancel_button.layout.display = None

    def confirm_reset(self) -> int:
        erased = self.store.reset()
        self._hide_confirm()
        self.refresh()
        self.message.value = _message(f"Erased {erased} recorded answers.", "info")
        return erased

    def cancel_reset(self) -> None:
        self._hide_confirm()
        self.message.value = _message("Nothing was erased.", "info")

    def _hide_confirm(self) -> None:
        self.confirm_button.layout.display = "none"
        self.cancel_button.layout.display = "none"


def progress_table_html(summary) -> str:
    """The summary as an HTML table: one row per set, then the course total; the rows add up to it."""
    head = ("Notebook", "Topic", "Questions", "Tried", "Right at least once", "Right on the latest try", "Tries", "Last answered")
    rows = []
    repeated = 0
    for key, r in summary.items():
        when = time.strftime("%Y-%m-%d %H:%M", time.localtime(r.last_time)) if r.last_time else "not yet"
        cells = (r.set_id if key != "course" else "all", r.title, r.questions, r.attempted, r.best, r.last, r.tries, when)
        if key != "course":
            repeated += r.repeated
        weight = "font-weight:bold;border-top:2px solid #333;" if key == "course" else ""
        rows.append("<tr>" + "".join(f'<td style="{weight}padding:0.2em 0.5em">{html.escape(str(c))}</td>' for c in cells) + "</tr>")
    header = "".join(f'<th style="text-align:left;vertical-align:bottom;padding:0.2em 0.5em">{h}</th>' for h in head)
    foot = ""
    if repeated:
        foot = (f'<div class="mha-quiz-progress-note" style="color:#555;font-size:0.9em;margin-top:0.3em">'
                f"Each question counts once, in the notebook it belongs to, so the rows add up to the total. "
                f"The review's quick check also repeats {repeated} questions of notebooks 01-09: "
                f"an answer to one of them counts in that notebook's row.</div>")
    # width:100% lets long topics wrap inside the output area (about 848 px at 1280 x 800 with the
    # file browser open) instead of running past it.
    return (f'<table style="font-size:{FONT_PX}px;border-collapse:collapse;width:100%">'
            f"<caption style=\"text-align:left;font-weight:bold\">Your quick-check progress</caption>"
            f"<thead><tr>{header}</tr></thead><tbody>{''.join(rows)}</tbody></table>{foot}")


def show_progress(*, show: bool | None = None, store: ProgressStore | None = None) -> ProgressView:
    """Display the progress table for every notebook (for the review notebook) and return it."""
    view = ProgressView(store=store)
    if show if show is not None else in_ipython():
        from IPython.display import display

        display(view)
    return view
