"""Time notebook 09's real-decoder cells in a fresh kernel, cell by cell (a standalone script, not a report section).

    .venv/bin/python benchmarks/time_decoder_cells.py [--runs 3]

Reads the cells from tools/_pending/09_decoder_cells.json (or, once spliced in, from section 10
of notebooks/09_heads_across_layers.ipynb). Each run starts a fresh kernel, imports torch and
mha_core.models.induction first (the notebook's earlier cells have, so they are not the
section's cost), then runs the section's cells, timing each. Prints the median of each cell
over the runs, and the load average before and after (the machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from test_decoder_circuits_findings import _section_cells  # noqa: E402

PREAMBLE = "import time, torch, mha_core.models.induction\n_times = []"
TIMED = "_t = time.perf_counter()\n{source}\n_times.append(time.perf_counter() - _t)"


def one_run(cells) -> list[float]:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    code = [c for c in cells if c["cell_type"] == "code"]
    nb.cells = [nbformat.v4.new_code_cell(PREAMBLE)]
    nb.cells += [nbformat.v4.new_code_cell(TIMED.format(source="".join(c["source"]))) for c in code]
    nb.cells.append(nbformat.v4.new_code_cell("import json\nprint(json.dumps(_times))"))
    env = {"metadata": {"path": str(ROOT)}}
    NotebookClient(nb, timeout=600, kernel_name="python3", resources=env).execute()
    for c in nb.cells[1:-1]:
        errors = [o for o in c.outputs if o.get("output_type") == "error"]
        if errors:
            raise RuntimeError(f"{errors[0]['ename']}: {errors[0]['evalue']}")
    return json.loads(nb.cells[-1].outputs[0]["text"])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args(argv)
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    cells = _section_cells()
    names = [f"code cell {i + 1} ({''.join(c['source']).splitlines()[-1].strip()[:40]})"
             for i, c in enumerate(c for c in cells if c["cell_type"] == "code")]
    print("load average before:", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    runs = [one_run(cells) for _ in range(args.runs)]
    print("load average after: ", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    for i, name in enumerate(names):
        print(f"{name}: median {statistics.median(r[i] for r in runs):.2f} s over {args.runs} runs "
              f"({', '.join(f'{r[i]:.2f}' for r in runs)})")
    totals = [sum(r) for r in runs]
    print(f"section total: median {statistics.median(totals):.2f} s ({', '.join(f'{t:.2f}' for t in totals)})")


if __name__ == "__main__":
    main()
