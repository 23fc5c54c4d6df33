"""How long an induction head takes to form in the two-layer toy model, over seeds; and what it is then.

    .venv/bin/python -m benchmarks.bench_induction                  # 5 seeds, 3 rounds, both settings
    .venv/bin/python -m benchmarks.bench_induction --seeds 10 --rounds 1 --json out.json

Forming: a head's induction score reaches 0.4 (ARENA's threshold, chapter 1.2
``induction_attn_detector``), measured every 10 steps on the fixed repeated random
tokens. Each run is a fresh ``train_induction(..., stop_when_formed=True)`` (no cache),
torch on one thread. The steps to form are fixed by the seed; the seconds are not, so
each seed runs once per round, the seeds in an order that rotates from round to round,
and the report gives the median over rounds. The budget: under 30 s on two cores
(COURSE.md, a notebook that trains).

Then, for each seed and setting, one full default run (600 steps varying, 150 fixed)
and its analysis: previous-token and induction scores against chance, K- and
Q-composition of layer 0 into layer 1 against the random baseline, and zero and mean
ablation of each layer-0 head (the best layer-1 induction score, the second-repeat loss).

The 1-minute load average is printed before and after: above 2 (the cores) other work
was competing and every time here is longer than on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from ._machine import load_average

BUDGET_S = 30.0
FULL_STEPS = {"varying": 600, "fixed": 150}


def time_to_form(seeds, rounds: int, repeat: str, log=print) -> dict:
    from mha_core.models.induction import train_induction

    train_induction(seed=0, max_steps=5)  # warm-up: imports, first allocations
    seconds: dict[int, list[float]] = {s: [] for s in seeds}
    steps: dict[int, int | None] = {}
    wall: dict[int, list[float]] = {s: [] for s in seeds}
    for r in range(rounds):
        order = list(seeds)[r % len(seeds):] + list(seeds)[: r % len(seeds)]
        for seed in order:
            start = time.perf_counter()
            result = train_induction(seed=seed, repeat=repeat, max_steps=2000, stop_when_formed=True)
            wall[seed].append(time.perf_counter() - start)
            steps[seed] = result.formed_at
            seconds[seed].append(result.seconds_to_form if result.formed_at else float("nan"))
    rows = {}
    for seed in seeds:
        median = statistics.median(seconds[seed])
        rows[seed] = {"steps": steps[seed], "seconds_median": median, "seconds": seconds[seed],
                      "ms_per_step": 1000 * median / steps[seed] if steps[seed] else None}
        log(f"  {repeat} seed {seed}: formed at step {steps[seed]}, {median:.2f} s (median of {rounds}: "
            f"{', '.join(f'{s:.2f}' for s in seconds[seed])})")
    return rows


def analyse(seed: int, repeat: str) -> dict:
    from mha_core.models import induction_analysis as analysis
    from mha_core.models.induction import train_induction

    result = train_induction(seed=seed, repeat=repeat, max_steps=FULL_STEPS[repeat])
    scores = analysis.head_scores(result)
    comp = analysis.composition(result)
    zero, mean = analysis.ablation_effects(result, "zero"), analysis.ablation_effects(result, "mean")
    losses = result.losses
    return {
        "formed_at": result.formed_at,
        "repeated_half_loss_plateau": float(losses[50:150, 1].mean()),
        "repeated_half_loss_end": float(losses[-50:, 1].mean()),
        "first_half_loss_end": float(losses[-50:, 0].mean()),
        "previous_token_start": result.history[0].previous_token.round(3).tolist(),
        "previous_token": scores.previous_token.round(3).tolist(),
        "induction_start": result.history[0].induction.round(3).tolist(),
        "induction": scores.induction.round(3).tolist(),
        "chance": {"previous_token": round(scores.chance.previous_token, 3), "induction": round(scores.chance.induction, 3)},
        "k_composition": comp.k_composition[0].round(3).tolist(),
        "q_composition": comp.q_composition[0].round(3).tolist(),
        "baseline": {"mean": round(comp.baseline.mean, 3), "std": round(comp.baseline.std, 3)},
        "ablation": {e.ablation: {"induction_on": round(e.induction_on, 3), "repeat_loss_on": round(e.repeat_loss_on, 3),
                                  "induction": e.induction.round(3).tolist(), "repeat_loss": e.repeat_loss.round(3).tolist()}
                     for e in (zero, mean)},
    }


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", default="varying,fixed")
    parser.add_argument("--no-analysis", action="store_true")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args(argv)
    seeds = list(range(args.seeds))
    report = {"load_before": load_average(), "seeds": seeds, "rounds": args.rounds, "budget_s": BUDGET_S}
    print(f"load average before: {report['load_before']}")
    for repeat in args.repeat.split(","):
        print(f"time to form ({repeat} repeat length):")
        rows = time_to_form(seeds, args.rounds, repeat)
        formed = [r["steps"] for r in rows.values() if r["steps"]]
        worst = max(r["seconds_median"] for r in rows.values())
        report[repeat] = {"per_seed": rows, "steps_min": min(formed), "steps_max": max(formed),
                          "seconds_worst": worst, "all_formed": len(formed) == len(seeds), "within_budget": worst < BUDGET_S}
        print(f"  {len(formed)}/{len(seeds)} formed; steps {min(formed)}-{max(formed)}; worst seed {worst:.2f} s "
              f"(budget {BUDGET_S:.0f} s)")
        if not args.no_analysis:
            report[repeat]["analysis"] = {}
            for seed in seeds:
                a = analyse(seed, repeat)
                report[repeat]["analysis"][seed] = a
                print(f"  {repeat} seed {seed} after {FULL_STEPS[repeat]} steps: prev-token {a['previous_token']} "
                      f"induction {a['induction']} (chance {a['chance']['previous_token']} / {a['chance']['induction']}); "
                      f"K-comp {a['k_composition']} Q-comp {a['q_composition']} vs baseline {a['baseline']['mean']}; "
                      f"repeated-half loss {a['repeated_half_loss_plateau']:.2f} -> {a['repeated_half_loss_end']:.2f}; "
                      f"zero {a['ablation']['zero']['induction']} {a['ablation']['zero']['repeat_loss']}; "
                      f"mean {a['ablation']['mean']['induction']} {a['ablation']['mean']['repeat_loss']}")
    report["load_after"] = load_average()
    print(f"load average after: {report['load_after']}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return report


if __name__ == "__main__":
    main()
