"""The class load test on the simulated Slurm cluster: learners' servers as jobs on three nodes.

    sudo deploy/.venv-hub/bin/python -m benchmarks.loadtest.cluster                 # N = 3, 6, 9
    sudo deploy/.venv-hub/bin/python -m benchmarks.loadtest.cluster --learners 3 --changes 4

It builds the cluster (deploy/cluster/sim.py up), and for each class size runs the one-server
load test's class (``run.run_class``: learners log in through the form, start their
servers, run notebooks through the kernel websocket, answer the poll, check an exercise,
move notebook 03's control staggered and then in lock-step, the instructor reads the poll
and the room view) against the hub on the cluster (deploy/cluster/start.sh), where Slurm
places each server on a node. Around each phase it reads, separately, the CPU time of the
hub process and of the proxy, and where Slurm put each learner. At the end it removes the
cluster (also on failure) and writes ``report-cluster.md`` and ``report-cluster.json``:
learners per node, login to running server through the Slurm queue, control-change
latency, the hub's and the proxy's CPU as the class grows, and the class size at which the
one hub or the one proxy becomes the limit, from the per-learner cost measured here.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import time
import traceback
from pathlib import Path

import psutil

from . import run
from .report import CLUSTER_SECTION, machine, rewrite

HERE = Path(__file__).resolve().parent
CLUSTER = run.DEPLOY / "cluster"
#: What one process can give: the hub (Python, one event loop) and the proxy (node) each use one core.
ONE_CORE_MS_PER_S = 1000.0
#: The lock-step latency a class still finds responsive (a control moved, the plot follows).
LOCKSTEP_TARGET_MS = 250.0


def load_sim():
    spec = importlib.util.spec_from_file_location("mha_cluster_sim", CLUSTER / "sim.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class ClusterHub(run.Hub):
    """run.Hub started with deploy/cluster/start.sh; it records the hub's and the proxy's CPU and the
    learners' placement each time the load test reads the hub's usage (at the start, before and after
    each control phase, at the end: ``run.run_class`` calls ``hub_usage`` there)."""

    start_script = CLUSTER / "start.sh"
    cluster_env: dict = {}

    def __init__(self, tag: str, instructors: list[str]):
        super().__init__(tag, instructors)
        self.env.update(self.cluster_env, MHA_CLUSTER_POLL_S="10")
        self.samples: list[dict] = []

    def processes(self):
        procs = super().processes()
        row = {"t": time.monotonic(), "hub_cpu_s": 0.0, "proxy_cpu_s": 0.0, "placement": placement(self.cluster_env)}
        for p in procs:
            try:
                times = p.cpu_times()
                kind = "proxy" if any("configurable-http-proxy" in part for part in p.cmdline()) else (
                    "hub" if p.pid == self.proc.pid else None)
            except psutil.NoSuchProcess:
                continue
            if kind:
                row[f"{kind}_cpu_s"] += times.user + times.system
        self.samples.append(row)
        return procs

    def __exit__(self, *exc):
        # The cluster's hub leaves servers running when it stops (they outlive a restart): end the jobs first.
        env = dict(os.environ, **self.cluster_env)
        subprocess.run(["scancel", "--partition", self.cluster_env.get("MHA_CLUSTER_PARTITION", "class")], env=env,
                       capture_output=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and placement(self.cluster_env):
            time.sleep(0.5)
        return super().__exit__(*exc)


def placement(cluster_env: dict) -> dict[str, str]:
    """user -> node of every running job."""
    out = subprocess.run(["squeue", "-h", "-t", "RUNNING", "-o", "%u %N"], env=dict(os.environ, **cluster_env),
                         capture_output=True, text=True).stdout
    return dict(line.split()[:2] for line in out.splitlines() if len(line.split()) >= 2)


def phases(samples: list[dict], changes: dict[str, int]) -> dict:
    """Hub and proxy CPU during each control phase (samples 1-2: staggered, 3-4: lock-step) and during
    logins, spawns and notebooks (samples 0-1): ms per change and per cent of one core."""
    out = {}
    if len(samples) < 5:
        return out
    spans = {"setup": (0, 1), "staggered": (1, 2), "lockstep": (3, 4)}
    for phase, (a, b) in spans.items():
        wall = samples[b]["t"] - samples[a]["t"]
        row = {"wall_s": wall}
        for kind in ("hub", "proxy"):
            cpu = samples[b][f"{kind}_cpu_s"] - samples[a][f"{kind}_cpu_s"]
            row[f"{kind}_cpu_s"] = cpu
            row[f"{kind}_core_pct"] = 100 * cpu / wall if wall > 0 else None
            if phase in changes and changes[phase]:
                row[f"{kind}_ms_per_change"] = 1000 * cpu / changes[phase]
        out[phase] = row
    return out


def per_learner_cost(rows: list[dict], phase: str, kind: str) -> float | None:
    """Least-squares slope of a process's share of one core against the class size: % of a core per learner."""
    pts = [(r["learners"], r["phases"][phase][f"{kind}_core_pct"]) for r in rows
           if r.get("phases", {}).get(phase, {}).get(f"{kind}_core_pct") is not None]
    if len(pts) < 2:
        return pts[0][1] / pts[0][0] if pts else None
    mx, my = statistics.mean(x for x, _ in pts), statistics.mean(y for _, y in pts)
    den = sum((x - mx) ** 2 for x, _ in pts)
    return sum((x - mx) * (y - my) for x, y in pts) / den if den else None


