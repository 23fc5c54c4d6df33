#!/usr/bin/env bash
# Settings held by the page, before and after, interleaved: 32 learners on notebook 03 (its head count), the class
# hub on this machine (python -m benchmarks.loadtest; root, deploy/start.sh --build-only first). Arm A turns
# notebook 03's held settings off (HeadGrid.hold_settings = False: every change a figure from the kernel, as before
# issue 38's last stop), arm B is the code as committed. The file is put back after each A run and at the end.
# Reports: benchmarks/loadtest/held_ab/{A1,B1,A2,B2}.md and .json. About 3 minutes a run on two cores.
set -euo pipefail
cd "$(dirname "$0")/../.."
heads=mha_classroom/widgets/heads.py
trap 'git checkout -q -- "$heads"' EXIT
for round in 1 2; do
  for arm in A B; do
    git checkout -q -- "$heads"
    if [ "$arm" = A ]; then sed -i 's/^    hold_settings = True$/    hold_settings = False/' "$heads"; fi
    grep -q "hold_settings = $([ "$arm" = A ] && echo False || echo True)" "$heads"
    .venv/bin/python -m benchmarks.loadtest --learners 32 --notebooks 03_multiple_heads --no-profile \
      --out "benchmarks/loadtest/held_ab/$arm$round"
  done
done
