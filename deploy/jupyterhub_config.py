"""JupyterHub for the course on one server (started by deploy/start.sh; see deploy/README.md).

- The proxy: configurable-http-proxy from deploy/node_modules (npm, pinned).
- Learners: each logs in and gets their own JupyterLab (``jupyterhub-singleuser`` from
  deploy/.venv-hub, the course environment), started as a local process by
  ``CourseSpawner``. As root, each learner's server runs as the learner's own Unix
  account with a home folder of mode 0700: one learner cannot read another's files,
  quiz progress included. At first login the course's notebooks are copied into
  ``~/course`` (the learner's own copy, which they may change).
- Quiz progress: ``~/.mha_course/progress.sqlite3`` in the learner's home (MHA_COURSE_PROGRESS).
- The class poll: the ``mha-poll`` service (deploy/poll_service.py); the role
  ``instructor`` may read its counts.
- The idle culler stops servers idle for MHA_HUB_CULL_S seconds (default 3600).
- Kernels talk to their server over Unix sockets (``KernelManager.transport=ipc``):
  with TCP, two learners' kernels started at the same moment can pick the same port.

Who may reach what (see deploy/README.md, "Security"):

- Every learner's server has its own origin: ``NAME.DOMAIN`` (``c.JupyterHub.subdomain_host``),
  so a page one learner serves cannot read the hub's pages or another learner's server.
  On one machine DOMAIN is ``localhost`` (learners at ``http://NAME.localhost:PORT``);
  a real server needs a wildcard DNS record and a wildcard certificate.
- HTTPS on the public port from the instructor's certificate (MHA_HUB_SSL_CERT/KEY), with
  ``__Host-`` cookies; plain HTTP only on loopback, or with MHA_HUB_ALLOW_HTTP=1 (TLS
  ended by a proxy in front).
- ``disable_user_config``: nothing in a learner's home (``~/.jupyter``, labextensions or
  static paths under ``~/.local/share/jupyter``) configures their server.
- Accounts: see course_spawner.py (never a system account, dummy mode only accounts the hub made).
- The poll service and the idle culler run as the unprivileged ``mha-hub-svc``.

Settings come from the environment (deploy/start.sh passes them through):

    MHA_HUB_STATE        hub database, cookie secret, poll database (default deploy/.state)
    MHA_HUB_HOMES        learners' homes when the hub makes the accounts (default $MHA_HUB_STATE/homes), and
                         the image homes of PAM accounts (default $MHA_HUB_STATE-homes)
    MHA_HUB_IP / MHA_HUB_PORT   where learners connect (127.0.0.1:8000; 0.0.0.0 when a certificate is given)
    MHA_HUB_DOMAIN       the host name learners type (default localhost); learners are at NAME.DOMAIN
    MHA_HUB_SSL_CERT / MHA_HUB_SSL_KEY   the certificate (wildcard: DOMAIN and *.DOMAIN) and its key
    MHA_HUB_ALLOW_HTTP   1: a proxy in front ends TLS (browsers see https://DOMAIN; __Host- cookies);
                         plain HTTP is otherwise accepted only with MHA_HUB_DOMAIN=localhost
    MHA_HUB_PUBLIC_PORT  with MHA_HUB_ALLOW_HTTP: the port browsers use on the proxy in front (443)
    MHA_HUB_API_PORT     the hub's API on loopback (8081)
    MHA_HUB_PROXY_API_PORT / MHA_POLL_PORT   without root only (8001 / 10101); as root both are
                         Unix sockets under /run (mha-hub-proxy, mha-hub-poll) no learner can take
    MHA_HUB_MAX_TASKS    processes and threads per learner (512; 0: no limit)
    MHA_HUB_MEM          memory per learner, scratch space included (2G; 0: no limit)
    MHA_HUB_SCRATCH      each learner's own tmpfs on /tmp, /var/tmp, /dev/shm (256M; 0: the shared ones)
    MHA_HUB_CPU          cores' time each learner may use (0: no cap; busy learners share the cores equally)
    MHA_HUB_HOME_SIZE    each learner's home, a file system of its own (1G; 0: plain folders); in PAM mode the
                         server's home, bound over the login home inside it (default 0: the login home)
    MHA_HUB_STATE_SIZE   pam only: the state's own file system, MHA_HUB_STATE.img (256M; 0: none)
    MHA_POLL_BURST / MHA_POLL_RATE   poll posts per learner: a burst, then per second (30 / 1)
    MHA_HUB_AUTH         pam (default: the server's Unix accounts) or dummy (trials, load tests)
    MHA_HUB_PASSWORD     dummy only, required: the one password every learner types
    MHA_HUB_TRIAL        dummy only: 1 to allow dummy mode bound beyond loopback (a trial, not a class)
    MHA_HUB_CREATE_USERS 1: make a Unix account for a learner at first start (as root; default 1 for dummy)
    MHA_HUB_UNIX_USERS   1 (default as root): run each learner as their Unix account; 0: everyone as the hub's user
    MHA_HUB_GROUP        pam only: only members of this Unix group may log in (needed: without it the hub
                         refuses to start, unless MHA_HUB_ALL_ACCOUNTS=1 lets every normal account in)
    MHA_HUB_INSTRUCTORS / MHA_HUB_ADMINS   comma-separated user names
    MHA_HUB_CULL_S       idle seconds before a server is stopped (3600)
"""

