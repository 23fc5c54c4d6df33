"""Warm start: every learner's server started before the class, with the day's notebook open.

    MHA_HUB_TOKEN=... python deploy/warm_start.py --hub http://localhost:8000 --group learners \\
        --notebook 03_multiple_heads

Run by an admin of the hub (``MHA_HUB_ADMINS``; the token from the hub's Token page) a few
minutes before the class. For each learner, a few at a time (``--parallel``):

1. the hub makes the user if it does not know them yet, and starts their server (the
   spawner's rules hold as for any start: a refused account stays refused);
2. with ``--notebook``, a kernel session is opened on the learner's copy of that notebook
   (``course/NAME.ipynb``) and the notebook's imports (every top-level ``import`` of its code
   cells, nothing else) are run in it. When the learner opens the notebook, JupyterLab joins
   that session: the kernel is up and the modules are loaded, so the first figure comes
   without a class start's worth of CPU (``python -m benchmarks.loadtest --warm`` measures it).

The admin's token never reaches a learner's server (a learner controls their own server's
process): for step 2 the hub makes each learner a token of their own that can reach only
their server and expires in two minutes; it is deleted when the step is done.

The idle culler (``MHA_HUB_CULL_S``, an hour by default) stops a server nobody uses, so warm
the class up within the hour before it starts. Prints one line per learner and a summary;
exits 1 if any learner could not be warmed.
"""

from __future__ import annotations

import argparse
import contextlib
import grp
import json
import os
import socket
import sys
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from urllib.parse import urlsplit

import requests

ROOT = Path(__file__).resolve().parent.parent
#: How long a learner's own token for the warm start lives (s).
LEARNER_TOKEN_S = 120


def localhost_resolver(original):
    """``socket.getaddrinfo`` that takes NAME.localhost for loopback, as Chromium does (RFC 6761);
    glibc does not. Each learner's server has its own origin, NAME.DOMAIN (deploy/README.md, "Security")."""

    def resolve(host, *args, **kwargs):
        if isinstance(host, str) and host.endswith(".localhost"):
            host = "127.0.0.1"
        return original(host, *args, **kwargs)

    return resolve


@contextlib.contextmanager
def localhost_subdomains():
    """While inside: NAME.localhost resolves to loopback (``localhost_resolver``)."""
    original = socket.getaddrinfo
    socket.getaddrinfo = localhost_resolver(original)
    try:
        yield
    finally:
        socket.getaddrinfo = original


def notebook_imports(notebook: str) -> str:
    """Every top-level import of ``notebooks/NOTEBOOK.ipynb``'s code cells, in order and once each:
    what the notebook will load, with none of its computations (a cell that is not plain Python, a
    magic, is skipped)."""
    import ast

    path = ROOT / "notebooks" / f"{notebook}.ipynb"
    if not path.is_file():
        names = sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
        raise ValueError(f"notebook={notebook!r} is not one of the course's notebooks; choose one of {names}")
    lines: list[str] = []
    for cell in json.loads(path.read_text())["cells"]:
        if cell["cell_type"] != "code":
            continue
        try:
            tree = ast.parse("".join(cell["source"]))
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, (ast.Import, ast.ImportFrom)) and ast.unparse(node) not in lines:
                lines.append(ast.unparse(node))
    return "\n".join(lines)


class Hub:
    """The hub's REST API, as an admin (``token``)."""

    def __init__(self, url: str, token: str, timeout: float = 60):
        parts = urlsplit(url.rstrip("/"))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"hub={url!r} is not the hub's address; give it as a browser would, e.g. http://localhost:8000")
        self.url, self.parts, self.timeout = url.rstrip("/"), parts, timeout
        self.headers = {"Authorization": f"token {token}"}

    def api(self, method: str, path: str, **kw) -> requests.Response:
        return requests.request(method, f"{self.url}/hub/api{path}", headers=self.headers, timeout=self.timeout, **kw)

    def origin(self, name: str) -> str:
        """The learner's own origin: NAME.DOMAIN on the hub's port."""
        port = f":{self.parts.port}" if self.parts.port else ""
        return f"{self.parts.scheme}://{name}.{self.parts.hostname}{port}"

    def start(self, name: str, ready_s: float = 240) -> None:
        """Make ``name`` known to the hub if needed, start their server and wait until it is ready."""
        if self.api("GET", f"/users/{name}").status_code == 404:
            made = self.api("POST", f"/users/{name}")
            if made.status_code not in (201, 409):
                raise RuntimeError(f"the hub would not add {name}: {made.status_code} {made.text[:200]}")
        started = self.api("POST", f"/users/{name}/server")
        if started.status_code not in (201, 202, 400):  # 400: already running
            raise RuntimeError(f"starting {name}'s server gave {started.status_code}: {started.text[:200]}")
        deadline = time.monotonic() + ready_s
        while time.monotonic() < deadline:
            server = self.api("GET", f"/users/{name}").json().get("servers", {}).get("")
            if server and server.get("ready"):
                return
            if not server and started.status_code == 400:
                raise RuntimeError(f"{name}'s server did not start: {started.text[:200]}")
            time.sleep(0.5)
        raise RuntimeError(f"{name}'s server was not ready within {ready_s:.0f} s")

    @contextlib.contextmanager
    def learner_token(self, name: str):
        """A token of ``name``'s own that reaches only their server, deleted afterwards."""
        made = self.api("POST", f"/users/{name}/tokens", json={
            "note": "warm start", "expires_in": LEARNER_TOKEN_S, "scopes": [f"access:servers!user={name}"]})
        if made.status_code != 201:
            raise RuntimeError(f"the hub would not make {name} a token: {made.status_code} {made.text[:200]}")
        body = made.json()
        try:
            yield body["token"]
        finally:
            with contextlib.suppress(requests.RequestException):
                self.api("DELETE", f"/users/{name}/tokens/{body['id']}")


