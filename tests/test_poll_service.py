"""The class poll service (deploy/poll_service.py): its limits, its checks against the quiz bank, its store.

The web API runs on a loopback port with a stand-in for the hub's auth (tests/poll_server.py),
in a thread or, to measure its memory or run it as another account, in a process of its
own. The real hub drives it in tests/hub/.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from poll_server import (ACCESS, READ, ROOT, SERVICE_PATH, memory_kib, python_for, serve_in_thread, service,
                         start_child)

from mha_classroom.quiz.bank import default_bank

BANK = default_bank()
SINGLE = next(q for q in BANK.all_questions() if q.kind == "single" and len(q.options) == 4)
MULTI = next(q for q in BANK.all_questions() if q.kind == "multi" and len(q.options) >= 4)
NUMERIC = next(q for q in BANK.all_questions() if q.kind == "numeric" and q.answer >= 1000)
QUESTIONS = service.Questions.from_bank(BANK)


class Clock:
    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


@pytest.fixture
def store(tmp_path):
    clock = Clock()
    s = service.PollStore(tmp_path / "poll.sqlite3", b"k" * 32, QUESTIONS, clock=clock)
    s.clock = clock
    yield s
    s.close()


def rows_in(path: Path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]


# --------------------------------------------------------------------------- counting


def test_counts_are_learners_per_choice(store):
    store.record("ada", MULTI.id, ["2"])
    store.record("bob", MULTI.id, ["2"])
    store.record("cy", MULTI.id, ["0", "3"])
    result = store.counts(MULTI.id)
    assert result["answered"] == 3
    assert result["counts"] == {"2": 2, "0": 1, "3": 1}


def test_a_learners_latest_answer_replaces_the_earlier_one(store):
    store.record("ada", SINGLE.id, ["1"])
    store.clock.t += 5
    store.record("ada", SINGLE.id, ["2"])
    assert store.counts(SINGLE.id)["counts"] == {"2": 1}


def test_answers_older_than_the_window_are_left_out(store):
    store.record("ada", SINGLE.id, ["1"])
    store.clock.t += 700
    store.record("bob", SINGLE.id, ["2"])
    assert store.counts(SINGLE.id, window_s=600)["counts"] == {"2": 1}
    assert store.counts(SINGLE.id, window_s=800)["counts"] == {"1": 1, "2": 1}


def test_questions_are_counted_apart(store):
    store.record("ada", SINGLE.id, ["1"])
    store.record("ada", MULTI.id, ["0"])
    assert store.counts(MULTI.id)["counts"] == {"0": 1}
    assert store.counts(NUMERIC.id) == {"question_id": NUMERIC.id, "answered": 0, "counts": {}, "window_s": 600.0}


def test_the_database_keeps_no_user_names(store, tmp_path):
    store.record("ada.lovelace", SINGLE.id, ["1"])
    rows = sqlite3.connect(tmp_path / "poll.sqlite3").execute("SELECT * FROM answers").fetchall()
    assert rows and not any("ada" in str(value) for row in rows for value in row)


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


def test_a_truncated_salt_stops_the_service_saying_what_to_do(tmp_path):
    (tmp_path / "poll.salt").write_bytes(b"")
    with pytest.raises(service.StartupError, match="too short.*delete it"):
        service.open_store(tmp_path / "poll.sqlite3", QUESTIONS)


# --------------------------------------------------------------------------- what the bank allows


def test_every_question_of_the_bank_is_accepted_with_a_valid_answer(store):
    for question in BANK.all_questions():
        choices = [str(question.answer)] if question.kind == "numeric" else [str(question.correct_indices[0])]
        store.record("ada", question.id, choices)
    assert rows_in(Path(store.path)) == len(BANK.all_questions())


@pytest.mark.parametrize("question_id, choices, message", [
    ("03-q1", ["1"], r"question_id='03-q1' is not a question in the course's quiz bank"),
    (SINGLE.id[:-1], ["1"], r"did you mean " + repr(SINGLE.id)),
    (5, ["1"], "question_id=5 must be a string"),
    (None, ["1"], "question_id=None must be a string"),
    (SINGLE.id, ["999"], r"'999' is not an option of question .*its options are 0, 1, 2, 3"),
    (SINGLE.id, ["01"], "is not an option"),
    (SINGLE.id, ["-1"], "is not an option"),
    (SINGLE.id, ["0", "1", "2", "3"], "has one answer; .* picks 4 options"),
    (SINGLE.id, ["1", "1"], "gives option 1 twice"),
    (MULTI.id, ["1", "1"], "gives option 1 twice"),
    (MULTI.id, [], r"choices=\[\] is empty"),
    (SINGLE.id, None, "must be a list of strings"),
    (SINGLE.id, "1", "must be a list of strings"),
    (SINGLE.id, [1], "must be a list of strings"),
    (SINGLE.id, [{"a": 1}], "must be a list of strings"),
    (SINGLE.id, [["1"]], "must be a list of strings"),
    (NUMERIC.id, ["many"], "takes a number"),
    (NUMERIC.id, ["nan"], "takes a number"),
    (NUMERIC.id, ["1e999"], "takes a number"),
    (NUMERIC.id, ["1", "2"], "takes one number"),
    (NUMERIC.id, ["1" * 70], "takes a number"),
])
def test_answers_the_bank_does_not_allow_are_refused_saying_why(store, question_id, choices, message):
    with pytest.raises(service.PollError, match=message):
        store.record("ada", question_id, choices)
    assert rows_in(Path(store.path)) == 0


def test_a_multi_select_answer_is_a_set_of_distinct_options(store):
    store.record("ada", MULTI.id, ["3", "0"])
    assert store.counts(MULTI.id)["counts"] == {"0": 1, "3": 1}


def test_a_numeric_answer_counts_under_one_spelling(store):
    answer = int(NUMERIC.answer)
    for name, typed in [("ada", str(answer)), ("bob", f"{answer:,}"), ("cy", f"{answer:_}"), ("dee", f"{answer:.6e}")]:
        store.record(name, NUMERIC.id, [typed])
    store.record("eve", NUMERIC.id, ["12"])
    assert store.counts(NUMERIC.id)["counts"] == {f"{answer:,}": 4, "12": 1}


@pytest.mark.parametrize("window_s", ["ten", "", "0", "-5", "86401", "1e9", "nan", "inf", None])
def test_a_window_out_of_range_is_refused_naming_window_s(store, window_s):
    with pytest.raises(service.PollError, match=r"window_s=.* give a number of seconds in \(0, 86400\]"):
        store.counts(SINGLE.id, window_s=window_s)


# --------------------------------------------------------------------------- reading a body


def answer_body(question_id=SINGLE.id, choices=("1",)) -> bytes:
    return json.dumps({"question_id": question_id, "choices": list(choices)}).encode()


@pytest.mark.parametrize("body, message", [
    (b"", "the body is empty"),
    (b"not json", "not valid JSON"),
    (b"\xff\xfe", "not UTF-8"),
    (b"[1, 2]", "a JSON list, not an object"),
    (b'"03-what-is-a-head"', "a JSON str, not an object"),
    (b'{"question_id": "a", "question_id": "b", "choices": []}', "gives the key 'question_id' twice"),
    (b'{"question_id": "a", "choices": [NaN]}', "holds NaN"),
    (b'{"question_id": "a", "choices": ["1"], "learner": "bob"}', "has the key 'learner'"),
    (b'{"choices": ["1"]}', "has no question_id"),
    (b"[" * 4096, "nests more than 4 deep"),
    (b'{"question_id": {"a": {"b": {"c": {"d": 1}}}}, "choices": []}', "nests more than 4 deep"),
])
def test_a_body_not_shaped_as_an_answer_is_refused_saying_why(body, message):
    with pytest.raises(service.PollError, match=message):
        service.parse_answer(body)


def test_a_body_over_the_limit_is_refused_as_too_large():
    with pytest.raises(service.BodyTooLarge, match="at most 4096"):
        service.parse_answer(b" " * 4000 + answer_body() + b" " * 100)
    assert service.parse_answer(answer_body()) == (SINGLE.id, ["1"])


def test_deep_nesting_is_refused_before_it_is_parsed():
    # 100k deep is past the body limit; a body at the limit nests at most 4096 deep, and is
    # refused before json.loads could reach its recursion limit.
    assert service.json_depth("[" * 100_000, limit=4) == 5
    started = time.perf_counter()
    with pytest.raises(service.PollError, match="nests"):
        service.parse_answer(b"[" * 2048 + b"]" * 2048)
    assert time.perf_counter() - started < 1.0


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(alphabet='ab"\\[]{}', max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(alphabet='k"[{\\', max_size=3), inner, max_size=3),
    max_leaves=12,
)


def _depth(value) -> int:
    if isinstance(value, list):
        return 1 + max((_depth(v) for v in value), default=0)
    if isinstance(value, dict):
        return 1 + max((_depth(v) for v in value.values()), default=0)
    return 0


@given(json_values)
def test_json_depth_is_the_nesting_of_the_value_brackets_in_strings_ignored(value):
    assert service.json_depth(json.dumps(value), limit=100) == _depth(value)


# --------------------------------------------------------------------------- the web API


@pytest.fixture
def poll_url(store):
    with serve_in_thread(store) as url:
        yield url


def call(url, body: bytes | None = None, token="learner-ada", method=None, headers=None):
    """(status, JSON reply) of one request; errors too."""
    req = urllib.request.Request(url, data=body, method=method, headers={
        **({"Authorization": f"token {token}"} if token else {}), "Content-Type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def raw_exchange(url: str, head: bytes, body_chunks=(), read_timeout_s=10.0) -> tuple[bytes, int]:
    """Send ``head`` and then ``body_chunks`` over one socket; (what came back, body bytes the socket took)."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    sent = 0
    with socket.create_connection((parts.hostname, parts.port), timeout=read_timeout_s) as sock:
        sock.sendall(head)
        try:
            for chunk in body_chunks:
                sock.sendall(chunk)
                sent += len(chunk)
        except OSError:  # the service closed the connection: it reads no more
            pass
        reply = b""
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                reply += data
        except OSError:
            pass
    return reply, sent


