"""The three package lists (pyproject ranges, the lock, environment.yml) cannot drift apart,
and the package finds its data whether installed or run from a checkout."""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import yaml
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]


def pyproject_requirements() -> dict[str, Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    return {canonicalize_name(r.name): r for r in reqs}


def lock_pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "requirements.lock").read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, version = line.partition("==")
        assert sep, f"requirements.lock line {line!r} is not an exact pin (name==version)"
        pins[canonicalize_name(name)] = version
    return pins


def environment_pins() -> dict[str, str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d)
    pins = {}
    for entry in pip_section:
        if entry.startswith("-"):
            continue  # the project itself (-e .)
        name, sep, version = entry.partition("==")
        assert sep, f"environment.yml pip entry {entry!r} is not an exact pin"
        pins[canonicalize_name(name)] = version
    return pins


def test_environment_yml_lists_exactly_the_pyproject_packages():
    assert set(environment_pins()) == set(pyproject_requirements())


def test_every_pyproject_package_is_locked():
    missing = set(pyproject_requirements()) - set(lock_pins())
    assert not missing, f"in pyproject.toml but not in requirements.lock: {sorted(missing)}"


def test_environment_yml_versions_equal_the_lock():
    lock = lock_pins()
    differ = {n: (v, lock.get(n)) for n, v in environment_pins().items() if lock.get(n) != v}
    assert not differ, f"environment.yml vs requirements.lock: {differ}"


def test_locked_versions_satisfy_the_pyproject_ranges():
    lock = lock_pins()
    for name, req in pyproject_requirements().items():
        assert Version(lock[name]) in req.specifier, f"{name}=={lock[name]} is outside pyproject's range {req.specifier}"


def test_torch_is_pinned_to_the_cpu_build_on_disk():
    # Any other torch version makes pip download a multi-GB CUDA build.
    assert lock_pins()["torch"] == "2.13.0"
    assert environment_pins()["torch"] == "2.13.0"


def test_environment_yml_uses_python_311():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert "python=3.11" in env["dependencies"]


def test_ci_runs_the_readme_test_command():
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".ci" / "run").read_text()
    assert "make test" in readme and "make lab" in readme
    commands = [l.strip() for l in ci.splitlines() if l.strip() and not l.strip().startswith("#")]
    assert commands[-1] == "make test"


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


def test_quiz_bank_is_found_from_an_installed_copy(tmp_path):
    """`pip install .` (not editable) puts the data inside the package, found without a checkout."""
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
    probe = (
        "import mha_core, mha_core.quiz.bank as bank, sys;"
        "assert 'site' in mha_core.__file__, mha_core.__file__;"
        "print(len(bank.load_bank().all_questions()))"
    )
    run = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin"},
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert int(run.stdout.strip().splitlines()[-1]) > 0
