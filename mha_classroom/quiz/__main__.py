"""The quick checks in a terminal: the same questions as the notebooks, one answer each.

    python -m mha_classroom.quiz 03            # notebook 03's questions
    python -m mha_classroom.quiz all           # every notebook's questions (01-11), each once
    python -m mha_classroom.quiz 03 --answers  # the answer key, with explanations, for instructors
    python -m mha_classroom.quiz 03 --no-record
    python -m mha_classroom.quiz 11 --through 05   # the review, for a class that stopped after 05

Answer with a letter (``b``), letters separated by commas for select-all (``a,c``),
or a number (``64``; commas are fine: ``2,362,368``). As in the notebook, a wrong
answer gets its feedback and you may try again as often as you like; ``?`` shows the
answer and goes on. End of input (Ctrl-D) or Ctrl-C
stops the quiz with the score so far; an answer typed before Ctrl-D is graded first.
Answers are recorded in the same progress file as the notebooks unless
``--no-record`` is given.

Exit status: 0 when the quiz ends or input runs out, 130 after Ctrl-C (quietly, even
while starting up), 2 for a bad quiz id or a quiz whose file is broken. This module
never imports ipywidgets or plotly.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import sys
import textwrap

from .bank import LETTERS, REVIEW_SET_ID, SET_IDS, Bank, BankError, Question, default_bank, normalise_set_id, review_through
from .grading import answer_letters, grade_choice, grade_numeric, option_labels, option_order
from .numbers import format_number, parse_number


class _EndOfInput(Exception):
    pass


def _width() -> int:
    return max(40, min(100, shutil.get_terminal_size((88, 24)).columns - 2))


def _wrap(text: str, indent: str = "", subsequent: str | None = None) -> str:
    return textwrap.fill(text, _width(), initial_indent=indent, subsequent_indent=indent if subsequent is None else subsequent)


def _say(text: str = "") -> None:
    print(text, flush=True)


#: Longest answer line read; the rest of a longer line is dropped.
MAX_LINE = 4096
_input_ended = False


def _read_line() -> str | None:
    """One line of input, or None at end of input.

    A line that ends without a newline is what a terminal hands over when Ctrl-D is
    pressed after typing: it is returned (so the answer counts), and the next call ends
    the quiz, so one Ctrl-D leaves. Bytes that are not UTF-8, and NUL bytes, are replaced.
    """
    global _input_ended
    if _input_ended:
        return None
    try:
        fd = sys.stdin.fileno()
        tty = os.isatty(fd)
    except (AttributeError, ValueError, OSError):
        fd, tty = None, False
    if tty:
        data = os.read(fd, MAX_LINE)  # canonical mode: one line, or what was typed before Ctrl-D
    else:
        stream = getattr(sys.stdin, "buffer", None)
        data = stream.readline(MAX_LINE) if stream is not None else sys.stdin.readline(MAX_LINE).encode("utf-8", "replace")
        if len(data) == MAX_LINE and not data.endswith(b"\n"):
            while True:  # drop the rest of an overlong line
                more = stream.readline(MAX_LINE) if stream is not None else b""
                if not more or more.endswith(b"\n"):
                    break
            data += b"\n"
    if not data:
        _input_ended = True
        return None
    if not data.endswith(b"\n"):
        _input_ended = True
    return data.decode("utf-8", "replace").replace("\x00", "").rstrip("\r\n")


def _ask(prompt: str) -> str:
    sys.stdout.write(prompt)
    sys.stdout.flush()
    line = _read_line()
    if line is None:
        raise _EndOfInput
    if not sys.stdin.isatty():
        _say(line)  # piped input is not echoed; show it so the transcript reads well
    elif _input_ended:
        _say()  # the terminal left the cursor after the answer typed before Ctrl-D
    return line


def _describe(bank: Bank) -> str:
    lines = [f"  {s}  {bank.sets[s].title}" if s in bank.sets else f"  {s}  (cannot be shown: its file is broken)"
             for s in SET_IDS if s in bank.sets or s in bank.problems]
    return "\n".join(lines + ["  all every notebook's questions (01-11), each once"])


# --------------------------------------------------------------------------- one question


#: Typed after a wrong try: show the answer and go on (the notebook's "Show answer" button).
SHOW_ANSWER = "?"


def _read_answer(question: Question, order: list[int], *, may_show: bool = False):
    """Ask until the answer has the right form; returns data indices, a number, or SHOW_ANSWER (if ``may_show``)."""
    n = len(order)
    if question.kind == "numeric":
        prompt = "Your answer (a number" + (f", in {question.unit}" if question.unit else "") + "): "
    elif question.kind == "single":
        prompt = f"Your answer (one letter, a-{LETTERS[n - 1]}): "
    else:
        prompt = f"Your answer (all letters that apply, separated by commas, e.g. a,{LETTERS[min(2, n - 1)]}): "
    if may_show:
        prompt = prompt[:-2] + f", or {SHOW_ANSWER} to see the answer): "
    while True:
        line = _ask(prompt).strip().lower()
        if may_show and line == SHOW_ANSWER:
            return SHOW_ANSWER
        if not line:
            if _input_ended:
                raise _EndOfInput
            _say("  Type an answer first (Ctrl-D stops the quiz).")
            continue
        if question.kind == "numeric":
            value = parse_number(line)
            if value is None:
                _say(f"  '{line[:60]}' is not a number. Type it in digits (commas are fine).")
                if _input_ended:
                    raise _EndOfInput
                continue
            return value
        letters = [part for part in line.replace(",", " ").split() if part]
        valid = LETTERS[:n]
        if any(len(part) != 1 or part not in valid for part in letters):
            _say(f"  Please answer with letters from a to {LETTERS[n - 1]}.")
            if _input_ended:
                raise _EndOfInput
            continue
        if question.kind == "single" and len(letters) != 1:
            _say("  This question has one answer: type one letter.")
            if _input_ended:
                raise _EndOfInput
            continue
        return sorted({order[valid.index(part)] for part in letters})


def ask_question(question: Question, number: int, total: int, record=None) -> tuple[bool, str]:
    """Show one question, read its answer, print its feedback. Returns (correct, answer as typed).

    As in the notebook, a wrong answer gets its feedback and you may try again as often
    as you like; typing ? instead shows the answer and goes on (the notebook's "Show
    answer" button). A select-all question's first wrong try gets feedback on what was
    ticked only; later tries also name the right options that were missed.
    ``record(correct, typed)`` is called for every try. ``correct``: answered correctly
    in the end, without asking for the answer.
    """
    order = option_order(question)
    labels = option_labels(order)
    _say()
    _say(f"Question {number} of {total}  [{question.id}]")
    kind_hint = {"single": "", "multi": " (select all that apply)", "numeric": ""}[question.kind]
    _say(_wrap(question.text + kind_hint))
    for i in order:
        _say(_wrap(f"{labels[i]} {question.options[i].text}", "  ", "     "))
    wrong_tries = 0
    typed = ""
    while True:
        try:
            answer = _read_answer(question, order, may_show=wrong_tries > 0)
        except _EndOfInput:
            if not wrong_tries:
                raise
            break  # input ran out after a wrong try: the answer, then the quiz ends
        if answer == SHOW_ANSWER:
            break
        if question.kind == "numeric":
            verdict = grade_numeric(question, answer)
            typed = format_number(answer)
        else:
            verdict = grade_choice(question, answer, order, show_missed=wrong_tries >= 1)
            typed = ",".join(labels[i][0] for i in sorted(answer, key=order.index))
        if record is not None:
            record(verdict.correct, typed)
        _say(_wrap(verdict.headline, "  "))
        for line in verdict.details:
            _say(_wrap(line, "  ", "    "))
        if verdict.correct:
            return True, typed
        wrong_tries += 1
        if _input_ended:
            break
        _say(_wrap(f"Try again, or type {SHOW_ANSWER} to see the answer and go on.", "  "))
    if question.kind == "single":
        (right,) = question.correct_indices
        _say(_wrap(f"The answer: {labels[right]} {question.options[right].text}", "  ", "    "))
    elif question.kind == "numeric":
        _say(_wrap(f"The answer: {question.answer_text()}.", "  ", "    "))
    else:
        key = ",".join(labels[i][0] for i in order if question.options[i].correct)
        _say(_wrap(f"The answer: {key}", "  ", "    "))
    _say(_wrap(f"Why: {question.explanation}", "  ", "    "))
    return False, typed


# --------------------------------------------------------------------------- answer key


def print_answers(bank: Bank, set_ids: list[str], *, through: str | None = None) -> None:
    """The key, with the letters every place shows: every option marked right or wrong, with its feedback."""
    for set_id in set_ids:
        questions = bank.questions(set_id, through=through) if len(set_ids) == 1 else bank.sets[set_id].questions
        _say(f"== Quiz {set_id}: {bank.sets[set_id].title} ({len(questions)} questions) ==")
        for n, q in enumerate(questions, start=1):
            _say()
            _say(_wrap(f"{n}. [{q.id}, {q.kind}] {q.text}"))
            if q.kind == "numeric":
                tol = f" (accepted within ±{q.tolerance:g})" if q.tolerance else ""
                _say(_wrap(f"Answer: {q.answer_text()}{tol}. {q.feedback}", "   "))
                for m in q.misconceptions:
                    _say(_wrap(f"- {format_number(m.value)}: {m.feedback}", "   ", "     "))
            else:
                order = option_order(q)
                labels = option_labels(order)
                for i in order:
                    option = q.options[i]
                    mark = "RIGHT" if option.correct else "wrong"
                    _say(_wrap(f"{labels[i]} [{mark}] {option.text}", "   ", "      "))
                    _say(_wrap(option.feedback, "        "))
                _say(_wrap(f"Answer: {answer_letters(q)} ({q.answer_text()})", "   ", "     "))
            _say(_wrap(f"Explanation: {q.explanation}", "   ", "     "))
        _say()


# --------------------------------------------------------------------------- a run


def run_quiz(bank: Bank, set_ids: list[str], *, record: bool, through: str | None = None) -> int:
    global _input_ended
    _input_ended = False
    store = None
    if record:
        from .progress import default_store

        store = default_store()
    if len(set_ids) == 1:
        plan = [(set_ids[0], q) for q in bank.questions(set_ids[0], through=through)]
        title = f"Quick check {set_ids[0]}: {bank.sets[set_ids[0]].title}"
    else:
        plan = [(s, q) for s in set_ids for q in bank.sets[s].questions]
        title = "Quick checks for the whole course"
    _say(f"{title} ({len(plan)} questions)")
    _say("Answer with a letter, letters separated by commas, or a number. A wrong answer may be tried again; ? shows the answer. Ctrl-D or Ctrl-C stops.")
    answered = correct = 0
    status = 0
    try:
        for n, (set_id, q) in enumerate(plan, start=1):
            if _input_ended:
                raise _EndOfInput

            def record(right, typed, q=q, set_id=set_id):
                if store is not None:
                    store.record(q.id, set_id, right, typed, source="terminal")

            right, _ = ask_question(q, n, len(plan), record)
            answered += 1
            correct += right
        ending = "Done."
    except _EndOfInput:
        ending = "\nEnd of input."
    except KeyboardInterrupt:
        ending = "\nStopped."
        status = 130
    _say()
    _say(f"{ending} Score: {correct} of {answered} answered correctly ({len(plan)} questions in this quiz).")
    if store is not None:
        from .summary import course_score

        right, total = course_score(bank, store.question_stats())
        where = "in memory only" if store.in_memory else f"in {store.path}"
        if store.pending and not store.in_memory:
            where += f"; {len(store.pending)} answer(s) wait for the file to be free"
        _say(f"Course score: {right} of {total} questions answered correctly (kept {where}).")
    return status


def threading_is_main() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def main(argv: list[str] | None = None) -> int:
    try:
        sys.stdout.reconfigure(errors="replace")
    except (AttributeError, ValueError):
        pass
    if threading_is_main():
        # mha_classroom.quiz's __init__ made Ctrl-C exit quietly while starting up; from here
        # on, KeyboardInterrupt stops the quiz with the score so far.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    parser = argparse.ArgumentParser(
        prog="python -m mha_classroom.quiz",
        description="The course's quick checks in a terminal.",
        epilog="Quizzes: 00 (practice), 01-10 (one per notebook), 11 (review), all.",
    )
    parser.add_argument("quiz", help="which quiz: 00-11, or all")
    parser.add_argument("--answers", action="store_true", help="print the answer key with explanations, and exit")
    parser.add_argument("--no-record", action="store_true", help="do not record answers in the progress file")
    parser.add_argument("--through", metavar="NN", help="the review (11) only: the last notebook your class took, e.g. 05")
    args = parser.parse_args(argv)
    bank = default_bank()
    choice = args.quiz.strip().lower()
    if choice == "all":
        set_ids = [s for s in SET_IDS[1:] if s in bank.sets]
        for broken in sorted(set(bank.problems) - set(bank.sets)):
            print(f"python -m mha_classroom.quiz: left out: {bank.problems[broken]}", file=sys.stderr)
    else:
        try:
            text = normalise_set_id(choice, SET_IDS)
        except ValueError:
            shown = args.quiz if len(args.quiz) <= 20 else args.quiz[:15] + f"... ({len(args.quiz)} characters)"
            print(f"python -m mha_classroom.quiz: there is no quiz {shown!r}. The quizzes are:\n{_describe(bank)}", file=sys.stderr)
            return 2
        try:
            bank.get_set(text)
        except BankError as exc:
            print(f"python -m mha_classroom.quiz: {exc}", file=sys.stderr)
            return 2
        set_ids = [text]
    through = None
    if args.through is not None:
        try:
            if set_ids != [REVIEW_SET_ID]:
                raise ValueError(f"through= applies only to the review ({REVIEW_SET_ID}), not to quiz {args.quiz}")
            through = review_through(args.through)
        except ValueError as exc:
            print(f"python -m mha_classroom.quiz: {exc}", file=sys.stderr)
            return 2
    if args.answers:
        print_answers(bank, set_ids, through=through)
        return 0
    return run_quiz(bank, set_ids, record=not args.no_record, through=through)


if __name__ == "__main__":
    try:
        code = main()
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): stop quietly.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        code = 0
    except KeyboardInterrupt:
        # Ctrl-C outside the question loop (while starting up).
        code = 130
    sys.exit(code)
