"""Peak memory of one kernel that runs the whole course, notebook after notebook.

Every notebook's code cells run in order in ONE fresh kernel (cwd notebooks/), as a
learner who works through the course without restarting; after each notebook a probe
reads the kernel's VmHWM (peak resident memory so far) and VmRSS (now). Reference:
the peak of a fresh kernel that ran nothing. One run: peak memory barely varies from
run to run. Goal: under 1.5 GB (1.5e9 bytes, 1,431 MiB).
"""

from __future__ import annotations

from . import _format as fmt
from ._kernel import run_notebook
from .bench_notebooks import notebook_paths

GOAL_BYTES = 1.5e9


def run(quick: bool, log=print, **_) -> dict:
    import nbformat

    from ._kernel import probe_cell

    paths = notebook_paths()
    course = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "language": "python", "display_name": "Python 3 (ipykernel)"}})
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        course.cells.extend(c for c in nb.cells if c.cell_type == "code")
        course.cells.append(probe_cell(path.name))
    log(f"memory: {len(paths)} notebooks in one kernel")
    ran = run_notebook(course, allow_errors=True, timeout=600, label="end of course")
    empty = run_notebook(nbformat.v4.new_notebook(), label="empty kernel")
    peak_mib = (ran["vmhwm_kib"] or 0) / 1024
    empty_mib = (empty["vmhwm_kib"] or 0) / 1024
    return {
        "notebooks": [p.name for p in paths],
        "after_each": [
            {"notebook": p["label"], "peak_mib": p["vmhwm_kib"] / 1024, "rss_mib": p["vmrss_kib"] / 1024}
            for p in ran["probes"] if p["label"] != "end of course"
        ],
        "peak_mib": peak_mib,
        "empty_kernel_peak_mib": empty_mib,
        "ratio_to_empty_kernel": peak_mib / empty_mib if empty_mib else None,
        "wall_s": ran["wall_s"],
        "errors": ran["errors"] + ([ran["error"]] if ran["error"] else []),
        "goal_mib": GOAL_BYTES / 2**20,
        "met": bool(paths) and peak_mib * 2**20 < GOAL_BYTES,
    }


# -- the report -------------------------------------------------------------------------------------

TITLE = "Peak memory of a kernel running the whole course"
NUMBER = 5
MISSING_GOALS = (("peak memory of a kernel running the whole course", "< 1.5 GB"),)


def goals(result: dict, missing: str) -> list[dict]:
    if not result.get("notebooks"):
        return [fmt.goal(*MISSING_GOALS[0], "no notebooks found", None)]
    measured = f"{result['peak_mib']:,.0f} MiB ({len(result['notebooks'])} notebooks in one kernel)"
    return [fmt.goal("peak memory of a kernel running the whole course", "< 1.5 GB (1,431 MiB)", measured, result["met"])]


def markdown(result: dict, report: dict) -> list[str]:
    lines = [
        "Every notebook's code cells, in order, in one fresh kernel; VmHWM (the kernel process's peak resident memory) read"
        " after each notebook. Reference: a fresh kernel that ran nothing.",
        "",
        "| after notebook | peak so far | resident now |",
        "| --- | ---: | ---: |",
    ]
    for row in result["after_each"]:
        lines.append(f"| {row['notebook']} | {row['peak_mib']:,.0f} MiB | {row['rss_mib']:,.0f} MiB |")
    lines += ["", f"Peak: **{result['peak_mib']:,.0f} MiB** (goal < {result['goal_mib']:,.0f} MiB); empty kernel {result['empty_kernel_peak_mib']:,.0f} MiB"
              f" ({fmt.x(result['ratio_to_empty_kernel'])})."]
    if result["errors"]:
        lines += ["", "Errors while running the course in one kernel (the run carried on): " + "; ".join(result["errors"])[:600]]
    return lines
