"""The classroom live poll: learners' answers to a JupyterHub service, counts for the instructor.

On a JupyterHub (``deploy/``), each learner's kernel can send the answer it just
checked to the course's poll service, and the instructor's classroom view can read how
the room answered: counts per option, anonymous, from every learner whose latest answer
to that question is recent. Without a hub every function here is a no-op, so quizzes
work exactly as on a laptop::

    from mha_core.quiz import poll
    poll.available()                    # False on a laptop: send and counts do nothing
    poll.send("03-q1", ["2"])           # a learner's answer: option data indices, as text
    poll.counts("03-q1")                # instructor: {"answered": 12, "counts": {"2": 9, "0": 3}, ...}

Choice ids are the options' data indices as strings ("0", "1", ...), which are the same
for every learner whatever order their quiz shows the options in; a numeric answer is
sent as its number in text. The kernel finds the service through two variables the hub
sets for every learner's server (and so every kernel):

    JUPYTERHUB_API_TOKEN   the token the hub gave this learner's server
    MHA_POLL_URL           the poll service's address, e.g. http://127.0.0.1:10101/services/mha-poll/

Only a token whose owner has the hub role ``instructor`` may read counts; the service
answers a learner's token with 403, and ``counts`` then returns None. Nothing here ever
raises: a hub that is down, slow or refusing is the same as no hub (``send`` returns
False, ``counts`` None). Only the standard library is used, so a kernel stays light.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request

URL_VAR = "MHA_POLL_URL"
TOKEN_VAR = "JUPYTERHUB_API_TOKEN"
#: Seconds to wait for the service; a Check button must never hang on it.
TIMEOUT_S = 2.0
#: Answers older than this are left out of the counts (a question asked "now").
DEFAULT_WINDOW_S = 600


def _config() -> tuple[str, str] | None:
    url, token = os.environ.get(URL_VAR, "").strip(), os.environ.get(TOKEN_VAR, "").strip()
    if not url or not token:
        return None
    return (url if url.endswith("/") else url + "/"), token


def available() -> bool:
    """True inside a learner's server on the course hub (the service address and a token are set)."""
    return _config() is not None


def _request(method: str, path: str, body: dict | None = None):
    config = _config()
    if config is None:
        return None
    base, token = config
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method, headers={
        "Authorization": f"token {token}", "Content-Type": "application/json", "Accept": "application/json",
    })
    try:
        with urllib.request.urlopen(req, timeout=TIMEOUT_S) as resp:
            return json.loads(resp.read() or b"null")
    except (urllib.error.URLError, OSError, ValueError):
        # HTTPError (403, 404, 500) is a URLError: refused is the same as absent here.
        return None


def _choice_ids(choice_ids) -> list[str]:
    if isinstance(choice_ids, (str, int, float)):
        choice_ids = [choice_ids]
    return [str(c) for c in choice_ids]


def send(question_id: str, choice_ids) -> bool:
    """Send this learner's answer to ``question_id``; True if the service stored it.

    ``choice_ids``: the chosen options' data indices (``[2]``, ``["0", "3"]``), or a
    numeric answer. A later answer from the same learner replaces the earlier one in
    the counts. Without a hub: does nothing and returns False.
    """
    if not available():
        return False
    reply = _request("POST", "answers", {"question_id": str(question_id), "choices": _choice_ids(choice_ids)})
    return bool(reply and reply.get("stored"))


def counts(question_id: str, window_s: float = DEFAULT_WINDOW_S) -> dict | None:
    """How the room answered ``question_id`` in the last ``window_s`` seconds (instructors only).

    Returns ``{"question_id", "answered", "counts": {choice_id: learners}, "window_s"}``,
    one answer per learner (their latest). None without a hub, for a learner's token
    (the service refuses it), or when the service cannot be reached.
    """
    query = urllib.parse.urlencode({"window_s": float(window_s)})
    reply = _request("GET", f"counts/{urllib.parse.quote(str(question_id), safe='')}?{query}")
    return reply if isinstance(reply, dict) and "counts" in reply else None