import getpass
import ipaddress
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from course_spawner import (  # noqa: E402
    SERVICE_USER, CourseSpawner, UnsafePath, end_learner, ensure_service_user, names_from_env, open_trusted_dir, owned_dir,
    proxy_target, refusing_authenticator, sweep_leftovers, uid_min,
)
from learner_limits import describe_holders, parse_size, port_holders, release_state, reserve_state  # noqa: E402
from poll_service import READ_SCOPE, SERVICE_NAME  # noqa: E402

c = get_config()  # noqa: F821 (JupyterHub provides get_config)

# A hub started in the background of a script (`... &` with no job control, a CI runner) inherits
# SIGINT and SIGQUIT ignored, and so would every service and server it starts: each stop (SIGINT
# first) would wait out its timeout, and a hub's Ctrl-C took 61 s. What Ctrl-C means is put back
# before anything is started (a caught signal is the default again in each child).
if os.environ.get("MHA_HUB_RUN") == "1":
    import signal as _signal

    if _signal.getsignal(_signal.SIGINT) == _signal.SIG_IGN:
        _signal.signal(_signal.SIGINT, _signal.default_int_handler)
    if _signal.getsignal(_signal.SIGQUIT) == _signal.SIG_IGN:
        _signal.signal(_signal.SIGQUIT, _signal.SIG_DFL)

STATE = Path(os.environ.get("MHA_HUB_STATE", HERE / ".state")).resolve()
STATE.mkdir(parents=True, exist_ok=True)
BIN = Path(sys.executable).parent
AUTH = os.environ.get("MHA_HUB_AUTH", "pam").strip().lower()
#: Set by deploy/start.sh when it runs the hub: only then does loading this file act on the machine
#: (its own disk for the state, end an earlier hub's leftovers, check and hold ports, the folders under /run).
RUNNING = os.environ.get("MHA_HUB_RUN") == "1"
#: PAM accounts' homes are plain folders, often on the disk that holds the state: the hub's state gets
#: a file system of its own, this size, allocated before any learner logs in, so a learner who fills
#: their home cannot stop the hub or the poll from writing (hub-made homes are images of their own).
STATE_BYTES = parse_size(os.environ.get("MHA_HUB_STATE_SIZE", "256M"), "MHA_HUB_STATE_SIZE")
if 0 < STATE_BYTES < 32 * 1024**2:
    raise ValueError(f"MHA_HUB_STATE_SIZE={os.environ.get('MHA_HUB_STATE_SIZE')!r} is below 32M: too small for the hub's "
                     "and the poll's databases; give e.g. 256M, or 0 to keep the state on the disk it is on")
if RUNNING and AUTH == "pam" and STATE_BYTES and os.geteuid() == 0:
    import atexit

    if reserve_state(STATE, STATE_BYTES) is not None:
        atexit.register(release_state, STATE)
    os.chdir(STATE)  # deploy/start.sh entered the folder before it was mounted over
PORT = int(os.environ.get("MHA_HUB_PORT", "8000"))
POLL_PORT = int(os.environ.get("MHA_POLL_PORT", "10101"))
INSTRUCTORS = names_from_env("MHA_HUB_INSTRUCTORS")
ADMINS = names_from_env("MHA_HUB_ADMINS")

# --------------------------------------------------------------------------- network: origins, TLS


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


