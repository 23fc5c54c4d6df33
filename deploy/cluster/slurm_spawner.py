"""Each learner's JupyterLab as a Slurm job: batchspawner's SlurmSpawner with CourseSpawner's rules.

``SlurmCourseSpawner`` is ``CourseSpawner`` (deploy/course_spawner.py) whose process is
started by Slurm instead of locally. Everything CourseSpawner decides stays as it is, by
inheritance, not by copy: which Unix accounts may get a server (never a system account,
in dummy mode only accounts the hub made), the home made without following links (0700)
and filled as the learner, the course copied into ``~/course``, progress in
``~/.mha_course``, the private runtime folder, ``PYTHONNOUSERSITE``, and, on stop, ending
whatever still runs as a hub-made account here. The class order does it:

    SlurmCourseSpawner -> CourseSpawner -> _SlurmFirst -> SlurmSpawner ... -> LocalProcessSpawner

so ``CourseSpawner.start`` prepares the account and home, then its ``super().start()``
is batchspawner's (``sbatch``), not the local process one; ``CourseSpawner.stop`` cancels
the job (``scancel``) before it ends leftovers.

What the cluster adds:

- The job is submitted AS the learner (``setpriv`` to their uid, gid and groups, then
  ``sbatch``), so Slurm runs it under their account on the node; the hub queries and
  cancels as root. Nothing runs through ``sudo`` or a shell with the learner's name in it.
- The job asks for ``req_memory`` (default 400M) and ``req_nprocs`` CPUs in ``req_partition``.
- On the node the server binds to the node's own address (the hub and proxy reach it there,
  learners' browsers still go through the proxy at NAME.DOMAIN). Its runtime folder is the
  one the hub made when the nodes see the hub's /run (here); on a real cluster, where they
  do not, a fresh private folder (mktemp, 0700) on the node.
- batchspawner's own ``/hub/api/batchspawner`` handler sets ANY attribute a server's token
  sends on that server's spawner object in the hub (a learner's kernel holds that token:
  it could set ``unix_users``, ``exec_prefix`` or the batch script). It is replaced by one
  that accepts only ``{"port": N}``, only from the spawner's own token, once per start.
- A node that dies takes its jobs with it (Slurm ends them as NODE_FAIL); ``poll`` notices,
  and the hub's "server not running" page (templates/not_running.html) tells the learner
  what happened and that their files are safe, and offers a new server, which Slurm places
  on a node that still answers.
"""

from __future__ import annotations

import json
import os
import pwd
import shlex
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE.parent) not in sys.path:
    sys.path.insert(0, str(HERE.parent))

from batchspawner import JobStatus, SlurmSpawner  # noqa: E402
from jupyterhub import apihandlers  # noqa: E402
from jupyterhub.apihandlers import APIHandler  # noqa: E402
from jupyterhub.spawner import LocalProcessSpawner  # noqa: E402
from tornado import web  # noqa: E402
from traitlets import Unicode  # noqa: E402

from course_spawner import CourseSpawner  # noqa: E402

#: The job script (jinja2, filled by batchspawner with the req_* values and {{cmd}}).
BATCH_SCRIPT = r"""#!/bin/bash
#SBATCH --job-name=mha-{{username}}
#SBATCH --chdir={{homedir}}
#SBATCH --output={{homedir}}/.mha_course/server.log
#SBATCH --open-mode=append
#SBATCH --export={{keepvars}}
#SBATCH --no-requeue
{% if partition %}#SBATCH --partition={{partition}}
{% endif %}{% if memory %}#SBATCH --mem={{memory}}
{% endif %}{% if nprocs %}#SBATCH --cpus-per-task={{nprocs}}
{% endif %}{% if runtime %}#SBATCH --time={{runtime}}
{% endif %}{% if options %}#SBATCH {{options}}
{% endif %}
set -eu
# The node's own address: the hub and its proxy reach the server there.
addr="$(getent ahostsv4 "$SLURMD_NODENAME" | awk 'NR == 1 {print $1}')"
# Kernel sockets: the folder the hub made, if this node sees it and it is ours; else a new private one.
if [ -z "${JUPYTER_RUNTIME_DIR:-}" ] || [ ! -d "$JUPYTER_RUNTIME_DIR" ] || [ -L "$JUPYTER_RUNTIME_DIR" ] || [ ! -O "$JUPYTER_RUNTIME_DIR" ]; then
    JUPYTER_RUNTIME_DIR="$(mktemp -d "${TMPDIR:-/tmp}/mha-run-XXXXXXXX")"
    export JUPYTER_RUNTIME_DIR
fi
echo "mha: job $SLURM_JOB_ID on $SLURMD_NODENAME ($addr)"
exec {{cmd}} --ServerApp.ip="$addr"
"""

