"""One environment everywhere: make, the route without make (tools/course.py), conda, Binder and
the Kubernetes image all install exactly requirements.lock with --no-deps; the lock is complete
on Linux, macOS and Windows; the package lists cannot drift apart; the package finds its data
whether installed or run from a checkout.

The repo2docker tests need jupyter-repo2docker from PyPI, installed once into a throwaway venv
under .cache/ (never the course's .venv); offline they are skipped, except under CI=true.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import pytest
import yaml
from packaging.markers import Marker, default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))
import course  # noqa: E402  (tools/course.py: the route without make)

LOCK = ROOT / "requirements.lock"
PLATFORM_LOCK = ROOT / "requirements-platforms.lock"
REPO2DOCKER = "jupyter-repo2docker==2026.4.0"

#: Marker environments: this machine's Linux, and the two platforms the lock must also cover.
PLATFORMS = {
    "linux": dict(default_environment(), sys_platform="linux", platform_system="Linux", os_name="posix"),
    "darwin": dict(default_environment(), sys_platform="darwin", platform_system="Darwin", os_name="posix",
                   platform_machine="arm64"),
    "win32": dict(default_environment(), sys_platform="win32", platform_system="Windows", os_name="nt",
                  platform_machine="AMD64"),
}


def pyproject_requirements() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    return {canonicalize_name(r.name): r for r in reqs}


def lock_requirements(path: Path = LOCK) -> dict[str, Requirement]:
    """Every line of a lock as a Requirement (exact pin, optional marker), by canonical name."""
    reqs = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        req = Requirement(line)
        spec = list(req.specifier)
        assert len(spec) == 1 and spec[0].operator == "==", f"{path.name} line {line!r} is not an exact pin (name==version)"
        reqs[canonicalize_name(req.name)] = req
    return reqs


def lock_pins() -> dict[str, str]:
    return {name: next(iter(req.specifier)).version for name, req in lock_requirements().items()}


def applies(req: Requirement, platform: str, extras=("",)) -> bool:
    return req.marker is None or any(req.marker.evaluate(dict(PLATFORMS[platform], extra=e)) for e in extras)


def locked_for(platform: str) -> set[str]:
    """The names a --no-deps install of the lock puts on ``platform``."""
    return {name for name, req in lock_requirements().items() if applies(req, platform)}


# --------------------------------------------------------------------------- the lock and pyproject


def test_every_pyproject_package_is_locked():
    missing = set(pyproject_requirements()) - set(lock_pins())
    assert not missing, f"in pyproject.toml but not in requirements.lock: {sorted(missing)}"


def test_locked_versions_satisfy_the_pyproject_ranges():
    lock = lock_pins()
    for name, req in pyproject_requirements().items():
        assert Version(lock[name]) in req.specifier, f"{name}=={lock[name]} is outside pyproject's range {req.specifier}"


def test_torch_is_pinned_to_the_cpu_build_on_disk():
    # Any other torch version makes pip download a multi-GB CUDA build.
    assert lock_pins()["torch"] == "2.13.0"
    assert lock_requirements()["torch"].marker is None


def test_the_lock_leaves_out_what_the_course_keeps_out_on_purpose():
    assert set(course.LEFT_OUT) == {"lark", "rfc3987-syntax", "sentence-transformers", "huggingface-hub",
                                   "llm", "llama-cpp-python"}
    assert not set(course.LEFT_OUT) & set(lock_requirements())


def test_course_py_reads_the_lock_the_way_packaging_does():
    ours = course.locked_pins()
    theirs = lock_requirements()
    assert set(ours) == set(theirs)
    for name, (version, marker) in ours.items():
        assert version == next(iter(theirs[name].specifier)).version
        assert (Marker(marker) if marker else None) == theirs[name].marker


# --------------------------------------------------------------------------- macOS and Windows


#: Seeded into every venv and left out of every pip freeze; torch asks for setuptools only to build C++ extensions.
INSTALLER_TOOLS = {"pip", "setuptools", "wheel"}


def missing_platform_dependencies(lock: dict[str, Requirement], distributions, platforms=("linux", "darwin", "win32")) -> list[str]:
    """What ``distributions`` (the locked packages' metadata) declare for ``platforms`` that a
    --no-deps install of ``lock`` does not bring there, with a wrong marker, or at a version
    outside the declared range. Extras that locked packages ask of each other count too
    (jupyter-events asks for jsonschema[format-nongpl])."""
    by_name = {canonicalize_name(d.metadata["Name"]): d for d in distributions}
    locked = {name: d for name, d in by_name.items() if name in lock}
    problems = []
    for platform in platforms:
        on_platform = {name for name, req in lock.items() if applies(req, platform)}
        # The extras locked packages ask of each other on this platform, to a fixed point.
        requested: dict[str, set[str]] = {name: set() for name in locked}
        changed = True
        while changed:
            changed = False
            for name, dist in locked.items():
                for line in dist.requires or []:
                    req = Requirement(line)
                    dep = canonicalize_name(req.name)
                    if req.extras and dep in requested and applies(req, platform, ("", *requested[name])):
                        if not set(req.extras) <= requested[dep]:
                            requested[dep] |= set(req.extras)
                            changed = True
        for name, dist in sorted(locked.items()):
            if name not in on_platform:
                continue
            extras = ("", *sorted(requested[name]))
            for line in dist.requires or []:
                req = Requirement(line)
                dep = canonicalize_name(req.name)
                if not applies(req, platform, extras) or dep in course.LEFT_OUT or dep in INSTALLER_TOOLS:
                    continue
                if dep not in lock:
                    problems.append(f"{platform}: {name} needs {line!r}; not in the lock")
                elif dep not in on_platform:
                    problems.append(f"{platform}: {name} needs {line!r}; the lock's marker {lock[dep].marker} leaves it out")
                elif req.specifier and not req.specifier.contains(next(iter(lock[dep].specifier)).version, prereleases=True):
                    problems.append(f"{platform}: {name} needs {line!r}; the lock pins {lock[dep]}")
    return problems


def test_every_macos_and_windows_dependency_of_a_locked_package_is_locked_with_its_marker():
    """Offline, from the installed environment's metadata (Requires-Dist with markers): on Linux,
    macOS and Windows, what each locked package declares is locked, with a marker that installs it
    there, at a version in the declared range (or is left out on purpose: course.LEFT_OUT)."""
    lock = lock_requirements()
    dists = list(importlib.metadata.distributions())
    installed = {canonicalize_name(d.metadata["Name"]) for d in dists}
    stale = locked_for("linux") - installed
    assert not stale, f"the environment running the tests lacks locked packages (make env): {sorted(stale)}"
    assert missing_platform_dependencies(lock, dists) == []


def test_the_platform_check_finds_a_missing_windows_dependency():
    lock = {k: v for k, v in lock_requirements().items() if k != "pywinpty"}
    problems = missing_platform_dependencies(lock, importlib.metadata.distributions())
    assert any(p.startswith("win32: jupyter-server needs") and "pywinpty" in p for p in problems), problems
    assert not any(p.startswith("darwin") and "pywinpty" in p for p in problems)


def test_the_platform_check_finds_a_wrong_marker():
    lock = dict(lock_requirements())
    lock["appnope"] = Requirement('appnope==1.0.0; sys_platform == "win32"')
    problems = missing_platform_dependencies(lock, importlib.metadata.distributions())
    assert any(p.startswith("darwin: ipykernel needs") and "marker" in p for p in problems), problems


def test_platform_only_lines_install_nothing_on_linux_and_are_the_platform_file():
    lock = lock_requirements()
    marked = {name: req for name, req in lock.items() if req.marker is not None}
    assert marked == lock_requirements(PLATFORM_LOCK)
    assert set(marked) >= {"appnope", "colorama", "pywinpty"}
    for name, req in marked.items():
        assert not applies(req, "linux"), f"{req} would install on Linux"
        assert applies(req, "darwin") or applies(req, "win32"), f"{req} installs nowhere"


def test_make_lock_keeps_the_platform_lines(tmp_path):
    """`make lock` (pip freeze) on a copy of the tree: the marker lines come back, once each."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    venv = Path(sys.prefix)
    for name in ("Makefile", "requirements.lock", "requirements-platforms.lock", "pyproject.toml"):
        shutil.copy2(ROOT / name, tmp_path / name)
    stamp = venv / course.STAMP_NAME
    run = subprocess.run(["make", "-s", "-C", str(tmp_path), f"VENV={venv}", "-o", str(stamp), "lock"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    made = lock_requirements(tmp_path / "requirements.lock")
    platform_lines = lock_requirements(PLATFORM_LOCK)
    assert {n: r for n, r in made.items() if r.marker is not None} == platform_lines
    text = (tmp_path / "requirements.lock").read_text()
    for name in platform_lines:
        assert len(re.findall(rf"(?im)^{name}==", text)) == 1, name
    frozen = {canonicalize_name(line.split("==")[0]) for line in subprocess.run(
        [sys.executable, "-m", "pip", "freeze", "--exclude-editable"], capture_output=True, text=True, timeout=120
    ).stdout.splitlines() if "==" in line}
    assert set(made) - set(platform_lines) == frozen - set(course.LEFT_OUT) - {"mha-core"}


# --------------------------------------------------------------------------- conda


def environment_yml() -> dict:
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def test_environment_yml_installs_python_and_pip_only():
    # A pip section would be resolved with dependencies (conda cannot say --no-deps): the
    # packages come from the lock in a second step, `python tools/course.py install`.
    env = environment_yml()
    assert env["dependencies"] == ["python=3.11", "pip"]
    assert not any(isinstance(d, dict) for d in env["dependencies"])


def test_environment_yml_agrees_with_the_lock():
    """The same Python series the lock is made for (torch's cp311 wheel) and nothing the lock pins."""
    env = environment_yml()
    python = next(d for d in env["dependencies"] if d.startswith("python="))
    assert python == "python={}.{}".format(*course.PYTHON_SERIES)
    conda_names = {canonicalize_name(re.split(r"[=<> ]", d)[0]) for d in env["dependencies"]}
    assert not conda_names & set(lock_requirements()), "conda would install its own copy of a locked package"


def test_the_readme_tells_conda_users_the_one_command_after_create():
    readme = (ROOT / "README.md").read_text()
    section = readme[readme.index("conda env create -f environment.yml"):][:600]
    assert "python tools/course.py install" in section


# --------------------------------------------------------------------------- one set of steps for every route


def test_every_install_step_says_no_deps_and_installs_the_lock_then_the_course():
    for system in ("Linux", "Darwin", "Windows"):
        steps = course.pip_install_steps("PY", system=system)
        assert all(step[:4] == ["PY", "-m", "pip", "install"] and "--no-deps" in step for step in steps), steps
        assert steps[-2][-2:] == ["-r", str(LOCK)]
        assert steps[-1][-2:] == ["-e", str(ROOT)]
        assert len(steps) == (3 if system == "Linux" else 2)


def test_torch_comes_from_the_cpu_index_on_linux():
    # The text of the step only: this machine cannot reach download.pytorch.org (its CPU wheel
    # lies on local disk); PyPI's Linux torch is the CUDA build with gigabytes of nvidia wheels.
    torch_step = course.pip_install_steps("PY", system="Linux")[0]
    assert torch_step[-3:] == ["--index-url", "https://download.pytorch.org/whl/cpu", f"torch=={lock_pins()['torch']}"]
    assert "--extra-index-url" not in torch_step  # PyPI must not offer its CUDA build for this step
    assert not any("torch" in " ".join(s) for s in course.pip_install_steps("PY", system="Darwin"))


def makefile_recipe(target: str) -> list[str]:
    lines = (ROOT / "Makefile").read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    recipe = []
    for line in lines[start + 1:]:
        if not line.startswith("\t"):
            break
        recipe.append(line.strip())
    return recipe


def test_make_runs_the_same_steps_as_the_route_without_make():
    assert "$(BIN)/python tools/course.py install" in makefile_recipe("$(STAMP)")
    assert makefile_recipe("lab") == ["$(BIN)/python tools/course.py lab"]
    assert course.STAMP_NAME == ".course-env-installed"
    assert "STAMP  := $(VENV)/.course-env-installed" in (ROOT / "Makefile").read_text()


def test_binder_postbuild_runs_the_same_install():
    post_build = ROOT / "binder" / "postBuild"
    assert os.access(post_build, os.X_OK)
    commands = [line.strip() for line in post_build.read_text().splitlines() if line.strip() and not line.lstrip().startswith("#")]
    assert commands == ["set -euo pipefail", "python tools/course.py install"]
    assert (ROOT / "binder" / "runtime.txt").read_text().strip() == "python-{}.{}".format(*course.PYTHON_SERIES)
    subprocess.run(["bash", "-n", str(post_build)], check=True)


def test_the_lab_command_opens_the_welcome_notebook_from_the_notebooks_folder():
    cmd = course.lab_command("PY", ["--no-browser"], as_root=False)
    assert cmd[:3] == ["PY", "-m", "jupyterlab"] and cmd[-1] == "--no-browser"
    assert f"--ServerApp.root_dir={ROOT / 'notebooks'}" in cmd
    assert "--LabApp.default_url=/lab/tree/00_welcome.ipynb" in cmd
    assert (ROOT / "notebooks" / course.FIRST_NOTEBOOK).is_file()
    assert "--allow-root" in course.lab_command("PY", as_root=True)
    assert "--allow-root" not in cmd


def test_the_course_settings_land_where_jupyterlab_reads_packaged_defaults(tmp_path):
    from jupyterlab_server.settings_utils import _get_overrides

    target = course.install_settings(tmp_path)
    assert target == tmp_path / "share" / "jupyter" / "lab" / "settings" / "overrides.d" / "mha-course.json"
    overrides, error = _get_overrides(str(tmp_path / "share" / "jupyter" / "lab" / "settings"))
    assert not error
    assert overrides["@jupyterlab/apputils-extension:notification"] == {"fetchNews": "false", "checkForUpdates": False}


def test_the_environment_running_the_tests_has_the_course_settings():
    """What `make env` / `tools/course.py install` put in .venv: JupyterLab reads it from sys.prefix."""
    settings = Path(sys.prefix).joinpath(*course.SETTINGS_PARTS)
    assert settings.is_file(), f"{settings} is missing: rebuild the environment (make env)"
    assert json.loads(settings.read_text()) == json.loads(course.SETTINGS.read_text())


def test_venv_python_path_on_windows_and_elsewhere(tmp_path):
    assert course.venv_python(tmp_path, windows=True) == tmp_path / "Scripts" / "python.exe"
    assert course.venv_python(tmp_path, windows=False) == tmp_path / "bin" / "python"


def test_building_a_venv_with_another_python_names_the_version_and_the_fix():
    with pytest.raises(course.CourseError) as info:
        course.check_python_for_venv((3, 12, 1), "/usr/bin/python3")
    message = str(info.value)
    assert "3.12.1" in message and "/usr/bin/python3" in message and "Python 3.11" in message and "py -3.11" in message
    course.check_python_for_venv((3, 11, 7), "python3.11")  # no error


def test_an_environment_is_current_only_when_its_stamp_is_newer_than_the_lock(tmp_path):
    assert not course.is_up_to_date(tmp_path)
    stamp = course.stamp_path(tmp_path)
    stamp.touch()
    newest = max(LOCK.stat().st_mtime, (ROOT / "pyproject.toml").stat().st_mtime)
    os.utime(stamp, (newest - 10, newest - 10))
    assert not course.is_up_to_date(tmp_path)
    os.utime(stamp, (newest + 10, newest + 10))
    assert course.is_up_to_date(tmp_path)


def test_a_bad_command_is_refused_with_the_choices(capsys):
    with pytest.raises(SystemExit):
        course.main(["serve"])
    assert "choose from 'lab', 'test', 'env', 'install'" in capsys.readouterr().err


def test_install_puts_exactly_the_lock_and_the_project_and_removes_what_is_left_out(tmp_path):
    """tools/course.py install into a fresh venv, on a small stand-in tree: a one-package lock and a
    one-module project; lark (left out on purpose) is there before and gone after."""
    tree = tmp_path / "tree"
    (tree / "tiny").mkdir(parents=True)
    (tree / "tiny" / "__init__.py").write_text("")
    (tree / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n'
        '[project]\nname = "tiny-course"\nversion = "0"\ndependencies = ["numpy"]\n'
        '[tool.setuptools]\npackages = ["tiny"]\n')
    (tree / "requirements.lock").write_text(f"six=={importlib.metadata.version('six')}\n"
                                            'colorama==0.4.6 ; sys_platform == "win32"\n')
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(course.venv_python(venv))
    subprocess.run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-deps", "lark"],
                   check=True, timeout=300)
    prefix = course.install(python, root=tree, system="Darwin")  # no torch step
    names = set(course._environment_of(python)[1]) - {"pip", "setuptools"}
    assert names == {"six", "tiny-course"}  # no numpy (--no-deps), no colorama (not win32), no lark
    assert Path(prefix).resolve() == venv.resolve()
    assert course.stamp_path(prefix).exists()
    assert Path(prefix).joinpath(*course.SETTINGS_PARTS).is_file()
    assert set(course.KERNEL_CONFIG_LINES) <= set(Path(prefix).joinpath(*course.KERNEL_CONFIG_PARTS).read_text().splitlines())


# --------------------------------------------------------------------------- repo2docker (Binder, Kubernetes)


def copy_of_the_tree(dest: Path) -> Path:
    """The files git tracks or would track (or, outside git, the tree less environments and run artefacts), copied to ``dest``.

    ``pip install`` of a folder writes ``build/`` and ``*.egg-info`` into it: building
    from a copy leaves the checkout as it was.
    """
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT, capture_output=True, timeout=60)
    if listed.returncode == 0 and listed.stdout:
        for name in listed.stdout.decode().split("\0"):
            if name and (ROOT / name).is_file():
                (dest / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, dest / name)
    else:
        shutil.copytree(ROOT, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(
            ".venv", ".git", "artifacts", "build", "*.egg-info", "__pycache__", ".hypothesis", ".pytest_cache"))
    return dest


def _offline_or_fail(message: str):
    if os.environ.get("CI") == "true":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.fixture(scope="module")
def repo2docker() -> Path:
    """repo2docker from PyPI in its own venv under .cache/ (made once, reused): never the course's .venv."""
    venv = ROOT / ".cache" / ("repo2docker-" + REPO2DOCKER.split("==")[1])
    exe = venv / "bin" / "repo2docker"
    if not exe.exists():
        shutil.rmtree(venv, ignore_errors=True)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
        got = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", REPO2DOCKER],
                             capture_output=True, text=True, timeout=600)
        if got.returncode != 0:
            shutil.rmtree(venv, ignore_errors=True)
            _offline_or_fail(f"could not install {REPO2DOCKER} from PyPI: {got.stderr.strip()[-400:]}")
    return exe


