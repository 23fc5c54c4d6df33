"""The spawner that starts each learner's JupyterLab as a local process, in a home of their own.

``CourseSpawner`` is JupyterHub's ``LocalProcessSpawner`` plus what a class needs, and
the rules that keep one learner out of another's account:

- ``unix_users=True`` (the default when the hub runs as root): the learner's server runs
  as the learner's Unix account. The hub only ever runs a server as an account it may
  use (``account_refusal``): never a system account (uid below ``UID_MIN`` from
  /etc/login.defs), never a hub-made-looking name that belongs to someone else.
  ``create_users=True`` (dummy mode) makes the account at first start, in the group
  ``mha-learners`` that marks the accounts the hub made, with its home under
  ``homes_root``; in that mode ONLY accounts in that group are used. Without
  ``create_users`` (PAM), the account must exist, be a normal account and, when
  ``allowed_group`` is set, belong to it; the hub then leaves its home's owner and
  mode alone.
- Homes: the hub makes a hub-made account's home itself (root-owned ``homes_root``,
  0711; the home 0700, owned by the learner) and never adopts an existing home owned
  by someone else, nor follows a link to one. The course is copied into ``~/course``
  by a process running AS the learner, so a link the learner planted in their home
  reaches nothing they could not reach anyway.
- Kernel sockets: ``JUPYTER_RUNTIME_DIR`` is ``/run/mha-hub/NAME`` (root-owned
  ``/run/mha-hub``, 0711, which no learner can create first; the folder 0700, the
  learner's), made and checked through file descriptors opened with ``O_NOFOLLOW``.
- ``unix_users=False``: every learner runs as the hub's own user, in a home of their
  own under ``homes_root`` (0700). Fine for one person trying the hub; it is NOT
  isolation, since every learner then has the same Unix user.
- Limits and leftovers (``learner_limits``, ``learner_launch``): as root, each server starts
  in a control group of the learner's own with limits on processes and memory, its own
  small /tmp, /var/tmp, /dev/shm and /run/lock (tmpfs), ``RLIMIT_NPROC`` and no new
  privileges. Stopping a server, or the server dying, ends everything in that group (frozen,
  killed, until empty); where there are no control groups, every process of the account,
  until none is left. Groups are per hub (``mha-hub/port-PORT/NAME``): two hubs on one
  machine never end each other's learners. A server that dies on its own
  is noticed at once (a pidfd on the server's process), so its route is removed within
  milliseconds, not at the hub's next poll.
- No TCP port (``unix_socket``, as root, servers started here): the server listens on a Unix
  socket in its own private runtime folder (``/run/mha-hub/NAME``, a tmpfs that exists only in
  the server's mount namespace). Once it is there the hub opens it (``O_PATH``, through
  ``/proc/PID/root``, no link followed, a socket the learner owns) and keeps that handle; the
  route is ``/proc/HUB_PID/fd/N``, so the proxy and the hub connect to that very inode and walk
  no path a learner could change (a link of theirs to a root-only socket would otherwise make
  the proxy, as root, connect there). No other account can reach the socket; when the server
  dies nothing listens on that inode again (a new bind makes a new one): a port freed by a dead
  server, which anyone's process could bind before the hub removed the route (1 ms sufficed
  under load), no longer exists.
- Home size (``home_bytes``, as root, servers started here): a hub-made account's home is an
  ext4 image of that size (``homes_root/.images/NAME.img``, root's), mounted at the home
  (loop, nosuid, nodev) while the server runs: a learner who fills it fills only it. For a PAM
  account (``pam_home_bytes``) the same image, mounted at ``homes_root/NAME``, is the server's
  home, and inside the server's mount namespace it is also bound over the account's login home:
  nothing the server starts can write to the login home's disk.
"""

from __future__ import annotations

import contextlib
import grp
import json
import os
import pwd
import re
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path
from urllib.parse import quote, unquote

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Bool, Dict, Float, Int, Unicode

from learner_limits import (IMAGES_DIR, Groups, become_subreaper, kill_account, make_home_image, mount_home,  # noqa: F401
                            mount_source, reap_until_gone, unmount_home, zombie_children_of_uid)

