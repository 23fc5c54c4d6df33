"""A throwaway JupyterLab server for the browser test.

``running_lab(root_dir)`` starts ``jupyter lab`` from the environment that runs the
tests (``sys.executable``'s bin folder, so the kernel is that environment's
``python3``), on a free loopback port with a random token, with HOME and every
Jupyter/IPython folder in a temporary directory. It yields a ``LabServer`` and,
on exit, deletes all sessions, runs ``jupyter server stop PORT``, ends whatever
is left of the server's process tree (kernels run in their own process groups,
so they are tracked by pid), and removes the temporary directory.

Every wait has a timeout; a server that does not come up raises ``LabStartError``
with the tail of its log.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import psutil

# User settings written before the server starts (JUPYTER_CONFIG_DIR/lab/user-settings).
USER_SETTINGS = {
    # No news / update pop-up in the page corner, no request to the internet.
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    # Never write executed outputs back into the repository's notebooks.
    "@jupyterlab/docmanager-extension/plugin.jupyterlab-settings": {"autosave": False},
    # Attach every cell to the page. With the default ("contentVisibility") the prompts of
    # cells far off screen read "" instead of "[n]:", so "did every cell run?" cannot be
    # read from the page, and the full-notebook screenshot misses cells.
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
}


class LabStartError(RuntimeError):
    """The JupyterLab server did not come up; the message carries its log tail."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@dataclass
class LabServer:
    root_dir: Path
    port: int
    token: str
    work_dir: Path
    env: dict
    process: subprocess.Popen
    log_path: Path
    known_pids: set = field(default_factory=set)

    @property
    def home(self) -> Path:
        """The throwaway HOME of the server and its kernels (the quiz progress file lives here)."""
        return Path(self.env["HOME"])

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """Full URL of ``path`` ('/lab/...'), with the token as a query parameter."""
        sep = "&" if "?" in path else "?"
        return f"{self.base_url}{path}{sep}token={self.token}"

    def api(self, method: str, path: str, *, timeout: float = 10.0):
        """Call the REST API; returns the decoded JSON (or None for an empty body)."""
        request = urllib.request.Request(
            self.base_url + path,
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=timeout) as response:
            body = response.read()
        return json.loads(body) if body else None

    def sessions(self) -> list[dict]:
        return self.api("GET", "/api/sessions")

    def delete_sessions(self) -> int:
        """Delete every session (which shuts its kernel down); returns how many there were."""
        sessions = self.sessions()
        for session in sessions:
            self.remember_pids()
            with contextlib.suppress(urllib.error.HTTPError):
                self.api("DELETE", f"/api/sessions/{session['id']}", timeout=30)
        return len(sessions)

    def remember_pids(self) -> None:
        """Record the server's descendants (kernels) so stop() can make sure they are gone."""
        with contextlib.suppress(psutil.Error):
            for child in psutil.Process(self.process.pid).children(recursive=True):
                self.known_pids.add(child.pid)

    def log_tail(self, n_chars: int = 3000) -> str:
        with contextlib.suppress(OSError):
            return self.log_path.read_text(errors="replace")[-n_chars:]
        return ""


def _write_user_settings(config_dir: Path) -> None:
    for rel, settings in USER_SETTINGS.items():
        path = config_dir / "lab" / "user-settings" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(settings))


def wait_for_status(server: LabServer, timeout: float) -> None:
    """Until the server answers /api/status. jupyter-server writes its info and browser-open files before its
    event loop binds the port, so a file there does not mean a server listening (measured: a request right after
    the files appeared was refused on a loaded machine)."""
    deadline = time.monotonic() + timeout
    last_error = "no answer yet"
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise LabStartError(
                f"jupyter lab exited with code {server.process.returncode} before answering "
                f"/api/status; log tail:\n{server.log_tail()}"
            )
        try:
            server.api("GET", "/api/status", timeout=2)
            return
        except (urllib.error.URLError, ConnectionError, OSError, ValueError) as exc:
            last_error = repr(exc)
        time.sleep(0.25)
    raise LabStartError(
        f"jupyter lab on port {server.port} did not answer /api/status within {timeout:.0f} s "
        f"(last error: {last_error}); log tail:\n{server.log_tail()}"
    )


