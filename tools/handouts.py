"""Build offline handouts: every notebook executed, written as static HTML with an index.

    python tools/handouts.py [--out handouts] [--only 02 03]

What a handout page holds, and why:

- Each notebook runs top to bottom in a fresh kernel with ``MHA_COURSE_STATIC=1``. A control
  group then records every setting it declares (``mha_classroom.widgets._states``: the real
  controls are moved and its own callbacks redraw its figure) and shows them as one output;
  the page offers the same controls as native, keyboard-usable inputs and switches between
  the settings (``handout_assets/states.js``), with no kernel and no network. What needs
  Python (a typed sentence, a retrain) says so where the control is, with a few examples.
- Plotly figures become ``<div>``s drawn by one ``plotly.min.js`` shipped beside the pages
  (the copy inside the installed plotly package), never a CDN.
- Maths is typeset by MathJax 2.7 copied from the ``jupyter_server_mathjax`` package into
  the output folder; nbconvert's default would load it from a CDN and, offline, show raw TeX.
- Each figure is drawn at the page's width (plotly's responsive mode, no fixed width), and
  carries a text alternative written by ``mha_classroom.describe`` from the figure's own
  numbers: the plot is ``role="img"`` named by its title and described by that text, shown
  under it (``handout_assets/figures.js``, with the package's labelling module ``label.js``).
  Two buttons under each figure save it, as drawn, as PNG or SVG, in the page (the package's
  ``save.js``, the same as in JupyterLab: plotly.js's own ``downloadImage``).
- The quick check at the end works in the page, from the same bank as the notebook widget:
  choose, Check, feedback on every option, numbers read by the same rules, the key folded
  away (``<details>``) until asked, answers kept in the browser with a reset button
  (``handout_assets/quiz.js``, whose grader a test holds to the package's). Printing
  unfolds every answer.
- Every page links to the previous and the next notebook and to the index; ``summary.html``
  gathers the shapes legend, the equations, the model in one sentence and the map, taken
  from the package and notebook 11, on at most two printed A4 pages.
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

from mha_classroom.widgets._states import LIVE_NOTE, STATES_MIME

_TOOLS = str(Path(__file__).resolve().parent)
if _TOOLS not in sys.path:
    sys.path.insert(0, _TOOLS)  # handout_controls.py sits beside this file, also when this one is loaded by its path
from handout_controls import _figure_markup, _json_in_script, states_html  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK_DIR = ROOT / "notebooks"
DEFAULT_OUT = ROOT / "handouts"
#: The CSS and scripts every page loads, shipped beside the pages under ``ASSETS_DIR``.
ASSET_SOURCE = Path(__file__).resolve().parent / "handout_assets"
ASSETS_DIR = "handout"
ASSET_FILES = ("handout.css", "narrow_layout.js", "narrow.js", "figures.js", "states.js", "quiz.js")
#: The package's own modules the pages share with JupyterLab (``mha_classroom/widgets/js``): every plot an image
#: for a screen reader (label.js), and its PNG and SVG buttons (save.js). Copied beside the others.
PACKAGE_JS = ("label.js", "save.js", "diff.js")
#: The one font MathJax asks for that jupyter_server_mathjax does not ship: a double-struck
#: letter (03's \mathbb{R}) makes its MathML styles load the TeX AMS font from this path.
AMS_FONT = ("fonts/MathJax_AMS-Regular.otf", "fonts/HTML-CSS/TeX/otf/MathJax_AMS-Regular.otf")
#: Where MathJax and plotly.js live inside the output folder.
MATHJAX_DIR = "mathjax"
PLOTLY_JS = "plotly.min.js"
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe"
#: The MathJax parts its HTML-CSS output needs with the STIX web fonts (the SVG output and
#: other languages stay behind).
MATHJAX_PARTS = ("MathJax.js", "config", "extensions", "jax/input/TeX", "jax/output/HTML-CSS", "jax/element", "localization/en",
                 "fonts/HTML-CSS/STIX-Web")
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
SUMMARY_PAGE = "summary.html"


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
    """plotly.js, the MathJax subset and the pages' CSS and scripts, once for all pages."""
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
    font = target / AMS_FONT[1]
    font.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ASSET_SOURCE / AMS_FONT[0], font)
    (out / ASSETS_DIR).mkdir(exist_ok=True)
    for name in ASSET_FILES:
        shutil.copyfile(ASSET_SOURCE / name, out / ASSETS_DIR / name)
    from mha_classroom.widgets._js import JS_DIR

    for name in PACKAGE_JS:
        shutil.copyfile(JS_DIR / name, out / ASSETS_DIR / name)


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