#: Unix account names the hub may create: lower case, starting with a letter, at most 32.
_UNIX_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
#: The group that marks accounts the hub made (dummy mode uses only these).
LEARNER_GROUP = "mha-learners"
#: The unprivileged account the poll service and the idle culler run as.
SERVICE_USER = "mha-hub-svc"
#: Kernel sockets live under here when the hub runs as root: /run is root's, so no learner
#: can make this folder (or a link in its place) before the hub does.
RUNTIME_ROOT = Path("/run/mha-hub")
#: The size of each learner's own tmpfs on their kernel-socket folder (connection files and sockets only).
RUNTIME_BYTES = 16 * 1024**2
#: The server's socket in its runtime folder (``unix_socket``).
SERVER_SOCKET = "jupyter-server.sock"
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class UnsafePath(RuntimeError):
    """A folder the hub was about to use is a link, has the wrong owner, or is writable by others."""


class AccountRefused(RuntimeError):
    """The hub will not run a server as (or touch the home of) this account."""


def names_from_env(var: str) -> list[str]:
    """A comma-separated list of user names from an environment variable."""
    return [n.strip() for n in os.environ.get(var, "").split(",") if n.strip()]


# --------------------------------------------------------------------------- accounts


def uid_min(login_defs: Path = Path("/etc/login.defs")) -> int:
    """The first uid of a normal (non-system) account: UID_MIN in /etc/login.defs, else 1000."""
    try:
        for line in login_defs.read_text().splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "UID_MIN" and parts[1].isdigit():
                return int(parts[1])
    except OSError:
        pass
    return 1000


def in_group(name: str, group: str) -> bool:
    """Whether account ``name`` is a member of ``group`` (as a supplementary or its primary group)."""
    try:
        entry, g = pwd.getpwnam(name), grp.getgrnam(group)
    except KeyError:
        return False
    return name in g.gr_mem or entry.pw_gid == g.gr_gid


def account_refusal(name: str, *, create_users: bool, allowed_group: str = "", learner_group: str = LEARNER_GROUP) -> str | None:
    """Why the hub must not use the Unix account ``name`` for a learner, or None if it may.

    - an existing account with a uid below UID_MIN (a system account: daemon, bin, ...) never;
    - dummy mode (``create_users``): an existing account only if the hub made it (member of
      ``learner_group``); a missing one only if its name can be a Unix account;
    - PAM: the account must exist and, if ``allowed_group`` is set, belong to it.
    """
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        if not create_users:
            return f"learner {name!r} has no Unix account on this server; make one, or set MHA_HUB_CREATE_USERS=1"
        if not _UNIX_NAME.match(name):
            return f"user name {name!r} cannot be a Unix account (lower case letters, digits, - and _; at most 32)"
        return None
    if entry.pw_uid < uid_min() or entry.pw_uid == 0:
        return f"{name!r} is a system account (uid {entry.pw_uid} < UID_MIN {uid_min()}); the hub never runs a server as one"
    if create_users and not in_group(name, learner_group):
        return f"{name!r} is an existing account the hub did not make (not in the group {learner_group!r}); the hub never uses it"
    if allowed_group and not in_group(name, allowed_group):
        return f"{name!r} is not in the group {allowed_group!r} (MHA_HUB_GROUP)"
    return None


def proxy_target(url: str) -> str:
    """``url`` as configurable-http-proxy reads a target: it takes a Unix socket target's whole host
    as the socket's path, while JupyterHub writes a user server's URL with a port (``:80``), which
    no socket's path has. Other targets are unchanged."""
    scheme, sep, rest = url.partition("://")
    if scheme != "http+unix":
        return url
    host, slash, path = rest.partition("/")
    return scheme + sep + re.sub(r":[0-9]+$", "", host) + slash + path


def _run_checked(cmd: list[str]) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()}")


def ensure_group(group: str) -> None:
    """Make the system group ``group`` if it is missing (as root)."""
    try:
        grp.getgrnam(group)
    except KeyError:
        _run_checked(["groupadd", "--system", group])


def ensure_service_user(name: str = SERVICE_USER) -> pwd.struct_passwd:
    """The unprivileged system account the hub's services run as; made (no login, no home) if missing."""
    try:
        return pwd.getpwnam(name)
    except KeyError:
        _run_checked(["useradd", "--system", "--user-group", "--no-create-home", "--home-dir", "/nonexistent",
                      "--shell", "/usr/sbin/nologin", name])
        return pwd.getpwnam(name)


# --------------------------------------------------------------------------- folders, without following links


def _check_trusted(st: os.stat_result, path: str) -> None:
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"{path} is not a folder")
    if st.st_uid != 0:
        raise UnsafePath(f"{path} is owned by uid {st.st_uid}, not root: the hub will not use it")
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        raise UnsafePath(f"{path} is writable by others (mode {stat.S_IMODE(st.st_mode):o}): the hub will not use it")