def open_notebook(hub: Hub, name: str, token: str, notebook: str, code: str, timeout: float = 180) -> None:
    """Open a kernel session on the learner's ``course/NOTEBOOK.ipynb`` and run ``code`` in it."""
    import websocket

    api = f"{hub.origin(name)}/user/{name}/api"
    headers = {"Authorization": f"token {token}"}
    path = f"course/{notebook}.ipynb"
    made = requests.post(f"{api}/sessions", headers=headers, timeout=timeout,
                         json={"path": path, "type": "notebook", "name": f"{notebook}.ipynb", "kernel": {"name": "python3"}})
    if made.status_code != 201:
        raise RuntimeError(f"no session on {name}'s {path}: {made.status_code} {made.text[:200]}")
    kernel = made.json()["kernel"]["id"]
    ws_url = api.replace("http", "ws", 1) + f"/kernels/{kernel}/channels?session_id={uuid.uuid4().hex}"
    ws = websocket.create_connection(ws_url, header=[f"Authorization: token {token}"], timeout=timeout)
    try:
        msg_id = uuid.uuid4().hex
        ws.send(json.dumps({
            "channel": "shell", "buffers": [], "metadata": {}, "parent_header": {},
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": name, "session": uuid.uuid4().hex,
                       "date": "", "version": "5.3"},
            "content": {"code": code, "silent": False, "store_history": True, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True}}))
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = json.loads(ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "error":
                raise RuntimeError(f"{name}'s imports of {notebook} failed: {msg['content'].get('ename')}: "
                                   f"{msg['content'].get('evalue')}")
            if msg["msg_type"] == "status" and msg["content"].get("execution_state") == "idle":
                return
        raise RuntimeError(f"{name}'s imports of {notebook} did not finish within {timeout:.0f} s")
    finally:
        ws.close()


def warm(hub: Hub, name: str, notebook: str | None, code: str | None) -> dict:
    """Warm one learner; what happened and how long each step took."""
    row = {"name": name}
    t0 = time.perf_counter()
    try:
        hub.start(name)
        row["server_s"] = time.perf_counter() - t0
        if notebook:
            with hub.learner_token(name) as token:
                open_notebook(hub, name, token, notebook, code)
            row["notebook_s"] = time.perf_counter() - t0
    except (RuntimeError, requests.RequestException, OSError) as exc:
        row["error"] = f"{type(exc).__name__}: {exc}"[:300]
    return row


def learners(names: str, group: str) -> list[str]:
    found = [n.strip() for n in names.split(",") if n.strip()]
    if group:
        try:
            found += grp.getgrnam(group).gr_mem
        except KeyError:
            raise ValueError(f"group={group!r} is not a Unix group on this server; give the class's group "
                             "(MHA_HUB_GROUP) or the names with --users") from None
    if not found:
        raise ValueError("no learners: give --users a,b,c or --group learners")
    return sorted(set(found))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hub", default=os.environ.get("MHA_HUB_URL", "http://localhost:8000"),
                    help="the hub as learners' browsers reach it (default http://localhost:8000)")
    ap.add_argument("--users", default="", help="learners' names, comma-separated")
    ap.add_argument("--group", default="", help="or every member of this Unix group (the class's MHA_HUB_GROUP)")
    ap.add_argument("--notebook", default="", help="the day's notebook, e.g. 03_multiple_heads: opened, its imports run")
    ap.add_argument("--parallel", type=int, default=4, help="learners warmed at once (default 4)")
    args = ap.parse_args(argv)
    token = os.environ.get("MHA_HUB_TOKEN", "")
    try:
        if not token:
            raise ValueError("MHA_HUB_TOKEN is not set: give an admin's API token (the hub's Token page)")
        if args.parallel < 1:
            raise ValueError(f"--parallel={args.parallel}: give 1 or more")
        hub = Hub(args.hub, token)
        names = learners(args.users, args.group)
        code = notebook_imports(args.notebook) if args.notebook else None
    except ValueError as exc:
        print(f"warm_start: {exc}", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    with localhost_subdomains(), ThreadPoolExecutor(args.parallel) as pool:
        rows = list(pool.map(lambda n: warm(hub, n, args.notebook or None, code), names))
    for row in rows:
        took = " ".join(f"{k[:-2]} {row[k]:.1f} s" for k in ("server_s", "notebook_s") if k in row)
        print(f"{row['name']}: {'FAILED ' + row['error'] if 'error' in row else 'warm'} {took}".rstrip())
    failed = sum("error" in r for r in rows)
    print(f"{len(rows) - failed} of {len(rows)} learners warm in {time.perf_counter() - t0:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
