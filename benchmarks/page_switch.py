"""Where the page's time goes when a learner switches notebook 03's head count (a setting the page holds).

    .venv/bin/python -m benchmarks.page_switch            # 20 clicks, JupyterLab in Chromium, nothing else running

Starts JupyterLab on this checkout (``tests/browser/lab_server.py``), opens notebook 03 in Debian's Chromium at
1280x800, runs it all, then clicks the head counts in turn. Each click is timed in the page, from the click to the
first frame painted with the new grid (``loadtest/browser_learner.py``'s timing). Chromium's sampling profiler
(DevTools protocol ``Profiler``, 100 us) runs over the clicks and the 300 ms after each; the script prints the
click times by head count and the profile's self time per click, grouped by where the code comes from: plotly.js
(evaluated from a string, so its functions have no script URL), the course's own modules (anywidget's blob URLs),
ipywidgets and JupyterLab, the browser's built-in functions that any of them call (DOM reads and writes), and the
browser's own work outside scripts (style, layout, paint: the profiler's "(program)"), and garbage collection.
Last, without clicks, it times the two ways a page could switch between the five grids it holds: plotly.js
redrawing the one plot (what the page does), or each grid drawn once into a plot of its own and only shown.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests" / "browser"))
sys.path.insert(0, str(REPO))

from benchmarks.loadtest.browser_learner import CLICK_AND_TIME, HEAD_COUNTS, in_page, run_to_the_grid  # noqa: E402

#: Where a profiled function's code comes from, by its script's URL (first match wins).
SOURCES = (("plotly.js", ("plotly",)), ("the course's widgets and anywidget", ("mha_classroom", "mha-", "anywidget")),
           ("ipywidgets and JupyterLab", ("lab/extensions", "static/", "jupyter")))


#: The profiler's own entries: no script runs in them.
BROWSER = {"(idle)": "idle", "(program)": "the browser itself (layout, paint, style)", "(garbage collector)":
           "garbage collection", "(root)": "the browser itself (layout, paint, style)"}


def source_of(node: dict) -> str:
    frame = node["callFrame"]
    url, name = frame.get("url", ""), frame.get("functionName", "")
    if name in BROWSER:
        return BROWSER[name]
    if str(frame.get("scriptId", "0")) == "0":
        return "the browser's built-ins (DOM calls, from any script)"
    if not url:
        # plotly_library.js evaluates plotly.js with new Function: its functions have no script URL.
        return "plotly.js"
    for label, parts in SOURCES:
        if any(p in url for p in parts):
            return label
    if url.startswith("blob:") or url.startswith("data:"):
        return "the course's widgets and anywidget"  # anywidget loads a widget's module from a blob URL
    return "other scripts"


def self_time_by_source(profile: dict) -> dict[str, float]:
    """Milliseconds of self time per source: each sample's node, times its interval."""
    nodes = {n["id"]: n for n in profile["nodes"]}
    times = defaultdict(float)
    deltas = profile.get("timeDeltas") or []
    for sample, delta in zip(profile.get("samples") or [], deltas):
        times[source_of(nodes[sample])] += delta / 1000.0
    return dict(sorted(times.items(), key=lambda kv: -kv[1]))


#: In the page, after the clicks: the grid's figure for each head count (read from the plot as each click left
#: it), then two ways to switch between them, each timed to the next frame after the change: plotly.js redrawing
#: the one plot (``Plotly.react``, as the page does now), and every figure drawn once into a plot of its own and
#: the switch only showing one and hiding the others.
REDRAW_OR_SHOW = in_page("""async ([figures, rounds]) => {
  const Plotly = await window.__mhaPlotly.promise;
  const plot = gridPlot();
  const config = {displaylogo: false, responsive: false};
  const nextFrame = () => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)));
  const copy = (x) => JSON.parse(JSON.stringify(x));
  const redraw = [], show = [];
  for (let r = 0; r < rounds; r++) {
    for (const f of figures) {
      const t = performance.now();
      await Plotly.react(plot, copy(f.data), copy(f.layout), config);
      await nextFrame();
      redraw.push(performance.now() - t);
    }
  }
  const box = document.createElement('div');
  plot.parentElement.insertBefore(box, plot.nextSibling);
  const drawn = [];
  for (const f of figures) {
    const div = document.createElement('div');
    box.appendChild(div);
    await Plotly.newPlot(div, copy(f.data), copy(f.layout), config);
    div.style.display = 'none';
    drawn.push(div);
  }
  for (let r = 0; r < rounds; r++) {
    for (let i = 0; i < drawn.length; i++) {
      const t = performance.now();
      drawn.forEach((d, j) => { d.style.display = i === j ? '' : 'none'; });
      await nextFrame();
      show.push(performance.now() - t);
    }
  }
  drawn.forEach(d => Plotly.purge(d));
  box.remove();
  const median = (v) => { const s = [...v].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
  return {redraw_ms_median: median(redraw), show_ms_median: median(show), switches: redraw.length};
}""")

