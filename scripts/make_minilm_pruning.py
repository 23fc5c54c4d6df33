"""Choose heads of all-MiniLM-L6-v2 to switch off, greedily, on the tuning sentences only.

Notebook 08 (real half) reads the result instead of searching itself: the search runs
the model hundreds of times (minutes on two cores), the notebook has seconds. Every
remaining head is scored every ``--rescore-every`` steps (default 8); in between, the
next head in that ranking is tried alone (``analysis.greedy_prune``). ``--rescore-every 1``
is the plain greedy search, about eight times slower. The
notebook then measures the pruned model on sentences and pairs the search never saw.

    .venv/bin/python scripts/make_minilm_pruning.py

Writes ``data/models/minilm_pruning.json``: the threshold, the heads in the order they
were removed (layer, head counted from 0), the tuning score after each removal, and
per number of heads off (0 to all removed) the cosines on the tuning and held-out
sentences and which paraphrase pairs the pruned model still ranks right (measured
after the search, for the notebook's slider). The search is deterministic: the same
model and sentences give the same file. ``--reuse-order`` keeps the order already in
the file and recomputes only the measurements.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "data" / "models" / "minilm_pruning.json"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threshold", type=float, default=0.95, help="keep the mean tuning cosine at or above this")
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--rescore-every", type=int, default=8,
                        help="score every remaining head only every this many steps (1: plain greedy; see greedy_prune)")
    parser.add_argument("--reuse-order", action="store_true", help="take the removal order from the existing --out file")
    args = parser.parse_args(argv)

    from mha_core.pretrained import head_name, load_minilm
    from mha_core.pretrained.analysis import PruneResult, embedding_cosines, paraphrase_ranking, prune_minilm
    from mha_core.pretrained.data import sentence_set

    model = load_minilm()
    sentences = sentence_set("pruning")
    tuning, held_out, pairs = sentences["tuning"], sentences["held_out"], sentences["pairs"]
    start = time.perf_counter()
    if args.reuse_order:
        old = json.loads(args.out.read_text())
        result = PruneResult(tuple(tuple(p) for p in old["removed"]), tuple(old["tuning_mean_cosine_after_each"]),
                             old["threshold"])
        seconds = old["search_seconds"]
    else:
        def progress(head, score):
            print(f"  {time.perf_counter() - start:6.0f} s  off {head_name(*head)}  tuning mean cosine {score:.4f}", flush=True)

        result = prune_minilm(model, tuning, threshold=args.threshold, rescore_every=args.rescore_every, on_step=progress)
        seconds = time.perf_counter() - start
    print(f"search: {len(result.order)} heads removed in {seconds:.0f} s; measuring each step", flush=True)
    steps = []
    for n_off in range(len(result.order) + 1):
        off = list(result.order[:n_off])
        tuning_cos = embedding_cosines(model, tuning, off)
        held_cos = embedding_cosines(model, held_out, off)
        ranked = paraphrase_ranking(model, pairs, off)
        steps.append({
            "n_off": n_off,
            "tuning_mean": round(float(tuning_cos.mean()), 6),
            "tuning_worst": round(float(tuning_cos.min()), 6),
            "held_out_cosines": [round(float(c), 6) for c in held_cos],
            "held_out_mean": round(float(held_cos.mean()), 6),
            "held_out_worst": round(float(held_cos.min()), 6),
            "pair_accuracy": round(float(ranked.mean()), 6),
            "pairs_right": [bool(r) for r in ranked],
        })
    record = {
        "about": "Made by scripts/make_minilm_pruning.py: heads removed greedily on the 'tuning' sentences of "
                 "data/sentences/pruning.json, each step removing the head that keeps the mean cosine between the "
                 "pruned and the full model's embeddings highest, while it stays >= threshold.",
        "threshold": args.threshold,
        "criterion": "mean cosine over the tuning sentences",
        "rescore_every": args.rescore_every,
        "n_tuning": len(tuning),
        "held_out": held_out,
        "n_pairs": len(pairs),
        "removed": [list(pair) for pair in result.order],
        "removed_names": [head_name(*pair) for pair in result.order],
        "tuning_mean_cosine_after_each": [round(s, 6) for s in result.scores],
        "search_seconds": round(seconds, 1),
        "steps": steps,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record, indent=1) + "\n")
    print(f"removed {len(result.order)} of {model.n_layers * model.n_heads} heads in {seconds:.0f} s; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
