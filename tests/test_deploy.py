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
import pwd
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
    """deploy/'s modules, importable; jupyterhub's classes replaced by stand-ins if it is absent."""
    monkeypatch.syspath_prepend(str(DEPLOY))
    try:
        importlib.import_module("jupyterhub.spawner")
    except ImportError:
        from traitlets import Any, Bool, List, Unicode
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

        class Authenticator(LoggingConfigurable):
            password = Unicode(config=True)
            allow_all = Bool(config=True)

            def normalize_username(self, name):
                return name.lower()

            async def authenticate(self, handler, data):
                return data["username"] if data["password"] == self.password else None

        class ConfigurableHTTPProxy(LoggingConfigurable):
            _check_running_callback = Any()
            command = List(config=True)

            async def start(self):
                pass

            def stop(self):
                pass

            async def check_running(self):
                pass

        fakes = {name: types.ModuleType(name) for name in ("jupyterhub", "jupyterhub.spawner", "jupyterhub.auth", "jupyterhub.proxy")}
        fakes["jupyterhub.spawner"].LocalProcessSpawner = LocalProcessSpawner
        fakes["jupyterhub.auth"].DummyAuthenticator = type("DummyAuthenticator", (Authenticator,), {})
        fakes["jupyterhub.auth"].PAMAuthenticator = type("PAMAuthenticator", (Authenticator,), {})
        fakes["jupyterhub.proxy"].ConfigurableHTTPProxy = ConfigurableHTTPProxy
        for name, module in fakes.items():
            monkeypatch.setitem(sys.modules, name, module)
    for name in ("course_spawner", "poll_service"):
        sys.modules.pop(name, None)
    # Loading the config as root would make the services' system account on this machine.
    spawner = importlib.import_module("course_spawner")
    monkeypatch.setattr(spawner, "ensure_service_user", lambda name=spawner.SERVICE_USER: pwd.getpwuid(os.getuid()))
    yield
    for name in ("course_spawner", "poll_service"):
        sys.modules.pop(name, None)


def load_config(monkeypatch, tmp_path, **env):
    from traitlets.config import Config

    for key in [k for k in os.environ if k.startswith("MHA_HUB_") or k == "MHA_POLL_PORT"]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("MHA_HUB_STATE", str(tmp_path / "state"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    config = Config()
    namespace = {"get_config": lambda: config, "__file__": str(DEPLOY / "jupyterhub_config.py")}
    exec(compile((DEPLOY / "jupyterhub_config.py").read_text(), str(DEPLOY / "jupyterhub_config.py"), "exec"), namespace)
    return config


# --------------------------------------------------------------------------- the config


def test_config_loads_with_the_course_spawner_ipc_kernels_and_the_services(hub_modules, monkeypatch, tmp_path):
    c = load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="dummy", MHA_HUB_PASSWORD="pw", MHA_HUB_PORT="18000",
                    MHA_POLL_PORT="18101", MHA_HUB_INSTRUCTORS="tess, tom")
    assert c.JupyterHub.spawner_class.__name__ == "CourseSpawner"
    assert "--KernelManager.transport=ipc" in c.Spawner.args
    assert c.Spawner.cmd[0].endswith("jupyterhub-singleuser")
    assert c.JupyterHub.bind_url.endswith(":18000")
    assert c.JupyterHub.authenticator_class.__name__ == "CourseDummyAuthenticator"
    # As root the poll is a Unix socket in a folder only its account may write (no learner can listen
    # in its place); without root, loopback TCP.
    poll_url = "http+unix://%2Frun%2Fmha-hub-poll%2Fpoll-18000.sock" if os.geteuid() == 0 else "http://127.0.0.1:18101"
    assert c.Spawner.environment["MHA_POLL_URL"] == poll_url + "/services/mha-poll/"
    services = {s["name"]: s for s in c.JupyterHub.services}
    assert set(services) == {"mha-poll", "idle-culler"}
    if os.geteuid() == 0:  # JupyterHub routes services only to TCP: the socket's service has no route
        assert "url" not in services["mha-poll"]
        assert services["mha-poll"]["environment"]["MHA_POLL_SOCKET"] == "/run/mha-hub-poll/poll-18000.sock"
    else:
        assert services["mha-poll"]["url"] == poll_url
    assert any(arg.startswith("--timeout=") for arg in services["idle-culler"]["command"])
    assert c.ConfigurableHTTPProxy.command[0].endswith("node_modules/.bin/configurable-http-proxy")
    assert str(tmp_path / "state") in c.JupyterHub.db_url


def test_only_the_instructor_role_holds_the_poll_read_scope(hub_modules, monkeypatch, tmp_path):
    c = load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="dummy", MHA_HUB_PASSWORD="pw", MHA_HUB_INSTRUCTORS="tess,tom")
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
    c = load_config(monkeypatch, tmp_path, MHA_HUB_GROUP="learners")
    assert c.JupyterHub.authenticator_class.__name__ == "CoursePAMAuthenticator"
    assert c.PAMAuthenticator.allowed_groups == {"learners"}
    # PAM homes: the login home unless a size is given; then images beside the state, not in it.
    assert c.CourseSpawner.pam_home_bytes == 0 and c.CourseSpawner.home_bytes == 0
    c = load_config(monkeypatch, tmp_path, MHA_HUB_GROUP="learners", MHA_HUB_HOME_SIZE="1G")
    assert c.CourseSpawner.pam_home_bytes == 1024**3 and c.CourseSpawner.homes_root == str(tmp_path / "state") + "-homes"
    # Without the class's group every normal account would get a server: refused, naming the fix.
    with pytest.raises(ValueError, match="MHA_HUB_GROUP.*MHA_HUB_ALL_ACCOUNTS=1"):
        load_config(monkeypatch, tmp_path)
    assert load_config(monkeypatch, tmp_path, MHA_HUB_ALL_ACCOUNTS="1").Authenticator.allow_all is True
    with pytest.raises(ValueError, match="MHA_HUB_AUTH='ldap'.*pam or dummy"):
        load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="ldap")


