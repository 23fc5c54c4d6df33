"""Fixtures for the browser tests: one JupyterLab server and one Chromium per module that drives JupyterLab
(each test deletes its kernel sessions when it ends; playwright's sync API allows one running instance
at a time, and other modules start their own Chromium), the offline handouts built once for every test
that reads them, and the run's report.

Without Chromium or playwright the browser tests are skipped with the reason, unless
the environment variable CI is "true": then they fail, so CI cannot pass without them.
At the end of the session one line per notebook is printed, and the full report is
written to artifacts/browser/report.json and report.md (next to the screenshots).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

import psutil
import pytest
from filelock import FileLock

sys.path.insert(0, str(Path(__file__).resolve().parent))  # lab_server, lab_page, notebook_checks

from browser_config import ARTIFACTS, BUDGET_S, PICTURES, REPO, SERVER_ROOT, missing_tools  # noqa: E402
from browser_config import fail_or_skip as _fail_or_skip  # noqa: E402
from course import chromium_path  # noqa: E402
from lab_page import chromium  # noqa: E402
from lab_server import LabStartError, running_lab  # noqa: E402

RUN_KEY = pytest.StashKey[dict]()


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """GNOME Orca listening, for the screen-reader tests (``screen_reader.ScreenReader``), one per module."""
    import screen_reader
    from screen_reader import ScreenReader, ScreenReaderError

    problems = missing_tools() + screen_reader.missing(chromium_path())
    if problems:
        _fail_or_skip("screen reader: " + "; ".join(problems))
    try:
        with ScreenReader(tmp_path_factory.mktemp("orca"), chromium=chromium_path()) as sr:
            yield sr
    except ScreenReaderError as exc:
        pytest.fail(f"Orca did not start: {exc}", pytrace=False)


def _run(config) -> dict:
    if RUN_KEY not in config.stash:
        config.stash[RUN_KEY] = {"results": [], "seconds": 0.0, "cleanup": {}}
    return config.stash[RUN_KEY]


@pytest.fixture(scope="session")
def browser_run(request) -> dict:
    """The session's record: per-notebook results, start and end times, cleanup notes."""
    return _run(request.config)


@pytest.fixture(scope="session")
def lab(browser_run):
    """A JupyterLab server on the repository, from this interpreter's environment: one for the run (each test
    that opens a notebook deletes the sessions before and after, so its kernel is fresh)."""
    problems = missing_tools()
    if problems:
        _fail_or_skip("; ".join(problems))
    started = time.monotonic()
    work_dir = None
    try:
        with running_lab(SERVER_ROOT, python=sys.executable) as server:
            work_dir = server.work_dir
            yield server
    except LabStartError as exc:
        pytest.fail(f"JupyterLab did not start: {exc}", pytrace=False)
    finally:
        browser_run["seconds"] += time.monotonic() - started
        if work_dir is not None:
            browser_run["cleanup"]["leftover_processes"] = processes_mentioning(str(work_dir))


@pytest.fixture(scope="session")
def browser(lab, browser_run):
    """Chromium for the JupyterLab tests, one for the run (each test opens its own page); closed before the
    server stops."""
    with chromium(lab.work_dir, browser_run["cleanup"]) as context:
        yield context


@pytest.fixture(scope="session")
def built_handouts(request, tmp_path_factory):
    """The offline handouts of every notebook (``tools/handouts.py``), built once for the run: (folder, pages by stem).

    Building executes every notebook (about 70 s on two cores): every test that reads the pages shares this one build.
    ``make test`` runs the screen-reader tests beside the other browser tests, each a pytest run of its own, and names
    one folder for both in ``MHA_HANDOUTS_SHARED``: the first run to need the pages builds them there, under a lock,
    and the other waits for that build and reads it.
    """
    sys.path.insert(0, str(REPO / "tools"))
    import handouts

    shared = os.environ.get("MHA_HANDOUTS_SHARED")
    out = Path(shared) if shared else tmp_path_factory.mktemp("handouts")
    out.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(out) + ".lock"):
        done = out / "handouts.json"  # written last by handouts.build
        if shared and done.is_file():
            pages = json.loads(done.read_text())
            _run(request.config)["handouts_shared"] = str(out)
        else:
            started = time.monotonic()
            pages = handouts.build(out, log=lambda *_: None)
            _run(request.config)["handouts_build_s"] = round(time.monotonic() - started, 1)
    return out, {Path(p["file"]).stem: p for p in pages}


def processes_mentioning(fragment: str) -> list[str]:
    """Processes whose command line mentions ``fragment`` (this run's temporary folder): should be none."""
    found = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            cmd = " ".join(proc.info["cmdline"] or [])
            if fragment in cmd:
                found.append(f"{proc.pid} {cmd[:160]}")
    return found


# --------------------------------------------------------------------------- the report


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def summary_line(r: dict) -> str:
    lat = [x for c in r.get("controls", []) for x in c.get("latency_s", [])]
    lat_text = f", control->figure {max(lat):.2f} s max" if lat else ""
    t_int = r.get("time_to_interactive_s")
    return (
        f"{r['notebook']:<40} {r['outcome']:<6} "
        f"interactive {t_int if t_int is None else f'{t_int:5.1f} s'}  "
        f"ws {_mb(r.get('ws_received_bytes', 0))} in / {_mb(r.get('ws_sent_bytes', 0))} out  "
        f"plots {r.get('counts', {}).get('plots', '?')}, controls checked {len(r.get('controls', []))}"
        f"{lat_text}{'' if r.get('has_expectations', True) else '  [no expectations entry]'}"
    )