@pytest.fixture(scope="module")
def generated_dockerfile(repo2docker, tmp_path_factory) -> str:
    tree = copy_of_the_tree(tmp_path_factory.mktemp("r2d") / "course")
    run = subprocess.run([str(repo2docker), "--no-build", "--debug", str(tree)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    return run.stdout


def test_repo2docker_builds_from_binder_with_the_course_install_as_its_only_install(generated_dockerfile):
    dockerfile = generated_dockerfile
    # Its Python 3.11 base environment; repo2docker writes copied file names escaped (-2e for '.').
    copied = re.sub(r"-([0-9a-f]{2})", lambda m: chr(int(m.group(1), 16)), dockerfile)
    assert "/environment.py-3.11-linux-64.lock" in copied
    assert "RUN ./binder/postBuild" in dockerfile
    # No other way in for packages: not environment.yml's list, not a requirements.txt, not pip itself.
    assert "environment.yml" not in dockerfile
    assert "requirements.txt" not in dockerfile
    assert "pip install" not in dockerfile
    # postBuild installs the lock with --no-deps (tools/course.py install; see the tests above).
    assert (ROOT / "binder" / "postBuild").read_text().strip().endswith("python tools/course.py install")
    assert all("--no-deps" in step for step in course.pip_install_steps("python", system="Linux"))


def test_what_repo2docker_base_brings_and_the_lock_leaves_out_is_removed(repo2docker):
    """repo2docker's base environment (its conda lock for Python 3.11) holds lark and
    rfc3987-syntax; tools/course.py install removes every package of LEFT_OUT it finds."""
    site = next(repo2docker.parent.parent.glob("lib/python*/site-packages"))
    base_lock = (site / "repo2docker" / "buildpacks" / "conda" / "environment.py-3.11-linux-64.lock").read_text()
    base = {canonicalize_name(m) for m in re.findall(r"/([A-Za-z0-9_.-]+?)-[0-9][^/-]*-[^/-]+\.(?:conda|tar\.bz2)", base_lock)}
    assert {"lark", "rfc3987-syntax", "jupyterlab"} <= base
    assert {"lark", "rfc3987-syntax"} <= set(course.LEFT_OUT)  # install() removes them (tested above)


def test_what_the_image_configuration_installs_is_exactly_the_lock(tmp_path):
    """Every pip step of the image's install (binder/postBuild -> tools/course.py install), run as
    a dry run with a report in a throwaway venv: the packages are the lock's and the course, no
    other. The torch step's index (PyTorch's CPU wheels) cannot be reached here; it is checked
    as text above, and torch==<lock> is in the lock step's report."""
    tree = copy_of_the_tree(tmp_path / "course")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = str(course.venv_python(venv))
    steps = course.pip_install_steps(python, system="Linux", root=tree)
    assert steps[0][-1].startswith("torch==")
    installed = {}
    for i, step in enumerate(steps[1:]):
        report = tmp_path / f"report-{i}.json"
        dry = step[:4] + ["--dry-run", "--ignore-installed", "--report", str(report)] + step[4:]
        run = subprocess.run(dry, capture_output=True, text=True, timeout=600, cwd=tree)
        assert run.returncode == 0, run.stderr[-3000:]
        for item in json.loads(report.read_text())["install"]:
            installed[canonicalize_name(item["metadata"]["name"])] = item["metadata"]["version"]
    not_locked = set(installed) - set(lock_requirements()) - {"mha-core"}
    assert not not_locked, f"the image would install what requirements.lock does not list: {sorted(not_locked)}"
    assert set(installed) == locked_for("linux") | {"mha-core"}
    assert not {"lark", "rfc3987-syntax", "sentence-transformers"} & set(installed)


def test_the_kubernetes_image_is_built_from_the_binder_configuration():
    values_text = (ROOT / "deploy" / "helm" / "values.yaml").read_text()
    header = values_text[:values_text.index("singleuser:")]
    assert "repo2docker --target-repo-dir /srv/repo" in header and "binder/" in header
    assert "environment.yml" not in header
    values = yaml.safe_load(values_text)
    assert values["singleuser"]["cmd"] == "jupyterhub-singleuser"  # from repo2docker's base environment
    section = (ROOT / "deploy" / "README.md").read_text().split("## Zero to JupyterHub (Kubernetes)", 1)[1].split("\n## ", 1)[0]
    assert "binder/" in section and "tools/course.py install" in section and "environment.yml" not in section


# --------------------------------------------------------------------------- CI and the installed package


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make lab" in readme
    assert "tools/course.py lab" in readme and "tools/course.py test" in readme and "py -3.11 tools\\course.py lab" in readme
    commands = [l.strip() for l in ci.splitlines() if l.strip() and not l.strip().startswith("#")]
    assert commands[-1] == "make test"


@pytest.mark.parametrize(("ci", "asked", "taken"), [(None, None, True), ("true", None, False), ("true", "1", True),
                                                    (None, "0", False)])
def test_the_browser_tests_take_pictures_except_under_ci_unless_asked(ci, asked, taken):
    """CI keeps no files: under CI=true the browser tests take no screenshots, unless MHA_PICTURES=1."""
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "MHA_PICTURES")}
    env.update({"PYTHONPATH": str(ROOT / "tests" / "browser")}, **({"CI": ci} if ci else {}),
               **({"MHA_PICTURES": asked} if asked else {}))
    run = subprocess.run([sys.executable, "-c", "import browser_config; print(browser_config.PICTURES)"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert run.stdout.strip() == str(taken), run.stderr[-2000:]


def test_quiz_bank_is_found_from_an_installed_copy(tmp_path):
    """`pip install .` (not editable) puts the data inside the package, found without a checkout, and the
    widgets' JavaScript (mha_classroom/widgets/js) beside their modules."""
    target = tmp_path / "site"
    source = copy_of_the_tree(tmp_path / "src")
    before = sorted(p.name for p in ROOT.iterdir())
    build = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--disable-pip-version-check", "--target", str(target), str(source)],
        capture_output=True, text=True, timeout=300,
    )
    assert build.returncode == 0, build.stderr[-2000:]
    assert sorted(p.name for p in ROOT.iterdir()) == before  # nothing (build/, *.egg-info) left in the checkout
    assert (target / "mha_core" / "data" / "quizzes").is_dir()
    # The JavaScript lives beside the course platform's widgets (it moved out of mha_core with them): compared
    # with the checkout's, which must not be empty, or two empty lists would pass.
    checkout = sorted(p.name for p in (ROOT / "mha_classroom" / "widgets" / "js").glob("*.js"))
    assert "live_figure.js" in checkout, checkout
    shipped = sorted(p.name for p in (target / "mha_classroom" / "widgets" / "js").glob("*.js"))
    assert shipped == checkout, shipped
    probe = (
        "import mha_core, mha_classroom, mha_classroom.quiz.bank as bank, sys;"
        "assert 'site' in mha_core.__file__, mha_core.__file__;"
        "assert 'site' in mha_classroom.__file__, mha_classroom.__file__;"
        "print(len(bank.load_bank().all_questions()))"
    )
    run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert int(run.stdout.strip().splitlines()[-1]) > 0


def test_the_readme_layout_names_every_module_and_folder_of_the_package():
    block = (ROOT / "README.md").read_text().split("## Layout", 1)[1].split("```", 2)[1]
    package = ROOT / "mha_core"
    names = sorted(p.name for p in package.iterdir()
                   if (p.suffix == ".py" and p.name != "__init__.py") or (p.is_dir() and (p / "__init__.py").exists()))
    missing = [n for n in names if (n if n.endswith(".py") else n + "/") not in block]
    assert not missing, f"README's layout does not name {missing}"
    for folder in ("notebooks/", "data/", "tests/", "benchmarks/", "scripts/", "binder/", "docs/", "deploy/", ".ci/run"):
        assert folder in block, folder


def test_the_test_command_runs_every_test_once_one_run_per_part_in_lanes():
    """The unit tests on every core; the browser, screen-reader, hub and cluster tests each a run of their own;
    every part in exactly one lane, and every test file in exactly one part."""
    commands = course.test_commands("PY")
    assert [name for lane in course.LANES for name in lane] == [course.part_name(cmd) for cmd in commands]
    assert sorted(course.part_name(cmd) for cmd in commands) == sorted(course.PARTS), "each part once, in one lane"
    by_part = {course.part_name(cmd): cmd for cmd in commands}
    assert by_part["unit"][:6] == ["PY", "-m", "pytest", "--durations=15", "-n", "auto"]
    assert all("-n" not in cmd for part, cmd in by_part.items() if part != "unit")  # one JupyterLab, one hub per run
    assert all(any(arg.startswith("--durations=") for arg in cmd) for cmd in commands)  # the slowest, named
    # Every test file in exactly one part: its folder or file named, and not ignored there.
    def runs(part: list[str], path: str) -> bool:
        named = [a for a in part if a.startswith("tests")] or ["tests"]
        ignored = [a.split("=", 1)[1] for a in part if a.startswith("--ignore=")]
        inside = lambda base: path == base or path.startswith(base + "/")  # noqa: E731
        return any(inside(n) for n in named) and not any(inside(i) for i in ignored)
    for path in sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
                       if "node_modules" not in p.parts):
        parts = [name for name, part in course.PARTS.items() if runs(part, path)]
        assert len(parts) == 1, f"{path} runs in {parts}"
    # The hub and the cluster share accounts: they may sit in two lanes because each session holds the machine's
    # lock (the one that comes second waits; test_a_second_hub_or_cluster_session_waits_for_the_first).
    for part in ("hub", "cluster"):
        assert "hold_machine()" in (ROOT / "tests" / part / "conftest.py").read_text(), part
    assert course.LANES == tuple(lane for stage in course.STAGES for lane in stage)
    # With arguments, one pytest run with exactly them (pytest's own selection applies).
    assert course.test_commands("PY", ["-k", "parity"]) == [["PY", "-m", "pytest", "-k", "parity"]]
    assert course.part_name(["PY", "-m", "pytest", "-k", "parity"]) == "pytest"


