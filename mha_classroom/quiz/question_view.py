"""One quick-check question as ipywidgets: its options, Check, the answer on request, feedback, tries.

See ``mha_classroom.quiz.widget``'s docstring for the attributes tests and the browser test read.
"""

from __future__ import annotations

import html

import ipywidgets as widgets

from ._widget_parts import COLOURS, button, font_px, html_widget, message, plain_label, rich, verdict_html
from .bank import LETTERS, Question
from .grading import Verdict, grade_choice, grade_numeric, option_labels, option_order
from .numbers import format_number, parse_number


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
                options=[(f"{labels[i]} {plain_label(question.options[i].text)}", i) for i in self.order],
                value=None, layout=widgets.Layout(width="100%"),
            )
            hint = "Choose one answer."
        elif question.kind == "multi":
            self.checkboxes = [
                widgets.Checkbox(value=False, description=f"{labels[i]} {plain_label(question.options[i].text)}", indent=False,
                                 layout=widgets.Layout(width="100%"))
                for i in self.order
            ]
            for c in self.checkboxes:
                c.add_class("mha-quiz-option")
            self.options_widget = widgets.VBox(self.checkboxes, layout=widgets.Layout(width="100%"))
            hint = "Select all that apply."
        else:
            self.options_widget = widgets.Text(
                value="", placeholder="type the number in digits", description="Your answer:",
                style={"description_width": "initial", "font_size": f"{font_px()}px"},
                layout=widgets.Layout(width="24em"),
            )
            hint = "Type a number" + (f" (in {question.unit})." if question.unit else ".")
        self.options_widget.add_class("mha-quiz-option")
        self.prompt = html_widget(
            f"<div><b>Question {number} of {total}.</b> {rich(question.text)}</div>"
            f'<div class="mha-quiz-hint">{html.escape(hint)}</div>',
            "mha-quiz-text",
        )
        self.check_button = button("Check", "mha-quiz-check", "Check your answer and show feedback")
        self.check_button.on_click(lambda _: self.check())
        buttons = [self.check_button]
        self.reveal_button = None
        self._wrong_tries = 0
        if on_reveal is not None:
            self.reveal_button = button("Reveal answer", "mha-quiz-reveal", "Show the correct answer and why")
        else:
            # After a wrong try you may try again as often as you like, or ask for the answer
            # (the terminal quiz offers the same with ?).
            self.reveal_button = button("Show the answer", "mha-quiz-reveal", "Show the right answer, and why")
            self.reveal_button.layout.display = "none"
        if self.reveal_button is not None:
            self.reveal_button.on_click(lambda _: self.reveal())
            buttons.append(self.reveal_button)
        self.room_button = None
        if on_room is not None:  # on the course hub, instructor's classroom view: the room's answers
            self.room_button = button("Room's answers", "mha-quiz-room", "How the room answered (live poll)")
            self.room_button.on_click(lambda _: setattr(self.feedback, "value", on_room(self)))
            buttons.append(self.room_button)
        self.tries_label = html_widget("", "mha-quiz-tries")
        self.feedback = html_widget("", "mha-quiz-feedback")
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
                text = (f"'{typed}' is not a number. Type it in digits (commas are fine)."
                        if typed else "Type a number first, then press Check.")
            else:
                text = "Choose an option first, then press Check."
            self.feedback.value = message(text, "info")
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
        self.feedback.value = verdict_html(verdict)
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
        body = "".join(f"<div>{rich(line)}</div>" for line in lines)
        if others:
            body += '<div style="margin-top:0.4em"><i>Why not the others:</i></div>' + "".join(f"<div>{rich(o)}</div>" for o in others)
        self.feedback.value = f'<div role="status" style="color:{COLOURS["info"]}">{body}</div>'
        if self._on_reveal is not None:
            self._on_reveal(self)
        return text

    def _show_tries(self) -> None:
        done = ", answered correctly" if self._solved else ""
        if self._solved and self.solved_in and self.solved_in != self.shown_in:
            where = "the practice set" if self.solved_in == "00" else f"notebook {self.solved_in}"
            done += f" in {where}, so it counts here already"
        self.tries_label.value = f'<span style="color:#555">Tries so far: {self.tries}{done}</span>'
