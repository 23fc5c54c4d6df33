"""Paths and limits shared by the browser test's conftest and test module."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: The notebooks under test; MHA_BROWSER_NOTEBOOKS points the harness at another folder (for
#: developing a check against a draft notebook). The server serves this folder's parent.
NOTEBOOK_DIR = Path(os.environ.get("MHA_BROWSER_NOTEBOOKS") or REPO / "notebooks").resolve()
SERVER_ROOT = NOTEBOOK_DIR.parent
ARTIFACTS = REPO / "artifacts" / "browser"
CHROMIUM = os.environ.get("MHA_CHROMIUM", "/usr/bin/chromium")
#: The whole browser run should stay under this many seconds on two cores; measured and reported.
BUDGET_S = 300
