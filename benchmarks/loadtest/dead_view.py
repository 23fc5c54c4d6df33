"""Does a live figure still redraw when the browser is slow? plotly's own FigureWidget view against the
course's ``LiveFigure`` (``mha_classroom.widgets._live_figure``), in JupyterLab in Chromium with its CPU slowed.

anywidget rejects a model that has not loaded its front-end module within two seconds, and then drops
every message to it: plotly's view evaluates a 5 MB module per figure, so on a busy machine a figure is
drawn once and never moves again. This script shows it on notebook 10 (its calculator is the group that died in
the browser tests): Run All with Chromium's CPU slowed ``--slowdown`` times, then two moves of the
key/value-heads slider; for each kind of figure it prints the calculator's title after each move
(it names the head count) and the page errors anywidget raised.

    .venv/bin/python -m benchmarks.loadtest.dead_view --slowdown 12
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tests" / "browser"))

#: The notebook the learner runs: 10's calculator, the group that died in the browser tests.
NOTEBOOK = REPO / "notebooks" / "10_serving_cost.ipynb"
#: Its figure's title names the key/value heads: it changes with every move of that slider.
TITLE = ("() => [...document.querySelectorAll('.js-plotly-plot')].map(p => (p.layout && p.layout.title && "
         "p.layout.title.text) || '').filter(t => t.includes('KV heads'))")
#: What makes the control groups use plotly's own view: the figure class before ``LiveFigure``.
PLOTLY_VIEW = """import plotly.graph_objects as go
from mha_classroom.widgets import _base
_base.LiveFigure = go.FigureWidget  # this run only: plotly's own view, its 5 MB module per figure"""


def notebook(kind: str, folder: Path) -> Path:
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    if kind == "go.FigureWidget":
        nb.cells.insert(0, nbformat.v4.new_code_cell(PLOTLY_VIEW))
    path = folder / f"dead_view_{kind.replace('.', '_')}.ipynb"
    nbformat.write(nb, path)
    return path


def trial(lab, context, path: Path, slowdown: float) -> dict:
    from lab_page import open_notebook, run_all, wait_kernel_idle, wait_run_finished

    lab.delete_sessions()
    page = context.new_page()
    errors = []
    page.on("pageerror", lambda exc: errors.append(str(exc)[:120]))
    cdp = context.new_cdp_session(page)
    try:
        open_notebook(page, lab, path.relative_to(REPO).as_posix(), workspace=path.stem)
        wait_kernel_idle(page, timeout_s=120)
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": slowdown})
        try:
            run_all(page, timeout_s=90)
        except AssertionError:
            pass  # a slowed page may start the cell before the check looks
        wait_run_finished(page, timeout_s=300)
        for _ in range(120):
            if page.evaluate(TITLE):
                break
            page.wait_for_timeout(1000)
        seen = {"drawn": page.evaluate(TITLE)}
        handle = page.locator(".mha-serving-kv-heads .noUi-handle").first
        for step in (1, 2):
            handle.focus()
            page.keyboard.press("ArrowRight")
            page.wait_for_timeout(10_000)
            seen[f"after move {step}"] = page.evaluate(TITLE)
        return {**seen, "page_errors": sorted(set(errors))}
    finally:
        cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
        page.close()
        lab.delete_sessions()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--slowdown", type=float, default=12.0, help="Chromium's CPU slowdown factor (1 = none)")
    options = parser.parse_args(argv)
    from lab_page import chromium
    from lab_server import running_lab

    (REPO / "artifacts").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=REPO / "artifacts") as folder, running_lab(REPO) as lab:
        with chromium(Path(folder) / "browser") as context:
            results = {kind: trial(lab, context, notebook(kind, Path(folder)), options.slowdown)
                       for kind in ("go.FigureWidget", "LiveFigure")}
    print(json.dumps({"slowdown": options.slowdown, **results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
