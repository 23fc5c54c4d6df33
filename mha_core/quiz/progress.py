"""Quiz progress: a small SQLite file that two kernels can write at once, and that never crashes a quiz.

Where: the path in the environment variable ``MHA_COURSE_PROGRESS``, or
``~/.mha_course/progress.sqlite3``. A new file is made private to you (0600, in a
folder made 0700): your answers are personal.

What it holds (schema version 1, kept in ``PRAGMA user_version``; the file is marked
as ours by ``PRAGMA application_id``):

    attempts(id, question_id, set_id, correct, answer, source, created)
        one row per Check (or terminal answer); nothing is ever updated in place
    meta(key, value)
        'learner_id': a random id made on first use, the same in every kernel

The file uses SQLite's write-ahead log (``-wal`` and ``-shm`` files appear next to it
while a kernel has it open), so recording an answer takes well under a millisecond;
a power cut can lose the last answers, never corrupt the file.

Every result is derived from the attempts: a question's tries, whether it was ever
answered correctly (its best result) and whether its latest try was correct (its last
result). So a write is one INSERT inside one transaction: there is no
read-modify-write to lose when two kernels record at the same moment. SQLite's own
locking serialises the writers, and a busy timeout makes the second wait instead of
failing.

What happens when the file is not usable; in every case the quiz goes on, a note
says once what is wrong and where, and the file is never changed:

- busy (another program holds the write lock past the timeout) or full disk: the
  answer is kept in memory and written with the next answer, or when the store
  closes, once the file is free again;
- read-only (file, folder or disk): the file is read as it is, so earlier progress
  shows; new answers are kept in memory;
- not a SQLite file, a SQLite file of something else, one written by a newer version
  of this course, a damaged one, or not a regular file (a folder, a FIFO, a link to
  something that is not a progress file): the store works in memory only.

A file of an older schema that this module knows is migrated, after a backup copy is
written next to it (``progress.sqlite3.v0.bak``).
"""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from .bank import COURSE_SET_IDS, Bank, default_bank

ENV_VAR = "MHA_COURSE_PROGRESS"
DEFAULT_PATH = Path("~/.mha_course/progress.sqlite3")
#: Seconds a writer waits for another kernel's transaction before keeping the answer in memory.
BUSY_TIMEOUT_S = 10.0
#: Seconds a later write waits while answers are already waiting for a busy file.
RETRY_TIMEOUT_S = 0.25
#: The schema this module writes (PRAGMA user_version). 0 is a file from before versions were stamped.
SCHEMA_VERSION = 1
#: PRAGMA application_id of a progress file: "MHAq".
APPLICATION_ID = 0x4D484171
SQLITE_HEADER = b"SQLite format 3\x00"

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
#: Columns a file must have for its attempts to be read; the others are added by the migration.
_REQUIRED_COLUMNS = {"id", "question_id", "set_id", "correct", "created"}
_OPTIONAL_COLUMNS = {
    "answer": "ALTER TABLE attempts ADD COLUMN answer TEXT NOT NULL DEFAULT ''",
    "source": "ALTER TABLE attempts ADD COLUMN source TEXT NOT NULL DEFAULT 'notebook'",
}
#: SQLite errors that pass: another writer, a full disk. Anything else is kept for the session.
_TRANSIENT = ("SQLITE_BUSY", "SQLITE_LOCKED", "SQLITE_FULL", "SQLITE_IOERR")
_READ_ONLY = ("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_AUTH")


class _Unusable(Exception):
    """The file cannot be used at all; the message says why, for the note."""


class _Busy(Exception):
    """The file is locked by another program or its disk is full: try again later."""


def _error_name(exc: BaseException) -> str:
    return getattr(exc, "sqlite_errorname", "") or ""


def _is_transient(exc: BaseException) -> bool:
    name = _error_name(exc)
    if name:
        return name.startswith(_TRANSIENT)
    text = str(exc).lower()
    return "locked" in text or "busy" in text or "disk is full" in text or "disk i/o" in text


def _is_read_only(exc: BaseException) -> bool:
    name = _error_name(exc)
    if name:
        return name.startswith(_READ_ONLY)
    text = str(exc).lower()
    return "readonly" in text or "read-only" in text or "unable to open" in text


