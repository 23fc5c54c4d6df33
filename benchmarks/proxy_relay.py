"""What relaying a control's change costs a proxy: configurable-http-proxy (the hub's) against nginx.

A change crosses the hub's proxy as two websocket frames on a connection already open: the page's message in
(about 700 bytes) and the kernel's ``idle`` back (about 300). This measures only that: ``--learners`` websockets
through the proxy to a small echo server, each sending a frame every ``--pace`` seconds (staggered, as
learners at their own pace) and waiting for its answer. The proxy's CPU (every thread of its processes,
``/proc/PID/task/*/schedstat``, to the nanosecond) over the run, less its idle rate measured just before, per
exchange. Arms run interleaved, ``--rounds`` times each, once the machine is quiet (``--quiet-load``).

    python -m benchmarks.proxy_relay --learners 32 --changes 10 --pace 3 --rounds 2

Needs ``deploy/node_modules`` (``deploy/start.sh --build-only``) and, for the nginx arm, Debian's ``nginx``.
The echo server and the learners run in this process; their CPU is not counted.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from tornado import httpserver, web, websocket

from benchmarks.loadtest.cpu import cpu_seconds
from benchmarks.loadtest.proxy_ab import nginx_chp
from benchmarks.loadtest.run import free_port

HERE = Path(__file__).resolve().parent.parent
CHP = HERE / "deploy" / "node_modules" / ".bin" / "configurable-http-proxy"
IN_FRAME = b"m" * 700
OUT_FRAME = b"i" * 300


class Echo(websocket.WebSocketHandler):
    def on_message(self, message):
        self.write_message(OUT_FRAME, binary=True)


def pids_of(root: int) -> list[int]:
    """``root`` and its children (nginx's workers)."""
    out = [root]
    try:
        for line in Path(f"/proc/{root}/task/{root}/children").read_text().split():
            out.append(int(line))
    except OSError:
        pass
    return out


def cpu_of(root: int) -> float:
    return sum(cpu_seconds(p) for p in pids_of(root))


def start_chp(port: int, backend: int, workdir: Path) -> subprocess.Popen:
    return subprocess.Popen([str(CHP), "--ip", "127.0.0.1", "--port", str(port), "--api-ip", "127.0.0.1",
                             "--api-port", str(free_port()), "--default-target", f"http://127.0.0.1:{backend}",
                             "--log-level", "warn"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env={**os.environ, "CONFIGPROXY_AUTH_TOKEN": "bench"})


def start_nginx(port: int, backend: int, workdir: Path) -> subprocess.Popen:
    """nginx as the class's A/B runs it (``loadtest/proxy_ab/nginx_chp.py``), with one route: everything to ``backend``."""
    conf = workdir / "nginx.conf"
    conf.write_text(nginx_chp.config({"/": {"target": f"http://127.0.0.1:{backend}"}}, listen=f"127.0.0.1:{port}",
                                     host_routing=False, work=workdir))
    return nginx_chp.start_nginx(conf)


async def wait_port(port: int, timeout: float = 20.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            _, w = await asyncio.open_connection("127.0.0.1", port)
            w.close()
            return
        except OSError:
            await asyncio.sleep(0.1)
    raise RuntimeError(f"nothing listens on port {port}")


async def learner(port: int, changes: int, pace: float, rng: random.Random, ready: asyncio.Event, rtts: list):
    ws = await websocket.websocket_connect(f"ws://127.0.0.1:{port}/ws")
    await ready.wait()
    await asyncio.sleep(rng.uniform(0, pace))
    for _ in range(changes):
        t = time.monotonic()
        await ws.write_message(IN_FRAME, binary=True)
        await ws.read_message()
        rtts.append(time.monotonic() - t)
        await asyncio.sleep(max(0.0, pace - (time.monotonic() - t)))
    ws.close()


async def one_run(kind: str, learners: int, changes: int, pace: float, backend: int, idle_s: float) -> dict:
    port = free_port()
    with tempfile.TemporaryDirectory() as d:
        proc = (start_chp if kind == "chp" else start_nginx)(port, backend, Path(d))
        try:
            await wait_port(port)
            ready = asyncio.Event()
            rtts: list[float] = []
            rng = random.Random(1)
            tasks = [asyncio.ensure_future(learner(port, changes, pace, rng, ready, rtts)) for _ in range(learners)]
            await asyncio.sleep(2.0)  # every websocket open
            c0 = cpu_of(proc.pid)
            await asyncio.sleep(idle_s)
            idle_rate = (cpu_of(proc.pid) - c0) / idle_s
            c1, t1 = cpu_of(proc.pid), time.monotonic()
            ready.set()
            await asyncio.gather(*tasks)
            c2, t2 = cpu_of(proc.pid), time.monotonic()
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=20)
    n = len(rtts)
    busy = (c2 - c1) - idle_rate * (t2 - t1)
    return {"proxy": kind, "exchanges": n, "cpu_ms_per_change": 1e3 * busy / n, "idle_ms_per_s": 1e3 * idle_rate,
            "rtt_p50_ms": 1e3 * statistics.median(rtts), "rtt_p95_ms": 1e3 * sorted(rtts)[int(0.95 * (n - 1))]}


async def main_async(args) -> list[dict]:
    backend = free_port()
    server = httpserver.HTTPServer(web.Application([(r"/ws", Echo)]))
    server.listen(backend, "127.0.0.1")
    out = []
    for r in range(args.rounds):
        for kind in args.proxies:
            res = await one_run(kind, args.learners, args.changes, args.pace, backend, args.idle_s)
            res["round"] = r + 1
            out.append(res)
            print(f"round {r + 1} {kind:5s}: {res['cpu_ms_per_change']:.3f} ms CPU per change "
                  f"({res['exchanges']} changes; idle {res['idle_ms_per_s']:.2f} ms/s), "
                  f"round trip p50 / p95 {res['rtt_p50_ms']:.2f} / {res['rtt_p95_ms']:.2f} ms", flush=True)
    server.stop()
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--learners", type=int, default=32)
    p.add_argument("--changes", type=int, default=10)
    p.add_argument("--pace", type=float, default=3.0, help="seconds between one learner's changes")
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--idle-s", type=float, default=5.0)
    p.add_argument("--proxies", nargs="+", default=["chp", "nginx"], choices=["chp", "nginx"])
    p.add_argument("--out", help="also write the runs here as JSON (with the load averages)")
    p.add_argument("--quiet-load", type=float, default=1.0,
                   help="wait (up to 10 minutes) for a 1-minute load average under this before measuring; 0: do not wait")
    args = p.parse_args()
    for name in ("learners", "changes", "rounds"):
        if getattr(args, name) < 1:
            p.error(f"--{name}={getattr(args, name)}: give a whole number of 1 or more")
    if args.idle_s <= 0 or args.pace < 0:
        p.error(f"--idle-s={args.idle_s} must be over 0 (the idle rate is measured over it) and --pace={args.pace} "
                "0 or more")
    waited = time.monotonic()
    while args.quiet_load > 0 and os.getloadavg()[0] >= args.quiet_load and time.monotonic() - waited < 600:
        time.sleep(5)
    print(f"waited {time.monotonic() - waited:.0f} s for a 1-minute load under {args.quiet_load}", flush=True)
    before = os.getloadavg()
    print("load average before:", " ".join(f"{x:.2f}" for x in before), flush=True)
    runs = asyncio.run(main_async(args))
    after = os.getloadavg()
    print("load average after:", " ".join(f"{x:.2f}" for x in after), flush=True)
    for kind in args.proxies:
        per = [r["cpu_ms_per_change"] for r in runs if r["proxy"] == kind]
        print(f"{kind}: median {statistics.median(per):.3f} ms CPU per change over {len(per)} runs", flush=True)
    if args.out:
        Path(args.out).write_text(json.dumps({"settings": vars(args), "load_average": {"before": before, "after": after},
                                              "runs": runs}, indent=1) + "\n")


if __name__ == "__main__":
    main()
