"""Time CI's parts on two checkouts, interleaved: which part of the browser run costs what, before and after a change.

    python benchmarks/ci_parts.py --checkout before=/tmp/main-copy --checkout after=. --rounds 2 -- tests/browser

Each round runs the given pytest arguments once in every checkout, in turn (A, B, A, B, ...), with
that checkout's ``mha_core`` first on ``sys.path`` and ``--durations=0``. Per run it records the wall
time, the load average before and after (the machine is shared: say the load with the numbers), and the
seconds of each test file (from pytest's durations: setup, call and teardown, summed), written to
``--out`` as JSON and printed as a table with the median per checkout and part.
Run it from the checkout whose script you want; it only reads the others.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

DURATION = re.compile(r"^\s*([0-9.]+)s (setup|call|teardown)\s+(\S+?)(::\S*)?$")


def durations_of(output: str) -> list[list]:
    """Every line of pytest's ``--durations=0``: [seconds, setup|call|teardown, test id], slowest first."""
    found = []
    for line in output.splitlines():
        match = DURATION.match(line)
        if match:
            found.append([float(match.group(1)), match.group(2), match.group(3) + (match.group(4) or "")])
    return sorted(found, reverse=True)


def parts_of(output: str) -> dict[str, float]:
    """Seconds per test file from pytest's ``--durations=0`` lines (what pytest hides under 5 ms is left out)."""
    parts: dict[str, float] = defaultdict(float)
    for line in output.splitlines():
        found = DURATION.match(line)
        if found:
            parts[found.group(3)] += float(found.group(1))
    return {k: round(v, 1) for k, v in sorted(parts.items())}


def run_once(label: str, checkout: Path, pytest_args: list[str], python: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout))
    load_before = os.getloadavg()
    start = time.monotonic()
    done = subprocess.run([python, "-m", "pytest", "-p", "no:cacheprovider", "--durations=0", "-q", *pytest_args],
                          cwd=checkout, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - start
    load_after = os.getloadavg()
    tail = done.stdout.strip().splitlines()[-1:] or [""]
    return {"label": label, "checkout": str(checkout), "exit": done.returncode, "seconds": round(seconds, 1),
            "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in load_after],
            "parts": parts_of(done.stdout), "durations": durations_of(done.stdout), "summary": tail[0], "output_tail": done.stdout[-6000:]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkout", action="append", required=True, help="label=path, at least one")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--out", type=Path, default=Path("artifacts/ci_parts.json"))
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER, help="after --: what pytest runs in each checkout")
    args = parser.parse_args(argv)
    checkouts = [(c.split("=", 1)[0], Path(c.split("=", 1)[1]).resolve()) for c in args.checkout]
    pytest_args = [a for a in args.pytest_args if a != "--"] or ["tests/browser"]
    runs = []
    for n in range(args.rounds):
        for label, path in checkouts:
            print(f"round {n + 1}, {label}: load average before {os.getloadavg()[0]:.2f}", flush=True)
            run = run_once(label, path, pytest_args, args.python)
            runs.append(run)
            print(f"  {run['seconds']:.0f} s, exit {run['exit']}, load after {run['load_after'][0]:.2f}: {run['summary']}",
                  flush=True)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(runs, indent=2))
    print("\nmedian seconds per part (pytest's durations, per test file), and the whole run:")
    for label, _ in checkouts:
        mine = [r for r in runs if r["label"] == label]
        names = sorted({p for r in mine for p in r["parts"]})
        print(f"{label}: whole run {statistics.median(r['seconds'] for r in mine):.0f} s "
              f"(load before {', '.join(str(r['load_before'][0]) for r in mine)}; "
              f"after {', '.join(str(r['load_after'][0]) for r in mine)})")
        for name in names:
            print(f"  {name:<50} {statistics.median(r['parts'].get(name, 0.0) for r in mine):7.1f} s")
    return 0 if all(r["exit"] == 0 for r in runs) else 1


if __name__ == "__main__":
    sys.exit(main())
