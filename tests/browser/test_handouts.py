"""Offline handouts (``make handouts``) open in Chromium with the network cut off.

The handouts of every notebook are built once into a temporary folder. Each page is then
opened from disk with every request that is not a local file aborted, and the test reads
from the page: every figure drawn by plotly.js, every formula typeset by MathJax (no raw
TeX left), no request that left the machine or missed a file (the AMS font of 03 among
them); every figure named and described in Chromium's accessibility tree with the numbers
``mha_core.figures.describe`` reads from it; one quick-check question answered wrong and
then right, with the package's feedback; links to the neighbouring pages; axe-core's WCAG
2.1 A/AA rules with no violation; the summary on at most two A4 pages; and the layout at a
phone's 390 px and a tablet's 768 px (nothing wider than the page; no two texts of a figure
over each other, where the builders allow it: see ``NARROW_KNOWN``).
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from browser_config import ARTIFACTS, REPO
from conftest import _fail_or_skip, chromium, missing_tools

sys.path.insert(0, str(REPO / "tools"))
import handouts  # noqa: E402
import page_text  # noqa: E402

pytestmark = pytest.mark.browser
PAGES = [p.stem for p in handouts.notebooks()]
AXE_JS = Path(__file__).resolve().parent / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
WIDTHS = (390, 768)
A4_PAGES_MAX = 2

#: Figure layouts that overlap text at a narrow width because of the figure builders (fixed
#: margins, tick labels and cell numbers sized for the 820 px laptop output), which this
#: build does not own. Measured; the test fails once a builder fixes a page, so the mark goes.
NARROW_KNOWN = {
    **{(stem, 390): "figure builders size ticks, cell numbers and panel titles for 820 px" for stem in PAGES},
    ("05_head_sizing", 768): "the model-shapes table's cells",
    ("08_when_heads_fail", 768): "a colour bar's title over its top tick; the removal figure's ticks",
}

DRAWN = "() => Array.from(document.querySelectorAll('.mha-plot')).every(p => p.dataset.mhaDrawn)"
TYPESET = "() => !window.MathJax || (MathJax.Hub && MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running)"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("handouts")
    pages = handouts.build(out, log=lambda *_: None)
    return out, {Path(p["file"]).stem: p for p in pages}


@pytest.fixture(scope="module")
def offline_browser(tmp_path_factory):
    problems = missing_tools()
    if problems:
        _fail_or_skip("; ".join(problems))
    outside = []

    def only_local(route):
        if route.request.url.startswith(("file://", "data:", "blob:")):
            route.continue_()
        else:
            outside.append(route.request.url)
            route.abort()

    with chromium(tmp_path_factory.mktemp("handout-browser")) as context:
        context.route("**/*", only_local)
        yield context, outside


@pytest.fixture(scope="module")
def layout_report():
    """Per page and width, what the layout measure found; written for the closing note."""
    report = {}
    yield report
    if report:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "handouts_layout.json").write_text(json.dumps(report, indent=2))


def open_page(context, path: Path, width: int | None = None):
    page = context.new_page()
    if width:
        page.set_viewport_size({"width": width, "height": 800})
    page.goto(path.as_uri(), wait_until="load")
    page.wait_for_function(TYPESET, timeout=60_000)
    page.wait_for_function(DRAWN, timeout=60_000)
    return page


def test_the_index_links_every_page(built):
    out, pages = built
    index = (out / "index.html").read_text()
    assert set(pages) == set(PAGES)
    for stem in PAGES:
        assert f'href="{stem}.html"' in index
    assert f'href="{handouts.SUMMARY_PAGE}"' in index
    assert json.loads((out / "handouts.json").read_text())


def test_every_page_links_its_neighbours_and_the_index(built):
    out, _ = built
    for n, stem in enumerate(PAGES):
        text = (out / f"{stem}.html").read_text()
        links = set(re.findall(r'<nav class="mha-nav[^"]*"[^>]*>(.*?)</nav>', text, re.S))
        assert len(re.findall(r'<nav class="mha-nav', text)) == 2, f"{stem}: links at the top and the end"
        hrefs = {h for block in links for h in re.findall(r'href="([^"]+)"', block)}
        want = {"index.html", handouts.SUMMARY_PAGE}
        want |= {f"{PAGES[n - 1]}.html"} if n else set()
        want |= {f"{PAGES[n + 1]}.html"} if n + 1 < len(PAGES) else set()
        assert hrefs == want, f"{stem}: {sorted(hrefs)}"
        assert all((out / h).is_file() for h in hrefs)


@pytest.mark.parametrize("stem", PAGES)
def test_handout_renders_offline(stem, built, offline_browser):
    out, pages = built
    context, outside = offline_browser
    outside.clear()
    missing = []
    page = context.new_page()
    page.on("requestfailed", lambda r: r.url.startswith("file://") and missing.append(r.url))
    try:
        page.goto((out / f"{stem}.html").as_uri(), wait_until="load")
        # MathJax typesets after load; it leaves its queue empty and every math span done.
        page.wait_for_function(TYPESET, timeout=60_000)
        page.wait_for_function(DRAWN, timeout=60_000)
        plots = page.evaluate(
            "() => Array.from(document.querySelectorAll('.js-plotly-plot')).map(p => (p.data || []).length)"
        )
        assert len(plots) == pages[stem]["figures"], f"{stem}: {len(plots)} figures drawn, {pages[stem]['figures']} in the notebook"
        assert all(n > 0 for n in plots), f"{stem}: a figure was drawn without traces: {plots}"
        maths = page.evaluate("() => document.querySelectorAll('.MathJax, .MathJax_Display').length")
        raw_tex = page.evaluate(
            r"""() => Array.from(document.querySelectorAll('.jp-MarkdownOutput'))
                  .map(e => e.innerText).filter(t => /\$[^$\s][^$]*\$/.test(t)).length"""
        )
        if handouts_markdown_has_maths(stem):
            assert maths > 0, f"{stem}: the notebook has maths but none was typeset"
        assert raw_tex == 0, f"{stem}: {raw_tex} markdown cells still show raw $...$ TeX"
        if stem[:2] != "00" or "quick_check" in (REPO / "notebooks" / f"{stem}.ipynb").read_text():
            folded = page.evaluate("() => document.querySelectorAll('.mha-handout-quiz details').length")
            opened = page.evaluate("() => Array.from(document.querySelectorAll('.mha-handout-quiz details')).filter(d => d.open).length")
            assert folded > 0 and opened == 0, f"{stem}: quick-check answers must be folded away ({folded} found, {opened} open)"
        shots = ARTIFACTS
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / f"handout_{stem}.png"), full_page=False)
    finally:
        page.close()
    assert outside == [], f"{stem}: the page asked the network for {outside}"
    assert missing == [], f"{stem}: the page asked for files the build did not ship: {missing}"


def handouts_markdown_has_maths(stem: str) -> bool:
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    text = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return "$" in text


# --------------------------------------------------------------------------- figures in words


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text.replace("`", "")).strip()


@pytest.mark.parametrize("stem", PAGES)
def test_every_figure_has_a_name_and_its_numbers_in_the_accessibility_tree(stem, built, offline_browser):
    from mha_core.figures.describe import in_words

    out, pages = built
    context, _ = offline_browser
    page = open_page(context, out / f"{stem}.html")
    try:
        specs = page.evaluate("() => Array.from(document.querySelectorAll('figure.mha-figure script.mha-figure-data'))"
                              ".map(s => JSON.parse(s.textContent))")
        cdp = context.new_cdp_session(page)
        nodes = cdp.send("Accessibility.getFullAXTree")["nodes"]
        cdp.detach()
    finally:
        page.close()
    images = [n for n in nodes if (n.get("role") or {}).get("value") == "image" and not n.get("ignored")]
    assert len(specs) == pages[stem]["figures"]
    assert len(images) == len(specs), f"{stem}: {len(images)} images in the accessibility tree, {len(specs)} figures"
    for node, spec in zip(images, specs):
        words = in_words(spec)
        name = (node.get("name") or {}).get("value", "")
        described = (node.get("description") or {}).get("value", "")
        assert name == words.name and name, f"{stem}: figure named {name!r}, expected {words.name!r}"
        assert _flat(described) == _flat("In words: " + handouts.words_text(words.description)), f"{stem}: {name}: {described!r}"
        assert re.search(r"\d", described), f"{stem}: {name}: the description gives no number"


# --------------------------------------------------------------------------- quick checks


@pytest.mark.parametrize("stem", PAGES)
def test_one_question_per_page_answered_wrong_then_right(stem, built, offline_browser):
    from mha_core.quiz.bank import default_bank

    out, _ = built
    context, _ = offline_browser
    page = open_page(context, out / f"{stem}.html")
    try:
        page.evaluate("() => localStorage.clear()")
        q_id = page.evaluate("() => { const b = document.querySelector('.mha-quiz-question input.mha-quiz-choice');"
                             " return b && b.closest('.mha-quiz-question').id.slice(2); }")
        assert q_id, f"{stem}: no choice question in the page's quick check"
        q = default_bank().question(q_id)
        box = page.locator(f"[id='q-{q_id}']")
        right = q.correct_indices
        wrong = next(i for i in range(len(q.options)) if i not in right)
        box.locator(f"input[value='{wrong}']").check()
        box.locator("button.mha-quiz-check").click()
        feedback = box.locator(".mha-quiz-feedback").inner_text()
        assert "Not quite" in feedback and _flat(q.options[wrong].feedback) in _flat(feedback), f"{stem}: {feedback!r}"
        box.locator(f"input[value='{wrong}']").uncheck() if q.kind == "multi" else None
        for i in right:
            box.locator(f"input[value='{i}']").check()
        box.locator("button.mha-quiz-check").click()
        assert box.locator(".mha-quiz-feedback").inner_text().lstrip("✓ ").startswith("Correct"), stem
        page.evaluate("() => localStorage.clear()")
    finally:
        page.close()


# --------------------------------------------------------------------------- accessibility rules


@pytest.fixture(scope="module")
def axe_source():
    if not AXE_JS.is_file():
        _fail_or_skip(f"axe-core not found at {AXE_JS.relative_to(REPO)} (run: npm ci --prefix tests/browser)")
    return AXE_JS.read_text()


@pytest.mark.parametrize("stem", PAGES + ["index", "summary"])
def test_axe_finds_no_wcag_violation(stem, built, offline_browser, axe_source):
    out, _ = built
    context, _ = offline_browser
    page = open_page(context, out / f"{stem}.html")
    try:
        page.add_script_tag(content=axe_source)
        violations = page.evaluate(
            """async (tags) => (await axe.run(document, {runOnly: {type: 'tag', values: tags}})).violations
                 .map(v => ({id: v.id, nodes: v.nodes.length, first: v.nodes[0].target.join(' ')}))""", AXE_TAGS)
    finally:
        page.close()
    assert violations == [], f"{stem}: {violations}"


# --------------------------------------------------------------------------- the summary, printed


def test_the_summary_prints_on_two_a4_pages(built, offline_browser):
    out, _ = built
    context, _ = offline_browser
    page = open_page(context, out / handouts.SUMMARY_PAGE)
    try:
        text = page.locator("main").inner_text()
        pdf = page.pdf(format="A4")
    finally:
        page.close()
    # One /Type /Page object per printed page (/Pages is the tree that holds them).
    printed = len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))
    assert 1 <= printed <= A4_PAGES_MAX, f"the summary prints on {printed} A4 pages"
    for part in ("The same tokens, seen through several learned views, give one combined update per token.",
                 "batch", "d_head = D / H", "The map", "09 serving cost"):
        assert part in text, part
    assert "$" not in text  # every formula is typeset, none left as TeX


# --------------------------------------------------------------------------- a phone and a tablet


def _narrow_cases():
    return [pytest.param(stem, width, id=f"{stem}-{width}",
                         marks=[pytest.mark.xfail(strict=True, reason=NARROW_KNOWN[(stem, width)])]
                         if (stem, width) in NARROW_KNOWN else [])
            for width in WIDTHS for stem in PAGES]


@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("stem", PAGES)
def test_no_page_is_wider_than_a_phone_or_a_tablet(stem, width, built, offline_browser):
    out, _ = built
    context, _ = offline_browser
    page = open_page(context, out / f"{stem}.html", width)
    try:
        scroll = page.evaluate("() => document.documentElement.scrollWidth")
        figures = page.evaluate("() => Array.from(document.querySelectorAll('.main-svg')).map(s => s.getBoundingClientRect().right)")
    finally:
        page.close()
    assert scroll <= width, f"{stem} at {width} px: the page is {scroll} px wide"
    assert figures and max(figures) <= width, f"{stem} at {width} px: a figure ends at {max(figures, default=0):.0f} px"


@pytest.mark.parametrize(("stem", "width"), _narrow_cases())
def test_no_figure_text_overlaps_at_phone_and_tablet_width(stem, width, built, offline_browser, layout_report):
    out, _ = built
    context, _ = offline_browser
    page = open_page(context, out / f"{stem}.html", width)
    try:
        problems = page_text.problems_in([b for b in page_text.text_boxes(page) if b["kind"] == "svg"], 0)
    finally:
        page.close()
    layout_report[f"{stem} @ {width}"] = {"overlaps": len(problems["overlaps"]), "cut": len(problems["cut"]),
                                          "first": (problems["overlaps"] + problems["cut"])[:3]}
    assert problems["overlaps"] == [] and problems["cut"] == [], (
        f"{stem} at {width} px: {len(problems['overlaps'])} overlaps, {len(problems['cut'])} cut: "
        f"{(problems['overlaps'] + problems['cut'])[:3]}")
