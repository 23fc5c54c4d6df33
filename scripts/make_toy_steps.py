"""Steps to 99% on every relation, for one head and for three, over several seeds (notebook 06).

Notebook 06 reads the result instead of training: one head needs thousands of steps
(minutes on two cores), the notebook has seconds. Every run is notebook 06's own
training (``mha_core.models.training.train``), with a larger budget.

    .venv/bin/python scripts/make_toy_steps.py                 # seeds 0-4, heads 1 and 3
    .venv/bin/python scripts/make_toy_steps.py --seeds 0,1 --heads 1

Writes ``data/toy/steps_to_target.json`` (see ``mha_core.models.steps_to_target``).
Training is deterministic for a seed, so the same machine and torch version give the
same steps; ``tests/test_models_steps_to_target.py`` retrains some rows to check them.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mha_core.models import steps_to_target as S  # noqa: E402

OUT = ROOT / "data" / "toy" / S.FILE_NAME


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--heads", default=",".join(map(str, S.HEAD_COUNTS)))
    parser.add_argument("--seeds", default=",".join(map(str, S.SEEDS)))
    parser.add_argument("--max-steps", type=int, default=S.MAX_STEPS)
    args = parser.parse_args(argv)
    start = time.perf_counter()
    table = S.steps_table([int(h) for h in args.heads.split(",")], [int(s) for s in args.seeds.split(",")],
                          max_steps=args.max_steps, log=lambda line: print(line, flush=True))
    table["seconds"] = round(time.perf_counter() - start, 1)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(table, indent=1) + "\n")
    print(f"wrote {args.out} in {table['seconds']} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
