"""The class load test: N simulated learners on the course hub, on loopback only.

    python -m benchmarks.loadtest                       # N = 1, 4, 8, 16 (about 10 minutes on 2 cores)
    python -m benchmarks.loadtest --learners 1,4 --changes 5

For each N it starts the hub (``deploy/start.sh``, dummy authenticator, free loopback
ports, state under benchmarks/loadtest/_work), then N learner threads each:

1. log in through the hub's login form, get an API token (REST), start their server and
   wait for it (the time from login to the first figure includes all of this);
2. run notebooks 01-05 cell by cell through the kernel websocket, each in a fresh kernel
   (03's kernel stays open); after each notebook a probe reads the kernel's CPU time,
   resident memory and whether ``torch`` is in ``sys.modules``;
3. answer a poll question from their kernel (``mha_classroom.quiz.poll.send``), check that
   their own token cannot read the counts (403), and that another learner's progress
   file cannot be opened; then check exercise ``split_heads`` from the kernel with
   ``mha_classroom.exercises.check`` (learner i: the reference, the planted mistake
   ``reshape_without_transpose`` or the untouched stub, by i mod 3), which sends the
   verdict to the poll in the background (notebooks 02-04 already sent "not attempted"
   for each stub they checked);
4. drive notebook 03's head-count control as the browser does (a widget ``comm_msg``),
   one change every ``--pace`` seconds: first staggered (each learner on its own
   clock), then lock-step (everyone at the same instant, "now move it").

Then an instructor (role ``instructor``) reads the counts from their kernel, which
must equal what the learners sent, and opens the room view on notebook 03's exercises
(``mha_classroom.quiz.instructor.room_view("03")``), whose split_heads counts must equal
the learners' checks; its Refresh is timed in the instructor's kernel, once with the
class idle and again while every learner moves the control in lock-step. Memory (RSS and PSS) of each learner's server and
kernel is read with psutil, by the learner's Unix account; the hub's processes (hub,
proxy, poll service, culler) separately. Every wait has a timeout; the run stops by
itself. Only loopback is contacted (the hub at 127.0.0.1, each learner's server at NAME.localhost). Needs root (learners are Unix accounts, removed
at the end) and the hub's environment (``deploy/start.sh --build-only``).

The proxy's CPU is that of the hub's child processes named ``configurable-http-proxy`` or ``nginx`` (the
shim of ``proxy_ab.sh``), or, with ``MHA_LOADTEST_PROXY_CGROUP`` naming a cgroup v1 ``cpuacct`` folder
the proxy was started in, the folder's ``cpuacct.usage``: every process the proxy ran, also those that ended.
"""

from __future__ import annotations

import argparse
import contextlib
import grp
import http.client
import json
import os
import pwd
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from pathlib import Path

import psutil
import requests

from .cpu import cpu_seconds
from .kernel_client import KernelClient

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
sys.path.insert(0, str(DEPLOY))
from learner_limits import unmount_under  # noqa: E402
from warm_start import localhost_resolver  # noqa: E402

# Each learner's server has its own origin, NAME.localhost:PORT (deploy/README.md, "Security").
socket.getaddrinfo = localhost_resolver(socket.getaddrinfo)
WORK = Path(__file__).resolve().parent / "_work"
NOTEBOOKS = ["01_queries_keys_values", "02_single_head_attention", "03_multiple_heads",
             "04_concat_and_output_projection", "05_head_sizing"]
CONTROL_NOTEBOOK = "03_multiple_heads"
HEAD_COUNT_INDICES = [0, 1, 2, 3, 4]  # d_model = 16: H in (1, 2, 4, 8, 16)
PASSWORD = "loadtest"
POLL_QUESTION = "03-what-is-a-head"  # a single-choice question of the bank (4 options): the poll accepts only those
EXERCISE = "split_heads"
#: What learner i's function is, by i mod 3, and the verdict the room view then counts it under.
EXERCISE_FUNCTIONS = [("reference", "passed"), ("reshape_without_transpose", "reshape_without_transpose"),
                      ("stub", "not_tried")]
EXERCISE_CHECK = """
import threading as _t
from mha_classroom import exercises as _ex
from mha_classroom.exercises import _EXERCISES
_name, _what = {name!r}, {what!r}
if _what == "reference":
    _fn = _ex.reference(_name)
elif _what == "stub":
    _ns = {{}}
    exec(_ex.stub_source(_name), _ns)
    _fn = _ns[_EXERCISES[_name].solution.__name__]
else:
    _fn = next(m.planted for m in _EXERCISES[_name].mistakes if m.name == _what)
_ex.check(_name, _fn)
for _th in _t.enumerate():  # the verdict is sent in the background: wait for it, so the count is deterministic
    if _th.name == "mha-poll-verdict":
        _th.join(5)
print("__EXERCISE__ checked")
"""
ROOM_VIEW = """
import json as _j, time as _time
from mha_classroom.quiz import instructor as _ins
_view = _ins.room_view("03", show=False)
_times = []
for _ in range({repeats}):
    _t0 = _time.perf_counter(); _view.refresh(); _times.append(_time.perf_counter() - _t0)
    _time.sleep({pause_s})
print("__ROOM__" + _j.dumps({{"results": _view.results, "refresh_s": _times}}))
"""
PROBE = """
import json as _j, resource as _r, sys as _s, importlib.util as _iu
_u = _r.getrusage(_r.RUSAGE_SELF)
with open("/proc/self/status") as _f:
    _st = {l.split(":")[0]: int(l.split()[1]) for l in _f if l.startswith(("VmRSS", "VmHWM"))}
print("__PROBE__" + _j.dumps({"torch": "torch" in _s.modules, "cpu_s": _u.ru_utime + _u.ru_stime,
                              "lark_installed": _iu.find_spec("lark") is not None or _iu.find_spec("rfc3987_syntax") is not None,
                              "rss_mib": _st["VmRSS"] / 1024, "peak_rss_mib": _st["VmHWM"] / 1024}))
"""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pct(values, q):
    if not values:
        return None
    values = sorted(values)
    k = (len(values) - 1) * q
    lo, hi = int(k), min(int(k) + 1, len(values) - 1)
    return values[lo] + (values[hi] - values[lo]) * (k - lo)


