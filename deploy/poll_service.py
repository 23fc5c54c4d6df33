"""The class poll: a JupyterHub-managed service that stores learners' answers and counts them.

JupyterHub starts it (see ``jupyterhub_config.py``, ``c.JupyterHub.services``) with
its own API token and ``JUPYTERHUB_SERVICE_PREFIX`` in the environment. Every request
carries a hub token (``Authorization: token ...``); ``jupyterhub.services.auth.HubAuth``
asks the hub whose token it is and with which scopes.

    POST {prefix}answers            {"question_id": "03-what-is-a-head", "choices": ["2"]}
        any learner whose token has access:services!service=mha-poll (every user's
        server token on the course hub); answers {"stored": true}
    GET  {prefix}counts/<question_id>?window_s=600
        only a token with the scope custom:mha-poll:read (the role ``instructor``);
        answers {"question_id", "answered", "counts": {choice: learners}, "window_s"};
        any other token gets 403
    POST {prefix}verdicts           {"exercise": "split_heads", "status": "mistake",
                                     "mistake": "reshape_without_transpose"}
        what ``mha_classroom.exercises.check`` sends on the hub (the same tokens as answers)
    GET  {prefix}verdicts/<exercise>?window_s=600
        the instructor scope only (403 otherwise); answers {"exercise", "window_s",
        "present", "passed", "mistakes": {mistake: learners}, "other", "not_tried"}
    GET  {prefix}health              no token needed; {"ok": true}

What an answer may be (anything else is refused with 400 and a message saying why;
every error body is JSON ``{"error": "..."}``, never a traceback):

- The body: at most ``MAX_BODY_BYTES`` (4096) bytes of UTF-8 JSON, an object with
  exactly the keys ``question_id`` (a string) and ``choices`` (a list of strings),
  nested at most ``MAX_JSON_DEPTH`` deep. A larger body gets 413: a declared
  Content-Length is refused before one byte of the body is read, and Tornado itself
  (``HTTP_SERVER_OPTIONS``) never reads more than the limit, whatever the framing (a
  chunked body over it is cut off with Tornado's own 400 and the connection closed).
  The size is checked first, before the token: 413 whoever sends it.
- ``question_id``: a question of the course's quiz bank (``data/quizzes/*.json``, read
  once at start with ``mha_classroom.quiz.bank``, the loader the notebooks use; restart the
  service after changing the bank). The same for ``counts/<question_id>``.
- ``choices``, by the question's kind:
  ``single``: exactly one option id; ``multi``: one or more distinct option ids.
  Option ids are the options' data indices as text, ``"0"`` to ``"n-1"``.
  ``numeric``: exactly one number as text, as a learner types it (``"64"``,
  ``"2,362,368"``, ``"1.26e7"``; read by ``mha_classroom.quiz.numbers.parse_number``), finite;
  it is counted under one spelling (``format_number``), so ``"2362368"`` and
  ``"2,362,368"`` count as one answer.
- ``window_s`` (counts, verdicts): a number of seconds in (0, 86400].
- A verdict: the same body limits, an object with the keys ``exercise``, ``status`` and
  (optional, may be null) ``mistake``. ``exercise``: a name of the exercise catalogue
  (``mha_classroom.exercises.catalogue()``, read once at start); ``status``: passed,
  not_attempted, mistake, wrong or error; ``mistake``: one of that exercise's mistake
  names, required for "mistake", allowed for "wrong" (``wrong_shape``), refused for the
  others. The learner's code is never sent.
- Any other route: 404; another method on a route: 405.

How the room is doing on an exercise (``verdicts/<exercise>``), each learner counted once,
by their latest verdict in the window: ``passed``; ``mistakes``, learners per mistake
name; ``other``, wrong results and errors no name explains; ``not_tried``, learners who
sent anything to the poll in the window (an answer or a verdict on any exercise:
``present``) whose latest verdict on this one is "not attempted yet", or who sent none.
A learner who has sent nothing in the window is not counted anywhere: the service does
not ask the hub who is logged in.

Storage: SQLite (``MHA_POLL_DB``, default ``$MHA_HUB_STATE/poll.sqlite3``), in WAL mode.
Why SQLite and not PostgreSQL: one process writes, one small INSERT per answer; a
room of 100 answering within a second is ~100 inserts, well inside what one SQLite
file does in milliseconds, and it needs no server to run, back up or secure. On
Kubernetes the service runs beside the hub with its file on the hub's volume.

The service needs no privileges: it writes only its state folder (the database's
folder: ``poll.sqlite3``, its ``-wal`` and ``-shm`` files, and ``poll.salt``). Run it
as an account of its own that owns that folder; if it cannot open or create its files
it stops at once with a message naming the file, the account and the fix.

Anonymous: the table keeps a keyed hash of the user name (the key is ``poll.salt``, made
at first start and kept beside the database), only to count each learner once (their
latest answer or verdict); names are never stored, and counts say nothing about who answered.
"""

