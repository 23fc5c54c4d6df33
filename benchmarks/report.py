"""Turn the sections' results into the goals table and the Markdown report.

Each section's module (``bench_<name>.py``) says how its own results read:

    TITLE, NUMBER          its heading (NUMBER None: unnumbered)
    goals(result, missing) its rows of the goals table (absent: no goals)
    MISSING_GOALS          (goal, target) rows shown when the section did not run
    markdown(result, report)   its Markdown lines

This module only puts them together, in a fixed order.
"""

from __future__ import annotations

import importlib

from . import _format as fmt

#: The order of the goals table.
GOAL_ORDER = ("attention", "notebooks", "controls", "memory", "import", "serving", "training", "pretrained")
#: The order of the report's sections.
SECTION_ORDER = ("attention", "numpy", "gpu", "notebooks", "controls", "memory", "import", "serving", "training", "pretrained")


def section_module(name: str):
    return importlib.import_module(f".bench_{name}", __package__)


def _result(sections: dict, name: str):
    record = sections.get(name) or {}
    return record.get("result")


def _missing(sections: dict, name: str) -> str:
    record = sections.get(name)
    if record is None:
        return f"section '{name}' not run"
    return f"section '{name}' failed: {record.get('error', 'no result')}"


def derive(sections: dict) -> dict:
    """The goals table and the cross-process NumPy/torch ratios, from whatever sections exist."""
    goals = []
    for name in GOAL_ORDER:
        module = section_module(name)
        result, missing = _result(sections, name), _missing(sections, name)
        if result or name == "attention":  # attention names each of its shapes even when it did not run
            rows = module.goals(result, missing)
        else:
            rows = [fmt.goal(text, target, missing, None) for text, target in getattr(module, "MISSING_GOALS", ())]
        goals += [{**row, "section": name} for row in rows]
    cross = section_module("numpy").against_torch(_result(sections, "numpy"), _result(sections, "attention"))
    return {"goals": goals, "numpy_vs_torch": cross}


# -- Markdown ------------------------------------------------------------------------------


def _section_head(lines, sections, name):
    record = sections.get(name) or {}
    module = section_module(name)
    title = module.TITLE if module.NUMBER is None else f"{module.NUMBER}. {module.TITLE}"
    lines += ["", f"## {title}", ""]
    if not record:
        lines.append("Not run.")
        return None
    bits = [f"measured {record.get('measured_at', '?')}", f"{record.get('seconds') or 0:.0f} s"]
    if record.get("quick"):
        bits.append("**quick run: few repeats, figures indicative**")
    if record.get("load_average_before"):
        bits.append(f"load average before/after {record['load_average_before'][0]:.1f}/{(record.get('load_average_after') or [0])[0]:.1f}")
    lines.append("*" + "; ".join(bits) + "*")
    lines.append("")
    if "error" in record:
        lines.append(f"Failed: `{record['error']}`")
        return None
    return record["result"]


def render_markdown(report: dict) -> str:
    sections = report["sections"]
    m, v, rev = report["machine"], report["versions"], report.get("revision", {})
    quick = any((r or {}).get("quick") for r in sections.values())
    lines = [
        "# Benchmarks",
        "",
        f"Written by `{report['command'].strip()}` at {report['generated_at']}"
        + (f", revision {rev.get('commit')}{' with uncommitted changes' if rev.get('dirty') else ''}" if rev.get("commit") else "")
        + ". Rerun with `make bench` (see `benchmarks/README.md` for how to read this).",
    ]
    if quick:
        lines += ["", "**Some sections are from a quick run (few repeats): their figures are indicative only.**"]
    lines += [
        "",
        "## Machine and versions",
        "",
        f"- CPU: {m['cpu']}, {m['cores']} cores ({m['cores_usable']} usable), {m['ram_gib']} GiB RAM, {m['os']}",
        "- " + ", ".join(f"{k} {val}" for k, val in v.items() if val),
        "- Every figure is a median over repeated runs; contenders that are compared ran in the same rounds,"
        " in an order that rotates each round, and a ratio is the median of the round-by-round ratios.",
        "- The machine may be shared: each section shows the 1-minute load average before and after it"
        " (above the core count means other work was competing for the cores).",
        "",
        "## Goals",
        "",
        "| goal | target | measured | |",
        "| --- | --- | --- | --- |",
    ]
    for g in report["goals"]:
        lines.append(f"| {g['goal']} | {g['target']} | {g['measured']} | {fmt.met(g['met'])} |")
    for name in SECTION_ORDER:
        result = _section_head(lines, sections, name)
        if result:
            lines += section_module(name).markdown(result, report)
    return "\n".join(lines) + "\n"
