"""A learner with a shell (issue 37): each attack against the real hub (deploy/start.sh, the proxy,
the poll service, CourseSpawner, real Unix accounts), failing if the attack succeeds.

- leftovers: a detached process that ignores SIGTERM and forks every 0.3 s, squatting the
  hub's ports, does not survive its server's stop nor the hub's Ctrl-C (dummy and PAM mode),
  and the restarted hub's poll is the real one;
- ports: the poll is a Unix socket no learner can replace; a port the hub needs, taken by
  another account, stops the hub with a message naming the holder;
- the public port's other address family ([::1]) cannot be taken;
- a learner's server listens on no TCP port, only on a Unix socket in its own namespace that
  no other learner reaches; a learner who kills it and takes its socket serves nothing on their origin;
- the instructor's room view shows a hostile poll's reply as text;
- limits: processes, memory, scratch space (/tmp, /dev/shm) per learner; the hub stays up;
- the poll's posts are rate-limited and capped per learner;
- cookies: plain HTTP on a domain is refused; behind TLS the login cookie is __Host-.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
from hubctl import (ERIN, FINN, PASSWORD, TESS, new_hub, pids_of_uid, ports_held_by, processes_mentioning,
                    uid_of)
from shellctl import PAM_GROUP, PAM_LEARNER, as_user, kernel_run, make_pam_account, pam_login_and_start, start_squatter_code, wait_no_processes

pytestmark = pytest.mark.hub


def squatter_log(hub, name: str) -> Path:
    return Path(hub.env["MHA_HUB_HOMES"]) / name / "squatted.log"


def hub_ports(hub) -> list[int]:
    return [hub.port, hub.api_port, hub.proxy_api_port, hub.poll_port]


def assert_poll_is_real(hub, name: str, token: str) -> None:
    """The learner's kernel reaches the real poll (it stores an answer) through MHA_POLL_URL."""
    out = kernel_run(hub, name, token, "import os, json\nfrom mha_classroom.quiz import poll\n"
                     "print('__OUT__' + json.dumps({'url': os.environ.get('MHA_POLL_URL'), "
                     "'sent': poll.send('03-what-is-a-head', [1])}))\n")
    assert out["url"].startswith("http+unix://%2Frun%2Fmha-hub-poll%2F"), out
    assert out["sent"] is True, out


# --------------------------------------------------------------------------- leftovers, dummy mode


def test_a_squatting_leftover_dies_with_its_server_and_with_the_hub(hub_cleanup, hub_tmp):
    hub = new_hub(hub_cleanup, hub_tmp, "leftovers").start()
    token = hub.token(ERIN)
    hub.start_server(ERIN, token)
    log = squatter_log(hub, ERIN)
    script = str(Path(hub.env["MHA_HUB_HOMES"]) / ERIN / "squat.py")
    kernel_run(hub, ERIN, token, start_squatter_code(script, hub_ports(hub), str(log)))
    time.sleep(1.5)
    assert pids_of_uid(uid_of(ERIN)), "the squatter did not start"
    # 1. The server's stop ends it.
    t0 = time.monotonic()
    hub.stop_server(ERIN, token)
    left = wait_no_processes(ERIN, timeout=5)
    assert not left, f"{ERIN}'s processes outlived the server's stop: {left}"
    print(f"server stop to no process of {ERIN}: {time.monotonic() - t0:.1f} s")
    # 2. The hub's Ctrl-C ends it.
    hub.start_server(ERIN, token)
    kernel_run(hub, ERIN, token, start_squatter_code(script, hub_ports(hub), str(log)))
    time.sleep(1.5)
    assert pids_of_uid(uid_of(ERIN))
    took = hub.ctrl_c()
    left = wait_no_processes(ERIN, timeout=3)
    assert not left, f"{ERIN}'s processes outlived the hub's Ctrl-C ({took:.1f} s): {left}"
    # 3. The hub starts again with its own poll, and the squatter never heard a request.
    hub.start()
    token = hub.token(ERIN)
    hub.start_server(ERIN, token)
    assert_poll_is_real(hub, ERIN, token)
    heard = log.read_bytes() if log.exists() else b""
    assert b"token" not in heard.lower() and not heard, f"the squatter was sent: {heard[:500]!r}"
    hub.stop_server(ERIN, token)
    hub.ctrl_c()


OTHER = "ht-other"  # an account the hub did not make (a PAM learner, a colleague)


