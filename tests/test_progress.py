"""The progress store: concurrent kernels, broken files, reset, and the per-set summary."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from mha_core.quiz import progress
from mha_core.quiz.bank import load_bank
from mha_core.quiz.progress import ProgressStore, course_score, default_store, progress_path, progress_summary, reset_progress


pytestmark = pytest.mark.usefixtures("isolated_progress")


@pytest.fixture
def store(tmp_path):
    s = ProgressStore(tmp_path / "progress.sqlite3")
    yield s
    s.close()


@pytest.fixture(scope="module")
def bank():
    return load_bank()


# --------------------------------------------------------------------------- where the file lives


def test_path_comes_from_the_environment_variable(tmp_path):
    assert progress_path() == tmp_path / "progress.sqlite3"


def test_default_path_is_in_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("MHA_COURSE_PROGRESS")
    assert progress_path() == tmp_path / "home" / ".mha_course" / "progress.sqlite3"


def test_a_missing_folder_and_file_are_created(tmp_path):
    store = ProgressStore(tmp_path / "deep" / "er" / "p.sqlite3")
    store.record("03-d-head", "03", True)
    assert (tmp_path / "deep" / "er" / "p.sqlite3").is_file() and not store.in_memory
    store.close()


# --------------------------------------------------------------------------- records and results


def test_attempts_are_kept_in_order_with_their_details(store):
    store.record("03-d-head", "03", False, "9216")
    store.record("03-d-head", "03", True, "64", source="terminal")
    attempts = store.attempts("03-d-head")
    assert [(a.correct, a.answer, a.source) for a in attempts] == [(False, "9216", "notebook"), (True, "64", "terminal")]
    assert attempts[0].created <= attempts[1].created <= time.time()


def test_question_stats_give_tries_best_and_last(store):
    store.record("01-qkv-roles", "01", True)
    store.record("01-qkv-roles", "01", False)
    store.record("01-score-is-dot", "01", False)
    stats = store.question_stats()
    assert (stats["01-qkv-roles"].tries, stats["01-qkv-roles"].ever_correct, stats["01-qkv-roles"].last_correct) == (2, True, False)
    assert (stats["01-score-is-dot"].tries, stats["01-score-is-dot"].ever_correct) == (1, False)


def test_progress_survives_a_new_store_on_the_same_file(tmp_path, store):
    store.record("02-why-scale", "02", True)
    learner = store.learner_id
    store.close()
    again = ProgressStore(tmp_path / "progress.sqlite3")
    assert again.count() == 1 and again.learner_id == learner
    again.close()


def test_learner_ids_differ_between_files(tmp_path, store):
    other = ProgressStore(tmp_path / "other.sqlite3")
    assert other.learner_id != store.learner_id and len(store.learner_id) == 32
    other.close()


def test_summary_covers_every_notebook_and_the_course(store, bank):
    store.record("03-what-is-a-head", "03", True)
    store.record("03-d-head", "03", False)
    store.record("03-d-head", "03", True)
    store.record("05-mha-parameters", "05", False)
    # Answered in the review: it counts for notebook 01, where the question lives.
    store.record("01-score-is-dot", "10", True)
    summary = progress_summary(store, bank)
    assert list(summary) == [f"{n:02d}" for n in range(1, 11)] + ["course"]
    s03 = summary["03"]
    assert (s03.questions, s03.attempted, s03.best, s03.last, s03.tries) == (len(bank.questions("03")), 2, 2, 2, 3)
    assert (summary["05"].attempted, summary["05"].best) == (1, 0)
    assert summary["01"].best == 1
    # The review's row counts its own questions; the repeated ones count in their own rows.
    assert summary["10"].best == 0 and summary["10"].repeated == len(bank.sets["10"].include)
    assert summary["09"].attempted == 0 and summary["09"].last_time is None
    course = summary["course"]
    assert (course.best, course.questions) == (3, len(bank.course_questions()))
    assert course_score(bank, store.question_stats()) == (3, len(bank.course_questions()))


def test_practice_answers_do_not_count_for_the_course(store, bank):
    store.record("00-what-check-does", "00", True)
    assert course_score(bank, store.question_stats())[0] == 0


# --------------------------------------------------------------------------- two kernels at once

WRITER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from mha_core.quiz.progress import ProgressStore
    path, gate, name = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    store = ProgressStore(path)
    deadline = time.time() + 30
    while not gate.exists() and time.time() < deadline:
        time.sleep(0.001)
    for i in range(50):
        store.record("03-d-head", "03", i % 2 == 0, f"{name}-{i}")
    print("memory" if store.in_memory else "file")
    """
)