def figure_html(figure_json: dict, figure_id: str) -> str:
    """A figure for ``figures.js`` to draw, named and described for a screen reader.

    The plot is an image (``role="img"``) whose name is the figure's title and whose
    description is the text under it, written from the figure's numbers.
    """
    import plotly.io as pio

    fig = pio.from_json(json.dumps(figure_json), skip_invalid=True)
    return _figure_markup(json.loads(pio.to_json(fig, validate=False)), figure_id)


def _rich(text: str) -> str:
    """Plain text to HTML, `backticks` as code: the quiz widget's own rule."""
    from mha_classroom.quiz._widget_parts import rich

    return rich(text)


def quiz_data(question) -> dict:
    """What ``quiz.js`` needs to grade ``question`` as the package does (data only, no rules)."""
    from mha_classroom.quiz.grading import option_order

    data = {"id": question.id, "kind": question.kind}
    if question.kind == "numeric":
        data.update(answer=question.answer, tolerance=question.tolerance, answer_text=question.answer_text(),
                    feedback=question.feedback, wrong_feedback=question.wrong_feedback,
                    misconceptions=[{"value": m.value, "feedback": m.feedback, "tolerance": m.tolerance}
                                    for m in question.misconceptions])
    else:
        data.update(order=option_order(question),
                    options=[{"correct": o.correct, "feedback": o.feedback} for o in question.options])
    return data


def question_html(q, number: int) -> str:
    """One question as a form ``quiz.js`` brings to life; without scripts it still reads, key folded away."""
    from mha_classroom.quiz.grading import answer_letters, option_labels, option_order
    from mha_classroom.quiz.numbers import format_number

    name = f"q-{q.id}"
    parts = [f'<fieldset class="mha-quiz-question" id="{name}"><legend><b>{number}.</b> {_rich(q.text)}</legend>']
    if q.kind == "numeric":
        unit = f" (in {html.escape(q.unit)})" if q.unit else ""
        parts.append(f'<p class="mha-quiz-hint">Type a number{unit}.</p>'
                     f'<label class="mha-quiz-number-label">Your answer: <input type="text" class="mha-quiz-number" '
                     f'inputmode="decimal" autocomplete="off" spellcheck="false"></label>')
        key = f"<p>Answer: <b>{_rich(q.answer_text())}</b>. {_rich(q.feedback)}</p>"
        others = [f"<li>{_rich(f'{format_number(m.value)}: {m.feedback}')}</li>" for m in q.misconceptions]
    else:
        # The same letters as the notebook, classroom mode, the terminal and the key.
        order = option_order(q)
        labels = option_labels(order)
        kind = "radio" if q.kind == "single" else "checkbox"
        hint = "Choose one option." if q.kind == "single" else "Select all that apply."
        items = "".join(
            f'<label><input type="{kind}" class="mha-quiz-choice" name="{name}" value="{i}">'
            f"<span>{labels[i]} {_rich(q.options[i].text)}</span></label>" for i in order
        )
        parts.append(f'<p class="mha-quiz-hint">{hint}</p><div class="mha-quiz-options">{items}</div>')
        key = f"<p>Answer: <b>{html.escape(answer_letters(q))}</b></p>" + "".join(
            f"<p>{labels[i]} {_rich(q.options[i].feedback)}</p>" for i in order if q.options[i].correct)
        others = [f"<li>{labels[i]} {_rich(q.options[i].feedback)}</li>" for i in order if not q.options[i].correct]
    key += f"<p>{_rich(q.explanation)}</p>"
    if others:
        key += "<p><i>Why not the others:</i></p><ul>" + "".join(others) + "</ul>"
    parts.append(
        '<div class="mha-quiz-actions"><button type="button" class="mha-quiz-check">Check</button>'
        '<span class="mha-quiz-tries"></span></div>'
        '<div class="mha-quiz-feedback" role="status" aria-live="polite" aria-atomic="true"></div>'
        f"<details><summary>Show the answer</summary>{key}</details>"
        f'<script type="application/json" class="mha-quiz-data">{_json_in_script(quiz_data(q))}</script></fieldset>'
    )
    return "".join(parts)


def quick_check_html(set_id: str) -> str:
    """The set's questions as forms that grade in the page, each answer folded away until asked."""
    from mha_classroom.quiz.bank import default_bank

    bank = default_bank()
    quiz_set = bank.get_set(set_id)
    parts = [f'<section class="mha-handout-quiz" aria-label="Quick check {html.escape(set_id)}">'
             f"<h3>Quick check {html.escape(set_id)}: {html.escape(quiz_set.title)}</h3>"
             "<p>Answer each question, then press Check: you get feedback on what you chose, as in JupyterLab. "
             "Your answers stay in this browser only. Each answer is folded away until you open it.</p>"]
    parts += [question_html(q, number) for number, q in enumerate(bank.questions(set_id), start=1)]
    parts.append('<p class="mha-quiz-reset-row"><button type="button" class="mha-quiz-reset" hidden>'
                 'Clear my answers on this page</button> <span class="mha-quiz-reset-note" role="status"></span></p></section>')
    return "".join(parts)


