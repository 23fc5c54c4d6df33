"""The kernel's side of the class poll (mha_classroom/quiz/poll.py): against the real service, and against servers that misbehave.

The service (deploy/poll_service.py, tested in tests/test_poll_service.py) runs in-process
on a loopback port with a stand-in for the hub's auth (tests/poll_server.py). The
misbehaving servers are small socket servers in a thread: one trickles its answer a
byte a second, one counts the requests it gets and answers whatever it is told to.
The real hub is exercised by tests/hub/ and the load test (benchmarks/loadtest).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
import time

import pytest
from poll_server import ROOT, as_learner, poll_url, service, store, wait_until  # noqa: F401 (poll_url, store: fixtures)

from mha_classroom.quiz import poll
from mha_classroom.quiz.bank import default_bank

BANK = default_bank()
SINGLE = next(q for q in BANK.all_questions() if q.kind == "single" and len(q.options) == 4)
MULTI = next(q for q in BANK.all_questions() if q.kind == "multi" and len(q.options) >= 4)
NUMERIC = next(q for q in BANK.all_questions() if q.kind == "numeric" and q.answer >= 1000)
#: How much later than TIMEOUT_S a call may return: a thread switch, on a loaded two-core machine.
MARGIN_S = 1.0


# --------------------------------------------------------------------------- against the real service


def test_learners_send_and_the_instructor_reads_what_they_sent(poll_url, monkeypatch):
    as_learner(monkeypatch, poll_url, "learner-ada")
    assert poll.available()
    assert poll.send(MULTI.id, [2]) is True
    as_learner(monkeypatch, poll_url, "learner-bob")
    assert poll.send(MULTI.id, ["0", "3"]) is True
    as_learner(monkeypatch, poll_url, "teacher")
    result = poll.counts(MULTI.id)
    assert result["answered"] == 2
    assert result["counts"] == {"2": 1, "0": 1, "3": 1}


def test_a_numeric_answer_is_sent_as_its_number(poll_url, monkeypatch):
    answer = int(NUMERIC.answer)
    as_learner(monkeypatch, poll_url, "learner-ada")
    assert poll.send(NUMERIC.id, answer) is True
    as_learner(monkeypatch, poll_url, "learner-bob")
    assert poll.send(NUMERIC.id, float(answer)) is True
    as_learner(monkeypatch, poll_url, "learner-cy")
    assert poll.send(NUMERIC.id, [f"{answer:,}"]) is True
    as_learner(monkeypatch, poll_url, "teacher")
    assert poll.counts(NUMERIC.id)["counts"] == {f"{answer:,}": 3}


def test_a_learners_token_cannot_read_the_counts(poll_url, monkeypatch):
    import urllib.error
    import urllib.request

    as_learner(monkeypatch, poll_url, "learner-ada")
    poll.send(SINGLE.id, ["1"])
    assert poll.counts(SINGLE.id) is None
    req = urllib.request.Request(poll_url + f"counts/{SINGLE.id}", headers={"Authorization": "token learner-ada"})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(req, timeout=5)
    assert err.value.code == 403
    assert "custom:mha-poll:read" in json.loads(err.value.read())["error"]


def test_a_token_without_access_to_the_service_cannot_send(poll_url, monkeypatch, store):
    as_learner(monkeypatch, poll_url, "no-access")
    assert poll.send(SINGLE.id, ["1"]) is False
    as_learner(monkeypatch, poll_url, "unknown-token")
    assert poll.send(SINGLE.id, ["1"]) is False
    assert store.counts(SINGLE.id)["answered"] == 0


@pytest.mark.parametrize("question_id, choices", [
    ("03-q1", ["1"]),                   # not in the bank
    (SINGLE.id, ["999"]),               # not an option
    (SINGLE.id, ["0", "1", "2", "3"]),  # every option of a single-choice question
    (NUMERIC.id, ["many"]),
])
def test_an_answer_the_service_refuses_makes_send_say_false(poll_url, monkeypatch, store, question_id, choices):
    as_learner(monkeypatch, poll_url, "learner-ada")
    assert poll.send(question_id, choices) is False
    assert store.counts(SINGLE.id)["answered"] == 0


def test_without_a_hub_every_poll_call_is_a_no_op(monkeypatch):
    monkeypatch.delenv(poll.URL_VAR, raising=False)
    monkeypatch.setenv(poll.TOKEN_VAR, "some-token")
    assert poll.available() is False
    assert poll.send(SINGLE.id, ["1"]) is False
    assert poll.counts(SINGLE.id) is None


def test_an_unreachable_service_is_the_same_as_none(monkeypatch):
    from tornado.netutil import bind_sockets

    sock = bind_sockets(0, "127.0.0.1")[0]
    port = sock.getsockname()[1]
    sock.close()  # nothing listens there now
    as_learner(monkeypatch, f"http://127.0.0.1:{port}/services/mha-poll", "learner-ada")
    assert poll.available() is True
    assert poll.send(SINGLE.id, ["1"]) is False
    assert poll.counts(SINGLE.id) is None


def test_the_poll_client_keeps_a_kernel_light():
    code = ("import sys; import mha_classroom.quiz.poll; print(sorted(m for m in ('requests', 'tornado', 'jupyterhub', "
            "'ipywidgets', 'plotly', 'numpy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------- servers that misbehave


class StubServer:
    """A loopback HTTP server in a thread that answers every request with ``at_once`` and then ``reply``
    (bytes), a byte every ``delay_s`` seconds if ``trickle``; it keeps the requests it gets."""

    def __init__(self, reply: bytes = b"", trickle: bool = False, delay_s: float = 1.0, at_once: bytes = b""):
        self.reply, self.trickle, self.delay_s, self.at_once = reply, trickle, delay_s, at_once
        self.requests: list[bytes] = []
        self.closed_by_client = threading.Event()
        self.stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/services/mha-poll/"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn):
        with conn:
            conn.settimeout(5)
            request = b""
            try:
                while b"\r\n\r\n" not in request:
                    data = conn.recv(65536)
                    if not data:
                        return
                    request += data
                self.requests.append(request)
                conn.sendall(self.at_once)
                if not self.trickle:
                    conn.sendall(self.reply)
                    return
                for byte in self.reply:
                    if self.stop.wait(self.delay_s):
                        return
                    conn.sendall(bytes([byte]))
            except OSError:  # the client closed the connection
                self.closed_by_client.set()

    def close(self):
        self.stop.set()
        self.sock.close()
        self.thread.join(5)


def http_reply(body: bytes, status: str = "200 OK") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n"
            "Connection: close\r\n\r\n").encode() + body


GOOD_COUNTS = json.dumps({"question_id": SINGLE.id, "answered": 1, "counts": {"1": 1}, "window_s": 600.0}).encode()


@pytest.fixture
def stub(monkeypatch):
    servers = []

    def make(*args, token="teacher", **kwargs):
        server = StubServer(*args, **kwargs)
        servers.append(server)
        as_learner(monkeypatch, server.url, token)
        return server

    yield make
    for server in servers:
        server.close()


def _no_worker_left() -> bool:
    return not any(t.name == "mha-poll-request" and t.is_alive() for t in threading.enumerate())


@pytest.mark.parametrize("call, failed, body", [
    (lambda: poll.counts(SINGLE.id), None, GOOD_COUNTS),
    (lambda: poll.send(SINGLE.id, ["1"]), False, b'{"stored": true}'),
], ids=["counts", "send"])
@pytest.mark.parametrize("where", ["status line", "body"])
def test_a_server_that_trickles_a_byte_a_second_is_given_up_after_timeout_s_in_all(stub, call, failed, body, where):
    reply = http_reply(body)
    split = 0 if where == "status line" else reply.index(b"\r\n\r\n") + 4  # "body": the head at once
    server = stub(reply[split:], trickle=True, at_once=reply[:split])
    started = time.monotonic()
    assert call() is failed
    took = time.monotonic() - started
    assert poll.TIMEOUT_S - 0.2 <= took <= poll.TIMEOUT_S + MARGIN_S, took
    assert len(server.requests) == 1  # it was asked, and answered slowly
    assert wait_until(_no_worker_left, 5), "the request's worker thread is still reading"
    assert server.closed_by_client.wait(5), "the client did not close the slow connection"


def test_the_same_server_answering_at_once_is_read(stub):
    stub(http_reply(GOOD_COUNTS))
    assert poll.counts(SINGLE.id)["counts"] == {"1": 1}
    stub(http_reply(b'{"stored": true}'), token="learner-ada")
    assert poll.send(SINGLE.id, ["1"]) is True


def test_the_total_timeout_is_read_when_the_call_is_made(stub, monkeypatch):
    stub(http_reply(GOOD_COUNTS), trickle=True)
    monkeypatch.setattr(poll, "TIMEOUT_S", 0.5)
    started = time.monotonic()
    assert poll.counts(SINGLE.id) is None
    assert time.monotonic() - started <= 0.5 + MARGIN_S


@pytest.mark.parametrize("reply", [
    http_reply(b"[1, 2]"),
    http_reply(b'"stored"'),
    http_reply(b'{"stored": "yes", "counts": [1]}'),
    http_reply(b"not json"),
    http_reply(b"[" * 60_000),
    http_reply(b" " * (poll.MAX_REPLY_BYTES + 10) + b"{}"),
    http_reply(b'{"stored": true, "counts": {}}', status="500 Internal Server Error"),
    http_reply(b'{"stored": true, "counts": {}}', status="302 Found"),
    b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{}",  # cut short
    b"garbage\r\n\r\n",
    b"",
])
def test_a_reply_that_is_not_the_services_is_no_answer(stub, reply):
    stub(reply, token="learner-ada")
    assert poll.send(SINGLE.id, ["1"]) is False
    stub(reply)
    assert poll.counts(SINGLE.id) is None


class BadList(list):
    def __len__(self):
        raise RuntimeError("no length")


class BadText(str):
    def strip(self, *args):
        raise RuntimeError("no strip")


@pytest.mark.parametrize("question_id, choice_ids", [
    (SINGLE.id, None),
    (SINGLE.id, []),
    (SINGLE.id, [[1]]),
    (SINGLE.id, [None]),
    (SINGLE.id, {"a": 1}),
    (SINGLE.id, [True]),
    (SINGLE.id, float("nan")),
    (SINGLE.id, [float("inf")]),
    (SINGLE.id, 1j),
    (SINGLE.id, object()),
    (SINGLE.id, [str(i) for i in range(40)]),
    (SINGLE.id, ["x" * 100]),
    (SINGLE.id, BadList(["1"])),
    (SINGLE.id, [BadText("1")]),
    (None, ["1"]),
    (3.5, ["1"]),
    ("", ["1"]),
    ("a b", ["1"]),
    ("03/q1", ["1"]),
    ("x" * 100, ["1"]),
])
def test_send_with_arguments_the_service_would_refuse_says_false_and_sends_nothing(stub, question_id, choice_ids):
    server = stub(http_reply(b'{"stored": true}'), token="learner-ada")
    assert poll.send(question_id, choice_ids) is False
    assert server.requests == []


@pytest.mark.parametrize("question_id, window_s", [
    (SINGLE.id, "ten"),
    (SINGLE.id, None),
    (SINGLE.id, 0),
    (SINGLE.id, -1),
    (SINGLE.id, 10**9),
    (SINGLE.id, float("nan")),
    (SINGLE.id, float("inf")),
    (SINGLE.id, True),
    (SINGLE.id, 1j),
    (SINGLE.id, [600]),
    (None, 600),
    (object(), 600),
    ("a b", 600),
])
def test_counts_with_arguments_the_service_would_refuse_is_none_and_asks_nothing(stub, question_id, window_s):
    server = stub(http_reply(GOOD_COUNTS))
    assert poll.counts(question_id, window_s=window_s) is None
    assert server.requests == []


def test_the_calls_issue_25_found_raising_now_return_their_failure_values(stub):
    server = stub(http_reply(b'{"stored": true}'), token="learner-ada")
    assert poll.send("x", None) is False
    assert poll.counts("x", window_s="ten") is None
    assert server.requests == []


def test_counts_with_a_bad_window_is_none_without_a_hub_too(monkeypatch):
    monkeypatch.delenv(poll.URL_VAR, raising=False)
    assert poll.counts(SINGLE.id, window_s="ten") is None


def test_a_window_the_service_accepts_is_sent(stub):
    server = stub(http_reply(GOOD_COUNTS))
    assert poll.counts(SINGLE.id, window_s=90) is not None
    assert b"window_s=90.0" in server.requests[0]


@pytest.mark.parametrize("url, token", [
    ("not a url", "t"),
    ("ftp://127.0.0.1/x/", "t"),
    ("http://127.0.0.1:99999/x/", "t"),
    ("http://127.0.0.1:1/x/", "bad\r\ntoken"),
    ("http:///x/", "t"),
])
def test_hub_variables_that_make_no_sense_are_no_hub(monkeypatch, url, token):
    as_learner(monkeypatch, url, token)
    assert poll.send(SINGLE.id, ["1"]) is False
    assert poll.counts(SINGLE.id) is None


# --------------------------------------------------------------------------- the quiz widget's hook


def _patched_widget():
    return pytest.importorskip("mha_classroom.quiz.widget")


def test_a_learners_check_reaches_the_instructors_classroom_view(poll_url, monkeypatch, tmp_path):
    widget = _patched_widget()
    from mha_classroom.quiz.progress import ProgressStore

    as_learner(monkeypatch, poll_url, "learner-ada")
    quiz = widget.quick_check("03", show=False, store=ProgressStore(tmp_path / "p.sqlite3"))
    view = next(v for v in quiz.questions if v.question.kind == "single")
    view.choose("b")
    view.check()
    chosen = str(view.chosen()[0])
    as_learner(monkeypatch, poll_url, "teacher")
    room = widget.quick_check("03", classroom=True, show=False)
    shown = next(v for v in room.questions if v.question.id == view.question.id)
    assert shown.room_button is not None
    # the learner's answer is sent in the background
    assert wait_until(lambda: (poll.counts(view.question.id) or {}).get("answered"), 10), \
        "the learner's answer never reached the service"
    shown.room_button.click()
    letter = widget.option_labels(shown.order)[int(chosen)].rstrip(")")
    assert f"{letter}: 1" in shown.feedback.value and "1 learners" in shown.feedback.value


def test_the_classroom_view_has_no_room_button_without_a_hub(monkeypatch):
    widget = _patched_widget()
    monkeypatch.delenv(poll.URL_VAR, raising=False)
    room = widget.quick_check("03", classroom=True, show=False)
    assert all(v.room_button is None for v in room.questions)


# --------------------------------------------------------------------------- exercise verdicts


def _stub_of(name):
    """The stub of an exercise, as the learner's cell starts."""
    from mha_classroom import exercises
    from mha_classroom.exercises import _EXERCISES

    namespace: dict = {}
    exec(compile(exercises.stub_source(name), f"<stub {name}>", "exec"), namespace)
    return namespace[_EXERCISES[name].solution.__name__]


