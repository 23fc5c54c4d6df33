"""Every text a learner sees in a cell's output, read from the page: its rendered size, its box, and overlaps.

``text_boxes(page)`` walks every output area (``.jp-OutputArea-output``; a handout page's
output blocks too) and returns one record per visible piece of text: a plotly figure's
SVG ``<text>`` (titles, tick labels, legend entries, annotations, numbers in heatmap
cells) and every HTML text node (control labels, buttons, readouts, messages, tables).
The size is the rendered one: the computed ``font-size`` times the scale the page draws
it at (an SVG inside a scaled group reports its own size, not the one on screen).

``text_problems(page, min_px)`` turns those records into problems a person would see:
text smaller than ``min_px``, and two texts of the same output whose boxes overlap (one
prints over the other). Hidden text (``display: none``, ``visibility: hidden``, opacity
0, zero size, clipped away by an ancestor's overflow) is skipped; so is plotly's mode bar,
which is hidden (see ``mha_classroom.widgets._base``), and the hover layer, drawn only under the pointer.

``standalone_figure(context, figure, width)`` draws one figure spec in a bare page with
plotly.js from the installed plotly package (no JupyterLab, no network), so a test can
measure a builder in every setting a learner can choose in well under a second each.
"""

from __future__ import annotations

import json
from pathlib import Path

#: A page's output areas: JupyterLab's, and a handout's (``tools/handouts.py``).
OUTPUT_AREAS = ".jp-OutputArea-output, .mha-handout-output"

#: Two boxes overlap when they share at least this many pixels across and down (anti-aliasing,
#: a descender touching the next line's ascender, do not count).
OVERLAP_PX = 2.0

#: The width of a cell's output area in JupyterLab at 1280 x 800 with the file browser open (the
#: narrowest layout the course is designed for): a plain figure with no width of its own takes it.
OUTPUT_WIDTH = 848

_COLLECT = r"""([areas, overlapPx]) => {
    const shown = (el) => {
        for (let e = el; e && e.nodeType === 1; e = e.parentElement) {
            const s = getComputedStyle(e);
            if (s.display === 'none' || s.visibility === 'hidden' || parseFloat(s.opacity) === 0) return false;
            if (e.classList && (e.classList.contains('modebar-container') || e.classList.contains('hoverlayer'))) return false;
        }
        return true;
    };
    // A box clipped by an ancestor that hides its overflow shows only its visible part.
    const clipped = (el, r) => {
        let {left, top, right, bottom} = r;
        for (let e = el.parentElement; e && e !== document.body; e = e.parentElement) {
            const s = getComputedStyle(e);
            if (/(hidden|clip|auto|scroll)/.test(s.overflow + s.overflowX + s.overflowY)) {
                const c = e.getBoundingClientRect();
                left = Math.max(left, c.left); top = Math.max(top, c.top);
                right = Math.min(right, c.right); bottom = Math.min(bottom, c.bottom);
            }
        }
        return {left, top, right, bottom};
    };
    const describe = (el) => {
        const cls = (el.getAttribute('class') || '').split(/\s+/).filter(c => c).slice(0, 2).join('.');
        return el.tagName.toLowerCase() + (cls ? '.' + cls : '');
    };
    const out = [];
    document.querySelectorAll(areas).forEach((area, index) => {
        if (area.getBoundingClientRect().width === 0) return;
        // SVG text: the leaf <text> elements plotly draws (a <text> may hold <tspan> lines).
        for (const t of area.querySelectorAll('svg text')) {
            const text = (t.textContent || '').trim();
            if (!text || !shown(t)) continue;
            const r = t.getBoundingClientRect();
            if (r.width === 0 || r.height === 0) continue;
            const ctm = t.getScreenCTM();
            const scale = ctm ? Math.hypot(ctm.a, ctm.b) : 1;
            const box = clipped(t, r);
            if (box.right - box.left <= 0 || box.bottom - box.top <= 0) continue;
            // Text that runs past its figure's edge is cut off where the figure ends.
            const plot = t.closest('.js-plotly-plot');
            const svg = plot && plot.querySelector('.main-svg');
            const edge = svg ? svg.getBoundingClientRect() : null;
            const cut = !!edge && (r.left < edge.left - 2 || r.right > edge.right + 2 || r.top < edge.top - 2 || r.bottom > edge.bottom + 2);
            out.push({output: index, kind: 'svg', text: text.slice(0, 60), where: describe(t.parentElement || t),
                      px: Math.round(parseFloat(getComputedStyle(t).fontSize) * scale * 10) / 10, ...box,
                      figure: !!plot, cut});
        }
        // HTML text: every text node outside an SVG, measured by a range around its own glyphs.
        const walker = document.createTreeWalker(area, NodeFilter.SHOW_TEXT);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
            const text = node.textContent.trim();
            const el = node.parentElement;
            if (!text || !el || el.closest('svg') || el.closest('style, script, .MathJax_Preview') || !shown(el)) continue;
            const range = document.createRange();
            range.selectNodeContents(node);
            const r = range.getBoundingClientRect();
            if (r.width === 0 || r.height === 0) continue;
            const box = clipped(el, r);
            if (box.right - box.left <= 0 || box.bottom - box.top <= 0) continue;
            out.push({output: index, kind: 'html', text: text.slice(0, 60), where: describe(el),
                      px: parseFloat(getComputedStyle(el).fontSize), ...box, figure: false,
                      lines: range.getClientRects().length,
                      // JupyterLab's own rendering of printed text (stdout, stderr, text/plain) in its code font.
                      printed: !!el.closest('.jp-RenderedText')});
        }
    });
    return out;
}"""


