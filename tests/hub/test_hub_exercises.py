"""Exercise results for the instructor, through the real hub: learners' checks reach the poll, the
instructor's view shows exactly those counts, a learner's token gets 403, and no user name is stored.

Each simulated learner runs ``mha_classroom.exercises.check`` in a Python process of its own with
the two variables the hub gives every learner's server (``MHA_POLL_URL`` and a hub token of
theirs, made through the login form): what their kernel does when they press Check. No
learner's server is started, to keep the test short.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest
from hubctl import ALICE, BOB, CAROL, REPO, TESS

pytestmark = pytest.mark.hub

# Each learner's Check: the exercise, and the function they wrote (a planted mistake, the
# reference, or the untouched stub).
CHECK = r"""
import sys, time, threading
from mha_classroom import exercises
from mha_classroom.exercises import _EXERCISES
name, what = sys.argv[1], sys.argv[2]
ex = _EXERCISES[name]
if what == "reference":
    fn = exercises.reference(name)
elif what == "stub":
    ns = {}
    exec(exercises.stub_source(name), ns)
    fn = ns[ex.solution.__name__]
else:
    fn = next(m.planted for m in ex.mistakes if m.name == what)
exercises.check(name, fn)
for t in threading.enumerate():  # the verdict goes in the background; wait for it before exiting
    if t.name == "mha-poll-verdict":
        t.join(5)
"""

VIEW = r"""
import json
from mha_classroom.quiz import instructor
view = instructor.room_view(["split_heads", "merge_heads"], show=False)
print(json.dumps(view.results))
"""


def run_as(hub, token: str, code: str, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MHA_", "JUPYTERHUB_"))}
    env.update(MHA_POLL_URL=hub.poll_url, JUPYTERHUB_API_TOKEN=token,
               PYTHONDONTWRITEBYTECODE="1")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=60,
                          cwd=REPO, check=True)


@pytest.fixture(scope="module")
def learner_tokens(class_hub) -> dict[str, str]:
    return {name: class_hub.token(name) for name in (ALICE, BOB, CAROL, TESS)}


def test_learners_checks_reach_the_instructors_view_as_exact_counts(class_hub, learner_tokens):
    started = time.monotonic()
    checks = [
        (ALICE, "split_heads", "reshape_without_transpose"),
        (BOB, "split_heads", "reshape_without_transpose"),
        (CAROL, "split_heads", "reference"),
        (ALICE, "merge_heads", "heads_summed"),
        (BOB, "merge_heads", "stub"),
    ]
    for name, exercise, what in checks:
        out = run_as(class_hub, learner_tokens[name], CHECK, exercise, what).stdout
        assert out.startswith(f"{exercise}: "), out
    results = json.loads(run_as(class_hub, learner_tokens[TESS], VIEW).stdout)
    split, merge = results["split_heads"], results["merge_heads"]
    # present: alice, bob, carol (the other hub tests may have had learners answer quick checks
    # in this window: they are counted as present, and as not tried here)
    present = split["present"]
    assert present >= 3
    assert (split["passed"], split["mistakes"], split["other"], split["not_tried"]) == \
        (1, {"reshape_without_transpose": 2}, 0, present - 3)
    assert (merge["passed"], merge["mistakes"], merge["other"], merge["not_tried"]) == \
        (0, {"heads_summed": 1}, 0, present - 1)
    assert time.monotonic() - started < 90


def test_a_learners_token_gets_403_for_the_room(class_hub, learner_tokens):
    for name in (ALICE, BOB):
        resp = class_hub.poll_request("GET", "/services/mha-poll/verdicts/split_heads", token=learner_tokens[name])
        assert resp.status == 403, resp.text[:300]
        assert "custom:mha-poll:read" in resp.json()["error"]
    resp = class_hub.poll_request("GET", "/services/mha-poll/verdicts/split_heads", token=learner_tokens[TESS])
    assert resp.status == 200 and "mistakes" in resp.json()
    results = json.loads(run_as(class_hub, learner_tokens[ALICE], VIEW).stdout)
    assert results == {"split_heads": None, "merge_heads": None}


def test_the_polls_database_holds_no_user_names(class_hub, learner_tokens):
    db = class_hub.state / "poll" / "poll.sqlite3"
    with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
        rows = [row for table in ("answers", "verdicts") for row in conn.execute(f"SELECT * FROM {table}")]
    assert any("split_heads" in map(str, row) for row in rows)
    text = json.dumps(rows)
    for name in (ALICE, BOB, CAROL, TESS, "alice", "carol", "tess"):
        assert name not in text