def limits(rows: list[dict], pace: float) -> dict:
    """The class size at which the one hub or the one proxy runs out, from the measured costs.

    The proxy is on every control change's path (browser -> proxy -> the learner's server): its limit
    is one core's worth of changes, sustained (staggered) and as one burst (lock-step). The hub is not
    on that path: what grows with the class is its background work (activity reports, its checks of
    each Slurm job) and each learner's login and spawn, which the whole class does at once.
    """
    def median(phase, key):
        vals = [r["phases"][phase].get(key) for r in rows if r.get("phases", {}).get(phase)]
        vals = [v for v in vals if v is not None]
        return statistics.median(vals) if vals else None

    proxy_ms, proxy_lock_ms = median("staggered", "proxy_ms_per_change"), median("lockstep", "proxy_ms_per_change")
    proxy_slope, hub_slope = per_learner_cost(rows, "staggered", "proxy"), per_learner_cost(rows, "staggered", "hub")
    setup = [r["phases"]["setup"]["hub_cpu_s"] / r["learners"] for r in rows if r.get("phases", {}).get("setup")]
    hub_login_s = statistics.median(setup) if setup else None
    return {
        "proxy": {
            "ms_per_change": proxy_ms, "lockstep_ms_per_change": proxy_lock_ms, "core_pct_per_learner": proxy_slope,
            # Every learner one change per `pace` seconds; one core is 1000 ms of CPU a second.
            "learners_at_one_core": (ONE_CORE_MS_PER_S * pace / proxy_ms) if proxy_ms else None,
            # A whole class's changes at the same instant, handled one after another.
            "learners_within_lockstep_target": (LOCKSTEP_TARGET_MS / proxy_lock_ms) if proxy_lock_ms else None,
        },
        "hub": {
            "core_pct_per_learner": hub_slope,
            "learners_at_one_core": (100.0 / hub_slope) if hub_slope and hub_slope > 0 else None,
            "login_and_spawn_cpu_s_per_learner": hub_login_s,
            "learners_logging_in_per_minute": (60.0 / hub_login_s) if hub_login_s else None,
        },
    }


def run_size(n: int, args, notebooks: list[str]) -> dict:
    before = machine()
    print(f"cluster loadtest: {n} learners; load average before {before.get('load_average')}", flush=True)
    holder: dict = {}

    class Recording(ClusterHub):
        def __init__(self, tag, instructors):
            super().__init__(tag, instructors)
            holder["hub"] = self

    try:
        raw = run.run_class(n, changes=args.changes, pace=args.pace, notebooks=notebooks,
                            stagger_login_s=args.login_stagger, hub_class=Recording)
    except Exception:
        traceback.print_exc()
        raw = {"learners": n, "per_learner": [], "failures": [traceback.format_exc(limit=3)], "all_ready_s": None}
    after = machine()
    print(f"cluster loadtest: {n} learners done; load average after {after.get('load_average')}", flush=True)
    hub = holder.get("hub")
    samples = hub.samples if hub else []
    summary = run.summarise(raw) if raw["per_learner"] else {"learners": n, "failures": len(raw["failures"]),
                                                             "failure_lines": raw["failures"]}
    changes = {mode: summary.get(mode, {}).get("n", 0) for mode in ("staggered", "lockstep")}
    where = samples[1]["placement"] if len(samples) > 1 else {}
    per_node: dict[str, int] = {}
    for user, node in where.items():
        if user.startswith(f"mhalt{n:02d}x"):
            per_node[node] = per_node.get(node, 0) + 1
    spawn = [p["server_ready_s"] - p["login_s"] for p in raw["per_learner"] if "server_ready_s" in p and "login_s" in p]
    return {"learners": n, "load_before": before.get("load_average"), "load_after": after.get("load_average"),
            "learners_per_node": dict(sorted(per_node.items())),
            "login_to_server_s": {"median": statistics.median(spawn) if spawn else None, "max": max(spawn) if spawn else None,
                                  "all": sorted(spawn)},
            "phases": phases(samples, changes), "summary": summary, "raw": raw,
            "samples": [{k: v for k, v in s.items()} for s in samples]}


