#!/usr/bin/env bash
# Two sets of package versions in the class hub's environment (deploy/.venv-hub), interleaved A1 B1 A2 B2: 32
# learners on notebook 03 (its head count), the class hub on this machine (python -m benchmarks.loadtest; root,
# deploy/start.sh --build-only first, so the environment holds the locks). Arm B is what the locks pin; the
# environment is put back to it at the end. Like ab.sh, for a change that is a package's version, not a line.
#
#   benchmarks/loadtest/ab_packages.sh NAME 'PINS FOR ARM A' 'PINS FOR ARM B (the locks)'
#
# Reports: benchmarks/loadtest/NAME/{A1,B1,A2,B2}.md and .json. About 3 minutes a run on two cores. The runs:
#   kernel6_ab: ab_packages.sh kernel6_ab 'ipykernel==7.4.0 nest-asyncio2==1.7.4' 'ipykernel==6.31.0'
set -euo pipefail
cd "$(dirname "$0")/../.."
name=$1 arm_a=$2 arm_b=$3
pip_hub() { deploy/.venv-hub/bin/python -m pip install -q --disable-pip-version-check --no-deps "$@"; }
names() { for pin in $1; do echo "${pin%%[=<>]*}"; done | sort -u; }
# For each B run and at the end: arm B's pins, and no package only arm A named (nest-asyncio2 above).
only_a=$(comm -23 <(names "$arm_a") <(names "$arm_b") | tr '\n' ' ')
back_to_b() {
  pip_hub $arm_b
  [ -z "${only_a// }" ] || deploy/.venv-hub/bin/python -m pip uninstall -q -y $only_a
}
trap back_to_b EXIT
for round in 1 2; do
  for arm in A B; do
    if [ "$arm" = A ]; then pip_hub $arm_a; else back_to_b; fi
    .venv/bin/python -m benchmarks.loadtest --learners 32 --notebooks 03_multiple_heads --no-profile \
      --out "benchmarks/loadtest/$name/$arm$round"
  done
done
