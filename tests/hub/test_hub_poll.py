"""The class poll through the real hub and proxy: its input limits (each a request a hostile learner
would send) and the unprivileged account it and the idle culler run as."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hubctl import ALICE, BOB, REPO, SERVICE_USER, uid_of

pytestmark = pytest.mark.hub

ANSWERS = "/services/mha-poll/answers"


def single_choice_question() -> tuple[str, int]:
    """A single-choice question of the course's bank: (id, number of options)."""
    for path in sorted((REPO / "data" / "quizzes").glob("*.json")):
        for q in json.loads(path.read_text()).get("questions", []):
            if q.get("kind") == "single" and len(q.get("options", [])) >= 3:
                return q["id"], len(q["options"])
    raise AssertionError("the quiz bank has no single-choice question with 3 or more options")


def refused_since(hub, before: int, wait_s: float = 5.0) -> bool:
    """Whether the service's log has a 413 for an answer past the first ``before`` (the log is written
    as the service answers, which can be just after the client saw its connection cut)."""
    deadline = time.monotonic() + wait_s
    while hub.log().count("413 POST /services/mha-poll/answers") <= before:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def post(hub, token: str, body: bytes):
    # Where kernels send answers: the poll's Unix socket (no learner can listen there in its place).
    return hub.poll_request("POST", ANSWERS, token=token, body=body, headers={"Content-Type": "application/json"})


def test_a_valid_answer_is_stored(class_hub, tokens):
    qid, _ = single_choice_question()
    resp = post(class_hub, tokens[ALICE], json.dumps({"question_id": qid, "choices": ["1"]}).encode())
    assert resp.status == 200, resp.text[:300]


@pytest.mark.parametrize("case", ["1 MB body", "10k-deep JSON", "2k-deep JSON inside the size limit", "unknown question", "choice 999", "every option of a single-choice question"])
def test_a_hostile_answer_is_refused_never_a_500(class_hub, tokens, case):
    qid, n_options = single_choice_question()
    bodies = {
        "1 MB body": json.dumps({"question_id": qid, "choices": ["1"], "pad": "x" * 1_000_000}).encode(),
        "10k-deep JSON": b'{"question_id": ' + b"[" * 10_000 + b"]" * 10_000 + b', "choices": ["1"]}',
        "2k-deep JSON inside the size limit": b'{"question_id": "' + qid.encode() + b'", "choices": ' + b"[" * 2000 + b"]" * 2000 + b"}",
        "unknown question": json.dumps({"question_id": "99-no-such-question", "choices": ["1"]}).encode(),
        "choice 999": json.dumps({"question_id": qid, "choices": ["999"]}).encode(),
        "every option of a single-choice question": json.dumps({"question_id": qid, "choices": [str(i) for i in range(n_options)]}).encode(),
    }
    refused_before = class_hub.log().count("413 POST /services/mha-poll/answers")
    try:
        resp = post(class_hub, tokens[BOB], bodies[case])
    except (ConnectionResetError, BrokenPipeError):
        resp = None  # the service answered 413 and closed the connection before reading the rest
    poll_log = "\n".join(line for line in class_hub.log().splitlines() if "poll" in line.lower())[-3000:]
    # 20 kB of brackets is over the 4096-byte limit (413); deep JSON that fits is refused as JSON (400).
    expected = (413, 400) if case in ("1 MB body", "10k-deep JSON") else (400,)
    if resp is None:
        # Only a body over the limit may be cut off, and only after the service said 413 for it.
        assert 413 in expected, f"the connection was dropped for {case}\n{poll_log}"
        assert refused_since(class_hub, refused_before), poll_log
    if resp is not None and resp.status in (502, 503) and 413 in expected:
        # The service answers 413 before reading the body and closes the connection; the proxy,
        # still sending the body, can report that as 503. The service's own log says what it answered.
        assert refused_since(class_hub, refused_before), poll_log
    elif resp is not None:
        assert resp.status in expected, f"{case}: {resp.status} {resp.text[:300]}\n{poll_log}"
    # Still up (asked directly: the proxy may hold the connection the service closed).
    assert class_hub.poll_request("GET", "/services/mha-poll/health", timeout=10).status == 200, \
        f"the poll service is down after {case}\n{poll_log}"


def test_the_poll_and_the_culler_run_unprivileged(class_hub):
    svc_uid = uid_of(SERVICE_USER)
    assert svc_uid is not None and svc_uid != 0
    found = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            uids = next(line for line in (proc / "status").read_text().splitlines() if line.startswith("Uid:")).split()[1:]
        except (OSError, StopIteration):
            continue
        try:
            environ = (proc / "environ").read_bytes().decode(errors="replace")
        except OSError:
            continue
        mine = f"127.0.0.1:{class_hub.api_port}" in environ  # this hub's services, not another's
        for what in ("poll_service.py", "jupyterhub_idle_culler"):
            if what in cmd and mine:
                found[what] = {int(u) for u in uids}
    assert set(found) == {"poll_service.py", "jupyterhub_idle_culler"}, found
    for what, uids in found.items():
        assert 0 not in uids, f"{what} runs as root: {uids}"
        assert uids == {svc_uid}, f"{what} runs as {uids}, not {SERVICE_USER}"
    poll_dir = class_hub.state / "poll"
    assert poll_dir.stat().st_uid == svc_uid and (poll_dir.stat().st_mode & 0o077) == 0
