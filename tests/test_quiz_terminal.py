"""The terminal quiz, driven through stdin in a subprocess: a full run, end of input, Ctrl-C, a bad id, the key."""

from __future__ import annotations

import os
from pathlib import Path
import select
import signal
import subprocess
import sys
import time

import pytest

from mha_classroom.quiz.bank import LETTERS, load_bank
from mha_classroom.quiz.grading import option_order
from mha_classroom.quiz.numbers import format_number
from mha_classroom.quiz.progress import ProgressStore

RUN_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def bank():
    return load_bank()


@pytest.fixture
def env(tmp_path):
    env = dict(os.environ)
    env["HOME"] = str(tmp_path / "home")
    env["MHA_COURSE_PROGRESS"] = str(tmp_path / "progress.sqlite3")
    env["COLUMNS"] = "100"
    return env


def run_quiz(args, env, stdin=""):
    return subprocess.run(
        [sys.executable, "-m", "mha_classroom.quiz", *args],
        input=stdin, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )


def answer_for(question, right: bool = True) -> str:
    """What a learner types: the right (or a wrong) answer, in the letters everyone sees."""
    if question.kind == "numeric":
        return format_number(question.answer) if right else format_number(question.misconceptions[0].value)
    order = option_order(question)
    wanted = question.correct_indices if right else [i for i in range(len(question.options)) if not question.options[i].correct][:1]
    return ",".join(LETTERS[order.index(i)] for i in wanted)


def test_a_full_run_with_right_answers_scores_every_question_and_records_them(bank, env):
    questions = bank.questions("03")
    stdin = "".join(answer_for(q) + "\n" for q in questions)
    result = run_quiz(["03"], env, stdin)
    assert result.returncode == 0, result.stderr
    assert f"Done. Score: {len(questions)} of {len(questions)} answered correctly" in result.stdout
    assert result.stdout.count("Correct") == len(questions)
    assert "Course score: 5 of" in result.stdout
    store = ProgressStore(env["MHA_COURSE_PROGRESS"])
    assert [(a.question_id, a.correct, a.source) for a in store.attempts()] == [(q.id, True, "terminal") for q in questions]
    store.close()
    assert result.stderr == ""


def test_wrong_answers_get_their_feedback_and_the_right_answer_on_asking(bank, env):
    questions = bank.questions("05")
    stdin = "".join(answer_for(q, right=False) + "\n?\n" for q in questions)
    result = run_quiz(["05"], env, stdin)
    assert result.returncode == 0
    assert f"Score: 0 of {len(questions)}" in result.stdout
    assert "That is the weights only" in result.stdout  # the numeric misconception's feedback
    assert result.stdout.count("The answer:") == len(questions)
    assert result.stdout.count("Why:") == len(questions)


def test_the_same_questions_as_the_notebook_in_the_same_order(bank, env):
    q = bank.question("03-what-is-a-head")
    result = run_quiz(["03"], env, "")
    order = option_order(q)
    first_option = q.options[order[0]].text
    assert f"a) {first_option}" in result.stdout


def test_invalid_input_asks_again_without_counting(bank, env):
    q = bank.questions("03")[0]
    stdin = "\nzz\na,b\n" + answer_for(q) + "\n"
    result = run_quiz(["03"], env, stdin)
    assert "Type an answer first" in result.stdout
    assert "Please answer with letters from a to d" in result.stdout
    assert "This question has one answer" in result.stdout
    assert "End of input. Score: 1 of 1 answered correctly (5 questions in this quiz)" in result.stdout


def test_end_of_input_midway_ends_cleanly_with_the_score_so_far(bank, env):
    questions = bank.questions("02")
    stdin = answer_for(questions[0]) + "\n" + answer_for(questions[1], right=False) + "\n"
    result = run_quiz(["02"], env, stdin)
    assert result.returncode == 0
    assert "End of input. Score: 1 of 2 answered correctly (5 questions in this quiz)." in result.stdout
    assert "Traceback" not in result.stdout + result.stderr
    store = ProgressStore(env["MHA_COURSE_PROGRESS"])
    assert store.count() == 2
    store.close()