def progress_path() -> Path:
    """The progress file: $MHA_COURSE_PROGRESS, or ~/.mha_course/progress.sqlite3.

    A ``~user`` that names no user is returned as given (the store then explains it).
    """
    return _expand(Path(os.environ.get(ENV_VAR) or DEFAULT_PATH))


def _expand(path: Path) -> Path:
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


class ProgressStore:
    """Attempts in a SQLite file, kept in memory where the file cannot take them.

    Attributes:
        path        the file asked for
        in_memory   True when nothing more can be written to the file this session
                    (read-only, not ours, damaged, missing folder ...)
        read_only   True when the file's earlier answers are shown but new ones cannot be written
        note        the note printed when something went wrong (None while the file works)
        pending     answers waiting for a busy or full file (written with the next answer)

    ``bank``: the question bank that ``record`` checks ids against (default: the installed one).
    """

    def __init__(self, path: str | Path | None = None, *, memory: bool = False, bank: Bank | None = None):
        self.path = _expand(Path(path)) if path is not None else progress_path()
        self.note: str | None = None
        self.in_memory = memory
        self.read_only = False
        self.pending: list[Attempt] = []
        self._bank = bank
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        self._opened = memory
        self._snapshot: list[Attempt] = []  # what a read-only or busy file held, last time it was read
        self._hidden = 0  # how many snapshot rows a reset hid (the file itself is never changed)
        self._meta: dict[str, str] = {}
        self._written: list[Attempt] = []  # this session's answers that reached the file
        self._notes_said: set[str] = set()
        self._link_target: str | None = None
        self._timeout = BUSY_TIMEOUT_S  # shorter once answers are waiting for a busy file

    # ---------------------------------------------------------------- notes

    def _say(self, kind: str, text: str) -> None:
        """Print one plain note per kind of problem per store, and keep it for the widgets."""
        self.note = text
        if kind not in self._notes_said:
            self._notes_said.add(kind)
            print(text)

    def _say_busy(self, exc: BaseException) -> None:
        self._say(
            "busy",
            f"Note: your quiz progress file {self.path} is busy (another program holds it) or its disk is full ({exc}). "
            "Your answers are kept in memory and written to the file as soon as it is free again.",
        )

    def _give_up_on_file(self, reason: str, *, kept: int = 0, snapshot_has_written: bool = False) -> None:
        self.in_memory = True
        if not snapshot_has_written and self._written:
            # This session's answers stay visible even when the file stops being readable.
            written = set(self._written)
            self._snapshot = [a for a in self._snapshot if a not in written]
            self._hidden = min(self._hidden, len(self._snapshot))
            self.pending[:0] = self._written
        self._written = []
        if self._conn is not None:
            try:
                self._conn.close()
            except sqlite3.Error:
                pass
            self._conn = None
        shown = f" Your {kept} earlier answers in it are shown." if kept else ""
        self._say(
            "file",
            f"Note: your quiz progress cannot be saved to {self.path}: {reason}.{shown} "
            "The quiz carries on and keeps this session's answers in memory; they are lost when the kernel stops. "
            f"The file is left as it is. To use another file, point {ENV_VAR} at another path.",
        )

    # ---------------------------------------------------------------- opening

    def _ensure_open(self) -> None:
        if self._opened:
            return
        self._opened = True
        try:
            self._conn = self._open_file()
            self._timeout = BUSY_TIMEOUT_S
        except _Busy as exc:
            self._opened = False  # try again with the next answer
            self._timeout = RETRY_TIMEOUT_S
            self._say_busy(exc)
        except _Unusable as exc:
            self._give_up_on_file(str(exc))
        except sqlite3.Error as exc:
            damaged = _error_name(exc).startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or type(exc) is sqlite3.DatabaseError
            self._give_up_on_file(f"it is damaged ({exc})" if damaged else f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - whatever the file does, the quiz goes on
            self._give_up_on_file(f"{type(exc).__name__}: {exc}")

    def _check_path(self) -> bool:
        """Refuse paths that are not a regular file of ours; make a missing file private. True: new file."""
        text = str(self.path)
        if text.startswith("~"):
            user = text[1:].split("/", 1)[0]
            raise _Unusable(f"{ENV_VAR}={text!r} starts with ~{user}, and no user {user!r} exists on this machine")
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            raise _Unusable(f"it cannot be looked at ({exc.strerror or exc})") from None
        if info is not None and stat.S_ISLNK(info.st_mode):
            target = os.path.realpath(self.path)
            try:
                target_info = os.stat(target)
            except OSError:
                raise _Unusable(f"it is a link to {target}, which does not exist; the quiz does not create files through a link") from None
            if not stat.S_ISREG(target_info.st_mode) or target_info.st_size == 0 or not _has_sqlite_header(target):
                raise _Unusable(f"it is a link to {target}, which is not a quiz progress file")
            self._link_target = target
            return False
        if info is not None and not stat.S_ISREG(info.st_mode):
            kind = ("a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode)
                    else "a socket" if stat.S_ISSOCK(info.st_mode) else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                    else "not a regular file")
            raise _Unusable(f"it is {kind}, not a file")
        self._link_target = None
        if info is not None:
            return info.st_size == 0
        _make_private_folders(self.path.parent)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            os.close(fd)
        except FileExistsError:
            return self._check_path()  # another kernel made it a moment ago
        except OSError as exc:
            raise _Unusable(f"it cannot be created ({exc.strerror or exc})") from None
        return True

    def _open_file(self) -> sqlite3.Connection | None:
        """Open, check and if needed migrate the file. None: opened read-only (answers in memory)."""
        self._check_path()
        if self.path.stat().st_size and not _has_sqlite_header(self.path):
            raise _Unusable("it is not a SQLite database (its first bytes say something else)")
        conn = _connect(str(self.path), timeout=self._timeout)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            try:
                kind = _classify(conn)
            except sqlite3.Error as exc:
                if _is_transient(exc):
                    raise _Busy(str(exc)) from None
                if _is_read_only(exc):
                    conn.close()
                    return self._open_read_only(exc)
                raise _Unusable(f"it is damaged ({exc})") from None
            if self._link_target and kind == "empty":
                raise _Unusable(f"it is a link to {self._link_target}, which is not a quiz progress file")
            if kind != "empty":
                _check_readable(conn)  # before anything is written, a migration included
            try:
                if kind == "empty":
                    with _transaction(conn):
                        _create_schema(conn)
                elif kind == "old":
                    self._migrate(conn)
            except sqlite3.Error as exc:
                if _is_transient(exc):
                    raise _Busy(str(exc)) from None
                if _is_read_only(exc):
                    conn.close()
                    return self._open_read_only(exc)
                raise
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            try:
                # Write-ahead log: a commit appends to the log without waiting for the disk
                # (about 0.05 ms instead of 20-200 ms here); it stays atomic, and readers
                # never block the writer. Where WAL is unavailable, the default journal stays.
                conn.execute("PRAGMA journal_mode = WAL")
                conn.execute("PRAGMA synchronous = NORMAL")
            except sqlite3.Error:
                pass
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_read_only(self, why: BaseException) -> None:
        """Read what the file holds without writing anything next to it, then go on in memory.

        First from a private copy of the file and its write-ahead log (so answers still in
        the log show too), then read-only in place, then as an immutable file.
        """
        rows: list[Attempt] | None = None
        last: BaseException = why
        for attempt in (self._read_copy, self._read_in_place("mode=ro"), self._read_in_place("immutable=1")):
            try:
                rows = attempt()
                break
            except _Unusable:
                raise
            except (sqlite3.Error, OSError) as exc:
                last = exc
        if rows is None:
            raise _Unusable(f"it cannot be read or written ({last})")
        self._snapshot = rows
        self.read_only = True
        self._give_up_on_file(f"it cannot be written ({why})", kept=len(rows))
        return None

    def _read_from(self, conn: sqlite3.Connection) -> list[Attempt]:
        kind = _classify(conn)
        if kind == "empty":
            return []
        _check_readable(conn)
        self._meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        return _read_attempts(conn)

    def _read_copy(self) -> list[Attempt]:
        import shutil
        import tempfile

        source = Path(os.path.realpath(self.path))
        with tempfile.TemporaryDirectory(prefix="mha_progress_") as folder:
            copy = Path(folder) / "progress.sqlite3"
            shutil.copyfile(source, copy)
            wal = source.with_name(source.name + "-wal")
            if wal.exists():
                shutil.copyfile(wal, copy.with_name(copy.name + "-wal"))
            conn = _connect(str(copy))
            try:
                return self._read_from(conn)
            finally:
                conn.close()

    def _read_in_place(self, mode: str):
        def read() -> list[Attempt]:
            uri = Path(os.path.realpath(self.path)).as_uri()
            conn = _connect(f"{uri}?{mode}", uri=True, timeout=1.0)
            try:
                return self._read_from(conn)
            finally:
                conn.close()

        return read

    def _migrate(self, conn: sqlite3.Connection) -> None:
        """Bring a version-0 file to version 1, after writing a backup copy next to it."""
        backup = self.path.with_name(self.path.name + ".v0.bak")
        if not backup.exists():
            target = sqlite3.connect(str(backup))
            try:
                conn.backup(target)
            finally:
                target.close()
            os.chmod(backup, 0o600)
        with _transaction(conn):
            columns = {row[1] for row in conn.execute("PRAGMA table_info(attempts)")}
            for column, statement in _OPTIONAL_COLUMNS.items():
                if column not in columns:
                    conn.execute(statement)
            _create_schema(conn)
        print(f"Note: your quiz progress file {self.path} was updated to the current format; "
              f"a copy of the old one is at {backup}.")

    def _connection(self) -> sqlite3.Connection | None:
        """The file's connection, or None when the store works in memory."""
        self._ensure_open()
        return self._conn

    def close(self) -> None:
        """Write any answers still waiting (waiting up to the busy timeout), then close the file."""
        with self._lock:
            if self.pending and not self.in_memory:
                self._timeout = BUSY_TIMEOUT_S
                self._ensure_open()
                self._flush(BUSY_TIMEOUT_S)
            if self._conn is not None:
                self._conn.close()
                self._conn = None
                self._opened = False

    # ---------------------------------------------------------------- writes

    def _check_ids(self, question_id: str, set_id: str) -> None:
        bank = self._bank if self._bank is not None else default_bank()
        try:
            question = bank.question(question_id)
        except KeyError:
            raise ValueError(f"question_id={question_id!r} is not a question of the bank") from None
        showing = [s for s in bank.sets if question_id in (q.id for q in bank.questions(s))]
        if set_id not in showing:
            raise ValueError(f"set_id={set_id!r} does not show {question.id}; it is shown in set {', '.join(showing)}")

    def record(self, question_id: str, set_id: str, correct: bool, answer: str = "", *, source: str = "notebook") -> None:
        """Add one attempt, in its own transaction; a busy file gets it later."""
        if not isinstance(question_id, str) or not isinstance(set_id, str):
            raise TypeError(f"question_id and set_id must be text, got {question_id!r} and {set_id!r}")
        self._check_ids(question_id, set_id)
        row = Attempt(question_id, set_id, bool(correct), str(answer), str(source), time.time())
        with self._lock:
            self._ensure_open()
            self.pending.append(row)
            if self._conn is not None:
                self._flush(RETRY_TIMEOUT_S if len(self.pending) > 1 else BUSY_TIMEOUT_S)

    def _flush(self, timeout_s: float) -> bool:
        """Write every waiting answer in one transaction. True when nothing is left waiting."""
        conn = self._conn
        if conn is None or not self.pending:
            return not self.pending
        rows = [(a.question_id, a.set_id, int(a.correct), a.answer, a.source, a.created) for a in self.pending]
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(timeout_s * 1000)}")
            with _transaction(conn):
                conn.executemany(
                    "INSERT INTO attempts (question_id, set_id, correct, answer, source, created) VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.Error as exc:
            if _is_transient(exc):
                self._say_busy(exc)
                return False
            if _is_read_only(exc):
                read = False
                try:
                    self._snapshot, self._hidden = self._file_rows(), 0
                    self._meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
                    read = True
                except sqlite3.Error:
                    pass
                self._conn.close()
                self._conn = None
                self.read_only = True
                self._give_up_on_file(f"it cannot be written ({exc})", kept=len(self._snapshot), snapshot_has_written=read)
                return False
            self._give_up_on_file(f"it is damaged ({exc})")
            return False
        finally:
            if self._conn is not None:
                try:
                    conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
                except sqlite3.Error:
                    pass
        written = len(self.pending)
        self._written.extend(self.pending)
        self.pending.clear()
        if "busy" in self._notes_said and self.note and "busy" in self.note:
            self.note = None
            print(f"Your quiz progress file {self.path} is free again: {written} waiting answer(s) were saved.")
        return True

    def reset(self) -> int:
        """Erase every attempt (the learner id stays); returns how many were erased.

        A file that cannot be written is not changed: its answers are hidden for this session.
        """
        with self._lock:
            self._ensure_open()
            erased = len(self.pending)
            self.pending.clear()
            if self._conn is not None:
                try:
                    with _transaction(self._conn):
                        return erased + self._conn.execute("DELETE FROM attempts").rowcount
                except sqlite3.Error as exc:
                    if _is_transient(exc):
                        self._say_busy(exc)
                        return erased
                    self._give_up_on_file(f"it could not be changed ({exc})")
            erased += len(self._snapshot) - self._hidden
            self._hidden = len(self._snapshot)
            return erased

    @property
    def learner_id(self) -> str:
        """A random id, made once and kept in the file; the same in every kernel."""
        select = "SELECT value FROM meta WHERE key = 'learner_id'"
        with self._lock:
            self._ensure_open()
            if self._conn is not None:
                try:
                    row = self._conn.execute(select).fetchone()  # read first: a busy file still has its id
                    if row is not None:
                        return row[0]
                    with _transaction(self._conn):
                        # INSERT OR IGNORE then SELECT: two kernels starting at once agree on one id.
                        self._conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('learner_id', ?)", (uuid.uuid4().hex,))
                        return self._conn.execute(select).fetchone()[0]
                except sqlite3.Error as exc:
                    self._handle_read_error(exc)
            return self._meta.setdefault("learner_id", uuid.uuid4().hex)

    # ---------------------------------------------------------------- reads

    def _file_rows(self) -> list[Attempt]:
        return _read_attempts(self._conn)

    def _handle_read_error(self, exc: sqlite3.Error) -> None:
        if _is_transient(exc):
            return  # a busy file: the last snapshot stands in
        self._give_up_on_file(f"it could not be read ({exc})")

    def _read_file(self, read):
        """``read(conn)`` on the file after writing what waits; None where the file is not (or not now) readable."""
        with self._lock:
            self._ensure_open()
            if self._conn is None:
                return None
            if self.pending:
                self._flush(RETRY_TIMEOUT_S)
            if self._conn is None:
                return None
            try:
                return read(self._conn)
            except sqlite3.Error as exc:
                self._handle_read_error(exc)
                return None

    def _kept(self) -> list[Attempt]:
        """What this store holds outside the file: a read-only file's answers (less a reset), then those waiting."""
        return self._snapshot[self._hidden:] + list(self.pending)

    def attempts(self, question_id: str | None = None) -> list[Attempt]:
        """Every attempt, oldest first (or those of one question)."""
        rows = self._read_file(_read_attempts)
        if rows is not None:
            self._snapshot, self._hidden = rows, 0
        everything = (rows if rows is not None else self._snapshot[self._hidden:]) + list(self.pending)
        return [a for a in everything if question_id is None or a.question_id == question_id]

    def count(self) -> int:
        n = self._read_file(lambda conn: conn.execute("SELECT COUNT(*) FROM attempts").fetchone()[0])
        with self._lock:
            return (n if n is not None else len(self._snapshot) - self._hidden) + len(self.pending)

    def question_stats(self) -> dict[str, QuestionStats]:
        """Per question id: tries, best (ever correct), last (latest try correct), latest time, where first right."""
        stats = self._read_file(_file_stats)
        with self._lock:
            extra = list(self.pending) if stats is not None else self._kept()
        stats = dict(stats or {})
        for a in extra:
            s = stats.get(a.question_id, QuestionStats())
            stats[a.question_id] = QuestionStats(
                s.tries + 1, s.ever_correct or a.correct, a.correct,
                a.created if s.last_time is None else max(s.last_time, a.created),
                s.first_correct_set or (a.set_id if a.correct else None),
            )
        return stats


def _file_stats(conn: sqlite3.Connection) -> dict[str, QuestionStats]:
    """Per-question stats computed by SQLite (fast for a file of many thousand answers)."""
    sql = """
        SELECT a.question_id, COUNT(*), MAX(a.correct = 1),
               (SELECT b.correct = 1 FROM attempts b WHERE b.question_id = a.question_id ORDER BY b.id DESC LIMIT 1),
               MAX(a.created),
               (SELECT c.set_id FROM attempts c WHERE c.question_id = a.question_id AND c.correct = 1 ORDER BY c.id LIMIT 1)
        FROM attempts a GROUP BY a.question_id
    """
    return {str(q): QuestionStats(n, bool(best), bool(last), _as_time(t), None if first is None else str(first))
            for q, n, best, last, t, first in conn.execute(sql).fetchall()}


def _connect(target: str, **options) -> sqlite3.Connection:
    """A connection that reads damaged text as text (U+FFFD), never as a UnicodeDecodeError."""
    conn = sqlite3.connect(target, isolation_level=None, check_same_thread=False, **options)
    conn.text_factory = lambda raw: raw.decode("utf-8", "replace")
    return conn


def _has_sqlite_header(path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_HEADER)) == SQLITE_HEADER
    except OSError:
        return False


