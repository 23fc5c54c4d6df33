"""Starting and stopping the real hub: Ctrl-C stops everything it started within 10 s, even after
its proxy was killed and restarted once; HTTPS from the instructor's certificate serves learners."""

from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import time

from pathlib import Path

import pytest
from hubctl import ERIN, FINN, listening_ports, new_hub

pytestmark = pytest.mark.hub

SHUTDOWN_LIMIT_S = 10.0


def test_ctrl_c_after_a_proxy_restart_stops_every_process_within_10_s(hub_cleanup, hub_tmp):
    hub = new_hub(hub_cleanup, hub_tmp, "shutdown").start()
    tokens = {name: hub.token(name) for name in (ERIN, FINN)}
    for name, token in tokens.items():
        hub.start_server(name, token)
        # A kernel too: what a learner leaves running.
        resp = hub.server_request(name, "POST", "/api/kernels", token, body=b"{}", headers={"Content-Type": "application/json"})
        assert resp.status == 201, resp.text[:300]
    first = int((hub.state / "proxy.pid").read_text())
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 30
    second = first
    while time.monotonic() < deadline:
        time.sleep(0.3)
        try:
            second = int((hub.state / "proxy.pid").read_text())
        except (OSError, ValueError):
            continue
        # The hub itself holds the port's IPv6 twin ([::1], relayed to the proxy): "listening" is not
        # yet "the proxy answers", so ask.
        try:
            if second != first and hub.port in listening_ports() and hub.request("GET", "/hub/health").status == 200:
                break
        except OSError:
            continue
    assert second != first, "the hub did not restart its proxy"
    assert hub.server_request(ERIN, "GET", "/api/status", tokens[ERIN]).status == 200  # routes restored
    running = hub.our_processes()
    assert len(running) >= 6, running  # proxy, poll, culler, two servers, two kernels
    took = hub.ctrl_c(timeout=30)
    print(f"Ctrl-C to the hub's exit: {took:.1f} s, with {len(running)} processes running before")
    time.sleep(0.3)
    left, ports = hub.our_processes(), hub.our_ports_listening()
    assert hub.proc.returncode is not None, "the hub itself did not exit"
    assert not left and not ports, f"after Ctrl-C: processes {left}, ports {ports}\n{hub.log_tail(60)}"
    assert took < SHUTDOWN_LIMIT_S, f"Ctrl-C took {took:.1f} s (limit {SHUTDOWN_LIMIT_S:.0f} s)"


def test_a_proxy_socket_left_by_a_killed_proxy_does_not_stop_the_next_hub_on_its_port(hub_cleanup, hub_tmp):
    """A proxy ended by SIGKILL leaves its API socket file in /run/mha-hub-proxy. A hub on the same port whose
    state folder holds no pid file for that proxy (a hub test before this one did exactly that) failed to start:
    the new proxy met EADDRINUSE. The hub now removes a socket file nobody answers on before its proxy starts."""
    hub = new_hub(hub_cleanup, hub_tmp, "stale-socket")
    path = Path("/run/mha-hub-proxy") / f"api-{hub.port}.sock"
    path.parent.mkdir(mode=0o700, exist_ok=True)
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(path))  # the file a killed proxy leaves: a socket that nothing listens on
    left.close()
    assert path.is_socket()
    hub.start()
    assert hub.request("GET", "/hub/health").status == 200
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))  # the new proxy's API answers on the same path
    finally:
        probe.close()
    assert "a proxy's API socket nobody answers on" in hub.log_tail(200)


def test_a_hub_started_with_ctrl_c_ignored_still_stops_everything_within_10_s(hub_cleanup, hub_tmp):
    """A hub started in the background of a script (no job control) inherits SIGINT ignored, and
    each service and server it starts would too: their stop, SIGINT first, then waits out each
    timeout (61 s for the two services, measured). The hub puts SIGINT back before it starts them."""
    hub = new_hub(hub_cleanup, hub_tmp, "sigint-ignored").start(sigint_ignored=True)
    token = hub.token(FINN)
    hub.start_server(FINN, token)
    ignored = []
    for line in hub.our_processes():
        pid = int(line.split()[0])
        try:
            status = open(f"/proc/{pid}/status").read()
        except OSError:
            continue
        ignore_mask = int(next(x for x in status.splitlines() if x.startswith("SigIgn:")).split()[1], 16)
        if ignore_mask & (1 << (signal.SIGINT - 1)):
            ignored.append(line)
    took = hub.ctrl_c(timeout=30)
    time.sleep(0.3)
    assert hub.proc.returncode is not None, "the hub itself did not exit"
    assert not hub.our_processes(), f"after Ctrl-C: {hub.our_processes()}"
    assert not ignored, f"processes the hub started with SIGINT ignored: {ignored}"
    assert took < SHUTDOWN_LIMIT_S, f"Ctrl-C took {took:.1f} s (limit {SHUTDOWN_LIMIT_S:.0f} s)"


@pytest.fixture(scope="module")
def certificate(hub_tmp):
    """A self-signed certificate for localhost and its learners' names, as an instructor would be given."""
    cert, key = hub_tmp / "hub.crt", hub_tmp / "hub.key"
    names = ",".join(f"DNS:{n}" for n in ("localhost", "*.localhost", f"{ERIN}.localhost", f"{FINN}.localhost"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", f"subjectAltName={names}", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True)
    os.chmod(key, 0o600)
    return cert, key


def test_https_from_the_instructors_certificate_serves_learners(hub_cleanup, hub_tmp, certificate):
    hub = new_hub(hub_cleanup, hub_tmp, "https", https=certificate).start()
    try:
        login = hub.login(ERIN)
        assert login.status in (302, 303), login.status
        cookies = [v for k, v in login.headers.items() if k.lower() == "set-cookie"]
        # The login cookie is domain-locked (cookie_host_prefix_enabled): __Host-, Secure, no Domain,
        # so no learner's subdomain can set or overwrite it.
        login_cookie = [c for c in cookies if "jupyterhub-hub-login" in c]
        assert len(login_cookie) == 1, cookies
        assert login_cookie[0].startswith("__Host-") and "Secure" in login_cookie[0] and "Domain=" not in login_cookie[0]
        token = hub.token(ERIN)
        hub.start_server(ERIN, token)
        # Verified TLS, for the name a browser uses: alice's own origin.
        resp = hub.server_request(ERIN, "GET", "/api/contents/course", token)
        assert resp.status == 200 and "00_welcome.ipynb" in resp.text
        # Plain HTTP on the same port gets no page.
        import http.client

        conn = http.client.HTTPConnection("127.0.0.1", hub.port, timeout=10)
        try:
            conn.request("GET", "/hub/login", headers={"Host": hub.host()})
            plain = conn.getresponse()
            assert plain.status >= 400 or b"<form" not in plain.read()
        except (ConnectionError, http.client.HTTPException, ssl.SSLError):
            pass
        finally:
            conn.close()
        hub.stop_server(ERIN, token)
    finally:
        took = hub.ctrl_c()
        assert took < SHUTDOWN_LIMIT_S, f"Ctrl-C took {took:.1f} s"
