"""Every figure a notebook draws, read in Chromium at one theme's sizes, without JupyterLab (a quick look).

    .venv/bin/python tests/browser/notebook_figure_text.py 03 --theme projector

runs the notebook top to bottom in a fresh kernel (``tools/handouts.execute``: static mode,
so each control group shows its figure at its default setting) with the theme switched on
through ``MHA_COURSE_PRESENTER``, draws every plotly output in a bare page
(``page_text.standalone_page``) and prints each figure's smallest text, overlapping texts and
texts cut at the figure's edge. The browser tests check the same in JupyterLab itself
(``test_browser.py`` at laptop size, ``presenting.py`` in Presentation Mode, on the same page); this is
the quick loop while fixing a figure. Exit status 1 when anything was found.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE), str(REPO), str(REPO / "tools")]

import page_text  # noqa: E402
from lab_page import chromium  # noqa: E402

PLOTLY_MIME = "application/vnd.plotly.v1+json"


def figures_of(nb) -> list[tuple[int, dict]]:
    """(cell index, plotly JSON) for every figure output of an executed notebook."""
    return [(i, out["data"][PLOTLY_MIME]) for i, cell in enumerate(nb.cells) if cell.cell_type == "code"
            for out in cell.get("outputs", ()) if PLOTLY_MIME in out.get("data", {})]


def main(argv=None) -> int:
    import handouts
    from mha_core import projector

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("notebooks", nargs="*", help="notebook numbers (00 .. 11); all when none")
    parser.add_argument("--theme", choices=("laptop", "projector"), default="projector")
    args = parser.parse_args(argv)
    theme = projector.PROJECTOR if args.theme == "projector" else projector.LAPTOP
    os.environ[projector.PRESENTER_ENV] = "1" if theme.projector else "0"
    found = 0
    with tempfile.TemporaryDirectory() as work, chromium(Path(work)) as context:
        page = page_text.standalone_page(context, Path(work) / "page")
        for path in handouts.notebooks(args.notebooks or None):
            nb = handouts.execute(path)
            for cell, figure in figures_of(nb):
                page_text.draw(page, figure)
                problems = page_text.text_problems(page, theme.min_text_size)
                lines = page_text.failures(problems)
                found += len(lines)
                title = ((figure.get("layout", {}).get("title") or {}).get("text") or "")[:60]
                print(f"{path.stem} cell {cell}: smallest {problems['smallest']} px, {len(lines)} problems  {title!r}")
                for line in lines[:12]:
                    print("    " + line)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
