"""The load test's report: benchmarks/loadtest/report.md and report.json."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from .._machine import git_revision, load_average
from .._machine import machine as _machine


def machine() -> dict:
    row = dict(_machine(), load_average=load_average(), time=time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    try:
        row["uptime"] = subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return row


#: The cluster run's section (``python -m benchmarks.loadtest.cluster``), included at the end of report.md.
CLUSTER_SECTION = Path(__file__).resolve().parent / "report-cluster.md"


def _f(x, digits=0, unit=""):
    if x is None:
        return "-"
    return f"{x:.{digits}f}{unit}"


#: The 1-minute load average below which a run counts as taken on a quiet machine (2 cores).
QUIET_BELOW = 2.0
#: issue 30's goals: lock-step p95 for 32 learners, median first figure for 16, CPU per change (kernel + server + proxy).
GOALS = {"lockstep_p95_ms": (32, 100.0), "first_figure_median_s": (16, 10.0), "cpu_ms_per_change": 5.0}


def _load_paragraph(report: dict) -> str:
    rows = [(r["summary"]["learners"], r["summary"].get("load_average")) for r in report["runs"]]
    if any(load is None for _, load in rows):
        before, after = report["machine_before"], report["machine_after"]
        return (f"Load average {before.get('load_average')} before the whole run and {after.get('load_average')} after "
                f"(1, 5, 15 minutes; 2 cores); not recorded per class size.")
    quiet = all(load["before"][0] < QUIET_BELOW for _, load in rows)
    each = "; ".join(f"{n} learners: {load['before']} before, {load['after']} after" for n, load in rows)
    return ((f"**Taken on a quiet machine** (nothing else running; 1-minute load average below {QUIET_BELOW} before "
             f"each class size). " if quiet else
             f"**Taken under load** (a 1-minute load average of {QUIET_BELOW} or more before a class size): CPU-bound "
             f"figures are pessimistic, memory figures are not affected. ")
            + f"Load average (1, 5, 15 minutes) per class size: {each}." + _speed_sentence(report))


def _speed_sentence(report: dict) -> str:
    """The machine's speed before each class size (``run.speed_reference_ms``), when the run recorded it."""
    rows = [(r["summary"]["learners"], r["summary"].get("speed_reference_ms")) for r in report["runs"]]
    if any(ms is None for _, ms in rows):
        return ""
    each = ", ".join(f"{ms:.0f} ms before {n} learners" for n, ms in rows)
    return (f" Machine speed: a fixed piece of Python work like a message's (`run.speed_reference_ms`) took {each}; "
            "the same machine is up to half again slower in some hours, and CPU per change and latencies scale with it.")


def _cpu_row(summary: dict) -> dict:
    """CPU per change while each learner moved at their own pace (the lock-step phase also has the instructor's
    room view refreshing), kernel, server and proxy: the path of one change; the hub's own processes apart."""
    row = (summary.get("cpu_ms_per_change") or {}).get("staggered") or {}
    return {k: v for k, v in row.items() if k != "hub"}


def _goals(report: dict) -> list[str]:
    by_size = {r["summary"]["learners"]: r["summary"] for r in report["runs"] if "lockstep" in r["summary"]}
    lines = ["## The goals (issues 30 and 38)", "", "| goal | measured | met |", "| --- | --- | --- |"]
    n, limit = GOALS["lockstep_p95_ms"]
    if n in by_size:
        s = by_size[n]
        got = s["lockstep"]["p95_ms"]
        lines.append(f"| {n} learners change the same control at the same instant: p95 under {limit:.0f} ms, 0 failures | "
                     f"p95 {_f(got)} ms, {s['failures']} failures | {'yes' if got is not None and got < limit and not s['failures'] else 'no'} |")
    n, limit = GOALS["first_figure_median_s"]
    if n in by_size:
        got = by_size[n]["first_figure_s"]["median"]
        warm = by_size[n].get("warm_start")
        how = (f" after the instructor's warm start ({warm['took_s']:.0f} s before the class, "
               f"`deploy/warm_start.py --notebook {warm['notebook']}`)" if warm else ", cold (no warm start)")
        lines.append(f"| {n} learners log in and run a notebook together: median under {limit:.0f} s to the first figure{how} | "
                     f"median {_f(got, 1)} s | {'yes' if got is not None and got < limit else 'no'} |")
    limit = GOALS["cpu_ms_per_change"]
    for n, s in sorted(by_size.items()):
        row = _cpu_row(s)
        if row:
            total = sum(row.values())
            lines.append(f"| CPU per control change, kernel + server + proxy, 5 ms or less ({n} learners, own pace) | "
                         + " + ".join(f"{k} {v:.1f}" for k, v in row.items()) + f" = {total:.1f} ms | "
                         f"{'yes' if total <= limit else 'no'} |")
    return lines + [""]