def post_head(url: str, length: int | None, extra: str = "", method: str = "POST", route: str = "answers") -> bytes:
    from urllib.parse import urlsplit

    path = urlsplit(url).path + route
    framing = f"Content-Length: {length}\r\n" if length is not None else "Transfer-Encoding: chunked\r\n"
    return (f"{method} {path} HTTP/1.1\r\nHost: x\r\nAuthorization: token learner-ada\r\n"
            f"Content-Type: application/json\r\n{framing}{extra}\r\n").encode()


def test_an_answer_is_stored_and_counted(poll_url, store):
    assert call(poll_url + "answers", answer_body(choices=["2"])) == (200, {"stored": True})
    status, result = call(poll_url + f"counts/{SINGLE.id}", token="teacher")
    assert status == 200 and result["counts"] == {"2": 1} and result["answered"] == 1


@pytest.mark.parametrize("method, route, status", [("POST", "answers", 413), ("PUT", "answers", 413),
                                                   ("POST", "elsewhere", 404)])
def test_a_declared_body_over_4096_bytes_is_answered_before_any_of_it_is_sent(poll_url, store, method, route, status):
    reply, _ = raw_exchange(poll_url, post_head(poll_url, 90 * 2**20, method=method, route=route))
    assert reply.startswith(b"HTTP/1.1 %d" % status), reply[:200]
    assert reply.count(b"HTTP/1.1") == 1
    assert rows_in(Path(store.path)) == 0


