"""Peak memory of one kernel that runs the whole course, notebook after notebook.

Every notebook's code cells run in order in ONE fresh kernel (cwd notebooks/), as a
learner who works through the course without restarting; after each notebook a probe
reads the kernel's VmHWM (peak resident memory so far) and VmRSS (now). Reference:
the peak of a fresh kernel that ran nothing. One run: peak memory barely varies from
run to run. Goal: under 1.5 GB (1.5e9 bytes, 1,431 MiB).
"""

from __future__ import annotations

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
