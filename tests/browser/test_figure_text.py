"""Every live figure, in every setting its controls offer, read in Chromium at both theme sizes.

For each control group in ``benchmarks/controls_registry.py`` (the table of every live
control the course has) and each theme (``LAPTOP``, ``PROJECTOR``), the group is built as
its notebook builds it, then every control is moved through every value the registry
lists, one at a time. After each move the group's figure is drawn in a bare page with
plotly.js (no JupyterLab, no network; ``page_text.standalone_page``) and read back: no
text may be smaller than the theme's ``min_text_size`` (14 px on a laptop, 20 px on a
projector), no two texts may print over each other, and no text may run past the
figure's edge. JupyterLab's own run of each notebook (``test_browser.py``, at laptop size and
then presenting, ``presenting.py``) then checks the figures and controls together in the page.

The smallest size and the number of states read go to ``artifacts/browser/figure_text.json``.
"""

from __future__ import annotations

import json
import sys

import pytest
from browser_config import ARTIFACTS, REPO
from browser_config import fail_or_skip as _fail_or_skip
from browser_config import missing_tools
from lab_page import chromium

import page_text

sys.path.insert(0, str(REPO))
from benchmarks.bench_controls import _option_values, resolve  # noqa: E402
from benchmarks.controls_registry import GROUPS  # noqa: E402
from mha_core import projector  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]
THEMES = {"laptop": projector.LAPTOP, "projector": projector.PROJECTOR}
RESULTS: dict[str, dict] = {}


@pytest.fixture(scope="module")
def figure_page(tmp_path_factory):
    problems = missing_tools()
    if problems:
        _fail_or_skip("; ".join(problems))
    work = tmp_path_factory.mktemp("figure-text")
    with chromium(work) as context:
        yield page_text.standalone_page(context, work / "page")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / "figure_text.json").write_text(json.dumps(RESULTS, indent=1, sort_keys=True))


def settings(group):
    """The group built as its notebook builds it, then each control through each listed value, one at a time;
    yields a label for each state (the control is put back before the next one moves)."""
    built = group.build()
    yield built, "default"
    for attribute, values in group.controls.items():
        control = resolve(built, attribute)
        start = control.value
        for value in (_option_values(control) if values is None else values):
            control.value = value
            yield built, f"{attribute} = {value!r}"
        control.value = start


@pytest.fixture
def theme_in_use():
    before = projector.theme()
    yield
    projector._current = before


@pytest.mark.parametrize("theme_name", list(THEMES))
@pytest.mark.parametrize("name", list(GROUPS))
def test_every_setting_of_a_live_figure_is_readable(name, theme_name, figure_page, theme_in_use):
    theme = THEMES[theme_name]
    projector._current = theme  # what presenter() sets; the group reads it once, when built
    group = GROUPS[name]
    found, smallest, states = [], None, 0
    for built, label in settings(group):
        page_text.draw(figure_page, getattr(built, group.figure).to_dict())
        problems = page_text.text_problems(figure_page, theme.min_text_size)
        states += 1
        if problems["smallest"] is not None:
            smallest = problems["smallest"] if smallest is None else min(smallest, problems["smallest"])
        found += [f"{label}: {line}" for line in page_text.failures(problems)]
    RESULTS[f"{name} ({theme_name})"] = {"states": states, "smallest_px": smallest, "problems": len(found)}
    assert not found, (f"{name} at {theme_name} sizes (at least {theme.min_text_size} px), {len(found)} problems in "
                       f"{states} settings:\n" + "\n".join(found[:40]))
