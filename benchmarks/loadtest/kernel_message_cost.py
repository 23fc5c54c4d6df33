"""What one message costs a kernel by itself: the floor under every control change.

    python -m benchmarks.loadtest.kernel_message_cost                  # this environment's ipykernel
    python -m benchmarks.loadtest.kernel_message_cost --path /tmp/k6   # another ipykernel put first on sys.path

Starts one kernel (this Python; ``--path`` folders go first on the kernel's ``PYTHONPATH``, so
another ipykernel can be compared with the rest of the environment unchanged) with
``JUPYTER_WIDGETS_ECHO=0``, as the class hub starts them. Then, in rounds that interleave the kinds,
it sends the kernel messages one at a time, each waited for until the kernel is idle again, and
reads the kernel process's CPU time (user + system, ``/proc``) around each batch:

- ``kernel_info``: a ``kernel_info_request``, the kernel's message loop with no widget at all;
- ``slider, nobody observes``: a ``comm_msg`` update of an ``IntSlider``'s value, as a page sends
  when a learner moves it;
- ``slider, observed``: the same on a slider whose observer does nothing.

Per kind it prints the median over rounds of CPU milliseconds per message, less what the idle
kernel spends over the same wall time (measured between batches). This is the part of a change
that no course code can remove: whatever the callback does comes on top.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

SETUP = r"""
import ipywidgets, ipykernel
quiet = ipywidgets.IntSlider(value=0, min=0, max=1000)
watched = ipywidgets.IntSlider(value=0, min=0, max=1000)
watched.observe(lambda change: None, names="value")
print("__IDS__", quiet.model_id, watched.model_id, ipykernel.__version__)
"""


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _wait_idle(client, parent_id: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = client.get_iopub_msg(timeout=timeout)
        if (msg["parent_header"].get("msg_id") == parent_id and msg["msg_type"] == "status"
                and msg["content"]["execution_state"] == "idle"):
            return
    raise TimeoutError("the kernel did not go idle")


def measure(path: list[str], messages: int, rounds: int) -> dict:
    from jupyter_client.manager import KernelManager

    env = dict(os.environ, JUPYTER_WIDGETS_ECHO="0")
    if path:
        env["PYTHONPATH"] = os.pathsep.join(path + [env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    work = tempfile.mkdtemp(prefix="kernel-cost-")
    # The Unix-socket transport, as the class's kernels use it.
    km = KernelManager(kernel_cmd=[sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                       transport="ipc", ip=os.path.join(work, "kernel"), connection_file=os.path.join(work, "kernel.json"))
    km.start_kernel(env=env)
    client = km.client()
    client.start_channels()
    try:
        client.wait_for_ready(timeout=60)
        reply = client.execute_interactive(SETUP, timeout=60, output_hook=lambda m: outputs.append(m))
        del reply
        ids = next(m["content"]["text"] for m in outputs if m["msg_type"] == "stream" and "__IDS__" in m["content"]["text"])
        _, quiet, watched, version = ids.split()
        pid = km.provisioner.process.pid

        def send(kind: str, value: int) -> None:
            if kind == "kernel_info":
                msg = client.session.msg("kernel_info_request", {})
            else:
                comm = quiet if kind == "slider, nobody observes" else watched
                msg = client.session.msg("comm_msg", {"comm_id": comm, "data": {
                    "method": "update", "state": {"value": value}, "buffer_paths": []}})
            client.shell_channel.send(msg)
            _wait_idle(client, msg["header"]["msg_id"])

        kinds = ("kernel_info", "slider, nobody observes", "slider, observed")
        for kind in kinds:  # warm-up
            for i in range(20):
                send(kind, i)
        per_message: dict[str, list[float]] = {k: [] for k in kinds}
        idle_rates = []
        for r in range(rounds):
            time.sleep(0.5)
            c0, w0 = _cpu_s(pid), time.monotonic()
            time.sleep(1.0)
            idle_rates.append((_cpu_s(pid) - c0) / (time.monotonic() - w0))
            for kind in kinds if r % 2 == 0 else reversed(kinds):
                c0, w0 = _cpu_s(pid), time.monotonic()
                for i in range(messages):
                    send(kind, (i + r) % 1000)
                cpu, wall = _cpu_s(pid) - c0, time.monotonic() - w0
                per_message[kind].append(1000 * (cpu - statistics.median(idle_rates) * wall) / messages)
        return {"ipykernel": version, "messages_per_batch": messages, "rounds": rounds,
                "idle_cpu_ms_per_s": round(1000 * statistics.median(idle_rates), 3),
                "cpu_ms_per_message": {k: round(statistics.median(v), 3) for k, v in per_message.items()},
                "clock_tick_ms": 1000 / os.sysconf("SC_CLK_TCK")}
    finally:
        client.stop_channels()
        km.shutdown_kernel(now=True)
        shutil.rmtree(work, ignore_errors=True)


outputs: list = []


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--path", action="append", default=[], help="a folder put first on the kernel's PYTHONPATH")
    parser.add_argument("--messages", type=int, default=300, help="messages per batch (default 300)")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, the kinds interleaved (default 5)")
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()[0]:.2f}", file=sys.stderr)
    result = measure(args.path, args.messages, args.rounds)
    result["load_average_after"] = round(os.getloadavg()[0], 2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
