"""A faster room (issue 38). Warm start (deploy/warm_start.py): an admin starts every learner's server before the
class, with the day's notebook open and its imports run; the learner's first figure then needs
no server start, no kernel start and no imports. Against the real hub: the command as an
administrator runs it, then the learner logs in and runs the notebook's first cell in the kernel
JupyterLab would join. And each change of a control costs one message fewer: the class's kernels
do not echo changes back."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from hubctl import DEPLOY, TESS, new_hub
from shellctl import kernel_run

pytestmark = pytest.mark.hub

#: Learners of this test only (made by the hub at their warm start).
GWEN, HAL = "ht-gwen", "ht-hal"
NOTEBOOK = "03_multiple_heads"
HUB_PYTHON = DEPLOY / ".venv-hub" / "bin" / "python"


def warm_start(hub, token: str | None, *args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ)
    env.pop("MHA_HUB_TOKEN", None)
    if token:
        env["MHA_HUB_TOKEN"] = token
    return subprocess.run([str(HUB_PYTHON), str(DEPLOY / "warm_start.py"), "--hub", f"http://localhost:{hub.port}", *args],
                          env=env, capture_output=True, text=True, timeout=400)


@pytest.fixture(scope="module")
def warm_hub(hub_cleanup, hub_tmp):
    """A hub whose instructor is also its admin (MHA_HUB_ADMINS), with an admin token."""
    hub_cleanup.accounts.update({GWEN, HAL})
    hub = new_hub(hub_cleanup, hub_tmp, "warm", MHA_HUB_ADMINS=TESS).start()
    yield hub, hub.token(TESS)
    hub.ctrl_c()


def test_a_warm_start_leaves_each_learners_notebook_open_with_its_imports_done(warm_hub):
    hub, admin = warm_hub
    t0 = time.monotonic()
    done = warm_start(hub, admin, "--users", f"{GWEN},{HAL}", "--notebook", NOTEBOOK, "--parallel", "2")
    took = time.monotonic() - t0
    print(f"\nwarm start of 2 learners: {took:.1f} s\n{done.stdout}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 of 2 learners warm" in done.stdout, done.stdout

    for name in (GWEN, HAL):
        model = hub.api("GET", f"/users/{name}", admin).json()
        assert model["servers"][""]["ready"], model
        # The learner's own token for the warm start is gone, and the admin's never reached the
        # learner's server: no token of the learner's but the ones the hub's login makes.
        notes = [t.get("note") for t in hub.api("GET", f"/users/{name}/tokens", admin).json()["api_tokens"]]
        assert "warm start" not in notes, notes

    # The learner logs in and runs the notebook's first cell: its session is the warm one (the
    # modules were loaded before the cell ran), and the cell takes no import time.
    token = hub.token(GWEN)
    out = kernel_run(hub, GWEN, token, "import json, sys, time\n"
                     "warm = {m: m in sys.modules for m in ('mha_core.figures.heads', 'mha_classroom.quiz')}\n"
                     "t = time.perf_counter()\n"
                     "from mha_core.figures.heads import hand_set_figure\n"
                     "from mha_core.examples import HAND_SET_HEADS, TOKENS, hand_set_weights\n"
                     "hand_set_figure(hand_set_weights(), TOKENS, [title for title, _ in HAND_SET_HEADS])\n"
                     "print('__OUT__' + json.dumps({'warm': warm, 'cell_s': time.perf_counter() - t}))\n",
                     notebook=NOTEBOOK)
    print(f"{GWEN}'s first figure cell after the warm start: {out['cell_s']:.2f} s")
    assert all(out["warm"].values()), out


def test_a_warm_start_without_an_admin_token_or_with_a_wrong_notebook_says_what_to_give(warm_hub):
    hub, admin = warm_hub
    done = warm_start(hub, None, "--users", GWEN)
    assert done.returncode == 2 and "MHA_HUB_TOKEN" in done.stderr, done.stderr
    done = warm_start(hub, admin, "--users", GWEN, "--notebook", "3")
    assert done.returncode == 2 and "03_multiple_heads" in done.stderr, done.stderr
    # A learner's token is not an admin's: the hub refuses, and the command says so for each learner.
    learner = hub.token(HAL)
    done = warm_start(hub, learner, "--users", GWEN)
    assert done.returncode == 1 and "FAILED" in done.stdout, done.stdout + done.stderr


def test_the_class_kernels_do_not_echo_a_controls_change_back(warm_hub):
    """ipywidgets 8 sends each change a page makes back to it (an echo_update); the class's
    servers set JUPYTER_WIDGETS_ECHO=0, so a change is one message in and the figure out."""
    hub, _ = warm_hub
    token = hub.token(HAL)
    hub.start_server(HAL, token)
    out = kernel_run(hub, HAL, token, "import json, ipywidgets\n"
                     "from ipywidgets.widgets import widget\n"
                     "sent = []\n"
                     "w = ipywidgets.IntSlider(value=1)\n"
                     "w._send = lambda msg, buffers=None: sent.append(msg.get('method'))\n"
                     "w.set_state({'value': 2})\n"
                     "print('__OUT__' + json.dumps({'echo': widget.JUPYTER_WIDGETS_ECHO, 'sent': sent, 'value': w.value}))\n")
    assert out == {"echo": False, "sent": [], "value": 2}, out
