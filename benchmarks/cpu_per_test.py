"""The CPU each test costs, every process it starts counted (a browser, a kernel, a screen reader, a hub).

    python -m benchmarks.cpu_per_test [--out FILE] -- tests/browser/test_handouts.py -k 05_

Runs pytest on the arguments after ``--`` in a control group of its own (``tools/course.py``'s ``part_group``:
cgroup v1's ``cpuacct``, as root on Linux), with this module as a pytest plugin: before and after each test it
reads the group's CPU, so a test's figure holds everything that ran meanwhile in any process of the run (a
module's browser, started by the first test that needs it, is counted there). Prints the CPU by file, by test
function (its parameters together) and the costliest tests, with the load average before and after; writes every
test's CPU and wall seconds to ``--out`` (JSON). Where no group can be made it counts pytest's own process and the
children it waited for: a floor, and it says so.

The tests run one at a time (``-p no:xdist``): with several workers a test's figure would hold the others'.

CI's CPU is what bounds its time on two cores (``tools/course.py test`` prints each part's CPU): this says which
tests inside a part cost it.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: The group's CPU counter, given to the pytest run by ``main``.
COUNTER = "MHA_TEST_CPU_COUNTER"
#: Where the plugin writes its rows, given by ``main``.
ROWS = "MHA_TEST_CPU_ROWS"

_rows: list[list] = []


def _cpu() -> float:
    counter = os.environ.get(COUNTER)
    if counter:
        return int(Path(counter).read_text()) / 1e9
    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # noqa: ARG001 - pytest's hook signature
    cpu, wall = _cpu(), time.monotonic()
    yield
    _rows.append([item.nodeid, round(_cpu() - cpu, 2), round(time.monotonic() - wall, 2)])


def pytest_sessionfinish(session):  # noqa: ARG001
    out = os.environ.get(ROWS)
    if out:
        Path(out).write_text(json.dumps(_rows))


def summary(rows: list[list], shown: int = 20) -> list[str]:
    """Lines: the CPU by file, by test function and the costliest tests."""
    by_file, by_function, count = collections.Counter(), collections.Counter(), collections.Counter()
    for nodeid, cpu, _ in rows:
        by_file[nodeid.split("::")[0]] += cpu
        by_function[nodeid.split("[")[0]] += cpu
        count[nodeid.split("[")[0]] += 1
    lines = [f"{sum(r[1] for r in rows):.1f} CPU-s in {len(rows)} tests", "", "by file:"]
    lines += [f"{cpu:8.1f}  {name}" for name, cpu in by_file.most_common(shown)]
    lines += ["", "by test function (its parameters together; how many):"]
    lines += [f"{cpu:8.1f} {count[name]:4d}  {name}" for name, cpu in by_function.most_common(shown)]
    lines += ["", "the costliest tests (CPU-s, wall s):"]
    lines += [f"{cpu:8.1f} {wall:7.1f}  {nodeid}" for nodeid, cpu, wall in sorted(rows, key=lambda r: -r[1])[:shown]]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "artifacts" / "cpu_per_test.json")
    parser.add_argument("pytest_args", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    pytest_args = args.pytest_args[1:] if args.pytest_args[:1] == ["--"] else args.pytest_args
    sys.path.insert(0, str(ROOT / "tools"))
    import course

    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.unlink(missing_ok=True)  # a run that writes nothing shows no rows, not the last run's
    group = course.part_group("cpu per test")
    env = dict(os.environ, **{ROWS: str(args.out)})
    command = [sys.executable, "-m", "pytest", "-p", "benchmarks.cpu_per_test", "-p", "no:cacheprovider", "-p", "no:xdist", *pytest_args]
    if group is not None:
        env[COUNTER] = str(group / "cpuacct.usage")
        command = course.in_group(group, command)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    try:
        done = subprocess.run(command, cwd=ROOT, env=env)
        total = course.group_cpu(group) if group is not None else None
    finally:
        if group is not None:
            course.remove_group(group)
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    rows = json.loads(args.out.read_text()) if args.out.is_file() else []
    print("\n".join(summary(rows)))
    print(f"the whole run: {total:.1f} CPU-s, every process counted" if total is not None else
          "no control group could be made (not root, or no cgroup v1 cpuacct): each figure is pytest's own "
          "process and the children it waited for, a floor")
    print(f"every test: {args.out}")
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
