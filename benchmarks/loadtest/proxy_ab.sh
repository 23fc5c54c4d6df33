#!/usr/bin/env bash
# The class's proxy, A/B interleaved: configurable-http-proxy (arm A, the hub's) against nginx behind the same
# REST API (arm B, proxy_ab/nginx_chp.py, a measurement shim), 32 learners on notebook 03, chp1 nginx1 chp2 nginx2.
# Both arms run in one cgroup v1 cpuacct group, so the proxy's CPU counts every process it ran (root; Debian's
# nginx; deploy/start.sh --build-only first). deploy/jupyterhub_config.py is put back after each run.
#
#   benchmarks/loadtest/proxy_ab.sh        reports: benchmarks/loadtest/proxy_ab/{chp,nginx}{1,2}.md and .json
#   ROUNDS=1 NOTEBOOKS=all PREFIX=class- benchmarks/loadtest/proxy_ab.sh   (FIRST=2 ROUNDS=2: its second round)
#                                          the whole class (notebooks 01-05): proxy_ab/class-{chp,nginx}1.md and .json
set -euo pipefail
cd "$(dirname "$0")/../.."
f=deploy/jupyterhub_config.py
group=/sys/fs/cgroup/cpuacct/mha-loadtest-proxy
committed='c.ConfigurableHTTPProxy.command = [str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")]'
wrap='c.ConfigurableHTTPProxy.command = [str(HERE.parent / "benchmarks/loadtest/proxy_ab/in_cgroup.sh"), '
chp="$wrap"'str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")]'
ngx="$wrap"'str(HERE / ".venv-hub/bin/python"), str(HERE.parent / "benchmarks/loadtest/proxy_ab/nginx_chp.py")]'
mkdir -p "$group"
trap 'git checkout -q -- "$f"; rmdir "$group" 2>/dev/null || true' EXIT
export MHA_LOADTEST_PROXY_CGROUP=$group
notebooks=${NOTEBOOKS:-03_multiple_heads}
[ "$notebooks" = all ] && notebooks=$(.venv/bin/python -c 'from benchmarks.loadtest.run import NOTEBOOKS; print(",".join(NOTEBOOKS))')
for round in $(seq "${FIRST:-1}" "${ROUNDS:-2}"); do
  for arm in chp nginx; do
    git checkout -q -- "$f"
    if [ $arm = chp ]; then line=$chp; else line=$ngx; fi
    COMMITTED=$committed CHANGED=$line python3 - "$f" <<'PY'
import os, sys
path = sys.argv[1]
text = open(path).read()
assert os.environ["COMMITTED"] in text
open(path, "w").write(text.replace(os.environ["COMMITTED"], os.environ["CHANGED"], 1))
PY
    .venv/bin/python -m benchmarks.loadtest --learners 32 --notebooks "$notebooks" --no-profile \
      --out "benchmarks/loadtest/proxy_ab/${PREFIX:-}$arm$round"
  done
done
