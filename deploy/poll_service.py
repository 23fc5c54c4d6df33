"""The class poll: a JupyterHub-managed service that stores learners' answers and counts them.

JupyterHub starts it (see ``jupyterhub_config.py``, ``c.JupyterHub.services``) with
its own API token and ``JUPYTERHUB_SERVICE_PREFIX`` in the environment. Every request
carries a hub token (``Authorization: token ...``); ``jupyterhub.services.auth.HubAuth``
asks the hub whose token it is and with which scopes.

    POST {prefix}answers            {"question_id": "03-q1", "choices": ["2"]}
        any learner whose token has access:services!service=mha-poll (every user's
        server token on the course hub); answers {"stored": true}
    GET  {prefix}counts/<question_id>?window_s=600
        only a token with the scope custom:mha-poll:read (the role ``instructor``);
        answers {"question_id", "answered", "counts": {choice: learners}, "window_s"};
        any other token gets 403
    GET  {prefix}health              no token needed; {"ok": true}

Storage: SQLite (``MHA_POLL_DB``, default ``$MHA_HUB_STATE/poll.sqlite3``), in WAL mode.
Why SQLite and not PostgreSQL: one process writes, one small INSERT per answer; a
room of 100 answering within a second is ~100 inserts, well inside what one SQLite
file does in milliseconds, and it needs no server to run, back up or secure. On
Kubernetes the service runs beside the hub with its file on the hub's volume.

Anonymous: the table keeps a keyed hash of the user name (``MHA_POLL_SALT``, made at
first start and kept beside the database), only to count each learner once (their
latest answer); names are never stored, and counts say nothing about who answered.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import threading
import time
from pathlib import Path

READ_SCOPE = "custom:mha-poll:read"
SERVICE_NAME = "mha-poll"
ACCESS_SCOPE = f"access:services!service={SERVICE_NAME}"
MAX_CHOICES = 32
MAX_ID_CHARS = 64
MAX_WINDOW_S = 24 * 3600.0

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS answers (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        question_id TEXT NOT NULL,
        learner TEXT NOT NULL,
        choices TEXT NOT NULL,
        created REAL NOT NULL
    )""",
    "CREATE INDEX IF NOT EXISTS answers_question ON answers (question_id, created)",
)


class PollError(ValueError):
    """A request the service refuses (bad question id or choices); its text is sent back with 400."""


def _clean_id(value, name: str) -> str:
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise PollError(f"{name}={value!r} must be a string")
    text = str(value).strip()
    if not text or len(text) > MAX_ID_CHARS or any(c.isspace() or c == "/" for c in text):
        raise PollError(f"{name}={value!r} must be 1-{MAX_ID_CHARS} characters without spaces or '/'")
    return text


class PollStore:
    """Answers in one SQLite file; each learner counts once per question (their latest answer)."""

    def __init__(self, path: str | Path, salt: bytes, clock=time.time):
        self.path = str(path)
        self._salt = salt
        self._clock = clock
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None, timeout=10)
        if self.path != ":memory:":
            self._db.execute("PRAGMA journal_mode=WAL")
        for statement in _SCHEMA:
            self._db.execute(statement)

    def _learner(self, user_name: str) -> str:
        return hmac.new(self._salt, user_name.encode(), hashlib.sha256).hexdigest()[:32]

    def record(self, user_name: str, question_id, choices) -> None:
        """Store ``user_name``'s answer; raises PollError for an id or choices the service refuses."""
        question_id = _clean_id(question_id, "question_id")
        if isinstance(choices, (str, int)):
            choices = [choices]
        if not isinstance(choices, list) or not choices or len(choices) > MAX_CHOICES:
            raise PollError(f"choices={choices!r} must be a list of 1-{MAX_CHOICES} choice ids")
        clean = sorted({_clean_id(c, "choices") for c in choices})
        with self._lock:
            self._db.execute(
                "INSERT INTO answers (question_id, learner, choices, created) VALUES (?, ?, ?, ?)",
                (question_id, self._learner(user_name), json.dumps(clean), self._clock()),
            )

    def counts(self, question_id, window_s: float = 600.0) -> dict:
        """Learners per choice among each learner's latest answer in the last ``window_s`` seconds."""
        question_id = _clean_id(question_id, "question_id")
        window_s = float(window_s)
        if not (0 < window_s <= MAX_WINDOW_S):
            raise PollError(f"window_s={window_s} must be in (0, {MAX_WINDOW_S:.0f}] seconds")
        since = self._clock() - window_s
        with self._lock:
            rows = self._db.execute(
                """SELECT a.choices FROM answers a
                   JOIN (SELECT learner, MAX(id) AS last FROM answers
                         WHERE question_id = ? AND created >= ? GROUP BY learner) l
                   ON a.id = l.last""",
                (question_id, since),
            ).fetchall()
        counts: dict[str, int] = {}
        for (choices,) in rows:
            for choice in json.loads(choices):
                counts[choice] = counts.get(choice, 0) + 1
        return {"question_id": question_id, "answered": len(rows), "counts": counts, "window_s": window_s}

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
        return path.read_bytes()
    salt = secrets.token_bytes(32)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(salt)
    return salt