def code_cells(name: str) -> list[str]:
    nb = json.loads((ROOT / "notebooks" / f"{name}.ipynb").read_text())
    return ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]


# --------------------------------------------------------------------------- the hub


class Hub:
    """deploy/start.sh on free loopback ports, stopped (servers and all) on exit."""

    #: What starts the hub (benchmarks/loadtest/cluster.py starts deploy/cluster/start.sh instead).
    start_script = DEPLOY / "start.sh"
    #: The folders a hub started as root makes in /run (deploy/course_spawner.py's RUNTIME_ROOT, and
    #: deploy/jupyterhub_config.py's POLL_RUN and PROXY_RUN): removed at the end when this run made them.
    RUN_FOLDERS = (Path("/run/mha-hub"), Path("/run/mha-hub-poll"), Path("/run/mha-hub-proxy"))

    def __init__(self, tag: str, instructors: list[str]):
        self.state = WORK / f"state-{tag}"
        self.port = free_port()
        # The hub's own pages and API: at 127.0.0.1 (Python's cookie jar files a dotless "localhost" under
        # "localhost.local" and then never sends the login cookie back); learners' servers at NAME.localhost.
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = dict(os.environ, MHA_HUB_STATE=str(self.state), MHA_HUB_AUTH="dummy", MHA_HUB_PASSWORD=PASSWORD,
                        MHA_HUB_IP="127.0.0.1", MHA_HUB_PORT=str(self.port), MHA_HUB_API_PORT=str(free_port()),
                        MHA_HUB_PROXY_API_PORT=str(free_port()), MHA_POLL_PORT=str(free_port()),
                        MHA_HUB_INSTRUCTORS=",".join(instructors), MHA_HUB_CREATE_USERS="1",
                        # The instructor is the hub's admin too: the warm start (--warm) is theirs to run.
                        MHA_HUB_ADMINS=",".join(instructors))
        self.proc = None
        self.had_run_folders = {p for p in self.RUN_FOLDERS if p.exists()}

    def server_url(self, name: str) -> str:
        """Where ``name``'s own server answers: their origin, NAME.localhost (the path stays /user/NAME/)."""
        return f"http://{name}.localhost:{self.port}"

    def __enter__(self):
        subprocess.run(["rm", "-rf", str(self.state)], check=True)
        WORK.mkdir(parents=True, exist_ok=True)
        self.log = open(WORK / f"{self.state.name}.log", "w")
        self.proc = subprocess.Popen([str(self.start_script)], env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        try:
            self._wait_up()
        except BaseException:
            self.__exit__(None, None, None)  # a hub that did not come up is stopped and its state removed too
            raise
        return self

    def _wait_up(self) -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if requests.get(f"{self.url}/hub/api/", timeout=2).ok:
                    time.sleep(1.0)  # let the services register
                    return
            except requests.RequestException:
                pass
            if self.proc.poll() is not None:
                raise RuntimeError(f"the hub exited; see {self.log.name}")
            time.sleep(0.5)
        raise RuntimeError("the hub did not answer within 120 s")

    def processes(self) -> list[psutil.Process]:
        """The hub and what it runs for itself: proxy, poll service, culler (not learners' servers)."""
        try:
            hub = psutil.Process(self.proc.pid)
        except psutil.NoSuchProcess:
            return []
        me = os.getuid()
        return [p for p in [hub, *hub.children(recursive=True)] if p.uids().real == me]

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the hub stops every learner's server (cleanup_servers)
            try:
                self.proc.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        self.log.close()
        self.remove_state()

    def remove_state(self) -> None:
        """The class's state removed (its log is kept): each learner's home is an image of
        MHA_HUB_HOME_SIZE (1 GB, allocated), so 32 learners leave 32 GB. Anything still mounted
        under it (a hub that was killed), and its images' loop devices, are released first."""
        unmount_under(str(self.state))
        subprocess.run(["rm", "-rf", "--one-file-system", str(self.state)], capture_output=True)
        # The poll service's and the proxy's sockets, named by the hub's port, outside the state folder
        # (deploy/jupyterhub_config.py: POLL_RUN, PROXY_RUN): six runs of this test had left theirs in /run.
        for socket_file in (Path("/run/mha-hub-poll") / f"poll-{self.port}.sock",
                            Path("/run/mha-hub-proxy") / f"api-{self.port}.sock"):
            socket_file.unlink(missing_ok=True)
        self.remove_run_folders()

    def remove_run_folders(self) -> None:
        """The /run folders, when this run made them and nothing is left in them (the poll's belonged to its
        service account, which the run removes: a folder of a removed account's number stayed behind). Again
        after ``remove_accounts``, which empties ``/run/mha-hub`` of the learners' folders."""
        for folder in self.RUN_FOLDERS:
            if folder not in self.had_run_folders and folder.is_dir() and not folder.is_symlink():
                with contextlib.suppress(OSError):
                    folder.rmdir()


# --------------------------------------------------------------------------- one learner


def login(hub: Hub, name: str) -> str:
    """Log in through the login form (dummy authenticator), as a browser does, then ask the REST API for a token.

    Cookies are kept by hand: Python's cookie jar files a dotless host such as "localhost"
    under "localhost.local" and then never sends the session cookie back.
    """
    import re
    import urllib.parse

    host, jar = f"localhost:{hub.port}", {}

    def call(method, path, body=None, headers=None):
        conn = http.client.HTTPConnection("127.0.0.1", hub.port, timeout=60)
        hdrs = {"Host": host, "Origin": f"http://{host}", "Referer": f"http://{host}/hub/login", **(headers or {})}
        if jar:
            hdrs["Cookie"] = "; ".join(f"{k}={v}" for k, v in jar.items())
        try:
            conn.request(method, path, body=body, headers=hdrs)
            resp = conn.getresponse()
            data = resp.read()
            for key, value in resp.getheaders():
                if key.lower() == "set-cookie":
                    cookie, _, rest = value.partition("=")
                    jar[cookie.strip()] = rest.split(";", 1)[0]
            return resp.status, data
        finally:
            conn.close()

    _, page = call("GET", "/hub/login")
    form = {"username": name, "password": PASSWORD}
    match = re.search(rb'name="_xsrf" value="([^"]+)"', page)
    if match:
        form["_xsrf"] = match.group(1).decode()
    status, _ = call("POST", "/hub/login", urllib.parse.urlencode(form).encode(),
                     {"Content-Type": "application/x-www-form-urlencoded"})
    if status != 302:
        raise RuntimeError(f"login of {name} gave {status}")
    status, data = call("POST", f"/hub/api/users/{name}/tokens", json.dumps({"note": "load test", "expires_in": 3600}).encode(),
                        {"Content-Type": "application/json", "X-XSRFToken": urllib.parse.unquote(jar.get("_xsrf", ""))})
    if status != 201:
        raise RuntimeError(f"a token for {name} gave {status}: {data[:200]!r}")
    return json.loads(data)["token"]


def start_server(hub: Hub, name: str, token: str, timeout: float = 240) -> None:
    h = {"Authorization": f"token {token}"}
    r = requests.post(f"{hub.url}/hub/api/users/{name}/server", headers=h, timeout=timeout)
    if r.status_code not in (201, 202) and not (r.status_code == 400 and "already running" in r.text):  # 400: warm
        raise RuntimeError(f"starting {name}'s server gave {r.status_code}: {r.text[:200]}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        server = requests.get(f"{hub.url}/hub/api/users/{name}", headers=h, timeout=60).json().get("servers", {}).get("")
        if server and server.get("ready"):
            return
        time.sleep(0.25)
    raise RuntimeError(f"{name}'s server was not ready within {timeout} s")


def _probe(client: KernelClient) -> dict:
    out = client.execute(PROBE)["stdout"]
    line = next(line for line in out.splitlines() if line.startswith("__PROBE__"))
    return json.loads(line[len("__PROBE__"):])


class Learner:
    def __init__(self, hub: Hub, name: str, index: int, notebooks: list[str], protocol: str = "v1"):
        self.hub, self.name, self.index, self.notebooks, self.protocol = hub, name, index, notebooks, protocol
        self.result = {"name": name, "failures": [], "notebooks": {}, "latency_s": {"staggered": [], "lockstep": []}}
        self.held: list = []  # the control's settings the page holds (see find control below)
        self.client = None
        self.choice = str(index % 3)
        self.exercise_function, self.exercise_verdict = EXERCISE_FUNCTIONS[index % 3]

    def fail(self, where: str, exc: BaseException) -> None:
        self.result["failures"].append(f"{where}: {type(exc).__name__}: {str(exc)[:300]}")

    def setup(self, other_progress: str | None) -> None:
        """Log in, start the server, run the notebooks, answer the poll, try to read a neighbour."""
        t0 = time.perf_counter()
        try:
            self.token = login(self.hub, self.name)
            self.result["login_s"] = time.perf_counter() - t0
            start_server(self.hub, self.name, self.token)
            self.result["server_ready_s"] = time.perf_counter() - t0
        except Exception as exc:
            self.fail("login/start", exc)
            return
        # Learner 0 also opens the welcome notebook, last, to check that its kernel stays free of torch too.
        for nb in self.notebooks + (["00_welcome"] if self.index == 0 and "00_welcome" not in self.notebooks else []):
            row = {"errors": []}
            self.result["notebooks"][nb] = row
            try:
                client = KernelClient(self.hub.server_url(self.name), self.name, self.token, f"course/{nb}.ipynb", protocol=self.protocol)
                started = time.perf_counter()
                for source in code_cells(nb):
                    out = client.execute(source)
                    row["errors"] += out["errors"]
                    if out["figures"] and "first_figure_s" not in self.result and nb != "00_welcome":
                        self.result["first_figure_s"] = time.perf_counter() - t0
                    if out["errors"]:
                        break
                row["run_s"] = time.perf_counter() - started
                row.update(_probe(client))
            except Exception as exc:
                self.fail(f"notebook {nb}", exc)
                continue
            if nb == CONTROL_NOTEBOOK:
                self.client = client
            else:
                client.close()
        if self.client is None:
            return
        try:
            self.client.reconnect()  # left unread while the other notebooks ran
            code = (f"from mha_classroom.quiz import poll\n"
                    f"print('__POLL__', poll.available(), poll.send({POLL_QUESTION!r}, [{self.choice!r}]), poll.counts({POLL_QUESTION!r}) is None)\n"
                    # The counts asked for directly, with the learner's own token: the status the service answers
                    # (the kernels reach the poll on its Unix socket, through the poll module's own connection).
                    "import http.client, os, urllib.parse\n"
                    "u = urllib.parse.urlsplit(os.environ['MHA_POLL_URL'])\n"
                    "conn = (poll._UnixConnection(urllib.parse.unquote(u.netloc), 5) if u.scheme == 'http+unix'\n"
                    "        else http.client.HTTPConnection(u.hostname, u.port, timeout=5))\n"
                    f"conn.request('GET', u.path + 'counts/{POLL_QUESTION}', "
                    "headers={'Authorization': 'token ' + os.environ['JUPYTERHUB_API_TOKEN']})\n"
                    "print('__STATUS__', conn.getresponse().status)\n")
            done = self.client.execute(code)
            if done["errors"]:
                raise RuntimeError("; ".join(map(str, done["errors"]))[:300])
            out = client_out = done["stdout"]
            poll_line = next(line for line in out.splitlines() if line.startswith("__POLL__")).split()
            self.result["poll"] = {"available": poll_line[1] == "True", "sent": poll_line[2] == "True",
                                   "counts_refused": poll_line[3] == "True",
                                   "counts_http_status": int(next(line for line in client_out.splitlines() if line.startswith("__STATUS__")).split()[1])}
        except Exception as exc:
            self.fail("poll", exc)
        try:
            out = self.client.execute(EXERCISE_CHECK.format(name=EXERCISE, what=self.exercise_function))["stdout"]
            self.result["exercise"] = {"function": self.exercise_function, "checked": "__EXERCISE__ checked" in out,
                                       "verdict": out.split("\n", 1)[0][:200]}
        except Exception as exc:
            self.fail("exercise", exc)
        if other_progress:
            try:
                out = self.client.execute(
                    "try:\n    open(%r, 'rb').read(16); print('__READ__ readable')\n"
                    "except PermissionError:\n    print('__READ__ refused')\n"
                    "except FileNotFoundError:\n    print('__READ__ missing')\n" % other_progress)["stdout"]
                self.result["neighbour_progress"] = out.split("__READ__", 1)[1].strip()
            except Exception as exc:
                self.fail("isolation", exc)
        try:
            self.comm_id = self.client.find_widget("ToggleButtonsModel", description="heads H")
            # Where the control is; kept here, since the class's kernels do not echo a change back.
            self.position = self.client.comms[self.comm_id].get("index")
            # The head counts whose grid the page holds (mha_classroom.widgets._states.hold): a move switches the
            # figure in the page by itself, so the kernel's whole work is taking the new value.
            self.held = self.client.held_by_page(self.comm_id)
            self.result["held_by_page"] = self.held
        except Exception as exc:
            self.fail("find control", exc)
            self.client = None

    def change(self, mode: str, k: int) -> None:
        index = HEAD_COUNT_INDICES[(k + 1 + self.index) % len(HEAD_COUNT_INDICES)]
        if index == self.position:  # a real change: never the head count the control already shows
            index = HEAD_COUNT_INDICES[(HEAD_COUNT_INDICES.index(index) + 1) % len(HEAD_COUNT_INDICES)]
        try:
            seconds, replies = self.client.widget_update(self.comm_id, {"index": index})
            if index in self.held:
                if replies:
                    raise RuntimeError(f"the page holds head count index {index}, yet the kernel sent {replies} "
                                       "widget messages back")
            elif replies == 0:
                raise RuntimeError("the kernel sent no widget update for the change")
            self.position = index
            self.result["latency_s"][mode].append(seconds)
        except Exception as exc:
            self.fail(f"control {mode}", exc)


#: Seconds between a phase's reconnections and its first timed change (``drive``).
SETTLE_S = 3.0


def drive(learners: list[Learner], mode: str, changes: int, pace: float) -> None:
    """Each live learner changes the control ``changes`` times, one every ``pace`` seconds."""
    live = [ln for ln in learners if ln.client is not None]
    barrier = threading.Barrier(len(live)) if mode == "lockstep" and live else None

    def run(ln: Learner):
        rng = random.Random(ln.index)
        try:
            ln.client.reconnect()  # left unread while the others finished
        except Exception as exc:
            ln.fail(f"reconnect {mode}", exc)
            return
        # A browser stays connected: the class's servers are given time to finish the reconnections (each a new
        # websocket, its channels to the kernel, the server's kernel_info nudges) before the first timed change.
        # Without it, the first lock-step round after 32 reconnections took 92-168 ms at the median, the other
        # rounds 45-72 ms (benchmarks/loadtest/busy_ab/, before this wait).
        time.sleep(SETTLE_S)
        if mode == "staggered":
            time.sleep(rng.uniform(0, pace))
        for k in range(changes):
            t = time.monotonic()
            if barrier is not None:
                try:
                    barrier.wait(timeout=120)
                except threading.BrokenBarrierError:
                    pass
            ln.change(mode, k)
            time.sleep(max(0.0, pace - (time.monotonic() - t)))

    threads = [threading.Thread(target=run, args=(ln,)) for ln in live]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=changes * pace + 300)


# --------------------------------------------------------------------------- memory


def memory_by_account(names: list[str]) -> dict[str, dict]:
    """Per learner: server and kernel RSS and PSS (MiB), from every process of their Unix account."""
    uids = {}
    for name in names:
        try:
            uids[pwd.getpwnam(name).pw_uid] = name
        except KeyError:
            pass
    rows = {name: {"server_rss": 0.0, "server_pss": 0.0, "kernel_rss": 0.0, "kernel_pss": 0.0, "kernels": 0,
                   "server_cpu_s": 0.0} for name in names}
    for p in psutil.process_iter(["uids", "cmdline"]):
        try:
            name = uids.get(p.info["uids"].real)
            if name is None:
                continue
            mem = p.memory_full_info()
            kind = "kernel" if any("ipykernel" in part for part in p.info["cmdline"] or []) else "server"
            rows[name][f"{kind}_rss"] += mem.rss / 2**20
            rows[name][f"{kind}_pss"] += mem.pss / 2**20
            rows[name]["kernels"] += kind == "kernel"
            if kind == "server":
                times = p.cpu_times()
                rows[name]["server_cpu_s"] += times.user + times.system
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
    return rows


def own_cpu_seconds() -> float:
    """CPU seconds so far of this process, its ended threads included (the simulated browsers' threads end with
    each phase, which ``cpu_seconds``'s live-thread count would miss)."""
    times = psutil.Process().cpu_times()
    return times.user + times.system


def cpu_by_kind(names: list[str], hub: Hub) -> dict[str, float]:
    """CPU seconds so far of all learners' servers, all their kernels, the proxy, and the hub's other processes."""
    uids = set()
    for name in names:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            pass
    total = {"kernel": 0.0, "server": 0.0, "proxy": 0.0, "hub": 0.0}
    group = os.environ.get("MHA_LOADTEST_PROXY_CGROUP")
    if group:
        total["proxy"] = int(Path(group, "cpuacct.usage").read_text()) / 1e9
    for p in hub.processes():  # the proxy apart from the hub's Python processes (hub, poll service, culler)
        try:
            kind = "proxy" if any("configurable-http-proxy" in part or "nginx" in part for part in p.cmdline()) else "hub"
            if group and kind == "proxy":
                continue
            total[kind] += cpu_seconds(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, FileNotFoundError):
            continue
    for p in psutil.process_iter(["uids", "cmdline"]):
        try:
            if p.info["uids"].real not in uids:
                continue
            kind = "kernel" if any("ipykernel" in part for part in p.info["cmdline"] or []) else "server"
            total[kind] += cpu_seconds(p.pid)
        except (psutil.NoSuchProcess, psutil.AccessDenied, FileNotFoundError):
            continue
    return total


def hub_usage(hub: Hub) -> dict:
    rss = pss = cpu = 0.0
    for p in hub.processes():
        try:
            mem, times = p.memory_full_info(), p.cpu_times()
            rss, pss = rss + mem.rss / 2**20, pss + mem.pss / 2**20
            cpu += times.user + times.system + times.children_user + times.children_system
        except psutil.NoSuchProcess:
            continue
    return {"rss_mib": rss, "pss_mib": pss, "cpu_s": cpu}


# --------------------------------------------------------------------------- one class size


def warm_class(hub: Hub, teacher: str, names: list[str], notebook: str, parallel: int = 4) -> dict:
    """The instructor's warm start before the class (deploy/warm_start.py): every learner's server
    started and ``notebook`` open with its imports run. Seconds it took, and what failed."""
    import warm_start
    from concurrent.futures import ThreadPoolExecutor

    admin = warm_start.Hub(f"http://localhost:{hub.port}", login(hub, teacher))
    code = warm_start.notebook_imports(notebook)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(parallel) as pool:
        rows = list(pool.map(lambda name: warm_start.warm(admin, name, notebook, code), names))
    return {"notebook": notebook, "parallel": parallel, "took_s": time.perf_counter() - t0,
            "failures": [f"{r['name']}: {r['error']}" for r in rows if "error" in r]}


def run_class(n: int, *, changes: int, pace: float, notebooks: list[str], stagger_login_s: float, protocol: str = "v1",
              hub_class: type = Hub, warm: bool = False, browser_learner: bool = False) -> dict:
    names = [f"mhalt{n:02d}x{i:02d}" for i in range(n)]
    teacher = f"mhalt{n:02d}teach"
    # One more learner in Chromium (browser_learner.py), beside the class: not among ``names``, so its server's
    # and kernel's CPU is not in the class's CPU per change.
    web = f"mhalt{n:02d}web" if browser_learner else None
    result = {"learners": n, "changes_per_learner": changes, "pace_s": pace, "failures": []}
    had_group, had_service_user = _exists(grp.getgrnam, LEARNER_GROUP), _exists(pwd.getpwnam, SERVICE_USER)
    # ``cleanup`` closes the browser learner's Chromium, and removes its profile, however the class ends.
    hub = hub_class(f"n{n}", instructors=[teacher])
    everyone = names + [teacher] + ([web] if web else [])
    with _removed_at_the_end(hub, everyone, had_group, had_service_user), hub, contextlib.ExitStack() as cleanup:
        homes = hub.state / "homes"
        if warm:
            result["warm_start"] = warm_class(hub, teacher, names, notebooks[0])
            result["failures"] += result["warm_start"]["failures"]
            wait_until_quiet()  # the class comes in later: the warm start's CPU is not theirs
        learners = [Learner(hub, name, i, notebooks, protocol) for i, name in enumerate(names)]
        cpu0 = hub_usage(hub)["cpu_s"]
        t0 = time.perf_counter()
        threads = []
        for i, ln in enumerate(learners):
            neighbour = names[(i + 1) % n] if n > 1 else None
            target = str(homes / neighbour / ".mha_course" / "progress.sqlite3") if neighbour else None
            threads.append(threading.Thread(target=ln.setup, args=(target,)))
            threads[-1].start()
            time.sleep(stagger_login_s)
        for t in threads:
            t.join(timeout=900)
        result["all_ready_s"] = time.perf_counter() - t0
        browser = None
        if web:
            from .browser_learner import BrowserLearner

            cleanup.callback(shutil.rmtree, WORK / f"browser-{n}", ignore_errors=True)
            browser = BrowserLearner(hub, web, n, PASSWORD, WORK / f"browser-{n}")
            cleanup.callback(browser.close)
            browser.setup()
        # The neighbour's file exists only once the neighbour's quick check ran: check again now.
        for i, ln in enumerate(learners):
            if n > 1 and ln.client is not None and ln.result.get("neighbour_progress") == "missing":
                ln.client.reconnect()
                target = str(homes / names[(i + 1) % n] / ".mha_course" / "progress.sqlite3")
                out = ln.client.execute(
                    "try:\n    open(%r, 'rb').read(16); print('__READ__ readable')\n"
                    "except PermissionError:\n    print('__READ__ refused')\n"
                    "except FileNotFoundError:\n    print('__READ__ missing')\n" % target)["stdout"]
                ln.result["neighbour_progress"] = out.split("__READ__", 1)[1].strip()

        # The instructor reads the counts from their own kernel.
        expected = Counter(ln.choice for ln in learners if ln.result.get("poll", {}).get("sent"))
        teacher_client = None
        try:
            token = login(hub, teacher)
            start_server(hub, teacher, token)
            teacher_client = KernelClient(hub.server_url(teacher), teacher, token, "course/11_mental_model_review.ipynb")
            out = teacher_client.execute(f"from mha_classroom.quiz import poll\nimport json\nprint('__COUNTS__' + json.dumps(poll.counts({POLL_QUESTION!r})))")["stdout"]
            got = json.loads(out.split("__COUNTS__", 1)[1])
            result["poll"] = {"sent": dict(expected), "instructor_counts": got and got["counts"],
                              "answered": got and got["answered"], "equal": bool(got) and got["counts"] == dict(expected)}
        except Exception as exc:
            result["failures"].append(f"instructor: {type(exc).__name__}: {exc}")
        # The room view on notebook 03's exercises: its counts, and how long a Refresh takes, the class idle.
        checked = [ln for ln in learners if ln.result.get("exercise", {}).get("checked")]
        room_expected = dict(Counter(ln.exercise_verdict for ln in checked))
        result["room_view"] = {"expected": room_expected}
        if teacher_client is not None:
            try:
                room = room_view_timed(teacher_client, repeats=10)
                split = (room["results"] or {}).get(EXERCISE) or {}
                got = {"passed": split.get("passed", 0), **split.get("mistakes", {}), "not_tried": split.get("not_tried", 0)}
                got = {k: v for k, v in got.items() if v}
                result["room_view"].update(counts=split, equal=got == room_expected, idle_refresh_s=room["refresh_s"])
            except Exception as exc:
                result["failures"].append(f"room view: {type(exc).__name__}: {exc}")

        result["cpu_ms_per_change"], result["cpu_ms_per_change_raw"] = {}, {}
        # What every process spends with the class connected and nobody moving, over as long as a phase
        # lasts (heartbeats, the culler, the servers' own timers): subtracted from each phase below.
        before = cpu_by_kind(names, hub)
        idle_start = time.perf_counter()
        time.sleep(changes * pace)
        after = cpu_by_kind(names, hub)
        idle_s = time.perf_counter() - idle_start
        idle_rate = {k: (after[k] - before[k]) / idle_s for k in after}
        result["cpu_idle_ms_per_s"] = {k: 1000 * v for k, v in idle_rate.items()}
        result["client_cpu_ms_per_change"] = {}
        for mode in ("staggered", "lockstep"):
            before, own_before = cpu_by_kind(names, hub), own_cpu_seconds()
            phase_start = time.perf_counter()
            watcher = None
            if mode == "lockstep" and teacher_client is not None:
                # The instructor refreshes the room view while the whole class moves the control at once.
                # Four Refreshes per change, spread over the phase (one every pace / 4 seconds).
                watcher = threading.Thread(target=_room_view_during,
                                           args=(teacher_client, result["room_view"], 4 * changes, pace / 4))
                watcher.start()
            drive(learners + ([browser] if browser else []), mode, changes, pace)
            if watcher is not None:
                watcher.join(timeout=300)
            after, own_after = cpu_by_kind(names, hub), own_cpu_seconds()
            phase_s = time.perf_counter() - phase_start
            done = sum(len(ln.result["latency_s"][mode]) for ln in learners)
            if done:
                # What each process spent while the controls moved, per change (the kernel's callback, the
                # server relaying the messages, the proxy, the hub), less what it spends idle in as long.
                result["cpu_ms_per_change_raw"][mode] = {k: 1000 * (after[k] - before[k]) / done for k in after}
                result["cpu_ms_per_change"][mode] = {
                    k: 1000 * max(0.0, after[k] - before[k] - idle_rate[k] * phase_s) / done for k in after}
                # This process: the learners' simulated browsers (and the instructor's Refreshes in lock-step), on
                # the same two cores as the class; a class's browsers run on the learners' own machines.
                result["client_cpu_ms_per_change"][mode] = 1000 * (own_after - own_before) / done
        result["memory_mib"] = memory_by_account(names)
        usage = hub_usage(hub)
        result["hub"] = {"rss_mib": usage["rss_mib"], "pss_mib": usage["pss_mib"], "cpu_s": usage["cpu_s"] - cpu0}
        result["wall_s"] = time.perf_counter() - t0
        for ln in learners:
            if ln.client is not None:
                try:
                    ln.client.close()
                except Exception:
                    pass
        if teacher_client is not None:
            try:
                teacher_client.close()
            except Exception:
                pass
        result["per_learner"] = [ln.result for ln in learners]
        if browser is not None:
            result["browser_learner"] = browser.result
            result["failures"] += [f"{web}: {f}" for f in browser.result["failures"]]
    return result


@contextlib.contextmanager
def _removed_at_the_end(hub, names: list[str], had_group: bool, had_service_user: bool):
    """The run's accounts and the /run folders it made, removed however the class ends: also when its hub
    never started (a hub that exited at once had left the service account and two /run folders behind)."""
    try:
        yield
    finally:
        remove_accounts(names, had_group=had_group, had_service_user=had_service_user)
        hub.remove_run_folders()


def room_view_timed(client: KernelClient, repeats: int, pause_s: float = 0.0) -> dict:
    """The room view built in the instructor's kernel, and the seconds each of ``repeats`` Refreshes took there
    (``pause_s`` apart)."""
    out = client.execute(ROOM_VIEW.format(repeats=repeats, pause_s=pause_s))["stdout"]
    return json.loads(out.split("__ROOM__", 1)[1])


def _room_view_during(client: KernelClient, row: dict, repeats: int, pause_s: float) -> None:
    try:
        row["lockstep_refresh_s"] = room_view_timed(client, repeats, pause_s)["refresh_s"]
    except Exception as exc:
        row["lockstep_error"] = f"{type(exc).__name__}: {exc}"


#: Where the spawner makes each learner's kernel-socket folder (deploy/course_spawner.py's RUNTIME_ROOT).
RUNTIME_ROOT = Path("/run/mha-hub")
#: What the hub makes once for every class (deploy/course_spawner.py): removed after the run if it made them.
LEARNER_GROUP, SERVICE_USER = "mha-learners", "mha-hub-svc"


def _exists(getter, name: str) -> bool:
    try:
        getter(name)
        return True
    except KeyError:
        return False


def remove_accounts(names: list[str], *, had_group: bool = True, had_service_user: bool = True) -> None:
    """Remove the run's accounts, their runtime folders (before a later account can get the same uid) and,
    if this run made them, the hub's learner group and service account."""
    import grp

    for name in names:
        if _exists(pwd.getpwnam, name):
            subprocess.run(["pkill", "-KILL", "-u", name], capture_output=True)
            subprocess.run(["userdel", name], capture_output=True)
        subprocess.run(["rm", "-rf", "--", str(RUNTIME_ROOT / name)], capture_output=True)
    if not had_service_user and _exists(pwd.getpwnam, SERVICE_USER):
        subprocess.run(["pkill", "-KILL", "-u", SERVICE_USER], capture_output=True)
        subprocess.run(["userdel", SERVICE_USER], capture_output=True)
    if not had_group and _exists(grp.getgrnam, LEARNER_GROUP):
        subprocess.run(["groupdel", LEARNER_GROUP], capture_output=True)


def summarise(run: dict) -> dict:
    per = run["per_learner"]
    s = {"learners": run["learners"], "all_ready_s": run["all_ready_s"],
         "failures": sum(len(p["failures"]) for p in per) + len(run["failures"]),
         "failure_lines": [f for p in per for f in p["failures"]] + run["failures"]}
    for mode in ("staggered", "lockstep"):
        lat = [x * 1000 for p in per for x in p["latency_s"][mode]]
        s[mode] = {"n": len(lat), "p50_ms": pct(lat, 0.5), "p95_ms": pct(lat, 0.95), "max_ms": max(lat) if lat else None}
    held = [p.get("held_by_page") for p in per if "held_by_page" in p]
    web = run.get("browser_learner")
    if web:
        s["browser_learner"] = {"setup_s": web.get("setup_s"), "failures": len(web["failures"])}
        for mode, values in web["page_ms"].items():
            s["browser_learner"][mode] = {"n": len(values), "p50_ms": pct(values, 0.5), "p95_ms": pct(values, 0.95),
                                          "max_ms": max(values) if values else None}
    s["held_by_page"] = {"learners": sum(1 for h in held if h), "of": len(held), "settings": max(map(len, held), default=0)}
    firsts = [p["first_figure_s"] for p in per if "first_figure_s" in p]
    s["first_figure_s"] = {"median": statistics.median(firsts) if firsts else None, "max": max(firsts) if firsts else None}
    if "warm_start" in run:
        s["warm_start"] = {k: run["warm_start"][k] for k in ("notebook", "parallel", "took_s")}
    mem = list(run.get("memory_mib", {}).values())
    if mem:
        s["memory_mib"] = {k: statistics.mean(m[k] for m in mem) for k in ("server_rss", "server_pss", "kernel_rss", "kernel_pss")}
        s["server_cpu_s"] = statistics.mean(m["server_cpu_s"] for m in mem)
    s["hub"] = run.get("hub")
    s["cpu_ms_per_change"] = run.get("cpu_ms_per_change")
    s["cpu_ms_per_change_raw"] = run.get("cpu_ms_per_change_raw")
    s["cpu_idle_ms_per_s"] = run.get("cpu_idle_ms_per_s")
    s["client_cpu_ms_per_change"] = run.get("client_cpu_ms_per_change")
    torch = {}
    kernel_rss = {}
    cpu = {}
    for p in per:
        for nb, row in p["notebooks"].items():
            if "torch" in row:
                torch.setdefault(nb, set()).add(row["torch"])
                kernel_rss.setdefault(nb, []).append(row["rss_mib"])
                cpu.setdefault(nb, []).append(row["cpu_s"])
    s["torch_imported"] = {nb: sorted(v) for nb, v in torch.items()}
    s["kernel_rss_mib_after_notebook"] = {nb: statistics.mean(v) for nb, v in kernel_rss.items()}
    s["kernel_cpu_s_per_notebook"] = {nb: statistics.mean(v) for nb, v in cpu.items()}
    s["notebooks_cpu_s_per_learner"] = sum(v for nb, v in s["kernel_cpu_s_per_notebook"].items() if nb != "00_welcome")
    s["lark_installed_in_a_kernel"] = any(row.get("lark_installed") for p in per for row in p["notebooks"].values())
    s["notebook_errors"] = sorted({e for p in per for row in p["notebooks"].values() for e in row["errors"]})
    polls = [p.get("poll", {}) for p in per]
    s["poll"] = dict(run.get("poll", {}), learners_sent=sum(bool(x.get("sent")) for x in polls),
                     learner_counts_refused=all(x.get("counts_refused") and x.get("counts_http_status") == 403 for x in polls))
    s["neighbour_progress"] = dict(Counter(p.get("neighbour_progress", "not tried") for p in per))
    room = run.get("room_view", {})
    s["room_view"] = {"expected": room.get("expected"), "equal": room.get("equal"), "counts": room.get("counts"),
                      "learners_checked": sum(bool(p.get("exercise", {}).get("checked")) for p in per)}
    for when in ("idle", "lockstep"):
        ms = [x * 1000 for x in room.get(f"{when}_refresh_s") or []]
        s["room_view"][when] = {"n": len(ms), "p50_ms": pct(ms, 0.5), "p95_ms": pct(ms, 0.95), "max_ms": max(ms) if ms else None}
    return s


#: A run starts once the 1-minute load average is below this (the last run's processes have settled).
QUIET_LOAD = 1.0


def wait_until_quiet(limit_s: float = 240.0) -> float:
    """Seconds waited (at most ``limit_s``) for the 1-minute load average to fall below ``QUIET_LOAD``."""
    start = time.monotonic()
    while os.getloadavg()[0] >= QUIET_LOAD and time.monotonic() - start < limit_s:
        time.sleep(5)
    return time.monotonic() - start


#: The fixed work ``speed_reference_ms`` times: a kernel message's header, as the kernel, the server and a client
#: each handle it (made, signed, parsed), this many times.
REFERENCE_MESSAGES = 4000


def speed_reference_ms(repeats: int = 5) -> float:
    """Milliseconds this machine takes now for a fixed piece of Python work like a message's (the median of
    ``repeats``): the same machine runs up to half again slower in some hours, and a report's figures scale with it."""
    import hashlib
    import hmac
    import statistics

    key = b"reference-key"
    header = {"msg_id": "0" * 32, "msg_type": "comm_msg", "session": "1" * 32, "username": "learner",
              "date": "2026-12-07T00:00:00.000000Z", "version": "5.3"}
    took = []
    for _ in range(repeats):
        start = time.perf_counter()
        for i in range(REFERENCE_MESSAGES):
            header["msg_id"] = f"{i:032d}"
            raw = json.dumps(header).encode()
            hmac.new(key, raw, hashlib.sha256).hexdigest()
            json.loads(raw)["msg_type"]
        took.append(1000 * (time.perf_counter() - start))
    return statistics.median(took)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loadtest", description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", default="1,4,8,16", help="class sizes, comma-separated (default 1,4,8,16)")
    parser.add_argument("--changes", type=int, default=8, help="control changes per learner and mode (default 8)")
    parser.add_argument("--pace", type=float, default=3.0, help="seconds between one learner's changes (default 3)")
    parser.add_argument("--login-stagger", type=float, default=0.5, help="seconds between two learners' logins (default 0.5)")
    parser.add_argument("--notebooks", default=",".join(NOTEBOOKS), help="notebooks each learner runs, in order")
    parser.add_argument("--protocol", choices=["v1", "legacy"], default="v1",
                        help="kernel websocket protocol: v1 (JupyterLab 4's, default) or legacy JSON")
    parser.add_argument("--no-profile", action="store_true", help="skip profiling one control change")
    parser.add_argument("--warm", action="store_true",
                        help="the instructor warms the class up first (deploy/warm_start.py: servers started, the "
                             "first notebook open with its imports run); the first figure is then timed from login")
    parser.add_argument("--browser-learner", action="store_true",
                        help="one more learner in JupyterLab in Chromium, clicking with the others: times in the page "
                             "from a click to the new grid painted (benchmarks/loadtest/browser_learner.py)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "report"), help="report path without suffix")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("run as root: each simulated learner is a Unix account, as on the class server")
    sizes = [int(x) for x in args.learners.split(",")]
    notebooks = [x.strip() for x in args.notebooks.split(",") if x.strip()]
    from .report import machine, write_report

    report = {"machine_before": machine(), "runs": [], "settings": vars(args)}
    for n in sizes:
        waited = wait_until_quiet()
        before, reference = os.getloadavg(), speed_reference_ms()
        print(f"loadtest: {n} learners; load average before {before} (waited {waited:.0f} s for it); "
              f"speed reference {reference:.1f} ms", flush=True)
        try:
            run = run_class(n, changes=args.changes, pace=args.pace, notebooks=notebooks, stagger_login_s=args.login_stagger,
                            protocol=args.protocol, warm=args.warm, browser_learner=args.browser_learner)
        except Exception:
            traceback.print_exc()
            run = {"learners": n, "per_learner": [], "failures": [traceback.format_exc(limit=3)], "all_ready_s": None}
        after = os.getloadavg()
        print(f"loadtest: {n} learners done; load average after {after}", flush=True)
        summary = summarise(run) if run["per_learner"] else {"learners": n, "failures": run["failures"]}
        summary["load_average"] = {"before": [round(x, 2) for x in before], "after": [round(x, 2) for x in after]}
        summary["speed_reference_ms"] = round(reference, 1)
        report["runs"].append({"summary": summary, "raw": run})
        print(json.dumps(report["runs"][-1]["summary"], default=str)[:1500], flush=True)
    if not args.no_profile:
        from .profile_control import profile

        try:
            report["profile"] = profile()
        except Exception:
            traceback.print_exc()
    report["machine_after"] = machine()
    write_report(report, Path(args.out))
    return 0
