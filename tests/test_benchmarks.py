"""The benchmark command starts, runs its quickest path and writes a report with the expected keys.

Benchmarks are not part of the test run otherwise: `make bench` runs them in full.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # benchmarks/ is a folder of the checkout, not part of the installed package

from benchmarks import SECTIONS  # noqa: E402
from benchmarks._timing import interleaved, paired_ratio, percentile, summary  # noqa: E402
from benchmarks.cli import _sections  # noqa: E402


def test_percentile_interpolates_between_sorted_values():
    values = [4.0, 1.0, 3.0, 2.0, 5.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 0) == 1.0 and percentile(values, 100) == 5.0
    assert percentile([1.0, 2.0], 95) == pytest.approx(1.95)
    assert summary(values, scale=1000)["median"] == 3000.0


def test_paired_ratio_is_the_median_of_round_by_round_ratios():
    times = {"ours": [1.0, 2.0, 30.0], "ref": [2.0, 2.0, 10.0]}  # the third round ran on a busy machine
    ratio = paired_ratio(times, "ours", "ref")
    assert ratio["median"] == 1.0  # ratios 0.5, 1.0, 3.0
    assert ratio["of_medians"] == 1.0  # 2.0 / 2.0
    assert ratio["reference"] == "ref"


def test_interleaved_rotates_the_order_and_drops_the_warmup_rounds():
    calls = []
    contenders = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    times = interleaved(contenders, rounds=3, warmup=1)
    assert calls == list("abc" "bca" "cab" "abc")
    assert {name: len(ts) for name, ts in times.items()} == {"a": 3, "b": 3, "c": 3}


def test_interleaved_stops_adding_rounds_at_its_budget_but_not_before_min_rounds():
    import time

    times = interleaved({"sleep": lambda: time.sleep(0.01)}, rounds=100, warmup=0, budget_s=0.05, min_rounds=2)
    assert 2 <= len(times["sleep"]) <= 6


def test_only_names_unknown_sections_and_keeps_the_documented_order():
    assert _sections("controls,import") == ["import", "controls"]
    assert _sections(None) == list(SECTIONS)
    with pytest.raises(SystemExit, match="unknown section.*nope.*valid sections are import"):
        _sections("import,nope")


@pytest.mark.timeout(240)
def test_quick_benchmark_command_runs_and_writes_the_report(tmp_path):
    # On two quiet cores this takes about 15 s; the timeout leaves room for a busy machine.
    cmd = [sys.executable, "-m", "benchmarks", "--quick", "--only", "import,controls", "--controls", "welcome",
           "--out", str(tmp_path)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=230)
    assert done.returncode == 0, done.stderr[-3000:]

    report = json.loads((tmp_path / "report.json").read_text())
    assert {"machine", "versions", "sections", "goals", "generated_at", "command"} <= set(report)
    assert {"cpu", "cores", "ram_gib"} <= set(report["machine"]) and report["machine"]["cores"] >= 1
    assert {"python", "numpy", "torch", "plotly", "ipywidgets"} <= set(report["versions"])
    assert set(report["sections"]) == {"import", "controls"}

    imported = report["sections"]["import"]
    assert imported["quick"] is True and "error" not in imported
    assert imported["result"]["import_mha_core_s"]["median"] > 0
    assert imported["result"]["torch_imported"] is False

    controls = report["sections"]["controls"]
    assert "error" not in controls, controls.get("error")
    slider = controls["result"]["controls"]["welcome.slider"]
    assert slider["events"] >= 5 and slider["errors"] == 0
    assert slider["figure_changed"] == slider["events"]  # every value moved the bars
    assert slider["ms"]["median"] > 0 and slider["ms"]["p95"] >= slider["ms"]["median"]

    goals = {g["goal"]: g for g in report["goals"]}
    assert goals["`import mha_core` leaves torch unimported"]["met"] is True
    assert any(name.startswith("control welcome.slider") for name in goals)

    markdown = (tmp_path / "report.md").read_text()
    assert "## Goals" in markdown and "welcome.slider" in markdown and "CPU:" in markdown


def test_cached_decoding_is_measured_once_in_the_serving_section():
    # One decoding benchmark, built on mha_core.serving (notebook 10's own functions).
    pytest.importorskip("torch")
    from benchmarks import bench_serving

    assert "decoding" not in SECTIONS and not (ROOT / "benchmarks" / "bench_decoding.py").exists()
    result = bench_serving._decoding(True, log=lambda message: None)
    assert [row["n_tokens"] for row in result["rows"]] == list(bench_serving.DECODE_TOKENS[:2])
    for row in result["rows"]:
        assert row["cache_nbytes"] == row["calculated_nbytes"]
        assert row["max_abs_diff_cached"] < 1e-5 and row["max_abs_diff_uncached"] < 1e-5
        assert row["cached_s"] > 0 and row["uncached_s"] > 0
    goals = bench_serving.goals({"decoding": result})
    assert [g["goal"] for g in goals] == [f"cached decoding faster than uncached, N = {n}" for n in (64, 256)]


def test_files_per_change_names_the_files_a_head_count_change_runs_code_in():
    # In a fresh Python: the count sets the profiler and imports the widgets of whichever checkout it is given.
    done = subprocess.run([sys.executable, "-m", "benchmarks.files_per_change"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    files = [line.split()[0] for line in done.stdout.splitlines()[:-1]]
    assert "mha_classroom/widgets/heads.py" in files and "mha_core/figures/heads.py" in files
    assert all(f.startswith(("mha_core/", "mha_classroom/")) for f in files), files
    assert done.stdout.splitlines()[-1].startswith(f"{len(files)} files: ")


def test_the_page_switch_profile_sorts_self_time_by_where_the_code_comes_from():
    from benchmarks.page_switch import self_time_by_source

    def node(i, name, url="", script="7"):
        return {"id": i, "callFrame": {"functionName": name, "url": url, "scriptId": script}}

    profile = {"nodes": [node(1, "(idle)", script="0"), node(2, "(program)", script="0"),
                         node(3, "getBoundingClientRect", script="0"), node(4, "drawHeatmap"),  # new Function: no URL
                         node(5, "render", "blob:http://x/1"), node(6, "m", "http://x/lab/extensions/ipywidgets/a.js"),
                         node(7, "(garbage collector)", script="0")],
               "samples": [1, 2, 3, 4, 4, 5, 6, 7], "timeDeltas": [1000, 2000, 500, 250, 250, 100, 300, 50]}
    assert self_time_by_source(profile) == {
        "the browser itself (layout, paint, style)": 2.0, "idle": 1.0,
        "the browser's built-ins (DOM calls, from any script)": 0.5, "plotly.js": 0.5,
        "ipywidgets and JupyterLab": 0.3, "the course's widgets and anywidget": 0.1, "garbage collection": 0.05}


def test_cpu_per_test_counts_what_a_test_starts_and_nothing_for_an_idle_one(tmp_path):
    """A test that makes another process spin 0.5 CPU-s is counted that much; a test that sleeps is not."""
    tests = tmp_path / "test_spin.py"
    spin = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.5: pass\n"
    tests.write_text("import subprocess, sys, time\n\n"
                     f"def test_spins():\n    subprocess.run([sys.executable, '-c', {spin!r}], check=True)\n\n"
                     "def test_sleeps():\n    time.sleep(0.5)\n")
    out = tmp_path / "rows.json"
    run = subprocess.run([sys.executable, "-m", "benchmarks.cpu_per_test", "--out", str(out), "--", str(tests), "-q"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    cpu = {nodeid.split("::")[-1]: seconds for nodeid, seconds, _ in json.loads(out.read_text())}
    assert cpu["test_spins"] >= 0.45 and cpu["test_sleeps"] < 0.2, cpu
    assert "the costliest tests" in run.stdout and "test_spins" in run.stdout


@pytest.mark.skipif(not (ROOT / "deploy" / "node_modules" / ".bin" / "configurable-http-proxy").exists(),
                    reason="configurable-http-proxy is built by deploy/start.sh --build-only")
def test_proxy_relay_counts_what_the_proxy_spends_relaying_each_change(tmp_path):
    """Every change is relayed and answered through the hub's proxy, and each costs the proxy some CPU."""
    out = tmp_path / "relay.json"
    run = subprocess.run([sys.executable, "-m", "benchmarks.proxy_relay", "--learners", "3", "--changes", "4",
                          "--pace", "0.05", "--rounds", "1", "--idle-s", "0.5", "--proxies", "chp", "--quiet-load", "0",
                          "--out", str(out)],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    (row,) = json.loads(out.read_text())["runs"]
    assert row["proxy"] == "chp" and row["exchanges"] == 12
    assert row["cpu_ms_per_change"] > 0 and 0 < row["rtt_p50_ms"] <= row["rtt_p95_ms"], row


def test_the_load_test_reads_the_proxys_cpu_from_its_cgroup_when_given_one(tmp_path, monkeypatch):
    """``MHA_LOADTEST_PROXY_CGROUP``: the proxy's CPU is the group's ``cpuacct.usage`` (nanoseconds), which keeps
    the CPU of processes that have ended; without it, the live processes'."""
    from benchmarks.loadtest import run as loadtest

    class NoHub:
        def processes(self):
            return []

    (tmp_path / "cpuacct.usage").write_text("2500000000\n")
    monkeypatch.delenv("MHA_LOADTEST_PROXY_CGROUP", raising=False)
    assert loadtest.cpu_by_kind([], NoHub())["proxy"] == 0.0
    monkeypatch.setenv("MHA_LOADTEST_PROXY_CGROUP", str(tmp_path))
    assert loadtest.cpu_by_kind([], NoHub())["proxy"] == 2.5


def test_a_class_whose_hub_never_starts_still_removes_its_accounts_and_folders(monkeypatch, tmp_path):
    """A hub that exits at once raises in ``Hub.__enter__``, where no ``__exit__`` follows: it is stopped and its
    state removed there, and the run's accounts and /run folders are removed all the same (one such run had left
    the service account and two /run folders behind)."""
    from benchmarks.loadtest import run as loadtest

    removed = []

    class HubThatExits(loadtest.Hub):
        start_script = Path("/bin/true")  # a hub that exits at once, as one whose proxy failed to start

        def remove_run_folders(self):  # recorded only: another test's hub may be making them right now
            removed.append("run folders")

    monkeypatch.setattr(loadtest, "remove_accounts", lambda names, **kw: removed.append(sorted(names)))
    monkeypatch.setattr(loadtest, "WORK", tmp_path)  # its state and log, not the checkout's load-test folder
    with pytest.raises(RuntimeError, match="the hub exited"):
        loadtest.run_class(2, changes=1, pace=0.1, notebooks=[], stagger_login_s=0, hub_class=HubThatExits)
    assert removed == ["run folders", ["mhalt02teach", "mhalt02x00", "mhalt02x01"], "run folders"], removed
    assert not (tmp_path / "state-n2").exists() and (tmp_path / "state-n2.log").exists()
