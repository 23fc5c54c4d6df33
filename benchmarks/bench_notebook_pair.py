"""Two notebooks (default: 06 and 09, both budgeted 30 s) in interleaved rounds in fresh kernels, with the
load average before and after: on a busy machine the ratio between them says more than either time alone.

    .venv/bin/python -m benchmarks.bench_notebook_pair [--rounds 2] [NN_a.ipynb NN_b.ipynb]
"""

from __future__ import annotations

import argparse
import os

from ._kernel import NOTEBOOKS, run_notebook
from ._timing import median


def main(argv=None) -> None:
    import nbformat

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="*", default=["06_heads_learn_their_views.ipynb", "09_heads_across_layers.ipynb"])
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    print("load average before:", os.getloadavg())
    walls = {name: [] for name in args.notebooks}
    for r in range(args.rounds):
        order = args.notebooks if r % 2 == 0 else args.notebooks[::-1]
        for name in order:
            result = run_notebook(nbformat.read(NOTEBOOKS / name, as_version=4), label=name)
            walls[name].append(result["wall_s"])
            print(f"round {r + 1}: {name}: {result['wall_s']:.1f} s" + (f"  ERROR {result['error']}" if result["error"] else ""),
                  flush=True)
    print("load average after:", os.getloadavg())
    for name, times in walls.items():
        print(f"{name}: median {median(times):.1f} s over {len(times)} runs {[round(t, 1) for t in times]}")


if __name__ == "__main__":
    main()