def markdown(report: dict) -> str:
    before, after = report["machine_before"], report["machine_after"]
    lines = [
        "# Class load test: simulated learners on the course hub",
        "",
        "Made by `python -m benchmarks.loadtest` (see `benchmarks/loadtest/run.py` for what each learner does).",
        f"Machine: {before['cores']} cores ({before['cpu']}), {before['ram_gib']} GiB. "
        f"Taken {before['time']} to {after['time']}.",
        "",
        _load_paragraph(report),
        "",
        *_goals(report),
        "Settings: " + ", ".join(f"{k} = {v}" for k, v in report["settings"].items() if k != "out") + ".",
        "",
        "## Per class size",
        "",
        "| learners | failures | all ready (s) | login to first figure, median / max (s) | staggered p50 / p95 (ms) | lock-step p50 / p95 (ms) | server RSS / PSS (MiB) | kernel RSS / PSS (MiB) | hub RSS (MiB) | hub CPU (s) |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for run in report["runs"]:
        s = run["summary"]
        if "staggered" not in s:
            lines.append(f"| {s['learners']} | run failed: {s.get('failures')} | | | | | | | | |")
            continue
        m = s.get("memory_mib", {})
        lines.append(
            f"| {s['learners']} | {s['failures']} | {_f(s['all_ready_s'])} | "
            f"{_f(s['first_figure_s']['median'], 1)} / {_f(s['first_figure_s']['max'], 1)} | "
            f"{_f(s['staggered']['p50_ms'])} / {_f(s['staggered']['p95_ms'])} | "
            f"{_f(s['lockstep']['p50_ms'])} / {_f(s['lockstep']['p95_ms'])} | "
            f"{_f(m.get('server_rss'))} / {_f(m.get('server_pss'))} | {_f(m.get('kernel_rss'))} / {_f(m.get('kernel_pss'))} | "
            f"{_f((s['hub'] or {}).get('rss_mib'))} | {_f((s['hub'] or {}).get('cpu_s'), 1)} |"
        )
    lines += ["", "Memory is per learner, at the end, with notebook 03's kernel open (the others closed after running); "
              "PSS counts shared pages once across processes, so PSS is what each further learner costs.", ""]
    for run in report["runs"]:
        s = run["summary"]
        if "staggered" not in s:
            continue
        lines += [f"### {s['learners']} learner(s)", ""]
        lines.append(f"- Poll: {s['poll'].get('learners_sent')} learners sent an answer; the instructor's counts "
                     f"{s['poll'].get('instructor_counts')} vs sent {s['poll'].get('sent')}: "
                     f"{'equal' if s['poll'].get('equal') else 'NOT equal'}; a learner's token reading the counts: "
                     f"{'refused (403) for every learner' if s['poll'].get('learner_counts_refused') else 'NOT refused'}.")
        room = s.get("room_view") or {}
        if room:
            lines.append(f"- Exercise checks: {room.get('learners_checked')} learners checked split_heads; the instructor's "
                         f"room view counted {room.get('counts')} against {room.get('expected')} expected: "
                         f"{'equal' if room.get('equal') else 'NOT equal'}. Its Refresh (two requests, in the instructor's "
                         f"kernel): idle p50 / p95 / max {_f((room.get('idle') or {}).get('p50_ms'))} / "
                         f"{_f((room.get('idle') or {}).get('p95_ms'))} / {_f((room.get('idle') or {}).get('max_ms'))} ms, "
                         f"during lock-step changes {_f((room.get('lockstep') or {}).get('p50_ms'))} / "
                         f"{_f((room.get('lockstep') or {}).get('p95_ms'))} / {_f((room.get('lockstep') or {}).get('max_ms'))} ms.")
        lines.append(f"- A learner opening the next learner's progress file: {s['neighbour_progress']}.")
        lines.append(f"- torch in the kernel's `sys.modules` after each notebook: {s['torch_imported']}; "
                     f"lark or rfc3987-syntax installed where a kernel could import them: {s.get('lark_installed_in_a_kernel')}.")
        lines.append("- Kernel RSS after each notebook (MiB): " + ", ".join(f"{nb[:2]} {v:.0f}" for nb, v in s["kernel_rss_mib_after_notebook"].items()) + ".")
        lines.append("- Kernel CPU per notebook (s): " + ", ".join(f"{nb[:2]} {v:.1f}" for nb, v in s["kernel_cpu_s_per_notebook"].items())
                     + f"; notebooks 01-05: {s['notebooks_cpu_s_per_learner']:.1f} CPU-s per learner; "
                     f"the learner's JupyterLab server: {s.get('server_cpu_s', 0):.1f} CPU-s over the whole run.")
        raw = s.get("cpu_ms_per_change_raw") or {}
        for mode, row in (s.get("cpu_ms_per_change") or {}).items():
            lines.append(f"- CPU per control change, {mode} (ms; what each process spent while the controls moved, "
                         f"less its idle rate): " + ", ".join(f"{k} {v:.1f}" for k, v in row.items())
                         + f"; total {sum(row.values()):.1f}"
                         + (f" (idle not subtracted: total {sum(raw[mode].values()):.1f})." if mode in raw else "."))
        clients = s.get("client_cpu_ms_per_change") or {}
        if clients:
            lines.append("- CPU per control change of the load test itself (its simulated browsers, on the same two cores; "
                         "a class's browsers run on the learners' machines): "
                         + ", ".join(f"{mode} {v:.1f} ms" for mode, v in clients.items()) + ".")
        if s.get("cpu_idle_ms_per_s"):
            lines.append("- CPU with the class connected and idle (ms per second, all learners together): "
                         + ", ".join(f"{k} {v:.1f}" for k, v in s["cpu_idle_ms_per_s"].items()) + ".")
        held = s.get("held_by_page") or {}
        if held.get("learners"):
            lines.append(f"- Head counts held by the page: {held['settings']} settings, for {held['learners']} of "
                         f"{held['of']} learners. A change is the page switching the figure by itself; what is timed "
                         "is the kernel taking the new value (from the change sent to the kernel's idle), with no "
                         "widget message back.")
        web = s.get("browser_learner")
        if web:
            parts = [f"{mode} p50 / p95 / max {_f(web[mode]['p50_ms'])} / {_f(web[mode]['p95_ms'])} / "
                     f"{_f(web[mode]['max_ms'])} ms over {web[mode]['n']} clicks" for mode in ("staggered", "lockstep")
                     if mode in web]
            lines.append(f"- One more learner in JupyterLab in Chromium (`browser_learner.py`, on the same two cores), "
                         f"clicking with the others: from the click to the new grid painted, timed in the page, "
                         + "; ".join(parts) + f". Set-up (login, Run All of notebook 03) {_f(web.get('setup_s'), 1)} s; "
                         f"{web['failures']} failures.")
        lines.append(f"- Control changes measured: staggered {s['staggered']['n']}, lock-step {s['lockstep']['n']}; "
                     f"max {_f(s['staggered']['max_ms'])} / {_f(s['lockstep']['max_ms'])} ms.")
        if s["notebook_errors"]:
            lines.append(f"- Notebook errors: {s['notebook_errors']}")
        if s["failure_lines"]:
            lines.append(f"- Failures: {s['failure_lines'][:10]}")
        lines.append("")
    if report.get("profile"):
        p = report["profile"]
        lines += ["## One control change, profiled (notebook 03's head count, in a kernel)", "",
                  f"CPU per change: median {p['cpu_ms_median']:.1f} ms, p95 {p['cpu_ms_p95']:.1f} ms "
                  f"(wall median {p['wall_ms_median']:.1f} ms) over {p['changes']} changes"
                  + (f" (load average {p['load_average']['before']} before, {p['load_average']['after']} after)."
                     if p.get("load_average") else "."),
                  "Parts (CPU ms per call): " + ", ".join(f"{k} {v:.2f}" for k, v in p["parts_cpu_ms"].items()) + ".",
                  "Self time of one profiled change by module (ms, with cProfile's overhead): "
                  + ", ".join(f"{k} {v:.1f}" for k, v in p["profile_self_ms_by_module"].items()) + ".", ""]
        if p.get("first_time_cpu_ms_median") is not None:
            lines[-1:-1] = [f"To a head count the group had not shown before (its figure built): median "
                            f"{p['first_time_cpu_ms_median']:.1f} ms over {p['first_time_changes']} changes; the figures "
                            f"above are for head counts it had shown (remembered)."]
        path = p.get("comm_path") or {}
        if path:
            lines += ["The kernel's whole side of a change, from the browser's comm message to the kernel's idle "
                      "(every thread of the kernel process, `schedstat`):", "",
                      "| widget | kernel CPU per change, median (ms) | messages back to the page |", "| --- | --- | --- |"]
            for name, row in path.items():
                lines.append(f"| {name} | {row['kernel_cpu_ms_median']:.1f} | {row['comm_msgs_back']} |")
            lines.append("")
    if report.get("analysis"):
        lines += ["## What the figures say", "", report["analysis"], ""]
    if CLUSTER_SECTION.exists():  # written by benchmarks/loadtest/cluster.py
        lines += [CLUSTER_SECTION.read_text().strip(), ""]
    return "\n".join(lines) + "\n"


def write_report(report: dict, out: Path) -> None:
    report.setdefault("git", git_revision())
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(report))
    print(f"loadtest: wrote {out.with_suffix('.md')} and {out.with_suffix('.json')}", flush=True)


def rewrite(out: Path, analysis_file: Path | None = None) -> None:
    """Re-render report.md from report.json (after adding the analysis text)."""
    report = json.loads(out.with_suffix(".json").read_text())
    if analysis_file is not None:
        report["analysis"] = analysis_file.read_text().strip()
    out.with_suffix(".json").write_text(json.dumps(report, indent=1, default=str) + "\n")
    out.with_suffix(".md").write_text(markdown(report))


if __name__ == "__main__":
    import sys

    rewrite(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else None)
    os._exit(0)
