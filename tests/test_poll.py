"""The class poll: the service's store and web API (with a fake hub), and the kernel's client.

The service (deploy/poll_service.py) runs in-process on a loopback port; a fake
``HubAuth`` maps tokens to the models the hub would return. The real hub is exercised
by the load test (benchmarks/loadtest).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sqlite3
import sys
import threading
from pathlib import Path

import pytest

from mha_core.quiz import poll

ROOT = Path(__file__).resolve().parents[1]


def _load_service():
    spec = importlib.util.spec_from_file_location("mha_poll_service", ROOT / "deploy" / "poll_service.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


service = _load_service()
ACCESS = service.ACCESS_SCOPE
READ = service.READ_SCOPE


class Clock:
    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


@pytest.fixture
def store(tmp_path):
    clock = Clock()
    s = service.PollStore(tmp_path / "poll.sqlite3", b"k" * 32, clock=clock)
    s.clock = clock
    yield s
    s.close()


# --------------------------------------------------------------------------- the store


def test_counts_are_learners_per_choice(store):
    store.record("ada", "03-q1", ["2"])
    store.record("bob", "03-q1", ["2"])
    store.record("cy", "03-q1", ["0", "3"])
    result = store.counts("03-q1")
    assert result["answered"] == 3
    assert result["counts"] == {"2": 2, "0": 1, "3": 1}


def test_a_learners_latest_answer_replaces_the_earlier_one(store):
    store.record("ada", "03-q1", ["1"])
    store.clock.t += 5
    store.record("ada", "03-q1", ["2"])
    assert store.counts("03-q1")["counts"] == {"2": 1}


def test_answers_older_than_the_window_are_left_out(store):
    store.record("ada", "03-q1", ["1"])
    store.clock.t += 700
    store.record("bob", "03-q1", ["2"])
    assert store.counts("03-q1", window_s=600)["counts"] == {"2": 1}
    assert store.counts("03-q1", window_s=800)["counts"] == {"1": 1, "2": 1}


def test_questions_are_counted_apart(store):
    store.record("ada", "03-q1", ["1"])
    store.record("ada", "03-q2", ["0"])
    assert store.counts("03-q2")["counts"] == {"0": 1}
    assert store.counts("03-q3") == {"question_id": "03-q3", "answered": 0, "counts": {}, "window_s": 600.0}


def test_the_database_keeps_no_user_names(store, tmp_path):
    store.record("ada.lovelace", "03-q1", ["1"])
    rows = sqlite3.connect(tmp_path / "poll.sqlite3").execute("SELECT * FROM answers").fetchall()
    assert rows and not any("ada" in str(value) for row in rows for value in row)


@pytest.mark.parametrize("question_id, choices, message", [
    ("", ["1"], "question_id"),
    ("a b", ["1"], "question_id"),
    ("03/q1", ["1"], "question_id"),
    ("03-q1", [], "choices"),
    ("03-q1", None, "choices"),
    ("03-q1", ["x" * 65], "choices"),
    ("03-q1", [str(i) for i in range(40)], "choices"),
])
def test_bad_answers_are_refused_naming_the_parameter(store, question_id, choices, message):
    with pytest.raises(service.PollError, match=message):
        store.record("ada", question_id, choices)


def test_a_bad_window_is_refused(store):
    with pytest.raises(service.PollError, match="window_s"):
        store.counts("03-q1", window_s=0)


def test_only_the_instructor_scope_reads_counts():
    assert service.can_read_counts({"name": "t", "scopes": [ACCESS, READ]})
    assert not service.can_read_counts({"name": "ada", "scopes": [ACCESS]})
    assert not service.can_read_counts(None)
    assert not service.can_read_counts({"name": "x"})


def test_the_salt_is_made_once_and_private(tmp_path):
    path = tmp_path / "poll.salt"
    first = service.load_salt(path)
    assert service.load_salt(path) == first and len(first) == 32
    assert path.stat().st_mode & 0o777 == 0o600


# --------------------------------------------------------------------------- the web API and the client


TOKENS = {
    "learner-ada": {"name": "ada", "kind": "user", "scopes": [ACCESS, "users:activity!user=ada"]},
    "learner-bob": {"name": "bob", "kind": "user", "scopes": [ACCESS]},
    "teacher": {"name": "tess", "kind": "user", "scopes": [ACCESS, READ]},
    "no-access": {"name": "eve", "kind": "user", "scopes": ["users:activity!user=eve"]},
}


class FakeHubAuth:
    """What HubAuth answers: the model of a token's owner, with the token's scopes."""

    def get_user(self, handler):
        header = handler.request.headers.get("Authorization", "")
        token = header.split(None, 1)[1] if header.lower().startswith("token ") else ""
        return TOKENS.get(token)


@pytest.fixture
def poll_url(store):
    from tornado.httpserver import HTTPServer
    from tornado.ioloop import IOLoop
    from tornado.netutil import bind_sockets

    sockets = bind_sockets(0, "127.0.0.1")
    port = sockets[0].getsockname()[1]
    ready = threading.Event()
    holder = {}

    def serve():
        asyncio.set_event_loop(asyncio.new_event_loop())
        server = HTTPServer(service.make_app(store, FakeHubAuth(), "/services/mha-poll/"))
        server.add_sockets(sockets)
        holder["loop"], holder["server"] = IOLoop.current(), server
        ready.set()
        IOLoop.current().start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    ready.wait(10)
    yield f"http://127.0.0.1:{port}/services/mha-poll/"
    holder["loop"].add_callback(holder["loop"].stop)
    thread.join(10)
    holder["server"].stop()


def _as(monkeypatch, url, token):
    monkeypatch.setenv(poll.URL_VAR, url)
    monkeypatch.setenv(poll.TOKEN_VAR, token)


def test_learners_send_and_the_instructor_reads_what_they_sent(poll_url, monkeypatch):
    _as(monkeypatch, poll_url, "learner-ada")
    assert poll.available()
    assert poll.send("03-q1", [2]) is True
    _as(monkeypatch, poll_url, "learner-bob")
    assert poll.send("03-q1", ["0", "3"]) is True
    _as(monkeypatch, poll_url, "teacher")
    result = poll.counts("03-q1")
    assert result["answered"] == 2
    assert result["counts"] == {"2": 1, "0": 1, "3": 1}


def test_a_learners_token_cannot_read_the_counts(poll_url, monkeypatch):
    import urllib.error
    import urllib.request

    _as(monkeypatch, poll_url, "learner-ada")
    poll.send("03-q1", ["1"])
    assert poll.counts("03-q1") is None
    req = urllib.request.Request(poll_url + "counts/03-q1", headers={"Authorization": "token learner-ada"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 403
    assert "custom:mha-poll:read" in json.loads(err.value.read())["error"]


def test_a_token_without_access_to_the_service_cannot_send(poll_url, monkeypatch, store):
    _as(monkeypatch, poll_url, "no-access")
    assert poll.send("03-q1", ["1"]) is False
    _as(monkeypatch, poll_url, "unknown-token")
    assert poll.send("03-q1", ["1"]) is False
    assert store.counts("03-q1")["answered"] == 0


def test_a_bad_answer_gets_400_and_send_says_false(poll_url, monkeypatch):
    _as(monkeypatch, poll_url, "learner-ada")
    assert poll.send("03 q1", ["1"]) is False


def test_without_a_hub_every_poll_call_is_a_no_op(monkeypatch):
    monkeypatch.delenv(poll.URL_VAR, raising=False)
    monkeypatch.setenv(poll.TOKEN_VAR, "some-token")
    assert poll.available() is False
    assert poll.send("03-q1", ["1"]) is False
    assert poll.counts("03-q1") is None


def test_an_unreachable_service_is_the_same_as_none(monkeypatch):
    from tornado.netutil import bind_sockets

    sock = bind_sockets(0, "127.0.0.1")[0]
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    _as(monkeypatch, f"http://127.0.0.1:{port}/services/mha-poll", "learner-ada")
    assert poll.available() is True
    assert poll.send("03-q1", ["1"]) is False
    assert poll.counts("03-q1") is None


def test_the_poll_client_keeps_a_kernel_light():
    import subprocess

    code = "import sys; import mha_core.quiz.poll; print(sorted(m for m in ('requests', 'tornado', 'jupyterhub', 'ipywidgets', 'plotly') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------- the quiz widget's hook


def _patched_widget():
    return pytest.importorskip("mha_core.quiz.widget")


def test_a_learners_check_reaches_the_instructors_classroom_view(poll_url, monkeypatch, tmp_path):
    import time

    widget = _patched_widget()
    from mha_core.quiz.progress import ProgressStore

    _as(monkeypatch, poll_url, "learner-ada")
    quiz = widget.quick_check("03", show=False, store=ProgressStore(tmp_path / "p.sqlite3"))
    view = next(v for v in quiz.questions if v.question.kind == "single")
    view.choose("b")
    view.check()
    chosen = str(view.chosen()[0])
    _as(monkeypatch, poll_url, "teacher")
    room = widget.quick_check("03", classroom=True, show=False)
    shown = next(v for v in room.questions if v.question.id == view.question.id)
    assert shown.room_button is not None
    deadline = time.monotonic() + 10  # the learner's answer is sent in the background
    while poll.counts(view.question.id) is None or not poll.counts(view.question.id)["answered"]:
        assert time.monotonic() < deadline, "the learner's answer never reached the service"
        time.sleep(0.05)
    shown.room_button.click()
    letter = widget.option_labels(shown.order)[int(chosen)].rstrip(")")
    assert f"{letter}: 1" in shown.feedback.value and "1 learners" in shown.feedback.value


def test_the_classroom_view_has_no_room_button_without_a_hub(monkeypatch):
    widget = _patched_widget()
    monkeypatch.delenv(poll.URL_VAR, raising=False)
    room = widget.quick_check("03", classroom=True, show=False)
    assert all(v.room_button is None for v in room.questions)
