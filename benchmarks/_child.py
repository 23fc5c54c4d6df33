"""One section in its own fresh process: ``python -m benchmarks._child NAME --json PATH [--quick]``.

Writes {"result": ..., "seconds": ..., ...} to PATH; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
import traceback
from datetime import datetime, timezone

from ._machine import load_average


def log(message: str) -> None:
    print(f"    {message}", file=sys.stderr, flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("section")
    parser.add_argument("--json", required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--controls", default="")
    args = parser.parse_args(argv)

    module = importlib.import_module(f"benchmarks.bench_{args.section}")
    record = {
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "quick": args.quick,
        "load_average_before": load_average(),
    }
    start = time.perf_counter()
    try:
        controls = [c for c in args.controls.split(",") if c] or None
        record["result"] = module.run(args.quick, log=log, controls=controls)
    except Exception as exc:
        traceback.print_exc()
        record["error"] = f"{type(exc).__name__}: {exc}"
    record["seconds"] = time.perf_counter() - start
    record["load_average_after"] = load_average()
    with open(args.json, "w") as f:
        json.dump(record, f, default=str)
    return 0 if "error" not in record else 1


if __name__ == "__main__":
    raise SystemExit(main())
