"""The bottleneck sweep: at a fixed d_model, accuracy against the head count.

More heads at a fixed d_model means smaller heads (d_head = d_model / H). The sweep
trains the toy model on ``LAST_MATCH`` (how far back is the last earlier occurrence
of this token), which needs each head's query-key product to tell tokens apart: a
head of size d_head can give scores of rank at most d_head (Bhojanapalli et al. 2020).

Each setting trains for the same fixed number of steps with several seeds; the result
holds every seed's accuracy, so figures can show the spread.

Two more questions a reader of the sweep should ask, answered here:

- *What does doing nothing score?* ``always_zero_accuracy``: answering 0 ("no earlier
  match") at every position, the baseline every setting must beat.
- *Why is one wide head the worst setting?* ``diagnose``: per setting, accuracy split by
  how many earlier occurrences a position has, and each head's mean weight on the last
  match (its role score). ``diagnosis`` runs it for a few head counts and seeds, plus
  one longer run of a single head; ``python -m mha_core.models.bottleneck --diagnose``
  stores that in ``data/toy/bottleneck_diagnosis.json``.

The full sweep takes a few minutes on two cores, too slow for a notebook, so its
result is stored in ``data/toy/bottleneck_sweep.json`` and shown from there. Make it
again with::

    python -m mha_core.models.bottleneck              # writes data/toy/bottleneck_sweep.json
    python -m mha_core.models.bottleneck --diagnose   # writes data/toy/bottleneck_diagnosis.json
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

from .._data import checkout_data_file
from .training import TrainConfig, train

HEAD_COUNTS = (1, 2, 4, 8, 16, 48)
SEEDS = (0, 1, 2)
D_MODEL = 48
STEPS = 800
FILE_NAME = "bottleneck_sweep.json"
DIAGNOSIS_FILE_NAME = "bottleneck_diagnosis.json"
#: The settings ``diagnosis`` trains: one wide head, the best count, the smallest heads.
DIAGNOSIS_HEAD_COUNTS = (1, 8, 48)
#: The single head is also trained this much longer, to see whether it is only slow.
LONGER_STEPS = 3200
#: Positions of the evaluation batch by how many earlier occurrences of their token they have.
MATCH_CASES = ("no earlier match", "one earlier match", "two or more")


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


# --------------------------------------------------------------------------- baseline and diagnosis


def earlier_matches(tokens) -> np.ndarray:
    """How many earlier positions hold the same token as each position.

    Shapes:
        tokens: (B, T)
        returns: (B, T) int
    """
    tokens = np.asarray(tokens)
    T = tokens.shape[-1]
    earlier = np.arange(T)[None, :] < np.arange(T)[:, None]  # (Tq, Tk): strictly before the query
    same = tokens[:, :, None] == tokens[:, None, :]  # (B, Tq, Tk)
    return (same & earlier).sum(axis=-1)  # (B, T)


def match_case_masks(tokens) -> dict[str, np.ndarray]:
    """One (B, T) bool mask per entry of ``MATCH_CASES``; together they cover every position once."""
    n = earlier_matches(tokens)  # (B, T)
    return dict(zip(MATCH_CASES, (n == 0, n == 1, n >= 2)))


def always_zero_accuracy(batch=None) -> float:
    """Accuracy of answering 0 ("no earlier match") everywhere on the last-match evaluation batch.

    The floor of the sweep's accuracy axis: a model that learned nothing but the most common answer.
    """
    from .training import evaluation_batch

    batch = evaluation_batch("last match") if batch is None else batch
    targets = np.asarray(batch.targets[0])  # (B, T)
    return float((targets == 0).mean())


def diagnose(result, batch=None) -> dict:
    """Where a model trained on last match is right, and where its heads look.

    ``result`` is a ``TrainedModel`` on ``"last match"``. Returns a dict with
    ``accuracy`` (overall), ``accuracy_by_case`` (one per ``MATCH_CASES``),
    ``share_of_positions`` (the same keys), ``weight_on_last_match`` (one per head: mean
    weight on the last earlier occurrence, over positions that have one) and its
    ``max``, and the ``history`` of (step, accuracy).
    """
    import torch

    from .training import evaluation_batch

    if result.config.task != "last match":
        raise ValueError(f"result was trained on task={result.config.task!r}; diagnose needs 'last match'")
    batch = evaluation_batch("last match") if batch is None else batch
    with torch.no_grad():
        logits, weights = result.model(batch.tokens, need_weights=True)  # (1, B, T, C), (B, H, T, T)
    predicted = logits[0].argmax(-1).numpy()  # (B, T)
    targets = batch.targets[0].numpy()  # (B, T)
    right = predicted == targets  # (B, T)
    masks = match_case_masks(batch.tokens.numpy())
    from .analysis import role_scores

    on_match = role_scores(weights, batch.target_positions)[:, 0]  # (H,)
    return {
        "n_heads": result.config.n_heads, "d_head": result.config.d_model // result.config.n_heads,
        "seed": result.config.seed, "steps": result.steps, "accuracy": float(right.mean()),
        "accuracy_by_case": {case: float(right[mask].mean()) for case, mask in masks.items()},
        "share_of_positions": {case: float(mask.mean()) for case, mask in masks.items()},
        "weight_on_last_match": [float(w) for w in on_match], "max_weight_on_last_match": float(on_match.max()),
        "history": [[p.step, float(p.accuracy[0])] for p in result.history],
    }


def diagnosis(head_counts=DIAGNOSIS_HEAD_COUNTS, seeds=SEEDS, *, d_model: int = D_MODEL, steps: int = STEPS,
              longer_steps: int = LONGER_STEPS, log=None) -> dict:
    """``diagnose`` for every (head count, seed) at the sweep's budget, and one head for ``longer_steps``.

    The runs use ``sweep_config`` (evaluated every 200 steps for the history). Their
    final accuracies match the stored sweep's to within 0.005 (exactly for 1 and 48 heads
    when it was made; the last bits of torch's sums can differ between runs of 8 heads).
    """
    from dataclasses import replace

    runs = []
    for H in head_counts:
        for seed in seeds:
            config = replace(sweep_config(H, seed, d_model=d_model, steps=steps), eval_every=min(200, steps))
            runs.append(diagnose(train(config)))
            if log:
                log(f"H={H:3d} seed={seed}: accuracy {runs[-1]['accuracy']:.3f}, "
                    f"largest weight on the last match {runs[-1]['max_weight_on_last_match']:.2f}")
    longer = None
    if longer_steps:
        config = replace(sweep_config(1, seeds[0], d_model=d_model, steps=longer_steps), eval_every=min(200, longer_steps))
        longer = diagnose(train(config))
        if log:
            log(f"H=  1 seed={seeds[0]}, {longer_steps} steps: accuracy {longer['accuracy']:.3f}")
    return {"task": "last match", "d_model": d_model, "steps": steps, "seeds": list(seeds),
            "always_zero_accuracy": always_zero_accuracy(), "cases": list(MATCH_CASES), "runs": runs,
            "longer": longer, "made_by": "python -m mha_core.models.bottleneck --diagnose"}


def sweep_path(file_name: str = FILE_NAME) -> Path:
    """Where the stored sweep lives (the first folder that has it; else the checkout's data/toy/)."""
    return checkout_data_file("toy", file_name)


def load_sweep(path: str | Path | None = None) -> dict:
    """The stored sweep (see ``bottleneck_sweep`` for its fields)."""
    path = Path(path) if path is not None else sweep_path()
    if not path.is_file():
        raise FileNotFoundError(f"no stored bottleneck sweep at {path}; make it with: python -m mha_core.models.bottleneck")
    return json.loads(path.read_text())


def load_diagnosis(path: str | Path | None = None) -> dict:
    """The stored diagnosis (see ``diagnosis`` for its fields)."""
    path = Path(path) if path is not None else sweep_path(DIAGNOSIS_FILE_NAME)
    if not path.is_file():
        raise FileNotFoundError(f"no stored bottleneck diagnosis at {path}; make it with: "
                                "python -m mha_core.models.bottleneck --diagnose")
    return json.loads(path.read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mha_core.models.bottleneck", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=None, help="where to write the JSON (default: data/toy/bottleneck_sweep.json)")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--heads", default=None, help=f"head counts, e.g. {','.join(map(str, HEAD_COUNTS))} (the default)")
    parser.add_argument("--seeds", default=",".join(map(str, SEEDS)))
    parser.add_argument("--diagnose", action="store_true",
                        help=f"write the diagnosis (heads {','.join(map(str, DIAGNOSIS_HEAD_COUNTS))} unless --heads is given) "
                             f"to data/toy/{DIAGNOSIS_FILE_NAME} instead of the sweep")
    parser.add_argument("--longer-steps", type=int, default=LONGER_STEPS, help="steps of the longer single-head run (0: none)")
    args = parser.parse_args(argv)
    start = time.perf_counter()
    seeds = [int(s) for s in args.seeds.split(",")]
    if args.diagnose:
        heads = DIAGNOSIS_HEAD_COUNTS if args.heads is None else [int(h) for h in args.heads.split(",")]
        result = diagnosis(heads, seeds, steps=args.steps, longer_steps=args.longer_steps, log=print)
        name = DIAGNOSIS_FILE_NAME
    else:
        heads = HEAD_COUNTS if args.heads is None else [int(h) for h in args.heads.split(",")]
        result = bottleneck_sweep(heads, seeds, steps=args.steps, log=print)
        name = FILE_NAME
    result["seconds"] = round(time.perf_counter() - start, 1)
    out = args.out or Path(__file__).resolve().parents[2] / "data" / "toy" / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out} in {result['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
