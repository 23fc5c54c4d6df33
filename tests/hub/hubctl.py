"""A real class hub for the tests: deploy/start.sh with a throwaway state, free loopback ports,
the real configurable-http-proxy and CourseSpawner, and learners as real Unix accounts.

``Hub`` starts and stops one hub (Ctrl-C as a terminal sends it: SIGINT to its process
group); ``Hub.login`` logs a learner in through the login form, the way a browser does,
and returns an API token of theirs. Requests go to 127.0.0.1 with the ``Host`` header of
the origin meant (``localhost:PORT`` for the hub, ``NAME.localhost:PORT`` for a learner's
server), since Python, unlike Chromium, does not resolve ``NAME.localhost`` by itself.
"""

from __future__ import annotations

import contextlib
import fcntl
import grp
import http.client
import json
import os
import pwd
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.parse
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
sys.path.insert(0, str(DEPLOY))
from learner_limits import mounts_under, port_holders, unmount_under  # noqa: E402 - the cleanup below, and test_hub_disk
sys.path.insert(0, str(REPO / "tools"))
from course import chromium_path, open_path_to, restore_modes  # noqa: E402,F401 - the checkout's way in; Chromium
START = DEPLOY / "start.sh"
HUB_PYTHON = DEPLOY / ".venv-hub" / "bin" / "python"
PROXY = DEPLOY / "node_modules" / ".bin" / "configurable-http-proxy"
PASSWORD = "hub-test-password-8u2"
LEARNER_GROUP = "mha-learners"
SERVICE_USER = "mha-hub-svc"
RUNTIME_ROOT = Path("/run/mha-hub")
#: The hub's socket folders (the poll's, the proxy API's), made when it starts as root.
SOCKET_DIRS = (Path("/run/mha-hub-poll"), Path("/run/mha-hub-proxy"))


def learner_cgroup_parents() -> list[Path]:
    """The folders the hub makes its learners' control groups in (deploy/learner_limits.py)."""
    root = Path("/sys/fs/cgroup")
    found = []
    for ctrl_dir in [root, *(root / c for c in ("pids", "memory", "freezer", "cpu"))]:
        with contextlib.suppress(OSError):
            found += [p for p in ctrl_dir.rglob("mha-hub") if p.is_dir()] if ctrl_dir != root else \
                ([root / "mha-hub"] if (root / "mha-hub" / "cgroup.procs").exists() else [])
    return found
CHROMIUM = chromium_path()
#: The learners of the test class; prefixed so they cannot be anyone's real account.
ALICE, BOB, CAROL, TESS = "ht-alice", "ht-bob", "ht-carol", "ht-tess"
#: Learners of the hubs started for one test (a Unix account runs one server at a time).
ERIN, FINN = "ht-erin", "ht-finn"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listening_ports() -> set[int]:
    """TCP ports something listens on (from /proc/net/tcp and tcp6)."""
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "0A":  # LISTEN
                    ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def ports_held_by(pids: set[int], ports: set[int] | None = None) -> set[int]:
    """Of ``ports`` (every listening port if None), those one of ``pids`` listens on."""
    ports = listening_ports() if ports is None else ports & listening_ports()
    return {port for port in ports if any(h["pid"] in pids for h in port_holders(port))}