def _make_private_folders(folder: Path) -> None:
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
            raise _Unusable(f"its folder {made} cannot be made ({exc.strerror or exc})") from None


def _classify(conn: sqlite3.Connection) -> str:
    """'empty', 'current' or 'old' (a file this module migrates); raises _Unusable for any other file."""
    tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    app_id = conn.execute("PRAGMA application_id").fetchone()[0]
    if not tables and version == 0 and app_id == 0:
        return "empty"
    if app_id not in (0, APPLICATION_ID) or not {"meta", "attempts"} <= tables:
        raise _Unusable("it is a SQLite database of some other program, not a quiz progress file")
    if version > SCHEMA_VERSION:
        raise _Unusable(f"it was written by a newer version of this course (schema {version}; this one reads up to "
                        f"{SCHEMA_VERSION}): update the package with pip")
    columns = {row[1] for row in conn.execute("PRAGMA table_info(attempts)")}
    if not _REQUIRED_COLUMNS <= columns:
        raise _Unusable(f"its attempts table lacks {', '.join(sorted(_REQUIRED_COLUMNS - columns))}, so it cannot be read")
    if version == SCHEMA_VERSION and app_id == APPLICATION_ID and set(_OPTIONAL_COLUMNS) <= columns:
        return "current"
    return "old"