def _f(x, digits=0):
    return "-" if x is None else f"{x:.{digits}f}"


def markdown(report: dict) -> str:
    rows, lim, before = report["runs"], report["limits"], report["machine_before"]
    lines = [
        "## On a Slurm cluster (simulated here)",
        "",
        "Made by `python -m benchmarks.loadtest.cluster` (`benchmarks/loadtest/cluster.py`): the one-server load test's "
        "class (`run.run_class`) against the hub on the cluster (`deploy/cluster/start.sh`), with a controller and three "
        "compute nodes built on this machine by `deploy/cluster/sim.py` (network namespaces on a bridge; every node shares "
        "this machine's two cores and file system, as a real cluster's nodes share theirs). Each learner's server is a "
        "Slurm job asking for 400 MB and one CPU that four learners share.",
        f"Notebooks run by each learner: {', '.join(report['settings']['notebooks'])}; "
        f"{report['settings']['changes']} control changes per learner and mode, one every {report['settings']['pace']} s.",
        "",
        f"**Taken under load.** Other helpers were building and testing on this machine at the same time: the load "
        f"average before and after each run is in the table (before the first: {before.get('load_average')}). The "
        "nodes are simulated on the same two cores as the hub, so latencies here are upper bounds for a real cluster, "
        "where each node has cores of its own; the hub's and the proxy's CPU per change are what carries over.",
        "",
        "| learners | per node | login to running server (median / max) | staggered p50 / p95 | lock-step p50 / p95 | "
        "hub CPU staggered / lock-step | proxy CPU staggered / lock-step (per change) | load before / after | failures |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        s, ph = r["summary"], r.get("phases", {})
        st, lk = ph.get("staggered", {}), ph.get("lockstep", {})
        per_node = ", ".join(f"{k.split('-')[-1]}: {v}" for k, v in r["learners_per_node"].items()) or "-"
        lines.append(
            f"| {r['learners']} | {per_node} | {_f(r['login_to_server_s']['median'], 1)} / {_f(r['login_to_server_s']['max'], 1)} s | "
            f"{_f(s.get('staggered', {}).get('p50_ms'))} / {_f(s.get('staggered', {}).get('p95_ms'))} ms | "
            f"{_f(s.get('lockstep', {}).get('p50_ms'))} / {_f(s.get('lockstep', {}).get('p95_ms'))} ms | "
            f"{_f(st.get('hub_core_pct'), 1)} / {_f(lk.get('hub_core_pct'), 1)} % of a core | "
            f"{_f(st.get('proxy_core_pct'), 1)} / {_f(lk.get('proxy_core_pct'), 1)} % "
            f"({_f(st.get('proxy_ms_per_change'), 1)} / {_f(lk.get('proxy_ms_per_change'), 1)} ms) | "
            f"{r['load_before']} / {r['load_after']} | {s.get('failures', '-')} |")
    setup = [(r["learners"], r["phases"].get("setup", {})) for r in rows if r.get("phases")]
    lines += ["", "Logins, spawns and notebooks (from the first login to the first control change), hub and proxy CPU: " +
              "; ".join(f"{n} learners {_f(p.get('hub_cpu_s'), 1)} s / {_f(p.get('proxy_cpu_s'), 1)} s" for n, p in setup) + ".",
              "", "### Where the one hub or the one proxy becomes the limit", ""]
    px, hb = lim.get("proxy", {}), lim.get("hub", {})
    pcts = [r["phases"]["staggered"]["hub_core_pct"] for r in rows if r.get("phases", {}).get("staggered")]
    hub_range = f"{min(pcts):.1f}-{max(pcts):.1f}" if pcts else "-"
    pace = report["settings"]["pace"]
    lines += [
        f"- **The proxy** carries every control change (browser, proxy, the learner's server on its node): "
        f"{_f(px.get('ms_per_change'), 2)} ms of its CPU per change while the class moved staggered "
        f"({_f(px.get('lockstep_ms_per_change'), 2)} ms in lock-step; median over the class sizes; CPU times are read in "
        f"10 ms ticks, so these are coarse). At one change per learner every {pace:.0f} s, its one core is used up at about "
        f"**{_f(px.get('learners_at_one_core'))} learners**; when a whole class moves at once, it handles the burst within "
        f"{LOCKSTEP_TARGET_MS:.0f} ms for about **{_f(px.get('learners_within_lockstep_target'))} learners**.",
        f"- **The hub** is not on that path. What grows with the class is its background work (activity reports, its "
        f"check of every learner's Slurm job each 10 s): {hub_range} % of a core over the class sizes, "
        f"{_f(hb.get('core_pct_per_learner'), 2)} % more per learner (the slope; rough, from three sizes and 10 ms ticks), "
        f"one core at about **{_f(hb.get('learners_at_one_core'))} learners**; and each "
        f"login and spawn, {_f(hb.get('login_and_spawn_cpu_s_per_learner'), 2)} s of hub CPU per learner (median, with "
        f"the notebooks' first requests), so a class logging in at once gets about "
        f"**{_f(hb.get('learners_logging_in_per_minute'))} servers a minute** from one hub core, before Slurm's queue.",
    ]
    lines += ["", "These limits assume the rest scales out, as it does here: each learner's server and kernel run on a "
              "node (add nodes for more learners, 400 MB each), so only the hub and the proxy are shared by the whole class. "
              "Beyond those sizes: more than one proxy (Zero to JupyterHub's Traefik-based proxy or several "
              "configurable-http-proxy instances behind a load balancer), or a hub per section of the class.", ""]
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.loadtest.cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument("--learners", default="3,6,9", help="class sizes, comma-separated (default 3,6,9)")
    parser.add_argument("--changes", type=int, default=8, help="control changes per learner and mode (default 8)")
    parser.add_argument("--pace", type=float, default=3.0, help="seconds between one learner's changes (default 3)")
    parser.add_argument("--login-stagger", type=float, default=0.5, help="seconds between two learners' logins (default 0.5)")
    parser.add_argument("--notebooks", default=run.CONTROL_NOTEBOOK,
                        help=f"notebooks each learner runs, in order (default {run.CONTROL_NOTEBOOK}, the one with the control)")
    parser.add_argument("--out", default=str(HERE / "report-cluster"), help="report path without suffix")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        parser.error("run as root: it builds network namespaces, and each simulated learner is a Unix account")
    try:
        sizes = [int(x) for x in args.learners.split(",")]
    except ValueError:
        parser.error(f"--learners={args.learners!r}: give class sizes as whole numbers, comma-separated (such as 3,6,9)")
    if any(n < 1 or n > 15 for n in sizes):
        parser.error(f"--learners={args.learners!r}: each size from 1 to 15 (three nodes of five 400 MB servers)")
    notebooks = [x.strip() for x in args.notebooks.split(",") if x.strip()]
    if run.CONTROL_NOTEBOOK not in notebooks:
        parser.error(f"--notebooks must include {run.CONTROL_NOTEBOOK} (the control every learner moves)")
    sim = load_sim()
    had_runtime_root = run.RUNTIME_ROOT.exists()
    report = {"machine_before": machine(), "settings": dict(vars(args), notebooks=notebooks), "runs": []}
    t0 = time.perf_counter()
    made = sim.up()
    report["cluster"] = {"up_s": time.perf_counter() - t0, "nodes": made["nodes"], "timings": made["timings"]}
    try:
        env = dict(line.split("=", 1) for line in (sim.STATE / "cluster.env").read_text().split())
        ClusterHub.cluster_env = env
        for n in sizes:
            report["runs"].append(run_size(n, args, notebooks))
            r = report["runs"][-1]
            print(json.dumps({k: r[k] for k in ("learners", "learners_per_node", "login_to_server_s", "phases")},
                             default=str)[:1500], flush=True)
    finally:
        report["cluster"]["removed"] = sim.down()
        if not had_runtime_root:
            try:
                run.RUNTIME_ROOT.rmdir()  # the spawner made it for this run; each learner's folder is gone already
            except OSError:
                pass
    report["machine_after"] = machine()
    report["limits"] = limits([r for r in report["runs"] if r.get("phases")], args.pace)
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1, default=str))
    out.with_suffix(".md").write_text(markdown(report))
    print(markdown(report))
    main_report = HERE / "report"
    if out.with_suffix(".md") == CLUSTER_SECTION and main_report.with_suffix(".json").exists():
        rewrite(main_report)  # report.md ends with this section
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
