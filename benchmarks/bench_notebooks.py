"""Each notebook, run top to bottom in a fresh kernel (nbclient, kernel python3, cwd notebooks/).

Time is the wall time of nbclient's ``execute()``: kernel start, every cell, kernel
shutdown, as "Restart kernel and run all" feels to a learner. Reference: an empty
notebook in the same rounds (kernel start and shutdown alone). Notebooks and the
empty one run in interleaved rounds, in an order that rotates from round to round.
Each run also reports the kernel's peak resident memory (VmHWM).

Goals: under 20 s per notebook (30 s for the one that trains, 06), under 2 minutes for all.
"""

from __future__ import annotations

from . import _format as fmt
from ._kernel import NOTEBOOKS, run_notebook
from ._timing import median, paired_ratio, summary

GOAL_S = 20.0
GOAL_S_BY_NOTEBOOK = {"06_heads_learn_their_views.ipynb": 30.0, "08_when_heads_fail.ipynb": 30.0,
                      "09_heads_across_layers.ipynb": 30.0}  # as tests/test_notebooks.py
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


# -- the report -------------------------------------------------------------------------------------

TITLE = "Notebooks in a fresh kernel"
NUMBER = 3
MISSING_GOALS = (("each notebook in a fresh kernel; all in total", "< 20 s each; < 120 s total"),)


def goals(result: dict, missing: str) -> list[dict]:
    if not result.get("count"):
        return [fmt.goal(*MISSING_GOALS[0], "no notebooks found", None)]
    rows = []
    for name, entry in result["notebooks"].items():
        if "goal_s" not in entry:
            continue
        measured = f"{entry['wall_s']['median']:.1f} s" + (f" (errors: {'; '.join(entry['errors'])[:200]})" if entry["errors"] else "")
        rows.append(fmt.goal(f"notebook {name} in a fresh kernel", f"< {entry['goal_s']:.0f} s", measured, entry["met"]))
    rows.append(fmt.goal(f"all {result['count']} notebooks, total", f"< {result['goal_total_s']:.0f} s",
                         f"{result['total_s']:.1f} s", result["total_met"]))
    return rows


def markdown(result: dict, report: dict) -> list[str]:
    lines = [
        "Wall time of nbclient's `execute()` (kernel start, every cell, shutdown) with kernel `python3`, cwd `notebooks/`"
        " and `MHA_COURSE_PROGRESS` in a temporary folder; \"cells\" is the cells alone. The empty notebook is the reference"
        " (a kernel starting and stopping).",
        "",
        "| notebook | runs | wall median | cells median | vs empty | peak RSS | slowest cell | goal | |",
        "| --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | --- |",
    ]
    for name, e in result["notebooks"].items():
        ratio = e.get("ratio_to_empty", {}).get("median")
        goal_text = f"< {e['goal_s']:.0f} s" if "goal_s" in e else "-"
        status = fmt.met(e["met"]) if "met" in e else "reference"
        if e["errors"]:
            status += " (errors: " + "; ".join(e["errors"])[:200] + ")"
        slow = e.get("slowest_cell")
        slow_text = "-" if not slow else f"cell {slow['index']}, {slow['seconds']:.1f} s: `{slow['first_line'].replace('|', '/').replace('`', '')}`"
        lines.append(f"| {name} | {e['runs']} | {e['wall_s']['median']:.1f} s | {e['cells_s']['median']:.1f} s | {fmt.x(ratio)}"
                     f" | {e['peak_rss_mib']:,.0f} MiB | {slow_text} | {goal_text} | {status} |")
    lines += ["", f"Total (sum of medians): **{result['total_s']:.1f} s** for {result['count']} notebooks (goal < {result['goal_total_s']:.0f} s)."]
    return lines