# --------------------------------------------------------------------------- the web service


def make_app(store: PollStore, hub_auth, prefix: str = "/"):
    """The tornado application.

    ``hub_auth``: a ``jupyterhub.services.auth.HubAuth``, or in tests anything with
    ``get_user(handler) -> model | None`` and ``check_scopes(required, model)``.
    """
    from tornado import web

    class Base(web.RequestHandler):
        def initialize(self):
            self.store = store

        def check_xsrf_cookie(self):
            # Token-authenticated API: no cookies are used, so there is no XSRF to check.
            return None

        def send_json(self, status: int, body: dict) -> None:
            self.set_status(status)
            self.set_header("Content-Type", "application/json")
            self.set_header("Cache-Control", "no-store")
            self.finish(json.dumps(body))

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

    class Answers(Base):
        def post(self):
            model = self.user(ACCESS_SCOPE)
            if model is None:
                return
            try:
                body = json.loads(self.request.body or b"{}")
                if not isinstance(body, dict):
                    raise PollError("the body must be a JSON object")
                self.store.record(model["name"], body.get("question_id"), body.get("choices"))
            except (PollError, ValueError) as exc:
                return self.send_json(400, {"error": str(exc)})
            self.send_json(200, {"stored": True})

    class Counts(Base):
        def get(self, question_id):
            if self.user(READ_SCOPE) is None:  # 403 for a learner: only the role instructor holds it
                return
            try:
                result = self.store.counts(question_id, self.get_argument("window_s", "600"))
            except (PollError, ValueError) as exc:
                return self.send_json(400, {"error": str(exc)})
            self.send_json(200, result)

    class Health(web.RequestHandler):
        def get(self):
            self.finish({"ok": True})

    prefix = prefix if prefix.endswith("/") else prefix + "/"
    return web.Application([
        (prefix + "answers", Answers),
        (prefix + r"counts/([^/]+)", Counts),
        (prefix + "health", Health),
    ])


def main() -> None:
    from urllib.parse import urlparse

    from jupyterhub.services.auth import HubAuth
    from tornado import ioloop

    state = Path(os.environ.get("MHA_HUB_STATE", ".")).resolve()
    db_path = Path(os.environ.get("MHA_POLL_DB") or state / "poll.sqlite3")
    store = PollStore(db_path, load_salt(db_path.with_suffix(".salt")))
    prefix = os.environ.get("JUPYTERHUB_SERVICE_PREFIX", f"/services/{SERVICE_NAME}/")
    app = make_app(store, HubAuth(api_token=os.environ["JUPYTERHUB_API_TOKEN"], cache_max_age=60), prefix)
    url = urlparse(os.environ.get("JUPYTERHUB_SERVICE_URL", "http://127.0.0.1:10101"))
    # On Kubernetes the service's address is the hub's Service name; it listens on all interfaces.
    app.listen(url.port, os.environ.get("MHA_POLL_BIND_IP") or url.hostname)
    ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
