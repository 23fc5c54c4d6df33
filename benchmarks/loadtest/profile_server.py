"""One learner's held change, end to end, with no hub and no proxy: the CPU of the server and the kernel per change.

    python -m benchmarks.loadtest.profile_server                  # 300 changes of notebook 03's head count
    python -m benchmarks.loadtest.profile_server --server-option=--ServerApp.kernel_websocket_connection_class=...
    python -m benchmarks.loadtest.profile_server --py-spy /path/to/py-spy   # where the server's CPU goes (raw stacks)
    python -m benchmarks.loadtest.profile_server --py-spy /path/to/py-spy --spy-on kernel   # the kernel's, by thread
    python -m benchmarks.loadtest.profile_server --changes 250 --pace-ms 60 --idle-s 12 \
        --server-option=--ServerApp.kernel_manager_class=mha_classroom.server_io.CourseKernelManager   # the watcher A/B

Starts ``jupyter_server`` on loopback (``JUPYTER_WIDGETS_ECHO=0``, as the class hub starts servers), runs notebook
03 in a kernel through the kernel websocket (``kernel_client.KernelClient``, the v1 protocol JupyterLab speaks),
then changes the head count to settings the page holds, one change at a time, each waiting for the kernel's idle.
Prints JSON: CPU per change of the server, the kernel and this client (``psutil``, user + system), wall time per
change and its median. Back-to-back changes: each process's idle CPU over the run is counted in, so compare runs
of the same length. The wall time is this harness's, not a learner's: here each change comes back idle about 44 ms
after it was sent, the server's Nagle algorithm holding the kernel's second message (idle) until this client's
delayed acknowledgement (2 ms with ``NoDelayConnection``, tried in commit 4496e76); through the hub's proxy the load
test measures 4-5 ms, and in Chromium the browser tests saw no steady difference, so the course leaves it. The class's figures come from ``python -m benchmarks.loadtest`` (the hub, its proxy, 16-32
learners on two cores).
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import requests

from benchmarks.loadtest.cpu import cpu_seconds
from benchmarks.loadtest.kernel_client import KernelClient
from benchmarks.loadtest.run import HEAD_COUNT_INDICES, ROOT, code_cells


def _cpu(proc: psutil.Process) -> float:
    """Its CPU so far, to the nanosecond (``cpu_seconds``): a few hundred changes of a few ms each are too
    few for psutil's 10 ms clock ticks."""
    return cpu_seconds(proc.pid)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=300, help="changes timed (default 300), after 20 untimed")
    parser.add_argument("--server-option", action="append", default=[], help="one more option for jupyter_server")
    parser.add_argument("--py-spy", help="py-spy's path: record the server's stacks while the changes run")
    parser.add_argument("--spy-on", choices=("server", "kernel"), default="server",
                        help="whose stacks --py-spy records (default: the server)")
    parser.add_argument("--pace-ms", type=float, default=0.0,
                        help="start a change at most this often (default 0: back to back); with it, runs whose changes "
                             "come back at different speeds spend the same wall time per change")
    parser.add_argument("--idle-s", type=float, default=0.0,
                        help="first measure each process idle for this long, and subtract that rate (default 0: not)")
    args = parser.parse_args(argv)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    token = secrets.token_hex(8)
    work = Path(tempfile.mkdtemp(prefix="profile-server-"))
    env = dict(os.environ, JUPYTER_WIDGETS_ECHO="0", JUPYTER_CONFIG_DIR=str(work / "config"),
               JUPYTER_RUNTIME_DIR=str(work / "runtime"))
    cmd = [sys.executable, "-m", "jupyter_server", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
           f"--IdentityProvider.token={token}", "--ServerApp.base_url=/user/x/", f"--ServerApp.root_dir={ROOT}",
           *args.server_option] + (["--allow-root"] if os.geteuid() == 0 else [])
    with open(work / "server.log", "wb") as log:
        server = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                requests.get(f"{base}/user/x/api/status", headers={"Authorization": f"token {token}"}, timeout=1)
                break
            except requests.RequestException:
                time.sleep(0.2)
        client = KernelClient(base, "x", token, "notebooks/03_multiple_heads.ipynb")
        for source in code_cells("03_multiple_heads"):
            out = client.execute(source)
            if out["errors"]:
                raise SystemExit(f"notebook 03 failed in the kernel: {out['errors']}")
        comm = client.find_widget("ToggleButtonsModel", description="heads H")
        held = client.held_by_page(comm)
        values = [i for i in HEAD_COUNT_INDICES if i in held]
        if len(values) < 2:
            raise SystemExit(f"the page holds {held}: nothing to switch between")
        srv = psutil.Process(server.pid)
        kernel = next(p for p in srv.children(recursive=True) if "ipykernel" in " ".join(p.cmdline()))
        me = psutil.Process()
        for i in range(20):
            client.widget_update(comm, {"index": values[i % len(values)]})
        spy = None
        if args.py_spy:
            spied = server.pid if args.spy_on == "server" else kernel.pid
            spy = subprocess.Popen([args.py_spy, "record", "-p", str(spied), "-r", "500", "-f", "raw", "-o",
                                    str(work / f"{args.spy_on}-stacks.txt"), "--nonblocking", "--threads"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(1)
        idle_server = idle_kernel = 0.0
        if args.idle_s > 0:
            i0, j0, t0 = _cpu(srv), _cpu(kernel), time.perf_counter()
            time.sleep(args.idle_s)
            t1 = time.perf_counter()
            idle_server, idle_kernel = (_cpu(srv) - i0) / (t1 - t0), (_cpu(kernel) - j0) / (t1 - t0)
        s0, k0, m0, w0 = _cpu(srv), _cpu(kernel), _cpu(me), time.perf_counter()
        seconds = []
        for i in range(args.changes):
            took, replies = client.widget_update(comm, {"index": values[(i + 1) % len(values)]})
            if replies:
                raise SystemExit(f"the kernel sent {replies} widget messages back for a held setting")
            seconds.append(took)
            time.sleep(max(0.0, args.pace_ms / 1000 - took))
        s1, k1, m1, w1 = _cpu(srv), _cpu(kernel), _cpu(me), time.perf_counter()
        if spy:
            spy.send_signal(2)
            spy.wait(30)
        n = args.changes
        seconds.sort()
        print(json.dumps({"changes": n, "held": held, "server_ms": round((s1 - s0 - idle_server * (w1 - w0)) / n * 1e3, 2),
                          "kernel_ms": round((k1 - k0 - idle_kernel * (w1 - w0)) / n * 1e3, 2),
                          "idle_subtracted_ms_per_s": [round(idle_server * 1e3, 2), round(idle_kernel * 1e3, 2)], "client_ms": round((m1 - m0) / n * 1e3, 2),
                          "wall_ms_per_change": round((w1 - w0) / n * 1e3, 2), "median_ms": round(seconds[n // 2] * 1e3, 2),
                          "options": args.server_option, "stacks": str(work / f"{args.spy_on}-stacks.txt") if spy else None,
                          "load_average": os.getloadavg()}))
        client.close()
    finally:
        server.terminate()
        server.wait(20)
        if not args.py_spy:
            shutil.rmtree(work, ignore_errors=True)  # the stacks, when asked for, stay for reading
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
