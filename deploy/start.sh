#!/usr/bin/env bash
# The course on JupyterHub, on one server, in one command:
#
#     deploy/start.sh                 # build what is missing, then run the hub on port 8000
#     deploy/start.sh --build-only    # only build deploy/.venv-hub and deploy/node_modules
#
# What it builds (once; again only when a lock changes):
#   deploy/.venv-hub     the course environment (requirements.lock) + the hub's packages
#                        (deploy/requirements-hub.lock), both with --no-deps, + mha_core and mha_classroom.
#                        Learners' servers and kernels run from it. The learner's own
#                        .venv (make lab) is never touched.
#   deploy/node_modules  configurable-http-proxy, pinned in package.json / package-lock.json
# What it keeps (MHA_HUB_STATE, default deploy/.state): the hub's SQLite database, its
# cookie secret, the poll service's SQLite database, and learners' homes (MHA_HUB_HOMES).
#
# Settings (environment): MHA_HUB_IP (default 127.0.0.1; 0.0.0.0 with a certificate), MHA_HUB_PORT (8000),
# MHA_HUB_DOMAIN (learners at NAME.DOMAIN), MHA_HUB_SSL_CERT and MHA_HUB_SSL_KEY (HTTPS),
# MHA_HUB_AUTH (pam | dummy), MHA_HUB_PASSWORD (dummy only), MHA_HUB_INSTRUCTORS
# (comma-separated user names who may read the poll), MHA_HUB_ADMINS, MHA_HUB_CULL_S
# (idle timeout, default 3600), and per learner MHA_HUB_MAX_TASKS (512 processes and threads),
# MHA_HUB_MEM (2G), MHA_HUB_CPU (0: no cap), MHA_HUB_SCRATCH (256M tmpfs /tmp, /var/tmp, /dev/shm) and MHA_HUB_HOME_SIZE
# (1G: each hub-made home is an ext4 image of that size, mounted at the home); in PAM mode
# MHA_HUB_STATE_SIZE (256M: the state on an ext4 image of its own, MHA_HUB_STATE.img). See deploy/README.md.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/.." && pwd)"
# Debian 12's own /usr/bin/python3.11 (3.11.2) by default: every account can run it, and
# the locks hold nothing that needs a later 3.11 (soupsieve is pinned to 3.0.1, the last
# release that allows 3.11.2). 3.11 only: torch's wheel is cp311.
PYTHON="${PYTHON:-$(command -v /usr/bin/python3.11 || command -v python3.11 || command -v python3)}"

# On a fresh Debian 12 (as root) install what the build needs and the system lacks:
# python3.11-venv (Debian splits venv/ensurepip out of python3.11) and node/npm (the proxy).
apt_missing=()
if [[ "$PYTHON" == /usr/bin/python3.11 ]] && ! /usr/bin/python3.11 -I -c 'import ensurepip, venv' >/dev/null 2>&1; then
    apt_missing+=(python3.11-venv)
fi
if [[ ! -x "$HERE/node_modules/.bin/configurable-http-proxy" ]] && ! command -v npm >/dev/null 2>&1; then
    apt_missing+=(nodejs npm)
fi
if [[ "$PYTHON" == /usr/bin/python3.11 && ! -x /usr/bin/python3.11 ]]; then
    apt_missing+=(python3.11 python3.11-venv)
    PYTHON=/usr/bin/python3.11
