"""The spawner that starts each learner's JupyterLab as a local process, in a home of their own.

``CourseSpawner`` is JupyterHub's ``LocalProcessSpawner`` plus what a class needs:

- ``unix_users=True`` (the default when the hub runs as root): the learner's server runs
  as the learner's Unix account (``create_users=True`` makes the account at first
  start, with its home under ``homes_root``). The home is mode 0700, so one learner
  cannot read another's notebooks or quiz progress: the kernel is refused by the
  kernel (the operating system), not by a convention.
- ``unix_users=False``: every learner runs as the hub's own user, in a home of their
  own under ``homes_root`` (also 0700). Fine for one person trying the hub; it is NOT
  isolation, since every learner then has the same Unix user.
- At first start the course's notebooks are copied into ``~/course``.
- Each server gets ``MHA_COURSE_PROGRESS`` in its home and a short private
  ``JUPYTER_RUNTIME_DIR`` under /tmp (kernel sockets: Unix socket paths are limited to
  about 107 characters).
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner
from traitlets import Bool, Unicode

#: Unix account names the hub may create: lower case, starting with a letter, at most 32.
_UNIX_NAME = re.compile(r"^[a-z][a-z0-9_-]{0,31}$")
RUNTIME_ROOT = Path("/tmp/mha-hub-run")


def names_from_env(var: str) -> list[str]:
    """A comma-separated list of user names from an environment variable."""
    return [n.strip() for n in os.environ.get(var, "").split(",") if n.strip()]


def prepare_home(home: Path, course_dir: Path | None, uid: int, gid: int) -> Path:
    """Make ``home`` (0700, owned by uid:gid) and copy the course into ``home/course`` once.

    Returns the progress file's path inside the home. Nothing is overwritten: a learner's
    own copy of the notebooks, and their progress, survive every restart.
    """
    home.mkdir(parents=True, exist_ok=True)
    os.chmod(home, 0o700)
    made = [home]
    course = home / "course"
    if course_dir is not None and course_dir.is_dir() and not course.exists():
        shutil.copytree(course_dir, course, ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"))
        made += [course, *course.rglob("*")]
    progress_dir = home / ".mha_course"
    progress_dir.mkdir(mode=0o700, exist_ok=True)
    made.append(progress_dir)
    if os.geteuid() == 0:
        for path in made:
            os.lchown(path, uid, gid)
    return progress_dir / "progress.sqlite3"


def runtime_dir(name: str, uid: int, gid: int) -> Path:
    """A short private folder for the server's kernel sockets and connection files."""
    RUNTIME_ROOT.mkdir(exist_ok=True)
    os.chmod(RUNTIME_ROOT, 0o711)
    path = RUNTIME_ROOT / name
    path.mkdir(mode=0o700, exist_ok=True)
    os.chmod(path, 0o700)
    if os.geteuid() == 0:
        os.chown(path, uid, gid)
    return path


class CourseSpawner(LocalProcessSpawner):
    """LocalProcessSpawner with per-learner homes (0700), a copy of the course, and progress at home."""

    homes_root = Unicode("/home", config=True, help="Where the hub makes learners' homes")
    course_dir = Unicode("", config=True, help="The notebooks folder copied to ~/course at first start")
    unix_users = Bool(True, config=True, help="Run each learner as their own Unix account (needs root)")
    create_users = Bool(False, config=True, help="Make a learner's Unix account at first start (needs root)")

    def _account(self):
        """(uid, gid, home) the learner's server runs with."""
        name = self.user.name
        if not self.unix_users:
            return os.getuid(), os.getgid(), Path(self.homes_root) / name
        try:
            entry = pwd.getpwnam(name)
        except KeyError:
            if not self.create_users:
                raise RuntimeError(f"learner {name!r} has no Unix account on this server; make one, or set MHA_HUB_CREATE_USERS=1")
            if not _UNIX_NAME.match(name):
                raise RuntimeError(f"user name {name!r} cannot be a Unix account (lower case letters, digits, - and _)")
            home = Path(self.homes_root) / name
            Path(self.homes_root).mkdir(parents=True, exist_ok=True)
            os.chmod(self.homes_root, 0o711)  # learners may enter their own home, not list the others
            subprocess.run(["useradd", "--home-dir", str(home), "--no-create-home", "--user-group",
                            "--shell", "/usr/sbin/nologin", name], check=True, capture_output=True)
            entry = pwd.getpwnam(name)
        return entry.pw_uid, entry.pw_gid, Path(entry.pw_dir)

    async def start(self):
        uid, gid, home = self._account()
        self._home = home
        self._progress = prepare_home(home, Path(self.course_dir) if self.course_dir else None, uid, gid)
        self._runtime = runtime_dir(self.user.name, uid, gid)
        return await super().start()

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
        if os.geteuid() == 0 and not self.unix_users:
            args.append("--allow-root")  # everyone runs as root then; JupyterLab refuses without it
        return args

    def get_env(self):
        env = super().get_env()
        env["MHA_COURSE_PROGRESS"] = str(self._progress)
        env["JUPYTER_RUNTIME_DIR"] = str(self._runtime)
        env.setdefault("PYTHONNOUSERSITE", "1")
        return env
