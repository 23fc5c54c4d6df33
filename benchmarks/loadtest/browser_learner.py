"""One learner in Chromium among the simulated class: what a learner sees of a change while the others move theirs.

The simulated learners time a change from the message sent to the kernel's ``idle``: the kernel taking the new
value. A learner in JupyterLab does not wait for that. The page holds every head count of notebook 03's grid
(``mha_classroom.widgets._states.hold``) and switches the figure by itself; the change goes to the kernel beside
it. This learner is a real JupyterLab page in Debian's Chromium (``tests/browser/lab_page.py``'s launcher), logged
in through the hub's form at its own origin (NAME.localhost), with notebook 03 run by Run All. It clicks a head
count with the others, lock-step included, and times in the page, from the click to the first frame painted with
the new grid (its title and its panels), with ``performance.now()``.

Its Chromium, server and kernel share the class's two cores, as a learner's own machine would not: its times are
the slow side of what a learner sees. Its server and kernel are not counted in the class's CPU per change; the
thread that drives it is, in the load test's own CPU. Every time in the page is taken to the frame after the one
that shows the change, so one to two frame intervals (17-33 ms at 60 frames a second) are in each.

    .venv/bin/python -m benchmarks.loadtest --learners 32 --notebooks 03_multiple_heads --browser-learner --no-profile \
        --out benchmarks/loadtest/report-browser
"""

from __future__ import annotations

import queue
import sys
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
NOTEBOOK = "course/03_multiple_heads.ipynb"
#: d_model = 16: the head counts the grid's buttons show, by the control's index (as the simulated learners use).
HEAD_COUNTS = (1, 2, 4, 8, 16)

#: In the page, put in front of a script: ``gridOutput()``, the cell output holding notebook 03's head-count
#: control and its plot (or undefined); ``gridPlot()``, that plot, drawn.
GRID = """const gridOutput = () => [...document.querySelectorAll('.jp-OutputArea-output')]
  .find(o => o.querySelector('.mha-head-count') && o.querySelector('.js-plotly-plot'));
const gridPlot = () => {
  const output = gridOutput(), plot = output && output.querySelector('.js-plotly-plot');
  return plot && plot.layout && plot.layout.title ? plot : undefined;
};
"""


def in_page(script: str) -> str:
    """``script`` (an arrow function's source) with ``GRID``'s helpers in its scope, for ``page.evaluate``."""
    return f"(arg) => {{\n{GRID}return ({script})(arg);\n}}"


#: In the page: click head count ``label`` on notebook 03's grid and time until a frame is painted with the new
#: grid (the figure's title names the head count, and it has one panel title per head).
CLICK_AND_TIME = in_page("""async ([label, heads]) => {
  const output = gridOutput();
  if (!output) throw new Error('no head-count grid on the page');
  const plot = output.querySelector('.js-plotly-plot');
  const button = [...output.querySelectorAll('.mha-head-count button')].find(b => b.textContent.trim() === label);
  if (!button) throw new Error('no button ' + label);
  const shows = () => {
    const layout = plot.layout || {};
    const title = (layout.title && layout.title.text) || '';
    return title.includes('H = ' + label + ' head') && (layout.annotations || []).length === heads;
  };
  if (shows()) throw new Error('the grid already shows ' + label + ' heads');
  const start = performance.now();
  button.click();
  return await new Promise((resolve, reject) => {
    const check = () => {
      if (shows()) {
        requestAnimationFrame(() => resolve(performance.now() - start));
      } else if (performance.now() - start > 30000) {
        reject(new Error('the grid did not show ' + label + ' heads within 30 s'));
      } else {
        requestAnimationFrame(check);
      }
    };
    check();
  });
}""")


def run_to_the_grid(page, timeout_s: float = 600) -> None:
    """Notebook 03, open in ``page``: Run All, then wait for its head-count grid drawn and the run finished
    (JupyterLab leaves cells out of view unrendered, so their prompts cannot be read: the kernel's idle in the
    status bar, twice a second apart, says it)."""
    sys.path.insert(0, str(REPO / "tests" / "browser"))
    from lab_page import run_all, wait_kernel_idle

    wait_kernel_idle(page, timeout_s=timeout_s)
    run_all(page, timeout_s=60)
    page.wait_for_function(in_page("() => Boolean(gridPlot())"), timeout=timeout_s * 1000, polling=200)
    for _ in range(2):
        page.wait_for_timeout(1000)
        wait_kernel_idle(page, timeout_s=timeout_s)


