"""``import mha_core`` in a fresh process, without torch: goal under 0.3 s.

Reference: ``import numpy`` in a fresh process (mha_core's one dependency), run in
the same rounds. The clock starts after the interpreter is up, so it measures the
import alone.
"""

from __future__ import annotations

import json
import subprocess
import sys

from . import _format as fmt
from ._timing import interleaved, paired_ratio, summary

GOAL_S = 0.3
HEAVY = ("torch", "plotly", "ipywidgets", "IPython", "scipy", "pandas", "matplotlib")

_PROBE = """
import json, sys, time
start = time.perf_counter()
import {module}
elapsed = time.perf_counter() - start
print(json.dumps({{"seconds": elapsed, "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def _probe(module: str) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE.format(module=module, heavy=HEAVY)],
        capture_output=True, text=True, timeout=120, check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def _importtime_top(module: str, top: int = 8) -> list[dict]:
    """The largest cumulative times ``python -X importtime`` reports for modules mha_core pulls in."""
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True, text=True, timeout=120, check=True,
    )
    rows = []
    for line in out.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        self_us, cumulative_us, name = line[len("import time:"):].split("|", 2)
        depth = (len(name) - len(name.lstrip()) - 1) // 2  # two spaces per nesting level
        rows.append({"module": name.strip(), "cumulative_ms": round(int(cumulative_us) / 1000, 1), "depth": depth})
    # The package, what it imports, and what those import, largest first.
    shallow = sorted((r for r in rows if r["depth"] <= 2), key=lambda r: -r["cumulative_ms"])
    return [{"module": r["module"], "cumulative_ms": r["cumulative_ms"]} for r in shallow[:top]]


def run(quick: bool, log=print, **_) -> dict:
    rounds, warmup = (2, 0) if quick else (10, 1)
    heavy_seen: dict[str, list[str]] = {"mha_core": [], "numpy": []}

    def timed(module):
        def call():
            result = _probe(module)
            heavy_seen[module] = sorted(set(heavy_seen[module]) | set(result["heavy"]))
            call.last.append(result["seconds"])
        call.last = []
        return call

    probes = {"mha_core": timed("mha_core"), "numpy": timed("numpy")}
    # Each call is a whole fresh process; the probe's own clock is the figure, not the wall time.
    interleaved(probes, rounds=rounds, warmup=warmup)
    seconds = {name: probe.last[warmup:] for name, probe in probes.items()}  # drop the warm-up round
    return {
        "rounds": rounds,
        "import_mha_core_s": summary(seconds["mha_core"]),
        "import_numpy_s": summary(seconds["numpy"]),
        "ratio_to_numpy": paired_ratio(seconds, "mha_core", "numpy"),
        "heavy_modules_after_import": heavy_seen["mha_core"],
        "torch_imported": "torch" in heavy_seen["mha_core"],
        "importtime_top": _importtime_top("mha_core"),
        "goal_s": GOAL_S,
    }


# -- the report -------------------------------------------------------------------------------------

TITLE = "`import mha_core` without torch"
NUMBER = 6
MISSING_GOALS = (("`import mha_core` in a fresh process", "< 0.30 s"),)


def goals(result: dict, missing: str) -> list[dict]:
    return [
        fmt.goal("`import mha_core` in a fresh process", "< 0.30 s", f"{result['import_mha_core_s']['median']:.3f} s "
                 f"(import numpy alone: {result['import_numpy_s']['median']:.3f} s)",
                 result["import_mha_core_s"]["median"] < result["goal_s"]),
        fmt.goal("`import mha_core` leaves torch unimported", "torch not in sys.modules",
                 "torch imported" if result["torch_imported"] else "not imported", not result["torch_imported"]),
    ]


def markdown(result: dict, report: dict) -> list[str]:
    a, b, r = result["import_mha_core_s"], result["import_numpy_s"], result["ratio_to_numpy"]
    return [
        f"A fresh `python -c` per sample, the clock around the import statement alone; {result['rounds']} interleaved rounds"
        " with `import numpy` (mha_core's one dependency) as the reference.",
        "",
        "| import | median | p25 - p75 |",
        "| --- | ---: | ---: |",
        f"| mha_core | {fmt.ms(a['median'])} | {fmt.ms(a['p25'])} - {fmt.ms(a['p75'])} |",
        f"| numpy | {fmt.ms(b['median'])} | {fmt.ms(b['p25'])} - {fmt.ms(b['p75'])} |",
        "",
        f"mha_core / numpy: {fmt.x(r['median'])}. Heavy modules loaded by `import mha_core`: "
        + (", ".join(result["heavy_modules_after_import"]) or "none (torch, plotly, ipywidgets, IPython all absent)") + ".",
        "",
        "Largest cumulative import times (`python -X importtime -c 'import mha_core'`, one run): "
        + ", ".join(f"{row['module']} {row['cumulative_ms']:.0f} ms" for row in result["importtime_top"]) + ".",
    ]
