"""Start a learner's server inside its limits (run by CourseSpawner as root, then it becomes the learner).

    python -I learner_launch.py SPEC_JSON -- jupyterhub-singleuser ARGS...

SPEC_JSON: {"uid", "gid", "home", "procs": [cgroup.procs files to join], "nproc": N,
"tmpfs": {"/tmp": bytes, ...}, "keep": [folders a tmpfs must not hide], "private": {folder: bytes}, "homes": folder,
"bind": {login home: home}, "no_new_privs": true}. In order, still as root:

1. joins the learner's control groups (``learner_limits.Groups.make``): everything the
   server starts is counted, limited and ended with it;
2. a mount namespace of its own (private propagation) without the other learners' homes mounted
   under ``homes`` (each a file system of its own), and with ``tmpfs``: a tmpfs of that
   size on each path (/tmp, /var/tmp, /dev/shm, /run/lock: the places every account may
   write), so a learner fills only their own small, memory-counted scratch space; and a tmpfs of
   the learner's own (0700) on each ``private`` folder (the kernels' sockets under /run/mha-hub);
   and each ``bind`` target covered by its source (a PAM account's login home by its image home,
   so nothing the server starts writes to the login home's disk);
3. ``RLIMIT_NPROC`` (all the account's processes and threads) and no new privileges (no
   setuid program can give a process another account's rights);
4. becomes the learner (their groups, gid, uid) in their home, and execs the server: the
   server keeps this process's id, which the hub watches.
Any failure stops the start with a message: a learner never runs without their limits.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
import pwd
import resource
import sys

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 0x2, 0x4, 0x1000, 0x4000, 0x40000
MNT_DETACH = 2
PR_SET_NO_NEW_PRIVS = 38


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)


def _check(result: int, what: str) -> None:
    if result != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _mounts_under(folder: str, but: str) -> list[str]:
    """Mount points below ``folder`` other than ``but`` and what lies under it, deepest first."""
    if not folder:
        return []
    top, own = folder.rstrip("/") + "/", but.rstrip("/")
    found = set()
    with open("/proc/self/mountinfo") as f:
        for line in f:
            point = line.split()[4].replace("\\040", " ")
            if point.startswith(top) and point != own and not point.startswith(own + "/"):
                found.add(point)
    return sorted(found, key=len, reverse=True)


def main(argv: list[str]) -> None:
    if len(argv) < 4 or argv[2] != "--":
        sys.exit("learner_launch: usage: learner_launch.py SPEC_JSON -- COMMAND...")
    spec, cmd = json.loads(argv[1]), argv[3:]
    uid, gid, home = int(spec["uid"]), int(spec["gid"]), spec["home"]
    if uid == 0:
        sys.exit("learner_launch: refusing to run a learner's server as root")
    for procs in spec.get("procs", []):
        with open(procs, "w") as f:
            f.write(str(os.getpid()))
    libc = _libc()
    tmpfs = spec.get("tmpfs") or {}
    private = spec.get("private") or {}
    homes = spec.get("homes") or ""
    binds = spec.get("bind") or {}
    if tmpfs or private or homes or binds:
        _check(libc.unshare(CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        _check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate /")
        # Other learners' homes mounted now (each a file system of its own) are left out of this
        # namespace: it would otherwise hold each of them (and its loop device) until this server ends.
        for point in _mounts_under(homes, but=home):
            _check(libc.umount2(point.encode(), MNT_DETACH), f"umount {point}")
        # What the server needs and a tmpfs would hide (a home or the course under /tmp): held open
        # now, and bound back into the new tmpfs at the same path.
        keep = [os.path.abspath(k) for k in spec.get("keep", []) if os.path.isdir(k)]
        for path, size in tmpfs.items():
            if not os.path.isdir(path) or os.path.islink(path):
                continue
            hidden = [k for k in keep if k.startswith(path.rstrip("/") + "/")]
            fds = {k: os.open(k, os.O_PATH | os.O_DIRECTORY) for k in hidden}
            opts = f"size={int(size)},mode=1777".encode()
            _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts), f"mount tmpfs on {path}")
            for k, fd in fds.items():
                old_umask = os.umask(0)
                try:
                    os.makedirs(k, mode=0o711, exist_ok=True)  # only traversable, as the folders above a home are
                finally:
                    os.umask(old_umask)
                _check(libc.mount(f"/proc/self/fd/{fd}".encode(), k.encode(), None, MS_BIND | MS_REC, None), f"bind {k}")
                os.close(fd)
    for target, source in binds.items():
        _check(libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None), f"bind {source} on {target}")
    for path, size in private.items():
        # The learner's own folder outside their home (the kernels' sockets under /run): a tmpfs of
        # theirs, so filling it fills neither /run nor the disk.
        if os.path.isdir(path) and not os.path.islink(path):
            opts = f"size={int(size)},mode=0700,uid={uid},gid={gid}".encode()
            _check(libc.mount(b"tmpfs", path.encode(), b"tmpfs", MS_NOSUID | MS_NODEV, opts), f"mount tmpfs on {path}")
    nproc = int(spec.get("nproc") or 0)
    if nproc:
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))
    if spec.get("no_new_privs", True):
        _check(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(PR_SET_NO_NEW_PRIVS)")
    name = pwd.getpwuid(uid).pw_name
    os.initgroups(name, gid)
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)
    os.chdir(home)
    os.execv(cmd[0], cmd)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except OSError as exc:
        sys.exit(f"learner_launch: {exc}")