def write_report(run: dict) -> tuple[Path, Path, float | None]:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    total = run["seconds"] or None
    data = {
        "total_s": total,
        "budget_s": BUDGET_S,
        "notebooks": run["results"],
        "presenting": run.get("presenting", []),
        "cleanup": run["cleanup"],
    }
    json_path, md_path = ARTIFACTS / "report.json", ARTIFACTS / "report.md"
    json_path.write_text(json.dumps(data, indent=2, default=str))
    lines = [
        "# Browser test: JupyterLab in Chromium",
        "",
        f"Total browser run (server start to stop): {total:.1f} s (budget {BUDGET_S} s)." if total else "",
        "",
        "| notebook | outcome | kernel idle | run-all | time to interactive | figures rendered "
        "| ws received | ws sent | plots | controls (latency) | quiz |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in run["results"]:
        fmt = lambda k: f"{r[k]:.1f} s" if r.get(k) is not None else "-"  # noqa: E731
        controls = "; ".join(
            f"{c['control']} ({', '.join(f'{x:.2f}' for x in c.get('latency_s', []))} s)" for c in r.get("controls", [])
        ) or "-"
        quiz = r.get("quiz") or {}
        lines.append(
            f"| {r['notebook']} | {r['outcome']} | {fmt('kernel_ready_s')} | {fmt('run_all_s')} | "
            f"{fmt('time_to_interactive_s')} | {fmt('rendered_s')} | {_mb(r.get('ws_received_bytes', 0))} | "
            f"{_mb(r.get('ws_sent_bytes', 0))} | {r.get('counts', {}).get('plots', '-')} | {controls} | "
            f"{'feedback shown' if quiz else '-'} |"
        )
    lines += readable_table(run)
    failures = [r for r in run["results"] + run.get("presenting", []) if r.get("error")]
    if failures:
        lines += ["", "## Failures", ""] + [f"- {r['notebook']}: {r['error'][:600]}" for r in failures]
    missing = [r["notebook"] for r in run["results"] if not r.get("has_expectations", True)]
    if missing:
        lines += ["", f"No expectations entry (generic checks only): {', '.join(missing)}."]
    stderr = [(r["notebook"], s) for r in run["results"] for s in r.get("stderr", [])]
    if stderr:
        lines += ["", "## Other stderr output (not failures)", ""] + [f"- {n}: {s[:200]!r}" for n, s in stderr]
    left = run["cleanup"].get("leftover_processes")
    lines += ["", f"Processes left behind after the run: {left or 'none'}."]
    md_path.write_text("\n".join(lines) + "\n")
    return json_path, md_path, total


def readable_table(run: dict) -> list[str]:
    """Per notebook, in both layouts: the smallest text in its outputs and the tallest control group with its figure."""
    laptop = {r["notebook"]: r for r in run["results"]}
    presenting = {r["notebook"]: r for r in run.get("presenting", [])}
    if not any(r.get("smallest_px") for r in [*laptop.values(), *presenting.values()]):
        return []
    px = lambda r, k: "-" if r.get(k) is None else f"{r[k]:g} px"  # noqa: E731
    lines = ["", "## Readable from the back row", "",
             "Smallest text in the cell outputs (figures, controls, tables, quick checks) and the tallest control "
             "group with its figure, against the notebook's visible height.", "",
             "| notebook | laptop 1280 x 800, file browser open: smallest | tallest / visible "
             "| Presentation Mode 1280 x 720, projector theme: smallest | tallest / visible |",
             "| --- | --- | --- | --- | --- |"]
    for name in sorted(set(laptop) | set(presenting)):
        a, b = laptop.get(name, {}), presenting.get(name, {})
        lines.append(f"| {name} | {px(a, 'smallest_px')} | {px(a, 'tallest_group')} / {px(a, 'visible_height')} "
                     f"| {px(b, 'smallest_px')} | {px(b, 'tallest_group')} / {px(b, 'visible_height')} |")
    return lines


def handouts_line(run: dict) -> str:
    """Where this run's handouts came from: built here (in how long), the other browser run's build, or none."""
    if run.get("handouts_build_s") is not None:
        return f"handouts built once in {run['handouts_build_s']} s"
    if run.get("handouts_shared"):
        return f"handouts read from the other browser run's build in {run['handouts_shared']}"
    return "handouts not needed in this run"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    run = config.stash.get(RUN_KEY, None)
    if run and not (run["results"] or run.get("presenting")):
        terminalreporter.write_line(handouts_line(run))
    if not run or not (run["results"] or run.get("presenting")):
        return
    json_path, md_path, total = write_report(run)
    tr = terminalreporter
    tr.section("browser: JupyterLab in Chromium")
    for r in run["results"]:
        tr.write_line(summary_line(r))
    for r in run.get("presenting", []):
        tr.write_line(f"{r['notebook']:<40} {r['outcome']:<6} presenting: checks {r.get('check_s', '-')} s, "
                      f"smallest text {r.get('smallest_px', '-')} px")
    if total is not None:
        over = "  OVER BUDGET" if total > BUDGET_S else ""
        tr.write_line(f"total JupyterLab run (server start to stop) {total:.1f} s (budget {BUDGET_S} s){over}")
    tr.write_line(handouts_line(run))
    left = run["cleanup"].get("leftover_processes")
    tr.write_line(f"processes left behind: {left or 'none'}")
    pictures = (f"screenshots in {ARTIFACTS.relative_to(REPO)}/" if PICTURES
                else "no screenshots taken (browser_config.PICTURES; MHA_PICTURES=1 takes them)")
    tr.write_line(f"report: {md_path.relative_to(REPO)}, {json_path.relative_to(REPO)}; {pictures}")
