"""Quiz progress: a small SQLite file that two kernels can write at once, and that never crashes a quiz.

Where: the path in the environment variable ``MHA_COURSE_PROGRESS``, or
``~/.mha_course/progress.sqlite3``.

What it holds:

    attempts(id, question_id, set_id, correct, answer, source, created)
        one row per Check (or terminal answer); nothing is ever updated in place
    meta(key, value)
        'learner_id': a random id made on first use; it seeds the option order

The file uses SQLite's write-ahead log (``-wal`` and ``-shm`` files appear next to it
while a kernel has it open), so recording an answer takes well under a millisecond;
a power cut can lose the last answers, never corrupt the file.

Every result is derived from the attempts: a question's tries, whether it was ever
answered correctly (its best result) and whether its latest try was correct (its last
result). So a write is one INSERT inside one transaction: there is no
read-modify-write to lose when two kernels record at the same moment. SQLite's own
locking serialises the writers, and a busy timeout makes the second wait instead of
failing.

A missing file is created. A file that cannot be opened, read or written (corrupt,
read-only, a folder that cannot be made) prints one plain note, and the store carries
on in memory for the rest of the session: the quiz keeps working, it just forgets
when the kernel stops.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .bank import COURSE_SET_IDS, Bank, default_bank

ENV_VAR = "MHA_COURSE_PROGRESS"
DEFAULT_PATH = Path("~/.mha_course/progress.sqlite3")
#: Seconds a writer waits for another kernel's transaction before giving up.
BUSY_TIMEOUT_S = 10.0

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    """CREATE TABLE IF NOT EXISTS attempts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        question_id TEXT NOT NULL,
        set_id TEXT NOT NULL,
        correct INTEGER NOT NULL CHECK (correct IN (0, 1)),
        answer TEXT NOT NULL DEFAULT '',
        source TEXT NOT NULL DEFAULT 'notebook',
        created REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS attempts_question ON attempts (question_id)",
)


def progress_path() -> Path:
    """The progress file: $MHA_COURSE_PROGRESS, or ~/.mha_course/progress.sqlite3."""
    return Path(os.environ.get(ENV_VAR) or DEFAULT_PATH).expanduser()


@dataclass(frozen=True)
class Attempt:
    question_id: str
    set_id: str
    correct: bool
    answer: str
    source: str
    created: float


@dataclass(frozen=True)
class QuestionStats:
    """One question's record: how often tried, ever right (best), right on the latest try (last)."""

    tries: int = 0
    ever_correct: bool = False
    last_correct: bool = False
    last_time: float | None = None


