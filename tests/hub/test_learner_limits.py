"""learner_limits: ending a learner leaves no zombie of theirs behind (no root, no hub needed).

The case: a kernel whose server has ended is reparented; once killed it stays a zombie until its
new parent reaps it. As the child subreaper, the hub is that parent and reaps it itself.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"

# Run in a fresh process: becoming a subreaper must not change the test runner itself.
SCRIPT = r"""
import os, signal, sys, time
sys.path.insert(0, sys.argv[1])
from learner_limits import _stat, become_subreaper, reap_until_gone

reaper = sys.argv[2] == "1"
if reaper:
    assert become_subreaper()
r, w = os.pipe()
server = os.fork()
if server == 0:                       # the "server": starts a "kernel", then ends
    kernel = os.fork()
    if kernel == 0:
        time.sleep(60)
        os._exit(0)
    os.write(w, str(kernel).encode())
    os._exit(0)
os.waitpid(server, 0)                 # the hub reaps its own child, the server
kernel = int(os.read(r, 32))
time.sleep(0.05)
os.kill(kernel, signal.SIGKILL)       # the learner is ended
while _stat(kernel) is not None and _stat(kernel)[0] != "Z":
    time.sleep(0.005)
parent = _stat(kernel)[1] if _stat(kernel) else None
t0 = time.monotonic()
left = reap_until_gone([kernel], timeout_s=float(sys.argv[3]))
print(parent == os.getpid(), left, round(time.monotonic() - t0, 3))
"""


def run(reaper: bool, timeout_s: float) -> list[str]:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(DEPLOY), "1" if reaper else "0", str(timeout_s)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout.split(maxsplit=1)


def test_the_subreaper_reaps_a_killed_orphan_at_once():
    adopted, rest = run(reaper=True, timeout_s=5.0)
    left, took = rest.rsplit(maxsplit=1)
    assert adopted == "True", "the orphan was not reparented to the subreaper"
    assert left == "[]", f"a zombie was left: {left}"
    assert float(took) < 1.0, f"reaping took {took} s"


def test_without_the_subreaper_the_orphan_goes_to_another_parent():
    # What the hub's subreaper setting changes: without it, the killed kernel is init's to reap
    # (which may do so late), and reap_until_gone does not wait on it (it may not waitpid it).
    adopted, _ = run(reaper=False, timeout_s=0.0)
    assert adopted == "False"


def test_reap_until_gone_returns_at_once_for_pids_already_gone():
    sys.path.insert(0, str(DEPLOY))
    from learner_limits import reap_until_gone

    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    t0 = time.monotonic()
    assert reap_until_gone([proc.pid], timeout_s=5.0) == []
    assert time.monotonic() - t0 < 0.5