def test_each_learner_gets_an_origin_of_their_own_and_no_config_from_their_home(hub_modules, monkeypatch, tmp_path):
    c = load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="dummy", MHA_HUB_PASSWORD="pw", MHA_HUB_PORT="18000")
    assert c.JupyterHub.subdomain_host == "http://localhost:18000"  # learners at NAME.localhost:18000
    assert c.JupyterHub.bind_url == "http://127.0.0.1:18000"  # loopback unless a certificate is given
    assert c.Spawner.disable_user_config is True
    assert "cookie_host_prefix_enabled" not in c.JupyterHub  # __Host- cookies need HTTPS
    c = load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="dummy", MHA_HUB_PASSWORD="pw", MHA_HUB_PORT="443",
                    MHA_HUB_DOMAIN="class.example.org", MHA_HUB_SSL_CERT=__file__, MHA_HUB_SSL_KEY=__file__,
                    MHA_HUB_TRIAL="1")
    assert c.JupyterHub.subdomain_host == "https://class.example.org"
    assert c.JupyterHub.bind_url == "https://0.0.0.0:443"
    assert c.JupyterHub.cookie_host_prefix_enabled is True and c.JupyterHub.ssl_cert == __file__


@pytest.mark.parametrize("env, message", [
    ({"MHA_HUB_AUTH": "dummy"}, "needs MHA_HUB_PASSWORD"),
    ({"MHA_HUB_AUTH": "dummy", "MHA_HUB_PASSWORD": "pw", "MHA_HUB_IP": "0.0.0.0", "MHA_HUB_ALLOW_HTTP": "1"}, "MHA_HUB_TRIAL=1"),
    ({"MHA_HUB_AUTH": "pam", "MHA_HUB_IP": "0.0.0.0"}, "without HTTPS"),
    ({"MHA_HUB_AUTH": "pam", "MHA_HUB_SSL_CERT": __file__}, "give both"),
    ({"MHA_HUB_AUTH": "pam", "MHA_HUB_SSL_CERT": "/no/such.crt", "MHA_HUB_SSL_KEY": "/no/such.key"}, "is not a file"),
    ({"MHA_HUB_AUTH": "pam", "MHA_HUB_DOMAIN": "https://x.org"}, "is not a host name"),
])
def test_an_unsafe_setting_stops_the_hub_with_what_to_do(hub_modules, monkeypatch, tmp_path, env, message):
    with pytest.raises(ValueError, match=message):
        load_config(monkeypatch, tmp_path, **env)