def _planted(name, mistake):
    from mha_classroom.exercises import _EXERCISES

    return next(m.planted for m in _EXERCISES[name].mistakes if m.name == mistake)


def test_checks_on_the_hub_reach_the_instructors_view_with_their_named_mistakes(poll_url, monkeypatch):
    from mha_classroom import exercises

    # ada passes, bob reshapes without the transpose, cy has not started
    for token, fn in (("learner-ada", exercises.reference("split_heads")),
                      ("learner-bob", _planted("split_heads", "reshape_without_transpose")),
                      ("learner-cy", _stub_of("split_heads"))):
        as_learner(monkeypatch, poll_url, token)
        exercises.check("split_heads", fn)
    as_learner(monkeypatch, poll_url, "teacher")
    want = {"passed": 1, "mistakes": {"reshape_without_transpose": 1}, "other": 0, "not_tried": 1, "present": 3}
    seen = {}

    def arrived():
        seen.update(poll.verdict_counts("split_heads") or {})
        return {k: seen.get(k) for k in want} == want

    assert wait_until(arrived, 10), seen  # sent in the background


def test_a_check_never_waits_for_a_slow_poll(stub, monkeypatch, capsys):
    from mha_classroom import exercises

    server = stub(http_reply(b'{"stored": true}'), trickle=True, token="learner-ada")
    started = time.monotonic()
    fn = exercises.check("split_heads", exercises.reference("split_heads"))
    took = time.monotonic() - started
    assert fn is exercises.reference("split_heads") and "passed" in capsys.readouterr().out
    assert took < poll.TIMEOUT_S / 2, took  # the check itself takes milliseconds; the poll's 2 s are not in it
    assert wait_until(lambda: len(server.requests) == 1, 5)
    request = server.requests[0]
    assert request.startswith(b"POST /services/mha-poll/verdicts ")