@pytest.mark.skipif(os.name != "posix", reason="the lock is flock")
def test_a_second_hub_or_cluster_session_waits_for_the_first(monkeypatch, tmp_path):
    """hold_machine (tests/hub/hubctl.py) waits while another process holds the lock and takes it once released."""
    sys.path.insert(0, str(ROOT / "tests" / "hub"))
    import hubctl

    lock = tmp_path / "machine.lock"
    monkeypatch.setattr(hubctl, "MACHINE_LOCK", lock)
    monkeypatch.setattr(hubctl, "_machine_lock", None)
    monkeypatch.setattr(hubctl, "remove_leftovers", lambda: ["nothing"])
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               f"fd = os.open({str(lock)!r}, os.O_RDWR | os.O_CREAT)\n"
                               "fcntl.flock(fd, fcntl.LOCK_EX); print('held', flush=True); time.sleep(1.5)"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "held"
    started = time.monotonic()
    try:
        assert hubctl.hold_machine(wait_s=30, poll_s=0.1) == ["nothing"]
        assert holder.poll() is not None and time.monotonic() - started > 1.0  # it waited for the first to end
        assert hubctl.hold_machine() == []  # held already in this process
    finally:
        holder.wait(10)
        if hubctl._machine_lock is not None:
            os.close(hubctl._machine_lock)


