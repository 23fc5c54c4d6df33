"""Fixtures for the cluster test (marker ``cluster``): the simulated Slurm cluster
(deploy/cluster/sim.py) and the class hub on it (deploy/cluster/start.sh).

They need root (network namespaces, learners as Unix accounts), Slurm and munge
(Debian: ``apt-get install slurm-wlm munge``) and a built deploy/ (``deploy/start.sh
--build-only``). Without them the test is skipped with the reason, unless the
environment variable CI is "true": then it fails, so CI cannot pass without it.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from clusterctl import CLUSTER, LEARNERS, REPO, ClusterHub, jobs, load_sim, missing  # noqa: E402
from hubctl import Cleanup, hold_machine  # noqa: E402


def pytest_configure(config):
    config.addinivalue_line("markers", "cluster: builds the simulated Slurm cluster and runs the class hub on it; "
                                       "needs root, slurm-wlm and munge, and a built deploy/")


def fail_or_skip(message: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"cluster test cannot run on CI: {message}", pytrace=False)
    pytest.skip(f"cluster test skipped: {message}")


@pytest.fixture(scope="module")
def sim():
    """The simulated cluster, built for the module and removed at its end (checked)."""
    problems = missing()
    if problems:
        fail_or_skip("; ".join(problems))
    left = hold_machine()  # one hub or cluster session at a time here; a killed one's leftovers removed
    sim = load_sim()
    if sim.our_netns() or sim.our_links() or sim.STATE.exists():
        left.append(f"simulated cluster: {sim.down()}")  # no other session runs: it is a killed one's
    if left:
        print(f"\ncluster test: removed what an interrupted earlier session left: {left}", file=sys.stderr)
    if sim.our_netns() or sim.our_links() or sim.STATE.exists():
        fail_or_skip(f"a simulated cluster is already up here; remove it first: sudo python3 {CLUSTER / 'sim.py'} down")
    t0 = time.perf_counter()
    made = sim.up()
    made["up_s"] = time.perf_counter() - t0
    try:
        yield sim, made
    finally:
        sim.down()
        text = Path("/etc/hosts").read_text()
        left = {"netns": sim.our_netns(), "links": sim.our_links(), "hosts": sim.hosts_lines_ours(text),
                "state": sim.STATE.exists(), "processes": sim.pids_naming(str(sim.STATE))}
        assert not any(left.values()), f"the simulated cluster left {left}"


@pytest.fixture(scope="module")
def cluster_hub(sim):
    """The class hub on the cluster: dummy login on loopback, homes in a throwaway folder."""
    sim_module, made = sim
    cleanup = Cleanup()
    cleanup.accounts = set(LEARNERS)  # only the accounts this test makes (not tests/hub's)
    cleanup.open_path_to(REPO)
    tmp = Path(tempfile.mkdtemp(prefix="mha-clustertest-", dir="/tmp"))
    os.chmod(tmp, 0o711)
    cleanup.paths.append(tmp)
    env = dict(line.split("=", 1) for line in (sim_module.STATE / "cluster.env").read_text().split())
    hub = ClusterHub(tmp / "hub", MHA_HUB_HOMES=str(tmp / "homes"), MHA_CLUSTER_POLL_S="3", **env)
    hub.slurm_env = dict(os.environ, SLURM_CONF=env["SLURM_CONF"])
    hub.homes = tmp / "homes"
    cleanup.hubs.append(hub)
    try:
        t0 = time.perf_counter()
        hub.start()
        hub.start_s = time.perf_counter() - t0
        yield hub
    finally:
        with contextlib.suppress(Exception):
            hub.stop()
        # The hub's log and the controller's, kept for a look after the run (artifacts/ is not in git).
        keep = REPO / "artifacts" / "cluster"
        with contextlib.suppress(OSError):
            keep.mkdir(parents=True, exist_ok=True)
            (keep / "hub.log").write_text(hub.log())
            (keep / "slurmctld.log").write_text((sim_module.STATE / "log" / "slurmctld.log").read_text(errors="replace"))
        # The hub leaves learners' jobs running when it stops (they outlive a restart): end them here.
        subprocess.run(["scancel", "--partition", made["partition"]], env=hub.slurm_env, capture_output=True)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and jobs(hub):
            time.sleep(0.5)
        problems = cleanup.run()
        assert not problems, problems
