"""The first command opens the course: `make lab` lands on 00_welcome.ipynb, with no news pop-up.

JupyterLab is started with the course's own command, ``course.lab_command`` (what ``make lab``
and ``python tools/course.py lab`` run), from the environment running the tests, with HOME and
every Jupyter folder in a throwaway directory. Unlike the other browser tests, no user setting
touches notifications: turning the news prompt off must come from the environment itself (the
``overrides.d`` file ``tools/course.py install`` writes). Chromium then opens the browser-open
file jupyter-server writes (``jpserver-PID-open.html``, the file the terminal tells a learner
to open) and the test reads the page: the one open tab is ``00_welcome.ipynb``, a notebook, no
Launcher; the kernel comes up; and after the page has settled no news prompt shows.

Run: ``.venv/bin/python -m pytest tests/browser/test_first_command.py -q``.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from browser_config import ARTIFACTS, REPO
from browser_config import fail_or_skip as _fail_or_skip
from browser_config import missing_tools
from lab_page import chromium
from lab_page import save_screenshot, wait_kernel_idle
from lab_server import LabServer, LabStartError, free_port, stop_lab, wait_for_status

sys.path.insert(0, str(REPO / "tools"))
import course  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

MAIN_TABS = "#jp-main-dock-panel .lm-TabBar-tab"
CURRENT_TAB = f"{MAIN_TABS}.lm-mod-current .lm-TabBar-tabLabel"
NEWS_TEXT = "Jupyter news"
#: How long the page is watched for a late news prompt once the notebook and kernel are up.
SETTLE_S = 5.0


def _browser_open_file(runtime: Path, pid: int, timeout_s: float) -> Path:
    path = runtime / f"jpserver-{pid}-open.html"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not path.exists():
        time.sleep(0.25)
    return path


@pytest.fixture(scope="module")
def first_command():
    """JupyterLab started as `make lab` starts it; yields (server, browser-open file)."""
    problems = missing_tools()
    if problems:
        _fail_or_skip("; ".join(problems))
    work = Path(tempfile.mkdtemp(prefix="mha-first-command-"))
    dirs = {name: work / name.lower() for name in
            ("HOME", "JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR", "IPYTHONDIR")}
    for path in dirs.values():
        path.mkdir()
    # The one user setting: never write into the repository's notebooks (the harness's rule).
    autosave = dirs["JUPYTER_CONFIG_DIR"] / "lab" / "user-settings" / "@jupyterlab" / "docmanager-extension" / "plugin.jupyterlab-settings"
    autosave.parent.mkdir(parents=True)
    autosave.write_text(json.dumps({"autosave": False}))
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_PATH", "JUPYTER_TOKEN", "MHA_COURSE_PROGRESS")}
    env.update({k: str(v) for k, v in dirs.items()})
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    port = free_port()
    cmd = course.lab_command(sys.executable, [
        "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--FileCheckpoints.checkpoint_dir={work / 'checkpoints'}",
    ])
    log_path = work / "jupyter-lab.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(cmd, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=log,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    server = None
    try:
        open_file = _browser_open_file(dirs["JUPYTER_RUNTIME_DIR"], process.pid, timeout_s=90)
        info_file = dirs["JUPYTER_RUNTIME_DIR"] / f"jpserver-{process.pid}.json"
        if not open_file.exists() or not info_file.exists():
            raise LabStartError(f"no browser-open file from `{' '.join(cmd)}` within 90 s; log:\n"
                                f"{log_path.read_text(errors='replace')[-3000:]}")
        token = json.loads(info_file.read_text())["token"]
        server = LabServer(course.NOTEBOOKS, port, token, work, env, process, log_path)
        wait_for_status(server, 60)  # the files come before the port is bound
        server.delete_sessions()
        yield server, open_file
    except LabStartError as exc:
        pytest.fail(f"JupyterLab did not start the way make lab starts it: {exc}", pytrace=False)
    finally:
        try:
            if server is not None:
                stop_lab(server)
            elif process.poll() is None:
                process.kill()
                process.wait(timeout=10)
        finally:
            shutil.rmtree(work, ignore_errors=True)


def test_the_browser_open_file_leads_to_the_welcome_notebook(first_command):
    server, open_file = first_command
    target = re.search(r'url=([^"]+)"', open_file.read_text()).group(1)
    assert target.startswith(f"http://127.0.0.1:{server.port}/lab/tree/{course.FIRST_NOTEBOOK}?token=")


def test_the_environment_turns_the_news_prompt_off(first_command):
    """The server's view of the setting: the schema's defaults, as the environment overrides them,
    and no user settings for it (the page's value is the default)."""
    server, _ = first_command
    settings = server.api("GET", "/lab/api/settings/@jupyterlab/apputils-extension:notification")
    defaults = {k: v.get("default") for k, v in settings["schema"]["properties"].items()}
    assert defaults["fetchNews"] == "false"  # JupyterLab's own default is "none": ask the learner
    assert defaults["checkForUpdates"] is False
    assert settings["raw"].strip() in ("", "{}")


def test_following_the_browser_open_file_shows_00_welcome_and_no_news_prompt(first_command):
    server, open_file = first_command
    with chromium(server.work_dir) as context:
        page = context.new_page()
        page.goto(open_file.as_uri())
        page.wait_for_url(re.compile(rf"/lab/tree/{re.escape(course.FIRST_NOTEBOOK)}"), timeout=60_000)
        page.wait_for_selector(f"{CURRENT_TAB}:text-is('{course.FIRST_NOTEBOOK}')", timeout=60_000)
        page.wait_for_selector(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell", timeout=60_000)
        wait_kernel_idle(page, timeout_s=90)
        time.sleep(SETTLE_S)
        tabs = page.eval_on_selector_all(f"{MAIN_TABS} .lm-TabBar-tabLabel", "els => els.map(e => e.innerText.trim())")
        current = page.inner_text(CURRENT_TAB).strip()
        toasts = page.eval_on_selector_all(".Toastify__toast", "els => els.map(e => e.innerText)")
        body = page.inner_text("body")
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        save_screenshot(page, ARTIFACTS / "first_command.png")
    assert current == course.FIRST_NOTEBOOK
    assert tabs == [course.FIRST_NOTEBOOK], f"open tabs: {tabs} (the Launcher should not open)"
    assert not [t for t in toasts if NEWS_TEXT.lower() in t.lower()], toasts
    assert NEWS_TEXT.lower() not in body.lower()