def test_a_declared_body_over_4096_bytes_gets_413_saying_the_limit(poll_url, store):
    reply, _ = raw_exchange(poll_url, post_head(poll_url, 90 * 2**20))
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    assert b"at most 4096" in reply and reply.count(b"HTTP/1.1") == 1
    assert rows_in(Path(store.path)) == 0


def test_a_body_of_4097_bytes_gets_413_and_one_of_4096_is_read(poll_url, store):
    body = answer_body()
    status, reply = call(poll_url + "answers", body + b" " * (4097 - len(body)))
    assert status == 413 and "4096" in reply["error"]
    assert call(poll_url + "answers", body + b" " * (4096 - len(body))) == (200, {"stored": True})


def test_a_chunked_body_over_the_limit_is_cut_off_unread(poll_url, store):
    chunk = b"%x\r\n%s\r\n" % (8192, b" " * 8192)
    reply, sent = raw_exchange(poll_url, post_head(poll_url, None), [chunk] + [b"1000\r\n" + b" " * 4096 + b"\r\n"] * 4000)
    assert reply.startswith((b"HTTP/1.1 400", b"HTTP/1.1 413")), reply[:200]
    assert sent < 16 * 2**20  # the connection was closed long before the 16 MB were taken
    assert rows_in(Path(store.path)) == 0


