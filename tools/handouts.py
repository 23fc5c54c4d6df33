"""Build offline handouts: every notebook executed, written as static HTML with an index.

    python tools/handouts.py [--out handouts] [--only 02 03]

What a handout page holds, and why:

- Each notebook runs top to bottom in a fresh kernel with ``MHA_COURSE_STATIC=1``, so a
  control group shows its figure at the default setting as a plain figure, with a line
  saying that it is live in JupyterLab (a page has no kernel to move it).
- Plotly figures become ``<div>``s drawn by one ``plotly.min.js`` shipped beside the pages
  (the copy inside the installed plotly package), never a CDN.
- Maths is typeset by MathJax 2.7 copied from the ``jupyter_server_mathjax`` package into
  the output folder; nbconvert's default would load it from a CDN and, offline, show raw TeX.
- The quick check at the end becomes its questions with each answer folded away
  (``<details>``), read from the same bank as the notebook widget.
- Script tags that point outside the folder (nbconvert's require.js) are removed, and
  the build refuses to write a page that still requests anything from the network.

Nothing is recorded in the learner's progress store: the build points
``MHA_COURSE_PROGRESS`` at a throwaway file.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mha_core.widgets._base import LIVE_NOTE

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
DEFAULT_OUT = ROOT / "handouts"
#: Where MathJax and plotly.js live inside the output folder.
MATHJAX_DIR = "mathjax"
PLOTLY_JS = "plotly.min.js"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
#: The MathJax parts its HTML-CSS output needs with the STIX web fonts, the only fonts the
#: package ships (the SVG output and other languages stay behind).
MATHJAX_PARTS = ("MathJax.js", "config", "extensions", "jax/input/TeX", "jax/output/HTML-CSS", "jax/element", "localization/en", "fonts/HTML-CSS/STIX-Web")
#: Read by MathJax when it loads: use the shipped STIX fonts, never a font from the network.
MATHJAX_FONTS = (
    '<script>window.MathJax = {"HTML-CSS": {availableFonts: [], imageFont: null, '
    'preferredFont: null, webFont: "STIX-Web"}};</script>\n'
)
PLOTLY_MIME = "application/vnd.plotly.v1+json"
WIDGET_MIME = "application/vnd.jupyter.widget-view+json"
#: What makes a browser fetch from another host: a loading tag or a CSS url(). (Links a
#: reader may follow, ``<a href=...>`` to a paper, fetch nothing.)
REMOTE = re.compile(
    r"""<(?:script|img|iframe|link|source|video|audio|embed)\b[^>]*\b(?:src|href)\s*=\s*["']?(?:https?:)?//"""
    r"""|url\(\s*["']?(?:https?:)?//""",
    re.IGNORECASE,
)
QUICK_CHECK = re.compile(r"""quick_check\(\s*["'](\d\d)["']""")


def notebooks(only=None) -> list[Path]:
    """The course notebooks in order, or those whose two-digit prefix is in ``only``."""
    found = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    if only:
        unknown = set(only) - {p.name[:2] for p in found}
        if unknown:
            valid = ", ".join(p.name[:2] for p in found)
            raise ValueError(f"only={sorted(unknown)} names no notebook; valid prefixes are {valid}")
        found = [p for p in found if p.name[:2] in only]
    return found


# ----------------------------------------------------------------------------- assets


def copy_assets(out: Path) -> None:
    """plotly.js and the MathJax subset, once for all pages."""
    import jupyter_server_mathjax
    import plotly

    plotly_js = Path(plotly.__file__).parent / "package_data" / "plotly.min.js"
    shutil.copyfile(plotly_js, out / PLOTLY_JS)
    source = Path(jupyter_server_mathjax.__file__).parent / "static"
    target = out / MATHJAX_DIR
    for part in MATHJAX_PARTS:
        src, dst = source / part, target / part
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dst)


# ----------------------------------------------------------------------------- execution


