"""The class poll service for tests: loaded from deploy/, a stand-in for the hub's auth, and two ways to run it.

- ``serve_in_thread(store)``: the real app and the real server limits (``make_server``)
  on a free loopback port, in a thread of the test process.
- ``start_child(folder)``: the same in a process of its own (to measure its memory, or
  to run it as another account), printing its port when it listens.

Used by tests/test_poll.py (the kernel's client) and tests/test_poll_service.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import threading
import time

import pytest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVICE_PATH = ROOT / "deploy" / "poll_service.py"
PREFIX = "/services/mha-poll/"


def load_service():
    spec = importlib.util.spec_from_file_location("mha_poll_service", SERVICE_PATH)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


service = load_service()
ACCESS = service.ACCESS_SCOPE
READ = service.READ_SCOPE

TOKENS = {
    "learner-ada": {"name": "ada", "kind": "user", "scopes": [ACCESS, "users:activity!user=ada"]},
    "learner-bob": {"name": "bob", "kind": "user", "scopes": [ACCESS]},
    "learner-cy": {"name": "cy", "kind": "user", "scopes": [ACCESS]},
    "teacher": {"name": "tess", "kind": "user", "scopes": [ACCESS, READ]},
    "no-access": {"name": "eve", "kind": "user", "scopes": ["users:activity!user=eve"]},
}


class FakeHubAuth:
    """What HubAuth answers: the model of a token's owner, with the token's scopes."""

    def __init__(self, tokens=None):
        self.tokens = TOKENS if tokens is None else tokens

    def get_user(self, handler):
        header = handler.request.headers.get("Authorization", "")
        token = header.split(None, 1)[1] if header.lower().startswith("token ") else ""
        return self.tokens.get(token)


@contextlib.contextmanager
def serve_in_thread(store):
    """The service for ``store`` on a free loopback port; yields its base URL (ending in the prefix)."""
    from tornado.ioloop import IOLoop
    from tornado.netutil import bind_sockets

    sockets = bind_sockets(0, "127.0.0.1")
    port = sockets[0].getsockname()[1]
    ready = threading.Event()
    holder = {}

    def serve():
        asyncio.set_event_loop(asyncio.new_event_loop())
        server = service.make_server(service.make_app(store, FakeHubAuth(), PREFIX))
        server.add_sockets(sockets)
        holder["loop"], holder["server"] = IOLoop.current(), server
        ready.set()
        IOLoop.current().start()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    assert ready.wait(10), "the poll service did not start"
    try:
        yield f"http://127.0.0.1:{port}{PREFIX}"
    finally:
        holder["loop"].add_callback(holder["loop"].stop)
        thread.join(10)
        holder["server"].stop()


# The child: the service's own open_store / Questions / make_app / make_server, with FakeHubAuth.
CHILD_CODE = r"""
import asyncio, importlib.util, json, sys
spec = importlib.util.spec_from_file_location("mha_poll_service", sys.argv[1])
service = importlib.util.module_from_spec(spec); sys.modules[spec.name] = service; spec.loader.exec_module(service)
tokens = json.loads(sys.argv[3])
class FakeHubAuth:
    def get_user(self, handler):
        header = handler.request.headers.get("Authorization", "")
        return tokens.get(header.split(None, 1)[1] if header.lower().startswith("token ") else "")
from tornado.ioloop import IOLoop
from tornado.netutil import bind_sockets
try:
    store = service.open_store(sys.argv[2], service.Questions.from_bank())
except service.StartupError as exc:
    sys.exit(f"mha-poll: {exc}")
sockets = bind_sockets(0, "127.0.0.1")
server = service.make_server(service.make_app(store, FakeHubAuth(), sys.argv[4]))
server.add_sockets(sockets)
print("PORT", sockets[0].getsockname()[1], flush=True)
IOLoop.current().start()
"""


def python_for(user: int | None) -> tuple[str, dict]:
    """An interpreter that account ``user`` can run, with what it needs on its path: (executable, extra env).

    The course's .venv may point into /root (pyenv), which other accounts cannot enter;
    then the system's Python of the same minor version runs with the venv's packages and
    the checkout on PYTHONPATH. Skips the test if the account can reach neither.
    """
    if user is None:
        return sys.executable, {}
    import site

    import pytest

    probe = f"import tornado, mha_classroom.quiz.bank; open({str(SERVICE_PATH)!r}).close()"
    system = "/usr/bin/python%d.%d" % sys.version_info[:2]
    extra = {"PYTHONPATH": os.pathsep.join(site.getsitepackages() + [str(ROOT)])}
    for python, env in ((sys.executable, {}), (system, extra)):
        try:
            subprocess.run([python, "-c", probe], user=user, group=user, extra_groups=[], cwd="/", check=True,
                           capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin", **env})
            return python, env
        except (OSError, subprocess.SubprocessError):
            continue
    pytest.skip(f"uid {user} can run neither {sys.executable} nor {system} with the course's packages "
                f"and {SERVICE_PATH}")


@contextlib.contextmanager
def start_child(folder: Path, user: int | None = None, group: int | None = None):
    """The service in its own process, its database in ``folder``; yields (process, base URL).

    ``user``/``group``: run it as that uid/gid (the test must be root).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MHA_", "JUPYTERHUB_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    python, extra = python_for(user)
    env.update(extra)
    kwargs = {}
    if user is not None:
        kwargs = {"user": user, "group": group, "extra_groups": [], "cwd": str(folder)}
        env["HOME"] = str(folder)
    proc = subprocess.Popen(
        [python, "-c", CHILD_CODE, str(SERVICE_PATH), str(folder / "poll.sqlite3"), json.dumps(TOKENS), PREFIX],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, **kwargs)
    try:
        line = proc.stdout.readline()
        if not line.startswith("PORT"):
            proc.wait(10)
            raise AssertionError(f"the poll service did not start: {line!r} {proc.stderr.read()}")
        yield proc, f"http://127.0.0.1:{int(line.split()[1])}{PREFIX}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        proc.stdout.close()
        proc.stderr.close()


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (the peak so far) of a process, in KiB, from /proc."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0])
    return fields


def wait_until(predicate, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


# --------------------------------------------------------------------------- fixtures the poll tests share


@pytest.fixture
def store(tmp_path):
    """A poll store on the course's quiz bank, in a throwaway file."""
    from mha_classroom.quiz.bank import default_bank

    s = service.PollStore(tmp_path / "poll.sqlite3", b"k" * 32, service.Questions.from_bank(default_bank()))
    yield s
    s.close()


@pytest.fixture
def poll_url(store):
    """The poll service on a loopback port, serving ``store``, with the stand-in for the hub's auth."""
    with serve_in_thread(store) as url:
        yield url


def as_learner(monkeypatch, url, token):
    """This process's kernel, as the hub starts it: the poll's URL and the server's token in the environment."""
    from mha_classroom.quiz import poll

    monkeypatch.setenv(poll.URL_VAR, url)
    monkeypatch.setenv(poll.TOKEN_VAR, token)
