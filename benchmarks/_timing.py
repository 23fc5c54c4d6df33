"""Timing helpers shared by the sections: interleaved rounds, medians, percentiles, paired ratios.

Imports nothing heavy, so a section can time its own imports.
"""

from __future__ import annotations

import math
import time
from typing import Callable


def percentile(values, q: float) -> float:
    """The q-th percentile (0..100) by linear interpolation between the sorted values."""
    xs = sorted(values)
    if not xs:
        return math.nan
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def median(values) -> float:
    return percentile(values, 50.0)


def summary(values, scale: float = 1.0) -> dict:
    """n, median, p25, p75, p95, min and max of ``values`` times ``scale``."""
    xs = [v * scale for v in values]
    return {
        "n": len(xs),
        "median": median(xs),
        "p25": percentile(xs, 25.0),
        "p75": percentile(xs, 75.0),
        "p95": percentile(xs, 95.0),
        "min": min(xs) if xs else math.nan,
        "max": max(xs) if xs else math.nan,
    }


def paired_ratio(times: dict[str, list[float]], name: str, reference: str) -> dict:
    """Ratio of ``name`` to ``reference`` round by round (both ran in the same round), summarised.

    ``median`` of the per-round ratios is robust to the machine getting busier or
    quieter between rounds; ``of_medians`` is the plain ratio of the two medians.
    """
    rounds = [a / b for a, b in zip(times[name], times[reference]) if b > 0]
    return {
        "reference": reference,
        "median": median(rounds),
        "p25": percentile(rounds, 25.0),
        "p75": percentile(rounds, 75.0),
        "of_medians": median(times[name]) / median(times[reference]),
    }


def interleaved(
    contenders: dict[str, Callable[[], object]],
    *,
    rounds: int,
    warmup: int = 1,
    inner: dict[str, int] | int = 1,
    sync: Callable[[], None] | None = None,
    progress: Callable[[str], None] | None = None,
    budget_s: float | None = None,
    min_rounds: int = 3,
) -> dict[str, list[float]]:
    """Seconds per call of each contender, one sample per round.

    In each round every contender runs once (``inner`` calls, averaged), in an order
    that rotates from round to round, so a change in machine load hits all of them
    alike. The first ``warmup`` rounds are run and thrown away. ``sync`` (for a GPU)
    is called before the clock starts and before it stops.

    With ``budget_s``, stop early (after at least ``min_rounds`` timed rounds) when
    one more round would take the timed rounds past the budget; ``rounds`` is then a
    ceiling.
    """
    names = list(contenders)
    times: dict[str, list[float]] = {name: [] for name in names}
    timed_start = None
    for r in range(warmup + rounds):
        if r == warmup:
            timed_start = time.perf_counter()
        if budget_s is not None and r > warmup and r - warmup >= min_rounds:
            spent = time.perf_counter() - timed_start
            if spent / (r - warmup) * (r - warmup + 1) > budget_s:
                break
        shift = r % len(names)
        for name in names[shift:] + names[:shift]:
            fn = contenders[name]
            n = inner[name] if isinstance(inner, dict) else inner
            if sync:
                sync()
            start = time.perf_counter()
            for _ in range(n):
                fn()
            if sync:
                sync()
            elapsed = (time.perf_counter() - start) / n
            if r >= warmup:
                times[name].append(elapsed)
        if progress and (r + 1) % max(1, (warmup + rounds) // 5) == 0:
            progress(f"round {r + 1}/{warmup + rounds}")
    return times


def calibrate_inner(fn: Callable[[], object], target_s: float = 0.002, max_inner: int = 1000,
                    sync: Callable[[], None] | None = None) -> int:
    """How many calls make one sample last about ``target_s`` (at least 1)."""
    fn()
    if sync:
        sync()
    start = time.perf_counter()
    n = 0
    while time.perf_counter() - start < target_s and n < max_inner:
        fn()
        if sync:
            sync()
        n += 1
    return max(1, n)