def text_boxes(page, areas: str = OUTPUT_AREAS) -> list[dict]:
    """Every visible text in the page's output areas: ``{output, kind, text, where, px, left, top, right, bottom}``."""
    return page.evaluate(_COLLECT, [areas, OVERLAP_PX])


def _overlap(a: dict, b: dict) -> tuple[float, float]:
    return (min(a["right"], b["right"]) - max(a["left"], b["left"]),
            min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]))


def overlaps(boxes: list[dict], *, tolerance_px: float = OVERLAP_PX) -> list[tuple[dict, dict]]:
    """Pairs of texts in the same output whose boxes share more than ``tolerance_px`` both ways.

    A multi-line HTML text node is measured by its whole box, so it is compared only with
    figure text (a wrapped paragraph next to a short label in the same line box is normal flow,
    not one text over another).
    """
    found = []
    by_output: dict[int, list[dict]] = {}
    for box in boxes:
        by_output.setdefault(box["output"], []).append(box)
    for group in by_output.values():
        group.sort(key=lambda b: b["top"])
        for i, a in enumerate(group):
            for b in group[i + 1:]:
                if b["top"] >= a["bottom"] - tolerance_px:
                    break
                if a["kind"] == b["kind"] == "html":
                    # The browser lays out HTML text: two nodes overlap only by absolute positioning,
                    # which the package never uses; skip the flow's own shared line boxes.
                    continue
                dx, dy = _overlap(a, b)
                if dx > tolerance_px and dy > tolerance_px:
                    found.append((a, b))
    return found


def text_problems(page, min_px: float, areas: str = OUTPUT_AREAS, *, printed_min_px: float | None = None) -> dict:
    """``{"small": [...], "overlaps": [...], "cut": [...], "smallest": px, "count": n}`` for the page's outputs.

    ``printed_min_px``: the smallest size allowed for printed text (JupyterLab draws ``print()`` output in
    its own code font, 13 px by default on a laptop, a setting of JupyterLab's theme and not the course's);
    None holds it to ``min_px`` like everything else. ``printed_px`` in the result is its smallest size.
    """
    boxes = text_boxes(page, areas)
    printed = [b for b in boxes if b.get("printed")]
    if printed_min_px is not None:
        boxes = [b for b in boxes if not b.get("printed")]
    found = problems_in(boxes, min_px)
    if printed_min_px is not None:
        found["small"] += problems_in(printed, printed_min_px)["small"]
    found["printed_px"] = min((b["px"] for b in printed), default=None)
    return found


def problems_in(boxes: list[dict], min_px: float) -> dict:
    small = [f"output {b['output']}: {b['where']} \"{b['text']}\" at {b['px']} px" for b in boxes if b["px"] < min_px - 0.05]
    pairs = [f"output {a['output']}: \"{a['text']}\" ({a['where']}) and \"{b['text']}\" ({b['where']}) overlap "
             f"{_overlap(a, b)[0]:.0f} x {_overlap(a, b)[1]:.0f} px" for a, b in overlaps(boxes)]
    cut = [f"output {b['output']}: {b['where']} \"{b['text']}\" runs past its figure's edge" for b in boxes if b.get("cut")]
    return {"small": small, "overlaps": pairs, "cut": cut, "smallest": min((b["px"] for b in boxes), default=None),
            "count": len(boxes)}


def failures(problems: dict) -> list[str]:
    """Every problem ``problems_in`` found, one line each."""
    return problems["small"] + problems["overlaps"] + problems["cut"]


# --------------------------------------------------------------------------- one figure, no JupyterLab


def _plotly_js() -> Path:
    import plotly

    return Path(plotly.__file__).parent / "package_data" / "plotly.min.js"


_PAGE = """<!doctype html><html><head><meta charset="utf-8">
<style>body {{ margin: 0; font-family: sans-serif; }} .modebar-container {{ display: none; }}</style>
<script src="{plotly}"></script></head>
<body><div class="mha-handout-output" style="width:{width}px"><div id="fig"></div></div></body></html>"""


def standalone_page(context, folder: Path, width: int = OUTPUT_WIDTH):
    """A page in ``context`` (a playwright browser context) ready to draw figures with ``draw``; ``width`` is
    the room the page gives (a figure takes its own ``layout.width``, as in JupyterLab)."""
    folder.mkdir(parents=True, exist_ok=True)
    page_file = folder / "figure.html"
    page_file.write_text(_PAGE.format(plotly=_plotly_js().as_uri(), width=width))
    page = context.new_page()
    page.goto(page_file.as_uri())
    page.wait_for_function("() => !!window.Plotly")
    return page


def draw(page, figure) -> None:
    """Draw ``figure`` (a ``go.Figure`` or a builder's ``{"data", "layout"}`` spec) in ``page``, replacing the last."""
    import plotly.io as pio

    spec = json.loads(pio.to_json(figure, validate=False))  # a dict as it is: no Figure built, nothing validated again
    page.evaluate("""(spec) => Plotly.newPlot('fig', spec.data, spec.layout, {displayModeBar: false, responsive: false})""",
                  spec)