class ProgressStore:
    """Attempts in a SQLite file, or in memory when the file cannot be used.

    Attributes:
        path        the file asked for
        in_memory   True once the store has fallen back to memory
        note        the note printed when it fell back (None while the file works)
    """

    def __init__(self, path: str | Path | None = None, *, memory: bool = False):
        self.path = Path(path).expanduser() if path is not None else progress_path()
        self.note: str | None = None
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self.in_memory = memory
        if memory:
            self._conn = self._open_memory()

    # ---------------------------------------------------------------- connections

    def _open_memory(self) -> sqlite3.Connection:
        conn = sqlite3.connect(":memory:", isolation_level=None, check_same_thread=False)
        self._create_schema(conn)
        return conn

    def _open_file(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(self.path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            self._create_schema(conn)  # a corrupt file fails here
            conn.execute("SELECT COUNT(*) FROM attempts").fetchone()
            try:
                # Write-ahead log: a commit appends to the log without waiting for the disk
                # (about 0.05 ms instead of 20-200 ms here); it stays atomic, and readers
                # never block the writer. Where WAL is unavailable, the default journal stays.
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            except sqlite3.OperationalError:
                pass
        except BaseException:
            conn.close()
            raise
        return conn

    @staticmethod
    def _create_schema(conn: sqlite3.Connection) -> None:
        existing = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if {"meta", "attempts"} <= existing:
            return  # nothing to write: a read-only file still opens for reading
        with _transaction(conn):
            for statement in _SCHEMA:
                conn.execute(statement)

    def _connection(self) -> sqlite3.Connection:
        if self._conn is None:
            try:
                self._conn = self._open_file()
            except (sqlite3.Error, OSError) as exc:
                self._fall_back(exc)
        return self._conn

    def _fall_back(self, exc: BaseException) -> None:
        """Switch to memory, keeping what can still be read from the file, and say so once."""
        memory = self._open_memory()
        if self._conn is not None:
            try:
                self._conn.backup(memory)  # a read-only file can still be copied
            except sqlite3.Error:
                pass
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
        self._conn = memory
        self.in_memory = True
        reason = str(exc) or type(exc).__name__
        self.note = (
            f"Note: your quiz progress cannot be saved to {self.path} ({reason}). "
            "The quiz carries on and keeps this session's answers in memory; "
            "they are lost when the kernel stops. To start a fresh file, move that one aside "
            f"or point {ENV_VAR} at another path."
        )
        print(self.note)

    def _run(self, work):
        """Run ``work(conn)``; if the file fails, fall back to memory once and run it there."""
        with self._lock:
            conn = self._connection()
            try:
                return work(conn)
            except (sqlite3.Error, OSError) as exc:
                if self.in_memory:
                    raise
                self._fall_back(exc)
                return work(self._conn)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    # ---------------------------------------------------------------- writes

    def record(self, question_id: str, set_id: str, correct: bool, answer: str = "", *, source: str = "notebook") -> None:
        """Add one attempt, in its own transaction."""
        row = (str(question_id), str(set_id), int(bool(correct)), str(answer), str(source), time.time())

        def work(conn):
            with _transaction(conn):
                conn.execute(
                    "INSERT INTO attempts (question_id, set_id, correct, answer, source, created) VALUES (?, ?, ?, ?, ?, ?)",
                    row,
                )

        self._run(work)

    def reset(self) -> int:
        """Erase every attempt (the learner id stays); returns how many were erased."""

        def work(conn):
            with _transaction(conn):
                return conn.execute("DELETE FROM attempts").rowcount

        return self._run(work)

    @property
    def learner_id(self) -> str:
        """A random id, made once and kept in the file; the same in every kernel."""

        select = "SELECT value FROM meta WHERE key = 'learner_id'"

        def work(conn):
            row = conn.execute(select).fetchone()  # read first: a read-only file still has its id
            if row is not None:
                return row[0]
            with _transaction(conn):
                # INSERT OR IGNORE then SELECT: two kernels starting at once agree on one id.
                conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('learner_id', ?)", (uuid.uuid4().hex,))
                return conn.execute(select).fetchone()[0]

        return self._run(work)

    # ---------------------------------------------------------------- reads

    def attempts(self, question_id: str | None = None) -> list[Attempt]:
        """Every attempt, oldest first (or those of one question)."""
        sql = "SELECT question_id, set_id, correct, answer, source, created FROM attempts"
        args: tuple = ()
        if question_id is not None:
            sql += " WHERE question_id = ?"
            args = (question_id,)
        rows = self._run(lambda conn: conn.execute(sql + " ORDER BY id", args).fetchall())
        return [Attempt(q, s, bool(c), a, src, t) for q, s, c, a, src, t in rows]

    def count(self) -> int:
        return self._run(lambda conn: conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])

    def question_stats(self) -> dict[str, QuestionStats]:
        """Per question id: tries, best (ever correct), last (latest try correct), latest time."""
        sql = """
            SELECT a.question_id, COUNT(*), MAX(a.correct),
                   (SELECT b.correct FROM attempts b WHERE b.question_id = a.question_id ORDER BY b.id DESC LIMIT 1),
                   MAX(a.created)
            FROM attempts a GROUP BY a.question_id
        """
        rows = self._run(lambda conn: conn.execute(sql).fetchall())
        return {q: QuestionStats(n, bool(best), bool(last), t) for q, n, best, last, t in rows}


class _transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on error: the write lock is taken up front."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.conn.execute("COMMIT")
        else:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        return False


# ---------------------------------------------------------------- one store per file per process

_STORES: dict[Path, ProgressStore] = {}
_STORES_LOCK = threading.Lock()


def default_store() -> ProgressStore:
    """The store for the current progress path, shared by every quiz in this process.

    Sharing it means a broken file prints its note once per session, not once per quiz.
    """
    path = progress_path()
    with _STORES_LOCK:
        if path not in _STORES:
            _STORES[path] = ProgressStore(path)
        return _STORES[path]


# ---------------------------------------------------------------- summaries


@dataclass(frozen=True)
class SetResult:
    """One set's standing: questions, how many tried, right at least once (best), right on the latest try (last)."""

    set_id: str
    title: str
    questions: int
    attempted: int
    best: int
    last: int
    tries: int
    last_time: float | None


def set_result(bank: Bank, set_id: str, stats: dict[str, QuestionStats]) -> SetResult:
    """A set's result from per-question stats; a question counts for its set wherever it was answered."""
    questions = bank.questions(set_id)
    mine = [stats.get(q.id, QuestionStats()) for q in questions]
    times = [s.last_time for s in mine if s.last_time is not None]
    return SetResult(
        set_id=set_id,
        title=bank.get_set(set_id).title,
        questions=len(questions),
        attempted=sum(s.tries > 0 for s in mine),
        best=sum(s.ever_correct for s in mine),
        last=sum(s.last_correct for s in mine),
        tries=sum(s.tries for s in mine),
        last_time=max(times) if times else None,
    )


def course_score(bank: Bank, stats: dict[str, QuestionStats]) -> tuple[int, int]:
    """(questions answered correctly at least once, questions in the course), practice set left out."""
    questions = bank.course_questions()
    return sum(stats.get(q.id, QuestionStats()).ever_correct for q in questions), len(questions)


def progress_summary(store: ProgressStore | None = None, bank: Bank | None = None) -> dict[str, SetResult]:
    """Per set 01-10, the learner's results; the review (10) counts its included questions too.

    Returns a dict keyed by set id, in course order, plus the key ``"course"``: a
    SetResult over every course question once.
    """
    store = store or default_store()
    bank = bank or default_bank()
    stats = store.question_stats()
    summary = {set_id: set_result(bank, set_id, stats) for set_id in COURSE_SET_IDS if set_id in bank.sets}
    questions = bank.course_questions()
    mine = [stats.get(q.id, QuestionStats()) for q in questions]
    times = [s.last_time for s in mine if s.last_time is not None]
    summary["course"] = SetResult(
        "course", "Whole course", len(questions), sum(s.tries > 0 for s in mine), sum(s.ever_correct for s in mine),
        sum(s.last_correct for s in mine), sum(s.tries for s in mine), max(times) if times else None,
    )
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