def test_the_unit_part_leaves_the_notebooks_to_the_browser_part_only_when_that_part_runs_them(monkeypatch, tmp_path):
    """Each notebook's Run All in a fresh kernel happens once: in JupyterLab when the browser part can run (Chromium
    here, or CI=true, where a browser test that cannot run fails), else in the unit part's ``notebooks`` tests."""
    def unit_command():
        return next(cmd for cmd in course.test_commands("PY") if course.part_name(cmd) == "unit")
    monkeypatch.delenv("CI", raising=False)
    monkeypatch.setenv("MHA_CHROMIUM", str(tmp_path / "no-chromium"))
    assert "not notebooks" not in unit_command()
    (tmp_path / "chromium").touch()
    monkeypatch.setenv("MHA_CHROMIUM", str(tmp_path / "chromium"))
    assert unit_command()[-2:] == ["-m", "not notebooks"]
    monkeypatch.setenv("MHA_CHROMIUM", str(tmp_path / "no-chromium"))
    monkeypatch.setenv("CI", "true")
    assert unit_command()[-2:] == ["-m", "not notebooks"]
    assert [course.part_name(cmd) for cmd in course.test_commands("PY")] == [n for lane in course.LANES for n in lane]


def test_the_way_into_the_checkout_is_opened_once_for_every_part_and_closed_after_the_last(monkeypatch, tmp_path):
    """One part putting the folders' modes back while another still runs learners from the checkout closed
    the way under a running hub; the runner opens it before the first part and closes it after the last."""
    private = tmp_path / "clone"
    (private / "repo").mkdir(parents=True)
    private.chmod(0o700)
    opened = course.open_path_to(private / "repo")  # pytest's own temporary folders above it are 0700 too
    assert private in [folder for folder, _ in opened] and (private / "repo") not in [folder for folder, _ in opened]
    assert all(folder.stat().st_mode & 0o001 for folder in [private, *private.parents])
    assert private.stat().st_mode & 0o777 == 0o701  # enter, not list
    course.restore_modes(opened)
    assert [folder.stat().st_mode & 0o7777 for folder, _ in opened] == [mode & 0o7777 for _, mode in opened]
    events = []
    monkeypatch.setattr(course.os, "geteuid", lambda: 0)
    monkeypatch.setattr(course, "open_path_to", lambda target: events.append(("open", target)) or ["modes"])
    monkeypatch.setattr(course, "restore_modes", lambda modes: events.append(("restore", modes)))
    monkeypatch.setattr(course, "run_part", lambda cmd, report, log, env: events.append(course.part_name(cmd)) or (0, 0.0))
    assert course.run_tests("PY") == 0
    assert events[0] == ("open", course.ROOT) and events[-1] == ("restore", ["modes"])
    assert sorted(events[1:-1]) == sorted(course.PARTS)


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="the machine's CPU comes from /proc/stat")
def test_the_machines_busy_cpu_grows_by_what_a_process_spins():
    before = course.machine_cpu()
    end = time.process_time() + 0.5
    while time.process_time() < end:
        pass
    after = course.machine_cpu()
    busy, total = after[0] - before[0], after[1] - before[1]
    # On a machine busy every tick both grow alike; sums of ticks in float may then differ in the last digit.
    assert busy >= 0.45 and total >= busy - 0.01, (busy, total)


