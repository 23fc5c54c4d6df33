"""The class hub's files (deploy/): the config loads and says what the README says, the
locks are exact and keep the kernel light, and learners' homes are private.

JupyterHub itself is not in the course environment (a learner's kernel must not get
heavier); where it is missing, the config is loaded against a stand-in for the one
class it subclasses. The real hub is started by the load test (benchmarks/loadtest).
"""

from __future__ import annotations

import importlib
import json
import os
import stat
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
DEPLOY = ROOT / "deploy"


def _pins(path: Path) -> dict[str, str]:
    pins = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            name, sep, version = line.partition("==")
            assert sep, f"{path.name}: {line!r} is not an exact pin"
            pins[canonicalize_name(name)] = version
    return pins


@pytest.fixture
def hub_modules(monkeypatch):
    """deploy/'s modules, importable; jupyterhub's spawner replaced by a stand-in if absent."""
    monkeypatch.syspath_prepend(str(DEPLOY))
    try:
        importlib.import_module("jupyterhub.spawner")
    except ImportError:
        from traitlets import List, Unicode
        from traitlets.config import LoggingConfigurable

        class LocalProcessSpawner(LoggingConfigurable):
            args = List(config=True)
            cmd = List(config=True)
            notebook_dir = Unicode(config=True)

            def get_args(self):
                return list(self.args)

            def get_env(self):
                return {}

            def user_env(self, env):
                return env

            def make_preexec_fn(self, name):
                return None

        fake_pkg = types.ModuleType("jupyterhub")
        fake_spawner = types.ModuleType("jupyterhub.spawner")
        fake_spawner.LocalProcessSpawner = LocalProcessSpawner
        fake_pkg.spawner = fake_spawner
        monkeypatch.setitem(sys.modules, "jupyterhub", fake_pkg)
        monkeypatch.setitem(sys.modules, "jupyterhub.spawner", fake_spawner)
    for name in ("course_spawner", "poll_service"):
        sys.modules.pop(name, None)
    yield
    for name in ("course_spawner", "poll_service"):
        sys.modules.pop(name, None)


def load_config(monkeypatch, tmp_path, **env):
    from traitlets.config import Config

    monkeypatch.setenv("MHA_HUB_STATE", str(tmp_path / "state"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    config = Config()
    namespace = {"get_config": lambda: config, "__file__": str(DEPLOY / "jupyterhub_config.py")}
    exec(compile((DEPLOY / "jupyterhub_config.py").read_text(), str(DEPLOY / "jupyterhub_config.py"), "exec"), namespace)
    return config


# --------------------------------------------------------------------------- the config


def test_config_loads_with_the_course_spawner_ipc_kernels_and_the_services(hub_modules, monkeypatch, tmp_path):
    c = load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="dummy", MHA_HUB_PORT="18000", MHA_POLL_PORT="18101",
                    MHA_HUB_INSTRUCTORS="tess, tom")
    assert c.JupyterHub.spawner_class.__name__ == "CourseSpawner"
    assert "--KernelManager.transport=ipc" in c.Spawner.args
    assert c.Spawner.cmd[0].endswith("jupyterhub-singleuser")
    assert c.JupyterHub.bind_url.endswith(":18000")
    assert c.JupyterHub.authenticator_class == "dummy"
    assert c.Spawner.environment["MHA_POLL_URL"] == "http://127.0.0.1:18101/services/mha-poll/"
    services = {s["name"]: s for s in c.JupyterHub.services}
    assert set(services) == {"mha-poll", "idle-culler"}
    assert services["mha-poll"]["url"] == "http://127.0.0.1:18101"
    assert any(arg.startswith("--timeout=") for arg in services["idle-culler"]["command"])
    assert c.ConfigurableHTTPProxy.command[0].endswith("node_modules/.bin/configurable-http-proxy")
    assert str(tmp_path / "state") in c.JupyterHub.db_url


def test_only_the_instructor_role_holds_the_poll_read_scope(hub_modules, monkeypatch, tmp_path):
    c = load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="dummy", MHA_HUB_INSTRUCTORS="tess,tom")
    roles = {r["name"]: r for r in c.JupyterHub.load_roles}
    read = "custom:mha-poll:read"
    assert read in c.JupyterHub.custom_scopes
    assert roles["instructor"]["users"] == ["tess", "tom"] and read in roles["instructor"]["scopes"]
    assert [name for name, role in roles.items() if read in role["scopes"]] == ["instructor"]
    # Every learner's server token may post answers; the read scope only reaches a token
    # whose owner holds it (JupyterHub gives a server token the subset its owner has).
    assert "access:services!service=mha-poll" in roles["user"]["scopes"]
    assert {"access:services!service=mha-poll", read} <= set(c.Spawner.server_token_scopes)
    assert set(roles["idle-culler"]["scopes"]) >= {"list:users", "delete:servers"}