def _end_processes(pids: set, timeout: float = 5.0) -> list[int]:
    """SIGTERM, then SIGKILL, every pid still alive; returns the pids that had to be ended."""
    procs = []
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            proc = psutil.Process(pid)
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                procs.append(proc)
    for proc in procs:
        with contextlib.suppress(psutil.Error):
            proc.terminate()
    _, alive = psutil.wait_procs(procs, timeout=timeout)
    for proc in alive:
        with contextlib.suppress(psutil.Error):
            proc.kill()
    psutil.wait_procs(alive, timeout=timeout)
    return [p.pid for p in procs]


def stop_lab(server: LabServer) -> list[int]:
    """Stop the server and everything it started; returns pids that had to be killed."""
    server.remember_pids()
    with contextlib.suppress(Exception):
        server.delete_sessions()
    server.remember_pids()
    # The server's own shutdown (kernels first). Not `jupyter server stop`: that polls the pid, and the
    # server, our child, stays a zombie until we reap it, so it always waited its 10 s of time-outs.
    with contextlib.suppress(OSError):
        server.api("POST", "/api/shutdown", timeout=20)
    try:
        server.process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(server.process.pid, signal.SIGTERM)
        try:
            server.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(server.process.pid, signal.SIGKILL)
            server.process.wait(timeout=5)
    # The server's own process group (anything it spawned without a new session).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(server.process.pid, signal.SIGKILL)
    return _end_processes(server.known_pids)


@contextlib.contextmanager
def running_lab(root_dir: Path, *, python: str = sys.executable, startup_timeout: float = 90.0):
    """Start JupyterLab serving ``root_dir``; yield a ``LabServer``; always clean up."""
    root_dir = Path(root_dir).resolve()
    jupyter = Path(python).parent / "jupyter"
    if not jupyter.exists():
        raise LabStartError(f"no jupyter next to the test interpreter: {jupyter} does not exist")
    work_dir = Path(tempfile.mkdtemp(prefix="mha-browser-lab-"))
    dirs = {
        "HOME": work_dir / "home",
        "JUPYTER_CONFIG_DIR": work_dir / "config",
        "JUPYTER_DATA_DIR": work_dir / "data",
        "JUPYTER_RUNTIME_DIR": work_dir / "runtime",
        "IPYTHONDIR": work_dir / "ipython",
    }
    for path in dirs.values():
        path.mkdir(parents=True)
    _write_user_settings(dirs["JUPYTER_CONFIG_DIR"])
    env = dict(os.environ)
    env.update({k: str(v) for k, v in dirs.items()})
    env["PATH"] = f"{Path(python).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYDEVD_DISABLE_FILE_VALIDATION"] = "1"  # quiets the debugger's frozen-modules note
    env.pop("JUPYTER_PATH", None)
    env.pop("JUPYTER_TOKEN", None)
    env.pop("MHA_COURSE_PROGRESS", None)  # quiz progress goes to the throwaway HOME
    port = free_port()
    token = secrets.token_hex(24)
    cmd = [
        str(jupyter), "lab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root_dir}",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        f"--FileCheckpoints.checkpoint_dir={work_dir / 'checkpoints'}",
    ]
    if os.geteuid() == 0:
        cmd.append("--allow-root")
    log_path = work_dir / "jupyter-lab.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            cmd, cwd=root_dir, env=env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
    server = LabServer(root_dir, port, token, work_dir, env, process, log_path)
    try:
        wait_for_status(server, startup_timeout)
        server.delete_sessions()
        yield server
    finally:
        try:
            stop_lab(server)
        finally:
            shutil.rmtree(work_dir, ignore_errors=True)
