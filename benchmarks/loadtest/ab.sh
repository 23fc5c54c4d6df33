#!/usr/bin/env bash
# One line of the code changed for arm A, the code as committed for arm B, interleaved A1 B1 A2 B2: 32 learners
# on notebook 03 (its head count), the class hub on this machine (python -m benchmarks.loadtest; root,
# deploy/start.sh --build-only first). The file is put back after each A run and at the end.
#
#   benchmarks/loadtest/ab.sh NAME FILE 'LINE AS COMMITTED' 'LINE FOR ARM A'
#
# Reports: benchmarks/loadtest/NAME/{A1,B1,A2,B2}.md and .json. About 3 minutes a run on two cores. The runs:
#   held_ab:   ab.sh held_ab mha_classroom/widgets/heads.py '    hold_settings = True' '    hold_settings = False'
#   socket_ab: ab.sh socket_ab deploy/course_spawner.py '    unix_socket = Bool(True, config=True,' '    unix_socket = Bool(False, config=True,'
#   flush_ab:  ab.sh flush_ab mha_classroom/kernel_io.py '    skip_clean_flush = True' '    skip_clean_flush = False'
#   watcher_ab: ab.sh watcher_ab mha_classroom/server_io.py '    light_watcher = True' '    light_watcher = False'
#   busy_ab:   ab.sh busy_ab mha_classroom/kernel_io.py '    hold_busy = True' '    hold_busy = False'
#   alarm_ab:  ab.sh alarm_ab mha_classroom/kernel_io.py '    use_alarm = True' '    use_alarm = False'
#   floor_ab:  ab.sh floor_ab mha_classroom/widgets/heads.py '        self.head_count.observe(self._on_change, names="value")' \
#                '        pass  # floor_ab arm A: the course'"'"'s code hears no change'
set -euo pipefail
cd "$(dirname "$0")/../.."
name=$1 file=$2 committed=$3 changed=$4
grep -qxF -- "$committed" <(cut -c1-${#committed} "$file") || { echo "ab.sh: no line starting '$committed' in $file" >&2; exit 2; }
trap 'git checkout -q -- "$file"' EXIT
for round in 1 2; do
  for arm in A B; do
    git checkout -q -- "$file"
    if [ "$arm" = A ]; then
      COMMITTED=$committed CHANGED=$changed python3 - "$file" <<'PY'
import os, sys
path = sys.argv[1]
text = open(path).read()
assert os.environ["COMMITTED"] in text
open(path, "w").write(text.replace(os.environ["COMMITTED"], os.environ["CHANGED"], 1))
PY
    fi
    .venv/bin/python -m benchmarks.loadtest --learners 32 --notebooks 03_multiple_heads --no-profile \
      --out "benchmarks/loadtest/$name/$arm$round"
  done
done
