"""What a learner with a shell does, for tests/hub/test_hub_shell.py: code run in their kernel,
and the attack scripts of issue 37 (a process that outlives its server and squats ports, a page
on the learner's own server port), as the learner's own account."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time

from hubctl import REPO, pids_of_uid, uid_of

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "deploy"))
from warm_start import localhost_subdomains  # noqa: E402

#: A detached process that ignores SIGTERM, hops to a new pid every 0.3 s (fork, the parent exits),
#: and listens on every port it is given as soon as it is free, writing what it is sent to LOG.
SQUATTER = r"""
import os, signal, socket, sys, time
ports, log = [int(p) for p in sys.argv[1].split(",") if p], sys.argv[2]
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGHUP, signal.SIG_IGN)
held = {}
last_hop = time.monotonic()
while True:
    for port in ports:
        if port not in held:
            for family, host in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
                try:
                    s = socket.socket(family)
                    s.bind((host, port)); s.listen(16); s.setblocking(False)
                    held.setdefault(port, []).append(s)
                except OSError:
                    s.close()
    for socks in held.values():
        for s in socks:
            try:
                conn, _ = s.accept()
                conn.settimeout(1)
                data = conn.recv(4096)
                with open(log, "ab") as f:
                    f.write(data[:2000] + b"\n----\n")
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 24\r\n\r\n<html>SQUATTER PAGE</html>")
                conn.close()
            except OSError:
                pass
    if time.monotonic() - last_hop > 0.3:
        last_hop = time.monotonic()
        if os.fork() > 0:
            os._exit(0)
        os.setsid() if os.getsid(0) != os.getpid() else None
    time.sleep(0.02)
"""


def kernel_run(hub, name: str, token: str, code: str, notebook: str = "00_welcome") -> dict:
    """Run ``code`` in the kernel of the learner's ``course/NOTEBOOK.ipynb`` (a fresh one unless a session
    on it is open); it prints one line __OUT__<json>."""
    from benchmarks.loadtest.kernel_client import KernelClient

    with localhost_subdomains():
        client = KernelClient(f"http://{name}.localhost:{hub.port}", name, token, f"course/{notebook}.ipynb", timeout=120)
        try:
            out = client.execute(code)
        finally:
            with contextlib.suppress(Exception):
                client.close()
    assert not out["errors"], out["errors"]
    line = next((x for x in out["stdout"].splitlines() if x.startswith("__OUT__")), None)
    assert line, out["stdout"]
    return json.loads(line[len("__OUT__"):])


def start_squatter_code(script_path: str, ports: list[int], log: str) -> str:
    """Kernel code that writes SQUATTER to ``script_path`` and starts it detached (its own session)."""
    return (f"import subprocess, sys, json\n"
            f"open({script_path!r}, 'w').write({SQUATTER!r})\n"
            f"p = subprocess.Popen([sys.executable, {script_path!r}, {','.join(map(str, ports))!r}, {log!r}],"
            f" start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
            f"print('__OUT__' + json.dumps({{'pid': p.pid}}))\n")


def wait_no_processes(name: str, timeout: float = 10.0) -> list[int]:
    """The account's processes still there after up to ``timeout`` s (empty when all are gone)."""
    uid = uid_of(name)
    deadline = time.monotonic() + timeout
    left = pids_of_uid(uid) if uid is not None else []
    while left and time.monotonic() < deadline:
        time.sleep(0.2)
        left = [p for p in pids_of_uid(uid) if not _zombie(p)]
    return left


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def as_user(name: str, script: str, timeout: float = 30) -> subprocess.CompletedProcess:
    return subprocess.run(["runuser", "-u", name, "--", "sh", "-c", script], capture_output=True, text=True, timeout=timeout)


# --------------------------------------------------------------------------- PAM mode: an account as an administrator makes it

PAM_LEARNER, PAM_PASSWORD = "ht-pam", "pam-test-password-5k1"
#: The class's Unix group (MHA_HUB_GROUP): a PAM hub lets only its members in.
PAM_GROUP = "ht-class"


def make_pam_account(hub_cleanup, name: str, home, password: str = PAM_PASSWORD, group: str = PAM_GROUP) -> str:
    """A class member's own Unix account (useradd -m with ``home``, a password, in the class's ``group``),
    removed by ``hub_cleanup``, with the group if this made it."""
    hub_cleanup.accounts.add(name)
    if group and subprocess.run(["getent", "group", group], capture_output=True).returncode != 0:
        hub_cleanup.groups.add(group)
        subprocess.run(["groupadd", group], check=True, capture_output=True)
    subprocess.run(["useradd", "-m", "-d", str(home), "-K", "HOME_MODE=0700", "-s", "/bin/bash",
                    *(["-G", group] if group else []), name], check=True, capture_output=True)
    subprocess.run(["chpasswd"], input=f"{name}:{password}\n", text=True, check=True, capture_output=True)
    return name


def pam_login_and_start(hub, name: str, password: str = PAM_PASSWORD) -> str:
    """Log ``name`` in with their Unix password through the hub's form, make an API token from that
    session and start their server; the token."""
    resp = hub.login(name, password)
    assert resp.status in (302, 303), f"PAM login of {name}: {resp.status}"
    made = hub.request("POST", f"/hub/api/users/{name}/tokens", cookies_for=name,
                       body=json.dumps({"note": "t", "expires_in": 3600}).encode(),
                       headers={"X-XSRFToken": hub.xsrf(name), "Content-Type": "application/json",
                                "Referer": hub.url("/hub/token"), "Origin": f"http://{hub.host()}"})
    assert made.status == 201, made.text[:300]
    token = made.json()["token"]
    hub.start_server(name, token)
    return token
