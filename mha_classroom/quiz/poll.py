"""The classroom live poll: learners' answers to a JupyterHub service, counts for the instructor.

On a JupyterHub (``deploy/``), each learner's kernel can send the answer it just
checked to the course's poll service, and the instructor's classroom view can read how
the room answered: counts per option, anonymous, from every learner whose latest answer
to that question is recent. Without a hub every function here is a no-op, so quizzes
work exactly as on a laptop::

    from mha_classroom.quiz import poll
    poll.available()                        # False on a laptop: send and counts do nothing
    poll.send("03-what-is-a-head", [2])     # a learner's answer: option data indices
    poll.counts("03-what-is-a-head")        # instructor: {"answered": 12, "counts": {"2": 9, "0": 3}, ...}
    poll.send_verdict("split_heads", "mistake", "reshape_without_transpose")   # what exercises.check sends
    poll.verdict_counts("split_heads")      # instructor: {"passed": 7, "mistakes": {...}, "other": 1, "not_tried": 4, ...}

Choice ids are the options' data indices as strings ("0", "1", ...), which are the same
for every learner whatever order their quiz shows the options in; a numeric answer is
sent as its number in text. An exercise's verdict is its name, its status and the
mistake's catalogue name (``mha_classroom.exercises.catalogue``), never the learner's code;
``exercises.check`` sends it in a thread of its own (``send_verdict_in_background``), so
a Check never waits for the poll. The kernel finds the service through two variables the hub
sets for every learner's server (and so every kernel):

    JUPYTERHUB_API_TOKEN   the token the hub gave this learner's server
    MHA_POLL_URL           the poll service's address: on the course hub run as root a Unix socket,
                           http+unix://%2Frun%2Fmha-hub-poll%2Fpoll.sock/services/mha-poll/, else
                           e.g. http://127.0.0.1:10101/services/mha-poll/

A Unix socket is used only if no one but its owner can have put it there: its folder must be
writable by neither this account nor anyone but the folder's owner, and the process listening
must run as that owner (``SO_PEERCRED``). A learner cannot then listen in the poll's place and
collect the tokens kernels send it; anything else is the same as no hub.

Only a token whose owner has the hub role ``instructor`` may read counts; the service
answers a learner's token with 403, and ``counts`` and ``verdict_counts`` then return None.

Nothing here ever raises, and nothing waits longer than ``TIMEOUT_S`` in all (connecting,
sending and reading together, however slowly the other end answers): a hub that is
down, slow or refusing is the same as no hub (``send`` and ``send_verdict`` return False,
``counts`` and ``verdict_counts`` None),
and so is an argument the service would refuse (a question id that is not text, choices
that are not option ids or a number, a ``window_s`` that is not a number of seconds in
(0, 86400]); such a call sends nothing. Only the standard library is used, so a kernel
stays light.
"""

from __future__ import annotations

import http.client
import json
import math
import numbers
import os
import socket
import threading
import urllib.parse

URL_VAR = "MHA_POLL_URL"
TOKEN_VAR = "JUPYTERHUB_API_TOKEN"
#: Seconds a call may take in all, however slowly the service answers; a Check button must never hang on it.
TIMEOUT_S = 2.0
#: Answers older than this are left out of the counts (a question asked "now").
DEFAULT_WINDOW_S = 600
#: What the service accepts (deploy/poll_service.py); outside these, nothing is sent.
MAX_WINDOW_S = 24 * 3600
MAX_ID_CHARS = 64
MAX_CHOICES = 32
#: A reply larger than this is not the service's: left unread.
MAX_REPLY_BYTES = 64 * 1024


def _config() -> tuple[str, str] | None:
    url, token = os.environ.get(URL_VAR, "").strip(), os.environ.get(TOKEN_VAR, "").strip()
    if not url or not token:
        return None
    return (url if url.endswith("/") else url + "/"), token


def available() -> bool:
    """True inside a learner's server on the course hub (the service address and a token are set)."""
    try:
        return _config() is not None
    except Exception:  # an environment that cannot be read is no hub
        return False


# --------------------------------------------------------------------------- one request, bounded in time


class UntrustedSocket(OSError):
    """The poll's Unix socket is in a folder someone else could have written, or another account listens on it."""


def _trusted_unix_connect(path: str, timeout_s: float) -> socket.socket:
    """A connection to the Unix socket ``path``, only if its folder is not ours nor writable by others
    and its listener runs as the folder's owner; UntrustedSocket otherwise."""
    folder = os.stat(os.path.dirname(path) or ".")
    if folder.st_uid == os.geteuid() and os.geteuid() != 0:
        raise UntrustedSocket(f"{path}: its folder belongs to this account, which could have made the socket")
    if folder.st_mode & 0o022:
        raise UntrustedSocket(f"{path}: its folder is writable by others")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout_s)
        sock.connect(path)
        import struct

        _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i")))
        if uid != folder.st_uid:
            raise UntrustedSocket(f"{path}: uid {uid} listens there, not the folder's owner {folder.st_uid}")
        return sock
    except BaseException:
        sock.close()
        raise


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self):
        self.sock = _trusted_unix_connect(self.unix_path, self.timeout)


