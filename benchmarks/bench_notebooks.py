"""Each notebook, run top to bottom in a fresh kernel (nbclient, kernel python3, cwd notebooks/).

Time is the wall time of nbclient's ``execute()``: kernel start, every cell, kernel
shutdown, as "Restart kernel and run all" feels to a learner. Reference: an empty
notebook in the same rounds (kernel start and shutdown alone). Notebooks and the
empty one run in interleaved rounds, in an order that rotates from round to round.
Each run also reports the kernel's peak resident memory (VmHWM).

Goals: under 20 s per notebook (30 s for the one that trains, 06), under 2 minutes for all.
"""

from __future__ import annotations

from ._kernel import NOTEBOOKS, run_notebook
from ._timing import median, paired_ratio, summary

GOAL_S = 20.0
GOAL_S_BY_NOTEBOOK = {"06_heads_learn_their_views.ipynb": 30.0, "08_when_heads_fail.ipynb": 30.0}  # as tests/test_notebooks.py
GOAL_TOTAL_S = 120.0
EMPTY = "(empty notebook)"


def notebook_paths() -> list:
    return sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb"))


def run(quick: bool, log=print, **_) -> dict:
    import time

    import nbformat

    paths = notebook_paths()
    names = [p.name for p in paths] + [EMPTY]
    runs = {name: [] for name in names}
    max_rounds, min_rounds, budget_s = (1, 1, None) if quick else (5, 2, 300)
    start = time.perf_counter()
    for r in range(max_rounds):
        if budget_s is not None and r >= min_rounds and (time.perf_counter() - start) / r * (r + 1) > budget_s:
            break
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            nb = nbformat.v4.new_notebook() if name == EMPTY else nbformat.read(NOTEBOOKS / name, as_version=4)
            result = run_notebook(nb, label=name)
            log(f"  round {r + 1}: {name}: {result['wall_s']:.1f} s" + (f"  ERROR {result['error']}" if result["error"] else ""))
            runs[name].append(result)

    walls = {name: [x["wall_s"] for x in rs] for name, rs in runs.items()}
    notebooks = {}
    for name in names:
        rs = runs[name]
        goal = None if name == EMPTY else GOAL_S_BY_NOTEBOOK.get(name, GOAL_S)
        entry = {
            "runs": len(rs),
            "wall_s": summary(walls[name]),
            "cells_s": summary([x["cells_s"] for x in rs]),
            "peak_rss_mib": max((x["vmhwm_kib"] or 0) for x in rs) / 1024,
            # From the run whose wall time was the median one.
            "slowest_cell": sorted(rs, key=lambda x: x["wall_s"])[len(rs) // 2]["slowest_cell"],
            "errors": sorted({e for x in rs for e in ([x["error"]] if x["error"] else []) + x["errors"]}),
        }
        if name != EMPTY:
            entry["ratio_to_empty"] = paired_ratio(walls, name, EMPTY)
            entry["goal_s"] = goal
            entry["met"] = not entry["errors"] and entry["wall_s"]["median"] < goal
        notebooks[name] = entry
    total = sum(median(walls[p.name]) for p in paths)
    return {
        "notebooks": notebooks,
        "count": len(paths),
        "total_s": total,
        "goal_total_s": GOAL_TOTAL_S,
        "total_met": bool(paths) and total < GOAL_TOTAL_S and all(notebooks[p.name]["met"] for p in paths),
        "max_peak_rss_mib": max((notebooks[p.name]["peak_rss_mib"] for p in paths), default=None),
    }