def test_plain_http_beyond_loopback_needs_the_explicit_opt_in(hub_modules, monkeypatch, tmp_path):
    c = load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="pam", MHA_HUB_GROUP="learners", MHA_HUB_IP="0.0.0.0", MHA_HUB_ALLOW_HTTP="1")
    assert c.JupyterHub.bind_url == "http://0.0.0.0:8000"
    # TLS ended in front: browsers see HTTPS, so the cookies are __Host- ones no subdomain can toss.
    assert c.JupyterHub.subdomain_host == "https://localhost"
    assert c.JupyterHub.cookie_host_prefix_enabled is True


def test_plain_http_on_a_domain_is_refused(hub_modules, monkeypatch, tmp_path):
    """Over plain HTTP a learner's page on NAME.DOMAIN could set the login cookie for DOMAIN (issue 37)."""
    with pytest.raises(ValueError, match="cookie"):
        load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="pam", MHA_HUB_GROUP="learners", MHA_HUB_DOMAIN="class.example.org")
    c = load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="pam", MHA_HUB_GROUP="learners", MHA_HUB_DOMAIN="class.example.org", MHA_HUB_ALLOW_HTTP="1")
    assert c.JupyterHub.subdomain_host == "https://class.example.org"
    assert c.JupyterHub.cookie_host_prefix_enabled is True


def test_the_services_run_as_the_unprivileged_account(hub_modules, monkeypatch, tmp_path):
    from course_spawner import SERVICE_USER

    c = load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="dummy", MHA_HUB_PASSWORD="pw")
    want = SERVICE_USER if os.geteuid() == 0 else pwd.getpwuid(os.getuid()).pw_name
    assert {s["name"]: s["user"] for s in c.JupyterHub.services} == {"mha-poll": want, "idle-culler": want}
    if os.geteuid() == 0:
        poll = next(s for s in c.JupyterHub.services if s["name"] == "mha-poll")
        assert poll["environment"]["MHA_POLL_DB"] == str(tmp_path / "state" / "poll" / "poll.sqlite3")


def test_the_proxy_watcher_is_stopped_before_a_restart_and_for_good_on_stop(hub_modules, monkeypatch, tmp_path):
    """JupyterHub adds a proxy watcher at each (re)start and stops only the newest: after one
    restart an older watcher restarted the proxy during Ctrl-C (an orphan). CourseProxy fixes both."""
    import asyncio

    proxy_class = load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="dummy", MHA_HUB_PASSWORD="pw").JupyterHub.proxy_class
    base = proxy_class.__mro__[1]
    stopped, restarted = [], []

    async def nothing(self):
        pass

    async def restart(self):
        restarted.append(True)

    monkeypatch.setattr(base, "start", nothing)
    monkeypatch.setattr(base, "stop", lambda self: None)
    monkeypatch.setattr(base, "check_running", restart)

    class Watcher:
        def stop(self):
            stopped.append(True)

    proxy = proxy_class.__new__(proxy_class)
    proxy._check_running_callback = Watcher()
    asyncio.run(proxy.start())
    assert stopped == [True], "the old watcher was left running across a restart"
    asyncio.run(proxy.check_running())
    assert restarted == [True]
    proxy.stop()
    asyncio.run(proxy.check_running())
    assert restarted == [True], "a stopped hub's watcher restarted the proxy"


