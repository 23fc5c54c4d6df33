"""The progress store: concurrent kernels, broken files, reset, and the per-set summary."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from mha_classroom.quiz import progress
from mha_classroom.quiz import _progress_file
from mha_classroom.quiz.bank import load_bank
from mha_classroom.quiz.progress import ProgressStore, default_store, progress_path
from mha_classroom.quiz.summary import course_score, progress_summary, reset_progress


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
    store.record("01-score-is-dot", "11", True)
    summary = progress_summary(store, bank)
    assert list(summary) == [f"{n:02d}" for n in range(1, 12)] + ["course"]
    s03 = summary["03"]
    assert (s03.questions, s03.attempted, s03.best, s03.last, s03.tries) == (len(bank.questions("03")), 2, 2, 2, 3)
    assert (summary["05"].attempted, summary["05"].best) == (1, 0)
    assert summary["01"].best == 1
    # The review's row counts its own questions; the repeated ones count in their own rows.
    assert summary["11"].best == 0 and summary["11"].repeated == len(bank.sets["11"].include)
    assert summary["10"].attempted == 0 and summary["10"].last_time is None
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
    from mha_classroom.quiz.progress import ProgressStore
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


def test_threads_sharing_one_store_keep_every_attempt(store):
    import threading

    def answer(name):
        for i in range(100):
            store.record("03-d-head", "03", True, f"{name}-{i}")
            store.question_stats()

    threads = [threading.Thread(target=answer, args=(f"t{k}",)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(a.answer for a in store.attempts()) == sorted(f"t{k}-{i}" for k in range(4) for i in range(100))
    assert store.question_stats()["03-d-head"].tries == 400


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
        with _progress_file.transaction(conn):
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


# --------------------------------------------------------------------------- the fault table
#
# Each case puts something hostile at the progress path, runs a short session (answers,
# reads, close) and checks: nothing raises, a note names the path at most once, every
# answer of the session is visible in the session, the file is left byte for byte as it
# was whenever it is not a usable progress file, and what could be written was written.

import hashlib
import os
import random
import stat
from contextlib import contextmanager
from pathlib import Path

SESSION = [("03-d-head", "03", True, "64"), ("03-d-head", "03", False, "8"), ("02-why-scale", "02", True, "c"),
           ("11-mental-model", "11", True, "b"), ("03-what-is-a-head", "11", False, "a")]


def legacy_file(path: Path, n_answers: int = 3, *, columns: str | None = None, user_version: int = 0, app_id: int = 0,
                wal: bool = True) -> None:
    """A progress file as an earlier version of this package wrote it (no version stamp), or a variant."""
    conn = sqlite3.connect(str(path), isolation_level=None)
    if wal:
        conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    conn.execute(columns or """CREATE TABLE attempts (id INTEGER PRIMARY KEY AUTOINCREMENT, question_id TEXT NOT NULL,
        set_id TEXT NOT NULL, correct INTEGER NOT NULL, answer TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT 'notebook', created REAL NOT NULL)""")
    conn.execute("INSERT INTO meta VALUES ('learner_id', 'legacy-learner')")
    for i in range(n_answers):
        conn.execute("INSERT INTO attempts (question_id, set_id, correct, created) VALUES ('01-qkv-roles', '01', 1, ?)", (1e9 + i,))
    conn.execute(f"PRAGMA user_version = {user_version}")
    conn.execute(f"PRAGMA application_id = {app_id}")
    conn.close()


def current_file(path: Path, n_answers: int) -> None:
    store = ProgressStore(path)
    for i in range(n_answers):
        store.record("01-qkv-roles", "01", True, str(i))
    store.close()


def digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError:
        return None


def run_session(path: Path, capsys) -> dict:
    """Answer SESSION, read back, close. Returns what a test checks."""
    store = ProgressStore(path)
    seen_during = []
    for answer in SESSION:
        store.record(*answer)
        seen_during.append(store.count())
    stats = store.question_stats()
    attempts = store.attempts()
    learner = store.learner_id
    state = dict(in_memory=store.in_memory, read_only=store.read_only, note=store.note)
    store.close()
    out = capsys.readouterr().out
    mine = [(a.question_id, a.set_id, a.correct, a.answer) for a in attempts]
    lost = sum(1 for a in SESSION if a not in mine)
    return dict(state, out=out, stats=stats, attempts=attempts, lost=lost, seen_during=seen_during, learner=learner)


def notes_in(out: str) -> int:
    return out.count("Note: your quiz progress")


def file_answers(path: Path) -> list:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
    try:
        return conn.execute("SELECT question_id, set_id, correct, answer FROM attempts ORDER BY id").fetchall()
    finally:
        conn.close()


def expect_left_alone(path, before, result, words):
    assert result["in_memory"] and result["lost"] == 0
    assert notes_in(result["out"]) == 1 and str(path) in result["out"], result["out"]
    assert words in result["out"], result["out"]
    assert digest(path) == before, "the learner's file was changed"


# Cases that leave the file alone: (name, make(path), words the note must contain)

def make_not_ours(path):
    conn = sqlite3.connect(str(path))
    conn.execute("CREATE TABLE recipes (name TEXT)")
    conn.execute("INSERT INTO recipes VALUES ('bread')")
    conn.commit()
    conn.close()


def make_newer_schema(path):
    legacy_file(path, user_version=7, app_id=_progress_file.APPLICATION_ID, wal=False)


def make_unreadable_old_schema(path):
    legacy_file(path, 0, columns="CREATE TABLE attempts (id INTEGER PRIMARY KEY, question_id TEXT, set_id TEXT, correct INTEGER)",
                wal=False)


def make_page_two_zeroed(path):
    current_file(path, 300)
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[page:2 * page] = bytes(page)
    path.write_bytes(bytes(data))


def make_truncated(path):
    current_file(path, 300)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def make_garbage(path):
    path.write_bytes(b"not a database \x00\xff" * 300)


def make_sqlite_header_only(path):
    path.write_bytes(_progress_file.SQLITE_HEADER + b"\x00" * 50)


def make_text_file(path):
    path.write_text("my notes about attention\n")


LEFT_ALONE = [
    ("not-ours", make_not_ours, "some other program"),
    ("newer-schema", make_newer_schema, "newer version"),
    ("old-schema-without-created", make_unreadable_old_schema, "cannot be read"),
    ("page-2-zeroed", make_page_two_zeroed, "damaged"),
    ("truncated", make_truncated, "damaged"),
    ("garbage", make_garbage, "not a SQLite database"),
    ("header-only", make_sqlite_header_only, "damaged"),
    ("text-file", make_text_file, "not a SQLite database"),
]


@pytest.mark.parametrize("make, words", [c[1:] for c in LEFT_ALONE], ids=[c[0] for c in LEFT_ALONE])
def test_fault_table_files_that_are_not_usable_are_left_alone(tmp_path, capsys, make, words):
    path = tmp_path / "progress.sqlite3"
    make(path)
    before = digest(path)
    capsys.readouterr()
    result = run_session(path, capsys)
    expect_left_alone(path, before, result, words)
    assert result["seen_during"] == list(range(1, len(SESSION) + 1))


RANDOM_CORRUPTIONS = int(os.environ.get("MHA_FAULT_CORRUPTIONS", "40"))  # 300 for a deliberate hunt


@pytest.mark.parametrize("seed", range(RANDOM_CORRUPTIONS))
def test_fault_table_random_corruptions_never_crash_or_lose_an_answer(tmp_path, capsys, seed):
    path = tmp_path / "progress.sqlite3"
    current_file(path, 200)
    rng = random.Random(seed)
    data = bytearray(path.read_bytes())
    for _ in range(rng.choice([1, 4, 16, 64])):
        at = rng.randrange(len(data))
        data[at] = rng.randrange(256)
    if rng.random() < 0.3:  # and sometimes a run of zeros or a cut
        at = rng.randrange(len(data))
        data[at:at + rng.randrange(1, 4096)] = b"" if rng.random() < 0.5 else bytes(rng.randrange(1, 512))
    path.write_bytes(bytes(data))
    before = digest(path)
    capsys.readouterr()
    result = run_session(path, capsys)
    assert result["lost"] == 0
    assert notes_in(result["out"]) <= 1
    if result["in_memory"]:
        assert digest(path) == before, "a damaged file was changed"
    else:
        written = file_answers(path)
        assert all(a in written for a in SESSION)


def test_fault_table_an_old_schema_is_migrated_after_a_backup(tmp_path, capsys):
    path = tmp_path / "progress.sqlite3"
    legacy_file(path, 3)
    result = run_session(path, capsys)
    assert not result["in_memory"] and result["lost"] == 0
    assert result["learner"] == "legacy-learner" and result["stats"]["01-qkv-roles"].tries == 3
    backup = tmp_path / "progress.sqlite3.v0.bak"
    assert "a copy of the old one is at" in result["out"] and backup.is_file()
    conn = sqlite3.connect(str(backup))
    assert conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0] == 3
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 0
    conn.close()
    assert len(file_answers(path)) == 3 + len(SESSION)
    again = run_session(path, capsys)  # migrated once: the next session says nothing
    assert "Note" not in again["out"] and again["stats"]["01-qkv-roles"].tries == 3


def test_fault_table_an_old_schema_without_answer_and_source_gains_them(tmp_path, capsys):
    path = tmp_path / "progress.sqlite3"
    legacy_file(path, 2, columns="""CREATE TABLE attempts (id INTEGER PRIMARY KEY AUTOINCREMENT, question_id TEXT NOT NULL,
        set_id TEXT NOT NULL, correct INTEGER NOT NULL, created REAL NOT NULL)""")
    result = run_session(path, capsys)
    assert not result["in_memory"] and result["lost"] == 0
    assert [a.source for a in result["attempts"]][:2] == ["notebook", "notebook"]
    assert len(file_answers(path)) == 2 + len(SESSION)


def test_fault_table_an_empty_file_at_the_path_becomes_a_progress_file(tmp_path, capsys):
    path = tmp_path / "progress.sqlite3"
    path.touch()
    result = run_session(path, capsys)
    assert not result["in_memory"] and "Note" not in result["out"]
    assert len(file_answers(path)) == len(SESSION)


def test_fault_table_a_new_file_and_its_folders_are_private(tmp_path, capsys):
    path = tmp_path / "made" / "here" / "progress.sqlite3"
    result = run_session(path, capsys)
    assert not result["in_memory"]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path.parent.parent).st_mode) == 0o700


# -- links, FIFOs, folders, impossible paths


def test_fault_table_a_dangling_link_is_not_followed(tmp_path, capsys):
    path, target = tmp_path / "progress.sqlite3", tmp_path / "elsewhere" / "target.sqlite3"
    target.parent.mkdir()
    path.symlink_to(target)
    result = run_session(path, capsys)
    assert result["in_memory"] and result["lost"] == 0 and "does not exist" in result["out"]
    assert not target.exists() and os.path.islink(path)


def test_fault_table_a_link_to_an_empty_file_is_not_written_through(tmp_path, capsys):
    path, target = tmp_path / "progress.sqlite3", tmp_path / "important.txt"
    target.touch()
    path.symlink_to(target)
    result = run_session(path, capsys)
    assert result["in_memory"] and "not a quiz progress file" in result["out"]
    assert target.read_bytes() == b""


@pytest.mark.parametrize("make", [make_text_file, make_not_ours, make_garbage], ids=["text", "other-db", "garbage"])
def test_fault_table_a_link_to_a_file_that_is_not_ours_is_not_written_through(tmp_path, capsys, make):
    path, target = tmp_path / "progress.sqlite3", tmp_path / "target"
    make(target)
    before = digest(target)
    path.symlink_to(target)
    result = run_session(path, capsys)
    assert result["in_memory"] and result["lost"] == 0 and notes_in(result["out"]) == 1
    assert digest(target) == before


def test_fault_table_a_link_to_a_progress_file_is_used(tmp_path, capsys):
    path, target = tmp_path / "progress.sqlite3", tmp_path / "synced" / "progress.sqlite3"
    target.parent.mkdir()
    current_file(target, 2)
    path.symlink_to(target)
    result = run_session(path, capsys)
    assert not result["in_memory"] and "Note" not in result["out"]
    assert len(file_answers(target)) == 2 + len(SESSION)


def test_fault_table_a_fifo_is_never_opened(tmp_path, capsys):
    path = tmp_path / "progress.sqlite3"
    os.mkfifo(path)
    result = run_session(path, capsys)  # opening a FIFO would hang here
    assert result["in_memory"] and "a FIFO" in result["out"] and stat.S_ISFIFO(os.lstat(path).st_mode)


def test_fault_table_a_folder_at_the_path(tmp_path, capsys):
    path = tmp_path / "progress.sqlite3"
    path.mkdir()
    result = run_session(path, capsys)
    assert result["in_memory"] and "a folder" in result["out"] and list(path.iterdir()) == []


def test_fault_table_an_unknown_user_in_the_path(monkeypatch, capsys):
    monkeypatch.setenv("MHA_COURSE_PROGRESS", "~nosuchuser_mha/p.sqlite3")
    path = progress_path()
    assert str(path) == "~nosuchuser_mha/p.sqlite3"
    result = run_session(path, capsys)
    assert result["in_memory"] and result["lost"] == 0
    assert "no user 'nosuchuser_mha' exists" in result["out"] and notes_in(result["out"]) == 1
    assert not Path("~nosuchuser_mha").exists()


# -- another program holds the lock


LOCK_HOLDER = textwrap.dedent(
    """
    import sqlite3, sys, time
    conn = sqlite3.connect(sys.argv[1], isolation_level=None)
    conn.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
    conn.execute("COMMIT")
    """
)


@contextmanager
def lock_held(path, seconds):
    holder = subprocess.Popen([sys.executable, "-c", LOCK_HOLDER, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield holder
    finally:
        holder.wait(timeout=60)


def test_fault_table_a_lock_held_past_the_timeout_keeps_answers_and_writes_them_later(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress, "BUSY_TIMEOUT_S", 0.3)
    monkeypatch.setattr(progress, "RETRY_TIMEOUT_S", 0.05)
    path = tmp_path / "progress.sqlite3"
    current_file(path, 4)
    store = ProgressStore(path)
    store.count()  # opened before the lock is taken, as a running kernel would be
    with lock_held(path, 2.5) as holder:
        for answer in SESSION:
            store.record(*answer)
        assert store.count() == 4 + len(SESSION) and not store.in_memory and len(store.pending) == len(SESSION)
        holder.wait(timeout=60)
    store.record("04-why-w-o", "04", True, "later")  # the file is free again: everything goes in
    assert store.pending == [] and not store.in_memory
    assert len(file_answers(path)) == 4 + len(SESSION) + 1
    store.close()
    out = capsys.readouterr().out
    assert out.count("Note:") == 1 and "busy" in out and "free again" in out


def test_fault_table_answers_kept_for_a_busy_file_are_written_when_the_store_closes(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(progress, "BUSY_TIMEOUT_S", 0.3)
    path = tmp_path / "progress.sqlite3"
    current_file(path, 1)
    store = ProgressStore(path)
    store.count()
    with lock_held(path, 1.0):
        store.record("03-d-head", "03", True, "64")
        assert store.pending
    monkeypatch.setattr(progress, "BUSY_TIMEOUT_S", 10.0)
    store.close()
    assert len(file_answers(path)) == 2


def test_fault_table_a_new_file_locked_while_it_is_made(tmp_path, capsys, monkeypatch):
    # Another process holds an empty file's lock: the store cannot even create its tables yet.
    monkeypatch.setattr(progress, "BUSY_TIMEOUT_S", 0.3)
    monkeypatch.setattr(progress, "RETRY_TIMEOUT_S", 0.05)
    path = tmp_path / "progress.sqlite3"
    make_rollback_db = sqlite3.connect(str(path))
    make_rollback_db.close()
    with lock_held(path, 1.5) as holder:
        store = ProgressStore(path)
        store.record("03-d-head", "03", True, "64")
        assert store.count() == 1 and not store.in_memory
        holder.wait(timeout=60)
    store.record("03-d-head", "03", False, "8")
    assert [a[3] for a in file_answers(path)] == ["64", "8"]
    store.close()


# -- read-only and full file systems (need a tmpfs mount: root, with mount rights)


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MiB tmpfs under tmp_path, unmounted afterwards; skips where mounting is not allowed."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0755", "tmpfs", str(mount_point)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({made.stderr.strip()}); read-only and full-disk cases need one")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def remount(mount_point, options):
    done = subprocess.run(["mount", "-o", f"remount,{options}", str(mount_point)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@contextmanager
def read_only_view(folder):
    """The same folder seen through a read-only bind mount (a kernel may still write through the other view)."""
    view = folder.parent / (folder.name + "_ro")
    view.mkdir()
    for args in (["mount", "--bind", str(folder), str(view)], ["mount", "-o", "remount,bind,ro", str(view)]):
        done = subprocess.run(args, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
    try:
        yield view
    finally:
        subprocess.run(["umount", "-l", str(view)], capture_output=True)


def test_fault_table_a_read_only_folder_with_a_write_ahead_log_shows_earlier_progress(small_disk, capsys):
    path = small_disk / "progress.sqlite3"
    writer = ProgressStore(path)
    for i in range(100):
        writer.record("01-qkv-roles", "01", True, str(i))
    learner = writer.learner_id
    # A kernel still holds the file: its answers are in the -wal file, not yet in the main file.
    assert (small_disk / "progress.sqlite3-wal").exists()
    try:
        with read_only_view(small_disk) as view:
            capsys.readouterr()
            result = run_session(view / "progress.sqlite3", capsys)
    finally:
        writer._conn.close()
        writer._conn = None
    assert result["read_only"] and result["lost"] == 0 and result["learner"] == learner
    assert result["stats"]["01-qkv-roles"].tries == 100, "earlier progress is hidden"
    assert "Your 100 earlier answers in it are shown" in result["out"] and notes_in(result["out"]) == 1


def test_fault_table_a_read_only_file_system_after_a_clean_close(small_disk, capsys):
    path = small_disk / "progress.sqlite3"
    current_file(path, 10)
    remount(small_disk, "ro")
    result = run_session(path, capsys)
    assert result["read_only"] and result["stats"]["01-qkv-roles"].tries == 10 and result["lost"] == 0
    assert len(result["attempts"]) == 10 + len(SESSION)


def test_fault_table_a_full_disk_keeps_answers_until_there_is_room(small_disk, capsys):
    path = small_disk / "progress.sqlite3"
    current_file(path, 20)
    store = ProgressStore(path)
    assert store.count() == 20
    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as f:  # fill the disk to the last byte
        try:
            while True:
                f.write(b"\0" * 4096)
        except OSError:
            pass
    for answer in SESSION:
        store.record(*answer)
    assert store.count() == 20 + len(SESSION) and not store.in_memory
    filler.unlink()
    store.record("04-why-w-o", "04", True, "room again")
    store.close()
    assert len(file_answers(path)) == 20 + len(SESSION) + 1


# --------------------------------------------------------------------------- the store's API under hypothesis

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BOUNDED = settings(deadline=timedelta(seconds=5), max_examples=40,
                   suppress_health_check=[HealthCheck.function_scoped_fixture])


def test_record_refuses_question_ids_that_are_not_in_the_bank(store):
    with pytest.raises(ValueError, match="question_id='03-no-such' is not a question of the bank"):
        store.record("03-no-such", "03", True)
    with pytest.raises(ValueError, match="set_id='05' does not show 03-d-head; it is shown in set 03"):
        store.record("03-d-head", "05", True)
    with pytest.raises(TypeError, match="must be text"):
        store.record(3, "03", True)
    store.record("03-what-is-a-head", "11", True)  # the review shows it too
    assert store.count() == 1


@BOUNDED
@given(st.text(max_size=30), st.text(max_size=5))
def test_record_takes_a_bank_question_or_refuses_with_a_message(tmp_path_factory, question_id, set_id):
    store = ProgressStore(tmp_path_factory.mktemp("p") / "p.sqlite3")
    try:
        store.record(question_id, set_id, True, "x")
    except ValueError as exc:
        assert "question_id=" in str(exc) or "set_id=" in str(exc)
        assert store.count() == 0
    else:
        assert store.count() == 1
    finally:
        store.close()


@BOUNDED
@given(st.lists(st.tuples(st.sampled_from(["03-d-head", "01-qkv-roles", "02-why-scale", "11-what-grows"]), st.booleans(),
                          st.text(max_size=40)), max_size=12))
def test_stats_agree_with_the_answers_recorded_whatever_they_are(tmp_path_factory, answers):
    path = tmp_path_factory.mktemp("p") / "p.sqlite3"
    store = ProgressStore(path)
    for qid, correct, typed in answers:
        store.record(qid, qid[:2], correct, typed)
    store.close()
    again = ProgressStore(path)
    stats = again.question_stats()
    for qid in {a[0] for a in answers}:
        mine = [a for a in answers if a[0] == qid]
        assert stats[qid].tries == len(mine)
        assert stats[qid].ever_correct == any(c for _, c, _ in mine) and stats[qid].last_correct == mine[-1][1]
    assert [a.answer for a in again.attempts()] == [t for _, _, t in answers]
    again.close()


@BOUNDED
@given(st.text(min_size=1, max_size=60).filter(lambda t: "\x00" not in t))
def test_any_progress_path_gives_a_working_store(tmp_path_factory, name):
    base = tmp_path_factory.mktemp("paths")
    path = name if name.startswith("~") else base / name
    store = ProgressStore(path)
    try:
        store.record("03-d-head", "03", True, "64")
        assert store.count() == 1 and len(store.learner_id) == 32
    finally:
        store.close()