def execute(path: Path, *, timeout: int = 180):
    """``path`` run in a fresh kernel in static mode; returns the executed notebook."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    with tempfile.TemporaryDirectory() as scratch:
        saved = {k: os.environ.get(k) for k in ("MHA_COURSE_STATIC", "MHA_COURSE_PROGRESS")}
        os.environ["MHA_COURSE_STATIC"] = "1"
        os.environ["MHA_COURSE_PROGRESS"] = str(Path(scratch) / "progress.sqlite3")
        try:
            client = NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}})
            client.execute()
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    return nb


# ----------------------------------------------------------------------------- static outputs


def plotly_div(figure_json: dict) -> str:
    """A figure as a ``<div>`` drawn by the page's one plotly.js (no script of its own)."""
    import plotly.io as pio

    fig = pio.from_json(json.dumps(figure_json), skip_invalid=True)
    return pio.to_html(fig, include_plotlyjs=False, full_html=False, config={"displaylogo": False, "responsive": True})


def quick_check_html(set_id: str) -> str:
    """The set's questions, options listed, each answer and its feedback folded away."""
    from mha_core.quiz.bank import default_bank
    from mha_core.quiz.grading import answer_letters, option_labels, option_order

    bank = default_bank()
    quiz_set = bank.get_set(set_id)
    parts = [f'<div class="mha-handout-quiz"><h3>Quick check {html.escape(set_id)}: {html.escape(quiz_set.title)}</h3>']
    parts.append("<p>Answer each question before you open its answer. In JupyterLab the same questions give feedback on every option.</p>")
    for number, q in enumerate(bank.questions(set_id), start=1):
        parts.append(f'<div class="mha-handout-question"><p><b>{number}.</b> {html.escape(q.text)}</p>')
        if q.kind == "numeric":
            unit = f" ({html.escape(q.unit)})" if q.unit else ""
            parts.append(f"<p><i>Give a number{unit}.</i></p>")
            answer = f"<p><b>{html.escape(q.answer_text())}</b>. {html.escape(q.feedback)}</p>"
        else:
            hint = "Tick every option that applies." if q.kind == "multi" else "Choose one option."
            # The same letters as the notebook, classroom mode, the terminal and the key.
            order = option_order(q)
            labels = option_labels(order)
            items = "".join(f"<li>{labels[i]} {html.escape(q.options[i].text)}</li>" for i in order)
            parts.append(f'<p><i>{hint}</i></p><ul style="list-style:none">{items}</ul>')
            answer = f"<p>The answer: <b>{html.escape(answer_letters(q))}</b></p><ul>" + "".join(
                f"<li>{labels[i]} <b>{'right' if q.options[i].correct else 'wrong'}</b>: {html.escape(q.options[i].feedback)}</li>"
                for i in order
            ) + "</ul>"
        parts.append(f"<details><summary>Answer</summary>{answer}<p>{html.escape(q.explanation)}</p></details></div>")
    parts.append("</div>")
    return "".join(parts)




def make_static(nb) -> dict:
    """Replace live outputs in place; returns counts of what was replaced."""
    counts = {"figures": 0, "widgets": 0, "quick_checks": 0}
    # Widget state (each FigureWidget's 5 MB plotly bundle among it) serves no static page.
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        quiz = QUICK_CHECK.search(cell.source)
        if quiz:
            cell.outputs = [_html_output(quick_check_html(quiz.group(1)))]
            counts["quick_checks"] += 1
            continue
        outputs = []
        for out in cell.outputs:
            data = out.get("data", {})
            if PLOTLY_MIME in data:
                outputs.append(_html_output(plotly_div(data[PLOTLY_MIME])))
                counts["figures"] += 1
            elif WIDGET_MIME in data:
                # Left over only where something displayed a bare widget: say where it lives.
                outputs.append(_html_output(LIVE_NOTE))
                counts["widgets"] += 1
            else:
                outputs.append(out)
        cell.outputs = outputs
    return counts


def _html_output(text: str):
    import nbformat

    return nbformat.v4.new_output("display_data", data={"text/html": text})