def make_static(nb, stem: str = "figure") -> dict:
    """Replace live outputs in place; returns counts of what was replaced."""
    counts = {"figures": 0, "widgets": 0, "quick_checks": 0, "controls": 0, "settings": 0}
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
            if STATES_MIME in data:
                counts["figures"] += 1
                counts["controls"] += 1
                counts["settings"] += len(data[STATES_MIME]["states"])
                outputs.append(_html_output(states_html(data[STATES_MIME], f"{stem[:2]}-figure-{counts['figures']}")))
            elif PLOTLY_MIME in data:
                counts["figures"] += 1
                outputs.append(_html_output(figure_html(data[PLOTLY_MIME], f"{stem[:2]}-figure-{counts['figures']}")))
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


HEAD_EXTRA = (
    '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
    f'<link rel="stylesheet" href="{ASSETS_DIR}/handout.css">\n'
    f'<script src="{PLOTLY_JS}"></script>\n'
    f'<script defer src="{ASSETS_DIR}/label.js"></script>\n'
    f'<script defer src="{ASSETS_DIR}/save.js"></script>\n'
    f'<script defer src="{ASSETS_DIR}/diff.js"></script>\n'
    f'<script defer src="{ASSETS_DIR}/narrow_layout.js"></script>\n'
    f'<script defer src="{ASSETS_DIR}/narrow.js"></script>\n'
    f'<script defer src="{ASSETS_DIR}/figures.js"></script>\n'
    f'<script defer src="{ASSETS_DIR}/states.js"></script>\n'
    f'<script defer src="{ASSETS_DIR}/quiz.js"></script>\n'
)


def nav_html(prev: dict | None, nxt: dict | None, where: str) -> str:
    """Links to the notebook before and after this one, and to the index and the summary."""
    def link(page, rel, arrow):
        if page is None:
            return f"<span>{arrow} (none)</span>"
        return f'<a href="{html.escape(page["file"])}" rel="{rel}">{arrow} {html.escape(page["title"])}</a>'

    return (f'<nav class="mha-nav" aria-label="{where}">{link(prev, "prev", "Previous:")}'
            f'<a href="index.html">All notebooks</a><a href="{SUMMARY_PAGE}">One-page summary</a>'
            f'{link(nxt, "next", "Next:")}</nav>')


def to_html(nb, title: str, nav: str = "") -> str:
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
    if nav:
        body = body.replace("<main>", "<main>\n" + nav.replace("mha-nav\"", "mha-nav mha-nav-top\""), 1)
        body = body.replace("</main>", nav.replace('aria-label="', 'aria-label="end of page: ', 1) + "\n</main>", 1)
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
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1"><title>Multi-head attention, hands on: handouts</title>'
        "<style>body{font:18px/1.5 sans-serif;max-width:50em;margin:2em auto;padding:0 1em}td,th{padding:.3em .8em}"
        "table{max-width:100%}a{color:#0b4f8a}</style></head>"
        "<body><main><h1>Multi-head attention, hands on</h1>"
        "<p>Each notebook, run top to bottom, as a page that works offline. Each control works in the page too: every "
        "setting it offers was computed when the pages were built, and the figure, its numbers in words and its "
        "messages switch with it. What needs Python (typing your own sentence, training again) says so where the "
        "control is, and offers a few examples computed beforehand. Quick checks work in the page: choose, press "
        "Check, read the feedback.</p>"
        f'<p><a href="{SUMMARY_PAGE}">The course on one page</a>: shapes, equations, the model in one sentence, the map '
        "(prints on two A4 pages).</p>"
        f"<table><tr><th>notebook</th><th>size</th><th>figures</th></tr>{rows}</table></main></body></html>"
    )


def _markdown_section(nb, heading: str) -> str:
    """The markdown cell of ``nb`` that starts with ``heading``, without that heading line."""
    for cell in nb.cells:
        if cell.cell_type == "markdown" and cell.source.lstrip().startswith(heading):
            return cell.source.lstrip()[len(heading):].strip()
    raise ValueError(f"heading={heading!r} is not in the notebook; the summary page takes its text from there")


