"""A learner who fills their home (issue 37): the home of each account the hub makes is a file system
of its own (MHA_HUB_HOME_SIZE), so the learner stops at that size, the disk that holds the hub's
databases does not fill, and the hub goes on logging learners in and storing poll answers.

Against the real hub (deploy/start.sh, the proxy, the poll service, CourseSpawner, real accounts),
with a 64 MiB home so that filling it is quick. Also: the home's files outlive a server's stop and
the hub's Ctrl-C, and nothing stays mounted or attached once the hub has stopped.
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import pytest
from hubctl import mounts_under, new_hub, uid_of
from shellctl import as_user, kernel_run

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "deploy"))
from learner_limits import loops_of, mount_source  # noqa: E402

pytestmark = pytest.mark.hub

#: Learners of this test only: their homes are made here with the small size.
DORA, GUS = "ht-dora", "ht-gus"
SIZE = 64 * 1024**2

#: Kernel code: write 1 MiB blocks into the home until the file system refuses, then into the
#: kernels' socket folder (outside the home) the same way; how many bytes each took, and why it stopped.
FILL = r"""
import errno, json, os
def fill(path, limit=4 * 1024**3):
    block, written, why = b"\0" * 1024**2, 0, "limit"
    try:
        with open(path, "wb") as f:
            while written < limit:
                written += f.write(block)
                f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        why = errno.errorcode.get(exc.errno, str(exc.errno))
    return {"bytes": os.path.getsize(path), "why": why}
out = {"home": fill(os.path.expanduser("~/fill.bin")),
       "runtime": fill(os.path.join(os.environ["JUPYTER_RUNTIME_DIR"], "fill.bin"))}
os.unlink(os.path.join(os.environ["JUPYTER_RUNTIME_DIR"], "fill.bin"))
st = os.statvfs(os.path.expanduser("~"))
out["home_free"] = st.f_bavail * st.f_frsize
print("__OUT__" + json.dumps(out))
"""


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def answers_stored(hub) -> int:
    """Rows in the poll's database (learners are stored under a keyed hash, not by name)."""
    db = sqlite3.connect(f"file:{hub.state / 'poll' / 'poll.sqlite3'}?mode=ro", uri=True)
    try:
        return db.execute("SELECT COUNT(*) FROM answers").fetchone()[0]
    finally:
        db.close()


def test_a_learner_who_fills_their_home_stops_at_its_size_and_the_hub_goes_on(hub_cleanup, hub_tmp):
    hub_cleanup.accounts.update({DORA, GUS})
    hub = new_hub(hub_cleanup, hub_tmp, "disk", MHA_HUB_HOME_SIZE="64M").start()
    homes = Path(hub.env["MHA_HUB_HOMES"])
    home, image = homes / DORA, homes / ".images" / f"{DORA}.img"
    token = hub.token(DORA)
    hub.start_server(DORA, token)
    # The home is the image, mounted nosuid,nodev; the image lies where no learner may look.
    assert loops_of(image) and mount_source(home) in loops_of(image), (mount_source(home), loops_of(image))
    options = [line.split()[5] for line in Path("/proc/self/mountinfo").read_text().splitlines() if line.split()[4] == str(home)]
    assert options and "nosuid" in options[-1] and "nodev" in options[-1], options
    denied = as_user(DORA, f"ls {homes / '.images'}; cat {image} > /dev/null")
    assert denied.returncode != 0 and "Permission denied" in denied.stderr, (denied.stdout, denied.stderr)

    state_free_before = free_bytes(hub.state)
    t0 = time.monotonic()
    out = kernel_run(hub, DORA, token, FILL)
    took = time.monotonic() - t0
    state_lost = state_free_before - free_bytes(hub.state)
    print(f"\n{DORA} wrote {out['home']['bytes']} bytes into a {SIZE}-byte home before {out['home']['why']} "
          f"({took:.1f} s); {out['runtime']['bytes']} bytes into the kernels' folder before {out['runtime']['why']}; "
          f"the state's file system lost {state_lost} bytes meanwhile")
    assert out["home"]["why"] == "ENOSPC" and out["home"]["bytes"] <= SIZE, f"{DORA} wrote past the home's size: {out}"
    assert out["home_free"] < 1024**2, out
    assert out["runtime"]["why"] == "ENOSPC" and out["runtime"]["bytes"] <= 16 * 1024**2, out
    # The state's disk is another file system: what the learner wrote did not come out of it.
    # (Other work on the machine moves the free space a little: the bound is half of what she wrote.)
    assert state_lost < SIZE // 2, f"the hub's state's file system lost {state_lost} bytes while {DORA} filled her home"

    # With her home full, the hub logs another learner in, starts their server, and stores their answer.
    gus_token = hub.token(GUS)
    hub.start_server(GUS, gus_token)
    answers_before = answers_stored(hub)
    sent = kernel_run(hub, GUS, gus_token, "import json\nfrom mha_classroom.quiz import poll\n"
                      "print('__OUT__' + json.dumps({'sent': poll.send('03-what-is-a-head', [1])}))\n")
    assert sent == {"sent": True}, sent
    assert answers_stored(hub) == answers_before + 1, f"{GUS}'s answer was not stored while {DORA}'s home was full"
    assert hub.request("GET", "/hub/health").status == 200
    assert hub.server_request(DORA, "GET", "/api/status", token).status == 200, "the full home's own server died"

    # Stopping her server unmounts her home and frees its loop device; her files come back with it.
    written = out["home"]["bytes"]
    hub.stop_server(DORA, token)
    assert mount_source(home) is None and not loops_of(image), (mount_source(home), loops_of(image))
    assert not (home / "fill.bin").exists()  # out of sight: only the image holds it
    hub.start_server(DORA, token)
    assert (home / "fill.bin").stat().st_size == written, "the home's files did not survive the server's stop"
    assert (home / "fill.bin").stat().st_uid == uid_of(DORA)
    (home / "fill.bin").unlink()
    # The hub's Ctrl-C: nothing of this hub's homes stays mounted, no loop device stays attached
    # (other hubs of the session share the homes' folder: only these two accounts' are looked at).
    hub.ctrl_c()
    ours = [home, homes / GUS]
    images = [image, homes / ".images" / f"{GUS}.img"]

    def left() -> list[str]:
        return [m for h in ours for m in mounts_under(str(h))] + [d for i in images for d in loops_of(i)]

    deadline = time.monotonic() + 10
    while left() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left(), f"left after the hub's Ctrl-C: {left()}"
    # And after a restart: the same home, with the course in it.
    hub.start()
    token = hub.token(DORA)
    hub.start_server(DORA, token)
    assert (home / "course").is_dir() and mount_source(home) in loops_of(image)
    hub.ctrl_c()
    deadline = time.monotonic() + 10
    while left() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left(), f"left after the hub's second Ctrl-C: {left()}"
    print(json.dumps({"home_bytes_written": written, "size": SIZE}))
