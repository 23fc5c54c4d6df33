"""The class hub on a Slurm cluster, for real: deploy/cluster/sim.py builds a controller and
three compute nodes (network namespaces) here, deploy/cluster/start.sh runs the hub on it,
and six learners get their servers as Slurm jobs. Then, in order (each test builds on the
one before, as a class goes on):

1. the servers are Slurm jobs spread over all three nodes, each running as its learner in
   its node's namespace, bound to the node's address;
2. one learner cannot use another's server (their token is refused, through the proxy
   and straight at the node) nor read another's files (homes 0700), and the poll service
   is reachable from a node;
3. a node dies (its slurmd and everything on it killed): its learners are told so on the
   hub's page, get a new server on another node, and find their notebooks and quiz
   progress as they left them;
4. the hub restarts mid-class: the jobs keep running, the hub finds them again, and every
   learner's server answers with their files intact.

The fixtures (conftest.py) remove every namespace, link, host line, daemon, job, account
and folder at the end, and check it.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import stat
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from clusterctl import LEARNERS, REPO, jobs

sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "deploy"))
from benchmarks.loadtest.kernel_client import KernelClient  # noqa: E402
from warm_start import localhost_subdomains  # noqa: E402

pytestmark = pytest.mark.cluster
QUESTION = "03-what-is-a-head"
#: What the module learns as it goes (tokens, nodes, files), for the tests after.
CLASS: dict = {}


def note_file(name: str) -> str:
    return f"course/notes-{name}.md"


def put_file(hub, name: str, token: str, path: str, text: str) -> None:
    body = json.dumps({"type": "file", "format": "text", "content": text}).encode()
    resp = hub.server_request(name, "PUT", f"/api/contents/{path}", token, body=body,
                              headers={"Content-Type": "application/json"})
    assert resp.status in (200, 201), f"saving {path} for {name}: {resp.status} {resp.text[:200]}"


def get_file(hub, name: str, token: str, path: str) -> str:
    resp = hub.server_request(name, "GET", f"/api/contents/{path}?content=1&format=text&type=file", token)
    assert resp.status == 200, f"reading {path} for {name}: {resp.status} {resp.text[:200]}"
    return resp.json()["content"]


def server_address(hub, name: str) -> tuple[str, int]:
    """Where the learner's server listens on its node, from the job's log in their home."""
    text = (hub.homes / name / ".mha_course" / "server.log").read_text(errors="replace")
    found = re.findall(rf"http://(10\.231\.7\.\d+):(\d+)/user/{re.escape(name)}/", text)
    assert found, f"no address in {name}'s server log:\n{text[-1500:]}"
    return found[-1][0], int(found[-1][1])


def in_node(sim, node: str, name: str, *cmd: str) -> subprocess.CompletedProcess:
    """Run ``cmd`` on ``node`` as the learner ``name`` (their uid, gid and groups)."""
    entry = pwd.getpwnam(name)
    return subprocess.run(["nsenter", f"--net=/run/netns/{node}", "setpriv", f"--reuid={entry.pw_uid}",
                           f"--regid={entry.pw_gid}", "--init-groups", *cmd], capture_output=True, text=True, timeout=30)


def kernel_run(hub, name: str, token: str, code: str) -> dict:
    """Run ``code`` in a fresh kernel of the learner's server; it prints one line __OUT__<json>."""
    with localhost_subdomains():
        client = KernelClient(f"http://{name}.localhost:{hub.port}", name, token, "course/00_welcome.ipynb", timeout=120)
        try:
            out = client.execute(code)
        finally:
            client.close()
    assert not out["errors"], out["errors"]
    line = next((x for x in out["stdout"].splitlines() if x.startswith("__OUT__")), None)
    assert line, out["stdout"]
    return json.loads(line[len("__OUT__"):])


def start_all(hub, names: list[str], tokens: dict[str, str]) -> dict[str, float]:
    """Start the learners' servers at once (as a class logging in); seconds each took."""
    took, errors = {}, []

    def one(name):
        t0 = time.perf_counter()
        try:
            hub.start_server(name, tokens[name], timeout=180)
            took[name] = time.perf_counter() - t0
        except Exception as exc:  # reported below, with the others
            errors.append(f"{name}: {exc}")

    threads = [threading.Thread(target=one, args=(n,)) for n in names]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=240)
    assert not errors, errors
    return took


