#!/usr/bin/env bash
# Repeat the screen-reader tests (tests/browser/test_screen_reader.py and test_screen_reader_lab.py) N times; print the load average before and
# after each run, its wall time and its pass/fail counts. Handouts are built once first (or taken from
# MHA_HANDOUTS_DIR) so that every run reads the same pages.
#
#   benchmarks/screen_reader_runs.sh [N] [pytest -k expression]
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${1:-3}
select=${2:-}
export PYTHONPATH=$PWD
if [ -z "${MHA_HANDOUTS_DIR:-}" ]; then
  MHA_HANDOUTS_DIR=$(mktemp -d)
  export MHA_HANDOUTS_DIR
  .venv/bin/python tools/handouts.py --out "$MHA_HANDOUTS_DIR" >/dev/null 2>&1
fi
for i in $(seq "$runs"); do
  before=$(cut -d' ' -f1-3 /proc/loadavg)
  start=$(date +%s)
  log=$(mktemp)
  .venv/bin/python -m pytest tests/browser/test_screen_reader.py tests/browser/test_screen_reader_lab.py -q -p no:cacheprovider -rf ${select:+-k "$select"} >"$log" 2>&1 || true
  summary="$(tail -1 "$log"); failed: $(grep -c "^FAILED" "$log" || true) ($(grep "^FAILED" "$log" | sed "s/.*\[//; s/\].*//" | tr "\n" " "))"
  end=$(date +%s)
  echo "run $i: $summary; wall $((end - start)) s; load before $before, after $(cut -d' ' -f1-3 /proc/loadavg)"
done