def test_a_port_the_hub_needs_held_by_another_account_stops_it_with_the_holder_named(hub_cleanup, hub_tmp):
    hub_cleanup.accounts.add(OTHER)
    subprocess.run(["useradd", "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", OTHER], check=True, capture_output=True)
    for which in ("port", "api_port"):
        hub = new_hub(hub_cleanup, hub_tmp, f"taken-{which}")
        port = getattr(hub, which)
        holder = subprocess.Popen(["runuser", "-u", OTHER, "--", "python3", "-c",
                                   f"import socket, time; s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen(); "
                                   "print('ready', flush=True); time.sleep(120)"], stdout=subprocess.PIPE, text=True)
        try:
            assert holder.stdout.readline().strip() == "ready"
            done = hub.run_to_exit(timeout=90)
            said = done.stdout + done.stderr
            assert done.returncode != 0, f"the hub started with {which} {port} held by {OTHER}:\n{said[-2000:]}"
            assert f"{port}" in said and "already taken" in said and OTHER in said, said[-2000:]
        finally:
            holder.kill()
            holder.wait()
    hub_cleanup.remove_account(OTHER)


# --------------------------------------------------------------------------- one class hub for the rest


@pytest.fixture(scope="module")
def shell_hub(hub_cleanup, hub_tmp):
    """A class hub with small limits, so that reaching them is quick: 128 tasks, 400 MB, 32 MB scratch, one core."""
    hub = new_hub(hub_cleanup, hub_tmp, "shell", MHA_HUB_MAX_TASKS="128", MHA_HUB_MEM="400M", MHA_HUB_SCRATCH="32M",
                  MHA_HUB_CPU="1")
    hub.start()
    tokens = {name: hub.token(name) for name in (FINN, TESS)}
    for name in (FINN, TESS):
        hub.start_server(name, tokens[name])
    yield hub, tokens
    hub.ctrl_c()


def test_no_learner_can_listen_where_the_poll_listens(shell_hub):
    hub, tokens = shell_hub
    assert_poll_is_real(hub, FINN, tokens[FINN])
    done = as_user(FINN, f"touch /run/mha-hub-poll/x; rm -f {hub.poll_socket}; ls /run/mha-hub-poll")
    assert done.returncode != 0 and "Permission denied" in done.stderr, (done.stdout, done.stderr)
    assert hub.poll_socket.is_socket()
    # A socket of the learner's own, anywhere, is refused by the kernel's side (not the poll's owner).
    out = kernel_run(hub, FINN, tokens[FINN], (
        "import json, os, socket, threading\nfrom mha_classroom.quiz import poll\n"
        "d = os.path.expanduser('~/fake'); os.makedirs(d, exist_ok=True); p = d + '/poll.sock'\n"
        "os.path.exists(p) and os.unlink(p)\n"
        "s = socket.socket(socket.AF_UNIX); s.bind(p); s.listen(4); got = []\n"
        "def serve():\n"
        "    c, _ = s.accept(); got.append(c.recv(4096)); c.close()\n"
        "threading.Thread(target=serve, daemon=True).start()\n"
        "os.environ['MHA_POLL_URL'] = 'http+unix://' + p.replace('/', '%2F') + '/services/mha-poll/'\n"
        "sent = poll.send('03-what-is-a-head', [1])\n"
        "print('__OUT__' + json.dumps({'sent': sent, 'got': [g.decode(errors='replace') for g in got]}))\n"))
    assert out == {"sent": False, "got": []}, out
    # The proxy's API is a Unix socket only root can reach: this hub's proxy listens on TCP at its public
    # port and nowhere else. (Its old API port was only free when the test began: a learner's server may
    # since have been given that number. And the session's class hub runs its own proxy beside this one.)
    proxies = [line for line in processes_mentioning("configurable-http-proxy") if f" --port {hub.port} " in line]
    assert len(proxies) == 1, f"not one proxy on port {hub.port}: {proxies}"
    ports = ports_held_by({int(proxies[0].split()[0])})
    assert ports == {hub.port}, f"the proxy listens on TCP ports {sorted(ports)}, not only {hub.port}: {proxies[0]}"