def open_trusted_dir(path: Path, *, create_mode: int | None = None) -> int:
    """A descriptor for the folder ``path``, reached from / without following a link; every
    folder on the way owned by root and not writable by others (sticky ones such as /tmp
    allowed). With ``create_mode``, missing folders are made, root-owned, with that mode."""
    path = Path(os.path.abspath(path))
    fd = os.open("/", _DIR_FLAGS)
    try:
        _check_trusted(os.fstat(fd), "/")
        walked = Path("/")
        for part in path.parts[1:]:
            walked = walked / part
            made = False
            if create_mode is not None:
                try:
                    os.mkdir(part, 0o700, dir_fd=fd)
                    made = True
                except FileExistsError:
                    pass
            try:
                child = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise UnsafePath(f"{walked} cannot be opened as a folder without following links: {exc.strerror}") from exc
            os.close(fd)
            fd = child
            if made:
                os.fchmod(fd, create_mode)  # the umask (077 under start.sh) would leave it 0700
            _check_trusted(os.fstat(fd), str(walked))
        return fd
    except BaseException:
        os.close(fd)
        raise


def owned_dir(parent_fd: int, name: str, uid: int, gid: int, mode: int = 0o700, *, where: str = "") -> int:
    """Make (or check) the folder ``name`` inside the open folder ``parent_fd`` for uid:gid.

    Made by the hub: chowned and chmodded through its own descriptor. Already there: it must
    be a real folder (not a link) owned by ``uid``; then only its mode is set. Anything else
    is refused with UnsafePath, and nothing is changed.
    """
    label = where or name
    made = False
    try:
        os.mkdir(name, 0o700, dir_fd=parent_fd)
        made = True
    except FileExistsError:
        pass
    st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafePath(f"{label} exists and is not a folder (a link?): the hub will not use it")
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        raise UnsafePath(f"{label} cannot be opened without following links: {exc.strerror}") from exc
    try:
        fst = os.fstat(fd)
        if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
            raise UnsafePath(f"{label} changed while the hub was checking it")
        if made:
            if os.geteuid() == 0:
                os.fchown(fd, uid, gid)
        elif fst.st_uid != uid:
            raise UnsafePath(f"{label} already exists and belongs to uid {fst.st_uid}, not {uid}: the hub will not adopt it")
        os.fchmod(fd, mode)
        return fd
    except BaseException:
        os.close(fd)
        raise


def runtime_dir(name: str, uid: int, gid: int, root: Path | None = None) -> Path:
    """A short private folder for the server's kernel sockets and connection files.

    As root: ``/run/mha-hub/NAME``. Otherwise (everyone is the hub's user) a private
    folder made with mkdtemp once per hub process.
    """
    if root is None:
        root = RUNTIME_ROOT if os.geteuid() == 0 else _private_runtime_root()
    root_fd = open_trusted_dir(root, create_mode=0o711) if os.geteuid() == 0 else os.open(root, _DIR_FLAGS)
    try:
        os.close(owned_dir(root_fd, name, uid, gid, 0o700, where=str(root / name)))
    finally:
        os.close(root_fd)
    return root / name


_PRIVATE_RUNTIME: list[Path] = []


def _private_runtime_root() -> Path:
    if not _PRIVATE_RUNTIME:
        _PRIVATE_RUNTIME.append(Path(tempfile.mkdtemp(prefix="mha-hub-run-")))
    return _PRIVATE_RUNTIME[0]


# --------------------------------------------------------------------------- homes

#: Run as the learner (never as root): copy the course into ~/course once, make ~/.mha_course.
_AS_LEARNER = r"""
import os, shutil, sys
from pathlib import Path
home, course_dir = Path(sys.argv[1]), sys.argv[2]
course = home / "course"
if course_dir and Path(course_dir).is_dir() and not os.path.lexists(course):
    shutil.copytree(course_dir, course, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
progress = home / ".mha_course"
if not os.path.lexists(progress):
    progress.mkdir(mode=0o700)
"""


def fill_home_as(home: Path, course_dir: Path | None, uid: int, gid: int, python: str | None = None) -> None:
    """Copy the course into ``home/course`` (once) and make ``home/.mha_course``, as uid:gid
    (with ``python``, default the hub's own interpreter, which every account can run)."""

    def become():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    done = subprocess.run([python or sys.executable, "-I", "-c", _AS_LEARNER, str(home), str(course_dir or "")],
                          preexec_fn=become, cwd="/", env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"preparing {home} as uid {uid} failed: {done.stderr.strip()[-500:]}")


