#!/usr/bin/env bash
# The kernel websocket with and without Nagle's algorithm, interleaved: 32 learners on notebook 03 (its head count),
# the class hub on this machine (python -m benchmarks.loadtest; root, deploy/start.sh --build-only first). Arm A
# drops the learners' servers' --ServerApp.kernel_websocket_connection_class (jupyter_server's own websocket, Nagle
# on), arm B is the hub's configuration as committed (mha_classroom.server.NoDelayConnection). The file is put back
# after each A run and at the end. Reports: benchmarks/loadtest/nodelay_ab/{A1,B1,A2,B2}.md and .json. About
# 3 minutes a run on two cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
config=deploy/jupyterhub_config.py
trap 'git checkout -q -- "$config"' EXIT
for round in 1 2; do
  for arm in A B; do
    git checkout -q -- "$config"
    if [ "$arm" = A ]; then sed -i '/kernel_websocket_connection_class=mha_classroom.server.NoDelayConnection/d' "$config"; fi
    if [ "$arm" = A ]; then ! grep -q NoDelayConnection "$config"; else grep -q NoDelayConnection "$config"; fi
    .venv/bin/python -m benchmarks.loadtest --learners 32 --notebooks 03_multiple_heads --no-profile \
      --out "benchmarks/loadtest/nodelay_ab/$arm$round"
  done
done
