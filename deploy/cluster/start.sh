#!/usr/bin/env bash
# The course's hub on a Slurm cluster (see deploy/README.md, "A class beyond one server: Slurm"):
#
#     sudo MHA_CLUSTER_HUB_IP=10.0.0.5 MHA_CLUSTER_PARTITION=class deploy/cluster/start.sh
#
# Builds what deploy/start.sh builds (the same environment and proxy, batchspawner included),
# then runs JupyterHub with deploy/cluster/jupyterhub_config.py, which loads the one-server
# configuration and puts each learner's server in a Slurm job. On the simulated cluster:
#     sudo python3 deploy/cluster/sim.py up && set -a && . /run/mha-cluster/cluster.env && set +a
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DEPLOY="$(cd "$HERE/.." && pwd)"
if [[ "${1:-}" == "--build-only" ]]; then
    exec "$DEPLOY/start.sh" --build-only
fi

if [[ -z "${MHA_CLUSTER_HUB_IP:-}" ]]; then
    echo "cluster: set MHA_CLUSTER_HUB_IP to the hub's address on the network the compute nodes share" >&2
    exit 1
fi
for tool in sbatch squeue scancel sinfo setpriv; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "cluster: $tool not found (Debian: apt-get install slurm-client util-linux)" >&2
        exit 1
    fi
done
# deploy/start.sh builds (if needed) and runs the hub, with this folder's configuration.
MHA_HUB_CONFIG="$HERE/jupyterhub_config.py" exec "$DEPLOY/start.sh" "${@}"
