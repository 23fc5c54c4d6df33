"""Where one control change's CPU time goes: notebook 03's head count, in a real kernel.

    python -m benchmarks.loadtest.profile_control          # prints JSON; the load test's report includes it
    python -m benchmarks.loadtest.profile_control --path /tmp/k6   # another ipykernel first on the kernel's path

Starts one kernel (the course's ``python3``, Unix-socket transport), builds the head
grid as notebook 03 does, then changes the head count inside the kernel: CPU time
(``time.process_time``) and wall time per change, widget messages really serialised and
sent on the kernel's comm. Two kinds of change: to a head count the group has not shown
before (its figure is built: ``first_time_*``), and to one it has (the group remembers
each setting's figure, ``widgets._base.remembered``: ``cpu_ms_*``). The parts are timed
alone: the maths (the layer and its weights) and the figure builder; the rest of a change
is the diff, the plain figure patched and its one message (``LiveFigure.show``).
One first-time change is profiled with cProfile (self time by module).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile

CODE = r"""
import cProfile, io, json, pstats, time
from mha_classroom.widgets.heads import HeadGrid, head_grid, head_weights
warm = head_grid(d_model=16, n_heads=4, seed=0)
for h in (1, 2, 8, 16, 4):
    warm.head_count.value = h      # warm-up in another group: first calls import and fill plotly's caches
def timed(grid, values):
    cpu, wall = [], []
    for h in values:
        c0, w0 = time.process_time(), time.perf_counter()
        grid.head_count.value = h
        cpu.append(time.process_time() - c0); wall.append(time.perf_counter() - w0)
    return cpu, wall
# A setting the group has not shown before (its figure is built), then settings it has (remembered).
first_cpu = []
for _ in range(%(rounds)d):
    fresh = head_grid(d_model=16, n_heads=4, seed=0)
    first_cpu += timed(fresh, [1, 2, 8, 16])[0]
grid = head_grid(d_model=16, n_heads=4, seed=0)
timed(grid, [1, 2, 8, 16])
cpu, wall = timed(grid, [1, 2, 4, 8, 16, 8, 4, 2] * %(rounds)d)
def part(fn, n=50):
    c0 = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - c0) / n
parts = {
    "maths: head_weights(16, 4)": part(lambda: head_weights(16, 4, seed=0)),
    "figure builder, first time: HeadGrid._build.__wrapped__(grid, 4)": part(lambda: HeadGrid._build.__wrapped__(grid, 4)),
    "figure builder, seen before: grid._build(4)": part(lambda: grid._build(4)),
}
prof = cProfile.Profile()
profiled = head_grid(d_model=16, n_heads=4, seed=0)
prof.enable(); profiled.head_count.value = 8; prof.disable()  # a first-time setting: every part of the path
s = io.StringIO()
stats = pstats.Stats(prof, stream=s)
stats.sort_stats("cumulative").print_stats(25)
t = io.StringIO()
pstats.Stats(prof, stream=t).sort_stats("tottime").print_stats(15)
sends = sum(v[1] for (f, l, fn), v in stats.stats.items() if fn == "send" and f.endswith("jupyter_client/session.py"))
total = sum(v[2] for v in stats.stats.values())
by_module = {}
for (file, line, fn), (cc, nc, tt, ct, callers) in stats.stats.items():
    key = ("plotly" if "/plotly/" in file else "ipywidgets/comm" if any(m in file for m in ("/ipywidgets/", "/comm/", "/ipykernel/", "/jupyter_client/", "/zmq/", "/anywidget/")) else
           "mha_core" if "/mha_core/" in file else "numpy" if "/numpy/" in file else "json" if "/json/" in file else "other")
    by_module[key] = by_module.get(key, 0.0) + tt
