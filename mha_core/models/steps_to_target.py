"""One head against three: how many training steps each needs to reach 99% on every relation.

Notebook 06 trains one head and three heads on the same three relations. With the
notebook's budget of 300 steps one head falls short; given more steps it gets there
too. This module measures how many steps that takes, for several seeds: the
trainer's own ``train`` with the notebook's settings (Adam, learning rate 0.003,
batches of 128), only a larger budget. ``steps`` is the first evaluation (every 10
steps) at which every relation is right at ``target_accuracy`` or more of the
positions of the fixed evaluation batch.

A single head needs thousands of steps, minutes on two cores, too slow for a
notebook, so the table is stored in ``data/toy/steps_to_target.json`` and shown from
there. Make it again with::

    python scripts/make_toy_steps.py          # writes data/toy/steps_to_target.json

Training is deterministic for a seed (see ``training``), so the same machine and torch
version give the same steps.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from .._data import checkout_data_file
from .training import TrainConfig, train

HEAD_COUNTS = (1, 3)
SEEDS = (0, 1, 2, 3, 4)
#: Budget of every run in the table: runs that have not reached the target by then say so.
MAX_STEPS = 30_000
FILE_NAME = "steps_to_target.json"


def run_config(n_heads: int, seed: int, *, max_steps: int = MAX_STEPS) -> TrainConfig:
    """Notebook 06's training settings, with a larger budget: only ``n_heads``, ``seed`` and the budget change."""
    return TrainConfig(n_heads=n_heads, seed=seed, max_steps=max_steps)


def measure_run(n_heads: int, seed: int, *, max_steps: int = MAX_STEPS) -> dict:
    """Train one setting until it reaches the target (or the budget runs out).

    Returns a dict: n_heads, seed, steps (taken), reached (bool), accuracy (R,) and
    role_scores (H, R) at the end, as plain lists.
    """
    result = train(run_config(n_heads, seed, max_steps=max_steps))
    return {"n_heads": n_heads, "seed": seed, "steps": result.steps, "reached": result.reached_target,
            "accuracy": [round(float(a), 4) for a in result.final.accuracy],
            "role_scores": [[round(float(s), 4) for s in row] for row in result.final.role_scores]}


def steps_table(head_counts=HEAD_COUNTS, seeds=SEEDS, *, max_steps: int = MAX_STEPS, log=None) -> dict:
    """Every (head count, seed) trained to the target; the rows, with the settings that made them."""
    rows = []
    for H in head_counts:
        for seed in seeds:
            start = time.perf_counter()
            rows.append(measure_run(H, seed, max_steps=max_steps))
            if log:
                row = rows[-1]
                log(f"H={H} seed={seed}: {row['steps']} steps, {'reached' if row['reached'] else 'NOT reached'}, "
                    f"accuracy {row['accuracy']} ({time.perf_counter() - start:.1f} s)")
    config = run_config(1, 0, max_steps=max_steps)
    return {"task": config.task, "d_model": config.d_model, "max_steps": max_steps, "eval_every": config.eval_every,
            "target_accuracy": config.target_accuracy, "batch_size": config.batch_size, "lr": config.lr,
            "head_counts": list(head_counts), "seeds": list(seeds), "rows": rows,
            "made_by": "python scripts/make_toy_steps.py"}


def steps_by_head_count(table: dict) -> dict[int, list[int]]:
    """``{n_heads: [steps for each seed, in the table's seed order]}``."""
    out: dict[int, list[int]] = {}
    for row in table["rows"]:
        out.setdefault(row["n_heads"], []).append(row["steps"])
    return out


def table_path() -> Path:
    """Where the stored table lives (the first folder that has it; else the checkout's data/toy/)."""
    return checkout_data_file("toy", FILE_NAME)


def load_steps_table(path: str | Path | None = None) -> dict:
    """The stored table (see ``steps_table`` for its fields)."""
    path = Path(path) if path is not None else table_path()
    if not path.is_file():
        raise FileNotFoundError(f"no stored steps-to-target table at {path}; make it with: python scripts/make_toy_steps.py")
    return json.loads(path.read_text())