def test_pam_is_the_default_and_an_unknown_authenticator_is_refused(hub_modules, monkeypatch, tmp_path):
    monkeypatch.delenv("MHA_HUB_AUTH", raising=False)
    assert load_config(monkeypatch, tmp_path).JupyterHub.authenticator_class == "pam"
    with pytest.raises(ValueError, match="MHA_HUB_AUTH='ldap'.*pam or dummy"):
        load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="ldap")


# --------------------------------------------------------------------------- homes


def test_a_home_is_private_with_the_course_copied_once(hub_modules, tmp_path):
    from course_spawner import prepare_home

    course = tmp_path / "notebooks"
    course.mkdir()
    (course / "01_x.ipynb").write_text("{}")
    home = tmp_path / "homes" / "ada"
    progress = prepare_home(home, course, os.getuid(), os.getgid())
    assert progress == home / ".mha_course" / "progress.sqlite3"
    assert stat.S_IMODE(home.stat().st_mode) == 0o700
    assert stat.S_IMODE(progress.parent.stat().st_mode) == 0o700
    assert (home / "course" / "01_x.ipynb").read_text() == "{}"
    (home / "course" / "01_x.ipynb").write_text("my edits")
    prepare_home(home, course, os.getuid(), os.getgid())
    assert (home / "course" / "01_x.ipynb").read_text() == "my edits"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as two Unix accounts")
def test_one_learner_cannot_read_another_learners_progress(hub_modules):
    import shutil
    import tempfile

    from course_spawner import prepare_home

    tmp_path = Path(tempfile.mkdtemp(prefix="mha-homes-", dir="/tmp"))  # pytest's own folder is 0700: no one else enters
    os.chmod(tmp_path, 0o711)
    ada, bob = 64101, 64102  # two Unix user ids, as the hub gives two learners
    progress = prepare_home(tmp_path / "ada", None, ada, ada)
    progress.write_text("ada's answers")
    os.chown(progress, ada, ada)

    def read_as(uid):
        def become():
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)

        return subprocess.run(["cat", str(progress)], capture_output=True, text=True, preexec_fn=become)

    assert read_as(ada).stdout.strip() == "ada's answers"
    denied = read_as(bob)
    shutil.rmtree(tmp_path)
    assert denied.returncode != 0 and "Permission denied" in denied.stderr


def test_learner_names_come_from_a_comma_list(hub_modules, monkeypatch):
    from course_spawner import names_from_env

    monkeypatch.setenv("MHA_TEST_NAMES", " tess, ,tom,")
    assert names_from_env("MHA_TEST_NAMES") == ["tess", "tom"]
    assert names_from_env("MHA_TEST_UNSET") == []


# --------------------------------------------------------------------------- packages


def test_the_hub_lock_is_exact_and_adds_only_what_the_course_lock_lacks():
    hub, course = _pins(DEPLOY / "requirements-hub.lock"), _pins(ROOT / "requirements.lock")
    assert {"jupyterhub", "jupyterhub-idle-culler", "sqlalchemy", "alembic"} <= set(hub)
    assert not set(hub) & set(course), f"pinned twice: {sorted(set(hub) & set(course))}"


def test_neither_lock_brings_back_the_grammar_packages_that_slow_kernels():
    for path in (DEPLOY / "requirements-hub.lock", ROOT / "requirements.lock"):
        assert not {"rfc3987-syntax", "lark"} & set(_pins(path)), path.name