def test_ctrl_c_ends_cleanly_with_the_score_so_far(bank, env):
    proc = subprocess.Popen(
        [sys.executable, "-m", "mha_classroom.quiz", "01"], env=env, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    proc.stdin.write(answer_for(bank.questions("01")[0]) + "\n")
    proc.stdin.flush()
    # Wait until the second question's prompt is on screen, then press Ctrl-C.
    seen = ""
    deadline = time.time() + RUN_TIMEOUT_S
    while "Question 2 of" not in seen or not seen.rstrip().endswith(":"):
        assert time.time() < deadline, seen
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready:
            chunk = os.read(proc.stdout.fileno(), 4096).decode()
            assert chunk, seen
            seen += chunk
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=RUN_TIMEOUT_S)
    assert proc.returncode == 130
    assert "Stopped. Score: 1 of 1 answered correctly" in seen + out
    assert "Traceback" not in err and "KeyboardInterrupt" not in err


def test_a_bad_quiz_id_lists_the_valid_ones(env):
    result = run_quiz(["42"], env)
    assert result.returncode == 2
    assert "there is no quiz '42'" in result.stderr
    for set_id in ["00", "01", "05", "10", "11", "all"]:
        assert f"\n  {set_id}" in result.stderr
    assert "Traceback" not in result.stderr


def test_answers_prints_the_key_with_explanations(bank, env):
    result = run_quiz(["03", "--answers"], env)
    assert result.returncode == 0
    questions = bank.questions("03")
    for q in questions:
        assert f"[{q.id}, {q.kind}]" in result.stdout
    n_right = sum(len(q.correct_indices) for q in questions if q.kind != "numeric")
    assert result.stdout.count("[RIGHT]") == n_right
    assert result.stdout.count("Explanation:") == len(questions)
    assert "Answer: 64." in result.stdout
    assert not os.path.exists(env["MHA_COURSE_PROGRESS"])  # printing the key touches no progress


def test_all_runs_every_course_question_once(bank, env):
    result = run_quiz(["all", "--no-record"], env, "")
    n = len(bank.course_questions())
    assert result.returncode == 0
    assert f"Quick checks for the whole course ({n} questions)" in result.stdout
    assert f"End of input. Score: 0 of 0 answered correctly ({n} questions in this quiz)." in result.stdout
    assert not os.path.exists(env["MHA_COURSE_PROGRESS"])


def test_no_record_leaves_the_progress_file_alone(bank, env):
    q = bank.questions("03")[0]
    result = run_quiz(["3", "--no-record"], env, answer_for(q) + "\n")
    assert "Score: 1 of 1" in result.stdout
    assert not os.path.exists(env["MHA_COURSE_PROGRESS"])


def test_a_corrupt_progress_file_does_not_stop_the_terminal_quiz(bank, env):
    with open(env["MHA_COURSE_PROGRESS"], "wb") as f:
        f.write(b"garbage" * 100)
    result = run_quiz(["01"], env, "36\n")  # a number is not a letter: asked again, then EOF
    assert result.returncode == 0 and "Note: your quiz progress cannot be saved" in result.stdout
    assert "kept in memory only" in result.stdout


def test_the_terminal_runner_does_not_import_ipywidgets_or_plotly(env):
    result = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "mha_classroom.quiz", "03", "--answers"],
        env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
    )
    assert result.returncode == 0
    imported = {line.split("|")[-1].strip().split(".")[0] for line in result.stderr.splitlines() if "|" in line}
    assert "mha_core" in imported
    assert not imported & {"ipywidgets", "plotly", "torch", "IPython"}, imported & {"ipywidgets", "plotly", "torch", "IPython"}


def test_import_mha_core_does_not_import_the_quiz(env):
    code = "import sys, mha_core; print('mha_classroom.quiz' in sys.modules, 'ipywidgets' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert result.stdout.split() == ["False", "False"]


# --------------------------------------------------------------------------- hostile ids and input


@pytest.mark.parametrize("quiz_id", ["²", "³", "٣", "9" * 5000, "-1", "3.0", "0x3", "", "all2"],
                         ids=["sup2", "sup3", "arabic3", "5000-digits", "negative", "float", "hex", "empty", "all2"])
def test_a_bad_quiz_id_of_any_kind_lists_the_valid_ones(env, quiz_id):
    result = run_quiz([quiz_id], env)
    assert result.returncode == 2, result.stderr
    assert "there is no quiz" in result.stderr and "\n  10  " in result.stderr
    assert "Traceback" not in result.stderr and "ValueError" not in result.stderr
    assert len(result.stderr) < 2000