#: The notebooks' maths as nbconvert's pages read it: $...$ inline, $$...$$ displayed.
SUMMARY_MATHJAX = (
    '<script>window.MathJax = {"HTML-CSS": {availableFonts: [], imageFont: null, preferredFont: null, '
    'webFont: "STIX-Web"}, tex2jax: {inlineMath: [["$", "$"], ["\\\\(", "\\\\)"]], processEscapes: true}};</script>'
)


def summary_html() -> str:
    """The course on one page, taken from the package (the shapes legend) and notebook 11 (the rest)."""
    import nbformat
    from nbconvert.filters import markdown2html

    import mha_core

    review = nbformat.read(next(NOTEBOOK_DIR.glob("11_*.ipynb")), as_version=4)
    legend = re.findall(r"^    (B|T|D|H|Hkv|Dh)\s{2,}(.+)$", mha_core.__doc__, re.MULTILINE)
    rows = "".join(f"<tr><th scope=\"row\"><code>{html.escape(n)}</code></th><td>{html.escape(m)}</td></tr>" for n, m in legend)
    model = _markdown_section(review, "## The model in one sentence")
    layer = _markdown_section(review, "## One layer, every step, every shape")
    equation = layer.split("**The code.**")[0].strip()
    course_map = _markdown_section(review, "## The map")
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        "<title>Multi-head attention, hands on: the course on one page</title>"
        f'<link rel="stylesheet" href="{ASSETS_DIR}/handout.css">' + SUMMARY_MATHJAX +
        f'<script src="{MATHJAX_DIR}/MathJax.js?config={MATHJAX_CONFIG}"></script>'
        "<style>body{font:15px/1.4 sans-serif;max-width:60em;margin:1em auto;padding:0 1em}"
        "h1{font-size:1.5em;margin:.3em 0}h2{font-size:1.15em;margin:.8em 0 .3em}p,li{margin:.25em 0}"
        "table{border-collapse:collapse;max-width:100%}td,th{border:1px solid #bbb;padding:.15em .5em;text-align:left;vertical-align:top}"
        "@page{size:A4;margin:14mm}@media print{body{font-size:10.5pt;margin:0;max-width:none}}</style></head>"
        '<body><main><h1>Multi-head attention, hands on: the course on one page</h1>'
        f'<nav class="mha-nav" aria-label="pages"><a href="index.html">All notebooks</a></nav>'
        f"<h2>Shapes</h2><table><tbody>{rows}</tbody></table>"
        f"<h2>The model in one sentence</h2>{markdown2html(model)}"
        f"<h2>One layer: the equations</h2>{markdown2html(equation.replace('**The equation.**', '').strip())}"
        f"<h2>The map</h2>{markdown2html(course_map)}"
        "</main></body></html>"
    )


def title_of(nb, path: Path) -> str:
    first = nb.cells[0].source.splitlines()[0] if nb.cells and nb.cells[0].cell_type == "markdown" else path.stem
    return first.lstrip("# ").strip() or path.stem


def write_pages(executed: list[tuple[Path, object]], out: Path, *, log=print, seconds=None) -> list[dict]:
    """Write one page per executed notebook (linked to its neighbours), the summary and the index."""
    seconds = seconds or {}
    entries = [{"file": f"{path.stem}.html", "title": title_of(nb, path)} for path, nb in executed]
    pages = []
    for n, (path, nb) in enumerate(executed):
        counts = make_static(nb, path.stem)
        nav = nav_html(entries[n - 1] if n else None, entries[n + 1] if n + 1 < len(entries) else None, "notebooks")
        page = out / entries[n]["file"]
        page.write_text(to_html(nb, entries[n]["title"], nav), encoding="utf-8")
        entry = {**entries[n], "kib": page.stat().st_size // 1024, "seconds": seconds.get(path.stem), **counts}
        pages.append(entry)
        log(f"{page.name}: {entry['kib']} KiB, {counts['figures']} figures, {entry['seconds']} s")
    (out / SUMMARY_PAGE).write_text(summary_html(), encoding="utf-8")
    (out / "index.html").write_text(index_html(pages), encoding="utf-8")
    (out / "handouts.json").write_text(json.dumps(pages, indent=2))
    return pages


def build(out: Path = DEFAULT_OUT, only=None, *, log=print) -> list[dict]:
    """Execute the notebooks, write one page each, the assets, the summary and ``index.html``; one dict per page."""
    paths = notebooks(only)
    out.mkdir(parents=True, exist_ok=True)
    copy_assets(out)
    executed, seconds = [], {}
    for path in paths:
        start = time.perf_counter()
        executed.append((path, execute(path)))
        seconds[path.stem] = round(time.perf_counter() - start, 1)
    pages = write_pages(executed, out, log=log, seconds=seconds)
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