def test_the_start_script_installs_without_dependencies_from_the_two_locks():
    script = (DEPLOY / "start.sh").read_text()
    assert os.access(DEPLOY / "start.sh", os.X_OK)
    assert "--no-deps" in script and "requirements-hub.lock" in script and "requirements.lock" in script
    assert "npm ci" in script
    subprocess.run(["bash", "-n", str(DEPLOY / "start.sh")], check=True)


def test_the_proxy_is_pinned_in_package_json_and_its_lock():
    pinned = json.loads((DEPLOY / "package.json").read_text())["dependencies"]["configurable-http-proxy"]
    lock = json.loads((DEPLOY / "package-lock.json").read_text())
    assert pinned == "5.3.0"
    assert lock["packages"]["node_modules/configurable-http-proxy"]["version"] == pinned


def test_helm_values_use_the_course_image_and_the_measured_limits():
    values = yaml.safe_load((DEPLOY / "helm" / "values.yaml").read_text())
    single = values["singleuser"]
    assert single["memory"]["limit"] and single["memory"]["guarantee"]
    assert single["cpu"]["limit"] and single["cpu"]["guarantee"]
    assert single["extraEnv"]["MHA_POLL_URL"].endswith("/services/mha-poll/")
    assert values["hub"]["config"]["KubeSpawner"]["server_token_scopes"][-1] == "custom:mha-poll:read"
    assert values["cull"]["enabled"] is True
    assert "mha-poll" in values["hub"]["services"]


# --------------------------------------------------------------------------- the load test's arithmetic


def _fake_run():
    def learner(name, lat, choice_sent=True):
        return {"name": name, "failures": [], "first_figure_s": 10.0,
                "latency_s": {"staggered": lat, "lockstep": [x * 2 for x in lat]},
                "notebooks": {"03_multiple_heads": {"errors": [], "torch": False, "cpu_s": 2.0, "rss_mib": 110.0},
                              "04_concat_and_output_projection": {"errors": [], "torch": True, "cpu_s": 4.0, "rss_mib": 300.0}},
                "poll": {"sent": choice_sent, "counts_refused": True, "counts_http_status": 403},
                "neighbour_progress": "refused"}

    mem = {"server_rss": 160.0, "server_pss": 140.0, "kernel_rss": 115.0, "kernel_pss": 95.0, "kernels": 1, "server_cpu_s": 3.0}
    return {"learners": 2, "all_ready_s": 50.0, "failures": [], "hub": {"rss_mib": 290.0, "pss_mib": 240.0, "cpu_s": 3.0},
            "memory_mib": {"a": mem, "b": mem}, "poll": {"sent": {"0": 1, "1": 1}, "equal": True},
            "per_learner": [learner("a", [0.010, 0.020, 0.030]), learner("b", [0.040, 0.050, 0.060])]}


def test_the_load_test_summary_gives_percentiles_torch_and_the_poll_checks():
    from benchmarks.loadtest.run import pct, summarise

    assert pct([1, 2, 3, 4, 5], 0.5) == 3 and pct([], 0.5) is None
    assert pct([0, 10], 0.95) == pytest.approx(9.5)
    s = summarise(_fake_run())
    assert s["staggered"]["p50_ms"] == pytest.approx(35.0) and s["lockstep"]["p50_ms"] == pytest.approx(70.0)
    assert s["staggered"]["n"] == 6 and s["failures"] == 0
    assert s["torch_imported"] == {"03_multiple_heads": [False], "04_concat_and_output_projection": [True]}
    assert s["notebooks_cpu_s_per_learner"] == pytest.approx(6.0)
    assert s["poll"]["learner_counts_refused"] is True and s["poll"]["learners_sent"] == 2
    assert s["neighbour_progress"] == {"refused": 2}


def test_the_load_test_report_says_it_was_taken_under_load():
    from benchmarks.loadtest.report import markdown
    from benchmarks.loadtest.run import summarise

    machine = {"cores": 2, "cpu": "x", "ram_gib": 24, "time": "t", "load_average": [9.0, 8.0, 7.0]}
    text = markdown({"machine_before": machine, "machine_after": machine, "settings": {"learners": "2"},
                     "runs": [{"summary": summarise(_fake_run())}]})
    assert "Taken under load" in text and "[9.0, 8.0, 7.0]" in text
    assert "| 2 | 0 | 50 |" in text