def test_a_servers_socket_reaches_the_proxy_without_a_port_and_the_hub_sees_the_target_it_gave(hub_modules, monkeypatch,
                                                                                                 tmp_path):
    """JupyterHub writes every user server's URL with a port; configurable-http-proxy would take
    ``path:80`` for the socket's path. The proxy gets the path alone, and the hub's route check sees
    the target it gave (or it would re-add the route at every check)."""
    import asyncio

    from course_spawner import proxy_target

    sock = "http+unix://%2fproc%2f412%2froot%2frun%2fmha-hub%2fht-finn%2fjupyter-server.sock"
    assert proxy_target(sock + ":80") == sock
    assert proxy_target(sock + ":80/user/ht-finn/") == sock + "/user/ht-finn/"
    for unchanged in ("http://127.0.0.1:41234", "http+unix://%2Frun%2Fmha-hub-poll%2Fpoll-8000.sock", "https://[::1]:443"):
        assert proxy_target(unchanged) == unchanged
    proxy_class = load_config(monkeypatch, tmp_path, MHA_HUB_AUTH="dummy", MHA_HUB_PASSWORD="pw").JupyterHub.proxy_class
    base = proxy_class.__mro__[1]
    table = {}

    async def add_route(self, spec, target, data):
        table[spec] = {"routespec": spec, "target": target, "data": data}

    async def delete_route(self, spec):
        table.pop(spec)

    async def get_all_routes(self):
        return {spec: dict(route) for spec, route in table.items()}

    for name, fn in (("add_route", add_route), ("delete_route", delete_route), ("get_all_routes", get_all_routes)):
        monkeypatch.setattr(base, name, fn, raising=False)
    proxy = proxy_class()
    asyncio.run(proxy.add_route("ht-finn.localhost/user/ht-finn/", sock + ":80", {"user": "ht-finn"}))
    assert table["ht-finn.localhost/user/ht-finn/"]["target"] == sock
    routes = asyncio.run(proxy.get_all_routes())
    assert routes["ht-finn.localhost/user/ht-finn/"]["target"] == sock + ":80"
    asyncio.run(proxy.delete_route("ht-finn.localhost/user/ht-finn/"))
    assert not table and not proxy._targets
    # A hub that restarted has no record: the proxy's own target is reported, and the check re-adds it once.
    table["ht-tess.localhost/user/ht-tess/"] = {"routespec": "x", "target": sock, "data": {}}
    assert asyncio.run(proxy.get_all_routes())["ht-tess.localhost/user/ht-tess/"]["target"] == sock


# --------------------------------------------------------------------------- accounts and folders


def test_uid_min_comes_from_login_defs(hub_modules, tmp_path):
    from course_spawner import uid_min

    defs = tmp_path / "login.defs"
    defs.write_text("# comment\nUID_MIN\t\t\t 2000\nUID_MAX 60000\n")
    assert uid_min(defs) == 2000
    assert uid_min(tmp_path / "missing") == 1000


def test_system_accounts_and_accounts_the_hub_did_not_make_are_refused(hub_modules):
    from course_spawner import account_refusal

    for name in ("root", "daemon", "bin"):
        assert "system account" in account_refusal(name, create_users=True)
        assert "system account" in account_refusal(name, create_users=False)
    assert account_refusal("ht-nobody-here", create_users=True) is None  # the hub may make it
    assert "no Unix account" in account_refusal("ht-nobody-here", create_users=False)
    assert "cannot be a Unix account" in account_refusal("Bad Name!", create_users=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a folder for another uid")
def test_a_folder_is_made_for_its_owner_and_never_through_a_link(hub_modules, tmp_path):
    from course_spawner import UnsafePath, owned_dir

    target = tmp_path / "target"
    target.mkdir(mode=0o755)
    (tmp_path / "link").symlink_to(target)
    (tmp_path / "someone_elses").mkdir()
    os.chown(tmp_path / "someone_elses", 64103, 64103)
    fd = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.close(owned_dir(fd, "fresh", 64101, 64101, 0o700))
        st = os.lstat(tmp_path / "fresh")
        assert (st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)) == (64101, 64101, 0o700)
        with pytest.raises(UnsafePath, match="not a folder"):
            owned_dir(fd, "link", 64101, 64101)
        with pytest.raises(UnsafePath, match="will not adopt"):
            owned_dir(fd, "someone_elses", 64101, 64101)
    finally:
        os.close(fd)
    st = os.stat(target)
    assert (st.st_uid, stat.S_IMODE(st.st_mode)) == (0, 0o755)
    assert os.stat(tmp_path / "someone_elses").st_uid == 64103