#: In the page: the grid's figure as shown now (data and layout, as plain JSON).
SHOWN = in_page("""() => {
  const plot = gridPlot();
  return JSON.parse(JSON.stringify({data: plot.data, layout: plot.layout}));
}""")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clicks", type=int, default=20)
    parser.add_argument("--names", action="store_true", help="also print the 25 functions with the most self time")
    args = parser.parse_args(argv)
    from lab_page import chromium, open_notebook
    from lab_server import running_lab

    (REPO / "artifacts").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(dir=REPO / "artifacts") as folder, running_lab(REPO) as lab:
        with chromium(Path(folder) / "browser") as context:
            page = context.new_page()
            page.set_viewport_size({"width": 1280, "height": 800})
            open_notebook(page, lab, "notebooks/03_multiple_heads.ipynb", workspace="page-switch")
            run_to_the_grid(page, timeout_s=300)
            cdp = context.new_cdp_session(page)
            cdp.send("Profiler.enable")
            cdp.send("Profiler.setSamplingInterval", {"interval": 100})
            position, clicks = HEAD_COUNTS.index(4), []
            cdp.send("Profiler.start")
            for k in range(args.clicks):
                position = (position + 1) % len(HEAD_COUNTS)
                heads = HEAD_COUNTS[position]
                clicks.append((heads, page.evaluate(CLICK_AND_TIME, [str(heads), heads])))
                page.wait_for_timeout(300)
            profile = cdp.send("Profiler.stop")["profile"]
            figures = []
            for k in range(len(HEAD_COUNTS)):
                position = (position + 1) % len(HEAD_COUNTS)
                heads = HEAD_COUNTS[position]
                page.evaluate(CLICK_AND_TIME, [str(heads), heads])
                page.wait_for_timeout(300)
                figures.append(page.evaluate(SHOWN))
            compared = page.evaluate(REDRAW_OR_SHOW, [figures, 4])
    by_heads = defaultdict(list)
    for heads, ms in clicks:
        by_heads[heads].append(ms)
    busy = {k: v for k, v in self_time_by_source(profile).items() if k != "idle"}
    if args.names:
        nodes = {n["id"]: n for n in profile["nodes"]}
        named = defaultdict(float)
        for sample, delta in zip(profile["samples"], profile["timeDeltas"]):
            f = nodes[sample]["callFrame"]
            named[(f.get("functionName"), f.get("url", "")[-60:])] += delta / 1000.0
        for key, ms in sorted(named.items(), key=lambda kv: -kv[1])[:25]:
            print(round(ms / len(clicks), 2), key)
    print(json.dumps({
        "clicks": len(clicks),
        "click_to_paint_ms_median": round(statistics.median(ms for _, ms in clicks), 1),
        "by_head_count_ms_median": {h: round(statistics.median(v), 1) for h, v in sorted(by_heads.items())},
        "script_self_ms_per_click": {k: round(v / len(clicks), 1) for k, v in busy.items()},
        "switch_without_a_click_ms_median": {"plotly_redraws_the_plot": round(compared["redraw_ms_median"], 1),
                                             "each_figure_drawn_once_then_shown": round(compared["show_ms_median"], 1),
                                             "switches_each": compared["switches"]},
    }, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
