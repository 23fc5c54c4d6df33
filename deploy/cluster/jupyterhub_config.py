"""JupyterHub for a class on a Slurm cluster: deploy/jupyterhub_config.py, with each learner's
server a Slurm job (deploy/cluster/slurm_spawner.py). Started by deploy/cluster/start.sh.

Everything of the one-server hub is loaded first and kept: the proxy, per-learner origins
(NAME.DOMAIN), TLS and cookies, who may log in, accounts and homes, the poll service and
its scopes, the idle culler. What changes for the cluster:

- the spawner: ``SlurmCourseSpawner`` (CourseSpawner's rules; sbatch as the learner);
- the hub's API and the poll service listen on the hub's address on the cluster network
  (``MHA_CLUSTER_HUB_IP``), where the servers on the nodes reach them; the public port
  stays where ``MHA_HUB_IP`` puts it, and learners' browsers go through the proxy as before;
- stopping the hub (Ctrl-C, a restart) leaves learners' servers running as jobs: the hub
  finds them again when it starts. End a class with the admin page's "Stop All", or
  ``scancel --partition PARTITION`` (the class's own partition; jobs are named mha-NAME);
- the hub checks each job every ``MHA_CLUSTER_POLL_S`` seconds (default 10), so a learner
  whose node died is told so within about SlurmdTimeout plus that.

Settings, besides deploy/jupyterhub_config.py's:

    SLURM_CONF              the cluster's slurm.conf, if not the default /etc/slurm/slurm.conf
    MHA_CLUSTER_HUB_IP      the hub's address on the network the compute nodes share (required)
    MHA_CLUSTER_PARTITION   the partition learners' servers run in (default: the cluster's default)
    MHA_CLUSTER_MEM         memory per learner's server, as sbatch --mem takes it (default 400M)
    MHA_CLUSTER_CPUS        CPUs per learner's server (default 1; the partition may share them)
    MHA_CLUSTER_TIME        a time limit per server, as sbatch --time takes it (default: none)
    MHA_CLUSTER_POLL_S      seconds between the hub's checks of each job (default 10)
"""

import ipaddress
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
DEPLOY = HERE.parent
for folder in (HERE, DEPLOY):
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))

# Learners' servers are Slurm jobs that outlive the hub: the one-server hub's sweep of leftovers is not for them.
os.environ["MHA_HUB_CLUSTER"] = "1"
load_subconfig(str(DEPLOY / "jupyterhub_config.py"))  # noqa: F821 (JupyterHub provides it)
c = get_config()  # noqa: F821

from learner_limits import describe_holders, port_holders  # noqa: E402
from poll_service import SERVICE_NAME  # noqa: E402
from slurm_spawner import SlurmCourseSpawner  # noqa: E402

HUB_IP = os.environ.get("MHA_CLUSTER_HUB_IP", "").strip()
try:
    ipaddress.ip_address(HUB_IP)
except ValueError:
    raise ValueError(f"MHA_CLUSTER_HUB_IP={HUB_IP!r} is not an IP address; give the hub's address on the network "
                     "the compute nodes share (deploy/cluster/sim.py up prints it)") from None
POLL_PORT = int(os.environ.get("MHA_POLL_PORT", "10101"))
POLL_S = int(os.environ.get("MHA_CLUSTER_POLL_S", "10"))
if POLL_S < 1:
    raise ValueError(f"MHA_CLUSTER_POLL_S={POLL_S}: give a number of seconds, 1 or more")

c.JupyterHub.spawner_class = SlurmCourseSpawner
# The servers on the nodes call the hub's API and the poll service: both on the cluster network.
c.JupyterHub.hub_ip = HUB_IP
services = c.JupyterHub.services
for service in services:
    if service["name"] == SERVICE_NAME:
        # TCP on the cluster network, where the nodes reach it (learners run nothing on the hub host).
        service["url"] = f"http://{HUB_IP}:{POLL_PORT}"
        service["environment"] = {k: v for k, v in service["environment"].items() if k != "MHA_POLL_SOCKET"}
c.JupyterHub.services = services
# The poll listens on TCP here (the nodes reach it over the cluster network): refuse a taken port.
_holders = port_holders(POLL_PORT) if os.environ.get("MHA_HUB_RUN") == "1" else []
if _holders:
    raise ValueError(f"the port {POLL_PORT} for the poll service (MHA_POLL_PORT) is already taken: "
                     f"{describe_holders(_holders)}. Stop that process, or choose another port with MHA_POLL_PORT")
environment = dict(c.Spawner.environment)
environment["MHA_POLL_URL"] = f"http://{HUB_IP}:{POLL_PORT}/services/{SERVICE_NAME}/"
if os.environ.get("SLURM_CONF"):
    environment["SLURM_CONF"] = os.environ["SLURM_CONF"]
c.Spawner.environment = environment

c.SlurmCourseSpawner.batchspawner_singleuser_cmd = str(Path(sys.executable).parent / "batchspawner-singleuser")
c.SlurmCourseSpawner.req_partition = os.environ.get("MHA_CLUSTER_PARTITION", "")
c.SlurmCourseSpawner.req_memory = os.environ.get("MHA_CLUSTER_MEM", "400M")
c.SlurmCourseSpawner.req_nprocs = os.environ.get("MHA_CLUSTER_CPUS", "1")
c.SlurmCourseSpawner.req_runtime = os.environ.get("MHA_CLUSTER_TIME", "")
c.Spawner.poll_interval = POLL_S
c.SlurmCourseSpawner.startup_poll_interval = 0.5

# Learners' servers outlive a hub restart: the jobs keep running and the hub finds them again.
c.JupyterHub.cleanup_servers = False
# The "server not running" page says why, when a node took the server with it.
c.JupyterHub.template_paths = [str(HERE / "templates")]