def test_a_broken_set_file_costs_only_that_quiz(tmp_path, env, bank):
    import shutil

    from mha_classroom.quiz.bank import quizzes_dir

    site = tmp_path / "site"
    root = Path(__file__).resolve().parents[1]
    for package in ("mha_core", "mha_classroom"):
        shutil.copytree(root / package, site / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(quizzes_dir(), site / "data" / "quizzes")
    (site / "data" / "quizzes" / "04.json").write_bytes(b'{"set": "04",\n "title": \xff}')
    env = {**env, "PYTHONPATH": str(site)}
    broken = subprocess.run([sys.executable, "-m", "mha_classroom.quiz", "04"], env=env, capture_output=True, text=True,
                            timeout=RUN_TIMEOUT_S, cwd=tmp_path)
    assert broken.returncode == 2 and "04.json line 2: not UTF-8 text" in broken.stderr, broken.stderr
    assert "Traceback" not in broken.stderr
    fine = subprocess.run([sys.executable, "-m", "mha_classroom.quiz", "03", "--no-record"], env=env, capture_output=True,
                          text=True, timeout=RUN_TIMEOUT_S, cwd=tmp_path, input="")
    assert fine.returncode == 0 and "Quick check 03" in fine.stdout


@pytest.mark.parametrize(
    "junk",
    ["\x00\x00b\n", "a" * 1_000_000 + "\n", "\udcff\n", "b\x00\n"],
    ids=["nul", "one-megabyte-line", "invalid-utf8", "nul-inside"],
)
def test_junk_input_is_asked_again_never_a_traceback(env, junk):
    result = subprocess.run(
        [sys.executable, "-m", "mha_classroom.quiz", "03", "--no-record"], env=env, capture_output=True, timeout=RUN_TIMEOUT_S,
        input=junk.encode("utf-8", "surrogateescape"),
    )
    assert result.returncode == 0 and b"Traceback" not in result.stderr, result.stderr[-500:]
    assert b"End of input." in result.stdout


def test_an_answer_on_the_last_line_without_a_newline_counts(bank, env):
    q = bank.questions("03")[0]
    result = run_quiz(["03"], env, answer_for(q))  # no newline: end of input right after
    assert "End of input. Score: 1 of 1 answered correctly" in result.stdout
    assert result.stdout.count("Question ") == 1  # it does not show the next question first


def test_select_all_gets_a_second_try_before_the_key(bank, env):
    q = bank.question("02-softmax-row")
    order = option_order(q)
    wrong = next(i for i in range(len(q.options)) if not q.options[i].correct)
    first = LETTERS[order.index(q.correct_indices[0])] + "," + LETTERS[order.index(wrong)]
    right = answer_for(q)
    stdin = "".join(answer_for(x) + "\n" for x in bank.questions("02")[:3]) + first + "\n" + right + "\n"
    result = run_quiz(["02", "--no-record"], env, stdin)
    tail = " ".join(result.stdout.split("[02-softmax-row]")[1].split())  # lines are wrapped
    assert "not chosen yet. Change your choice and check again." in tail
    before_second = tail.split("Change your choice")[1].split("Correct: all")[0]
    assert "missed" not in before_second and "The answer:" not in before_second
    assert "Score: 4 of 4" in result.stdout


# --------------------------------------------------------------------------- a real terminal (pty)

import pty  # noqa: E402


def spawn(args, env):
    """The quiz in a pseudo-terminal, as a learner runs it: (pid, master fd). Ctrl-C's signal reaches it as it
    reaches a program a shell starts: handled by default and not blocked, whatever this test process's own
    threads did to theirs (a blocked or ignored SIGINT would survive the exec)."""
    pid, fd = pty.fork()
    if pid == 0:  # the child: become the quiz
        try:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execve(sys.executable, [sys.executable, "-m", "mha_classroom.quiz", *args], env)
        finally:
            os._exit(127)
    return pid, fd


def signal_state(pid) -> str:
    """The kernel's view of a process's signals (masks in hex; SIGINT is bit 1, 0x2): for a failure message."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return " ".join(line.strip() for line in f if line.startswith(("SigPnd", "ShdPnd", "SigBlk", "SigIgn", "SigCgt")))
    except OSError:
        return "(gone)"


def wait_for_exec(pid):
    """Until the forked child is the quiz program (a signal sent before its exec would be lost)."""
    deadline = time.time() + RUN_TIMEOUT_S
    while time.time() < deadline:
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"mha_classroom.quiz" in f.read():
                    return
        except OSError:
            return
        time.sleep(0.001)


def read_until(fd, wanted, seen=b"", timeout=RUN_TIMEOUT_S):
    deadline = time.time() + timeout
    while wanted not in seen:
        assert time.time() < deadline, seen[-2000:]
        ready, _, _ = select.select([fd], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            seen += chunk
    return seen


def drain(fd, seen=b"", seconds=0.3):
    """Whatever the terminal shows within ``seconds``."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 0.05)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    return seen


def finish(pid, fd, seen=b""):
    """Read what is left and wait for the exit status (a number, or -signal)."""
    deadline = time.time() + RUN_TIMEOUT_S
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        seen = drain(fd, seen, 0.2)
        if done:
            break
        assert time.time() < deadline, f"{seen[-2000:]!r}; still running, signals: {signal_state(pid)}"
    os.close(fd)
    return (os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)), seen.decode("utf-8", "replace")