SSL_CERT = os.environ.get("MHA_HUB_SSL_CERT", "")
SSL_KEY = os.environ.get("MHA_HUB_SSL_KEY", "")
if bool(SSL_CERT) != bool(SSL_KEY):
    raise ValueError(f"MHA_HUB_SSL_CERT={SSL_CERT!r} and MHA_HUB_SSL_KEY={SSL_KEY!r}: give both (a certificate and its key) or neither")
for var, path in (("MHA_HUB_SSL_CERT", SSL_CERT), ("MHA_HUB_SSL_KEY", SSL_KEY)):
    if path and not os.path.isfile(path):
        raise ValueError(f"{var}={path!r} is not a file; give the path of the PEM file")
HTTPS = bool(SSL_CERT)
SCHEME = "https" if HTTPS else "http"
IP = os.environ.get("MHA_HUB_IP") or ("0.0.0.0" if HTTPS else "127.0.0.1")
LOOPBACK = _is_loopback(IP)
#: TLS ended by a proxy in front (MHA_HUB_ALLOW_HTTP=1): browsers see HTTPS, the hub plain HTTP.
TLS_IN_FRONT = not HTTPS and os.environ.get("MHA_HUB_ALLOW_HTTP") == "1"
if not HTTPS and not LOOPBACK and not TLS_IN_FRONT:
    raise ValueError(
        f"MHA_HUB_IP={IP!r} is beyond loopback without HTTPS: learners' passwords and cookies would cross the "
        "network in the clear. Give MHA_HUB_SSL_CERT and MHA_HUB_SSL_KEY, bind MHA_HUB_IP=127.0.0.1, or set "
        "MHA_HUB_ALLOW_HTTP=1 if a proxy in front ends TLS")
DOMAIN = os.environ.get("MHA_HUB_DOMAIN", "localhost").strip().lower().rstrip(".")
if not DOMAIN or "/" in DOMAIN or ":" in DOMAIN:
    raise ValueError(f"MHA_HUB_DOMAIN={DOMAIN!r} is not a host name; give one such as class.example.org (learners get NAME.class.example.org)")
if not HTTPS and not TLS_IN_FRONT and DOMAIN != "localhost":
    # Over plain HTTP a learner's page on NAME.DOMAIN can set a cookie for the whole DOMAIN
    # (cookie tossing: another learner's browser then logs in as them). Only __Host- cookies,
    # which need HTTPS as the browser sees it, are safe from that.
    raise ValueError(
        f"MHA_HUB_DOMAIN={DOMAIN!r} over plain HTTP: a learner's page on their subdomain could set the hub's "
        "login cookie for the whole domain in another learner's browser. Give MHA_HUB_SSL_CERT and "
        "MHA_HUB_SSL_KEY, set MHA_HUB_ALLOW_HTTP=1 if a proxy in front ends TLS (browsers then see HTTPS), "
        "or use MHA_HUB_DOMAIN=localhost for a trial on this machine")
if TLS_IN_FRONT:
    # What the browser sees: https://DOMAIN on the front proxy's port (MHA_HUB_PUBLIC_PORT, default 443).
    _public_port = int(os.environ.get("MHA_HUB_PUBLIC_PORT", "443"))
    PUBLIC = "https://" + DOMAIN + ("" if _public_port == 443 else f":{_public_port}")
else:
    _default_port = 443 if HTTPS else 80
    PUBLIC = f"{SCHEME}://{DOMAIN}" + ("" if PORT == _default_port else f":{PORT}")

c.JupyterHub.bind_url = f"{SCHEME}://{IP}:{PORT}"
# One origin per learner (NAME.DOMAIN): the browser's same-origin policy then keeps a page
# one learner serves away from the hub's pages and every other learner's server.
c.JupyterHub.subdomain_host = PUBLIC
if HTTPS:
    c.JupyterHub.ssl_cert = SSL_CERT
    c.JupyterHub.ssl_key = SSL_KEY
if HTTPS or TLS_IN_FRONT:
    # __Host- cookies: no other subdomain (another learner's server) can set or overwrite them.
    # They must be Secure, so only where the browser sees HTTPS (a certificate here, or TLS in front).
    c.JupyterHub.cookie_host_prefix_enabled = True

# --------------------------------------------------------------------------- hub, proxy, state
from jupyterhub.proxy import ConfigurableHTTPProxy  # noqa: E402
from traitlets import Dict as TraitDict  # noqa: E402


