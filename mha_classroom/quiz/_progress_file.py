"""The progress file itself: its schema, how SQLite errors are read, and the small steps that open and read it.

``progress.ProgressStore`` decides what to do (keep answers in memory, show a note);
this module knows the file: what a progress file looks like, which SQLite errors
pass (another writer, a full disk) and which mean read-only, and how to open, check,
create and read one without changing anything it should not.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from pathlib import Path

#: The schema this module writes (PRAGMA user_version). 0 is a file from before versions were stamped.
SCHEMA_VERSION = 1
#: PRAGMA application_id of a progress file: "MHAq".
APPLICATION_ID = 0x4D484171
SQLITE_HEADER = b"SQLite format 3\x00"

SCHEMA_STATEMENTS = (
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
#: Columns a file must have for its attempts to be read; the others are added by the migration.
REQUIRED_COLUMNS = {"id", "question_id", "set_id", "correct", "created"}
OPTIONAL_COLUMNS = {
    "answer": "ALTER TABLE attempts ADD COLUMN answer TEXT NOT NULL DEFAULT ''",
    "source": "ALTER TABLE attempts ADD COLUMN source TEXT NOT NULL DEFAULT 'notebook'",
}
#: SQLite errors that pass: another writer, a full disk. Anything else is kept for the session.
TRANSIENT_ERRORS = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL", "SQLITE_IOERR")
READ_ONLY_ERRORS = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")


class Unusable(Exception):
    """The file cannot be used at all; the message says why, for the note."""


class Busy(Exception):
    """The file is locked by another program or its disk is full: try again later."""


def error_name(exc: BaseException) -> str:
    return getattr(exc, "sqlite_errorname", "") or ""


def is_transient(exc: BaseException) -> bool:
    name = error_name(exc)
    if name:
        return name.startswith(TRANSIENT_ERRORS)
    text = str(exc).lower()
    return "locked" in text or "busy" in text or "disk is full" in text or "disk i/o" in text


def is_read_only(exc: BaseException) -> bool:
    name = error_name(exc)
    if name:
        return name.startswith(READ_ONLY_ERRORS)
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


def sqlite_problem(exc: BaseException) -> str:
    """What a SQLite error means for the store: "busy" (try again later), "read_only", or "broken"."""
    if is_transient(exc):
        return "busy"
    if is_read_only(exc):
        return "read_only"
    return "broken"


def expand_user(path: Path) -> Path:
    """~ and ~user expanded; a ~user that names no user is kept as given (the store's note explains it)."""
    try:
        return path.expanduser()
    except RuntimeError:
        return path


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
    first_correct_set: str | None = None  # the set it was first answered correctly in


def file_stats(conn: sqlite3.Connection) -> dict[str, QuestionStats]:
    """Per-question stats computed by SQLite (fast for a file of many thousand answers)."""
    sql = """
        SELECT a.question_id, COUNT(*), MAX(a.correct = 1),
               (SELECT b.correct = 1 FROM attempts b WHERE b.question_id = a.question_id ORDER BY b.id DESC LIMIT 1),
               MAX(a.created),
               (SELECT c.set_id FROM attempts c WHERE c.question_id = a.question_id AND c.correct = 1 ORDER BY c.id LIMIT 1)
        FROM attempts a GROUP BY a.question_id
    """
    return {str(q): QuestionStats(n, bool(best), bool(last), as_time(t), None if first is None else str(first))
            for q, n, best, last, t, first in conn.execute(sql).fetchall()}


def connect(target: str, **options) -> sqlite3.Connection:
    """A connection that reads damaged text as text (U+FFFD), never as a UnicodeDecodeError."""
    conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, **options)
    conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
    return conn


def has_sqlite_header(path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def make_private_folders(folder: Path) -> None:
    """Make the missing folders of ``folder``, private to the user (0700); existing ones are left alone."""
    missing = []
    while not folder.exists():
        missing.append(folder)
        if folder.parent == folder:
            break
        folder = folder.parent
    for made in reversed(missing):
        try:
            made.mkdir(mode=0o700)
        except FileExistsError:
            pass
        except OSError as exc:
            raise Unusable(f"its folder {made} cannot be made ({exc.strerror or exc})") from None


def classify(conn: sqlite3.Connection) -> str:
    """'empty', 'current' or 'old' (a file this module migrates); raises Unusable for any other file."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if not tables and version == 0 and app_id == 0:
        return "empty"
    if app_id not in (0, APPLICATION_ID) or not {"meta", "attempts"} <= tables:
        raise Unusable("it is a SQLite database of some other program, not a quiz progress file")
    if version > SCHEMA_VERSION:
        raise Unusable(f"it was written by a newer version of this course (schema {version}; this one reads up to "
                        f"{SCHEMA_VERSION}): update the package with pip")
    columns = {row[1] for row in conn.execute("PRAGMA table_info(attempts)")}
    if not REQUIRED_COLUMNS <= columns:
        raise Unusable(f"its attempts table lacks {', '.join(sorted(REQUIRED_COLUMNS - columns))}, so it cannot be read")
    if version == SCHEMA_VERSION and app_id == APPLICATION_ID and set(OPTIONAL_COLUMNS) <= columns:
        return "current"
    return "old"


def create_schema(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA_STATEMENTS:
        conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def check_readable(conn: sqlite3.Connection) -> None:
    """Every page and index of the file reads back: damage past the first page is found now, before anything is written."""
    result = conn.execute("PRAGMA integrity_check(3)").fetchall()
    if result != [("ok",)]:
        raise Unusable(f"it is damaged (SQLite's check says: {'; '.join(str(r[0]) for r in result[:3])})")


def read_attempts(conn: sqlite3.Connection) -> list[Attempt]:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(attempts)")}
    answer = "answer" if "answer" in columns else "''"
    source = "source" if "source" in columns else "'notebook'"
    rows = conn.execute(f"SELECT question_id, set_id, correct, {answer}, {source}, created FROM attempts ORDER BY id").fetchall()
    return [Attempt(str(q), str(s), c == 1, str(a), str(src), as_time(t)) for q, s, c, a, src, t in rows]


def as_time(value) -> float:
    try:
        t = float(value)
    except (TypeError, ValueError):
        return 0.0
    return t if t == t and abs(t) != float("inf") else 0.0


class transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on error: the write lock is taken up front."""

    def __init__(self, conn: sqlite3.Connection):
        self.conn = conn

    def __enter__(self):
        self.conn.execute("BEGIN IMMEDIATE")
        return self.conn

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            try:
                self.conn.execute("COMMIT")
            except BaseException:
                try:
                    self.conn.execute("ROLLBACK")
                except sqlite3.Error:
                    pass
                raise
        else:
            try:
                self.conn.execute("ROLLBACK")
            except sqlite3.Error:
                pass
        return False
