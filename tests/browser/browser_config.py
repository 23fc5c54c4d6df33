"""Paths, limits and the tool check shared by the browser tests' conftest and modules (test modules import
them from here, never from ``conftest``: with several test folders in one run that name is ambiguous)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
from course import chromium_path  # noqa: E402 - tools/course.py, which also decides whether the browser part runs
#: The notebooks under test; MHA_BROWSER_NOTEBOOKS points the harness at another folder (for
#: developing a check against a draft notebook). The server serves this folder's parent.
NOTEBOOK_DIR = Path(os.environ.get("MHA_BROWSER_NOTEBOOKS") or REPO / "notebooks").resolve()
SERVER_ROOT = NOTEBOOK_DIR.parent
ARTIFACTS = REPO / "artifacts" / "browser"
CHROMIUM = chromium_path()
#: Pictures of what the tests saw (each notebook whole, each control group presented, each handout's first
#: screen) are for a person to look at, in ARTIFACTS. CI keeps no files, so under CI=true none are taken: they
#: cost about 4 CPU-s per notebook (measured on notebooks 03 and 07, 75.7 against 67.3 CPU-s for both).
#: MHA_PICTURES=1 takes them anyway, MHA_PICTURES=0 never.
PICTURES = os.environ.get("MHA_PICTURES", "0" if os.environ.get("CI") == "true" else "1") == "1"
#: The whole browser run should stay under this many seconds on two cores; measured and reported.
BUDGET_S = 300


def missing_tools() -> list[str]:
    """What the browser tests need and this machine lacks: Debian's Chromium, Python playwright."""
    problems = []
    if not Path(CHROMIUM).exists():
        problems.append(f"Chromium not found at {CHROMIUM} (Debian: apt-get install chromium; never `playwright install`)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        problems.append("python playwright is not installed (it is in requirements.lock)")
    return problems


def fail_or_skip(message: str) -> None:
    """Skip a browser test that cannot run here, with the reason; under CI=true fail instead."""
    import pytest

    if os.environ.get("CI") == "true":
        pytest.fail(f"browser test cannot run on CI: {message}", pytrace=False)
    pytest.skip(f"browser test skipped: {message}")