def test_pty_an_answer_then_one_ctrl_d_counts_the_answer_and_leaves(bank, env):
    q = bank.questions("03")[0]
    pid, fd = spawn(["03"], env)
    seen = read_until(fd, b"Your answer")
    os.write(fd, answer_for(q).encode() + b"\x04")  # type the answer, then Ctrl-D (no Enter)
    status, out = finish(pid, fd, seen)
    assert status == 0, out
    assert "Correct." in out and "End of input. Score: 1 of 1 answered correctly" in out
    assert "Question 2 of" not in out and "Traceback" not in out
    store = ProgressStore(env["MHA_COURSE_PROGRESS"])
    assert [a.question_id for a in store.attempts()] == [q.id]
    store.close()


def test_pty_one_ctrl_d_at_a_prompt_leaves(env):
    pid, fd = spawn(["03", "--no-record"], env)
    seen = read_until(fd, b"Your answer")
    os.write(fd, b"\x04")
    status, out = finish(pid, fd, seen)
    assert status == 0 and "End of input. Score: 0 of 0" in out and "Traceback" not in out


def test_pty_a_wrong_form_then_ctrl_d_leaves_without_asking_again(env):
    pid, fd = spawn(["03", "--no-record"], env)
    seen = read_until(fd, b"Your answer")
    os.write(fd, b"zz\x04")
    status, out = finish(pid, fd, seen)
    assert status == 0 and "Please answer with letters" in out and "End of input." in out
    assert out.count("Your answer") == 1


def test_pty_ctrl_c_at_a_prompt_stops_with_130_and_the_score(env):
    pid, fd = spawn(["03", "--no-record"], env)
    seen = read_until(fd, b"Your answer")
    os.write(fd, b"\x03")
    status, out = finish(pid, fd, seen)
    assert status == 130 and "Stopped. Score: 0 of 0" in out and "Traceback" not in out


def test_pty_junk_bytes_are_asked_again(env):
    pid, fd = spawn(["03", "--no-record"], env)
    seen = read_until(fd, b"Your answer")
    os.write(fd, b"\xff\xfe\x00junk\n")
    seen = read_until(fd, b"Please answer with letters", seen)
    os.write(fd, b"\x04")
    status, out = finish(pid, fd, seen)
    assert status == 0 and "Traceback" not in out


@pytest.mark.parametrize("delay_s", [0.03, 0.08, 0.15, 0.3, 0.6, 1.0, 1.5])
def test_pty_ctrl_c_while_starting_up_exits_130_quietly(env, delay_s, request):
    pid, fd = spawn(["03", "--no-record"], env)
    wait_for_exec(pid)
    time.sleep(delay_s)
    os.kill(pid, signal.SIGINT)
    status, out = finish(pid, fd)
    if status != 130 and "mha_classroom/quiz" not in out and "Quick check" not in out:
        # Python's own start-up or runpy ran when the signal came: no code of ours had run yet, so nothing
        # of ours can catch it (``import mha_core`` itself loads nothing heavy).
        request.applymarker(pytest.mark.xfail(
            reason="Ctrl-C during Python's own start-up, before any code of the package runs", strict=False))
    assert status == 130, out
    assert "Traceback" not in out and "KeyboardInterrupt" not in out, out


def test_the_review_through_05_asks_only_the_core_questions(bank, env):
    shown = bank.questions("11", through="05")
    result = run_quiz(["11", "--through", "05", "--answers"], env)
    assert result.returncode == 0, result.stderr
    assert f"({len(shown)} questions)" in result.stdout
    assert "[06-" not in result.stdout and "[10-" not in result.stdout
    assert "[05-" in result.stdout