def _fake_run(codes, seconds):
    """run_part for run_tests: the exit status given for its part, a JUnit report with one test of ``seconds``,
    and a line of output."""
    def run(cmd, report, log, env):
        part = course.part_name(cmd)
        assert env[course.SHARED_HANDOUTS]  # one handouts folder for both browser runs
        # One torch/OpenMP/BLAS thread per process in every part (unless set already).
        for name, value in course.TEST_THREADS.items():
            assert env.get(name) == os.environ.get(name, value), (part, name)
        report.write_text(f'<testsuites><testsuite><testcase classname="{part}" name="test_slow" '
                          f'time="{seconds[part]}"/></testsuite></testsuites>')
        log.write_text(f"output of {part}\n")
        return codes[part], seconds[part] / 2
    return run


def test_the_test_command_fails_if_any_run_failed_and_prints_each_parts_output_time_and_the_slowest_tests(
        monkeypatch, capsys):
    seconds = {"unit": 1.5, "browser": 9.25, "handouts": 2.0, "screen reader": 4.0, "screen reader in JupyterLab": 0.25,
               "hub": 3.0, "cluster": 0.5}
    assert sorted(seconds) == sorted(course.PARTS)
    codes = dict.fromkeys(seconds, 0)
    monkeypatch.setattr(course, "run_part", _fake_run({**codes, "browser": 1}, seconds))
    assert course.run_tests("PY") == 1
    out = capsys.readouterr().out
    for part in seconds:
        code = 1 if part == "browser" else 0
        cpu = round(seconds[part] / 2)
        assert re.search(rf"^  {re.escape(part)} +\d+ s +{cpu} CPU-s  exit {code}  \(load average", out, re.M), out
        assert f"output of {part}" in out and f"===== {part}: exit {code}" in out
    assert re.search(r"^tools/course.py test: \d+ s in all, lanes side by side", out, re.M), out
    assert re.search(r"^CPU of the parts: 10 CPU-s on \d+ cores", out, re.M), out  # 20.5 s of parts, half as CPU
    if course.machine_cpu() is not None:
        assert re.search(r"^the machine's cores were busy \d+ CPU-s of \d+ while the parts ran \(\d+ %", out, re.M), out
    slowest = out.split("slowest tests")[1].splitlines()[1:]
    assert [line.split()[0] for line in slowest] == ["9.2", "4.0", "3.0", "2.0", "1.5", "0.5", "0.2"], out  # slowest first
    assert "browser: browser::test_slow" in slowest[0]
    # The first failure in the lanes' order decides the exit status.
    monkeypatch.setattr(course, "run_part", _fake_run({**codes, "hub": 3, "unit": 2, "screen reader": 4}, seconds))
    assert course.run_tests("PY") == 4  # the screen reader's lane comes before the unit tests' and the hub's
    monkeypatch.setattr(course, "run_part", lambda cmd, report, log, env: (0, None))  # no report: no list, no failure
    assert course.run_tests("PY") == 0
    assert "slowest" not in capsys.readouterr().out.split("in all")[-1]


