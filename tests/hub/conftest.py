"""Fixtures for the real-hub tests (marker ``hub``): one class hub for the session, the cleanup
that removes every account, group, home, process and folder they made, and Chromium.

They need root (learners are real Unix accounts) and a built deploy/ (``deploy/start.sh
--build-only``). Without either they are skipped with the reason, unless the environment
variable CI is "true": then they fail, so CI cannot pass without them.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from hubctl import ALICE, BOB, HUB_PYTHON, PROXY, REPO, TESS, Cleanup, fail_or_skip, hold_machine, new_hub  # noqa: E402


def missing() -> list[str]:
    problems = []
    if os.geteuid() != 0:
        problems.append("needs root (learners are real Unix accounts)")
    if not HUB_PYTHON.exists() or not PROXY.exists():
        problems.append("deploy/ is not built (run deploy/start.sh --build-only)")
    for tool in ("useradd", "userdel", "groupadd", "openssl"):
        if not any(Path(d, tool).exists() for d in ("/usr/sbin", "/usr/bin", "/sbin", "/bin")):
            problems.append(f"{tool} not found")
    return problems


@pytest.fixture(scope="session")
def hub_cleanup():
    """The session's record of what to remove; runs at the end even when a test failed."""
    problems = missing()
    if problems:
        fail_or_skip("; ".join(problems))
    # One session at a time here; what a killed one left goes first (a kept account would be refused a server).
    left = hold_machine()
    if left:
        print(f"\nhub tests: removed what an interrupted earlier session left: {left}", file=sys.stderr)
    cleanup = Cleanup()
    cleanup.open_path_to(REPO)
    try:
        yield cleanup
    finally:
        left = cleanup.run()
        assert not left, left


@pytest.fixture(scope="session")
def hub_tmp(hub_cleanup) -> Path:
    """A root-owned folder for the session's hubs (state, homes, certificates), 0711."""
    path = Path(tempfile.mkdtemp(prefix="mha-hubtest-", dir="/tmp"))
    os.chmod(path, 0o711)
    hub_cleanup.paths.append(path)
    return path


@pytest.fixture(scope="session")
def class_hub(hub_cleanup, hub_tmp) -> Hub:
    """The class: a running hub on loopback (dummy login with a password), instructor ht-tess."""
    hub = new_hub(hub_cleanup, hub_tmp, "class")
    try:
        hub.start()
    except RuntimeError as exc:
        pytest.fail(str(exc), pytrace=False)
    yield hub
    hub.stop()


@pytest.fixture(scope="session")
def tokens(class_hub) -> dict[str, str]:
    """An API token of each learner's (logged in through the form) and their servers started."""
    found = {name: class_hub.token(name) for name in (ALICE, BOB, TESS)}
    for name in (ALICE, BOB, TESS):
        class_hub.start_server(name, found[name])
    return found
