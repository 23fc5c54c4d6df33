"""The cluster test's helpers: the class hub started with deploy/cluster/start.sh (tests/hub's
``Hub`` otherwise), what the test needs on this machine, the learners' Slurm jobs."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "tests" / "hub"))

from hubctl import HUB_PYTHON, PROXY, Hub  # noqa: E402

CLUSTER = REPO / "deploy" / "cluster"
CLUSTER_START = CLUSTER / "start.sh"
#: The class: six learners, prefixed so they cannot be anyone's real account.
LEARNERS = [f"ct-l{k}" for k in range(1, 7)]
TOOLS = ("slurmctld", "slurmd", "munged", "mungekey", "sbatch", "squeue", "scancel", "sinfo", "ip", "nsenter",
         "setpriv", "useradd", "userdel")


def load_sim():
    spec = importlib.util.spec_from_file_location("mha_cluster_sim", CLUSTER / "sim.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def missing() -> list[str]:
    problems = []
    if os.geteuid() != 0:
        problems.append("needs root (network namespaces; learners are real Unix accounts)")
    if not HUB_PYTHON.exists() or not PROXY.exists():
        problems.append("deploy/ is not built (run deploy/start.sh --build-only)")
    elif subprocess.run([str(HUB_PYTHON), "-c", "import batchspawner"], capture_output=True).returncode != 0:
        problems.append("batchspawner is not in deploy/.venv-hub (deploy/start.sh --build-only installs the hub lock)")
    for tool in TOOLS:
        if not any(Path(d, tool).exists() for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin")):
            problems.append(f"{tool} not found (Debian: apt-get install slurm-wlm munge iproute2 util-linux)")
    return problems


class ClusterHub(Hub):
    """tests/hub's Hub, started with deploy/cluster/start.sh and the cluster's settings."""

    start_script = CLUSTER_START

    def start(self, timeout: float = 120) -> "ClusterHub":
        return super().start(timeout)  # Slurm's first job check makes the cluster's hub slower to answer


def jobs(hub) -> dict[str, tuple[str, str, str]]:
    """The learners' Slurm jobs: user -> (job id, state, node)."""
    out = subprocess.run(["squeue", "-h", "-o", "%u %i %T %N"], env=hub.slurm_env, capture_output=True, text=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] in LEARNERS:
            found[parts[0]] = (parts[1], parts[2], parts[3])
    return found
