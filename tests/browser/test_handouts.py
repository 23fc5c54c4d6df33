"""Offline handouts (``make handouts``) open in Chromium with the network cut off.

The handouts of every notebook are built once into a temporary folder. Each page is then
opened from disk with every request that is not a local file aborted, and the test reads
from the page: every figure drawn by plotly.js, every formula typeset by MathJax (no raw
TeX left), the quick check's answers folded away, and no request that left the machine.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from browser_config import REPO
from conftest import _fail_or_skip, chromium, missing_tools

sys.path.insert(0, str(REPO / "tools"))
import handouts  # noqa: E402

pytestmark = pytest.mark.browser
PAGES = [p.stem for p in handouts.notebooks()]


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


def test_the_index_links_every_page(built):
    out, pages = built
    index = (out / "index.html").read_text()
    assert set(pages) == set(PAGES)
    for stem in PAGES:
        assert f'href="{stem}.html"' in index
    assert json.loads((out / "handouts.json").read_text())


@pytest.mark.parametrize("stem", PAGES)
def test_handout_renders_offline(stem, built, offline_browser):
    out, pages = built
    context, outside = offline_browser
    outside.clear()
    page = context.new_page()
    try:
        page.goto((out / f"{stem}.html").as_uri(), wait_until="load")
        # MathJax typesets after load; it leaves its queue empty and every math span done.
        page.wait_for_function(
            "() => window.MathJax && MathJax.Hub && MathJax.Hub.queue.pending === 0 && !MathJax.Hub.queue.running",
            timeout=60_000,
        )
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
        source_dollars = handouts_markdown_has_maths(stem)
        if source_dollars:
            assert maths > 0, f"{stem}: the notebook has maths but none was typeset"
        assert raw_tex == 0, f"{stem}: {raw_tex} markdown cells still show raw $...$ TeX"
        if stem[:2] != "00" or "quick_check" in (REPO / "notebooks" / f"{stem}.ipynb").read_text():
            folded = page.evaluate("() => document.querySelectorAll('.mha-handout-quiz details').length")
            opened = page.evaluate("() => Array.from(document.querySelectorAll('.mha-handout-quiz details')).filter(d => d.open).length")
            assert folded > 0 and opened == 0, f"{stem}: quick-check answers must be folded away ({folded} found, {opened} open)"
        shots = REPO / "artifacts" / "browser"
        shots.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(shots / f"handout_{stem}.png"), full_page=False)
    finally:
        page.close()
    assert outside == [], f"{stem}: the page asked the network for {outside}"


def handouts_markdown_has_maths(stem: str) -> bool:
    nb = json.loads((REPO / "notebooks" / f"{stem}.ipynb").read_text())
    text = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    return "$" in text