# ----------------------------------------------------------------------------- pages


HEAD_EXTRA = f'<script src="{PLOTLY_JS}"></script>\n<style>.mha-handout-quiz{{border-top:2px solid #ccc;margin-top:1em}}details{{margin:.3em 0 1em 1.5em}}</style>\n'


def to_html(nb, title: str) -> str:
    """The executed, static notebook as one HTML page that needs nothing from the network."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab")
    exporter.mathjax_url = f"{MATHJAX_DIR}/MathJax.js?config={MATHJAX_CONFIG}"
    exporter.exclude_input_prompt = True
    exporter.exclude_output_prompt = True
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": title}})
    # nbconvert's lab template loads require.js from a CDN; plotly.js must not see it
    # (under require.js it registers as a module and never defines window.Plotly).
    body = re.sub(r"<script[^>]+src=[\"'](?:https?:)?//[^\"']*[\"'][^>]*>\s*</script>", "", body)
    body = body.replace("<!-- Load mathjax -->", MATHJAX_FONTS + "<!-- Load mathjax -->", 1)
    body = body.replace("</head>", HEAD_EXTRA + "</head>", 1)
    remote = REMOTE.findall(body)
    if remote:
        raise RuntimeError(f"{title}: the page would still request {len(remote)} resource(s) from the network")
    return body


def index_html(pages: list[dict]) -> str:
    rows = "".join(
        f'<tr><td><a href="{html.escape(p["file"])}">{html.escape(p["title"])}</a></td>'
        f'<td style="text-align:right">{p["kib"]:,} KiB</td><td style="text-align:right">{p["figures"]}</td></tr>'
        for p in pages
    )
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>Multi-head attention, hands on: handouts</title>'
        "<style>body{font:18px/1.5 sans-serif;max-width:50em;margin:2em auto;padding:0 1em}td,th{padding:.3em .8em}</style></head>"
        "<body><h1>Multi-head attention, hands on</h1>"
        "<p>Each notebook, run top to bottom, as a page that works offline. Figures and controls are live only in "
        "JupyterLab; here each shows its default setting. Quick-check answers are folded under each question.</p>"
        f"<table><tr><th>notebook</th><th>size</th><th>figures</th></tr>{rows}</table></body></html>"
    )


def title_of(nb, path: Path) -> str:
    first = nb.cells[0].source.splitlines()[0] if nb.cells and nb.cells[0].cell_type == "markdown" else path.stem
    return first.lstrip("# ").strip() or path.stem


def build(out: Path = DEFAULT_OUT, only=None, *, log=print) -> list[dict]:
    """Execute the notebooks, write one page each, the assets and ``index.html``; returns one dict per page."""
    paths = notebooks(only)
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out)
    pages = []
    for path in paths:
        start = time.perf_counter()
        nb = execute(path)
        counts = make_static(nb)
        title = title_of(nb, path)
        page = out / f"{path.stem}.html"
        page.write_text(to_html(nb, title), encoding="utf-8")
        entry = {"file": page.name, "title": title, "kib": page.stat().st_size // 1024, "seconds": round(time.perf_counter() - start, 1), **counts}
        pages.append(entry)
        log(f"{page.name}: {entry['kib']} KiB, {counts['figures']} figures, {entry['seconds']} s")
    (out / "index.html").write_text(index_html(pages), encoding="utf-8")
    (out / "handouts.json").write_text(json.dumps(pages, indent=2))
    total = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    log(f"{len(pages)} pages in {out} ({total / 2**20:.1f} MiB with plotly.js and MathJax)")
    return pages


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description="Write every notebook as an offline HTML handout, with an index.")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the pages (default: handouts/)")
    parser.add_argument("--only", nargs="*", help="two-digit notebook prefixes, e.g. --only 02 03")
    args = parser.parse_args(argv)
    try:
        build(args.out, args.only)
    except ValueError as exc:
        print(f"handouts: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