def test_the_public_port_on_the_other_address_family_is_the_hubs(shell_hub):
    hub, tokens = shell_hub
    done = as_user(FINN, f"python3 -c \"import socket; s = socket.socket(socket.AF_INET6); s.bind(('::1', {hub.port})); s.listen(); print('BOUND')\"")
    assert "BOUND" not in done.stdout, f"{FINN} took [::1]:{hub.port}"
    # A browser that goes to [::1] first (Chromium does for localhost) reaches the real hub.
    with socket.create_connection(("::1", hub.port), timeout=10) as s:
        s.sendall(f"GET /hub/login HTTP/1.1\r\nHost: localhost:{hub.port}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    assert b"200 OK" in data.split(b"\r\n", 1)[0] and b'name="password"' in data, data[:300]


def test_a_learners_server_listens_on_no_port_and_on_a_socket_only_the_hub_reaches(shell_hub, hub_tmp):
    """The server's only listening socket is a Unix socket in its own mount namespace: it holds no TCP port
    (which a process of anyone's could take the moment the server died), and another learner reaches neither
    that socket nor the folder it lies in."""
    hub, tokens = shell_hub
    out = kernel_run(hub, FINN, tokens[FINN], "import json, os\n"
                     "print('__OUT__' + json.dumps({'url': os.environ['JUPYTERHUB_SERVICE_URL'], 'server': os.getppid()}))\n")
    assert out["url"].startswith("http+unix://"), out
    sock = urllib.parse.unquote(urllib.parse.urlsplit(out["url"]).netloc)
    assert sock == f"/run/mha-hub/{FINN}/jupyter-server.sock", out
    assert not ports_held_by({out["server"]}), f"{FINN}'s server listens on TCP: {ports_held_by({out['server']})}"
    # Another learner, from her kernel (her own namespace): neither through the server's root nor by the path.
    probe = kernel_run(hub, TESS, tokens[TESS], (
        "import json, socket\ntried = {}\n"
        f"for path in ({'/proc/%d/root%s' % (out['server'], sock)!r}, {sock!r}):\n"
        "    s = socket.socket(socket.AF_UNIX)\n"
        "    try:\n"
        "        s.connect(path); tried[path] = 'connected'\n"
        "    except OSError as exc:\n"
        "        tried[path] = type(exc).__name__\n"
        "    finally:\n"
        "        s.close()\n"
        "print('__OUT__' + json.dumps(tried))\n"))
    assert "connected" not in probe.values(), f"{TESS} reached {FINN}'s server: {probe}"
    # The learner puts a link to a root-only socket where their server's socket was: the proxy (root) must not
    # follow it. It connects to the socket the hub holds, which the server still listens on.
    secret_dir = hub_tmp / f"secret-{hub.port}"  # removed with the session's folder, even after a crash
    secret_dir.mkdir(mode=0o700)
    secret = socket.socket(socket.AF_UNIX)
    try:
        secret.bind(str(secret_dir / "root-only.sock"))
        secret.listen(8)
        secret.settimeout(0.2)
        kernel_run(hub, FINN, tokens[FINN], "import json, os\n"
                   f"os.unlink({sock!r}); os.symlink({str(secret_dir / 'root-only.sock')!r}, {sock!r})\n"
                   "print('__OUT__' + json.dumps({'link': os.readlink(" f"{sock!r}" ")}))\n")
        answers = []
        for _ in range(3):
            try:
                answers.append(hub.server_request(FINN, "GET", "/api/status", tokens[FINN], timeout=10).status)
            except OSError as exc:  # the old route (through the server's root) hung here: the link's socket took it
                answers.append(type(exc).__name__)
        try:
            secret.accept()
            reached = True
        except (TimeoutError, socket.timeout):
            reached = False
        assert not reached, f"a request to {FINN}'s origin reached a root-only socket through his link"
        assert answers == [200, 200, 200], f"{FINN}'s own server stopped answering: {answers}"
    finally:
        secret.close()
        (secret_dir / "root-only.sock").unlink(missing_ok=True)
        secret_dir.rmdir()


def test_a_learner_who_kills_their_server_and_takes_its_socket_serves_nothing(shell_hub):
    hub, tokens = shell_hub
    token = tokens[FINN]
    # In the kernel: a detached process kills the server (the kernel's parent) and, the moment it is
    # gone, listens at the server's socket path in its namespace (and on its port, were it on one),
    # answering with its own page.
    code = (
        "import os, sys, json, subprocess, urllib.parse\n"
        "url = urllib.parse.urlsplit(os.environ['JUPYTERHUB_SERVICE_URL'])\n"
        "where = urllib.parse.unquote(url.netloc) if url.scheme == 'http+unix' else str(url.port)\n"
        "script = r'''\nimport os, signal, socket, sys, time\n"
        "where, server = sys.argv[1], int(sys.argv[2])\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "os.kill(server, signal.SIGKILL)\n"
        "end = time.monotonic() + 40\n"
        "while time.monotonic() < end:\n"
        "    try:\n"
        "        if where.startswith('/'):\n"
        "            s = socket.socket(socket.AF_UNIX)\n"
        "            try: os.unlink(where)\n"
        "            except OSError: pass\n"
        "            s.bind(where)\n"
        "        else:\n"
        "            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(('127.0.0.1', int(where)))\n"
        "        s.listen(16); break\n"
        "    except OSError:\n"
        "        s.close(); time.sleep(0.001)\n"
        "while True:\n"
        "    c, _ = s.accept(); c.recv(4096)\n"
        "    c.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Type: text/html\\r\\nContent-Length: 25\\r\\n\\r\\n<html>FINNS OWN PAGE</html>'); c.close()\n"
        "'''\n"
        "subprocess.Popen([sys.executable, '-c', script, where, str(os.getppid())], start_new_session=True,"
        " stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "print('__OUT__' + json.dumps({'where': where}))\n")
    kernel_run(hub, FINN, token, code)
    seen = []
    end = time.monotonic() + 12
    while time.monotonic() < end:
        try:
            resp = hub.server_request(FINN, "GET", "/api/status", token, timeout=5)
            seen.append((resp.status, resp.text[:80]))
        except OSError as exc:
            seen.append((None, str(exc)))
        time.sleep(0.05)
    assert not any("FINNS OWN PAGE" in text for _, text in seen), f"{FINN}'s page was served on his origin: {seen[:5]}"
    assert not wait_no_processes(FINN, timeout=5), "the learner's processes outlived their server's death"
    hub.start_server(FINN, token)  # the learner gets a server again
    model = hub.api("GET", f"/users/{FINN}", token).json()
    assert model["servers"][""]["ready"]


def test_the_room_view_shows_a_hostile_polls_reply_as_text(shell_hub, hub_tmp):
    """A fake poll (on the instructor's own loopback port, as a learner's squatter would) answers with markup."""
    hub, tokens = shell_hub
    payload = "<img src=x onerror=alert(document.domain)>"
    code = (
        "import json, os, threading\n"
        "from http.server import BaseHTTPRequestHandler, HTTPServer\n"
        f"PAYLOAD = {payload!r}\n"
        "class H(BaseHTTPRequestHandler):\n"
        "    def do_GET(self):\n"
        "        body = json.dumps({'exercise': PAYLOAD, 'window_s': PAYLOAD, 'present': PAYLOAD, 'passed': PAYLOAD,\n"
        "                           'mistakes': {PAYLOAD: PAYLOAD}, 'other': PAYLOAD, 'not_tried': PAYLOAD}).encode()\n"
        "        self.send_response(200); self.send_header('Content-Type', 'application/json');\n"
        "        self.send_header('Content-Length', str(len(body))); self.end_headers(); self.wfile.write(body)\n"
        "    def log_message(self, *a): pass\n"
        "srv = HTTPServer(('127.0.0.1', 0), H)\n"
        "threading.Thread(target=srv.serve_forever, daemon=True).start()\n"
        "os.environ['MHA_POLL_URL'] = f'http://127.0.0.1:{srv.server_port}/services/mha-poll/'\n"
        "from mha_classroom.quiz.instructor import room_view\n"
        "view = room_view('03', show=False)\n"
        "print('__OUT__' + json.dumps({'html': view.output.value}))\n")
    out = kernel_run(hub, TESS, tokens[TESS], code)
    page = out["html"]
    assert "mha-room-table" in page, page[:500]  # the reply was shown, as data
    assert "<img" not in page, f"the poll's markup is in the instructor's page: {page[:800]}"


#: Kernel code: N busy processes, each spinning from START to START + SECONDS (wall-clock times the test gives both
#: learners) and reporting the CPU time it got inside that window, so the two learners share one window whatever
#: else the machine runs and however long their kernels and processes took to start. Each process is in a session
#: of its own: the kernel's autogroups share the cores by session, so a learner who starts many sessions would get
#: many shares without a group of their own for the scheduler.
BUSY = r"""
import json, subprocess, time
spin = (
    "import json, time\n"
    "while time.time() < %(start)r: time.sleep(0.01)\n"
    "late, c0 = time.time() - %(start)r, time.process_time()\n"
    "while time.time() < %(start)r + %(s)r: pass\n"
    "print(json.dumps({'cpu_s': time.process_time() - c0, 'late_s': late}))\n"
)
kids = [subprocess.Popen(["python3", "-c", spin % {"start": START, "s": SECONDS}], stdout=subprocess.PIPE,
                         start_new_session=True) for _ in range(N)]
got = [json.loads(k.communicate()[0]) for k in kids]
print("__OUT__" + json.dumps({"cpu_s": sum(g["cpu_s"] for g in got), "wall_s": SECONDS,
                              "late_s": max(g["late_s"] for g in got)}))
"""
#: Seconds from the test's start to the window's: time for both kernels to start and fork their processes.
BUSY_LEAD_S = 25


def test_a_learner_with_many_busy_processes_gets_no_more_than_their_share_of_the_cores(shell_hub):
    """Finn runs 12 busy processes while Tess runs 2, on a hub that caps each learner at one core
    (MHA_HUB_CPU=1). Shared by process, Finn would get 6 times Tess's time (12 of 14 runnable
    processes) and more than a core; shared by learner, they get the same, and Finn one core at most."""
    hub, tokens = shell_hub
    import threading

    got = {}
    start = time.time() + BUSY_LEAD_S

    def run(name, n):
        got[name] = kernel_run(hub, name, tokens[name], f"N, SECONDS, START = {n}, 4, {start!r}\n" + BUSY)

    threads = [threading.Thread(target=run, args=(FINN, 12)), threading.Thread(target=run, args=(TESS, 2))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    finn, tess = got[FINN], got[TESS]
    print(f"\n{FINN}: 12 busy processes got {finn['cpu_s']:.2f} CPU-s in the same {finn['wall_s']} s as "
          f"{TESS}: 2 got {tess['cpu_s']:.2f} CPU-s (load {os.getloadavg()[0]:.2f})")
    for name, run_ in ((FINN, finn), (TESS, tess)):
        assert run_["late_s"] < 0.5, f"{name}'s processes started {run_['late_s']:.1f} s into the window: {run_}"
    # The cap: one core's time (the scheduler's 100 ms periods round up a little).
    assert finn["cpu_s"] <= 1.15 * finn["wall_s"], f"{FINN} used more than one core: {finn}"
    # The share: per learner, not per process.
    assert tess["cpu_s"] >= 0.6 * finn["cpu_s"], f"{TESS} got much less of the cores than {FINN}: {tess} against {finn}"
    assert hub.request("GET", "/hub/health").status == 200


def test_a_learner_cannot_fork_fill_memory_or_scratch_past_their_limits(shell_hub):
    hub, tokens = shell_hub
    code = (
        "import json, os, subprocess, time, resource\n"
        "out = {'nproc': resource.getrlimit(resource.RLIMIT_NPROC)[0]}\n"
        # processes: fork until refused (each child sleeps), then end them
        "kids = []\n"
        "try:\n"
        "    for i in range(2000):\n"
        "        kids.append(subprocess.Popen(['sleep', '30']))\n"
        "except OSError as e:\n"
        "    out['fork_refused_after'] = len(kids)\n"
        "for k in kids: k.kill(); k.wait()\n"
        # scratch: /dev/shm and /tmp are the learner's own, 32 MB each
        "for d in ('/dev/shm', '/tmp'):\n"
        "    r = subprocess.run(['fallocate', '-l', '1G', d + '/fill'], capture_output=True, text=True)\n"
        "    out[d] = r.returncode\n"
        "    subprocess.run(['rm', '-f', d + '/fill'])\n"
        # memory: a child that takes 1 GB is killed by the memory limit
        "r = subprocess.run(['python3', '-c', 'x = bytearray(1024**3); print(len(x))'], capture_output=True, text=True)\n"
        "out['mem_rc'] = r.returncode\n"
        "print('__OUT__' + json.dumps(out))\n")
    out = kernel_run(hub, FINN, tokens[FINN], code)
    assert out["nproc"] == 128, out
    assert out.get("fork_refused_after", 2000) < 128, f"{FINN} made 2000 processes: {out}"
    assert out["/dev/shm"] != 0 and out["/tmp"] != 0, f"1 GB fitted in the scratch space: {out}"
    assert out["mem_rc"] != 0, f"a 1 GB process ran under a 400 MB limit: {out}"
    assert hub.request("GET", "/hub/health").status == 200
    # The learner's server is still up too: only the hog died.
    assert hub.server_request(FINN, "GET", "/api/status", tokens[FINN]).status == 200


def test_poll_posts_are_rate_limited_and_capped_per_learner(shell_hub):
    hub, tokens = shell_hub
    code = (
        "import json\nfrom mha_classroom.quiz import poll\n"
        "sent = [poll.send('03-what-is-a-head', [i % 3]) for i in range(300)]\n"
        "print('__OUT__' + json.dumps({'stored': sum(sent)}))\n")
    out = kernel_run(hub, FINN, tokens[FINN], code)
    assert out["stored"] < 100, f"300 posts in a burst: {out['stored']} stored"
    db = sqlite3.connect(f"file:{hub.state / 'poll' / 'poll.sqlite3'}?mode=ro", uri=True)
    try:
        per_learner = db.execute("SELECT MAX(n) FROM (SELECT COUNT(*) AS n FROM answers GROUP BY learner)").fetchone()[0]
    finally:
        db.close()
    assert per_learner <= 200, per_learner


# --------------------------------------------------------------------------- cookies


def test_plain_http_on_a_domain_is_refused_and_behind_tls_the_login_cookie_is_host_only(hub_cleanup, hub_tmp):
    refused = new_hub(hub_cleanup, hub_tmp, "http-domain", MHA_HUB_DOMAIN="class.test").run_to_exit(timeout=90)
    said = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "cookie" in said, said[-1500:]
    hub = new_hub(hub_cleanup, hub_tmp, "tls-in-front", MHA_HUB_DOMAIN="class.test", MHA_HUB_ALLOW_HTTP="1").start()
    try:
        page = hub.request("GET", "/hub/login", host="class.test", headers={"X-Forwarded-Proto": "https"})
        import re
        import urllib.parse

        form = {"username": ERIN, "password": PASSWORD}
        match = re.search(r'name="_xsrf" value="([^"]+)"', page.text)
        if match:
            form["_xsrf"] = match.group(1)
        cookie = "; ".join(v.split(";", 1)[0] for k, v in page.headers.items() if k.lower() == "set-cookie")
        login = hub.request("POST", "/hub/login", host="class.test", body=urllib.parse.urlencode(form).encode(),
                            headers={"Content-Type": "application/x-www-form-urlencoded", "Cookie": cookie,
                                     "X-Forwarded-Proto": "https", "Origin": "https://class.test",
                                     "Referer": "https://class.test/hub/login"})
        cookies = [v for k, v in login.headers.items() if k.lower() == "set-cookie"]
        login_cookie = [c for c in cookies if "jupyterhub-hub-login" in c]
        assert login.status in (302, 303) and login_cookie, (login.status, cookies)
        assert all(c.startswith("__Host-") and "Secure" in c and "Domain=" not in c for c in login_cookie), login_cookie
    finally:
        hub.ctrl_c()


# --------------------------------------------------------------------------- leftovers, PAM mode

@pytest.fixture
def pam_account(hub_cleanup, hub_tmp):
    """A class member's own Unix account, as an administrator makes it (useradd -m, a password)."""
    homes = hub_tmp / "pam-homes"
    homes.mkdir(mode=0o711, exist_ok=True)
    yield make_pam_account(hub_cleanup, PAM_LEARNER, homes / PAM_LEARNER)
    hub_cleanup.remove_account(PAM_LEARNER)


def test_in_pam_mode_a_new_session_sleep_dies_with_its_server_and_with_the_hub(hub_cleanup, hub_tmp, pam_account):
    hub = new_hub(hub_cleanup, hub_tmp, "pam", MHA_HUB_AUTH="pam", MHA_HUB_PASSWORD=None, MHA_HUB_GROUP=PAM_GROUP)
    hub.learners.add(pam_account)
    hub.start()
    leave = ("import subprocess, json\n"
             "p = subprocess.Popen(['sleep', '400'], start_new_session=True)\n"
             "print('__OUT__' + json.dumps({'pid': p.pid}))\n")

    token = pam_login_and_start(hub, pam_account)
    pid = kernel_run(hub, pam_account, token, leave)["pid"]
    assert Path(f"/proc/{pid}").exists()
    hub.stop_server(pam_account, token)
    left = wait_no_processes(pam_account, timeout=5)
    assert not left, f"{pam_account}'s sleep outlived the server's stop: {left}"
    token = pam_login_and_start(hub, pam_account)
    pid = kernel_run(hub, pam_account, token, leave)["pid"]
    took = hub.ctrl_c()
    left = wait_no_processes(pam_account, timeout=3)
    assert not left, f"{pam_account}'s sleep outlived the hub's Ctrl-C ({took:.1f} s): {left}"


def test_on_localhost_a_learners_page_cannot_toss_the_login_cookie(shell_hub, hub_tmp):
    """The trial mode (plain HTTP on localhost): a page on a learner's origin (NAME.localhost, any port:
    cookies ignore ports) sets the hub's login cookie, with his own session, for the whole of localhost.
    Chromium refuses a cookie for Domain=localhost from NAME.localhost, so the victim stays herself."""
    import http.server
    import socketserver
    import threading

    from hubctl import chromium, free_port
    from test_hub_origins import browser_login

    hub, tokens = shell_hub
    assert hub.login(FINN).status in (302, 303)
    finns = hub.cookies[FINN]["jupyterhub-hub-login"]

    class Toss(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            for domain in ("localhost", ".localhost"):
                self.send_header("Set-Cookie", f"jupyterhub-hub-login={finns}; Domain={domain}; Path=/hub/; HttpOnly")
            self.send_header("Content-Type", "text/html")
            self.end_headers()
            self.wfile.write(b"<html><title>finn</title>cookies for everyone</html>")

        def log_message(self, *args):
            pass

    port = free_port()
    server = socketserver.ThreadingTCPServer(("127.0.0.1", port), Toss)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with chromium(hub_tmp / "chromium-toss") as context:
            page = context.new_page()
            browser_login(page, hub, TESS)
            page.goto(f"http://{FINN}.localhost:{port}/toss", wait_until="domcontentloaded")
            page.goto(hub.url("/hub/home"), wait_until="domcontentloaded")
            cookies = {c["name"]: c for c in context.cookies(hub.url("/hub/home"))}
            text = page.content()
    finally:
        server.shutdown()
        server.server_close()
    assert TESS in text and FINN not in text, f"after {FINN}'s page the hub page is not {TESS}'s: {text[:600]}"
    tossed = [c for c in context_cookies_values(cookies) if c == finns]
    assert not tossed, f"{FINN}'s login cookie reached the hub's origin in {TESS}'s browser: {cookies}"


def context_cookies_values(cookies: dict) -> list[str]:
    return [c["value"] for c in cookies.values()]


def test_after_the_hub_is_killed_its_restart_ends_the_leftovers_first(hub_cleanup, hub_tmp):
    """The hub killed (SIGKILL: no cleanup at all), then started again: what the learner left, and the
    earlier hub's own services, are ended before anything listens, and the poll is the real one."""
    import signal

    hub = new_hub(hub_cleanup, hub_tmp, "killed").start()
    token = hub.token(ERIN)
    hub.start_server(ERIN, token)
    log = squatter_log(hub, ERIN)
    log.unlink(missing_ok=True)
    script = str(Path(hub.env["MHA_HUB_HOMES"]) / ERIN / "squat.py")
    kernel_run(hub, ERIN, token, start_squatter_code(script, hub_ports(hub), str(log)))
    time.sleep(1.5)
    os.kill(hub.proc.pid, signal.SIGKILL)
    hub.proc.wait()
    time.sleep(1)
    assert pids_of_uid(uid_of(ERIN)), "the learner's processes should still run after the hub was killed"
    hub.start()
    left = wait_no_processes(ERIN, timeout=3)
    assert not left, f"the restarted hub left the killed hub's learner processes running: {left}"
    token = hub.token(ERIN)
    hub.start_server(ERIN, token)
    assert_poll_is_real(hub, ERIN, token)
    heard = log.read_bytes() if log.exists() else b""
    assert not heard, f"the squatter was sent: {heard[:500]!r}"
    assert "ended what an earlier hub left running" in hub.log()
    hub.stop_server(ERIN, token)
    hub.ctrl_c()