#: The cluster's configuration (deploy/cluster/jupyterhub_config.py) sets this before loading this file:
#: learners' servers there are Slurm jobs that outlive the hub, so nothing of theirs is swept here.
CLUSTER = os.environ.get("MHA_HUB_CLUSTER") == "1"
ROOT = os.geteuid() == 0


def _previous_proxy_pid() -> int | None:
    try:
        return int((STATE / "proxy.pid").read_text())
    except (OSError, ValueError):
        return None


def refuse_taken_port(port: int, what: str, var: str) -> None:
    """Stop the hub, with a message naming the holder, if anything but the hub's own (earlier) proxy
    listens on ``port``: a learner's process there would be sent the requests (and tokens) meant for ``what``."""
    holders = [h for h in port_holders(port) if h["pid"] not in (os.getpid(), _previous_proxy_pid())]
    if holders:
        raise ValueError(
            f"the port {port} for {what} ({var}) is already taken: {describe_holders(holders)}. The hub will not "
            f"start {what} behind someone else's listener. Stop that process (if it is a learner's, end it: "
            f"pkill -KILL -u NAME), or choose another port with {var}")


def _end_learner_holders(port: int, log) -> None:
    """Before the proxy (re)starts: a learner's process on its public port is ended (and said so);
    anyone else's stops the start with the reason."""
    holders = [h for h in port_holders(port) if h["pid"] not in (os.getpid(), _previous_proxy_pid())]
    if not holders:
        return
    learners = [h for h in holders if h["uid"] is not None and h["uid"] >= uid_min() and h["uid"] != _svc_uid()]
    if ROOT and len(learners) == len(holders):
        for h in learners:
            import pwd

            name = pwd.getpwuid(h["uid"]).pw_name
            log.error("a learner's process held the public port %s: %s; ending %s's processes",
                      port, describe_holders([h]), name)
            end_learner(name, h["uid"], whole_account=True)
        return
    refuse_taken_port(port, "the public proxy", "MHA_HUB_PORT")


def _svc_uid() -> int | None:
    import pwd

    try:
        return pwd.getpwnam(SERVICE_USER).pw_uid
    except KeyError:
        return None


def _remove_stale_api_socket(log) -> None:
    """Before the proxy (re)starts as root: remove its API socket file if nothing answers on it.

    A proxy ended by SIGKILL (or a crash) leaves the file behind. JupyterHub removes it when its own
    pid file names the dead proxy; when that file is gone (another state folder, a wiped state), the
    next proxy on the port failed with EADDRINUSE and the hub did not start. The folder is root's
    alone (0700, ``PROXY_RUN``), so the file can only be a proxy's of this port; one that answers is
    a live proxy's and is left (the start then says the address is in use).
    """
    if not ROOT:
        return
    import socket
    import stat

    path = PROXY_RUN / f"api-{PORT}.sock"
    try:
        if not stat.S_ISSOCK(path.lstat().st_mode):
            return
    except FileNotFoundError:
        return
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except ConnectionRefusedError:
        path.unlink()
        log.warning("removed %s: a proxy's API socket nobody answers on (a proxy ended without cleaning up)", path)
    except OSError:
        pass
    finally:
        probe.close()


class CourseProxy(ConfigurableHTTPProxy):
    """configurable-http-proxy, restarted at most by one watcher, and never once the hub is stopping.

    JupyterHub 6.1.1 checks every few seconds that its proxy runs and restarts it if not; each
    (re)start adds one more periodic check and never stops the previous one, and ``stop()``
    stops only the newest. So after one restart, Ctrl-C ended the proxy and the older check,
    still running while the servers stopped, started a new one that outlived the hub (an
    orphan on the public and API ports).
    """

    _stopping = False

    _targets = TraitDict(help="routespec -> the target as JupyterHub gave it")

    # A learner's server is a Unix socket (CourseSpawner.unix_socket): the proxy is given the
    # socket's path without the port JupyterHub writes into every user server's URL, and the hub,
    # checking its routes, sees the target it gave (else it would re-add each route at each check).
    async def add_route(self, routespec, target, data):
        await super().add_route(routespec, proxy_target(target), data)
        self._targets[routespec] = target

    async def delete_route(self, routespec):
        await super().delete_route(routespec)
        self._targets.pop(routespec, None)

    async def get_all_routes(self):
        routes = await super().get_all_routes()
        for spec, route in routes.items():
            given = self._targets.get(spec)
            if given and proxy_target(given) == route["target"]:
                route["target"] = given
        return routes

    async def start(self):
        if self._check_running_callback is not None:
            self._check_running_callback.stop()
        _end_learner_holders(PORT, self.log)
        _remove_stale_api_socket(self.log)
        await super().start()

    def stop(self):
        self._stopping = True
        super().stop()

    async def check_running(self):
        if self._stopping:
            return
        await super().check_running()