def test_two_processes_writing_at_once_keep_every_attempt(tmp_path):
    path = tmp_path / "shared.sqlite3"
    gate = tmp_path / "go"
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(gate), name], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name in ("kernel-a", "kernel-b")
    ]
    time.sleep(0.5)  # both start up and wait at the gate; then they write at the same moment
    gate.touch()
    outputs = [w.communicate(timeout=90) for w in writers]
    assert [w.returncode for w in writers] == [0, 0], outputs
    assert [out.strip() for out, _ in outputs] == ["file", "file"], outputs
    store = ProgressStore(path)
    answers = [a.answer for a in store.attempts()]
    assert len(answers) == 100
    assert set(answers) == {f"{name}-{i}" for name in ("kernel-a", "kernel-b") for i in range(50)}
    store.close()


# --------------------------------------------------------------------------- broken files never crash


def test_a_corrupt_file_warns_once_and_carries_on_in_memory(tmp_path, capsys):
    path = tmp_path / "progress.sqlite3"
    garbage = b"this is not a database\x00\xff" * 100
    path.write_bytes(garbage)
    store = ProgressStore(path)
    store.record("03-d-head", "03", True)
    store.record("03-d-head", "03", False)
    assert store.count() == 2 and store.in_memory
    assert store.question_stats()["03-d-head"].tries == 2
    out = capsys.readouterr().out
    assert out.count("Note:") == 1 and str(path) in out and "memory" in out
    assert path.read_bytes() == garbage  # the learner's file is left alone


def test_a_location_that_cannot_be_created_warns_and_carries_on(tmp_path, capsys):
    # Tests run as root, which ignores file permissions; a path below a regular file
    # cannot be created by anyone.
    blocker = tmp_path / "a_file"
    blocker.write_text("not a folder")
    store = ProgressStore(blocker / "progress.sqlite3")
    store.record("01-qkv-roles", "01", True)
    assert store.in_memory and store.count() == 1
    assert len(store.learner_id) == 32
    assert capsys.readouterr().out.count("Note:") == 1


def test_a_file_that_turns_read_only_keeps_its_answers_in_memory(tmp_path, monkeypatch, capsys):
    path = tmp_path / "progress.sqlite3"
    writable = ProgressStore(path)
    writable.record("02-why-scale", "02", True)
    learner = writable.learner_id
    writable.close()

    def open_read_only(self):
        return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None, check_same_thread=False)

    monkeypatch.setattr(ProgressStore, "_open_file", open_read_only)
    store = ProgressStore(path)
    assert store.learner_id == learner  # reading still works
    store.record("02-causal-mask", "02", False)  # the write fails: fall back, keep what was read
    assert store.in_memory
    assert [a.question_id for a in store.attempts()] == ["02-why-scale", "02-causal-mask"]
    assert store.learner_id == learner
    assert capsys.readouterr().out.count("Note:") == 1


def test_the_default_store_is_shared_so_the_note_appears_once_per_session(tmp_path, capsys):
    (tmp_path / "progress.sqlite3").write_bytes(b"\x00garbage" * 64)
    first = default_store()
    first.record("03-d-head", "03", True)
    second = default_store()
    second.record("03-d-head", "03", True)
    assert first is second and second.count() == 2
    assert capsys.readouterr().out.count("Note:") == 1


def test_a_failed_transaction_leaves_nothing_behind(store):
    store.record("03-d-head", "03", True)
    conn = store._connection()
    with pytest.raises(RuntimeError):
        with progress._transaction(conn):
            conn.execute("INSERT INTO attempts (question_id, set_id, correct, created) VALUES ('x', '03', 1, 0)")
            raise RuntimeError("interrupted half way")
    assert [a.question_id for a in store.attempts()] == ["03-d-head"]


# --------------------------------------------------------------------------- reset


def test_reset_erases_attempts_and_keeps_the_learner_id(store):
    learner = store.learner_id
    for _ in range(3):
        store.record("04-why-w-o", "04", True)
    assert store.reset() == 3
    assert store.count() == 0 and store.learner_id == learner


def test_reset_progress_asks_for_confirmation_first(tmp_path, capsys):
    store = default_store()
    store.record("04-why-w-o", "04", True)
    reset_progress()
    assert store.count() == 1
    assert "This would erase 1 recorded answers" in capsys.readouterr().out
    reset_progress(confirm=True)
    assert store.count() == 0
    assert "Erased 1" in capsys.readouterr().out