def test_a_small_chunked_answer_is_read(poll_url, store):
    body = answer_body()
    reply, _ = raw_exchange(poll_url, post_head(poll_url, None, "Connection: close\r\n"),
                            [b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)])
    assert reply.startswith(b"HTTP/1.1 200") and rows_in(Path(store.path)) == 1


@pytest.mark.parametrize("body, status, message", [
    (b"[" * 4000, 400, "nests more than 4 deep"),
    (b"[" * 100_000 + b"]" * 100_000, 413, "4096"),
    (b"{not json", 400, "not valid JSON"),
    (b'{"question_id": "03-q1", "choices": ["1"]}', 400, "not a question in the course's quiz bank"),
    (b'{"question_id": "%s", "choices": ["999"]}' % SINGLE.id.encode(), 400, "is not an option"),
    (b'{"question_id": "%s", "choices": ["0", "1", "2", "3"]}' % SINGLE.id.encode(), 400, "has one answer"),
    (b'{"question_id": "%s", "choices": [{"0": {}}]}' % SINGLE.id.encode(), 400, "list of strings"),
])
def test_refused_answers_get_a_clear_4xx_never_a_500(poll_url, store, body, status, message):
    got, reply = call(poll_url + "answers", body)
    assert got == status and message in reply["error"]
    assert rows_in(Path(store.path)) == 0


def test_junk_from_one_learner_is_stored_nowhere(poll_url, store):
    junk = [f"{n:02d}-junk-{i}" for i in range(200) for n in [i % 11]]
    assert {call(poll_url + "answers", answer_body(qid))[0] for qid in junk} == {400}
    assert rows_in(Path(store.path)) == 0


def test_one_learner_picking_every_option_counts_at_most_once(poll_url, store):
    for choices in (["0", "1", "2", "3"], ["0", "1"], ["0"], ["1"], ["2"], ["3"]):
        call(poll_url + "answers", answer_body(choices=choices))
    _, result = call(poll_url + f"counts/{SINGLE.id}", token="teacher")
    assert result["answered"] == 1 and result["counts"] == {"3": 1}


@pytest.mark.parametrize("query", ["window_s=ten", "window_s=0", "window_s=-1", "window_s=86401", "window_s=nan",
                                   "window_s=inf", "window_s="])
def test_a_window_out_of_range_gets_400(poll_url, query):
    status, reply = call(poll_url + f"counts/{SINGLE.id}?{query}", token="teacher")
    assert status == 400 and "window_s=" in reply["error"] and "(0, 86400]" in reply["error"]


def test_counts_for_a_question_not_in_the_bank_get_400(poll_url):
    status, reply = call(poll_url + "counts/03-q1", token="teacher")
    assert status == 400 and "not a question" in reply["error"]


@pytest.mark.parametrize("path, method, body, status", [
    ("nothing-here", "GET", None, 404),
    ("answers/extra", "POST", b"{}", 404),
    ("counts/", "GET", None, 404),
    ("../../hub/api", "GET", None, 404),
    ("answers", "GET", None, 405),
    ("answers", "PUT", b"{}", 405),
    ("health", "DELETE", None, 405),
])
def test_unknown_routes_get_404_and_wrong_methods_405_as_json(poll_url, path, method, body, status):
    got, reply = call(poll_url + path, body, method=method)
    assert got == status and "the routes are POST" in reply["error"]