def _create_schema(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA:
        conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


def _check_readable(conn: sqlite3.Connection) -> None:
    """Every page and index of the file reads back: damage past the first page is found now, before anything is written."""
    result = conn.execute("PRAGMA integrity_check(3)").fetchall()
    if result != [("ok",)]:
        raise _Unusable(f"it is damaged (SQLite's check says: {'; '.join(str(r[0]) for r in result[:3])})")


def _read_attempts(conn: sqlite3.Connection) -> list[Attempt]:
    columns = {row[1] for row in conn.execute("PRAGMA table_info(attempts)")}
    answer = "answer" if "answer" in columns else "''"
    source = "source" if "source" in columns else "'notebook'"
    rows = conn.execute(f"SELECT question_id, set_id, correct, {answer}, {source}, created FROM attempts ORDER BY id").fetchall()
    return [Attempt(str(q), str(s), c == 1, str(a), str(src), _as_time(t)) for q, s, c, a, src, t in rows]


def _as_time(value) -> float:
    try:
        t = float(value)
    except (TypeError, ValueError):
        return 0.0
    return t if t == t and abs(t) != float("inf") else 0.0


class _transaction:
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


def _flush_at_exit() -> None:
    for store in list(_STORES.values()):
        try:
            store.close()
        except Exception:  # noqa: BLE001 - never fail the interpreter's exit
            pass


import atexit  # noqa: E402

atexit.register(_flush_at_exit)


# ---------------------------------------------------------------- summaries


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
    """Per set 01-10, the learner's results on the set's own questions; then ``"course"``, every course question once.

    A question counts in the set it belongs to, wherever it was answered, so the rows add
    up to the course row. The review (10) counts its own questions; its ``repeated`` says
    how many more it shows from notebooks 01-09 (they count in their own rows).
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
