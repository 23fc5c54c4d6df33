"""The projector theme: one switch to projector sizes and back, light to import, read by the builders."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mha_core
from mha_core import projector

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def laptop_theme_after():
    """Every test leaves the theme as it found it (the laptop sizes)."""
    before, style = projector.theme(), projector._style_widget
    yield
    projector._current, projector._style_widget = before, style


def _python(code: str, **env) -> dict:
    """Run ``code`` in a fresh interpreter (this worktree first on the path); it prints one JSON line."""
    environ = {k: v for k, v in os.environ.items() if k != projector.PRESENTER_ENV}
    environ.update(PYTHONPATH=str(ROOT), **env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_presenter_switches_to_projector_sizes_and_back():
    assert projector.theme() == projector.LAPTOP
    on = mha_core.presenter(True)
    assert on is projector.theme() is projector.PROJECTOR and projector.enabled()
    assert min(on.font_size, on.title_size, on.cell_text_size, on.control_font_size) >= 20
    off = mha_core.presenter(False)
    assert off is projector.theme() is projector.LAPTOP and not projector.enabled()
    assert off.font_size == 16


def test_projector_sizes_are_larger_than_laptop_sizes_in_every_field():
    for field in ("font_size", "title_size", "cell_text_size", "control_font_size", "control_height", "slider_handle_size"):
        assert getattr(projector.PROJECTOR, field) > getattr(projector.LAPTOP, field), field


def test_presenter_refuses_anything_but_true_or_false():
    with pytest.raises(TypeError, match="on must be True or False; got 'yes'"):
        mha_core.presenter("yes")
    assert projector.theme() == projector.LAPTOP


def test_importing_the_module_does_not_hide_the_function():
    # A module named mha_core.presenter would replace the function on first import; projector cannot.
    import mha_core.projector  # noqa: F401

    assert callable(mha_core.presenter)
    assert mha_core.presenter is projector.presenter


def test_import_stays_light_and_presenter_loads_no_plotly_or_ipywidgets():
    loaded = _python(
        "import sys, json, mha_core; mha_core.presenter(True); "
        "print(json.dumps({m: m in sys.modules for m in ('plotly', 'ipywidgets', 'torch')}))"
    )
    assert loaded == {"plotly": False, "ipywidgets": False, "torch": False}


@pytest.mark.parametrize("value, projector_on", [("1", True), ("0", False), ("", False)])
def test_the_environment_variable_is_read_at_import(value, projector_on):
    state = _python("import json, mha_core.projector as p; print(json.dumps(p.enabled()))",
                    **{projector.PRESENTER_ENV: value})
    assert state is projector_on


def test_controls_css_is_empty_for_the_laptop_and_sizes_every_control_for_the_projector():
    assert projector.controls_css(projector.LAPTOP) == ""
    css = projector.controls_css(projector.PROJECTOR)
    assert css.startswith("<style>") and css.endswith("</style>")
    assert "--jp-widgets-font-size: 20px" in css
    assert "--jp-widgets-slider-handle-size: 26px" in css
    assert ".widget-toggle-button" in css and ".widget-readout" in css


# --------------------------------------------------------------------------- builders read the theme


def test_base_layout_and_weight_cells_follow_the_theme():
    pytest.importorskip("plotly")
    from mha_core.figures._style import base_layout, weights_heatmap_trace

    weights = np.full((2, 2), 0.5)
    assert base_layout("t")["font"]["size"] == 16
    assert weights_heatmap_trace(weights, "ab", "ab")["textfont"]["size"] == 16
    mha_core.presenter(True)
    layout = base_layout("t")
    assert layout["font"]["size"] == 20 and layout["title"]["font"]["size"] == 24
    assert weights_heatmap_trace(weights, "ab", "ab")["textfont"]["size"] == 20
    mha_core.presenter(False)
    assert base_layout("t")["font"]["size"] == 16


def test_a_live_control_built_under_the_projector_theme_draws_projector_sizes():
    pytest.importorskip("ipywidgets")
    from mha_core.widgets.heads import head_grid

    mha_core.presenter(True)
    grid = head_grid(d_model=16, n_heads=4, seed=0)
    assert grid.figure.layout.font.size == 20
    assert grid.figure.layout.title.font.size == 24
    grid.head_count.value = 8  # a moved control keeps the theme it was built with
    assert grid.figure.layout.font.size == 20
    assert len(grid.figure.layout.annotations) == 8


def test_messages_beside_a_control_use_the_control_font_size():
    pytest.importorskip("ipywidgets")
    from mha_core.widgets._base import message_box, show_message

    box = message_box()
    show_message(box, "n_heads=5 does not divide d_model=16")
    assert "font-size:16px" in box.value
    mha_core.presenter(True)
    show_message(box, "n_heads=5 does not divide d_model=16")
    assert "font-size:20px" in box.value


def test_in_a_notebook_presenter_puts_one_style_on_the_page_and_empties_it_when_switched_off(monkeypatch):
    pytest.importorskip("ipywidgets")
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())  # as if inside a kernel
    monkeypatch.setattr(IPython.display, "display", shown.append)
    monkeypatch.delenv("MHA_COURSE_STATIC", raising=False)
    projector._style_widget = None

    mha_core.presenter(True)
    (style,) = shown
    assert style.value == projector.controls_css(projector.PROJECTOR)
    mha_core.presenter(False)
    assert style.value == "" and len(shown) == 1  # the same element, emptied: controls shrink back
    mha_core.presenter(True)
    assert style.value == projector.controls_css(projector.PROJECTOR)


def test_static_handouts_get_no_style_widget(monkeypatch):
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", shown.append)
    monkeypatch.setenv("MHA_COURSE_STATIC", "1")
    projector._style_widget = None
    assert mha_core.presenter(True) is projector.PROJECTOR
    assert shown == []
