"""Every figure in JupyterLab can be saved as PNG and SVG, offline: the buttons under it (``save.js``).

``check(page, tmp)``: each drawn live figure (``.mha-live-figure``, a ``LiveFigure``'s view: plotly.js's own
``downloadImage``) and each static figure (a plot followed by its words, ``_words``: the file made from the
drawing) has its row of two buttons, outside the plot's image; the first figure of each kind saves both ways,
and the files are a PNG and an SVG. Returns what the browser report records: figures, the files' names and sizes.
"""

from __future__ import annotations

from pathlib import Path

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


#: Per kind of figure: its plots, and the save buttons of the first one (``{fmt}``: png or svg).
KINDS = {
    "live": (".mha-live-figure", ".mha-live-figure + .mha-save button[data-format='{fmt}']"),
    "static": (".jp-OutputArea-child:has(+ .jp-OutputArea-child .mha-figure-words[id]) .js-plotly-plot:not(.mha-live-figure)",
               ".jp-OutputArea-child:has(.mha-figure-words[id]) .mha-save button[data-format='{fmt}']"),
}
# (A static figure's words have an id, for the plot's aria-describedby; a control group's live regions,
# in its keyboard helper's output after the group, have none.)
#: A static figure's row is in the words' output, after the figure's own.
_ROWS = """([plots, kind]) => Array.from(document.querySelectorAll(plots)).map(plot => {
    const row = kind === 'live' ? plot.parentElement.querySelector(':scope > .mha-save')
        : plot.closest('.jp-OutputArea-child').nextElementSibling.querySelector('.mha-save');
    return {buttons: row ? Array.from(row.querySelectorAll('button')).map(b => b.textContent) : [],
            inside_image: !!plot.querySelector('.mha-save')};
})"""


def _save(page, button_selector: str, fmt: str, target: Path) -> dict:
    button = page.locator(button_selector.format(fmt=fmt)).first
    button.scroll_into_view_if_needed(timeout=10_000)
    with page.expect_download(timeout=30_000) as info:
        button.click()
    info.value.save_as(target)
    data = target.read_bytes()
    saved = {"file": info.value.suggested_filename, "bytes": len(data)}
    if fmt == "png":
        assert data.startswith(PNG_MAGIC) and len(data) > 5_000, f"not a PNG image: {saved}"
    else:
        assert data.lstrip().startswith(b"<svg") and b"</svg>" in data, f"not an SVG image: {saved}"
    assert saved["file"].endswith("." + fmt), saved
    return saved


def check(page, tmp: Path) -> dict:
    report = {}
    for kind, (plots, buttons) in KINDS.items():
        rows = page.evaluate(_ROWS, [plots, kind])
        bad = [(i, r) for i, r in enumerate(rows, start=1)
               if r != {"buttons": ["Save as PNG", "Save as SVG"], "inside_image": False}]
        assert not bad, f"{kind} figures without their save buttons (figure, what it has): {bad}"
        saved = {}
        if rows:
            tmp.mkdir(parents=True, exist_ok=True)
            saved = {fmt: _save(page, buttons, fmt, tmp / f"{kind}.{fmt}") for fmt in ("png", "svg")}
        report[kind] = {"figures": len(rows), "saved": saved}
    return report