def test_servers_are_slurm_jobs_on_every_node(sim, cluster_hub):
    sim_module, made = sim
    hub = cluster_hub
    tokens = {name: hub.token(name) for name in LEARNERS}
    CLASS.update(tokens=tokens, timings={"cluster_up_s": made["up_s"], "hub_start_s": hub.start_s})
    CLASS["timings"]["server_start_s"] = start_all(hub, LEARNERS, tokens)
    placed = jobs(hub)
    assert set(placed) == set(LEARNERS), f"every learner's server is a Slurm job: {placed}"
    assert all(state == "RUNNING" for _, state, _ in placed.values()), placed
    nodes = {name: node for name, (_, _, node) in placed.items()}
    assert set(nodes.values()) == set(sim_module.NODES), f"Slurm spread the class over the three nodes: {nodes}"
    CLASS["nodes"] = nodes
    for name in LEARNERS:
        uid = pwd.getpwnam(name).pw_uid
        inode = sim_module.netns_inode(nodes[name])
        pids = [p for p in sim_module.pids_in_netns(inode) if os.stat(f"/proc/{p}").st_uid == uid]
        assert pids, f"{name}'s server runs as {name} in {nodes[name]}'s namespace"
        addr, _ = server_address(hub, name)
        assert addr == sim_module.NODES[nodes[name]], f"{name}'s server listens on its node's address, not {addr}"
        # Through the proxy, at the learner's own origin, with their token.
        assert hub.server_request(name, "GET", "/api/status", tokens[name]).status == 200


def test_a_learner_cannot_use_anothers_server(sim, cluster_hub):
    hub, tokens, nodes = cluster_hub, CLASS["tokens"], CLASS["nodes"]
    a, b = LEARNERS[0], next(n for n in LEARNERS if CLASS["nodes"][n] != CLASS["nodes"][LEARNERS[0]])
    # Through the proxy, on b's origin, with a's token: refused; b's own token works.
    assert hub.server_request(b, "GET", "/api/contents", tokens[b]).status == 200
    refused = hub.server_request(b, "GET", "/api/contents", tokens[a])
    assert refused.status in (302, 303, 401, 403), f"a's token on b's server: {refused.status}"
    assert refused.status != 200
    # Straight at b's node, past the proxy: the server itself refuses a's token.
    import http.client

    addr, port = server_address(hub, b)
    for token, want in ((tokens[a], {401, 403}), (tokens[b], {200})):
        conn = http.client.HTTPConnection(addr, port, timeout=30)
        try:
            conn.request("GET", f"/user/{b}/api/contents", headers={"Authorization": f"token {token}"})
            status = conn.getresponse().status
        finally:
            conn.close()
        assert status in want, f"at {nodes[b]} ({addr}:{port}) with {'a' if token == tokens[a] else 'b'}'s token: {status}"