@pytest.mark.skipif(os.geteuid() != 0, reason="the trusted-path check wants root-owned folders")
def test_a_root_folder_is_only_used_when_no_one_else_could_have_replaced_it(hub_modules):
    import shutil
    import tempfile

    from course_spawner import UnsafePath, open_trusted_dir

    base = Path(tempfile.mkdtemp(prefix="mha-trusted-", dir="/tmp"))
    try:
        os.close(open_trusted_dir(base / "run" / "mha-hub", create_mode=0o711))
        assert stat.S_IMODE(os.stat(base / "run" / "mha-hub").st_mode) == 0o711
        (base / "open").mkdir()
        os.chmod(base / "open", 0o777)
        with pytest.raises(UnsafePath, match="writable by others"):
            open_trusted_dir(base / "open" / "x", create_mode=0o711)
        (base / "hop").symlink_to(base / "run")
        with pytest.raises(UnsafePath, match="without following links"):
            open_trusted_dir(base / "hop" / "mha-hub")
        (base / "learners").mkdir()
        os.chown(base / "learners", 64101, 64101)
        with pytest.raises(UnsafePath, match="not root"):
            open_trusted_dir(base / "learners")
    finally:
        shutil.rmtree(base)


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


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/python3"), reason="needs root to act as two Unix accounts")
def test_one_learner_cannot_read_another_learners_progress(hub_modules):
    import shutil
    import tempfile

    from course_spawner import prepare_hub_made_home

    tmp_path = Path(tempfile.mkdtemp(prefix="mha-homes-", dir="/tmp"))  # pytest's own folder is 0700: no one else enters
    os.chmod(tmp_path, 0o711)
    ada, bob = 64101, 64102  # two Unix user ids, as the hub gives two learners
    def read_as(uid):
        def become():
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)

        return subprocess.run(["cat", str(progress)], capture_output=True, text=True, preexec_fn=become)

    try:
        # The course venv's interpreter may live under /root; the hub uses its own, which any account runs.
        progress = prepare_hub_made_home(tmp_path, "ada", None, ada, ada, python="/usr/bin/python3")
        progress.write_text("ada's answers")
        os.chown(progress, ada, ada)
        assert read_as(ada).stdout.strip() == "ada's answers"
        denied = read_as(bob)
    finally:
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


def test_the_start_script_runs_no_python_module_from_the_folder_it_is_started_in(tmp_path):
    """An admin may run ``sudo deploy/start.sh`` from any folder, /tmp or a learner's among them: ``python -c`` and
    ``python -m`` put the current folder first on the module path, so a ``pathlib.py`` left there ran as root.
    Every Python start.sh runs is isolated (``-I``). Needs the hub's environment built (as CI does)."""
    import hashlib

    venv = DEPLOY / ".venv-hub"
    stamp = venv / ".hub-env-installed"
    want = hashlib.sha256(b"".join(p.read_bytes() for p in (ROOT / "requirements.lock", DEPLOY / "requirements-hub.lock",
                                                             ROOT / "pyproject.toml"))).hexdigest()[:16]
    if not stamp.is_file() or stamp.read_text().strip() != want:
        pytest.skip("deploy/.venv-hub is not built from today's locks (deploy/start.sh --build-only)")
    planted = ["pathlib", "ensurepip", "venv", "course", "json", "pip", "sysconfig", "shutil", "tempfile"]
    here = tmp_path / "a learner's folder"
    here.mkdir()
    for name in planted:
        (here / f"{name}.py").write_text(f"open({str(tmp_path / ('RAN-' + name))!r}, 'w').close()\n")
    done = subprocess.run([str(DEPLOY / "start.sh"), "--build-only"], cwd=here, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.glob("RAN-*")) == []


def test_the_start_script_uses_debians_python_and_installs_what_a_fresh_debian_lacks():
    script = (DEPLOY / "start.sh").read_text()
    assert 'PYTHON="${PYTHON:-$(command -v /usr/bin/python3.11' in script
    assert "apt-get install" in script and "python3.11-venv" in script and "nodejs npm" in script


def test_the_locks_install_on_debian_12s_python_3_11_2():
    """soupsieve 3.x and 4.x need Python 3.11.5 (3.0.0/3.0.1 say 3.11 but were yanked: broken on
    older 3.11); beautifulsoup4 asks only soupsieve>=1.6.1, so 2.x keeps Debian's 3.11.2 usable."""
    from packaging.version import Version

    course = _pins(ROOT / "requirements.lock")
    assert Version(course["soupsieve"]) < Version("3")


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