#: What the learner reads when the node their server ran on died (templates/not_running.html).
NODE_LOST = ("Your server stopped: the machine it ran on ({node}) stopped answering. Everything you saved is "
             "safe in your home folder (your notebooks and your quiz progress); what ran in the kernel since "
             "then is gone, so run the notebook's cells again. Start a new server: it will run on another machine.")


class _SlurmFirst(SlurmSpawner, LocalProcessSpawner):
    """Puts batchspawner's methods before LocalProcessSpawner's under CourseSpawner (see the module's doc)."""


class SlurmCourseSpawner(CourseSpawner, _SlurmFirst):
    """CourseSpawner's accounts, homes and rules; the server is a Slurm job on a compute node."""

    slurm_bin = Unicode("/usr/bin", config=True, help="Where sbatch, squeue and scancel are")
    setpriv = Unicode("/usr/bin/setpriv", config=True, help="setpriv(1), to submit the job as the learner")
    batch_script = Unicode(BATCH_SCRIPT, config=True)
    exec_prefix = Unicode("", config=True, help="Queries and cancels run as the hub (root); submits are setpriv'd")
    req_memory = Unicode("400M", config=True)
    req_nprocs = Unicode("1", config=True)
    lost_message = Unicode("", help="Why the last server stopped, when the cluster took it (shown to the learner)")
    last_node = Unicode("", help="The node the server last ran on")
    #: The server is a Slurm job, limited by Slurm on its node: nothing is launched on the hub host.
    local_launch = False

    # ------------------------------------------------------------------ Slurm commands

    def _slurm(self, tool: str) -> str:
        return shlex.quote(str(Path(self.slurm_bin) / tool))

    @property
    def batch_query_cmd(self):
        return f"{self._slurm('squeue')} -h -j {{job_id}} -o '%T %B'"

    @property
    def batch_cancel_cmd(self):
        return f"{self._slurm('scancel')} {{job_id}}"

    @property
    def batch_submit_cmd(self):
        """sbatch, run as the learner: their uid, primary gid and groups (root's are dropped)."""
        if self.unix_users and os.geteuid() == 0:
            entry = pwd.getpwnam(self.user.name)
            return (f"{shlex.quote(self.setpriv)} --reuid={entry.pw_uid} --regid={entry.pw_gid} --init-groups "
                    f"{self._slurm('sbatch')} --parsable")
        return f"{self._slurm('sbatch')} --parsable"

    def get_req_subvars(self):
        """The req_* values for the job script. Only a start needs them (keepvars reads the learner's
        environment, which CourseSpawner.start prepares); queries and cancels, also those of a hub that
        restarted and found the job again, need only the job id."""
        if getattr(self, "_progress", None) is None:
            return {"username": self.user.name}
        return super().get_req_subvars()

    def cmd_formatted_for_batch(self):
        """The server's command line inside the job script, each word quoted for the shell."""
        return " ".join(shlex.quote(part) for part in [self.batchspawner_singleuser_cmd, *self.cmd, *self.get_args()])

    # ------------------------------------------------------------------ life cycle

    async def start(self):
        self.lost_message = ""
        return await super().start()

    async def cancel_batch_job(self):
        if self.job_id:  # a job the cluster already ended (a dead node) has nothing to cancel
            await super().cancel_batch_job()

    # The hub replaces the spawner object once a server stopped: the reason travels in its saved state.
    def get_state(self):
        state = super().get_state()
        if self.lost_message:
            state["lost_message"] = self.lost_message
        return state

    def load_state(self, state):
        super().load_state(state)
        self.lost_message = state.get("lost_message", "")

    def state_gethost(self):
        host = super().state_gethost()
        self.last_node = host
        self.log.info("%s's server: Slurm job %s on %s", self.user.name, self.job_id, host)
        return host

    async def poll(self):
        """None while the job is queued or running; else 1, and the reason kept if the cluster took the server."""
        job = self.job_id
        status = await self.query_job_status()
        words = (self.job_status or "").split()
        if status in (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.UNKNOWN):
            if len(words) > 1:
                self.last_node = words[1]
            return None
        node = words[1] if len(words) > 1 else self.last_node
        if job and ((words and words[0] in ("NODE_FAIL", "BOOT_FAIL")) or await self._node_down(node)):
            self.lost_message = NODE_LOST.format(node=node or "a compute node")
        if job:
            self.log.warning("%s's server (job %s on %s) is gone: %s%s", self.user.name, job, node or "?",
                             self.job_status or "no longer in the queue", await self._how_it_ended(job))
        self.clear_state()
        return 1

    async def _how_it_ended(self, job: str) -> str:
        """What Slurm still knows of an ended job (its state, reason and exit code, kept ``MinJobAge`` seconds),
        for the hub's log: "; Slurm: JobState=... Reason=... ExitCode=...", or nothing."""
        try:
            out = await self.run_command(f"{self._slurm('scontrol')} -o show job {shlex.quote(str(job))}")
        except Exception:  # scontrol not answering, or the job already forgotten: the log says no more
            return ""
        fields = [word for word in out.split() if word.startswith(("JobState=", "Reason=", "ExitCode=", "NodeList="))]
        return f"; Slurm: {' '.join(fields)}" if fields else ""

    async def _node_down(self, host: str) -> bool:
        """Whether Slurm has marked ``host`` down or failed (a drained node is the administrators' doing, not a death)."""
        if not host:
            return False
        try:
            out = await self.run_command(f"{self._slurm('sinfo')} -h -n {shlex.quote(host)} -o %t")
        except Exception:  # sinfo not answering: say nothing rather than something wrong
            return False
        return any(word.rstrip("*~#$@^-!%").startswith(("down", "fail")) for word in out.split())


