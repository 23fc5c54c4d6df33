"""What a screen reader and axe-core find in a notebook's outputs, in JupyterLab, in Chromium.

- ``output_violations(page, notebook)``: axe-core 4.14 (``tests/browser/node_modules``, from
  ``package.json``; ``.ci/run`` runs ``npm ci --prefix tests/browser``) on the open notebook's
  output areas only (``.jp-OutputArea-output``: what the course puts on the page, not
  JupyterLab's own menus and editors), with the WCAG 2.1 A and AA rules, as
  ``test_handouts.py`` runs it on the handouts. One readable line per element that fails.
- ``figure_words(page)``: every figure in the outputs as Chromium's accessibility tree gives it
  (role, name, description), beside the words ``mha_classroom.describe`` reads from the
  figure's own data in the page; ``words_problems`` turns that into one line per figure that
  is not an image named by its title and described by those words.
- ``check_outputs(page, notebook, result)``: both, asserted; for the notebooks in
  ``LIVE_WORDS`` also that a control change rewrites the description (``words_follow_head_count``).
  ``test_browser.py`` calls it once per notebook, after Run All and its other checks.

The test server sets the notebook's cell windowing to "none" (``lab_server.py``),
so every output is in the page, not only those near the viewport.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from mha_classroom.describe import in_words, spoken
from lab_page import PLAIN_JS

HERE = Path(__file__).resolve().parent

AXE_JS = HERE / "node_modules" / "axe-core" / "axe.min.js"
AXE_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
OUTPUTS = ".jp-OutputArea-output"
#: A figure in an output: JupyterLab's plotly renderer (the output element itself) or a FigureWidget's plot.
PLOTS = ".jp-OutputArea-output.js-plotly-plot, .jp-OutputArea-output .js-plotly-plot"

#: Nodes axe may not judge because the course does not make them, each with why. Empty: every
#: violation found in the outputs was the course's own and is fixed in the package.
EXCLUDED: dict[str, str] = {}

_RUN_AXE = """async ([outputs, tags, excluded]) => {
    if (!document.querySelector(outputs)) return [];
    const result = await axe.run({include: [outputs], exclude: excluded},
                                 {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
    return result.violations.flatMap((v) => v.nodes.map((n) => ({
        rule: v.id, impact: v.impact, help: v.help, target: n.target.join(' '),
        html: (n.html || '').slice(0, 160), summary: (n.failureSummary || '').split('\\n').slice(0, 2).join(' '),
    })));
}"""


def axe_source() -> str:
    """axe-core's script; a clear error when ``npm ci --prefix tests/browser`` has not been run."""
    if not AXE_JS.is_file():
        raise FileNotFoundError(f"axe-core not found at {AXE_JS} (run: npm ci --prefix tests/browser)")
    return AXE_JS.read_text()


def output_violations(page, notebook: str) -> list[str]:
    """axe-core's WCAG 2.1 A/AA violations in the open notebook's outputs, one line per element:
    ``notebook: rule (impact) at selector: what is wrong``."""
    if not page.evaluate("() => !!window.axe"):
        page.add_script_tag(content=axe_source())
    found = page.evaluate(_RUN_AXE, [OUTPUTS, AXE_TAGS, list(EXCLUDED)])
    return [f"{notebook}: {v['rule']} ({v['impact']}) at {v['target']}: {v['summary'] or v['help']} [{v['html']}]"
            for v in found]


# --------------------------------------------------------------------------- figures in the accessibility tree

_PAGE_FIGURES = """(selector) => [...document.querySelectorAll(selector)].map((el) => {""" + PLAIN_JS + """
    return JSON.stringify({data: plain(el.data || []), layout: plain(el.layout || {})});
})"""


def _ax_nodes(page, selector: str) -> list[dict]:
    """Chromium's accessibility node of each element matching ``selector`` (CDP), in page order."""
    cdp = page.context.new_cdp_session(page)
    try:
        cdp.send("DOM.enable")
        cdp.send("Accessibility.enable")
        root = cdp.send("DOM.getDocument", {"depth": 0})["root"]["nodeId"]
        nodes = []
        for node_id in cdp.send("DOM.querySelectorAll", {"nodeId": root, "selector": selector})["nodeIds"]:
            backend = cdp.send("DOM.describeNode", {"nodeId": node_id})["node"]["backendNodeId"]
            tree = cdp.send("Accessibility.getPartialAXTree", {"backendNodeId": backend, "fetchRelatives": False})["nodes"]
            ax = next((n for n in tree if n.get("backendDOMNodeId") == backend), tree[0] if tree else {})
            value = lambda key: (ax.get(key) or {}).get("value", "")  # noqa: E731
            nodes.append({"role": value("role"), "name": value("name"), "description": value("description"),
                          "ignored": bool(ax.get("ignored"))})
        return nodes
    finally:
        cdp.detach()


def figure_words(page) -> list[dict]:
    """Per figure in the outputs: its accessibility node (``role``, ``name``, ``description``) and the
    words ``describe.in_words`` gives for the data and layout the page draws (``expected_name``,
    ``expected_description``)."""
    specs = [json.loads(s) for s in page.evaluate(_PAGE_FIGURES, PLOTS)]
    nodes = _ax_nodes(page, PLOTS)
    out = []
    for spec, node in zip(specs, nodes):
        words = in_words(spec)
        out.append({**node, "expected_name": words.name, "expected_description": spoken(words.description)})
    return out


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text or "").strip()


def words_problems(figures: list[dict], notebook: str) -> list[str]:
    """One line per figure that is not an image named by its title and described by its words."""
    problems = []
    for i, f in enumerate(figures):
        where = f"{notebook} figure {i + 1} ({f['expected_name'][:50]!r})"
        if f["role"] != "image" or f["ignored"]:
            problems.append(f"{where}: role {f['role']!r}{' (ignored)' if f['ignored'] else ''}, not an image")
        if _squash(f["name"]) != _squash(f["expected_name"]):
            problems.append(f"{where}: named {f['name'][:80]!r}, not by its title")
        if _squash(f["description"]) != _squash(f["expected_description"]):
            problems.append(f"{where}: described as {f['description'][:120]!r}; its data reads "
                            f"{f['expected_description'][:120]!r}")
    return problems


# --------------------------------------------------------------------------- a control rewrites the words


def _group_figure_node(page, group_selector: str) -> dict:
    selector = f".jp-OutputArea-output:has({group_selector}) .js-plotly-plot"
    nodes = _ax_nodes(page, selector)
    assert nodes, f"no figure beside {group_selector}"
    return nodes[0]


def words_follow_head_count(page, *, timeout_s: float = 20) -> dict:
    """03's head count: choose another head count (2, or 8 when 2 is chosen); the figure's description
    becomes the words of its new data, naming the new heads, and the polite live region holds them; then
    the count the page had is chosen again."""
    from lab_page import click_toggle_button, output_with, poll_until

    group = output_with(page, ".mha-head-count")
    start = group.locator(".widget-toggle-button.mod-active").first.inner_text().strip()
    to = "8" if start == "2" else "2"
    before = _group_figure_node(page, ".mha-head-count")
    live = page.locator(".jp-OutputArea-output [aria-live='polite']", has_text=before["name"][:40])
    assert live.count() == 1, f"no polite live region holds the words of {before['name']!r}"
    region = live.first.element_handle()
    plot = ".jp-OutputArea-output:has(.mha-head-count) .js-plotly-plot"

    def read():
        node = _group_figure_node(page, ".mha-head-count")
        return node, in_words(json.loads(page.evaluate(_PAGE_FIGURES, plot)[0]))

    click_toggle_button(group, to)
    # The words come from the kernel with the figure's update: wait for both, the drawing and its description.
    (after, words), waited, ok = poll_until(
        read, lambda r: r[0]["description"] != before["description"] and f"H = {to} " in r[1].name, timeout_s=timeout_s)
    assert ok, (f"after choosing {to} heads, within {timeout_s} s: described as {after['description'][:120]!r}, "
                f"the figure drawn is {words.name!r}")
    assert f"H = {to} " in after["name"], f"after {to} heads the figure is named {after['name']!r}"
    assert _squash(after["description"]) == _squash(spoken(words.description)), (
        f"after {to} heads the description reads {after['description'][:160]!r}, its data {words.description[:160]!r}")
    heads = {int(h) for h in re.findall(r"\bhead (\d+)", after["description"])}
    assert heads and max(heads) == int(to), f"with {to} heads the description names heads {sorted(heads)}"
    said = _squash(region.inner_text())
    assert _squash(words.name) in said and _squash(after["description"]) in said, (
        f"the live region says {said[:160]!r}, not the new words")
    click_toggle_button(group, start)
    poll_until(lambda: _group_figure_node(page, ".mha-head-count"),
               lambda n: n["description"] == before["description"], timeout_s=timeout_s)
    return {"heads": [start, to], "before": before["description"][:160], "after": after["description"][:160],
            "seconds": round(waited, 2)}


#: Notebooks whose laptop run also checks that a control rewrites its figure's words.
LIVE_WORDS = {"03_multiple_heads": words_follow_head_count}


def check_outputs(page, notebook: str, result: dict) -> None:
    """axe-core finds nothing in the outputs, every figure is a named, described image, and (``LIVE_WORDS``)
    a control rewrites the words; counts go to ``result``."""
    violations = output_violations(page, notebook)
    figures = figure_words(page)
    result["axe_violations"] = len(violations)
    result["figures_described"] = sum(f["role"] == "image" and bool(f["description"]) for f in figures)
    result["figures"] = len(figures)
    assert not violations, f"axe-core: {len(violations)} WCAG 2.1 A/AA violations in the outputs:\n" + "\n".join(violations[:30])
    problems = words_problems(figures, notebook)
    assert not problems, f"{len(problems)} figures without their words in the accessibility tree:\n" + "\n".join(problems[:30])
    if notebook in LIVE_WORDS:
        result["live_words"] = LIVE_WORDS[notebook](page)
