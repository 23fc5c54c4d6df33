"""What a learner's processes may use, and how the hub ends every one of them.

A learner can run any code as their own Unix account (a kernel, a terminal). So the hub:

- puts each learner's server, and everything it starts, in a control group of its own
  (``mha-hub/HUB_ID/NAME``): cgroup v2 where the machine has it, else the v1 ``pids``, ``memory``
  and ``freezer`` hierarchies. A process cannot leave its group (the groups are root's);
- limits each group: ``pids.max`` (processes and threads) and memory (``memory.max`` /
  ``memory.limit_in_bytes``), and each process: ``RLIMIT_NPROC`` (all of the account's
  processes, whatever group) -- so one learner's fork bomb or memory hog stays theirs;
- ends a learner by freezing the group, killing everything in it, and thawing, until it
  is empty (a process that forks every 0.3 s and ignores SIGTERM cannot outrun it); where
  there are no control groups, by killing every process of the account: a process running
  as the account calls ``kill(-1, SIGKILL)``, which the kernel applies to all of that
  account's processes at once, repeated until none is left. Either way it returns only once
  every process it killed is gone from /proc, zombies included: the hub is its learners' child
  subreaper, so it reaps a killed kernel itself instead of leaving it to a lazy init.

Nothing here needs anything but the standard library; the hub (root) calls it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import errno
import os
import re
import signal
import time
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
#: The folder under which each learner's group is made (beside the hub's own group).
GROUP_PARENT = "mha-hub"
V1_CONTROLLERS = ("pids", "memory", "freezer", "cpu")
#: The scheduler's period for a CPU cap (cpu.cfs_period_us / cpu.max): 100 ms, the kernel's default.
CPU_PERIOD_US = 100_000
PR_SET_CHILD_SUBREAPER = 36
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?\s*$", re.IGNORECASE)


def parse_size(text: str, what: str) -> int:
    """Bytes from "512M", "2G", "1.5G" or a plain number of bytes; 0 means no limit. ValueError naming ``what``."""
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"{what}={text!r} is not a size; give bytes or a number with K, M, G or T (e.g. 2G), or 0 for no limit")
    number, unit = float(match.group(1)), match.group(2).upper()
    return int(number * 1024 ** " KMGT".index(unit or " "))


# --------------------------------------------------------------------------- control groups


def _own_path(controller: str | None) -> str:
    """This process's cgroup path for a v1 ``controller`` (or the v2 path for None), from /proc/self/cgroup."""
    for line in Path("/proc/self/cgroup").read_text().splitlines():
        hier, ctrls, path = line.split(":", 2)
        if controller is None and hier == "0" and ctrls == "":
            return path
        if controller is not None and controller in ctrls.split(","):
            return path
    raise FileNotFoundError(f"no cgroup line for {controller or 'v2'}")