def test_a_learner_cannot_read_anothers_files(sim, cluster_hub):
    sim_module, _ = sim
    hub, tokens, nodes = cluster_hub, CLASS["tokens"], CLASS["nodes"]
    a, b = LEARNERS[0], LEARNERS[1]
    for name in LEARNERS:
        st = os.stat(hub.homes / name)
        assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == pwd.getpwnam(name).pw_uid, name
    target = hub.homes / b / "course" / "00_welcome.ipynb"
    assert target.exists()
    for cmd in (["cat", str(target)], ["ls", str(hub.homes / b)]):
        done = in_node(sim_module, nodes[a], a, *cmd)
        assert done.returncode != 0 and "Permission denied" in done.stderr, (cmd, done.returncode, done.stderr)
    # From a's kernel on a's node: its own progress is written, b's notebook cannot be opened,
    # and the poll service (on the hub's address on the cluster network) takes the answer.
    out = kernel_run(hub, a, tokens[a], f"""
import json, os
from mha_classroom.quiz import poll
from mha_classroom.quiz.bank import default_bank
from mha_classroom.quiz.progress import default_store
bank = default_bank()
set_id = next(s for s in bank.sets if {QUESTION!r} in (q.id for q in bank.questions(s)))
store = default_store()
store.record({QUESTION!r}, set_id, True, "1")
try:
    open({str(target)!r}).read(10)
    neighbour = "readable"
except PermissionError:
    neighbour = "refused"
# The server's own token may not reset its spawner through batchspawner's port report.
import urllib.request, urllib.error
def report(body):
    req = urllib.request.Request(os.environ["JUPYTERHUB_API_URL"] + "/batchspawner", data=json.dumps(body).encode(),
                                 headers={{"Authorization": "token " + os.environ["JUPYTERHUB_API_TOKEN"],
                                          "Content-Type": "application/json"}}, method="POST")
    try:
        return urllib.request.urlopen(req, timeout=10).status
    except urllib.error.HTTPError as exc:
        return exc.code
port_report = [report({{"port": 40000, "unix_users": False}}), report({{"port": 40000}})]
print("__OUT__" + json.dumps({{"count": store.count(), "sent": poll.send({QUESTION!r}, ["1"]), "neighbour": neighbour,
                               "node": os.environ.get("SLURMD_NODENAME"), "progress": os.environ.get("MHA_COURSE_PROGRESS"),
                               "port_report": port_report}}))
""")
    assert out["port_report"] == [400, 409], f"anything but a port, or a port once started, is refused: {out['port_report']}"
    assert out["neighbour"] == "refused"
    assert out["sent"] is True, "the poll service answers a kernel on a compute node"
    assert out["node"] == nodes[a]
    assert out["count"] >= 1 and Path(out["progress"]).is_relative_to(hub.homes / a)
    CLASS["progress_count"] = out["count"]


def test_a_node_dies_and_its_learners_carry_on_elsewhere(sim, cluster_hub):
    sim_module, _ = sim
    hub, tokens, nodes = cluster_hub, CLASS["tokens"], CLASS["nodes"]
    for name in LEARNERS:
        put_file(hub, name, tokens[name], note_file(name), f"what {name} wrote before the node died\n")
    dead = nodes[LEARNERS[0]]
    victims = [n for n in LEARNERS if nodes[n] == dead]
    others = [n for n in LEARNERS if n not in victims]
    t0 = time.perf_counter()
    assert sim_module.kill_node(dead), f"something ran on {dead}"
    deadline = time.monotonic() + 120
    gone = set()
    while time.monotonic() < deadline and gone != set(victims):
        for name in victims:
            if not hub.api("GET", f"/users/{name}", tokens[name]).json().get("servers"):
                gone.add(name)
        time.sleep(1)
    CLASS["timings"]["node_loss_noticed_s"] = time.perf_counter() - t0
    assert gone == set(victims), f"the hub still lists servers on the dead node {dead}: {set(victims) - gone}"
    # The hub's log says why each server went, from what Slurm still knows of its job.
    gone_lines = [line for line in hub.log().splitlines() if "is gone" in line]
    for name in victims:
        assert any(f"{name}'s server" in line and "JobState=NODE_FAIL" in line for line in gone_lines), gone_lines
    for name in others:
        assert hub.server_request(name, "GET", "/api/status", tokens[name]).status == 200, f"{name} elsewhere is untouched"
    for name in victims:
        hub.login(name)
        page = hub.request("GET", "/hub/user/{0}/lab/tree/course/00_welcome.ipynb".format(name), cookies_for=name)
        assert page.status == 424, page.status
        assert "stopped answering" in page.text and dead in page.text and "safe in your home folder" in page.text, \
            page.text[:2000]
    t1 = time.perf_counter()
    start_all(hub, victims, tokens)
    CLASS["timings"]["restart_elsewhere_s"] = time.perf_counter() - t1
    placed = jobs(hub)
    for name in victims:
        assert placed[name][2] != dead and placed[name][1] == "RUNNING", (name, placed[name])
        nodes[name] = placed[name][2]
        assert get_file(hub, name, tokens[name], note_file(name)) == f"what {name} wrote before the node died\n"
        assert hub.server_request(name, "GET", "/api/contents/course/00_welcome.ipynb", tokens[name]).status == 200
    out = kernel_run(hub, LEARNERS[0], tokens[LEARNERS[0]], """
import json, os
from mha_classroom.quiz.progress import default_store
print("__OUT__" + json.dumps({"count": default_store().count(), "node": os.environ.get("SLURMD_NODENAME")}))
""")
    assert out["count"] == CLASS["progress_count"], "the quiz progress from before the node died is there"
    assert out["node"] != dead


