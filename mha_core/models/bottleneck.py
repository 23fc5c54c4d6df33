"""The bottleneck sweep: at a fixed d_model, accuracy against the head count.

More heads at a fixed d_model means smaller heads (d_head = d_model / H). The sweep
trains the toy model on ``LAST_MATCH`` (how far back is the last earlier occurrence
of this token), which needs each head's query-key product to tell tokens apart: a
head of size d_head can give scores of rank at most d_head (Bhojanapalli et al. 2020).

Each setting trains for the same fixed number of steps with several seeds; the result
holds every seed's accuracy, so figures can show the spread.

The full sweep takes a few minutes on two cores, too slow for a notebook, so its
result is stored in ``data/toy/bottleneck_sweep.json`` and shown from there. Make it
again with::

    python -m mha_core.models.bottleneck            # writes data/toy/bottleneck_sweep.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .training import TrainConfig, train

HEAD_COUNTS = (1, 2, 4, 8, 16, 48)
SEEDS = (0, 1, 2)
D_MODEL = 48
STEPS = 800
FILE_NAME = "bottleneck_sweep.json"


def sweep_config(n_heads: int, seed: int, *, d_model: int = D_MODEL, steps: int = STEPS) -> TrainConfig:
    """The config of one run of the sweep: ``LAST_MATCH``, a fixed budget, no early stop short of 100%."""
    return TrainConfig(n_heads=n_heads, seed=seed, d_model=d_model, task="last match", max_steps=steps,
                       target_accuracy=1.0, eval_every=steps)


def bottleneck_sweep(head_counts=HEAD_COUNTS, seeds=SEEDS, *, d_model: int = D_MODEL, steps: int = STEPS, log=None) -> dict:
    """Train every (head count, seed) and return the accuracies.

    Returns a dict: d_model, steps, task, seeds, and ``rows``: one per head count with
    n_heads, d_head, accuracy (one per seed), mean, min, max, std.
    """
    rows = []
    for H in head_counts:
        accs = []
        for seed in seeds:
            start = time.perf_counter()
            result = train(sweep_config(H, seed, d_model=d_model, steps=steps))
            accs.append(float(result.final.accuracy[0]))
            if log:
                log(f"H={H:3d} d_head={d_model // H:3d} seed={seed}: accuracy {accs[-1]:.3f} "
                    f"({time.perf_counter() - start:.1f} s)")
        a = np.array(accs)
        rows.append({"n_heads": H, "d_head": d_model // H, "accuracy": accs, "mean": float(a.mean()),
                     "min": float(a.min()), "max": float(a.max()), "std": float(a.std())})
    return {"task": "last match", "d_model": d_model, "steps": steps, "seeds": list(seeds), "rows": rows,
            "made_by": "python -m mha_core.models.bottleneck"}


def _data_dirs() -> list[Path]:
    candidates = []
    try:
        from importlib.resources import files

        candidates.append(Path(str(files("mha_core.data"))) / "toy")
    except (ImportError, TypeError, ValueError, AttributeError, ModuleNotFoundError):
        pass
    package_dir = Path(__file__).resolve().parents[1]
    candidates += [package_dir / "data" / "toy", package_dir.parent / "data" / "toy"]
    return candidates


def sweep_path() -> Path:
    """Where the stored sweep lives (the first folder that has it; else the checkout's data/toy/)."""
    for folder in _data_dirs():
        if (folder / FILE_NAME).is_file():
            return folder / FILE_NAME
    return Path(__file__).resolve().parents[2] / "data" / "toy" / FILE_NAME


def load_sweep(path: str | Path | None = None) -> dict:
    """The stored sweep (see ``bottleneck_sweep`` for its fields)."""
    path = Path(path) if path is not None else sweep_path()
    if not path.is_file():
        raise FileNotFoundError(f"no stored bottleneck sweep at {path}; make it with: python -m mha_core.models.bottleneck")
    return json.loads(path.read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mha_core.models.bottleneck", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="where to write the JSON (default: data/toy/bottleneck_sweep.json)")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--heads", default=",".join(map(str, HEAD_COUNTS)))
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    args = parser.parse_args(argv)
    start = time.perf_counter()
    result = bottleneck_sweep([int(h) for h in args.heads.split(",")], [int(s) for s in args.seeds.split(",")],
                              steps=args.steps, log=print)
    result["seconds"] = round(time.perf_counter() - start, 1)
    out = args.out or Path(__file__).resolve().parents[2] / "data" / "toy" / FILE_NAME
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out} in {result['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