class _Exchange:
    """One HTTP request and its reply, run in a worker thread so that the caller's wait has one deadline.

    urllib's ``timeout`` is per socket operation: a server that sends a byte a second
    never trips it. Here the caller waits at most ``TIMEOUT_S`` in all, then closes the
    socket, which ends the worker's blocked read too.
    """

    def __init__(self, url: str, method: str, body: bytes | None, headers: dict, timeout_s: float):
        parts = urllib.parse.urlsplit(url)
        if parts.scheme == "http+unix" and parts.netloc:
            self.connection = _UnixConnection(urllib.parse.unquote(parts.netloc), timeout_s)
        elif parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{URL_VAR}={url!r} is not an http(s) or http+unix address")
        else:
            connection_class = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
            self.connection = connection_class(parts.hostname, parts.port, timeout=timeout_s)
        self.target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self.method, self.body, self.headers = method, body, headers
        self.reply = None
        self.abandoned = False
        self._sock = None  # ours: http.client lets go of its socket once a reply says "Connection: close"
        self._lock = threading.Lock()

    def run(self) -> None:
        response = None
        try:
            self.connection.connect()
            with self._lock:
                if self.abandoned:  # the caller gave up while this was connecting
                    return
                self._sock = self.connection.sock
            self.connection.request(self.method, self.target, body=self.body, headers=self.headers)
            response = self.connection.getresponse()
            if response.status != 200:  # 401, 403, 404, 413, 500: refused is the same as absent here
                return
            raw = response.read(MAX_REPLY_BYTES + 1)
            if len(raw) <= MAX_REPLY_BYTES:
                self.reply = json.loads(raw or b"null")
        except Exception:  # any failure of the network, the server or its reply: no answer
            self.reply = None
        finally:
            if response is not None:
                try:
                    response.close()  # it holds the socket after a "Connection: close" reply
                except Exception:
                    pass
            self.close()

    def abandon(self) -> None:
        """Stop waiting: close the socket, so the worker's read returns at once."""
        with self._lock:
            self.abandoned = True
            sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.close()

    def close(self) -> None:
        try:
            self.connection.close()
        except Exception:
            pass


def _request(method: str, path: str, body: dict | None = None):
    """The service's JSON reply to one request, or None: no hub, refused, unreachable, or past ``TIMEOUT_S``."""
    config = _config()
    if config is None:
        return None
    base, token = config
    timeout_s = float(TIMEOUT_S)
    headers = {"Authorization": f"token {token}", "Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    exchange = _Exchange(base + path, method, data, headers, timeout_s)
    worker = threading.Thread(target=exchange.run, name="mha-poll-request", daemon=True)
    worker.start()
    worker.join(timeout_s)
    if worker.is_alive():
        exchange.abandon()
        return None
    return exchange.reply


# --------------------------------------------------------------------------- what may be sent


def _question_id(question_id) -> str | None:
    """The question id as sent, or None if the service would refuse it (so nothing is sent)."""
    if isinstance(question_id, bool) or not isinstance(question_id, (str, numbers.Integral)):
        return None
    text = str(question_id).strip()
    if not text or len(text) > MAX_ID_CHARS or any(c.isspace() or c == "/" for c in text):
        return None
    return text


def _choice(value) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        value = float(value)
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str) and value.strip() and len(value) <= MAX_ID_CHARS:
        return value.strip()
    return None


def _choice_ids(choice_ids) -> list[str] | None:
    """Choices as the service takes them (a list of strings), or None if they cannot be."""
    if isinstance(choice_ids, (str, numbers.Number)):
        choice_ids = [choice_ids]
    if not isinstance(choice_ids, (list, tuple, set, frozenset)) or not 0 < len(choice_ids) <= MAX_CHOICES:
        return None
    choices = [_choice(c) for c in choice_ids]
    return None if any(c is None for c in choices) else choices


def _window_s(window_s) -> float | None:
    if isinstance(window_s, bool) or not isinstance(window_s, numbers.Real):
        return None
    window_s = float(window_s)
    return window_s if 0 < window_s <= MAX_WINDOW_S else None  # also refuses nan and inf


# --------------------------------------------------------------------------- the two calls