cpu.sort(); wall.sort(); first_cpu.sort()
print("__RESULT__" + json.dumps({
    "changes": len(cpu), "cpu_ms_median": 1000 * cpu[len(cpu) // 2], "cpu_ms_p95": 1000 * cpu[int(0.95 * (len(cpu) - 1))],
    "first_time_changes": len(first_cpu), "first_time_cpu_ms_median": 1000 * first_cpu[len(first_cpu) // 2],
    "wall_ms_median": 1000 * wall[len(wall) // 2],
    "parts_cpu_ms": {k: 1000 * v for k, v in parts.items()},
    "profile_self_ms_by_module": {k: 1000 * v for k, v in sorted(by_module.items(), key=lambda kv: -kv[1])},
    "messages_sent_per_change": sends,
    "profile_top": s.getvalue().splitlines()[:60],
    "profile_tottime": t.getvalue().splitlines()[:40],
}))
"""


#: Run in the kernel before the comm path is timed: a slider nobody observes (the widget protocol's own
#: cost) and a displayed head grid (as in notebook 03: its words helper is live). Prints their comm ids.
PATH_SETUP = r"""
import ipykernel, ipywidgets as widgets, json
from IPython.display import display
from mha_classroom.widgets.heads import head_grid
bare = widgets.IntSlider(value=0, min=0, max=100)
shown = head_grid(d_model=16, n_heads=4, seed=0)
display(shown)
for h in (1, 2, 8, 16, 4):
    shown.head_count.value = h
print("__IDS__" + json.dumps({"bare": bare.model_id, "grid": shown.head_count.model_id, "ipykernel": ipykernel.__version__}))
"""


def _comm_path(kc, pid: int, comm_id: str, states: list[dict], timeout: float = 30) -> dict:
    """Send each state as the browser sends a control change (a comm_msg on the shell channel) and wait for the
    kernel's idle: the kernel's CPU per change (every thread, ``schedstat``) and the messages it sent back."""
    import time

    from .cpu import cpu_seconds

    cpu, sent = [], []
    for state in states:
        before = cpu_seconds(pid)
        msg = kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {"method": "update", "state": state, "buffer_paths": []}})
        kc.shell_channel.send(msg)
        replies, deadline = [], time.monotonic() + timeout
        while time.monotonic() < deadline:
            reply = kc.get_iopub_msg(timeout=timeout)
            if reply["parent_header"].get("msg_id") != msg["header"]["msg_id"]:
                continue
            if reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle":
                break
            replies.append(reply)
        time.sleep(0.02)  # the iopub thread has sent the last message
        cpu.append(cpu_seconds(pid) - before)
        sent.append(sum(1 for r in replies if r["msg_type"] == "comm_msg"))
    cpu.sort()
    return {"changes": len(cpu), "kernel_cpu_ms_median": 1000 * cpu[len(cpu) // 2], "comm_msgs_back": max(sent, default=0)}


def comm_path(kc, pid: int, rounds: int) -> dict:
    """The whole kernel side of one change, comm message in to idle, against the same for a bare slider (the
    message's own cost, which no course code can remove); with the kernel's ipykernel version."""
    out = []
    kc.execute_interactive(PATH_SETUP, timeout=120,
                           output_hook=lambda m: out.append(m["content"].get("text", "")) if m["msg_type"] == "stream" else None)
    ids = json.loads("".join(out).split("__IDS__", 1)[1].splitlines()[0])
    bare = _comm_path(kc, pid, ids["bare"], [{"value": v} for v in range(1, 1 + 8 * rounds)])
    # index into the head counts (1, 2, 4, 8, 16): every one has been shown once, as in the load test's lock-step phase
    grid = _comm_path(kc, pid, ids["grid"], [{"index": i} for i in [0, 1, 3, 4, 3, 2, 1, 0] * rounds])
    return {"ipykernel": ids["ipykernel"], "rows": {"bare slider": bare, "head grid (displayed)": grid}}


def profile(rounds: int = 3, path: list[str] | None = None) -> dict:
    """``path``: folders put first on the kernel's ``PYTHONPATH`` (another ipykernel, say, with the rest of the
    environment unchanged: ``pip install --no-deps --target DIR ipykernel==6.29.5 nest_asyncio``)."""
    from jupyter_client.manager import KernelManager

    with tempfile.TemporaryDirectory(prefix="mha-prof-", dir="/tmp") as tmp:
        # No echo of a change back to the page, as the class hub starts its kernels.
        env = dict(os.environ, JUPYTER_RUNTIME_DIR=tmp, MHA_COURSE_PROGRESS=os.path.join(tmp, "p.sqlite3"),
                   JUPYTER_WIDGETS_ECHO="0")
        if path:
            env["PYTHONPATH"] = os.pathsep.join([*path, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
        km = KernelManager(kernel_name="python3", transport="ipc", connection_file=os.path.join(tmp, "k.json"))
        km.start_kernel(env=env)
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=120)
        try:
            out = []
            kc.execute_interactive(CODE % {"rounds": rounds}, timeout=300,
                                   output_hook=lambda m: out.append(m["content"].get("text", "")) if m["msg_type"] == "stream" else None)
            text = "".join(out)
            result = json.loads(text.split("__RESULT__", 1)[1])
            path_cost = comm_path(kc, km.provisioner.process.pid, rounds)
            result["ipykernel"], result["comm_path"] = path_cost["ipykernel"], path_cost["rows"]
            return result
        finally:
            kc.stop_channels()
            km.shutdown_kernel(now=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of 8 changes (default 3)")
    parser.add_argument("--path", action="append", default=[], help="a folder put first on the kernel's PYTHONPATH")
    args = parser.parse_args(argv)
    print(json.dumps(profile(args.rounds, args.path), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