def test_without_a_token_an_answer_gets_401_and_a_learner_reading_counts_403(poll_url, store):
    assert call(poll_url + "answers", answer_body(), token=None)[0] == 401
    assert call(poll_url + "answers", answer_body(), token="no-access")[0] == 403
    status, reply = call(poll_url + f"counts/{SINGLE.id}", token="learner-ada")
    assert status == 403 and READ in reply["error"]
    assert rows_in(Path(store.path)) == 0


def test_a_database_that_fails_gets_503_saying_so(poll_url, store):
    store.close()  # every later query raises sqlite3.ProgrammingError, as a broken disk would raise OperationalError
    status, reply = call(poll_url + "answers", answer_body())
    assert status == 503 and "cannot store answers" in reply["error"]
    status, reply = call(poll_url + f"counts/{SINGLE.id}", token="teacher")
    assert status == 503 and "cannot read its answers" in reply["error"]


def test_health_needs_no_token(poll_url):
    assert call(poll_url + "health", token=None) == (200, {"ok": True})


# --------------------------------------------------------------------------- in a process of its own


def _push_90_mb(url: str, results: list) -> None:
    """Declare 90 MiB, read the answer (it comes before any of the body is sent), then push the 90 MiB."""
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    piece, sent, reply = b" " * 2**20, 0, b""
    with socket.create_connection((parts.hostname, parts.port), timeout=20) as sock:
        sock.sendall(post_head(url, 90 * 2**20))
        while not reply.endswith(b"}"):  # the 413's JSON body, then the service closes the connection
            data = sock.recv(65536)
            if not data:
                break
            reply += data
        try:
            for _ in range(90):
                sock.sendall(piece)
                sent += len(piece)
        except OSError:
            pass
    results.append((reply[:12], sent))