def test_a_part_that_cannot_start_fails_and_the_others_still_run(monkeypatch, capsys):
    def run(cmd, report, log, env):
        if course.part_name(cmd) == "hub":
            raise OSError("no such interpreter")
        return 0, 1.0
    monkeypatch.setattr(course, "run_part", run)
    assert course.run_tests("PY") == 2
    out = capsys.readouterr().out
    assert "hub did not run: no such interpreter" in out
    assert re.search(r"^  cluster +\d+ s +1 CPU-s  exit 0", out, re.M), out
    assert re.search(r"^  hub +\d+ s +\? CPU-s  exit 2", out, re.M), out


@pytest.mark.skipif(not hasattr(os, "wait4"), reason="a process tree's CPU comes from wait4")
def test_a_parts_cpu_counts_the_processes_it_started(tmp_path):
    """The CPU of a part is its whole tree's: a child that spins 0.4 s of CPU counts."""
    spin = "import time; end = time.process_time() + 0.4\nwhile time.process_time() < end: pass"
    script = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {spin!r}], check=True)"
    code, cpu = course.run_part([sys.executable, "-c", script], tmp_path / "r.xml", tmp_path / "l.log", dict(os.environ))
    assert code == 0 and cpu >= 0.4, (code, cpu, (tmp_path / "l.log").read_text())


