"""``python -m benchmarks``: run the sections, each in a fresh process, and write the report."""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from . import SECTIONS
from ._machine import ROOT, git_revision, load_average, machine, versions
from .report import derive, render_markdown

DEFAULT_OUT = ROOT / "benchmarks"
SECTION_TIMEOUT_S = 30 * 60


def _sections(text: str | None) -> list[str]:
    if not text:
        return list(SECTIONS)
    chosen = [s.strip() for s in text.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in SECTIONS]
    if unknown:
        raise SystemExit(f"--only: unknown section(s) {', '.join(unknown)}; valid sections are {', '.join(SECTIONS)}")
    return [s for s in SECTIONS if s in chosen]  # the documented order, whatever order was asked


def _clean(value):
    """JSON without NaN or infinity (they are not JSON): None instead."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def run_section(name: str, *, quick: bool, controls: str) -> dict:
    with tempfile.TemporaryDirectory(prefix="mha-bench-") as tmp:
        out = Path(tmp) / f"{name}.json"
        cmd = [sys.executable, "-m", "benchmarks._child", name, "--json", str(out)]
        if quick:
            cmd.append("--quick")
        if controls:
            cmd += ["--controls", controls]
        start = time.perf_counter()
        try:
            subprocess.run(cmd, cwd=ROOT, timeout=SECTION_TIMEOUT_S, check=False)
        except subprocess.TimeoutExpired:
            return {"error": f"timed out after {SECTION_TIMEOUT_S} s", "quick": quick,
                    "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        if not out.exists():
            return {"error": "the section's process wrote no result (see the log above)", "quick": quick,
                    "seconds": time.perf_counter() - start,
                    "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        return json.loads(out.read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks",
        description="Time the course and its core; write report.md and report.json.",
    )
    parser.add_argument("--quick", action="store_true", help="few repeats: checks the machinery; figures are indicative")
    parser.add_argument("--only", metavar="SECTIONS", help=f"comma-separated, from: {', '.join(SECTIONS)}")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for report.md and report.json (default: benchmarks/)")
    parser.add_argument("--controls", default="", metavar="GROUPS",
                        help="only these control groups (names from benchmarks/controls_registry.py)")
    parser.add_argument("--fresh", action="store_true",
                        help="with --only: do not keep the other sections from the existing report.json in --out")
    parser.add_argument("--render", action="store_true",
                        help="measure nothing: rewrite report.md (and the goals) from report.json in --out")
    args = parser.parse_args(argv)
    sections = _sections(args.only)
    out_dir = args.out.resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    if args.render:
        report = json.loads((out_dir / "report.json").read_text())
        report.update(derive(report["sections"]))
        report = _clean(report)
        (out_dir / "report.json").write_text(json.dumps(report, indent=1) + "\n")
        (out_dir / "report.md").write_text(render_markdown(report))
        print(f"rewrote {out_dir / 'report.md'} from report.json", file=sys.stderr)
        return 0

    report = {"sections": {}}
    previous = out_dir / "report.json"
    if args.only and not args.fresh and previous.exists():
        try:
            kept = json.loads(previous.read_text()).get("sections", {})
            report["sections"] = {name: kept[name] for name in SECTIONS if name in kept}  # a retired section goes
        except (OSError, ValueError):
            pass

    started = time.perf_counter()
    print(f"benchmarks: {', '.join(sections)}{' (quick)' if args.quick else ''}; load average {load_average()}", file=sys.stderr)
    for name in sections:
        print(f"  [{name}]", file=sys.stderr, flush=True)
        record = run_section(name, quick=args.quick, controls=args.controls)
        record["seconds"] = record.get("seconds")
        report["sections"][name] = record
        status = f"error: {record['error']}" if "error" in record else f"{record.get('seconds') or 0:.0f} s"
        print(f"  [{name}] {status}", file=sys.stderr, flush=True)

    report.update({
        "generated_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "command": "python -m benchmarks " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": machine(),
        "versions": versions(),
        "revision": git_revision(),
        "this_run_s": time.perf_counter() - started,
    })
    report.update(derive(report["sections"]))
    report = _clean(report)
    (out_dir / "report.json").write_text(json.dumps(report, indent=1, sort_keys=False) + "\n")
    (out_dir / "report.md").write_text(render_markdown(report))
    print(f"wrote {out_dir / 'report.md'} and report.json", file=sys.stderr)
    missed = [g for g in report["goals"] if g["met"] is False]
    for g in missed:
        print(f"  goal missed: {g['goal']}: {g['measured']}", file=sys.stderr)
    return 0