fi
if (( ${#apt_missing[@]} )); then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null 2>&1; then
        echo "deploy: installing ${apt_missing[*]} with apt-get ..."
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -q >/dev/null
        apt-get install -y -q --no-install-recommends "${apt_missing[@]}" >/dev/null
    else
        echo "deploy: missing ${apt_missing[*]}; install them (Debian: apt-get install ${apt_missing[*]}) or run as root" >&2
        exit 1
    fi
fi

if ! "$PYTHON" -I -c 'import sys; sys.exit(0 if (3, 11) <= sys.version_info[:2] < (3, 12) else 1)'; then
    echo "deploy: $PYTHON is not Python 3.11.x; set PYTHON=/path/to/python3.11" >&2
    exit 1
fi
# As root, learners' servers run as their own Unix accounts, so the interpreter must be
# one every account can run: not one under a private folder such as /root/.pyenv.
if [[ "$(id -u)" == 0 && "${MHA_HUB_UNIX_USERS:-1}" == 1 ]] && ! "$PYTHON" -I -c 'import os, sys, pathlib; p = pathlib.Path(os.path.realpath(sys.base_prefix)); sys.exit(0 if all(os.stat(d).st_mode & 0o001 for d in [p, *p.parents]) else 1)'; then
    echo "deploy: $PYTHON lives in a folder the learners' accounts cannot enter ($("$PYTHON" -I -c 'import sys; print(sys.base_prefix)'))." >&2
    echo "deploy: set PYTHON to a Python 3.11 every account can run (default: Debian's /usr/bin/python3.11)." >&2
    exit 1
fi
HUB_VENV="${MHA_HUB_VENV:-$HERE/.venv-hub}"
STAMP="$HUB_VENV/.hub-env-installed"
export MHA_HUB_STATE="${MHA_HUB_STATE:-$HERE/.state}"

build_env() {
    local want
    want="$(cat "$ROOT/requirements.lock" "$HERE/requirements-hub.lock" "$ROOT/pyproject.toml" | sha256sum | cut -c1-16)"
    if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$want" ]]; then
        return
    fi
    echo "deploy: building $HUB_VENV (the course lock + the hub lock, --no-deps) ..."
    [[ -x "$HUB_VENV/bin/python" ]] || "$PYTHON" -I -m venv "$HUB_VENV"
    # --no-deps and exact lists: nothing beyond the two locks, so rfc3987-syntax and lark
    # (which jupyter-events would pull in, and which slow every kernel's first figure) stay out.
    "$HUB_VENV/bin/python" -I -m pip install -q --disable-pip-version-check --no-deps \
        -r "$ROOT/requirements.lock" -r "$HERE/requirements-hub.lock"
    # Editable: a `git pull` of the course reaches every learner's next kernel.
    "$HUB_VENV/bin/python" -I -m pip install -q --disable-pip-version-check --no-deps -e "$ROOT"
    if "$HUB_VENV/bin/python" -I -c "import importlib.util as u, sys; sys.exit(0 if (u.find_spec('lark') or u.find_spec('rfc3987_syntax')) else 1)"; then
        echo "deploy: lark or rfc3987-syntax is installed in $HUB_VENV; they slow every kernel's first figure. Remove them." >&2
        exit 1
    fi
    echo "$want" > "$STAMP"
}

build_proxy() {
    if [[ ! -x "$HERE/node_modules/.bin/configurable-http-proxy" ]]; then
        echo "deploy: installing configurable-http-proxy from package-lock.json ..."
        (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
    fi
}

build_env
# Every learner's kernel is the course's (mha_classroom/kernel_io.py: no flush with nothing to send after each
# message, and a control's change answered with idle alone when quick), as in every course environment. At every
# start, not only when the environment is built: a hub built before a setting existed gets it too (once; cheap).
"$HUB_VENV/bin/python" -I -c 'import sys; sys.path.insert(0, sys.argv[1]); import course; course.install_kernel_config(sys.prefix)' "$ROOT/tools"
build_proxy
[[ "${1:-}" == "--build-only" ]] && exit 0

# Files the hub makes (its database, the poll's) are private to it; the state folder is
# only traversable (0711), so each learner can reach their own home under it, and no more.
umask 077
mkdir -p "$MHA_HUB_STATE"
chmod 0711 "$MHA_HUB_STATE"
export PATH="$HUB_VENV/bin:$HERE/node_modules/.bin:$PATH"
cd "$MHA_HUB_STATE"
# MHA_HUB_CONFIG: another configuration that loads this one (deploy/cluster/jupyterhub_config.py).
# MHA_HUB_RUN: the configuration may act on this machine (end an earlier hub's leftovers, check ports).
export MHA_HUB_RUN=1
exec "$HUB_VENV/bin/jupyterhub" -f "${MHA_HUB_CONFIG:-$HERE/jupyterhub_config.py}" "${@}"