# --------------------------------------------------------------------------- the port report


class ServerPortHandler(APIHandler):
    """POST /hub/api/batchspawner {"port": N}: the job tells the hub which port its server took.

    Only the spawner whose own server token makes the request, only while that spawner is
    starting and has no port yet, and only a port: nothing else of the spawner can be set.
    """

    @web.authenticated
    def post(self):
        user = self.current_user
        token = self.get_auth_token()
        spawners = getattr(user, "spawners", None) or {}
        spawner = next((s for s in spawners.values() if token and s.api_token == token), None)
        if not isinstance(spawner, SlurmCourseSpawner):
            raise web.HTTPError(403, "only a learner's starting server may report its port, with its own token")
        try:
            data = json.loads(self.request.body or b"{}")
        except ValueError:
            raise web.HTTPError(400, "send JSON: {\"port\": N}") from None
        port = data.get("port") if isinstance(data, dict) else None
        if not isinstance(data, dict) or set(data) != {"port"} or not isinstance(port, int) or not 1024 <= port <= 65535:
            raise web.HTTPError(400, "send exactly {\"port\": N} with N a port from 1024 to 65535; nothing else is accepted")
        if spawner.pending != "spawn" or spawner.port:
            raise web.HTTPError(409, "the port is reported once, while the server starts")
        spawner.port = port
        self.set_status(201)
        self.finish(json.dumps({"message": "port recorded"}))


def _replace_batchspawner_handler() -> None:
    routes = apihandlers.default_handlers
    routes[:] = [r for r in routes if r[0] != r"/api/batchspawner"]
    routes.append((r"/api/batchspawner", ServerPortHandler))


_replace_batchspawner_handler()