def send(question_id: str, choice_ids) -> bool:
    """Send this learner's answer to ``question_id``; True if the service stored it.

    ``choice_ids``: the chosen options' data indices (``[2]``, ``["0", "3"]``), or a
    numeric answer (``64``, ``["2,362,368"]``). A later answer from the same learner
    replaces the earlier one in the counts. Returns False, and sends nothing, without
    a hub, or for an id or choices the service would refuse (``None``, an empty list,
    a nested list, NaN); False too if the service refuses or does not answer within
    ``TIMEOUT_S``. Never raises.
    """
    try:
        if not available():
            return False
        question_id, choices = _question_id(question_id), _choice_ids(choice_ids)
        if question_id is None or choices is None:
            return False
        reply = _request("POST", "answers", {"question_id": question_id, "choices": choices})
        return isinstance(reply, dict) and reply.get("stored") is True
    except Exception:  # the promise above: a Check button never fails because of the poll
        return False


def counts(question_id: str, window_s: float = DEFAULT_WINDOW_S) -> dict | None:
    """How the room answered ``question_id`` in the last ``window_s`` seconds (instructors only).

    Returns ``{"question_id", "answered", "counts": {choice_id: learners}, "window_s"}``,
    one answer per learner (their latest). None without a hub, for a learner's token
    (the service refuses it), when the service cannot be reached or does not answer
    within ``TIMEOUT_S``, and, without asking it, for a question id that is not text or
    a ``window_s`` that is not a number of seconds in (0, 86400]. Never raises.
    """
    try:
        question_id, window = _question_id(question_id), _window_s(window_s)
        if question_id is None or window is None or not available():
            return None
        query = urllib.parse.urlencode({"window_s": window})
        reply = _request("GET", f"counts/{urllib.parse.quote(question_id, safe='')}?{query}")
        if not (isinstance(reply, dict) and isinstance(reply.get("counts"), dict)):
            return None
        return reply
    except Exception:
        return None


# --------------------------------------------------------------------------- exercise verdicts

#: A verdict's status, as ``mha_classroom.exercises.CheckResult.status`` gives it (the service checks the rest).
STATUSES = ("passed", "not_attempted", "mistake", "wrong", "error")


def _name(value) -> str | None:
    """An exercise or mistake name as sent (a short identifier), or None if the service would refuse it."""
    if not isinstance(value, str) or not value.isidentifier() or len(value) > MAX_ID_CHARS:
        return None
    return value


def send_verdict(exercise: str, status: str, mistake: str | None = None) -> bool:
    """Send this learner's latest verdict on ``exercise``; True if the service stored it.

    ``status``: one of ``STATUSES``; ``mistake``: the mistake's catalogue name, or None.
    A later verdict from the same learner replaces the earlier one in the counts.
    False, and nothing sent, without a hub or for values the service would refuse;
    False too if it refuses or does not answer within ``TIMEOUT_S``. Never raises.
    """
    try:
        if not available():
            return False
        name, clean_mistake = _name(exercise), _name(mistake) if mistake is not None else None
        if name is None or status not in STATUSES or (mistake is not None and clean_mistake is None):
            return False
        reply = _request("POST", "verdicts", {"exercise": name, "status": status, "mistake": clean_mistake})
        return isinstance(reply, dict) and reply.get("stored") is True
    except Exception:
        return False


def send_verdict_in_background(exercise: str, status: str, mistake: str | None = None) -> threading.Thread | None:
    """``send_verdict`` in a daemon thread, so the caller never waits; the thread, or None without a hub."""
    try:
        if not available():
            return None
        thread = threading.Thread(target=send_verdict, args=(exercise, status, mistake), name="mha-poll-verdict",
                                  daemon=True)
        thread.start()
        return thread
    except Exception:
        return None


def verdict_counts(exercise: str, window_s: float = DEFAULT_WINDOW_S) -> dict | None:
    """How the room is doing on ``exercise`` in the last ``window_s`` seconds (instructors only).

    Returns ``{"exercise", "window_s", "present", "passed", "mistakes": {name: learners},
    "other", "not_tried"}``, one verdict per learner (their latest): ``other`` counts
    wrong results and errors no mistake name explains; ``not_tried`` counts learners who
    reached the poll in the window (any answer or verdict: ``present``) with no verdict
    on this exercise, or only "not attempted yet". None without a hub, for a learner's
    token, when the service cannot be reached in ``TIMEOUT_S``, and, without asking it,
    for a name or window it would refuse. Never raises.
    """
    try:
        name, window = _name(exercise), _window_s(window_s)
        if name is None or window is None or not available():
            return None
        query = urllib.parse.urlencode({"window_s": window})
        reply = _request("GET", f"verdicts/{name}?{query}")
        if not (isinstance(reply, dict) and isinstance(reply.get("mistakes"), dict)):
            return None
        return reply
    except Exception:
        return None
