"""A Slurm cluster on this one machine, for trying and testing the cluster path of the hub.

    sudo python3 deploy/cluster/sim.py up          # build it (about 2 s), print what it made
    sudo python3 deploy/cluster/sim.py status      # nodes as Slurm sees them, the jobs
    sudo python3 deploy/cluster/sim.py kill-node mhasl-n2   # a node dies: its slurmd and all it runs
    sudo python3 deploy/cluster/sim.py revive-node mhasl-n2
    sudo python3 deploy/cluster/sim.py down        # remove everything (also after a crash)

What ``up`` makes (and ``down`` removes; every name carries the marker ``mhasl``):

- the bridge ``mhaslbr0`` in the root network namespace, 10.231.7.1/24: the controller and
  the hub live in the root namespace, on that address for the nodes (the hub's public port
  stays on loopback, where learners' browsers reach it, as on the one-server hub);
- three compute nodes ``mhasl-n1..3``: each a network namespace (``/run/netns/mhasl-nK``)
  with a veth pair onto the bridge and the address 10.231.7.1K; a node has its own network
  stack only, so every node sees this machine's file system, as a cluster's nodes see their
  shared file system (homes, the course environment);
- ``/etc/hosts`` lines for the nodes, each ending in ``# mha-cluster-sim``;
- ``/run/mha-cluster/`` (root's, 0755): slurm.conf (from ``slurm.conf.in``), a munge key of
  its own (0400) and munged's socket, the controller's state, spools, logs, pid files and
  ``cluster.env`` (``SLURM_CONF`` and the hub's settings for the cluster);
- the daemons: one ``munged`` and ``slurmctld`` in the root namespace, one ``slurmd -N NAME``
  per node, started with ``nsenter --net=/run/netns/NAME`` (``ip netns exec`` remounts /sys,
  hiding /sys/fs/cgroup, and slurmd then fails).

``down`` works from what it finds, not from what it remembers: the namespaces and links
named ``mhasl*``, every process inside those namespaces (learners' servers and kernels
included), every process whose command line names ``/run/mha-cluster``, and the marked host
lines. It only ever talks to addresses inside the namespaces it made (10.231.7.0/24), and
refuses to start if that range is already in use here.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import string
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
STATE = Path(os.environ.get("MHA_CLUSTER_STATE", "/run/mha-cluster"))
MARK = "mhasl"
HOSTS_MARK = "# mha-cluster-sim"
BRIDGE = f"{MARK}br0"
PREFIX = "10.231.7"
HUB_ADDR = f"{PREFIX}.1"
NODES = {f"{MARK}-n{k}": f"{PREFIX}.1{k}" for k in (1, 2, 3)}
PARTITION = "class"
CTLD_PORT, SLURMD_PORT = 16817, 16818
#: What Slurm may give learners on each simulated node (every node is this whole machine).
NODE_CPUS, NODE_MEMORY_MB = 2, 2048
#: How many learners' jobs may share one CPU (the partition's OverSubscribe=FORCE:N).
CPU_SHARE = 4
#: Jobs one account may submit per hour (job_submit/throttle): a server start is one.
JOBS_PER_USER_PER_HOUR = 120
SLURMD_TIMEOUT_S = 10
HOSTS = Path("/etc/hosts")
COMMANDS = ("up", "down", "status", "kill-node", "revive-node", "env")


class SimError(RuntimeError):
    """The cluster cannot be built (or a command was given something it does not know)."""


def log(msg: str) -> None:
    print(f"sim: {msg}", flush=True)


def run(*cmd: str, check: bool = True, **kw) -> subprocess.CompletedProcess:
    done = subprocess.run(list(cmd), capture_output=True, text=True, **kw)
    if check and done.returncode != 0:
        raise SimError(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return done


def slurm_env() -> dict:
    return dict(os.environ, SLURM_CONF=str(STATE / "slurm.conf"))


def check_node(name: str) -> str:
    if name not in NODES:
        raise SimError(f"node={name!r} is not a node of the simulated cluster; choose one of {', '.join(NODES)}")
    return name


# --------------------------------------------------------------------------- what is there


def our_netns() -> list[str]:
    try:
        return sorted(n for n in os.listdir("/run/netns") if n.startswith(f"{MARK}-"))
    except FileNotFoundError:
        return []


def our_links() -> list[str]:
    out = run("ip", "-o", "link", "show", check=False).stdout
    names = [line.split(":")[1].strip().split("@")[0] for line in out.splitlines() if ":" in line]
    return [n for n in names if n == BRIDGE or n.startswith(f"v{MARK}-")]


def netns_inode(name: str) -> int | None:
    try:
        return os.stat(f"/run/netns/{name}").st_ino
    except OSError:
        return None


def pids_in_netns(inode: int) -> list[int]:
    """Processes whose network namespace is the one with this inode (a node's)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                if os.stat(f"/proc/{entry}/ns/net").st_ino == inode:
                    found.append(int(entry))
            except OSError:
                continue
    return found


def pids_naming(fragment: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and int(entry) != os.getpid():
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if fragment in cmd:
                found.append(int(entry))
    return found


def kill_all(pids: list[int], grace_s: float = 2.0) -> None:
    """SIGTERM, then SIGKILL what is still there after ``grace_s``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(Path(f"/proc/{p}").exists() and not _zombie(p) for p in pids):
            time.sleep(0.05)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


def _mounted(path: Path) -> bool:
    try:
        return any(line.split()[4] == str(path) for line in Path("/proc/self/mountinfo").read_text().splitlines())
    except (OSError, IndexError):
        return False


def hosts_lines_ours(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.rstrip().endswith(HOSTS_MARK)]


# --------------------------------------------------------------------------- down


def down() -> dict:
    """Remove everything ``up`` made, whatever state it is in. Returns what it removed."""
    removed = {"processes": 0, "netns": [], "links": [], "hosts_lines": 0}
    pids = set(pids_naming(str(STATE)))
    for name in our_netns():
        inode = netns_inode(name)
        if inode is not None:
            pids |= set(pids_in_netns(inode))
    if pids:
        kill_all(sorted(pids))
        removed["processes"] = len(pids)
    for name in our_netns():
        run("ip", "netns", "del", name, check=False)
        removed["netns"].append(name)
    for link in our_links():
        run("ip", "link", "del", link, check=False)
        removed["links"].append(link)
    try:
        text = HOSTS.read_text()
        ours = hosts_lines_ours(text)
        if ours:
            kept = [line for line in text.splitlines() if line not in ours]
            HOSTS.write_text("\n".join(kept) + "\n")  # in place: /etc/hosts may be a bind mount
            removed["hosts_lines"] = len(ours)
    except OSError:
        pass
    if STATE.is_dir() and not STATE.is_symlink():
        run("rm", "-rf", "--", str(STATE), check=False)
    # `ip netns add` made /run/netns (a bind mount of itself): undo it once no namespace is left in it.
    netns_dir = Path("/run/netns")
    if netns_dir.is_dir() and not os.listdir(netns_dir):
        for _ in range(4):
            if not _mounted(netns_dir):
                break
            run("umount", str(netns_dir), check=False)
        try:
            netns_dir.rmdir()
        except OSError:
            pass
    return removed


# --------------------------------------------------------------------------- up


def _check_free() -> None:
    if our_netns() or our_links() or STATE.exists():
        raise SimError("a simulated cluster (or its leftovers) is already here; run `sim.py down` first")
    routes = run("ip", "-4", "route", "show", check=False).stdout
    if f"{PREFIX}." in routes:
        raise SimError(f"{PREFIX}.0/24 is already routed on this machine; the simulated cluster needs it for itself")
    for port in (CTLD_PORT,):
        with socket.socket() as s:
            try:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as slurmctld binds it: TIME_WAIT is no owner
                s.bind(("0.0.0.0", port))
            except OSError:
                raise SimError(f"port {port} (slurmctld) is taken on this machine") from None
    for tool in ("slurmctld", "slurmd", "munged", "mungekey", "sinfo", "ip", "nsenter"):
        if not any(Path(d, tool).exists() for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin")):
            raise SimError(f"{tool} not found (Debian: apt-get install slurm-wlm munge iproute2 util-linux)")


def _network() -> None:
    run("ip", "link", "add", BRIDGE, "type", "bridge")
    run("ip", "addr", "add", f"{HUB_ADDR}/24", "dev", BRIDGE)
    run("ip", "link", "set", BRIDGE, "up")
    for name, addr in NODES.items():
        veth = f"v{name}"
        run("ip", "netns", "add", name)
        run("ip", "link", "add", veth, "type", "veth", "peer", "name", "eth0", "netns", name)
        run("ip", "link", "set", veth, "master", BRIDGE, "up")
        run("ip", "-n", name, "addr", "add", f"{addr}/24", "dev", "eth0")
        run("ip", "-n", name, "link", "set", "eth0", "up")
        run("ip", "-n", name, "link", "set", "lo", "up")
    lines = [f"{addr} {name} {HOSTS_MARK}" for name, addr in NODES.items()]
    text = HOSTS.read_text()
    HOSTS.write_text(text + ("" if text.endswith("\n") else "\n") + "\n".join(lines) + "\n")


def _config() -> Path:
    for sub in ("ctld", "spool", "log", "munge"):
        (STATE / sub).mkdir(parents=True, exist_ok=True)
    os.chmod(STATE, 0o755)
    os.chmod(STATE / "ctld", 0o700)
    nodes = "\n".join(f"NodeName={n} NodeHostname={n} NodeAddr={a} CPUs={NODE_CPUS} RealMemory={NODE_MEMORY_MB} State=UNKNOWN"
                      for n, a in NODES.items())
    text = string.Template((HERE / "slurm.conf.in").read_text()).substitute(
        cluster="mhasim", controller=socket.gethostname(), controller_addr=HUB_ADDR, ctld_port=CTLD_PORT,
        slurmd_port=SLURMD_PORT, munge_socket=STATE / "munge" / "munge.socket", state=STATE,
        slurmd_timeout=SLURMD_TIMEOUT_S, nodes=nodes, node_list=",".join(NODES), partition=PARTITION,
        node_count=len(NODES), share=CPU_SHARE, jobs_per_hour=JOBS_PER_USER_PER_HOUR)
    conf = STATE / "slurm.conf"
    conf.write_text(text)
    os.chmod(conf, 0o644)
    # One running job per learner in the class partition (job_submit/lua; MaxJobsPerUser needs accounting).
    lua = (HERE / "job_submit.lua").read_text().replace('CLASS_PARTITION = "class"', f'CLASS_PARTITION = "{PARTITION}"', 1)
    (STATE / "job_submit.lua").write_text(lua)
    os.chmod(STATE / "job_submit.lua", 0o644)
    (STATE / "cluster.env").write_text(
        f"SLURM_CONF={conf}\nMHA_CLUSTER_HUB_IP={HUB_ADDR}\nMHA_CLUSTER_PARTITION={PARTITION}\n")
    return conf


def _spawn(cmd: list[str], logname: str) -> int:
    out = open(STATE / "log" / logname, "ab")
    proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True, env=slurm_env(), cwd="/")
    out.close()
    return proc.pid


def _start_slurmd(name: str) -> int:
    return _spawn(["nsenter", f"--net=/run/netns/{name}", "slurmd", "-D", "-f", str(STATE / "slurm.conf"), "-N", name],
                  f"slurmd-{name}.out")


def _daemons(conf: Path) -> dict:
    key = STATE / "munge" / "munge.key"
    run("mungekey", "--create", f"--keyfile={key}")
    os.chmod(key, 0o400)
    pids = {"munged": _spawn(["munged", "--foreground", "--force", f"--socket={STATE / 'munge' / 'munge.socket'}",
                              f"--key-file={key}", f"--pid-file={STATE / 'munge' / 'munged.pid'}",
                              f"--log-file={STATE / 'log' / 'munged.log'}", f"--seed-file={STATE / 'munge' / 'seed'}"],
                             "munged.out")}
    deadline = time.monotonic() + 10
    while not (STATE / "munge" / "munge.socket").exists():
        if time.monotonic() > deadline:
            raise SimError(f"munged did not start; see {STATE / 'log' / 'munged.log'}")
        time.sleep(0.1)
    pids["slurmctld"] = _spawn(["slurmctld", "-D", "-i", "-f", str(conf)], "slurmctld.out")
    for name in NODES:
        pids[name] = _start_slurmd(name)
    return pids


def node_states() -> dict[str, str]:
    out = run("sinfo", "-h", "-N", "-o", "%N %t", check=False, env=slurm_env(), timeout=20).stdout
    return dict(line.split()[:2] for line in out.splitlines() if len(line.split()) >= 2)


def wait_nodes(want: set[str], names, timeout: float = 60) -> dict[str, str]:
    deadline = time.monotonic() + timeout
    states = {}
    while time.monotonic() < deadline:
        states = node_states()
        if all(states.get(n, "").rstrip("*~#") in want for n in names):
            return states
        time.sleep(0.5)
    raise SimError(f"nodes {sorted(names)} not {sorted(want)} within {timeout:.0f} s: {states}; "
                   f"logs in {STATE / 'log'}")


def up() -> dict:
    """Build the cluster; returns what it made and how long each step took (seconds)."""
    _check_free()
    t0 = time.perf_counter()
    timings = {}
    try:
        _network()
        timings["network_s"] = time.perf_counter() - t0
        conf = _config()
        pids = _daemons(conf)
        (STATE / "pids.json").write_text(json.dumps(pids))
        timings["daemons_started_s"] = time.perf_counter() - t0
        wait_nodes({"idle"}, NODES, timeout=float(os.environ.get("MHA_CLUSTER_UP_TIMEOUT", "60")))
        timings["nodes_idle_s"] = time.perf_counter() - t0
    except BaseException:
        for f in sorted((STATE / "log").glob("*")) if (STATE / "log").is_dir() else []:
            tail = f.read_text(errors="replace").strip().splitlines()[-6:]
            if tail:
                log(f"{f.name}:\n    " + "\n    ".join(tail))
        down()
        raise
    return {"nodes": NODES, "hub_addr": HUB_ADDR, "partition": PARTITION, "slurm_conf": str(conf), "pids": pids,
            "timings": timings}


# --------------------------------------------------------------------------- faults


def kill_node(name: str) -> list[int]:
    """The node dies: SIGKILL to its slurmd and to everything running in its namespace."""
    inode = netns_inode(check_node(name))
    if inode is None:
        raise SimError(f"node {name} has no namespace; is the cluster up?")
    pids = pids_in_netns(inode)
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return pids


def revive_node(name: str) -> int:
    check_node(name)
    if netns_inode(name) is None:
        raise SimError(f"node {name} has no namespace; is the cluster up?")
    return _start_slurmd(name)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="sim.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", help=f"one of {', '.join(COMMANDS)}")
    parser.add_argument("node", nargs="?", help="for kill-node and revive-node: " + ", ".join(NODES))
    args = parser.parse_args(argv)
    if args.command not in COMMANDS:
        parser.error(f"command={args.command!r} is not known; choose one of {', '.join(COMMANDS)}")
    if os.geteuid() != 0:
        parser.error("run as root: it makes network namespaces, a bridge and host entries")
    try:
        if args.command == "up":
            made = up()
            log(json.dumps(made, indent=1))
            log(f"up in {made['timings']['nodes_idle_s']:.1f} s; settings for the hub in {STATE / 'cluster.env'}")
        elif args.command == "down":
            log(f"removed {json.dumps(down())}")
        elif args.command == "status":
            print(run("sinfo", "-N", env=slurm_env(), check=False).stdout)
            print(run("squeue", "-o", "%.8i %.10u %.8T %N", env=slurm_env(), check=False).stdout)
        elif args.command == "env":
            print((STATE / "cluster.env").read_text(), end="")
        elif args.command in ("kill-node", "revive-node"):
            if not args.node:
                parser.error(f"{args.command} needs a node: one of {', '.join(NODES)}")
            if args.command == "kill-node":
                log(f"killed {len(kill_node(args.node))} processes on {args.node}")
            else:
                log(f"slurmd on {args.node} restarted (pid {revive_node(args.node)})")
    except SimError as exc:
        print(f"sim: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