def test_four_concurrent_90_mb_bodies_leave_the_services_memory_flat(tmp_path):
    with start_child(tmp_path) as (proc, url):
        assert call(url + "health", token=None)[0] == 200
        before = memory_kib(proc.pid)
        results: list = []
        threads = [threading.Thread(target=_push_90_mb, args=(url, results)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        after = memory_kib(proc.pid)
        assert call(url + "answers", answer_body()) == (200, {"stored": True})  # still serving
    assert [reply for reply, _ in results] == [b"HTTP/1.1 413"] * 4
    taken_mib = max(sent for _, sent in results) / 2**20
    grew_kib = after["VmHWM"] - before["VmRSS"]
    print(f"\npoll service RSS {before['VmRSS'] / 1024:.1f} MiB before, peak {after['VmHWM'] / 1024:.1f} MiB "
          f"after 4 x 90 MiB bodies (+{grew_kib / 1024:.2f} MiB); the sockets took at most {taken_mib:.1f} MiB each")
    assert grew_kib < 8 * 1024, (before, after)
    assert taken_mib < 30  # what the kernel's socket buffers hold; the service closed each connection


def test_the_service_runs_as_an_unprivileged_account_writing_only_its_folder():
    if os.geteuid() != 0:
        pytest.skip("needs root, to run the service as nobody")
    folder = Path(tempfile.mkdtemp(prefix="mha-poll-"))
    try:
        os.chown(folder, 65534, 65534)
        with start_child(folder, user=65534, group=65534) as (proc, url):
            assert call(url + "answers", answer_body()) == (200, {"stored": True})
        owners = {p.name: p.stat().st_uid for p in folder.iterdir()}
        assert "poll.sqlite3" in owners and "poll.salt" in owners
        assert set(owners.values()) == {65534}
        assert set(owners) <= {"poll.sqlite3", "poll.sqlite3-wal", "poll.sqlite3-shm", "poll.salt"}
    finally:
        shutil.rmtree(folder)


def _run_main_as_nobody(folder: Path) -> subprocess.CompletedProcess:
    python, extra = python_for(65534)
    env = {"PATH": os.environ.get("PATH", "/usr/bin"), "MHA_POLL_DB": str(folder / "poll.sqlite3"),
           "JUPYTERHUB_API_TOKEN": "x", "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/nonexistent", **extra}
    return subprocess.run([python, str(SERVICE_PATH)], capture_output=True, text=True, env=env, timeout=60,
                          user=65534, group=65534, extra_groups=[], cwd="/")


def test_an_unwritable_state_folder_stops_the_service_with_a_clear_message():
    if os.geteuid() != 0:
        pytest.skip("needs root, to run the service as nobody")
    folder = Path(tempfile.mkdtemp(prefix="mha-poll-"))  # root's, 0700: nobody cannot write it
    try:
        done = _run_main_as_nobody(folder)
        assert done.returncode == 1
        message = done.stderr.strip()
        assert message.startswith("mha-poll: the poll service, running as nobody (uid 65534), cannot")
        assert str(folder / "poll.salt") in message and "Permission denied" in message
        assert "set MHA_POLL_DB" in message and "Traceback" not in done.stderr
        assert list(folder.iterdir()) == []
    finally:
        shutil.rmtree(folder)


def test_a_read_only_database_stops_the_service_with_a_clear_message():
    if os.geteuid() != 0:
        pytest.skip("needs root, to run the service as nobody")
    folder = Path(tempfile.mkdtemp(prefix="mha-poll-"))
    try:
        folder.chmod(0o755)
        service.load_salt(folder / "poll.salt")
        os.chown(folder / "poll.salt", 65534, 65534)
        sqlite3.connect(folder / "poll.sqlite3").close()  # root's file, 0644: nobody may read it, not write it
        done = _run_main_as_nobody(folder)
        assert done.returncode == 1 and "cannot open its database" in done.stderr and "Traceback" not in done.stderr
    finally:
        shutil.rmtree(folder)


def test_the_service_module_still_imports_for_the_hub_config_without_mha_core_or_tornado():
    code = ("import sys; sys.path.insert(0, 'deploy'); import poll_service; "
            "print(sorted(m for m in ('tornado', 'mha_core', 'jupyterhub') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "[]"


# --------------------------------------------------------------------------- exercise verdicts

from mha_classroom.exercises import catalogue  # noqa: E402

CATALOGUE = catalogue()
SPLIT = "split_heads"
SPLIT_MISTAKE = CATALOGUE[SPLIT]["mistakes"][0]  # reshape_without_transpose


def test_the_room_on_an_exercise_is_passed_each_named_mistake_other_and_not_tried(store):
    store.record_verdict("ada", SPLIT, "passed")
    store.record_verdict("bob", SPLIT, "mistake", "reshape_without_transpose")
    store.record_verdict("cy", SPLIT, "mistake", "reshape_without_transpose")
    store.record_verdict("dee", SPLIT, "mistake", "split_order_swapped")
    store.record_verdict("eve", SPLIT, "wrong", "wrong_shape")
    store.record_verdict("fay", SPLIT, "wrong")
    store.record_verdict("gus", SPLIT, "error")
    store.record_verdict("hal", SPLIT, "not_attempted")
    store.record_verdict("ivy", "merge_heads", "passed")  # present, but no verdict on split_heads
    store.record("jo", SINGLE.id, ["1"])  # present through a quick-check answer only
    assert store.verdict_counts(SPLIT) == {
        "exercise": SPLIT, "window_s": 600.0, "present": 10, "passed": 1,
        "mistakes": {"reshape_without_transpose": 2, "split_order_swapped": 1, "wrong_shape": 1},
        "other": 2, "not_tried": 3}


def test_a_learners_latest_verdict_replaces_the_earlier_one(store):
    store.record_verdict("ada", SPLIT, "mistake", SPLIT_MISTAKE)
    store.clock.t += 5
    store.record_verdict("ada", SPLIT, "passed")
    result = store.verdict_counts(SPLIT)
    assert (result["passed"], result["mistakes"], result["present"]) == (1, {}, 1)


def test_verdicts_older_than_the_window_are_left_out_and_so_is_their_learner(store):
    store.record_verdict("ada", SPLIT, "passed")
    store.clock.t += 700
    store.record_verdict("bob", SPLIT, "mistake", SPLIT_MISTAKE)
    result = store.verdict_counts(SPLIT, window_s=600)
    assert (result["present"], result["passed"], result["mistakes"]) == (1, 0, {SPLIT_MISTAKE: 1})
    assert store.verdict_counts(SPLIT, window_s=800)["passed"] == 1


def test_the_verdicts_table_keeps_no_user_names(store, tmp_path):
    store.record_verdict("ada.lovelace", SPLIT, "passed")
    rows = sqlite3.connect(tmp_path / "poll.sqlite3").execute("SELECT * FROM verdicts").fetchall()
    assert rows and not any("ada" in str(value) for row in rows for value in row)


def test_every_exercise_and_each_of_its_mistake_names_is_accepted(store):
    for name, entry in CATALOGUE.items():
        for mistake in entry["mistakes"]:
            store.record_verdict("ada", name, "mistake", mistake)
        store.record_verdict("ada", name, "passed")
    with sqlite3.connect(store.path) as db:
        (n,) = db.execute("SELECT COUNT(*) FROM verdicts").fetchone()
    assert n == sum(len(e["mistakes"]) + 1 for e in CATALOGUE.values())


@pytest.mark.parametrize("exercise, status, mistake, message", [
    ("split_head", "passed", None, r"exercise='split_head' is not an exercise of the course \(did you mean 'split_heads'\?\)"),
    (None, "passed", None, "exercise=None is not an exercise"),
    (5, "passed", None, "exercise=5 is not an exercise"),
    (SPLIT, "done", None, "status='done' is not a verdict's status; give one of passed, not_attempted"),
    (SPLIT, ["passed"], None, "is not a verdict's status"),
    (SPLIT, "mistake", None, "status='mistake' needs the mistake's name"),
    (SPLIT, "passed", SPLIT_MISTAKE, "status='passed' names no mistake"),
    (SPLIT, "mistake", "mask_inverted", "mistake='mask_inverted' is not a mistake the split_heads check names"),
    (SPLIT, "mistake", "reshape_without_transpos", "did you mean 'reshape_without_transpose'"),
    (SPLIT, "mistake", 3, "mistake=3 is not a mistake"),
])
def test_verdicts_the_catalogue_does_not_allow_are_refused_saying_why(store, exercise, status, mistake, message):
    with pytest.raises(service.PollError, match=message):
        store.record_verdict("ada", exercise, status, mistake)
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] == 0


def verdict_body(exercise=SPLIT, status="mistake", mistake=SPLIT_MISTAKE) -> bytes:
    return json.dumps({"exercise": exercise, "status": status, "mistake": mistake}).encode()


@pytest.mark.parametrize("body, message", [
    (b"", "the body is empty; send a verdict"),
    (b'{"exercise": "split_heads"}', "has no status; a verdict is"),
    (b'{"exercise": "split_heads", "status": "passed", "code": "x = 1"}', "has the key 'code'; a verdict has only"),
    (b'{"exercise": "a", "exercise": "b", "status": "passed"}', "gives the key 'exercise' twice"),
    (b'{"exercise": [[[[["x"]]]]], "status": "passed"}', "nests more than 4 deep"),
])
def test_a_body_not_shaped_as_a_verdict_is_refused_saying_why(body, message):
    with pytest.raises(service.PollError, match=message):
        service.parse_verdict(body)


def test_a_verdict_without_a_mistake_key_is_read_as_none():
    assert service.parse_verdict(b'{"exercise": "split_heads", "status": "passed"}') == (SPLIT, "passed", None)


def test_a_verdict_is_stored_and_only_the_instructor_reads_the_room(poll_url, store):
    assert call(poll_url + "verdicts", verdict_body()) == (200, {"stored": True})
    assert call(poll_url + "verdicts", verdict_body(status="passed", mistake=None), token="learner-bob") == (200, {"stored": True})
    status, result = call(poll_url + f"verdicts/{SPLIT}", token="teacher")
    assert status == 200
    assert (result["passed"], result["mistakes"], result["present"], result["not_tried"]) == (1, {SPLIT_MISTAKE: 1}, 2, 0)
    status, reply = call(poll_url + f"verdicts/{SPLIT}", token="learner-ada")
    assert status == 403 and READ in reply["error"]
    assert call(poll_url + "verdicts", verdict_body(), token=None)[0] == 401
    assert call(poll_url + "verdicts", verdict_body(), token="no-access")[0] == 403


@pytest.mark.parametrize("body, status, message", [
    (verdict_body(exercise="03-q1"), 400, "not an exercise of the course"),
    (verdict_body(mistake="mask_inverted"), 400, "not a mistake the split_heads check names"),
    (verdict_body() + b" " * 4096, 413, "at most 4096"),
    (b"[" * 4000, 400, "nests more than 4 deep"),
    (b"{not json", 400, "not valid JSON"),
])
def test_refused_verdicts_get_a_clear_4xx_never_a_500(poll_url, store, body, status, message):
    got, reply = call(poll_url + "verdicts", body)
    assert got == status and message in reply["error"]
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] == 0


def test_a_declared_verdict_body_over_4096_bytes_is_answered_before_any_of_it_is_sent(poll_url, store):
    reply, _ = raw_exchange(poll_url, post_head(poll_url, 90 * 2**20, route="verdicts"))
    assert reply.startswith(b"HTTP/1.1 413") and b"a verdict may have at most 4096" in reply, reply[:200]


@pytest.mark.parametrize("path, status, message", [
    ("verdicts/split_head", 400, "did you mean 'split_heads'"),
    ("verdicts/split_heads?window_s=0", 400, "(0, 86400]"),
    ("verdicts/split_heads/x", 404, "the routes are"),
])
def test_room_counts_for_a_bad_exercise_or_window_get_400(poll_url, path, status, message):
    got, reply = call(poll_url + path, token="teacher")
    assert got == status and message in reply["error"]


def test_a_database_that_fails_gets_503_for_verdicts_too(poll_url, store):
    store.close()
    assert call(poll_url + "verdicts", verdict_body())[0] == 503
    status, reply = call(poll_url + f"verdicts/{SPLIT}", token="teacher")
    assert status == 503 and "cannot read its verdicts" in reply["error"]


def test_the_catalogue_holds_every_mistake_name_the_checks_can_give():
    import re

    from mha_classroom.exercises import _runner

    source = Path(_runner.__file__).read_text()
    literal = set(re.findall(r'"(?:mistake|wrong)", "([a-z_]+)"', source))
    literal |= set(re.findall(r'\("([a-z_]+)", f?"Your', source))  # (mistake, message) of a wrong form
    assert literal == {"no_return", "wrong_return", "wrong_shape", "changed_input"}
    for name, entry in CATALOGUE.items():
        assert literal <= set(entry["mistakes"]), name
    assert CATALOGUE["split_heads"]["notebook"] == "03" and "reshape_without_transpose" in CATALOGUE["split_heads"]["mistakes"]


def test_a_learner_keeps_at_most_max_rows_and_the_counts_still_use_the_latest(store):
    """Issue 37: 4,000 posts from one token were all stored. Now each learner keeps their latest rows."""
    qid = next(q for q in QUESTIONS._by_id if QUESTIONS.question(q).kind == "single")
    for i in range(service.MAX_ROWS_PER_LEARNER + 50):
        store.clock.t += 1
        store.record("learner-ada", qid, ["0"] if i % 2 else ["1"])
    assert store.rows_of("learner-ada") == service.MAX_ROWS_PER_LEARNER
    store.record("learner-bo", qid, ["1"])
    assert store.rows_of("learner-bo") == 1  # the cap is per learner
    assert store.counts(qid)["answered"] == 2


def test_the_rate_limit_allows_a_burst_then_one_a_second_per_learner():
    t = [0.0]
    limit = service.RateLimit(burst=3, per_s=1.0, clock=lambda: t[0])
    assert [limit.allow("ada") for _ in range(4)] == [True, True, True, False]
    assert limit.allow("bo")  # another learner has their own bucket
    t[0] += 1.0
    assert limit.allow("ada") and not limit.allow("ada")