c.JupyterHub.proxy_class = CourseProxy
# This hub's learners' control groups are mha-hub/port-PORT/NAME: another hub on this machine
# (another public port) never ends this one's learners, nor this one another's.
import course_spawner  # noqa: E402

course_spawner.HUB_ID[0] = f"port-{PORT}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("MHA_HUB_API_PORT", "8081"))
#: Folders under /run for the hub's Unix sockets: root's (the proxy's API) or the services' account's
#: (the poll), so no learner can make a socket there, or a link in its place.
PROXY_RUN = Path("/run/mha-hub-proxy")
POLL_RUN = Path("/run/mha-hub-poll")
if ROOT:
    # The proxy's API on a Unix socket only root can reach: no learner can listen where the hub
    # sends the proxy's token, nor reach the API.
    if RUNNING:
        _run_fd = open_trusted_dir(Path("/run"))
        try:
            os.close(owned_dir(_run_fd, PROXY_RUN.name, 0, 0, 0o700, where=str(PROXY_RUN)))
        finally:
            os.close(_run_fd)
    # One socket per hub on this machine, named by its public port (which no two hubs share).
    c.ConfigurableHTTPProxy.api_url = "http+unix://" + str(PROXY_RUN / f"api-{PORT}.sock").replace("/", "%2F")
else:
    c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{int(os.environ.get('MHA_HUB_PROXY_API_PORT', '8001'))}"