def pids_of_uid(uid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            with contextlib.suppress(OSError):
                for line in Path(f"/proc/{entry}/status").read_text().splitlines():
                    if line.startswith("Uid:"):
                        if uid in (int(x) for x in line.split()[1:3]):
                            found.append(int(entry))
                        break
    return found


def processes_mentioning(fragment: str) -> list[str]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                if fragment in cmd:
                    found.append(f"{entry} {cmd[:200]}")
    return found


def processes_with_env(fragment: str) -> list[str]:
    """Processes whose environment mentions ``fragment`` (the hub's API address: its services,
    servers and their kernels all carry JUPYTERHUB_API_URL)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            with contextlib.suppress(OSError):
                if fragment.encode() in Path(f"/proc/{entry}/environ").read_bytes():
                    cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    found.append(f"{entry} {cmd[:200]}")
    return found


def kill_pids(pids) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def uid_of(name: str) -> int | None:
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        return None


def group_exists(name: str) -> bool:
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


class Response:
    def __init__(self, status: int, headers, body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body)

    @property
    def text(self) -> str:
        return self.body.decode(errors="replace")


class Hub:
    """One hub: ``start()``, ``login()``, ``request()``, ``ctrl_c()``; ``cleanup()`` removes all it made."""

    def __init__(self, root: Path, *, https: tuple[Path, Path] | None = None, **env):
        self.root = root
        self.state = root / "state"
        self.port, self.api_port, self.proxy_api_port, self.poll_port = (free_port() for _ in range(4))
        self.https = https
        self.scheme = "https" if https else "http"
        self.env = dict(os.environ, MHA_HUB_STATE=str(self.state), MHA_HUB_AUTH="dummy", MHA_HUB_PASSWORD=PASSWORD,
                        MHA_HUB_IP="127.0.0.1", MHA_HUB_PORT=str(self.port), MHA_HUB_API_PORT=str(self.api_port),
                        MHA_HUB_PROXY_API_PORT=str(self.proxy_api_port), MHA_POLL_PORT=str(self.poll_port),
                        MHA_HUB_INSTRUCTORS=TESS, MHA_HUB_CULL_S="3600", PYTHONUNBUFFERED="1")
        for key in ("MHA_HUB_SSL_CERT", "MHA_HUB_SSL_KEY", "MHA_HUB_TRIAL", "MHA_HUB_ALLOW_HTTP", "MHA_HUB_DOMAIN",
                    "MHA_HUB_HOMES", "MHA_HUB_GROUP", "MHA_HUB_ALL_ACCOUNTS", "MHA_HUB_STATE_SIZE", "MHA_HUB_CPU", "MHA_HUB_ADMINS", "MHA_HUB_UNIX_USERS", "MHA_HUB_CREATE_USERS"):
            self.env.pop(key, None)
        if https:
            self.env.update(MHA_HUB_SSL_CERT=str(https[0]), MHA_HUB_SSL_KEY=str(https[1]))
        for key, value in env.items():
            if value is None:
                self.env.pop(key, None)
            else:
                self.env[key] = value
        self.log_path = root / "hub.log"
        self.proc: subprocess.Popen | None = None
        self.cookies: dict[str, dict[str, str]] = {}
        self.learners: set[str] = set()

    # ----------------------------------------------------------------- life cycle

    def run_to_exit(self, timeout: float = 60) -> subprocess.CompletedProcess:
        """Start the hub expecting it to refuse: its exit, with what it printed."""
        self.root.mkdir(parents=True, exist_ok=True)
        return subprocess.run([str(START)], env=self.env, capture_output=True, text=True, timeout=timeout)

    #: What starts the hub (tests/cluster's hub starts deploy/cluster/start.sh).
    start_script = START

    def start(self, timeout: float = 90, *, sigint_ignored: bool = False) -> "Hub":
        """Start the hub; ``sigint_ignored``: as a script's background job (``... &``) starts it, with
        SIGINT and SIGQUIT ignored from the start."""
        self.root.mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")

        def ignore_interrupts():
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGQUIT, signal.SIG_IGN)

        # Its own process group, which it leads: ctrl_c() signals that group, as a terminal does.
        self.proc = subprocess.Popen([str(self.start_script)], env=self.env, stdout=log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, process_group=0,
                                     preexec_fn=ignore_interrupts if sigint_ignored else None)
        log.close()
        started = len(self.log())  # a restarted hub appends to the same log: read only what this start wrote
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the hub exited ({self.proc.returncode}) while starting:\n{self.log_tail()}")
            with contextlib.suppress(OSError, http.client.HTTPException, ssl.SSLError):
                if "JupyterHub is now running" in self.log()[started:] and \
                        self.request("GET", "/hub/health", timeout=3).status == 200:
                    return self
            time.sleep(0.5)
        raise RuntimeError(f"the hub did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def log(self) -> str:
        try:
            return self.log_path.read_text(errors="replace")
        except FileNotFoundError:
            return ""

    def log_tail(self, n: int = 40) -> str:
        return "\n".join(self.log().splitlines()[-n:])

    def ctrl_c(self, timeout: float = 30) -> float:
        """SIGINT to the hub's process group, as Ctrl-C in its terminal; seconds until it exited."""
        started = time.monotonic()
        os.killpg(self.proc.pid, signal.SIGINT)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass
        return time.monotonic() - started

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)

    def our_processes(self) -> list[str]:
        """Processes this hub started that are still running: anything naming its state folder or
        its ports, the proxy, the services, and whatever runs as the test's learners."""
        found = processes_mentioning(str(self.state)) + processes_with_env(f"127.0.0.1:{self.api_port}/")
        for port in (self.port, self.proxy_api_port, self.api_port, self.poll_port):
            found += processes_mentioning(f"--port {port}") + processes_mentioning(f"--api-port {port}")
        for name in sorted(self.learners):
            uid = uid_of(name)
            if uid is not None:
                found += [f"{pid} (uid {name})" for pid in pids_of_uid(uid)]
        return sorted(set(found))

    def our_ports_listening(self) -> set[int]:
        """This hub's port numbers that one of its processes listens on (``our_processes``).

        The numbers were only free when the hub was made: while other tests run beside this one (``make test``
        runs its parts side by side), any process may be given one once the hub has let it go."""
        ours = {int(line.split()[0]) for line in self.our_processes() if line.split()[0].isdigit()}
        return ports_held_by(ours, {self.port, self.proxy_api_port, self.api_port, self.poll_port})

    # ----------------------------------------------------------------- the poll, where kernels reach it

    @property
    def poll_socket(self) -> Path:
        return Path("/run/mha-hub-poll") / f"poll-{self.port}.sock"

    @property
    def poll_url(self) -> str:
        """MHA_POLL_URL as the hub gives it to kernels (as root: the poll's Unix socket)."""
        return "http+unix://" + str(self.poll_socket).replace("/", "%2F") + "/services/mha-poll/"

    def poll_request(self, method: str, path: str, *, token: str | None = None, body: bytes | None = None,
                     headers: dict | None = None, timeout: float = 30) -> Response:
        """A request to the poll service on its Unix socket, as a kernel sends it."""

        class UnixConnection(http.client.HTTPConnection):
            def connect(conn):
                conn.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                conn.sock.settimeout(timeout)
                conn.sock.connect(str(self.poll_socket))

        conn = UnixConnection("localhost", timeout=timeout)
        hdrs = {"Authorization": f"token {token}"} if token else {}
        hdrs.update(headers or {})
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            return Response(resp.status, resp.headers, resp.read())
        finally:
            conn.close()

    # ----------------------------------------------------------------- HTTP

    def host(self, name: str | None = None) -> str:
        return f"{name}.localhost:{self.port}" if name else f"localhost:{self.port}"

    def url(self, path: str, name: str | None = None) -> str:
        return f"{self.scheme}://{self.host(name)}{path}"

    def request(self, method: str, path: str, *, host: str | None = None, headers: dict | None = None,
                body: bytes | None = None, token: str | None = None, cookies_for: str | None = None,
                timeout: float = 30) -> Response:
        if self.https:
            context = ssl.create_default_context(cafile=str(self.https[0]))
            server_name = (host or self.host()).rsplit(":", 1)[0]
            conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=timeout, context=context)
            # Verify the certificate for the name the browser would use, not for 127.0.0.1.
            conn.host = server_name
            conn._create_connection = lambda addr, *a, **k: socket.create_connection(("127.0.0.1", self.port), *a, **k)
        else:
            conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        hdrs = {"Host": host or self.host()}
        if token:
            hdrs["Authorization"] = f"token {token}"
        if cookies_for and self.cookies.get(cookies_for):
            hdrs["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies[cookies_for].items())
        hdrs.update(headers or {})
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            if cookies_for is not None:
                jar = self.cookies.setdefault(cookies_for, {})
                for key, value in resp.getheaders():
                    if key.lower() == "set-cookie":
                        name, _, rest = value.partition("=")
                        jar[name.strip()] = rest.split(";", 1)[0]
            return Response(resp.status, resp.headers, data)
        finally:
            conn.close()

    def xsrf(self, who: str) -> str:
        jar = self.cookies.get(who, {})
        for key in ("_xsrf", "__Host-_xsrf"):
            if key in jar:
                return urllib.parse.unquote(jar[key])
        raise KeyError(f"no _xsrf cookie for {who}: {sorted(jar)}")

    def login(self, name: str, password: str = PASSWORD) -> Response:
        """The login form, as a browser fills it in; the session's cookies kept under ``name``."""
        self.cookies.pop(name, None)
        self.learners.add(name)
        page = self.request("GET", "/hub/login", cookies_for=name)
        match = re.search(r'name="_xsrf" value="([^"]+)"', page.text)
        form = {"username": name, "password": password}
        if match:
            form["_xsrf"] = match.group(1)
        return self.request("POST", "/hub/login?next=%2Fhub%2Fhome", cookies_for=name,
                            body=urllib.parse.urlencode(form).encode(),
                            headers={"Content-Type": "application/x-www-form-urlencoded",
                                     "Origin": f"{self.scheme}://{self.host()}",
                                     "Referer": self.url("/hub/login")})

    def token(self, name: str) -> str:
        """Log ``name`` in and make an API token of theirs (with their own permissions)."""
        resp = self.login(name)
        if resp.status not in (302, 303):
            raise RuntimeError(f"login of {name} answered {resp.status}: {resp.text[:300]}")
        resp = self.request("POST", f"/hub/api/users/{name}/tokens", cookies_for=name,
                            body=json.dumps({"note": "hub test", "expires_in": 3600}).encode(),
                            headers={"X-XSRFToken": self.xsrf(name), "Content-Type": "application/json",
                                     "Referer": self.url("/hub/token"), "Origin": f"{self.scheme}://{self.host()}"})
        if resp.status != 201:
            raise RuntimeError(f"token for {name} answered {resp.status}: {resp.text[:300]}")
        return resp.json()["token"]

    def api(self, method: str, path: str, token: str, payload=None, **kw) -> Response:
        body = None if payload is None else json.dumps(payload).encode()
        return self.request(method, f"/hub/api{path}", token=token, body=body,
                            headers={"Content-Type": "application/json"} if body else None, **kw)

    def start_server(self, name: str, token: str, timeout: float = 150) -> dict:
        resp = self.api("POST", f"/users/{name}/server", token)
        if resp.status not in (201, 202, 400):  # 400: already running
            said = "\n".join([line for line in self.log().splitlines() if name in line or "Traceback" in line][-12:])
            raise RuntimeError(f"starting {name}'s server answered {resp.status}: {resp.text[:300]}; the hub's log:\n{said}")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            model = self.api("GET", f"/users/{name}", token).json()
            server = model.get("servers", {}).get("")
            if server and server.get("ready"):
                return model
            if not server and resp.status == 202 and time.monotonic() > deadline - timeout + 5 and not model.get("pending"):
                raise RuntimeError(f"{name}'s server stopped while starting:\n{self.log_tail()}")
            time.sleep(0.5)
        raise RuntimeError(f"{name}'s server was not ready within {timeout:.0f} s:\n{self.log_tail()}")

    def stop_server(self, name: str, token: str, timeout: float = 60) -> None:
        self.api("DELETE", f"/users/{name}/server", token)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.api("GET", f"/users/{name}", token).json().get("servers"):
                return
            time.sleep(0.3)
        raise RuntimeError(f"{name}'s server did not stop within {timeout:.0f} s")

    def server_request(self, owner: str, method: str, path: str, token: str, **kw) -> Response:
        """A request to ``owner``'s server (on its own origin unless ``host`` says otherwise), with ``token``."""
        kw.setdefault("host", self.host(owner))
        return self.request(method, f"/user/{owner}{path}", token=token, **kw)


#: One hub or cluster test session on a machine at a time: they share the learners' account
#: names, /run/mha-hub and the simulated cluster. Held from the first fixture that needs it
#: to the end of the process, and released by the kernel if the process is killed.
MACHINE_LOCK = Path("/run/lock/mha-course-hub-tests.lock")
#: The accounts only the tests make: the hub tests' (``ht-``) and the cluster test's (``ct-l``).
TEST_ACCOUNT = re.compile(r"(ht-[a-z]+|ct-l[0-9]+)")  # ht-alice ... ht-other, ht-pam
#: The folders the hub and cluster tests make under /tmp; a session that was killed leaves its own.
TEST_FOLDERS = ("mha-hubtest-", "mha-clustertest-")
_machine_lock: int | None = None


def hold_machine(wait_s: float = 2400, poll_s: float = 5) -> list[str]:
    """Wait until no other hub or cluster test session runs here, then remove what an earlier,
    interrupted one left (see ``remove_leftovers``); returns what was removed.

    A second call in the same process returns at once: the lock is already held.
    """
    global _machine_lock
    if _machine_lock is not None:
        return []
    MACHINE_LOCK.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(MACHINE_LOCK, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() > deadline:
                os.close(fd)
                raise RuntimeError(f"another hub or cluster test session held {MACHINE_LOCK} for {wait_s:.0f} s")
            time.sleep(poll_s)
    _machine_lock = fd
    return remove_leftovers()


def remove_leftovers() -> list[str]:
    """What a killed hub or cluster test session left: processes started from its folders under
    /tmp, the tests' own accounts (their processes first) and their /run/mha-hub entries, the
    folders. Only names the tests alone use; call it with the machine lock held."""
    removed = []
    for prefix in TEST_FOLDERS:
        left = processes_mentioning(f"/tmp/{prefix}")
        kill_pids(int(p.split()[0]) for p in left)
        removed += [f"process {p[:80]}" for p in left]
    for entry in pwd.getpwall():
        if TEST_ACCOUNT.fullmatch(entry.pw_name):
            Cleanup.remove_account(entry.pw_name)
            removed.append(f"account {entry.pw_name}")
    with contextlib.suppress(OSError):
        for path in RUNTIME_ROOT.iterdir():
            if TEST_ACCOUNT.fullmatch(path.name):
                if path.is_dir() and not path.is_symlink():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink()
                removed.append(f"runtime entry {path}")
    for prefix in TEST_FOLDERS:
        for path in Path("/tmp").glob(f"{prefix}*"):
            removed += unmount_under(str(path))
            shutil.rmtree(path, ignore_errors=True)
            removed.append(f"folder {path}")
    return removed


class Cleanup:
    """Everything the hub tests make, removed at the end even on failure: accounts, groups,
    homes, processes, /run/mha-hub, temporary folders."""

    def __init__(self):
        self.opened: list[tuple[Path, int]] = []  # folders made traversable for the test, with their modes before
        self.had_group = group_exists(LEARNER_GROUP)
        self.had_service_user = uid_of(SERVICE_USER) is not None
        self.had_runtime_root = RUNTIME_ROOT.exists() or RUNTIME_ROOT.is_symlink()
        self.had_socket_dirs = {p for p in SOCKET_DIRS if p.exists()}
        self.had_cgroups = set(learner_cgroup_parents())
        self.accounts: set[str] = {ALICE, BOB, CAROL, TESS, ERIN, FINN}
        self.groups: set[str] = set()  # Unix groups a test made (PAM mode's MHA_HUB_GROUP)
        self.hubs: list[Hub] = []
        self.paths: list[Path] = []

    def open_path_to(self, target: Path) -> None:
        """``open_path_to`` for this session; the modes are put back by ``run``."""
        self.opened += open_path_to(target)

    @staticmethod
    def remove_account(name: str) -> None:
        uid = uid_of(name)
        if uid is None:
            return
        for _ in range(3):
            pids = pids_of_uid(uid)
            if not pids:
                break
            kill_pids(pids)
            time.sleep(0.2)
        subprocess.run(["userdel", name], capture_output=True)
        with contextlib.suppress(KeyError):
            grp.getgrnam(name)
            subprocess.run(["groupdel", name], capture_output=True)

    def run(self) -> list[str]:
        problems = []
        for hub in self.hubs:
            with contextlib.suppress(Exception):
                hub.stop()
            left = hub.our_processes()
            if left:
                problems.append(f"left running by a hub: {left}")
                kill_pids(int(p.split()[0]) for p in left)
        for name in sorted(self.accounts):
            self.remove_account(name)
            with contextlib.suppress(OSError):
                p = RUNTIME_ROOT / name
                if p.is_symlink() or p.is_file():
                    p.unlink()
                elif p.is_dir():
                    shutil.rmtree(p)
        for group in sorted(self.groups):
            if group_exists(group):
                subprocess.run(["groupdel", group], capture_output=True)
        if not self.had_service_user:
            self.remove_account(SERVICE_USER)
        if not self.had_group and group_exists(LEARNER_GROUP):
            subprocess.run(["groupdel", LEARNER_GROUP], capture_output=True)
        for folder in SOCKET_DIRS:
            if folder not in self.had_socket_dirs and folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder, ignore_errors=True)
            elif folder.is_dir() and not folder.is_symlink():
                # The folder was there before: only the sockets of this session's hubs (a proxy or poll service
                # ended by SIGKILL leaves its file), named by each hub's public port.
                for hub in self.hubs:
                    for name in (f"api-{hub.port}.sock", f"poll-{hub.port}.sock"):
                        with contextlib.suppress(OSError):
                            (folder / name).unlink()
        for parent in learner_cgroup_parents():
            for hub_dir in [p for p in parent.iterdir() if p.is_dir() and p.name.startswith("port-")]:
                for group in [p for p in hub_dir.iterdir() if p.is_dir()]:
                    if TEST_ACCOUNT.fullmatch(group.name):
                        with contextlib.suppress(OSError):
                            group.rmdir()  # empty once the accounts' processes are gone
                if any(hub.port == int(hub_dir.name[5:]) for hub in self.hubs if hub_dir.name[5:].isdigit()):
                    with contextlib.suppress(OSError):
                        hub_dir.rmdir()
            if parent not in self.had_cgroups:
                with contextlib.suppress(OSError):
                    parent.rmdir()
        if not self.had_runtime_root:
            if RUNTIME_ROOT.is_symlink() or RUNTIME_ROOT.is_file():
                RUNTIME_ROOT.unlink()
            elif RUNTIME_ROOT.exists():
                shutil.rmtree(RUNTIME_ROOT, ignore_errors=True)
        for path in self.paths:
            # A home still mounted once every hub stopped and every account is gone is a hub's fault:
            # said, then unmounted (rmtree would otherwise empty the image and stop at the mount point).
            left = [m for m in mounts_under(str(path)) if m != str(path)]
            if left:
                problems.append(f"left mounted by a hub: {left}")
            left = unmount_under(str(path))
            if any("still attached" in x for x in left):
                problems.append(f"loop devices not detached: {left}")
            shutil.rmtree(path, ignore_errors=True)
        restore_modes(self.opened)
        return problems


# --------------------------------------------------------------------------- for the tests' fixtures


def fail_or_skip(message: str) -> None:
    import pytest

    if os.environ.get("CI") == "true":
        pytest.fail(f"hub test cannot run on CI: {message}", pytrace=False)
    pytest.skip(f"hub test skipped: {message}")


def new_hub(hub_cleanup, hub_tmp: Path, name: str, **kw) -> Hub:
    # One folder of homes for every hub of the session: an account the hub made has its home there.
    kw.setdefault("MHA_HUB_HOMES", str(hub_tmp / "homes"))
    hub = Hub(hub_tmp / name, **kw)
    hub_cleanup.hubs.append(hub)
    return hub


def chromium(work_dir: Path):
    """Debian's Chromium with a fresh profile: the project's one launcher (tests/browser/lab_page.py)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "browser"))
    from lab_page import chromium as fresh_chromium

    if not Path(CHROMIUM).exists():
        fail_or_skip(f"Chromium not found at {CHROMIUM}")
    return fresh_chromium(work_dir, executable=CHROMIUM)
