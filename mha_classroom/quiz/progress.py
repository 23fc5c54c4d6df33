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
from pathlib import Path

from ._progress_file import (
    OPTIONAL_COLUMNS,
    Attempt,
    Busy,
    QuestionStats,
    Unusable,
    check_readable,
    classify,
    connect,
    create_schema,
    error_name,
    expand_user,
    file_stats,
    has_sqlite_header,
    make_private_folders,
    read_attempts,
    sqlite_problem,
    transaction,
)
from .bank import Bank, default_bank

ENV_VAR = "MHA_COURSE_PROGRESS"
DEFAULT_PATH = Path("~/.mha_course/progress.sqlite3")
#: Seconds a writer waits for another kernel's transaction before keeping the answer in memory.
BUSY_TIMEOUT_S = 10.0
#: Seconds a later write waits while answers are already waiting for a busy file.
RETRY_TIMEOUT_S = 0.25


def progress_path() -> Path:
    """The progress file: $MHA_COURSE_PROGRESS, or ~/.mha_course/progress.sqlite3.

    A ``~user`` that names no user is returned as given (the store then explains it).
    """
    return expand_user(Path(os.environ.get(ENV_VAR) or DEFAULT_PATH))


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
        self.path = expand_user(Path(path)) if path is not None else progress_path()
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
        except Busy as exc:
            self._opened = False  # try again with the next answer
            self._timeout = RETRY_TIMEOUT_S
            self._say_busy(exc)
        except Unusable as exc:
            self._give_up_on_file(str(exc))
        except sqlite3.Error as exc:
            damaged = error_name(exc).startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB")) or type(exc) is sqlite3.DatabaseError
            self._give_up_on_file(f"it is damaged ({exc})" if damaged else f"{type(exc).__name__}: {exc}")
        except Exception as exc:  # noqa: BLE001 - whatever the file does, the quiz goes on
            self._give_up_on_file(f"{type(exc).__name__}: {exc}")

    def _check_path(self) -> bool:
        """Refuse paths that are not a regular file of ours; make a missing file private. True: new file."""
        text = str(self.path)
        if text.startswith("~"):
            user = text[1:].split("/", 1)[0]
            raise Unusable(f"{ENV_VAR}={text!r} starts with ~{user}, and no user {user!r} exists on this machine")
        try:
            info = os.lstat(self.path)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            raise Unusable(f"it cannot be looked at ({exc.strerror or exc})") from None
        if info is not None and stat.S_ISLNK(info.st_mode):
            target = os.path.realpath(self.path)
            try:
                target_info = os.stat(target)
            except OSError:
                raise Unusable(f"it is a link to {target}, which does not exist; the quiz does not create files through a link") from None
            if not stat.S_ISREG(target_info.st_mode) or target_info.st_size == 0 or not has_sqlite_header(target):
                raise Unusable(f"it is a link to {target}, which is not a quiz progress file")
            self._link_target = target
            return False
        if info is not None and not stat.S_ISREG(info.st_mode):
            kind = ("a folder" if stat.S_ISDIR(info.st_mode) else "a FIFO" if stat.S_ISFIFO(info.st_mode)
                    else "a socket" if stat.S_ISSOCK(info.st_mode) else "a device" if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)
                    else "not a regular file")
            raise Unusable(f"it is {kind}, not a file")
        self._link_target = None
        if info is not None:
            return info.st_size == 0
        make_private_folders(self.path.parent)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            os.close(fd)
        except FileExistsError:
            return self._check_path()  # another kernel made it a moment ago
        except OSError as exc:
            raise Unusable(f"it cannot be created ({exc.strerror or exc})") from None
        return True

    def _open_file(self) -> sqlite3.Connection | None:
        """Open, check and if needed migrate the file. None: opened read-only (answers in memory)."""
        self._check_path()
        if self.path.stat().st_size and not has_sqlite_header(self.path):
            raise Unusable("it is not a SQLite database (its first bytes say something else)")
        conn = connect(str(self.path), timeout=self._timeout)
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(self._timeout * 1000)}")
            try:
                kind = classify(conn)
                if self._link_target and kind == "empty":
                    raise Unusable(f"it is a link to {self._link_target}, which is not a quiz progress file")
                if kind != "empty":
                    check_readable(conn)  # before anything is written, a migration included
                if kind == "empty":
                    with transaction(conn):
                        create_schema(conn)
                elif kind == "old":
                    self._migrate(conn)
            except sqlite3.Error as exc:
                problem = sqlite_problem(exc)
                if problem == "busy":
                    raise Busy(str(exc)) from None
                if problem == "read_only":
                    conn.close()
                    return self._open_read_only(exc)
                raise Unusable(f"it is damaged ({exc})") from None
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
            except Unusable:
                raise
            except (sqlite3.Error, OSError) as exc:
                last = exc
        if rows is None:
            raise Unusable(f"it cannot be read or written ({last})")
        self._snapshot = rows
        self.read_only = True
        self._give_up_on_file(f"it cannot be written ({why})", kept=len(rows))
        return None

    def _read_from(self, conn: sqlite3.Connection) -> list[Attempt]:
        kind = classify(conn)
        if kind == "empty":
            return []
        check_readable(conn)
        self._meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        return read_attempts(conn)

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
            conn = connect(str(copy))
            try:
                return self._read_from(conn)
            finally:
                conn.close()

    def _read_in_place(self, mode: str):
        def read() -> list[Attempt]:
            uri = Path(os.path.realpath(self.path)).as_uri()
            conn = connect(f"{uri}?{mode}", uri=True, timeout=1.0)
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
        with transaction(conn):
            columns = {row[1] for row in conn.execute("PRAGMA table_info(attempts)")}
            for column, statement in OPTIONAL_COLUMNS.items():
                if column not in columns:
                    conn.execute(statement)
            create_schema(conn)
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
            with transaction(conn):
                conn.executemany(
                    "INSERT INTO attempts (question_id, set_id, correct, answer, source, created) VALUES (?, ?, ?, ?, ?, ?)",
                    rows,
                )
        except sqlite3.Error as exc:
            problem = sqlite_problem(exc)
            if problem == "busy":
                self._say_busy(exc)
                return False
            if problem == "read_only":
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
                    with transaction(self._conn):
                        return erased + self._conn.execute("DELETE FROM attempts").rowcount
                except sqlite3.Error as exc:
                    if sqlite_problem(exc) == "busy":
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
                    with transaction(self._conn):
                        # INSERT OR IGNORE then SELECT: two kernels starting at once agree on one id.
                        self._conn.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('learner_id', ?)", (uuid.uuid4().hex,))
                        return self._conn.execute(select).fetchone()[0]
                except sqlite3.Error as exc:
                    self._handle_read_error(exc)
            return self._meta.setdefault("learner_id", uuid.uuid4().hex)

    # ---------------------------------------------------------------- reads

    def _file_rows(self) -> list[Attempt]:
        return read_attempts(self._conn)

    def _handle_read_error(self, exc: sqlite3.Error) -> None:
        if sqlite_problem(exc) == "busy":
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
        rows = self._read_file(read_attempts)
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
        stats = self._read_file(file_stats)
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