from __future__ import annotations

import difflib
import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import sys
import threading
import time
from pathlib import Path

READ_SCOPE = "custom:mha-poll:read"
SERVICE_NAME = "mha-poll"
ACCESS_SCOPE = f"access:services!service={SERVICE_NAME}"
#: The largest request body the service reads; an answer is well under 200 bytes.
MAX_BODY_BYTES = 4096
#: How deep an answer's JSON may nest: {"choices": [...]} is 2 deep.
MAX_JSON_DEPTH = 4
MAX_CHOICES = 32
MAX_ID_CHARS = 64
MAX_WINDOW_S = 24 * 3600.0
DEFAULT_WINDOW_S = 600.0
#: The Tornado HTTPServer's limits: it never buffers more of a body than the service
#: accepts, nor more than 64 KiB of anything, and drops connections that stall.
HTTP_SERVER_OPTIONS = {
    "max_body_size": MAX_BODY_BYTES,
    "max_header_size": 32 * 1024,
    "max_buffer_size": 64 * 1024,
    "body_timeout": 10.0,
    "idle_connection_timeout": 60.0,
}
ANSWER_SHAPE = '{"question_id": "03-what-is-a-head", "choices": ["2"]}'
VERDICT_SHAPE = '{"exercise": "split_heads", "status": "mistake", "mistake": "reshape_without_transpose"}'
STATUSES = ("passed", "not_attempted", "mistake", "wrong", "error")

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS answers (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        question_id TEXT NOT NULL,
        learner TEXT NOT NULL,
        choices TEXT NOT NULL,
        created REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS answers_question ON answers (question_id, created)",
    """CREATE TABLE IF NOT EXISTS verdicts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        exercise TEXT NOT NULL,
        learner TEXT NOT NULL,
        status TEXT NOT NULL,
        mistake TEXT,
        created REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS verdicts_exercise ON verdicts (exercise, created)",
    "CREATE INDEX IF NOT EXISTS answers_created ON answers (created)",
    "CREATE INDEX IF NOT EXISTS verdicts_created ON verdicts (created)",
    "CREATE INDEX IF NOT EXISTS answers_learner ON answers (learner, id)",
    "CREATE INDEX IF NOT EXISTS verdicts_learner ON verdicts (learner, id)",
)
#: Rows kept per learner and table: the counts use each learner's latest row, so older ones beyond
#: this only fill the disk (one token posting thousands of answers keeps this many).
MAX_ROWS_PER_LEARNER = 200
#: Posts (answers and verdicts together) one learner may make: a burst of RATE_BURST, then
#: RATE_PER_S per second; beyond that 429. A class clicking Check is far below it.
RATE_BURST = 30
RATE_PER_S = 1.0


class PollError(ValueError):
    """A request the service refuses (bad body, question id or choices); its text is sent back with 400."""


class BodyTooLarge(PollError):
    """A body over MAX_BODY_BYTES; answered with 413."""


class StartupError(RuntimeError):
    """The service cannot start (its database, its key or the quiz bank); the message says how to fix it."""


def _short(value, limit: int = 60) -> str:
    """repr(value), cut to ``limit`` characters: a refused body is never echoed whole."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        return f"<{type(value).__name__} too long to show>"
    return text if len(text) <= limit else text[: limit - 4] + "...'"


# --------------------------------------------------------------------------- reading a body


def json_depth(text: str, limit: int) -> int:
    """How deep ``text``'s brackets nest outside strings; stops counting just past ``limit``.

    Run before ``json.loads``, so that no body can reach the parser's recursion limit.
    """
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if deepest > limit:
                    return deepest
        elif char in "]}":
            depth -= 1
    return deepest


def _no_duplicate_keys(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise PollError(f"the body gives the key {_short(key)} twice")
        result[key] = value
    return result


def _no_constants(name):
    raise PollError(f"the body holds {name}, which is not JSON")


def _parse_object(body: bytes, keys: tuple, optional: tuple, what: str, shape: str) -> dict:
    """The JSON object of a request body with only ``keys`` (``optional`` may be absent); PollError or BodyTooLarge."""
    if len(body) > MAX_BODY_BYTES:
        raise BodyTooLarge(f"the body has {len(body)} bytes; {what} may have at most {MAX_BODY_BYTES}")
    if not body.strip():
        raise PollError(f"the body is empty; send {what} as JSON: {shape}")
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise PollError(f"the body is not UTF-8 text; send {what} as JSON: {shape}") from None
    depth = json_depth(text, MAX_JSON_DEPTH)
    if depth > MAX_JSON_DEPTH:
        raise PollError(f"the body's JSON nests more than {MAX_JSON_DEPTH} deep; {what} is {shape}")
    try:
        data = json.loads(text, object_pairs_hook=_no_duplicate_keys, parse_constant=_no_constants)
    except PollError:
        raise
    except (ValueError, RecursionError) as exc:  # RecursionError: cannot happen past json_depth; kept as a guard
        raise PollError(f"the body is not valid JSON ({str(exc)[:80]}); {what} is {shape}") from None
    if not isinstance(data, dict):
        raise PollError(f"the body is a JSON {type(data).__name__}, not an object; {what} is {shape}")
    unknown = sorted(set(data) - set(keys))
    if unknown:
        raise PollError(f"the body has the key {_short(unknown[0])}; {what} has only {', '.join(keys[:-1])} and {keys[-1]}: {shape}")
    for key in keys:
        if key not in data and key not in optional:
            raise PollError(f"the body has no {key}; {what} is {shape}")
    return data


def parse_answer(body: bytes) -> tuple[object, object]:
    """An answer's (question_id, choices) from a request body; PollError (400) or BodyTooLarge (413) if refused.

    Only the shape is checked here; ``Questions.check`` checks the values against the bank.
    """
    data = _parse_object(body, ("question_id", "choices"), (), "an answer", ANSWER_SHAPE)
    return data["question_id"], data["choices"]


def parse_verdict(body: bytes) -> tuple[object, object, object]:
    """A verdict's (exercise, status, mistake) from a request body; as ``parse_answer``, checked by ``Exercises.check``."""
    data = _parse_object(body, ("exercise", "status", "mistake"), ("mistake",), "a verdict", VERDICT_SHAPE)
    return data["exercise"], data["status"], data.get("mistake")


def parse_window(text) -> float:
    """``window_s`` from a query string, in (0, MAX_WINDOW_S] seconds; PollError otherwise."""
    valid = f"a number of seconds in (0, {MAX_WINDOW_S:.0f}]"
    try:
        window_s = float(text)
    except (TypeError, ValueError):
        raise PollError(f"window_s={_short(text)} is not a number; give {valid}") from None
    if not (0 < window_s <= MAX_WINDOW_S):  # also refuses nan and inf
        raise PollError(f"window_s={_short(text)} is out of range; give {valid}")
    return window_s


# --------------------------------------------------------------------------- what the bank allows


class Questions:
    """The question ids the service accepts, and the choices each one takes, from the quiz bank."""

    def __init__(self, questions):
        self._by_id = {q.id: q for q in questions}
        if not self._by_id:
            raise StartupError("the quiz bank has no questions; the poll has nothing to accept")

    @classmethod
    def from_bank(cls, bank=None) -> "Questions":
        """Every question of ``bank`` (default: the installed course bank, ``mha_classroom.quiz.bank``)."""
        try:
            from mha_classroom.quiz.bank import BankError, default_bank
        except ImportError as exc:
            raise StartupError(f"the poll service needs the course package mha_core ({exc}); "
                               "run it with the hub's environment (deploy/.venv-hub)") from None
        try:
            bank = bank if bank is not None else default_bank()
        except (BankError, OSError) as exc:
            raise StartupError(f"the poll service cannot read the quiz bank: {exc}") from None
        for problem in bank.problems.values():  # a broken set file costs only its own questions
            print(f"{SERVICE_NAME}: left out of the poll: {problem}", file=sys.stderr)
        return cls(bank.all_questions())

    def __contains__(self, question_id) -> bool:
        return question_id in self._by_id

    def question(self, question_id):
        """The bank's Question for ``question_id``; PollError naming the nearest id if there is none."""
        if not isinstance(question_id, str):
            raise PollError(f"question_id={_short(question_id)} must be a string, a question id from the "
                            "course's quiz bank such as '03-what-is-a-head'")
        if question_id not in self._by_id:
            near = difflib.get_close_matches(question_id[:MAX_ID_CHARS], list(self._by_id), n=1) if len(question_id) <= 200 else []
            hint = f" (did you mean {near[0]!r}?)" if near else "; ids look like '03-what-is-a-head'"
            raise PollError(f"question_id={_short(question_id)} is not a question in the course's quiz bank{hint}")
        return self._by_id[question_id]

    def check(self, question_id, choices) -> tuple[str, list[str]]:
        """(question_id, the choices as stored) for an answer the bank allows; PollError saying why not otherwise."""
        from mha_classroom.quiz.numbers import format_number, parse_number

        question = self.question(question_id)
        if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
            raise PollError(f"choices={_short(choices)} must be a list of strings, such as [\"2\"]")
        if not choices:
            raise PollError(f"choices=[] is empty; question {question.id} needs an answer")
        if question.kind == "numeric":
            if len(choices) != 1:
                raise PollError(f"question {question.id} takes one number; choices={_short(choices)} has {len(choices)}")
            value = parse_number(choices[0]) if len(choices[0]) <= MAX_ID_CHARS else None
            if value is None:
                raise PollError(f"question {question.id} takes a number, such as [\"64\"]; "
                                f"choices={_short(choices)} is not one")
            return question.id, [format_number(value) if abs(value) < 1e15 else f"{value:.6g}"]
        valid = [str(i) for i in range(len(question.options))]
        for choice in choices:
            if choice not in valid:
                raise PollError(f"choices={_short(choices)}: {_short(choice)} is not an option of question "
                                f"{question.id}; its options are {', '.join(valid)}")
        if len(set(choices)) != len(choices):
            repeated = next(c for c in choices if choices.count(c) > 1)
            raise PollError(f"choices={_short(choices)} gives option {repeated} twice")
        if question.kind == "single" and len(choices) != 1:
            raise PollError(f"question {question.id} has one answer; choices={_short(choices)} picks {len(choices)} "
                            "options (send the one option chosen)")
        return question.id, sorted(choices, key=int)


class Exercises:
    """The exercise names the service accepts, and each one's mistake names, from the exercise catalogue."""

    def __init__(self, catalogue: dict):
        self._mistakes = {name: tuple(entry["mistakes"]) for name, entry in catalogue.items()}
        if not self._mistakes:
            raise StartupError("the exercise catalogue is empty; the poll has no exercise to accept")

    @classmethod
    def from_catalogue(cls) -> "Exercises":
        """Every exercise of the installed course package (``mha_classroom.exercises.catalogue()``)."""
        try:
            from mha_classroom.exercises import catalogue
        except ImportError as exc:
            raise StartupError(f"the poll service needs the course package mha_core ({exc}); "
                               "run it with the hub's environment (deploy/.venv-hub)") from None
        return cls(catalogue())

    def exercise(self, name) -> str:
        """``name`` if it is an exercise; PollError naming the valid ones otherwise."""
        if not isinstance(name, str) or name not in self._mistakes:
            near = difflib.get_close_matches(name, list(self._mistakes), n=1) if isinstance(name, str) and len(name) <= 200 else []
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise PollError(f"exercise={_short(name)} is not an exercise of the course{hint}; "
                            f"the exercises are {', '.join(self._mistakes)}")
        return name

    def check(self, name, status, mistake) -> tuple[str, str, str | None]:
        """(exercise, status, mistake) for a verdict the catalogue allows; PollError saying why not otherwise."""
        name = self.exercise(name)
        if not isinstance(status, str) or status not in STATUSES:
            raise PollError(f"status={_short(status)} is not a verdict's status; give one of {', '.join(STATUSES)}")
        if mistake is None:
            if status == "mistake":
                raise PollError(f"status='mistake' needs the mistake's name, one of {name}'s mistakes "
                                f"such as {self._mistakes[name][0]!r}")
            return name, status, None
        if status not in ("mistake", "wrong"):
            raise PollError(f"status={status!r} names no mistake; send mistake=null (or status 'mistake')")
        if not isinstance(mistake, str) or mistake not in self._mistakes[name]:
            near = difflib.get_close_matches(mistake, self._mistakes[name], n=1) if isinstance(mistake, str) and len(mistake) <= 200 else []
            hint = f" (did you mean {near[0]!r}?)" if near else ""
            raise PollError(f"mistake={_short(mistake)} is not a mistake the {name} check names{hint}")
        return name, status, mistake


# --------------------------------------------------------------------------- storage


class PollStore:
    """Answers in one SQLite file; each learner counts once per question (their latest answer).

    ``questions``: what the store accepts (``Questions.from_bank()``).
    """

    def __init__(self, path: str | Path, salt: bytes, questions: Questions, clock=time.time,
                 exercises: Exercises | None = None):
        self.path = str(path)
        self.questions = questions
        self.exercises = exercises if exercises is not None else Exercises.from_catalogue()
        self._salt = salt
        self._clock = clock
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
        try:
            if self.path != ":memory:":
                self._db.execute("PRAGMA journal_mode=WAL")
            for statement in _SCHEMA:
                self._db.execute(statement)
        except sqlite3.Error:
            self._db.close()
            raise

    def _learner(self, user_name: str) -> str:
        return hmac.new(self._salt, user_name.encode(), hashlib.sha256).hexdigest()[:32]

    def record(self, user_name: str, question_id, choices) -> None:
        """Store ``user_name``'s answer; raises PollError for an id or choices the bank does not allow."""
        question_id, clean = self.questions.check(question_id, choices)
        with self._lock:
            learner = self._learner(user_name)
            self._db.execute(
                "INSERT INTO answers (question_id, learner, choices, created) VALUES (?, ?, ?, ?)",
                (question_id, learner, json.dumps(clean), self._clock()),
            )
            self._cap("answers", learner)

    def _cap(self, table: str, learner: str) -> None:
        """Keep the learner's latest MAX_ROWS_PER_LEARNER rows of ``table`` (this module's own name) and
        nothing older than the longest window: the counts never read more."""
        self._db.execute(
            f"""DELETE FROM {table} WHERE learner = ? AND id < COALESCE(
                    (SELECT id FROM {table} WHERE learner = ? ORDER BY id DESC LIMIT 1 OFFSET ?), -1)""",
            (learner, learner, self.max_rows_per_learner - 1),
        )

    max_rows_per_learner = MAX_ROWS_PER_LEARNER

    def rows_of(self, user_name: str) -> int:
        """How many rows (answers and verdicts) the store holds for ``user_name``."""
        learner = self._learner(user_name)
        with self._lock:
            return sum(self._db.execute(f"SELECT COUNT(*) FROM {t} WHERE learner = ?", (learner,)).fetchone()[0]
                       for t in ("answers", "verdicts"))

    def _latest(self, table: str, key_column: str, key: str, since: float, columns: str) -> list[tuple]:
        """``columns`` of each learner's latest row about ``key`` since ``since``: everyone counts once.

        ``table``, ``key_column`` and ``columns`` are this module's own names, never a request's.
        """
        return self._db.execute(
            f"""SELECT {columns} FROM {table} t
                JOIN (SELECT learner, MAX(id) AS last FROM {table}
                      WHERE {key_column} = ? AND created >= ? GROUP BY learner) l
                ON t.id = l.last""",
            (key, since),
        ).fetchall()

    def counts(self, question_id, window_s=DEFAULT_WINDOW_S) -> dict:
        """Learners per choice among each learner's latest answer in the last ``window_s`` seconds."""
        question_id = self.questions.question(question_id).id
        window_s = parse_window(window_s)
        since = self._clock() - window_s
        with self._lock:
            rows = self._latest("answers", "question_id", question_id, since, "choices")
        counts: dict[str, int] = {}
        for (choices,) in rows:
            for choice in json.loads(choices):
                counts[choice] = counts.get(choice, 0) + 1
        return {"question_id": question_id, "answered": len(rows), "counts": counts, "window_s": window_s}

    def record_verdict(self, user_name: str, exercise, status, mistake=None) -> None:
        """Store ``user_name``'s verdict; raises PollError for an exercise, status or mistake the catalogue refuses."""
        exercise, status, mistake = self.exercises.check(exercise, status, mistake)
        with self._lock:
            learner = self._learner(user_name)
            self._db.execute(
                "INSERT INTO verdicts (exercise, learner, status, mistake, created) VALUES (?, ?, ?, ?, ?)",
                (exercise, learner, status, mistake, self._clock()),
            )
            self._cap("verdicts", learner)

    def verdict_counts(self, exercise, window_s=DEFAULT_WINDOW_S) -> dict:
        """How the room is doing on ``exercise``: each learner once, by their latest verdict in the window."""
        exercise = self.exercises.exercise(exercise)
        window_s = parse_window(window_s)
        since = self._clock() - window_s
        with self._lock:
            rows = self._latest("verdicts", "exercise", exercise, since, "status, mistake")
            (present,) = self._db.execute(
                """SELECT COUNT(*) FROM (SELECT learner FROM answers WHERE created >= ?
                                         UNION SELECT learner FROM verdicts WHERE created >= ?)""",
                (since, since),
            ).fetchone()
        passed = other = tried = 0
        mistakes: dict[str, int] = {}
        for status, mistake in rows:
            if status == "not_attempted":
                continue
            tried += 1
            if status == "passed":
                passed += 1
            elif mistake:
                mistakes[mistake] = mistakes.get(mistake, 0) + 1
            else:
                other += 1
        return {"exercise": exercise, "window_s": window_s, "present": present, "passed": passed,
                "mistakes": mistakes, "other": other, "not_tried": present - tried}

    def close(self) -> None:
        self._db.close()


def can_read_counts(model: dict | None, check_scopes=None) -> bool:
    """Whether the hub's model of a token's owner carries the instructor's scope."""
    return _has_scope(model, READ_SCOPE, check_scopes)


def _has_scope(model: dict | None, scope: str, check_scopes=None) -> bool:
    if not model:
        return False
    if check_scopes is not None:  # HubAuth.check_scopes also understands filtered scopes
        return bool(check_scopes({scope}, model))
    return scope in set(model.get("scopes") or ())


def load_salt(path: Path) -> bytes:
    """The key for hashing user names: made once (0600), then read back."""
    if path.exists():
        salt = path.read_bytes()
        if len(salt) < 16:
            raise StartupError(f"{path} holds {len(salt)} bytes, too short for the poll's key; "
                               "delete it (a new key is made, and earlier answers are then counted apart)")
        return salt
    salt = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(salt)
    return salt


def _account() -> str:
    try:
        import pwd

        return f"{pwd.getpwuid(os.geteuid()).pw_name} (uid {os.geteuid()})"
    except (ImportError, KeyError, AttributeError):
        return "this account"


def open_store(db_path: str | Path, questions: Questions, exercises: Exercises | None = None) -> PollStore:
    """The store at ``db_path`` with its key beside it; StartupError naming the file, the account and the fix."""
    db_path = Path(db_path)
    salt_path = db_path.with_suffix(".salt")
    fix = (f"make {db_path.parent} a folder this account owns, or set MHA_POLL_DB to a file in one "
           "(the service writes only that folder)")
    try:
        salt = load_salt(salt_path)
    except OSError as exc:
        raise StartupError(f"the poll service, running as {_account()}, cannot read or create its key "
                           f"{salt_path}: {exc.strerror or exc}; {fix}") from None
    try:
        return PollStore(db_path, salt, questions, exercises=exercises)
    except sqlite3.Error as exc:
        raise StartupError(f"the poll service, running as {_account()}, cannot open its database "
                           f"{db_path}: {exc}; {fix}") from None


# --------------------------------------------------------------------------- the web service


class RateLimit:
    """A token bucket per learner: ``burst`` posts at once, then ``per_s`` a second."""

    def __init__(self, burst: float = RATE_BURST, per_s: float = RATE_PER_S, clock=time.monotonic):
        self.burst, self.per_s, self.clock = float(burst), float(per_s), clock
        self._buckets: dict[str, tuple[float, float]] = {}

    def allow(self, who: str) -> bool:
        now = self.clock()
        tokens, last = self._buckets.get(who, (self.burst, now))
        tokens = min(self.burst, tokens + (now - last) * self.per_s)
        if tokens < 1:
            self._buckets[who] = (tokens, now)
            return False
        self._buckets[who] = (tokens - 1, now)
        if len(self._buckets) > 100_000:  # never grows without bound: forget the full ones
            self._buckets = {k: v for k, v in self._buckets.items() if v[0] < self.burst}
        return True


def make_app(store: PollStore, hub_auth, prefix: str = "/", rate_limit: RateLimit | None = None):
    """The tornado application. Serve it with ``make_server`` (the limits live there).

    ``hub_auth``: a ``jupyterhub.services.auth.HubAuth``, or in tests anything with
    ``get_user(handler) -> model | None`` and ``check_scopes(required, model)``.
    ``rate_limit``: posts per learner (``RateLimit``); None: unlimited (``main`` always sets one).
    """
    from tornado import web

    class Base(web.RequestHandler):
        def initialize(self):
            self.store = store

        def check_xsrf_cookie(self):
            # Token-authenticated API: no cookies are used, so there is no XSRF to check.
            return None

        def send_json(self, status: int, body: dict):
            self.clear()
            self.set_status(status)
            self.set_header("Content-Type", "application/json")
            self.set_header("Cache-Control", "no-store")
            return self.finish(json.dumps(body))

        def write_error(self, status_code: int, **kwargs):
            # Tornado's own errors (405, and 500 if a bug slips through) as JSON, never a traceback.
            reason = {404: "no such route", 405: f"{self.request.method} is not allowed here"}.get(
                status_code, self._reason)
            self.send_json(status_code, {"error": f"{reason}; {_routes(prefix)}"})

        def user(self, scope: str) -> dict | None:
            """The token's owner if the token has ``scope``; otherwise answers 401 or 403 and returns None."""
            model = hub_auth.get_user(self)
            if not model:
                self.send_json(401, {"error": "send a JupyterHub token: Authorization: token ..."})
                return None
            if not _has_scope(model, scope, getattr(hub_auth, "check_scopes", None)):
                self.send_json(403, {"error": f"this needs the scope {scope}"})
                return None
            return model

    @web.stream_request_body
    class LimitedPost(Base):
        """A POST whose body is at most MAX_BODY_BYTES, refused (413) before it is read; ``store_body`` stores it."""

        what, plural = "an answer", "answers"

        async def prepare(self):
            self._body = bytearray()
            self._received = 0
            declared = self.request.headers.get("Content-Length")
            if declared is not None:
                try:
                    too_large = int(declared.split(",")[0]) > MAX_BODY_BYTES
                except ValueError:
                    too_large = False  # Tornado refuses a malformed length itself
                if too_large:
                    # Answer before reading any of the body, and wait until the answer is
                    # sent: the connection is then closed and the rest is never read.
                    await self.send_json(413, {"error": f"the body declares {_short(declared)} bytes; "
                                                        f"{self.what} may have at most {MAX_BODY_BYTES}"})

        def data_received(self, chunk: bytes) -> None:
            self._received += len(chunk)
            if self._received <= MAX_BODY_BYTES:
                self._body += chunk

        def post(self):
            if self._received > MAX_BODY_BYTES:
                return self.send_json(413, {"error": f"the body has more than {MAX_BODY_BYTES} bytes, "
                                                     f"the most {self.what} may have"})
            model = self.user(ACCESS_SCOPE)
            if model is None:
                return
            if rate_limit is not None and not rate_limit.allow(model["name"]):
                self.set_header("Retry-After", str(max(1, round(1 / rate_limit.per_s))))
                return self.send_json(429, {"error": f"too many posts: at most {rate_limit.burst:.0f} at once, "
                                                     f"then {rate_limit.per_s:g} a second"})
            try:
                self.store_body(model["name"], bytes(self._body))
            except BodyTooLarge as exc:
                return self.send_json(413, {"error": str(exc)})
            except PollError as exc:
                return self.send_json(400, {"error": str(exc)})
            except sqlite3.Error as exc:  # the disk, not the request: say so, and let the learner's next Check retry
                return self.send_json(503, {"error": f"the poll cannot store {self.plural} just now ({exc})"})
            self.send_json(200, {"stored": True})

    class Answers(LimitedPost):
        def store_body(self, user_name: str, body: bytes) -> None:
            self.store.record(user_name, *parse_answer(body))

    class Verdicts(LimitedPost):
        what, plural = "a verdict", "verdicts"

        def store_body(self, user_name: str, body: bytes) -> None:
            self.store.record_verdict(user_name, *parse_verdict(body))

    class CountsBase(Base):
        """GET: the instructor's counts (``count(key, window_s)``); 403 for a learner, 400 for a bad key or window."""

        what = "answers"

        def count(self, key, window_s):
            raise NotImplementedError

        def get(self, key):
            if self.user(READ_SCOPE) is None:  # 403 for a learner: only the role instructor holds it
                return
            try:
                result = self.count(key, self.get_argument("window_s", str(DEFAULT_WINDOW_S)))
            except PollError as exc:
                return self.send_json(400, {"error": str(exc)})
            except sqlite3.Error as exc:
                return self.send_json(503, {"error": f"the poll cannot read its {self.what} just now ({exc})"})
            self.send_json(200, result)

    class Counts(CountsBase):
        def count(self, question_id, window_s):
            return self.store.counts(question_id, window_s)

    class VerdictCounts(CountsBase):
        what = "verdicts"

        def count(self, exercise, window_s):
            return self.store.verdict_counts(exercise, window_s)

    class Health(Base):
        def get(self):
            self.send_json(200, {"ok": True})

    @web.stream_request_body  # answers before any body is read, as Answers does for a large one
    class NotFound(Base):
        async def prepare(self):
            await self.send_json(404, {"error": f"no such route: {_short(self.request.path, 120)}; {_routes(prefix)}"})

    prefix = prefix if prefix.endswith("/") else prefix + "/"
    return web.Application([
        (prefix + "answers", Answers),
        (prefix + r"counts/([^/]+)", Counts),
        (prefix + "verdicts", Verdicts),
        (prefix + r"verdicts/([^/]+)", VerdictCounts),
        (prefix + "health", Health),
    ], default_handler_class=NotFound)


def _routes(prefix: str) -> str:
    prefix = prefix if prefix.endswith("/") else prefix + "/"
    return (f"the routes are POST {prefix}answers, GET {prefix}counts/<question_id>, POST {prefix}verdicts, "
            f"GET {prefix}verdicts/<exercise>, GET {prefix}health")


def make_server(app):
    """A Tornado HTTPServer for ``app`` with the service's limits (``HTTP_SERVER_OPTIONS``)."""
    from tornado.httpserver import HTTPServer

    return HTTPServer(app, **HTTP_SERVER_OPTIONS)


def main() -> None:
    from urllib.parse import urlparse

    sys.dont_write_bytecode = True  # write nothing outside the state folder, not even __pycache__
    try:
        state = Path(os.environ.get("MHA_HUB_STATE", ".")).resolve()
        db_path = Path(os.environ.get("MHA_POLL_DB") or state / "poll.sqlite3")
        questions = Questions.from_bank()
        store = open_store(db_path, questions, Exercises.from_catalogue())
        token = os.environ.get("JUPYTERHUB_API_TOKEN")
        if not token:
            raise StartupError("JUPYTERHUB_API_TOKEN is not set; JupyterHub starts this service with its token")
        try:
            from jupyterhub.services.auth import HubAuth
        except ImportError as exc:
            raise StartupError(f"the poll service needs jupyterhub ({exc}); run it with the hub's environment") from None
    except StartupError as exc:
        sys.exit(f"{SERVICE_NAME}: {exc}")
    from tornado import ioloop

    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{SERVICE_NAME}/")
    rate = RateLimit(float(os.environ.get("MHA_POLL_BURST", RATE_BURST)), float(os.environ.get("MHA_POLL_RATE", RATE_PER_S)))
    app = make_app(store, HubAuth(api_token=token, cache_max_age=60), prefix, rate_limit=rate)
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10101"))
    server = make_server(app)
    if os.environ.get("MHA_POLL_SOCKET"):
        # A Unix socket in a folder only this account may write (the hub makes it): no one else can
        # listen in the poll's place. Every account may connect (0666); the token says who it is.
        from tornado.netutil import bind_unix_socket

        server.add_socket(bind_unix_socket(os.environ["MHA_POLL_SOCKET"], mode=0o666))
    else:
        # On Kubernetes the service's address is the hub's Service name; it listens on all interfaces.
        server.listen(url.port, os.environ.get("MHA_POLL_BIND_IP") or url.hostname)
    try:
        ioloop.IOLoop.current().start()
    except KeyboardInterrupt:
        pass  # Ctrl-C at the hub reaches its services too: stop quietly; every answer is already committed
    finally:
        store.close()


if __name__ == "__main__":
    main()
