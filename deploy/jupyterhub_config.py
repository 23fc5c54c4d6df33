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

Settings come from the environment (deploy/start.sh passes them through):

    MHA_HUB_STATE        hub database, cookie secret, poll database (default deploy/.state)
    MHA_HUB_HOMES        learners' homes when the hub makes the accounts (default $MHA_HUB_STATE/homes)
    MHA_HUB_IP / MHA_HUB_PORT                 where learners connect (0.0.0.0:8000)
    MHA_HUB_API_PORT / MHA_HUB_PROXY_API_PORT / MHA_POLL_PORT   loopback ports (8081 / 8001 / 10101)
    MHA_HUB_AUTH         pam (default: the server's Unix accounts) or dummy (trials, load tests)
    MHA_HUB_PASSWORD     dummy only: the one password every learner types
    MHA_HUB_CREATE_USERS 1: make a Unix account for a learner at first start (as root; default 1 for dummy)
    MHA_HUB_UNIX_USERS   1 (default as root): run each learner as their Unix account; 0: everyone as the hub's user
    MHA_HUB_GROUP        pam only: only members of this Unix group may log in
    MHA_HUB_INSTRUCTORS / MHA_HUB_ADMINS   comma-separated user names
    MHA_HUB_CULL_S       idle seconds before a server is stopped (3600)
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from course_spawner import CourseSpawner, names_from_env  # noqa: E402
from poll_service import READ_SCOPE, SERVICE_NAME  # noqa: E402

c = get_config()  # noqa: F821 (JupyterHub provides get_config)

STATE = Path(os.environ.get("MHA_HUB_STATE", HERE / ".state")).resolve()
STATE.mkdir(parents=True, exist_ok=True)
BIN = Path(sys.executable).parent
AUTH = os.environ.get("MHA_HUB_AUTH", "pam").strip().lower()
PORT = int(os.environ.get("MHA_HUB_PORT", "8000"))
POLL_PORT = int(os.environ.get("MHA_POLL_PORT", "10101"))
INSTRUCTORS = names_from_env("MHA_HUB_INSTRUCTORS")
ADMINS = names_from_env("MHA_HUB_ADMINS")

# --------------------------------------------------------------------------- hub, proxy, state
c.JupyterHub.bind_url = f"http://{os.environ.get('MHA_HUB_IP', '0.0.0.0')}:{PORT}"
c.JupyterHub.hub_ip = "127.0.0.1"
c.JupyterHub.hub_port = int(os.environ.get("MHA_HUB_API_PORT", "8081"))
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{int(os.environ.get('MHA_HUB_PROXY_API_PORT', '8001'))}"
c.ConfigurableHTTPProxy.command = [str(HERE / "node_modules" / ".bin" / "configurable-http-proxy")]
c.ConfigurableHTTPProxy.pid_file = str(STATE / "proxy.pid")
c.JupyterHub.db_url = f"sqlite:///{STATE / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(STATE / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(STATE / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True

# --------------------------------------------------------------------------- who logs in
if AUTH == "dummy":
    c.JupyterHub.authenticator_class = "dummy"
    if os.environ.get("MHA_HUB_PASSWORD"):
        c.DummyAuthenticator.password = os.environ["MHA_HUB_PASSWORD"]
    c.Authenticator.allow_all = True
elif AUTH == "pam":
    c.JupyterHub.authenticator_class = "pam"
    if os.environ.get("MHA_HUB_GROUP"):
        c.PAMAuthenticator.allowed_groups = {os.environ["MHA_HUB_GROUP"]}
    else:
        c.Authenticator.allow_all = True
else:
    raise ValueError(f"MHA_HUB_AUTH={AUTH!r} is not valid; choose pam or dummy")
c.Authenticator.admin_users = set(ADMINS)
c.Authenticator.allowed_users = set(INSTRUCTORS) | set(ADMINS)

# --------------------------------------------------------------------------- learners' servers
c.JupyterHub.spawner_class = CourseSpawner
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.args = [
    "--KernelManager.transport=ipc",
    # No update checks or news pop-ups: a class has no network.
    "--LabApp.news_url=",
    "--ServerApp.shutdown_no_activity_timeout=0",
]
c.Spawner.default_url = "/lab/tree/course/00_welcome.ipynb"
c.Spawner.environment = {"MHA_POLL_URL": f"http://127.0.0.1:{POLL_PORT}/services/{SERVICE_NAME}/"}
c.Spawner.start_timeout = 180  # 16 learners starting at once on 2 cores take ~45 s each
c.Spawner.http_timeout = 120
c.CourseSpawner.course_dir = str(HERE.parent / "notebooks")
c.CourseSpawner.homes_root = os.environ.get("MHA_HUB_HOMES", str(STATE / "homes"))
c.CourseSpawner.unix_users = os.environ.get("MHA_HUB_UNIX_USERS", "1" if os.geteuid() == 0 else "0") == "1"
c.CourseSpawner.create_users = os.environ.get("MHA_HUB_CREATE_USERS", "1" if AUTH == "dummy" else "0") == "1"

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
c.JupyterHub.services = [
    {
        "name": SERVICE_NAME,
        "url": f"http://127.0.0.1:{POLL_PORT}",
        "command": [sys.executable, str(HERE / "poll_service.py")],
        "environment": {"MHA_HUB_STATE": str(STATE)},
        "display": False,
    },
    {
        "name": "idle-culler",
        "command": [sys.executable, "-m", "jupyterhub_idle_culler",
                    f"--timeout={int(os.environ.get('MHA_HUB_CULL_S', '3600'))}", "--cull-every=300"],
    },
]