def _writable_dir(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


class Groups:
    """Where one hub's learners' control groups live on this machine (``mha-hub/HUB_ID/NAME``),
    or none (``available`` False). ``hub_id`` keeps two hubs on one machine apart: each ends
    only its own learners' groups."""

    def __init__(self, hub_id: str = "hub", root: Path = CGROUP_ROOT):
        self.hub_id = hub_id
        self.version = 0
        self.parents: dict[str, Path] = {}  # controller -> the mha-hub folder (v2: key "unified")
        if os.geteuid() != 0:
            return
        with contextlib.suppress(OSError, FileNotFoundError):
            if (root / "cgroup.controllers").is_file():  # the unified hierarchy is mounted at the root
                self._init_v2(root)
                return
        with contextlib.suppress(OSError):
            found = {}
            for ctrl in V1_CONTROLLERS:
                base = root / ctrl
                if not (base / "cgroup.procs").is_file():
                    continue
                own = base / _own_path(ctrl).lstrip("/")
                parent = (own if _writable_dir(own) else base) / GROUP_PARENT / self.hub_id
                parent.mkdir(parents=True, exist_ok=True)
                found[ctrl] = parent
            if "pids" in found and "freezer" in found:
                self.version, self.parents = 1, found

    def _init_v2(self, root: Path) -> None:
        controllers = (root / "cgroup.controllers").read_text().split()
        # The root group may hold processes and enable controllers for its children; any
        # other group must be empty to do so, so the learners' groups hang off the root.
        parent = root / GROUP_PARENT / self.hub_id
        parent.mkdir(parents=True, exist_ok=True)
        wanted = [c for c in ("pids", "memory", "cpu") if c in controllers]
        for folder in (root, root / GROUP_PARENT, parent):
            for ctrl in wanted:
                with contextlib.suppress(OSError):
                    (folder / "cgroup.subtree_control").write_text(f"+{ctrl}")
        self.version, self.parents = 2, {"unified": parent}

    @property
    def available(self) -> bool:
        return self.version > 0

    def folders(self, name: str) -> dict[str, Path]:
        return {ctrl: parent / name for ctrl, parent in self.parents.items()}

    def make(self, name: str, *, max_tasks: int, memory_bytes: int, cpus: float = 0.0) -> list[Path]:
        """Make (or reuse) ``name``'s groups with their limits; the ``cgroup.procs`` files a process joins them by.

        Each learner's processes are one group for the scheduler too: busy learners share the cores
        equally, however many processes or threads each runs. ``cpus`` > 0 also caps the group at
        that many cores' time (1.5: one and a half cores)."""
        procs = []
        quota = int(cpus * CPU_PERIOD_US) if cpus > 0 else 0
        for ctrl, folder in self.folders(name).items():
            folder.mkdir(exist_ok=True)
            if self.version == 2:
                _write_if(folder / "pids.max", str(max_tasks) if max_tasks else "max")
                _write_if(folder / "memory.max", str(memory_bytes) if memory_bytes else "max")
                _write_if(folder / "memory.swap.max", "0" if memory_bytes else "max")
                _write_if(folder / "cpu.max", f"{quota if quota else 'max'} {CPU_PERIOD_US}")
            elif ctrl == "cpu":
                _write_if(folder / "cpu.cfs_period_us", str(CPU_PERIOD_US))
                _write_if(folder / "cpu.cfs_quota_us", str(quota) if quota else "-1")
            elif ctrl == "pids":
                _write_if(folder / "pids.max", str(max_tasks) if max_tasks else "max")
            elif ctrl == "memory":
                _write_if(folder / "memory.limit_in_bytes", str(memory_bytes) if memory_bytes else "-1")
                with contextlib.suppress(OSError):
                    _write_if(folder / "memory.memsw.limit_in_bytes", str(memory_bytes) if memory_bytes else "-1")
            procs.append(folder / "cgroup.procs")
        return procs

    def pids(self, name: str) -> list[int]:
        key = "unified" if self.version == 2 else "pids"
        folder = self.parents.get(key, Path("/nonexistent")) / name
        try:
            return [int(p) for p in (folder / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return []

    def names(self) -> list[str]:
        key = "unified" if self.version == 2 else "pids"
        parent = self.parents.get(key)
        if parent is None or not parent.is_dir():
            return []
        return sorted(p.name for p in parent.iterdir() if p.is_dir())

    def _freeze(self, name: str, frozen: bool) -> None:
        folders = self.folders(name)
        if self.version == 2:
            _write_if(folders["unified"] / "cgroup.freeze", "1" if frozen else "0")
        else:
            _write_if(folders["freezer"] / "freezer.state", "FROZEN" if frozen else "THAWED")

    def kill(self, name: str, timeout_s: float = 10.0) -> int:
        """End every process in ``name``'s group; returns how many were signalled. Removes the empty groups.
        Returns only once every process it saw is gone from /proc, zombies too (``reap_until_gone``):
        a killed process leaves the group's list before its parent reaps it."""
        if not self.available:
            return 0
        folders = self.folders(name)
        signalled = 0
        seen: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            pids = self.pids(name)
            if not pids:
                break
            seen.update(pids)
            if self.version == 2 and (folders["unified"] / "cgroup.kill").exists():
                _write_if(folders["unified"] / "cgroup.kill", "1")
                signalled += len(pids)
            else:
                # Frozen, no process can fork or run between the listing and the kill.
                with contextlib.suppress(OSError):
                    self._freeze(name, True)
                for pid in self.pids(name):
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                        signalled += 1
                with contextlib.suppress(OSError):
                    self._freeze(name, False)  # SIGKILL is delivered once thawed
            time.sleep(0.05)
        reap_until_gone(seen, max(0.0, deadline - time.monotonic()))
        for folder in folders.values():
            with contextlib.suppress(OSError):
                folder.rmdir()
        return signalled


def _write_if(path: Path, value: str) -> None:
    if path.exists():
        path.write_text(value)


# --------------------------------------------------------------------------- processes of an account


def pids_of_uid(uid: int) -> list[int]:
    """Every live process (zombies left out) with real, effective or saved uid ``uid`` (from /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status") as f:
                for line in f:
                    if line.startswith("State:") and line.split()[1] == "Z":
                        break
                    if line.startswith("Uid:"):
                        if uid in (int(x) for x in line.split()[1:4]):
                            found.append(int(entry))
                        break
        except OSError:
            continue
    return found


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of ``pid`` from /proc/PID/stat; None once it is gone (reaped)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return fields[0], int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def zombie_children_of_uid(uid: int) -> list[int]:
    """This process's own children of account ``uid`` that are zombies (from /proc)."""
    me, found = os.getpid(), []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(f"/proc/{entry}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if (fields["State"].split()[0] == "Z" and int(fields["PPid"]) == me
                    and uid in (int(x) for x in fields["Uid"].split()[:3])):
                found.append(int(entry))
    return found


def reap_until_gone(pids, timeout_s: float = 5.0) -> list[int]:
    """Wait until none of ``pids`` (processes just killed) is left in /proc, zombies included: a
    zombie that is this process's child (the hub is its learners' child subreaper, see
    ``become_subreaper``, so a kernel whose server died is reparented to it) is reaped here, one by
    its pid (never ``waitpid(-1)``: that would take the exit status of a child that a
    ``subprocess.Popen`` waits for). Any other zombie is left to its parent (init), waited for until
    ``timeout_s``. Returns the pids still there then."""
    left = set(pids)
    me = os.getpid()
    deadline = time.monotonic() + timeout_s
    while left:
        for pid in sorted(left):
            found = _stat(pid)
            if found is None:
                left.discard(pid)
            elif found[0] == "Z" and found[1] == me:
                with contextlib.suppress(ChildProcessError):
                    os.waitpid(pid, os.WNOHANG)
                if _stat(pid) is None:
                    left.discard(pid)
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.02)
    return sorted(left)


def become_subreaper() -> bool:
    """Make this process (the hub) the child subreaper of what it starts: a learner's kernel whose
    server ended is then reparented to the hub, not to init, and the hub reaps it
    (``reap_until_gone``) before it reports the learner stopped. An init that reaps lazily would
    otherwise leave it a zombie of the learner's account after the hub has exited."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return False


def kill_account(uid: int, timeout_s: float = 10.0, keep: tuple[int, ...] = ()) -> int:
    """End every process of the account ``uid`` (root only; never root's or a system account's):
    a child that becomes ``uid`` sends ``kill(-1, SIGKILL)``, which reaches all of the account's
    processes in one pass (none can fork past it), repeated until /proc shows none. Every process
    it saw (and each zombie of the account that is this process's child) is then waited for until
    it is gone from /proc (``reap_until_gone``), except the pids in ``keep`` (a server a ``Popen``
    reaps). Returns the number of processes seen at the start."""
    if uid == 0 or os.geteuid() != 0:
        raise PermissionError(f"kill_account(uid={uid}): only root may, and never for root")
    seen_pids = set(pids_of_uid(uid))
    seen = len(seen_pids)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        live = pids_of_uid(uid)
        seen_pids.update(live)
        if not live:
            break
        pid = os.fork()
        if pid == 0:  # the child: drop to the account, then signal everything it owns
            try:
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(uid, uid, uid)
                os.kill(-1, signal.SIGKILL)
            except BaseException:
                pass
            os._exit(0)
        os.waitpid(pid, 0)
        time.sleep(0.05)
    reap_until_gone((seen_pids | set(zombie_children_of_uid(uid))) - set(keep), max(0.0, deadline - time.monotonic()))
    return seen


# --------------------------------------------------------------------------- who holds a port


def _inodes_listening(port: int) -> dict[int, str]:
    """Socket inodes listening on TCP ``port`` -> the address, from /proc/net/tcp and tcp6."""
    found = {}
    for table, family in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 6)):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                addr, _, hexport = fields[1].rpartition(":")
                if fields[3] == "0A" and int(hexport, 16) == port:
                    found[int(fields[9])] = _address(addr, family)
    return found


def _address(hexaddr: str, family: int) -> str:
    import ipaddress
    import struct

    raw = bytes.fromhex(hexaddr)
    if family == 4:
        return str(ipaddress.IPv4Address(struct.pack("<I", struct.unpack(">I", raw)[0])))
    words = struct.unpack("<4I", raw)
    return f"[{ipaddress.IPv6Address(struct.pack('>4I', *words))}]"


def port_holders(port: int) -> list[dict]:
    """Who listens on TCP ``port`` (any address): [{"pid", "uid", "address", "command"}]; pid None if not found."""
    inodes = _inodes_listening(port)
    if not inodes:
        return []
    holders, seen = [], set()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            fds = os.listdir(f"/proc/{entry}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                target = os.readlink(f"/proc/{entry}/fd/{fd}")
            except OSError:
                continue
            if target.startswith("socket:["):
                inode = int(target[8:-1])
                if inode in inodes and (entry, inode) not in seen:
                    seen.add((entry, inode))
                    try:
                        uid = os.stat(f"/proc/{entry}").st_uid
                        cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    except OSError:
                        uid, cmd = None, ""
                    holders.append({"pid": int(entry), "uid": uid, "address": inodes[inode], "command": cmd.strip()[:120]})
    if not holders:
        holders = [{"pid": None, "uid": None, "address": a, "command": ""} for a in inodes.values()]
    return holders


def describe_holders(holders: list[dict]) -> str:
    import pwd

    parts = []
    for h in holders:
        try:
            who = pwd.getpwuid(h["uid"]).pw_name if h["uid"] is not None else "?"
        except KeyError:
            who = f"uid {h['uid']}"
        parts.append(f"{h['address']} by pid {h['pid']} ({who}: {h['command'] or '?'})" if h["pid"] else
                     f"{h['address']} (by a process this hub cannot see)")
    return "; ".join(parts)


def errno_in_use(exc: OSError) -> bool:
    return exc.errno == errno.EADDRINUSE


# --------------------------------------------------------------------------- a home of a fixed size

#: The folder (in the homes' folder, root's, 0700) that holds each learner's home image, NAME.img.
IMAGES_DIR = ".images"
#: Free space the hub keeps on the images' file system when it makes a home (its own databases
#: and logs may share that file system): a new home that would leave less is refused.
DISK_RESERVE = 1024**3


def mount_source(path: Path) -> str | None:
    """The device mounted at ``path`` (a mount point in this mount namespace), or None."""
    target = os.path.abspath(path)
    found = None
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            mount_point = left.split()[4].replace("\\040", " ")
            if mount_point == target:
                found = right.split()[1]  # the last one mounted there is what is seen
    return found


def loop_backing_file(device: str) -> str | None:
    """The file behind a loop device (/dev/loopN), from /sys; None if it is not one."""
    name = os.path.basename(device)
    with contextlib.suppress(OSError):
        return Path(f"/sys/block/{name}/loop/backing_file").read_text().strip()
    return None


def loops_of(image: Path) -> list[str]:
    """Every loop device whose backing file is ``image``."""
    target = os.path.abspath(image)
    found = []
    with contextlib.suppress(OSError):
        for entry in Path("/sys/block").iterdir():
            if entry.name.startswith("loop") and loop_backing_file(entry.name) == target:
                found.append(f"/dev/{entry.name}")
    return found


def _run(cmd: list[str]) -> None:
    import subprocess

    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-400:]}")


def make_home_image(image: Path, size: int, uid: int, gid: int, reserve: int = DISK_RESERVE, *,
                    label: str = "mha-home", setting: str = "MHA_HUB_HOME_SIZE") -> None:
    """An ext4 image of ``size`` bytes at ``image`` (in a root-only folder), its root folder owned by
    uid:gid. The blocks are allocated now (fallocate), so homes can never together take more than
    the disk has; refused (OSError) if that would leave less than ``reserve`` bytes free. An image
    already there of a smaller size is grown (never shrunk); its files are kept. ``setting`` is the
    variable a refusal tells the administrator to change."""
    have = image.stat().st_size if image.exists() else 0
    if have >= size:
        return
    st = os.statvfs(image.parent)
    free = st.f_bavail * st.f_frsize
    if free - (size - have) < reserve:
        raise OSError(errno.ENOSPC, f"a home of {size} bytes at {image} would leave {max(free - size + have, 0)} bytes free "
                      f"on its file system (the hub keeps {reserve}); make {setting} smaller or free some space")
    fd = os.open(image, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0), 0o600)
    try:
        os.posix_fallocate(fd, 0, size)
    except OSError:
        if not have:
            os.unlink(image)
        raise
    finally:
        os.close(fd)
    if have:
        _run(["e2fsck", "-f", "-p", str(image)])
        _run(["resize2fs", "-f", str(image)])
        return
    try:
        # -m 0: no blocks kept for root (the learner gets the whole size); nodiscard: mkfs would punch
        # holes in the file and give the allocated blocks back.
        _run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", f"nodiscard,root_owner={uid}:{gid}", "-L", label, str(image)])
    except OSError:
        os.unlink(image)
        raise


def mount_home(image: Path, home: Path) -> str:
    """Mount ``image`` at ``home`` (loop, nosuid, nodev); the loop device. Already mounted there: nothing to do."""
    source = mount_source(home)
    if source is not None:
        if loop_backing_file(source) == os.path.abspath(image):
            return source
        raise OSError(f"{home} is already a mount point of {source}, not of {image}: the hub will not mount over it")
    _run(["mount", "-t", "ext4", "-o", "loop,nosuid,nodev", str(image), str(home)])
    return mount_source(home) or "?"


def unmount_home(image: Path, home: Path, timeout_s: float = 5.0) -> bool:
    """Unmount ``home`` if ``image`` is mounted there, then detach every loop device of ``image``.
    Returns whether anything was unmounted. A busy home is unmounted lazily (gone once its last
    user is): the learner's processes are ended before this is called."""
    unmounted = False
    deadline = time.monotonic() + timeout_s
    while True:
        source = mount_source(home)
        if source is None or loop_backing_file(source) != os.path.abspath(image):
            break
        try:
            _run(["umount", str(home)])
        except OSError:
            if time.monotonic() < deadline:
                time.sleep(0.2)
                continue
            _run(["umount", "-l", str(home)])
        unmounted = True
    # The kernel frees a loop device a moment after its last user (the learner's mount namespace,
    # gone with their last process) lets go: asked again until it is gone, or the time is up (then
    # it is freed when that user ends: mount -o loop sets autoclear).
    while loops_of(image):
        for device in loops_of(image):
            with contextlib.suppress(OSError):
                _run(["losetup", "-d", device])
        if time.monotonic() > deadline:
            break
        time.sleep(0.1)
    return unmounted


def state_image(state: Path) -> Path:
    """Where the hub's own file system for ``state`` lives: beside it, ``STATE.img`` (root's, 0600)."""
    return state.parent / f"{state.name}.img"


def reserve_state(state: Path, size: int) -> str | None:
    """Give the hub's state folder (its database, cookie secret, the poll's database) a file system of
    its own: an ext4 image of ``size`` bytes beside it, its blocks allocated now, mounted on ``state``
    (loop, nosuid, nodev, noexec). A learner who fills the disk that holds their home (PAM accounts'
    homes are plain folders) then cannot stop the hub from writing: its blocks were taken before.

    The first time, what ``state`` already holds is moved into the image. Already mounted (the hub
    was killed before it could unmount): nothing to do. ``state`` a mount point of something else (an
    administrator gave it a disk of its own): left as it is; returns None. Else the loop device."""
    state = Path(os.path.abspath(state))
    image = state_image(state)
    source = mount_source(state)
    if source is not None:
        return source if loop_backing_file(source) == str(image) else None
    # The last hub's lazy unmount ends when its last open file does: never mount the image twice.
    deadline = time.monotonic() + 10
    while loops_of(image):
        if time.monotonic() > deadline:
            raise OSError(errno.EBUSY, f"{image} is still attached ({', '.join(loops_of(image))}) though not mounted on "
                          f"{state}: a process of the last hub still has it open; end it, or losetup -d the device")
        time.sleep(0.2)
    fresh = not image.exists()
    make_home_image(image, size, 0, 0, reserve=0, label="mha-hub-state", setting="MHA_HUB_STATE_SIZE")
    if fresh and any(state.iterdir()):
        import shutil
        import tempfile

        staging = Path(tempfile.mkdtemp(prefix=f".{state.name}.move-", dir=state.parent))
        try:
            _run(["mount", "-t", "ext4", "-o", "loop,nosuid,nodev,noexec", str(image), str(staging)])
            try:
                _run(["cp", "-a", "--", f"{state}/.", str(staging)])
            finally:
                _run(["umount", str(staging)])
        finally:
            staging.rmdir()
        for entry in state.iterdir():  # now in the image: no stale copy left under the mount
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    _run(["mount", "-t", "ext4", "-o", "loop,nosuid,nodev,noexec", str(image), str(state)])
    os.chmod(state, 0o711)  # as deploy/start.sh leaves the folder: each account may pass, none may list
    return mount_source(state)


def mounts_under(prefix: str) -> list[str]:
    """Mount points (this mount namespace) at or below the folder ``prefix``, deepest first."""
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = line.split()[4].replace("\\040", " ")
            if point == prefix or point.startswith(prefix.rstrip("/") + "/"):
                found.append(point)
    return sorted(set(found), key=len, reverse=True)


def loops_under(prefix: str) -> list[str]:
    """Loop devices whose backing file lies under the folder ``prefix`` (the learners' home images)."""
    found = []
    with contextlib.suppress(OSError):
        for entry in Path("/sys/block").iterdir():
            with contextlib.suppress(OSError):
                backing = (entry / "loop" / "backing_file").read_text().strip()
                if backing.startswith(prefix.rstrip("/") + "/"):
                    found.append(f"/dev/{entry.name}")
    return found


def unmount_under(prefix: str, timeout_s: float = 10.0) -> list[str]:
    """Unmount everything mounted under ``prefix`` (learners' homes left mounted) and detach the loop
    devices of images there, waiting up to ``timeout_s`` for autoclear; returns what was done. For whoever
    removes a hub's folders after it (the hub tests' cleanup, the load test's classes)."""
    import subprocess

    done = []
    for point in mounts_under(prefix):
        if subprocess.run(["umount", point], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", point], capture_output=True)
        done.append(f"mount {point}")
    deadline = time.monotonic() + timeout_s
    while loops_under(prefix) and time.monotonic() < deadline:
        for device in loops_under(prefix):
            subprocess.run(["losetup", "-d", device], capture_output=True)
        time.sleep(0.2)
    done += [f"loop {d} (still attached)" for d in loops_under(prefix)]
    return done


def release_state(state: Path) -> None:
    """Unmount the hub's state image from ``state`` when the hub ends (lazily: its database closes
    after this runs); the loop device is freed with the last user (mount -o loop sets autoclear)."""
    state = Path(os.path.abspath(state))
    source = mount_source(state)
    if source is not None and loop_backing_file(source) == str(state_image(state)):
        _run(["umount", "-l", str(state)])