def test_a_learners_token_cannot_read_the_room_on_an_exercise(poll_url, monkeypatch):
    as_learner(monkeypatch, poll_url, "learner-ada")
    assert poll.send_verdict("split_heads", "passed") is True
    assert poll.verdict_counts("split_heads") is None


def test_without_a_hub_verdict_calls_are_no_ops(monkeypatch):
    monkeypatch.delenv(poll.URL_VAR, raising=False)
    assert poll.send_verdict("split_heads", "passed") is False
    assert poll.send_verdict_in_background("split_heads", "passed") is None
    assert poll.verdict_counts("split_heads") is None


@pytest.mark.parametrize("exercise, status, mistake", [
    ("split heads", "passed", None), (None, "passed", None), ("split_heads", "done", None),
    ("split_heads", "mistake", "not an identifier"), ("x" * 65, "passed", None), ("split_heads", "mistake", 3),
])
def test_send_verdict_with_values_the_service_would_refuse_sends_nothing(stub, exercise, status, mistake):
    server = stub(http_reply(b'{"stored": true}'), token="learner-ada")
    assert poll.send_verdict(exercise, status, mistake) is False
    assert server.requests == []


def test_verdict_counts_with_a_bad_name_or_window_asks_nothing(stub):
    server = stub(http_reply(b"{}"))
    assert poll.verdict_counts("../counts/x") is None
    assert poll.verdict_counts("split_heads", window_s=0) is None
    assert server.requests == []


def test_a_verdict_the_service_refuses_makes_send_verdict_say_false(poll_url, monkeypatch):
    as_learner(monkeypatch, poll_url, "learner-ada")
    assert poll.send_verdict("split_heads", "mistake", "mask_inverted") is False  # not a split_heads mistake
    assert poll.send_verdict("no_such_exercise", "passed") is False


def test_the_clients_statuses_are_the_checkers():
    from mha_classroom import exercises

    assert poll.STATUSES == exercises.STATUSES == service.STATUSES