def test_a_bad_through_in_the_terminal_names_the_choices(env):
    result = run_quiz(["11", "--through", "12"], env)
    assert result.returncode == 2
    assert "through='12'" in result.stderr and "valid choices are 01" in result.stderr
    assert "Traceback" not in result.stderr


# --------------------------------------------------------------------------- one letter for one option, everywhere


def _letters_printed(stdout: str, question) -> dict[str, str]:
    """Option text -> the letter the terminal printed it under, for one question of a run's output."""
    block = stdout.split(f"[{question.id}]", 1)[1].split("Your answer", 1)[0]
    flat = " ".join(block.split())
    found = {}
    for option in question.options:
        text = " ".join(option.text.split())
        at = flat.index(text)
        found[option.text] = flat[:at].rstrip()[-2]  # "b) text": the letter before ")"
    return found


@pytest.mark.usefixtures("isolated_progress")
def test_the_same_question_shows_the_same_letters_in_all_four_places(bank, env):
    import importlib.util

    from mha_classroom.quiz.widget import classroom, quick_check

    spec = importlib.util.spec_from_file_location("handouts", Path(__file__).resolve().parents[1] / "tools" / "handouts.py")
    handouts = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(handouts)

    for set_id in ("03", "11"):
        questions = [q for q in bank.questions(set_id) if q.kind != "numeric"]
        learner = {v.question.id: v for v in quick_check(set_id, show=False).questions}
        room = {v.question.id: v for v in classroom(set_id, show=False).questions}
        stdin = "".join(answer_for(q) + "\n" for q in bank.questions(set_id))
        terminal = run_quiz([set_id, "--no-record"], env, stdin)
        n = len(bank.questions(set_id))
        assert f"Score: {n} of {n} answered correctly" in terminal.stdout, terminal.stdout[-800:]
        key = " ".join(run_quiz([set_id, "--answers"], env).stdout.split())
        page = handouts.quick_check_html(set_id)
        for q in questions:
            notebook = {q.options[i].text: label[:1] for label, i in learner[q.id].options_widget.options} if q.kind == "single" \
                else {q.options[i].text: box.description[:1] for box, i in zip(learner[q.id].checkboxes, learner[q.id].order)}
            classroom_letters = {q.options[i].text: chr(ord("a") + pos) for pos, i in enumerate(room[q.id].order)}
            assert notebook == classroom_letters == _letters_printed(terminal.stdout, q), q.id
            right = ", ".join(sorted(notebook[o.text] for o in q.options if o.correct))
            assert f"Answer: {right} (" in key, q.id
            assert f"Answer: <b>{right}</b>" in page, q.id  # the folded answer under "Show the answer"


def test_a_wrong_answer_may_be_tried_again_as_in_the_notebook(bank, env):
    q = bank.questions("03")[0]
    stdin = answer_for(q, right=False) + "\n" + answer_for(q, right=False) + "\n" + answer_for(q) + "\n"
    result = run_quiz(["03"], env, stdin)
    assert result.stdout.count("Try again, or type ? to see the answer and go on.") == 2
    assert "The answer:" not in result.stdout
    assert "End of input. Score: 1 of 1 answered correctly" in result.stdout
    store = ProgressStore(env["MHA_COURSE_PROGRESS"])
    assert [a.correct for a in store.attempts()] == [False, False, True]  # every try recorded, as in the notebook
    store.close()


def test_asking_for_the_answer_shows_it_and_counts_the_question_as_not_answered(bank, env):
    q = bank.questions("03")[0]
    stdin = answer_for(q, right=False) + "\n?\n"
    result = run_quiz(["03"], env, stdin)
    assert "The answer:" in result.stdout and "Why:" in result.stdout
    assert "Question 2 of" in result.stdout
    assert "End of input. Score: 0 of 1 answered correctly" in result.stdout


def test_a_question_mark_before_any_try_is_asked_again(bank, env):
    q = bank.questions("03")[0]
    result = run_quiz(["03"], env, "?\n" + answer_for(q) + "\n")
    assert "Please answer with letters from a to d" in result.stdout
    assert "The answer:" not in result.stdout
    assert "Score: 1 of 1 answered correctly" in result.stdout


def test_the_terminal_says_its_retry_rule_before_the_first_question(bank, env):
    # The rule is the notebook's (tests/test_quiz_widget.py: a wrong try offers "Show the answer").
    result = run_quiz(["03"], env, "")
    assert "A wrong answer may be tried again; ? shows the answer." in result.stdout.split("Question 1 of")[0]