def test_the_hub_restarts_mid_class_and_no_work_is_lost(sim, cluster_hub):
    hub, tokens = cluster_hub, CLASS["tokens"]
    before = jobs(hub)
    for name in LEARNERS:
        put_file(hub, name, tokens[name], "course/before-restart.txt", f"{name} was here\n")
    t0 = time.perf_counter()
    hub.stop()
    assert hub.proc.poll() is not None
    during = jobs(hub)
    assert {n: j[0] for n, j in during.items()} == {n: j[0] for n, j in before.items()}, \
        "the learners' jobs keep running while the hub is down"
    hub.start()
    CLASS["timings"]["hub_restart_s"] = time.perf_counter() - t0
    after = jobs(hub)
    assert {n: j[0] for n, j in after.items()} == {n: j[0] for n, j in before.items()}, "the same jobs, not new ones"
    for name in LEARNERS:
        model = hub.api("GET", f"/users/{name}", tokens[name]).json()
        assert model.get("servers", {}).get("", {}).get("ready"), (
            f"the hub found {name}'s server again: {model}; the hub's log of it:\n"
            + "\n".join([line for line in hub.log().splitlines() if name in line][-15:]))
        assert get_file(hub, name, tokens[name], "course/before-restart.txt") == f"{name} was here\n"
        assert get_file(hub, name, tokens[name], note_file(name)) == f"what {name} wrote before the node died\n"
    print(f"\ncluster test timings (s): {json.dumps({k: v for k, v in CLASS['timings'].items() if k != 'server_start_s'})}; "
          f"server starts: {sorted(round(v, 1) for v in CLASS['timings']['server_start_s'].values())}")


def test_one_learner_cannot_fill_the_partition(sim, cluster_hub):
    """Issue 37: a learner's 15 sbatch jobs once kept the next learner's server PENDING for over 60 s.
    With the cluster's job_submit.lua each learner runs one job at a time in the class partition."""
    hub, tokens = cluster_hub, CLASS["tokens"]
    hog, other = LEARNERS[0], LEARNERS[1]
    entry = pwd.getpwnam(hog)
    as_hog = ["setpriv", f"--reuid={entry.pw_uid}", f"--regid={entry.pw_gid}", "--init-groups"]
    submitted = []
    try:
        for _ in range(15):
            done = subprocess.run([*as_hog, "sbatch", "--parsable", "--mem=400M", "--output=/dev/null", "--wrap", "sleep 200"],
                                  env=hub.slurm_env, capture_output=True, text=True, cwd="/")
            assert done.returncode == 0, done.stderr
            submitted.append(done.stdout.strip().split(";")[0])
        # The learner cannot lift the rule from their own jobs.
        lifted = subprocess.run([*as_hog, "scontrol", "update", f"jobid={submitted[0]}", "dependency="],
                                env=hub.slurm_env, capture_output=True, text=True)
        assert lifted.returncode != 0, lifted.stdout
        time.sleep(3)
        out = subprocess.run(["squeue", "-h", "-u", hog, "-o", "%i %T %j %r"], env=hub.slurm_env,
                             capture_output=True, text=True).stdout.split("\n")
        running = [line for line in out if " RUNNING " in line]
        assert len(running) == 1, f"{hog} runs more than one job in the class partition: {out}"
        t0 = time.perf_counter()
        hub.stop_server(other, tokens[other])
        hub.start_server(other, tokens[other], timeout=60)
        print(f"\n{other}'s server restarted in {time.perf_counter() - t0:.1f} s while {hog} had 15 jobs queued")
    finally:
        if submitted:
            subprocess.run(["scancel", *submitted], env=hub.slurm_env, capture_output=True)