c.ConfigurableHTTPProxy.command = [str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True

# --------------------------------------------------------------------------- who logs in
GROUP = os.environ.get("MHA_HUB_GROUP", "").strip()
CREATE_USERS = os.environ.get("MHA_HUB_CREATE_USERS", "1" if AUTH == "dummy" else "0") == "1"
if AUTH == "dummy":
    from jupyterhub.auth import DummyAuthenticator

    if not os.environ.get("MHA_HUB_PASSWORD"):
        raise ValueError("MHA_HUB_AUTH=dummy needs MHA_HUB_PASSWORD (the one password learners type); "
                         "without it any password would log in as anyone")
    if not LOOPBACK and os.environ.get("MHA_HUB_TRIAL") != "1":
        raise ValueError(f"MHA_HUB_AUTH=dummy with MHA_HUB_IP={IP!r}: anyone who knows the one password can log in "
                         "under any name. Bind MHA_HUB_IP=127.0.0.1, use MHA_HUB_AUTH=pam for a class, or set "
                         "MHA_HUB_TRIAL=1 for a trial")
    c.JupyterHub.authenticator_class = refusing_authenticator(DummyAuthenticator)
    c.DummyAuthenticator.password = os.environ["MHA_HUB_PASSWORD"]
    c.Authenticator.allow_all = True
elif AUTH == "pam":
    from jupyterhub.auth import PAMAuthenticator

    c.JupyterHub.authenticator_class = refusing_authenticator(PAMAuthenticator)
    if GROUP:
        c.PAMAuthenticator.allowed_groups = {GROUP}
    elif os.environ.get("MHA_HUB_ALL_ACCOUNTS") == "1":
        c.Authenticator.allow_all = True
    else:
        # Every normal account with a password would get a server: a staff member's, a former
        # student's, an account made for something else. The class is a group; say which.
        raise ValueError("MHA_HUB_AUTH=pam without MHA_HUB_GROUP: every normal account on this server could log in "
                         "and get a server. Make the class a group and name it (groupadd learners; usermod -aG "
                         "learners NAME; MHA_HUB_GROUP=learners), or set MHA_HUB_ALL_ACCOUNTS=1 if every account "
                         "here is a member of the class")
else:
    raise ValueError(f"MHA_HUB_AUTH={AUTH!r} is not valid; choose pam or dummy")
c.Authenticator.create_users = CREATE_USERS
c.Authenticator.allowed_group = GROUP
c.Authenticator.admin_users = set(ADMINS)
c.Authenticator.allowed_users = set(INSTRUCTORS) | set(ADMINS)

# --------------------------------------------------------------------------- learners' servers
c.JupyterHub.spawner_class = CourseSpawner
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
# Nothing in the learner's home configures their server: ~/.jupyter, and labextensions or
# static files under ~/.local/share/jupyter, are left out of every search path.
c.Spawner.disable_user_config = True
c.Spawner.args = [
    "--KernelManager.transport=ipc",
    # No update checks or news pop-ups: a class has no network.
    "--LabApp.news_url=",
    "--ServerApp.shutdown_no_activity_timeout=0",
    # A kernel's activity recorded from the parts it needs (mha_classroom/server_io.py): less of the
    # server's CPU for each message a class's controls make.
    "--ServerApp.kernel_manager_class=mha_classroom.server_io.CourseKernelManager",
]
c.Spawner.default_url = "/lab/tree/course/00_welcome.ipynb"
#: Where the poll listens: as root, a Unix socket in a folder only the services' account may write
#: (POLL_RUN), so no learner can listen in its place (a TCP port, free for a moment, could be taken
#: by any account, and every kernel would send it its token); without root, loopback TCP.
POLL_SOCKET = POLL_RUN / f"poll-{PORT}.sock"  # one per hub on this machine, by its public port
POLL_URL = ("http+unix://" + str(POLL_SOCKET).replace("/", "%2F")) if ROOT else f"http://127.0.0.1:{POLL_PORT}"
c.Spawner.environment = {"MHA_POLL_URL": f"{POLL_URL}/services/{SERVICE_NAME}/"}
c.Spawner.start_timeout = 180  # 16 learners starting at once on 2 cores take ~45 s each
c.Spawner.http_timeout = 120
# Ctrl-C stops every server within seconds: a server asked to stop (SIGINT) that is still up
# after 3 s gets SIGTERM, then SIGKILL (and its leftover kernels are ended, see CourseSpawner.stop).
c.Spawner.interrupt_timeout = 3
c.Spawner.term_timeout = 2
c.Spawner.kill_timeout = 2
c.CourseSpawner.course_dir = str(HERE.parent / "notebooks")
# Not inside the state in PAM mode: the state is a small file system of its own there (MHA_HUB_STATE_SIZE).
c.CourseSpawner.homes_root = os.environ.get("MHA_HUB_HOMES", str(STATE / "homes") if AUTH != "pam" else str(STATE) + "-homes")
c.CourseSpawner.unix_users = os.environ.get("MHA_HUB_UNIX_USERS", "1" if os.geteuid() == 0 else "0") == "1"
c.CourseSpawner.create_users = CREATE_USERS
c.CourseSpawner.allowed_group = GROUP

# --------------------------------------------------------------------------- per-learner limits
# What one learner may use on this server (deploy/README.md, "Per-learner limits"): processes and
# threads, memory (their scratch space counted), their own scratch folders. A fork bomb, a memory
# hog or a full /tmp then stops at the learner's own limit, and the hub, the proxy, the poll and
# the other learners go on.
c.CourseSpawner.max_tasks = int(os.environ.get("MHA_HUB_MAX_TASKS", "512"))
c.CourseSpawner.memory_bytes = parse_size(os.environ.get("MHA_HUB_MEM", "2G"), "MHA_HUB_MEM")
try:
    c.CourseSpawner.cpus = float(os.environ.get("MHA_HUB_CPU", "0") or 0)
except ValueError:
    c.CourseSpawner.cpus = -1.0
if not 0 <= c.CourseSpawner.cpus <= 1024:
    raise ValueError(f"MHA_HUB_CPU={os.environ.get('MHA_HUB_CPU')!r} is not a number of cores; give e.g. 1 or 1.5 "
                     "(each learner's cap), or 0 for none (busy learners then share the cores equally)")
_scratch = parse_size(os.environ.get("MHA_HUB_SCRATCH", "256M"), "MHA_HUB_SCRATCH")
c.CourseSpawner.scratch_bytes = ({"/tmp": _scratch, "/var/tmp": _scratch, "/dev/shm": _scratch,
                                  "/run/lock": min(_scratch, 16 * 1024**2)} if _scratch else {})
# Each hub-made account's home is a file system of its own, this size (an ext4 image under
# $MHA_HUB_HOMES/.images, allocated when the account is made, mounted while its server runs): a
# learner who fills their home fills only it, never the disk with the hub's databases.
# In PAM mode (MHA_HUB_HOME_SIZE given, 0 by default) each server's home is such an image too,
# $MHA_HUB_HOMES/NAME, bound over the account's login home inside the server: the server writes
# nowhere else, and the login home (ssh, other logins) stays the administrator's, untouched.
_home_size = parse_size(os.environ.get("MHA_HUB_HOME_SIZE", "1G" if AUTH != "pam" else "0"), "MHA_HUB_HOME_SIZE")
c.CourseSpawner.home_bytes = _home_size if AUTH != "pam" else 0
c.CourseSpawner.pam_home_bytes = _home_size if AUTH == "pam" else 0
if 0 < _home_size < 16 * 1024**2:
    raise ValueError(f"MHA_HUB_HOME_SIZE={os.environ.get('MHA_HUB_HOME_SIZE')!r} is below 16M: too small for the course "
                     "and a server's files; give e.g. 1G, or 0 for plain folders")
if c.CourseSpawner.max_tasks < 0:
    raise ValueError(f"MHA_HUB_MAX_TASKS={c.CourseSpawner.max_tasks}: give a number of processes and threads, or 0 for no limit")

# --------------------------------------------------------------------------- roles and the poll
POLL_ACCESS = f"access:services!service={SERVICE_NAME}"
c.JupyterHub.custom_scopes = {READ_SCOPE: {"description": "Read how the class answered the live poll"}}
# A learner's server token may post answers; it carries the read scope only if its
# owner holds it (the token gets the subset of these scopes its owner has).
c.Spawner.server_token_scopes = ["users:activity!user", "access:servers!server", POLL_ACCESS, READ_SCOPE]
CULL_SCOPES = ["list:users", "read:users:activity", "read:servers", "delete:servers"]
c.JupyterHub.load_roles = [
    {"name": "user", "scopes": ["self", POLL_ACCESS]},
    {"name": "instructor", "scopes": [READ_SCOPE, POLL_ACCESS], "users": INSTRUCTORS},
    {"name": "idle-culler", "scopes": CULL_SCOPES, "services": ["idle-culler"]},
]

# The services run as an unprivileged system account (made here if missing), never as root;
# the poll's database lives in a folder only that account may enter.
SERVICE_ENV = {"MHA_HUB_STATE": str(STATE)}
RUN_SERVICES_AS = SERVICE_USER if os.geteuid() == 0 else getpass.getuser()
if os.geteuid() == 0:
    _svc = ensure_service_user()
    _state_fd = os.open(STATE, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        os.close(owned_dir(_state_fd, "poll", _svc.pw_uid, _svc.pw_gid, 0o700, where=str(STATE / "poll")))
    finally:
        os.close(_state_fd)
    SERVICE_ENV["MHA_POLL_DB"] = str(STATE / "poll" / "poll.sqlite3")
    if RUNNING:
        _run_fd = open_trusted_dir(Path("/run"))
        try:
            try:
                os.close(owned_dir(_run_fd, POLL_RUN.name, _svc.pw_uid, _svc.pw_gid, 0o711, where=str(POLL_RUN)))
            except UnsafePath:
                # /run is root's: only root made it (an earlier hub whose services' account had another
                # uid). Made again, for this account; a link is refused by rmtree and by owned_dir.
                import shutil

                shutil.rmtree(POLL_RUN)
                os.close(owned_dir(_run_fd, POLL_RUN.name, _svc.pw_uid, _svc.pw_gid, 0o711, where=str(POLL_RUN)))
        finally:
            os.close(_run_fd)
POLL_SERVICE = {
    "name": SERVICE_NAME,
    "command": [sys.executable, str(HERE / "poll_service.py")],
    "environment": dict(SERVICE_ENV),
    "user": RUN_SERVICES_AS,
    "display": False,
}
if ROOT:
    # JupyterHub routes a service only to a TCP address; the poll, on its Unix socket, gets no route
    # through the proxy: kernels reach it directly (MHA_POLL_URL), and nothing else needs to.
    POLL_SERVICE["environment"]["MHA_POLL_SOCKET"] = str(POLL_SOCKET)
else:
    POLL_SERVICE["url"] = POLL_URL
c.JupyterHub.services = [
    POLL_SERVICE,
    {
        "name": "idle-culler",
        "command": [sys.executable, "-m", "jupyterhub_idle_culler",
                    f"--timeout={int(os.environ.get('MHA_HUB_CULL_S', '3600'))}", "--cull-every=300"],
        "environment": {"MHA_HUB_STATE": str(STATE)},  # marks it as this hub's (end_earlier_services)
        "user": RUN_SERVICES_AS,
    },
]

# --------------------------------------------------------------------------- before anything starts
# What an earlier hub left (a crash, a kill): every learner's control group emptied, every process of
# an account the hub made ended. A learner's leftover process can then hold none of the ports below.
def end_earlier_services() -> list[str]:
    """An earlier hub's services (killed with it, they keep running): the processes of the services'
    account started for this state folder. Other hubs' services (another state) are left alone."""
    import signal

    uid, mark, ended = _svc_uid(), f"MHA_HUB_STATE={STATE}\0".encode(), []
    if uid is None:
        return ended
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid == uid and mark in Path(f"/proc/{entry}/environ").read_bytes():
                    os.kill(int(entry), signal.SIGKILL)
                    ended.append(f"service process {entry}")
            except OSError:
                continue
    return ended


# A learner's kernel whose server ended is reparented to the hub, which reaps it when it ends the
# learner: the hub never exits (nor reports a server stopped) with a learner's zombie left behind.
if RUNNING and ROOT:
    course_spawner.become_subreaper()
if RUNNING and ROOT and not CLUSTER:
    _ended = sweep_leftovers(c.CourseSpawner.homes_root) + end_earlier_services()
    if _ended:
        print(f"deploy: ended what an earlier hub left running: {', '.join(_ended)}", file=sys.stderr)
# Every port the hub needs must be free (or the hub's own earlier proxy's, which JupyterHub ends):
# a process already listening there would be sent what is meant for the hub.
if RUNNING:
    refuse_taken_port(PORT, "the public proxy", "MHA_HUB_PORT")
    refuse_taken_port(c.JupyterHub.hub_port, "the hub's API", "MHA_HUB_API_PORT")
    if not ROOT:
        refuse_taken_port(int(os.environ.get("MHA_HUB_PROXY_API_PORT", "8001")), "the proxy's API", "MHA_HUB_PROXY_API_PORT")
        refuse_taken_port(POLL_PORT, "the poll service", "MHA_POLL_PORT")


# --------------------------------------------------------------------------- the other address family
def hold_other_family(ip: str, port: int):
    """Listen on the public port on the other address family too (127.0.0.1 <-> ::1, 0.0.0.0 <-> ::)
    and relay each connection to the proxy: a browser that tries [::1] first (Chromium does, for
    localhost and NAME.localhost) reaches the proxy, and no learner can listen there instead."""
    import socket

    from tornado.iostream import IOStream, StreamClosedError
    from tornado.tcpserver import TCPServer

    pairs = {"127.0.0.1": ("::1", "127.0.0.1"), "0.0.0.0": ("::", "127.0.0.1"),
             "::1": ("127.0.0.1", "::1"), "::": ("0.0.0.0", "::1")}
    if ip not in pairs:
        return None  # a named address: the other family is the administrator's (DNS decides)
    other, target = pairs[ip]
    family = socket.AF_INET6 if ":" in other else socket.AF_INET
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError:
        return None  # no IPv6 on this machine: nothing to hold
    try:
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        sock.bind((other, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        if exc.errno == 98:  # EADDRINUSE
            refuse_taken_port(port, f"the public proxy on {other}", "MHA_HUB_PORT")
        return None  # the address does not exist here (IPv6 off): nothing to hold
    sock.setblocking(False)

    async def pipe(src, dst):
        try:
            while True:
                await dst.write(await src.read_bytes(65536, partial=True))
        except StreamClosedError:
            pass
        finally:
            src.close()
            dst.close()

    class Relay(TCPServer):
        async def handle_stream(self, stream, address):
            upstream = IOStream(socket.socket(socket.AF_INET6 if ":" in target else socket.AF_INET))
            try:
                await upstream.connect((target, port))
            except StreamClosedError:
                stream.close()
                return
            from tornado.ioloop import IOLoop

            IOLoop.current().add_callback(pipe, stream, upstream)
            await pipe(upstream, stream)

    relay = Relay()
    relay.add_sockets([sock])
    return relay


_RELAY = hold_other_family(IP, PORT) if RUNNING else None