class BrowserLearner:
    """A learner in JupyterLab in Chromium, driven from its own thread (playwright's sync API stays on the thread
    that started it); ``setup`` and ``change`` hand it work and wait. Quacks like ``run.Learner`` for ``drive``."""

    def __init__(self, hub, name: str, index: int, password: str, work_dir: Path):
        self.hub, self.name, self.index, self.password, self.work_dir = hub, name, index, password, work_dir
        self.result = {"name": name, "failures": [], "page_ms": {"staggered": [], "lockstep": []}}
        self.client = None  # set once set up: drive() moves only learners with a client
        self.position = HEAD_COUNTS.index(4)  # the notebook's own head count
        self._jobs: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._serve, name="browser-learner", daemon=True)
        self._thread.start()

    # ----------------------------------------------------------------- the interface drive() uses

    def reconnect(self) -> None:
        """Nothing to do: the page keeps its own connection."""

    def change(self, mode: str, k: int) -> None:
        index = (k + 1 + self.index) % len(HEAD_COUNTS)
        if index == self.position:
            index = (index + 1) % len(HEAD_COUNTS)
        heads = HEAD_COUNTS[index]
        try:
            ms = self._call(lambda page: page.evaluate(CLICK_AND_TIME, [str(heads), heads]), timeout_s=60)
            self.position = index
            self.result["page_ms"][mode].append(ms)
            self.result.setdefault("clicks", []).append({"mode": mode, "heads": heads, "ms": round(ms, 1)})
        except Exception as exc:
            self.result["failures"].append(f"page {mode}: {type(exc).__name__}: {str(exc)[:200]}")

    # ----------------------------------------------------------------- set up and close

    def setup(self) -> None:
        try:
            self.result["setup_s"] = self._call(self._open, timeout_s=900)
            self.client = self
        except Exception as exc:
            self.result["failures"].append(f"setup: {type(exc).__name__}: {str(exc)[:300]}")

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join(timeout=120)

    def _open(self, page) -> float:
        t0 = time.perf_counter()
        hub = f"http://localhost:{self.hub.port}"
        page.goto(f"{hub}/hub/login", wait_until="domcontentloaded", timeout=120_000)
        page.fill("input[name=username]", self.name)
        page.fill("input[name=password]", self.password)
        with page.expect_navigation(wait_until="domcontentloaded", timeout=300_000):
            page.click("[type=submit]")
        own = f"{self.hub.server_url(self.name)}/user/{self.name}"
        # The server may still be starting: the hub's spawn page waits for it; then JupyterLab at the learner's origin.
        page.wait_for_url(f"{own}/**", timeout=300_000)
        page.goto(f"{own}/lab/workspaces/loadtest/tree/{NOTEBOOK}", wait_until="domcontentloaded", timeout=300_000)
        run_to_the_grid(page)
        return time.perf_counter() - t0

    # ----------------------------------------------------------------- the browser's thread

    def _call(self, job, *, timeout_s: float):
        box = {"done": threading.Event()}
        self._jobs.put((job, box))
        if not box["done"].wait(timeout_s):
            raise TimeoutError(f"the browser did not answer within {timeout_s:.0f} s")
        if "error" in box:
            raise box["error"]
        return box["value"]

    def _serve(self) -> None:
        sys.path.insert(0, str(REPO / "tests" / "browser"))
        from lab_page import chromium

        try:
            with chromium(self.work_dir) as context:
                context.set_default_timeout(60_000)
                page = context.new_page()
                page.set_viewport_size({"width": 1280, "height": 800})
                while True:
                    item = self._jobs.get()
                    if item is None:
                        return
                    job, box = item
                    try:
                        box["value"] = job(page)
                    except BaseException as exc:  # handed to the caller's thread
                        box["error"] = exc
                    box["done"].set()
        except BaseException as exc:
            self.result["failures"].append(f"browser: {type(exc).__name__}: {str(exc)[:300]}")
            while True:  # answer whatever is asked, so no caller waits out its timeout
                item = self._jobs.get()
                if item is None:
                    return
                item[1]["error"] = exc
                item[1]["done"].set()