def test_the_load_test_report_says_whether_each_class_size_was_taken_on_a_quiet_machine():
    from benchmarks.loadtest.report import markdown
    from benchmarks.loadtest.run import summarise

    machine = {"cores": 2, "cpu": "x", "ram_gib": 24, "time": "t", "load_average": [9.0, 8.0, 7.0]}

    def report(load_before):
        summary = summarise(_fake_run())
        summary["load_average"] = {"before": [load_before, 1.0, 1.0], "after": [2.5, 1.5, 1.0]}
        return markdown({"machine_before": machine, "machine_after": machine, "settings": {"learners": "2"},
                         "runs": [{"summary": summary}]})

    quiet, loaded = report(0.4), report(3.5)
    assert "Taken on a quiet machine" in quiet and "[0.4, 1.0, 1.0] before, [2.5, 1.5, 1.0] after" in quiet
    assert "Taken under load" in loaded and "Taken on a quiet machine" not in loaded
    assert "| 2 | 0 | 50 |" in quiet
    # Without per-size load averages (an old report.json) the report says so instead of guessing.
    old = markdown({"machine_before": machine, "machine_after": machine, "settings": {"learners": "2"},
                    "runs": [{"summary": summarise(_fake_run())}]})
    assert "not recorded per class size" in old and "[9.0, 8.0, 7.0]" in old




def test_the_load_test_reports_the_learner_in_chromium_apart_from_the_simulated_ones():
    from benchmarks.loadtest.report import markdown
    from benchmarks.loadtest.run import summarise

    run = _fake_run()
    run["browser_learner"] = {"name": "w", "failures": [], "setup_s": 61.0,
                              "page_ms": {"staggered": [20.0, 30.0, 40.0], "lockstep": [50.0, 60.0, 70.0, 80.0]}}
    s = summarise(run)
    assert s["staggered"]["n"] == 6  # the simulated learners' kernel times only
    web = s["browser_learner"]
    assert web["staggered"] == {"n": 3, "p50_ms": 30.0, "p95_ms": pytest.approx(39.0), "max_ms": 40.0}
    assert web["lockstep"]["p50_ms"] == 65.0 and web["failures"] == 0 and web["setup_s"] == 61.0
    s["load_average"] = {"before": [0.5, 1.0, 1.0], "after": [2.0, 1.0, 1.0]}
    machine = {"cores": 2, "cpu": "x", "ram_gib": 24, "time": "t", "load_average": [0.5, 1.0, 1.0]}
    text = markdown({"machine_before": machine, "machine_after": machine, "settings": {"learners": "2"},
                     "runs": [{"summary": s}]})
    assert "lockstep p50 / p95 / max 65 / 78 / 80 ms over 4 clicks" in text
    assert "One more learner" not in markdown({"machine_before": machine, "machine_after": machine,
                                                "settings": {"learners": "2"}, "runs": [{"summary": summarise(_fake_run())}]})


def test_the_load_test_removes_the_run_folders_its_hub_made_and_only_those(tmp_path, monkeypatch):
    from benchmarks.loadtest import run

    before, made, kept = tmp_path / "mha-hub", tmp_path / "mha-hub-poll", tmp_path / "mha-hub-proxy"
    before.mkdir()
    monkeypatch.setattr(run.Hub, "RUN_FOLDERS", (before, made, kept))
    monkeypatch.setattr(run, "WORK", tmp_path / "work")
    hub = run.Hub("t", ["teacher"])
    made.mkdir()  # as the hub makes them when it starts as root
    kept.mkdir()
    (kept / "someone-elses.sock").write_text("")
    hub.remove_state()
    assert before.is_dir()  # there before the run: left as it was
    assert not made.exists()  # made by the run, empty: removed
    assert (kept / "someone-elses.sock").exists()  # made by the run but not empty: nothing in it is removed
    (kept / "someone-elses.sock").unlink()  # emptied later (remove_accounts, the learners' folders)
    hub.remove_run_folders()
    assert not kept.exists() and before.is_dir()
