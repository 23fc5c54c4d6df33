"""The hub only ever runs servers as accounts it made for learners, and what it creates it creates
without following links: each attack of issue 23 on accounts and folders, against the real hub."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest
from hubctl import CAROL, RUNTIME_ROOT, new_hub, uid_of

pytestmark = pytest.mark.hub

SVCDEMO = "ht-svcdemo"


def owner_and_mode(path: Path) -> tuple[int, int, int]:
    st = os.lstat(path)
    return st.st_uid, st.st_gid, stat.S_IMODE(st.st_mode)


@pytest.fixture
def system_account(hub_cleanup, hub_tmp):
    """An account made the way a service's is (``useradd -r -d DIR``), with a folder of root's as DIR."""
    folder = hub_tmp / "svcdemo-dir"
    folder.mkdir(mode=0o755, exist_ok=True)
    hub_cleanup.accounts.add(SVCDEMO)
    subprocess.run(["useradd", "-r", "-d", str(folder), "-s", "/usr/sbin/nologin", SVCDEMO], check=True, capture_output=True)
    yield SVCDEMO, folder
    hub_cleanup.remove_account(SVCDEMO)


def test_dummy_login_under_a_system_account_is_refused_and_its_home_untouched(class_hub, system_account):
    name, folder = system_account
    homes = {"daemon": Path(os.path.expanduser("~daemon")), "bin": Path(os.path.expanduser("~bin")), name: folder}
    before = {who: owner_and_mode(path) for who, path in homes.items()}
    for who in homes:
        resp = class_hub.login(who)
        assert resp.status not in (301, 302, 303), f"dummy login as {who} was let in ({resp.status})"
    assert {who: owner_and_mode(path) for who, path in homes.items()} == before
    assert f"login refused for {name}" in class_hub.log()


def test_an_existing_account_the_hub_did_not_make_is_refused(class_hub, hub_cleanup):
    """A normal account (uid >= UID_MIN) made by someone else is not the hub's to hand out in dummy mode."""
    hub_cleanup.accounts.add(CAROL)
    subprocess.run(["useradd", "-M", "-d", "/nonexistent", "-s", "/usr/sbin/nologin", CAROL], check=True, capture_output=True)
    try:
        resp = class_hub.login(CAROL)
        assert resp.status not in (301, 302, 303), f"dummy login as the existing account {CAROL} was let in"
    finally:
        hub_cleanup.remove_account(CAROL)


@pytest.mark.parametrize("case, env, named", [
    ("no-password", {"MHA_HUB_PASSWORD": None}, ["MHA_HUB_PASSWORD"]),
    ("no-trial", {"MHA_HUB_IP": "0.0.0.0", "MHA_HUB_ALLOW_HTTP": "1"}, ["MHA_HUB_TRIAL"]),
    ("no-https", {"MHA_HUB_IP": "0.0.0.0", "MHA_HUB_TRIAL": "1"}, ["MHA_HUB_SSL_CERT", "MHA_HUB_ALLOW_HTTP"]),
    ("pam-no-group", {"MHA_HUB_AUTH": "pam", "MHA_HUB_PASSWORD": None}, ["MHA_HUB_GROUP", "MHA_HUB_ALL_ACCOUNTS"]),
    ("tiny-state", {"MHA_HUB_AUTH": "pam", "MHA_HUB_PASSWORD": None, "MHA_HUB_GROUP": "root", "MHA_HUB_STATE_SIZE": "1M"},
     ["MHA_HUB_STATE_SIZE"]),
    ("bad-cpu", {"MHA_HUB_CPU": "two"}, ["MHA_HUB_CPU"]),
], ids=["dummy mode without a password", "dummy mode beyond loopback without the trial setting",
        "plain HTTP beyond loopback without the opt-in", "PAM mode without the class's group",
        "PAM mode with a state too small for the databases", "a CPU cap that is not a number"])
def test_an_unsafe_setting_refuses_to_start_and_names_the_fix(hub_cleanup, hub_tmp, case, env, named):
    hub = new_hub(hub_cleanup, hub_tmp, case, **env)
    done = hub.run_to_exit()
    assert done.returncode != 0
    assert all(word in done.stderr + done.stdout for word in named), (done.stderr + done.stdout)[-800:]
    assert not hub.our_ports_listening()


def test_a_learner_cannot_make_or_plant_in_the_runtime_root(class_hub, tokens):
    """/run/mha-hub is root's (0711) under root's /run: a learner can neither make it first nor
    put a link in it."""
    from hubctl import BOB

    assert owner_and_mode(RUNTIME_ROOT) == (0, 0, 0o711)
    assert owner_and_mode(RUNTIME_ROOT / BOB)[0] == uid_of(BOB)
    for command in (f"mkdir {RUNTIME_ROOT}-bob", f"ln -s /etc {RUNTIME_ROOT}/{CAROL}", f"mkdir {RUNTIME_ROOT}/{CAROL}"):
        done = subprocess.run(["runuser", "-u", BOB, "--", "sh", "-c", command], capture_output=True, text=True)
        assert done.returncode != 0 and "Permission denied" in done.stderr, command
    assert not os.path.lexists(f"{RUNTIME_ROOT}-bob") and not os.path.lexists(RUNTIME_ROOT / CAROL)


def test_a_link_in_the_runtime_root_never_makes_the_hub_chown_its_target(class_hub, hub_cleanup, hub_tmp):
    """The old attack (bob pre-makes /tmp/mha-hub-run with a link to a target) reaches nothing now;
    and a link planted (by root, for the test) at /run/mha-hub/NAME is refused, target unchanged."""
    from hubctl import BOB

    target = hub_tmp / "target"
    target.mkdir(mode=0o755, exist_ok=True)
    before = owner_and_mode(target)
    old_root = Path("/tmp/mha-hub-run")
    made_old_root = not os.path.lexists(old_root)
    if made_old_root:
        subprocess.run(["runuser", "-u", BOB, "--", "sh", "-c", f"mkdir {old_root} && ln -s {target} {old_root}/{CAROL}"],
                       check=True, capture_output=True)
    hub_cleanup.accounts.add(CAROL)
    planted = RUNTIME_ROOT / CAROL
    try:
        token = class_hub.token(CAROL)
        class_hub.start_server(CAROL, token)  # the /tmp link is simply not used
        assert owner_and_mode(target) == before
        class_hub.stop_server(CAROL, token)
        import shutil

        shutil.rmtree(planted)
        planted.symlink_to(target)
        resp = class_hub.api("POST", f"/users/{CAROL}/server", token)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            model = class_hub.api("GET", f"/users/{CAROL}", token).json()
            if not model.get("pending"):
                break
            time.sleep(0.3)
        assert not model.get("servers"), f"carol's server started through a planted link: {model}"
        assert resp.status >= 400 or not model.get("servers")
        assert owner_and_mode(target) == before, f"the hub changed {target} through the link ({resp.status})"
        assert "not a folder" in class_hub.log() or "without following links" in class_hub.log()
    finally:
        if planted.is_symlink():
            planted.unlink()
        if made_old_root:
            subprocess.run(["rm", "-rf", str(old_root)])
