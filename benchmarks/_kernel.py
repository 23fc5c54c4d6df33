"""Run code and notebooks in a fresh Jupyter kernel (kernel ``python3``), the way a learner does.

``run_notebook`` appends one probe cell that reads the kernel process's own
``/proc/self/status``: VmHWM is its peak resident memory so far, VmRSS its current.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "python3"
PROBE_MARK = "__MHA_BENCH_PROBE__"
PROBE_SOURCE = f"""\
import json as _mha_json
with open("/proc/self/status") as _mha_f:
    _mha_status = {{line.split(":")[0]: int(line.split()[1]) for line in _mha_f if line.startswith(("VmHWM", "VmRSS"))}}
print({PROBE_MARK!r} + _mha_json.dumps({{"label": LABEL, "vmhwm_kib": _mha_status.get("VmHWM"), "vmrss_kib": _mha_status.get("VmRSS")}}))
"""


def probe_cell(label: str):
    import nbformat

    return nbformat.v4.new_code_cell(PROBE_SOURCE.replace("LABEL", repr(label)))


def probes(nb) -> list[dict]:
    """Every probe result printed in ``nb``'s outputs, in order."""
    found = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        for out in cell.get("outputs", []):
            if out.get("output_type") == "stream" and PROBE_MARK in out.get("text", ""):
                for line in out["text"].splitlines():
                    if line.startswith(PROBE_MARK):
                        found.append(json.loads(line[len(PROBE_MARK):]))
    return found


def _cell_seconds(cell) -> float | None:
    timing = cell.get("metadata", {}).get("execution", {})
    start, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
    if not (start and end):
        return None
    parse = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00"))  # noqa: E731
    return (parse(end) - parse(start)).total_seconds()


def errors(nb) -> list[str]:
    """One line per error output in ``nb``: 'cell N: EName: message'."""
    found = []
    for i, cell in enumerate(nb.cells):
        for out in cell.get("outputs", []) if cell.cell_type == "code" else []:
            if out.get("output_type") == "error":
                found.append(f"cell {i}: {out.get('ename')}: {str(out.get('evalue'))[:200]}")
    return found


def course_env(progress_dir: str) -> dict:
    """Environment for a kernel: quick-check progress goes to a throwaway store."""
    env = dict(os.environ)
    env["MHA_COURSE_PROGRESS"] = str(Path(progress_dir) / "progress.sqlite3")
    return env


def run_notebook(nb, *, cwd: Path = NOTEBOOKS, timeout: int = 300, allow_errors: bool = False, label: str = "end") -> dict:
    """Execute ``nb`` (changed in place) in a fresh kernel; wall time, cell time, peak memory, errors."""
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError

    nb.cells.append(probe_cell(label))
    with tempfile.TemporaryDirectory(prefix="mha-bench-") as tmp:
        old_env = dict(os.environ)
        os.environ.update(course_env(tmp))  # the kernel inherits this process's environment
        try:
            client = NotebookClient(nb, timeout=timeout, kernel_name=KERNEL, allow_errors=allow_errors,
                                    resources={"metadata": {"path": str(cwd)}})
            start = time.perf_counter()
            error = None
            try:
                client.execute()
            except CellExecutionError as exc:
                error = str(exc).strip().splitlines()[-1][:300] if str(exc).strip() else type(exc).__name__
            except Exception as exc:  # a kernel that dies or times out is a result, not a crash
                error = f"{type(exc).__name__}: {str(exc)[:300]}"
            wall = time.perf_counter() - start
        finally:
            os.environ.clear()
            os.environ.update(old_env)
    timed = [(i, _cell_seconds(c), c.source) for i, c in enumerate(nb.cells[:-1]) if c.cell_type == "code"]
    timed = [(i, t, source) for i, t, source in timed if t is not None]
    slowest = max(timed, key=lambda row: row[1], default=None)
    found = probes(nb)
    return {
        "wall_s": wall,
        "cells_s": sum(t for _, t, _ in timed),
        "slowest_cell": None if slowest is None else {
            "index": slowest[0], "seconds": slowest[1], "first_line": (slowest[2].strip().splitlines() or [""])[0][:70],
        },
        "probes": found,
        "vmhwm_kib": found[-1]["vmhwm_kib"] if found else None,
        "error": error,
        "errors": errors(nb),
    }


def measure_in_kernel(module: str, function: str, *, label: str, timeout: int = 900, **kwargs) -> tuple[dict | None, dict]:
    """Call ``benchmarks.<module>.<function>(**kwargs, out=PATH)`` in a fresh kernel, as a notebook cell would.

    The function writes its results to ``out`` as JSON. Returns (those results, or None if
    the kernel wrote none, and ``run_notebook``'s record of the run).
    """
    import nbformat

    with tempfile.TemporaryDirectory(prefix=f"mha-bench-{label.replace(' ', '-')}-") as tmp:
        out = Path(tmp) / "results.json"
        args = ", ".join(f"{k}={v!r}" for k, v in {**kwargs, "out": str(out)}.items())
        source = (
            f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
            f"from benchmarks.{module} import {function}\n"
            f"{function}({args})\n"
        )
        ran = run_notebook(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)]), cwd=ROOT,
                           timeout=timeout, label=label)
        return (json.loads(out.read_text()) if out.exists() else None), ran
