"""One switch, the environment variable or ``presenter(True)``, sizes figures, controls and quick checks alike."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from mha_core import projector

ROOT = Path(__file__).resolve().parents[1]

#: Builds a live control group and a quick check in a fresh interpreter, "displays" them, and prints what
#: the page would get: the figure's base font, the control group's styles and the quiz's text size.
PROBE = r"""
import json, IPython.display
shown = []
IPython.display.display = lambda *objs, **kw: shown.extend(objs)
import mha_core
if SWITCH == "call":
    mha_core.presenter(True)
from mha_classroom.quiz import _widget_parts
from mha_classroom.widgets.heads import head_grid
group = head_grid()
group._ipython_display_()
outer = next(o for o in shown if 'mha-large-controls' in getattr(o, '_dom_classes', ()))  # not the keyboard helper
print(json.dumps({"figure_font": group.figure.layout.font.size, "classes": list(outer._dom_classes),
                  "style": outer.children[0].value, "quiz_px": _widget_parts.font_px(),
                  "quiz_css": _widget_parts.css()}))
"""


def _probe(switch: str, env_value: str) -> dict:
    environ = {k: v for k, v in os.environ.items() if k not in (projector.PRESENTER_ENV, "MHA_COURSE_STATIC")}
    environ.update(PYTHONPATH=str(ROOT), **{projector.PRESENTER_ENV: env_value})
    out = subprocess.run([sys.executable, "-c", f"SWITCH = {switch!r}\n" + PROBE], capture_output=True, text=True,
                         env=environ, check=True, timeout=120)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("switch, env_value", [("env", "1"), ("call", "0")], ids=["MHA_COURSE_PRESENTER=1", "presenter(True)"])
def test_either_switch_sizes_the_figure_the_controls_and_the_quiz(switch, env_value):
    seen = _probe(switch, env_value)
    assert seen["figure_font"] == projector.PROJECTOR.font_size
    assert "mha-large-controls" in seen["classes"]
    style = seen["style"]
    assert f"--jp-widgets-font-size: {projector.PROJECTOR.control_font_size}px" in style, style
    assert f"--jp-widgets-inline-height: {projector.PROJECTOR.control_height}px" in style, style
    assert ".mha-large-controls .widget-toggle-button" in style and "!important" in style, style
    assert seen["quiz_px"] == 20 and "font-size: 20px" in seen["quiz_css"]
    assert "font-size: 18px" not in seen["quiz_css"]  # the hints too: never below the theme's smallest text


def test_without_a_switch_everything_keeps_laptop_sizes():
    seen = _probe("none", "0")
    assert seen["figure_font"] == projector.LAPTOP.font_size
    assert "--jp-widgets-font-size" not in seen["style"]  # ipywidgets' own rows; 16 px control text
    assert f"font-size: {projector.LAPTOP.control_font_size}px" in seen["style"]
    assert seen["quiz_px"] == 18 and "font-size: 16px" in seen["quiz_css"]  # hints at 0.9 x 18