def prepare_home(home: Path, course_dir: Path | None, uid: int, gid: int) -> Path:
    """Make ``home`` (0700) and copy the course into ``home/course`` once, without root's rights.

    Used when every learner is the hub's own user (no root): the hub's user owns every home.
    Returns the progress file's path inside the home. Nothing is overwritten: a learner's
    own copy of the notebooks, and their progress, survive every restart.
    """
    home.mkdir(parents=True, exist_ok=True)
    if home.is_symlink():
        raise UnsafePath(f"{home} is a link: the hub will not use it")
    os.chmod(home, 0o700)
    course = home / "course"
    if course_dir is not None and course_dir.is_dir() and not os.path.lexists(course):
        shutil.copytree(course_dir, course, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
    progress_dir = home / ".mha_course"
    progress_dir.mkdir(mode=0o700, exist_ok=True)
    return progress_dir / "progress.sqlite3"


def home_image(homes_root: Path, name: str) -> Path:
    """Where the file system of a hub-made account's home lives: ``homes_root/.images/NAME.img``."""
    return Path(homes_root) / IMAGES_DIR / f"{name}.img"


def _move_into_image(home: Path, image: Path) -> None:
    """A home made before homes had a size (files in a plain folder): copied into its new image (as
    it is: owners, modes, links not followed), then left out of sight under the mount, untouched."""
    staging = image.with_suffix(".mnt")
    staging.mkdir(mode=0o700, exist_ok=True)
    mount_home(image, staging)
    try:
        _run_checked(["cp", "-a", "--one-file-system", f"{home}/.", f"{staging}/"])
    finally:
        unmount_home(image, staging)
        staging.rmdir()


def prepare_hub_made_home(homes_root: Path, name: str, course_dir: Path | None, uid: int, gid: int,
                          python: str | None = None, home_bytes: int = 0) -> Path:
    """The home of an account the hub made: ``homes_root/name``, made by root without following
    links (``homes_root`` root-owned, 0711), never adopted from someone else; then filled as the learner.

    With ``home_bytes`` (as root): the home is a file system of its own, that size: an ext4 image
    ``homes_root/.images/NAME.img`` (the folder root's, 0700), made once and kept, mounted at the
    home (loop, nosuid, nodev) until the server stops. A learner who fills it fills only it."""
    root_fd = open_trusted_dir(homes_root, create_mode=0o711)
    try:
        os.close(owned_dir(root_fd, name, uid, gid, 0o700, where=str(homes_root / name)))
        if home_bytes:
            os.close(owned_dir(root_fd, IMAGES_DIR, 0, 0, 0o700, where=str(homes_root / IMAGES_DIR)))
            image = home_image(homes_root, name)
            new = not image.exists()
            make_home_image(image, home_bytes, uid, gid)
            if new and mount_source(homes_root / name) is None and any(os.scandir(homes_root / name)):
                _move_into_image(homes_root / name, image)
            mount_home(image, homes_root / name)
            # The mounted file system's root is the home now: the learner's, 0700, checked as before.
            os.close(owned_dir(root_fd, name, uid, gid, 0o700, where=str(homes_root / name)))
            with contextlib.suppress(OSError):
                os.rmdir(homes_root / name / "lost+found")  # root's, empty; e2fsck makes it again if it needs it
    finally:
        os.close(root_fd)
    home = homes_root / name
    fill_home_as(home, course_dir, uid, gid, python)
    return home / ".mha_course" / "progress.sqlite3"


def prepare_existing_home(home: Path, course_dir: Path | None, uid: int, gid: int) -> Path:
    """The home of an account the hub did not make (PAM): checked, never chowned or chmodded;
    it must be a real folder (no link) owned by the account. Filled as the learner."""
    try:
        st = os.lstat(home)
    except FileNotFoundError:
        raise AccountRefused(f"the home {home} of uid {uid} does not exist; make it (useradd -m)") from None
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
        raise AccountRefused(f"the home {home} is not a folder owned by uid {uid}; the hub will not use it")
    fill_home_as(home, course_dir, uid, gid)
    return home / ".mha_course" / "progress.sqlite3"


# --------------------------------------------------------------------------- processes

from learner_limits import pids_of_uid  # noqa: E402,F401 (kept importable from here)

_GROUPS: dict[str, Groups] = {}
LAUNCHER = Path(__file__).resolve().parent / "learner_launch.py"
#: Which hub's control groups (``mha-hub/HUB_ID/NAME``): the config sets it from the public port,
#: which no two hubs on one machine share.
HUB_ID = ["hub"]


def groups() -> Groups:
    """This hub's learner control groups (found once per hub process)."""
    if HUB_ID[0] not in _GROUPS:
        _GROUPS[HUB_ID[0]] = Groups(HUB_ID[0])
    return _GROUPS[HUB_ID[0]]


def end_learner(name: str, uid: int | None, *, whole_account: bool = False, keep: tuple[int, ...] = ()) -> int:
    """End ``name``'s processes on this hub: their control group (frozen, killed, until empty).
    Without control groups, or with ``whole_account``, every process of ``uid`` too, until none is
    left (with groups, everything the hub started for the learner is in theirs: an account the hub
    made runs nothing else, and another hub's server of the same account is left alone).
    Returns once none of them is left in /proc, zombies included: each zombie of ``uid`` that is
    the hub's child (a kernel that ended after its server did is reparented to the hub, the
    subreaper, and is no longer listed in its group) is reaped here, except the pids in ``keep``
    (the server's, which its ``Popen`` reaps)."""
    ended = groups().kill(name)
    if uid is not None and uid >= uid_min() and os.geteuid() == 0 and (whole_account or not groups().available):
        ended += kill_account(uid, keep=keep)
    if uid is not None and uid != 0 and os.geteuid() == 0:
        reap_until_gone([pid for pid in zombie_children_of_uid(uid) if pid not in keep], timeout_s=5.0)
    return ended


def end_processes_of(uid: int, grace_s: float = 2.0) -> int:
    """Every process of ``uid`` ended (kept for callers of the earlier API)."""
    return kill_account(uid)


def release_home(homes_root: str | Path, name: str) -> bool:
    """Unmount ``name``'s home image (if mounted) and detach its loop device; the image is kept.
    Only once no process of the account runs: another hub on this machine may serve the same account."""
    image = home_image(Path(homes_root), name)
    if os.geteuid() != 0 or not image.exists():
        return False
    try:
        if pids_of_uid(pwd.getpwnam(name).pw_uid):
            return False
    except KeyError:
        pass
    return unmount_home(image, Path(homes_root) / name)


def release_homes(homes_root: str | Path) -> list[str]:
    """Every hub-made home under ``homes_root`` whose account runs nothing: unmounted (a hub that was
    killed leaves them mounted)."""
    images = Path(homes_root) / IMAGES_DIR
    released = []
    with contextlib.suppress(OSError):
        for image in sorted(images.glob("*.img")):
            if release_home(homes_root, image.stem):
                released.append(f"home {image.stem}")
    return released


def sweep_leftovers(homes_root: str, learner_group: str = LEARNER_GROUP) -> list[str]:
    """What this hub left when it stopped or crashed: each of its learner control groups emptied and
    removed. Without control groups: every process of each hub-made account (in ``learner_group``)
    whose home is under ``homes_root``. Returns what it ended."""
    ended = []
    if os.geteuid() != 0:
        return ended
    if groups().available:
        for name in groups().names():
            if groups().kill(name):
                ended.append(f"group {name}")
        return ended + release_homes(homes_root)
    try:
        members = set(grp.getgrnam(learner_group).gr_mem)
    except KeyError:
        members = set()
    root = os.path.abspath(homes_root).rstrip("/") + "/"
    for entry in pwd.getpwall():
        if (entry.pw_name in members and entry.pw_uid >= uid_min() and os.path.abspath(entry.pw_dir).startswith(root)
                and pids_of_uid(entry.pw_uid)):
            kill_account(entry.pw_uid)
            ended.append(f"account {entry.pw_name}")
    return ended + release_homes(homes_root)


# --------------------------------------------------------------------------- the spawner


class CourseSpawner(LocalProcessSpawner):
    """LocalProcessSpawner with per-learner homes (0700), a copy of the course, and progress at home."""

    homes_root = Unicode("/home", config=True, help="Where the hub makes learners' homes")
    course_dir = Unicode("", config=True, help="The notebooks folder copied to ~/course at first start")
    unix_users = Bool(True, config=True, help="Run each learner as their own Unix account (needs root)")
    create_users = Bool(False, config=True, help="Make a learner's Unix account at first start (needs root)")
    allowed_group = Unicode("", config=True, help="PAM: only accounts in this group get a server")
    learner_group = Unicode(LEARNER_GROUP, config=True, help="The group that marks the accounts the hub made")
    max_tasks = Int(512, config=True, help="Processes and threads per learner (control group pids.max and RLIMIT_NPROC); 0: no limit")
    memory_bytes = Int(2 * 1024**3, config=True, help="Memory per learner's control group (tmpfs scratch included); 0: no limit")
    cpus = Float(0.0, config=True, help="Cores' time per learner's control group (cpu.max); 0: no cap (busy learners still share the cores equally)")
    home_bytes = Int(1024**3, config=True, help="Size of a hub-made account's home, a file system of its own (as root, local servers only: "
                     "a Slurm job's home is on the cluster's shared file system); 0: a plain folder")
    pam_home_bytes = Int(0, config=True, help="PAM accounts: the server's home is a file system of its own, this size "
                         "(homes_root/NAME, bound over the login home inside the server); 0: the login home itself")
    scratch_bytes = Dict(config=True, help="tmpfs sizes of the learner's own /tmp, /var/tmp, /dev/shm, /run/lock; empty: shared ones")
    unix_socket = Bool(True, config=True, help="As root, servers started here: listen on a Unix socket in the server's own "
                       "mount namespace, reached through the hub's own handle on it, not on a loopback port")
    #: Start the server here through learner_launch.py (False for a spawner that runs it elsewhere, e.g. a Slurm job).
    local_launch = True
    #: The Unix socket the server listens on (in its own namespace), or None: a loopback port.
    _sock: str | None = None
    #: The hub's O_PATH handle on that socket (what the route names), or None.
    _sock_fd: int | None = None

    def _account(self):
        """(uid, gid, home, made_by_hub) the learner's server runs with; refuses accounts it may not use."""
        name = self.user.name
        if not self.unix_users:
            return os.getuid(), os.getgid(), Path(self.homes_root) / name, False
        why = account_refusal(name, create_users=self.create_users, allowed_group=self.allowed_group,
                              learner_group=self.learner_group)
        if why:
            raise AccountRefused(why)
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            ensure_group(self.learner_group)
            home = Path(self.homes_root) / name
            os.close(open_trusted_dir(Path(self.homes_root), create_mode=0o711))
            _run_checked(["useradd", "--home-dir", str(home), "--no-create-home", "--user-group",
                          "--groups", self.learner_group, "--key", f"UID_MIN={uid_min()}",
                          "--shell", "/usr/sbin/nologin", name])
            entry = pwd.getpwnam(name)
            why = account_refusal(name, create_users=True, learner_group=self.learner_group)
            if why:
                raise AccountRefused(why)
        return entry.pw_uid, entry.pw_gid, Path(entry.pw_dir), self.create_users

    async def start(self):
        uid, gid, home, made_by_hub = self._account()
        course = Path(self.course_dir) if self.course_dir else None
        self._home = home
        self._uid = uid if self.unix_users else None
        self._made_by_hub = made_by_hub
        self._login_home = None  # a PAM account's own home, hidden behind its image home in the server
        self._release_socket()
        self._sock = None
        local_root = os.geteuid() == 0 and self.local_launch
        self._image_home = bool(made_by_hub and self.home_bytes and local_root)
        if not self.unix_users:
            self._progress = prepare_home(home, course, uid, gid)
        elif not made_by_hub and self.pam_home_bytes and local_root:
            self._login_home, self._image_home = home, True
            self._progress = prepare_hub_made_home(Path(self.homes_root), self.user.name, course, uid, gid,
                                                   home_bytes=self.pam_home_bytes)
            self._home = home = Path(self.homes_root) / self.user.name
        elif made_by_hub:
            if Path(os.path.abspath(home)).parent != Path(os.path.abspath(self.homes_root)):
                raise AccountRefused(f"{self.user.name!r}'s home {home} is not under {self.homes_root}; the hub did not make it")
            self._progress = prepare_hub_made_home(Path(self.homes_root), home.name, course, uid, gid,
                                                   home_bytes=self.home_bytes if os.geteuid() == 0 and self.local_launch else 0)
        else:
            self._progress = prepare_existing_home(home, course, uid, gid)
        try:
            self._runtime = runtime_dir(self.user.name, uid, gid)
            self._gid = gid
            if self.local_launch and self.unix_users and os.geteuid() == 0:
                # Nothing of an earlier server of this learner may survive into this one.
                end_learner(self.user.name, uid)
                return await self._launch(uid, gid, home)
            return await super().start()
        except BaseException:
            # The start failed after the home was mounted: nothing runs in it, so it is released.
            if self._image_home:
                with contextlib.suppress(Exception):
                    release_home(self.homes_root, self.user.name)
            raise

    async def _launch(self, uid: int, gid: int, home: Path):
        """LocalProcessSpawner.start, with the server started by learner_launch.py inside its limits."""
        from jupyterhub.utils import random_port

        self._sock = str(self._runtime / SERVER_SOCKET) if self.unix_socket and self._private_runtime() else None
        if self.port == 0 and not self._sock:
            self.port = random_port()
        procs = groups().make(self.user.name, max_tasks=self.max_tasks, memory_bytes=self.memory_bytes, cpus=self.cpus)
        spec = {"uid": uid, "gid": gid, "home": str(home), "procs": [str(p) for p in procs],
                "nproc": self.max_tasks, "tmpfs": {k: int(v) for k, v in self.scratch_bytes.items() if int(v) > 0},
                "private": {str(self._runtime): RUNTIME_BYTES} if self._private_runtime() else {},
                "homes": os.path.abspath(self.homes_root) if self._image_home else "",
                # a PAM account's login home, covered by its image home: the server writes only there
                "bind": {str(self._login_home): str(home)} if self._login_home and self._login_home.is_dir() else {},
                # what the server needs, which a scratch tmpfs must not hide (a home or checkout under /tmp)
                "keep": sorted({str(home), str(self._runtime), str(Path(__file__).resolve().parent.parent),
                                *([str(self._login_home)] if self._login_home else []),
                                sys.prefix, *([self.course_dir] if self.course_dir else [])})}
        cmd = [sys.executable, "-I", str(LAUNCHER), json.dumps(spec), "--", *self.cmd, *self.get_args()]
        self.log.info("Spawning %s's server within its limits: %s", self.user.name, json.dumps(spec))
        self.proc = subprocess.Popen(cmd, env=self.get_env(), start_new_session=True, cwd="/",
                                     preexec_fn=None, **self.popen_kwargs)
        self.pid = self.proc.pid
        self._stopping = False
        self._watch_exit()
        if self._sock:
            self._sock_fd = await self._hold_socket(uid)
            # The hub's own handle on the socket the server bound: the proxy and the hub connect to that
            # very inode, walking no path a learner could change (a link of theirs, or a root of their own).
            return "http+unix://" + quote(f"/proc/{os.getpid()}/fd/{self._sock_fd}", safe="")
        return (self.ip or "127.0.0.1", self.port)

    async def _hold_socket(self, uid: int) -> int:
        """An O_PATH handle on the socket the server binds in its own namespace, once it is there: a socket
        owned by the learner, reached through the server's root (``/proc/PID/root``), never through a link."""
        import asyncio

        path = f"/proc/{self.pid}/root{self._sock}"
        flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
        for _ in range(int(self.start_timeout / 0.05)):
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.user.name}'s server exited (status {self.proc.returncode}) before it listened")
            try:
                fd = os.open(path, flags)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            st = os.fstat(fd)
            if stat.S_ISSOCK(st.st_mode) and st.st_uid == uid:
                return fd
            os.close(fd)  # not (yet) the server's socket
            await asyncio.sleep(0.05)
        raise RuntimeError(f"{self.user.name}'s server did not make its socket {self._sock} within {self.start_timeout} s")

    def _release_socket(self) -> None:
        """Close the hub's handle on the server's socket: only once the route to it is gone (``stop``), since
        the next socket the hub holds may be given the same number."""
        fd, self._sock_fd = self._sock_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    def _private_runtime(self) -> bool:
        """The runtime folder is one the launcher covers with the learner's own tmpfs in the server's namespace."""
        return str(self._runtime).startswith(str(RUNTIME_ROOT) + "/")

    def _watch_exit(self) -> None:
        """React at once when the server's process ends on its own (a learner may kill their own
        server and bind its port): end the learner's processes, then let the hub remove the route."""
        from tornado.ioloop import IOLoop

        try:
            fd = os.pidfd_open(self.pid)
        except (AttributeError, OSError) as exc:
            self.log.warning("%s's server: no pidfd (%s); its death is noticed at the next poll", self.user.name, exc)
            return
        loop = IOLoop.current()

        def exited(fd_, events):
            loop.remove_handler(fd_)
            os.close(fd_)
            if getattr(self, "_stopping", False):
                return
            self.log.warning("%s's server (pid %s) exited on its own: ending its processes and its route now",
                             self.user.name, self.pid)
            end_learner(self.user.name, self._uid, keep=(self.pid,))
            if self._image_home:
                loop.run_in_executor(None, release_home, self.homes_root, self.user.name)
            loop.add_callback(self.poll_and_notify)

        loop.add_handler(fd, exited, IOLoop.READ)

    async def poll(self):
        """LocalProcessSpawner.poll, except that a server found again after the hub restarted (no
        process handle, only its pid) counts as running only if that pid is alive, not a zombie,
        and runs as the learner: after a crash the pid may be a zombie nobody reaps, or another
        process's."""
        if self.local_launch and self.proc is None and self.pid and os.geteuid() == 0 and self.unix_users:
            try:
                uid = pwd.getpwnam(self.user.name).pw_uid
                with open(f"/proc/{self.pid}/status") as f:
                    fields = dict(line.split(":", 1) for line in f if ":" in line)
                alive = fields["State"].split()[0] != "Z" and uid in (int(x) for x in fields["Uid"].split()[:3])
            except (KeyError, OSError, ValueError):
                alive = False
            if not alive or not self._route_is_this_hubs():
                # A server on a socket was reached through the old hub's handle, which died with it: the route
                # would name another process's descriptor. The server is ended and started again.
                self.clear_state()
                return 0
        return await super().poll()

    def _route_is_this_hubs(self) -> bool:
        """Whether this server's route, if it is a hub-held socket (``/proc/HUB_PID/fd/N``), is held by this hub."""
        server = self.server
        if server is None or server.proto != "http+unix":
            return True
        return unquote(server.ip or "").startswith(f"/proc/{os.getpid()}/fd/")

    async def stop(self, now=False):
        self._stopping = True
        await super().stop(now=now)
        self._release_socket()  # JupyterHub removes the route before it stops the server
        # The server is gone: whatever it started (kernels, a learner's detached processes) goes too,
        # and for an account the hub made, every process of the account.
        uid = getattr(self, "_uid", None)
        if uid is None and self.unix_users:
            try:
                uid = pwd.getpwnam(self.user.name).pw_uid
            except KeyError:
                uid = None
        if uid is not None and os.geteuid() == 0 and uid >= uid_min():
            end_learner(self.user.name, uid)
            if self.local_launch:
                # In a thread: unmounting and waiting for the loop device to be freed must not hold
                # up the hub (at Ctrl-C every server stops at once, and each home is released).
                import asyncio

                try:
                    released = await asyncio.get_running_loop().run_in_executor(None, release_home, self.homes_root,
                                                                                self.user.name)
                    if released:
                        self.log.info("%s's home unmounted, its loop device freed", self.user.name)
                except Exception as exc:  # the server is stopped either way; the home is released at the next start
                    self.log.error("%s's home could not be unmounted: %s", self.user.name, exc)

    def make_preexec_fn(self, name):
        if self.unix_users:
            return super().make_preexec_fn(name)
        home = str(self._home)
        return lambda: os.chdir(home)

    def user_env(self, env):
        if self.unix_users:
            env = super().user_env(env)
        else:
            env.update(USER=self.user.name, SHELL="/bin/bash")
        env["HOME"] = str(self._home)
        return env

    def get_args(self):
        args = super().get_args()
        if self._sock:
            args.append(f"--ServerApp.sock={self._sock}")
        if os.geteuid() == 0 and not self.unix_users:
            args.append("--allow-root")  # everyone runs as root then; JupyterLab refuses without it
        return args

    def get_env(self):
        env = super().get_env()
        env["MHA_COURSE_PROGRESS"] = str(self._progress)
        env["JUPYTER_RUNTIME_DIR"] = str(self._runtime)
        if self._sock:
            # No host and port for jupyterhub-singleuser to bind (it refuses a port beside --sock).
            env["JUPYTERHUB_SERVICE_URL"] = "http+unix://" + quote(self._sock, safe="") + self.server.base_url
        # Nothing from the learner's own site-packages reaches the server.
        env["PYTHONNOUSERSITE"] = "1"
        # A control's change is not echoed back by the kernel (ipywidgets 8 sends every change
        # back to the page that made it, for other pages on the same kernel): one message fewer
        # through the kernel, the learner's server and the proxy for each change a class makes.
        # Only a second browser tab on the same notebook misses the control's new position.
        env["JUPYTER_WIDGETS_ECHO"] = "0"
        return env


def refusing_authenticator(base):
    """``base`` (an Authenticator class) that also refuses, at login, any name the spawner would
    refuse to run (``account_refusal``): a system account never gets as far as a server."""

    class CourseAuthenticator(base):
        create_users = Bool(False, config=True)
        allowed_group = Unicode("", config=True)

        async def authenticate(self, handler, data):
            result = await super().authenticate(handler, data)
            if result is None:
                return None
            name = result["name"] if isinstance(result, dict) else result
            name = self.normalize_username(name)
            if os.geteuid() == 0:
                why = account_refusal(name, create_users=self.create_users, allowed_group=self.allowed_group)
                if why:
                    self.log.warning("login refused for %s: %s", name, why)
                    return None
            return result

    CourseAuthenticator.__name__ = f"Course{base.__name__}"
    return CourseAuthenticator