@pytest.mark.skipif(os.name != "posix", reason="the lower priority is POSIX's nice")
def test_a_part_runs_with_its_output_in_its_log_and_the_unit_tests_at_a_lower_priority(tmp_path):
    log, report = tmp_path / "part.log", tmp_path / "part.xml"
    script = "import os, sys; print('niceness', os.nice(0)); sys.exit(3)"
    base = os.nice(0)
    unit_like = [sys.executable, "-c", script, *course.PARTS["unit"]]
    assert course.part_name(unit_like) == "unit"
    code, cpu = course.run_part(unit_like, report, log, dict(os.environ))
    assert code == 3 and cpu > 0
    assert log.read_text().split() == ["niceness", str(min(base + 10, 19))]
    other = [sys.executable, "-c", script, *course.PARTS["hub"]]
    assert course.run_part(other, report, log, dict(os.environ))[0] == 3
    assert log.read_text().split() == ["niceness", str(base)]


def test_a_parts_cpu_counts_a_process_left_to_init(tmp_path):
    """As root on Linux a part runs in a control group of its own: a process it starts and never waits for (a kernel
    killed with its server, a browser) is counted; wait4 alone missed it (the figure was a floor)."""
    probe = course.part_group("probe")
    if probe is None:
        pytest.skip("no control group can be made here (not root, or no cgroup v1 cpuacct)")
    course.remove_group(probe)
    spun = tmp_path / "spun"
    spin = f"import time; end = time.process_time() + 0.5\nwhile time.process_time() < end: pass\nopen({str(spun)!r}, 'w').close()"
    # The child starts a spinner, never waits for it (no wait4), and exits once the spinner has spun 0.5 CPU-s, however
    # busy the machine (a fixed sleep gave it 0.43 CPU-s beside the other parts): init reaps the spinner.
    script = (f"import os, subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {spin!r}], start_new_session=True)\n"
              f"end = time.monotonic() + 120\nwhile not os.path.exists({str(spun)!r}) and time.monotonic() < end: time.sleep(0.01)")
    code, cpu = course.run_part([sys.executable, "-c", script], tmp_path / "r.xml", tmp_path / "l.log", dict(os.environ))
    assert code == 0 and cpu >= 0.45, (code, cpu, (tmp_path / "l.log").read_text())
    # This run's group is gone (named by this process; in `make test` the other parts' groups are there meanwhile).
    assert not list(course.CPUACCT.glob(f"mha-course-test-*-{os.getpid()}")), "the part's control group was left behind"
    assert course.part_group_possible()
