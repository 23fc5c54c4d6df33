"""What the course has shown follows ``presenter``: figures, control groups and quick checks restyled in place.

``presenter(True)`` in a notebook builds every builder's figure, control group and quick check already shown
again in the projector's sizes, where it stands, without running a cell (``mha_classroom._theme``). These tests
call the same functions a kernel does, with IPython's ``display``/``update_display`` recorded.
"""

from __future__ import annotations

import IPython.display
import numpy as np
import plotly.graph_objects as go
import pytest

from mha_classroom import _theme
from mha_classroom.quiz import progress_view, quick_check
from mha_classroom.widgets import _words
from mha_classroom.widgets.heads import head_grid
from mha_classroom.widgets.sizing import head_sizing
from mha_core import projector
from mha_core.figures._style import AGAIN, add_reference_line
from mha_core.figures.qkv import score_table_figure
from mha_core.figures.sizing import vaswani_figure

TOKENS = ["the", "cache", "key", "changed"]
PLOTLY = "application/vnd.plotly.v1+json"


@pytest.fixture(autouse=True)
def laptop_and_nothing_shown(monkeypatch):
    """Each test starts at the laptop sizes with nothing shown, and leaves the module state as it found it."""
    monkeypatch.setattr(projector, "_current", projector.LAPTOP)
    monkeypatch.setattr(projector, "_followers", [])
    monkeypatch.setattr(projector, "_show_controls_css", lambda: None)  # no page to style here
    monkeypatch.setattr(_theme, "_shown", [])
    monkeypatch.delenv("MHA_COURSE_STATIC", raising=False)


@pytest.fixture
def page(monkeypatch):
    """What the kernel sends: ``shown`` (display) and ``updated`` (update_display), as (object, keywords)."""
    import plotly.io as pio

    monkeypatch.setattr(pio.renderers, "default", "plotly_mimetype")
    record = {"shown": [], "updated": []}
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: record["shown"].append((objs[0], kw)))
    monkeypatch.setattr(IPython.display, "update_display", lambda obj, **kw: record["updated"].append((obj, kw)))
    return record


def title_px(bundle) -> float:
    return bundle[PLOTLY]["layout"]["title"]["font"]["size"]


def test_a_builders_figure_can_be_built_again_under_the_theme_in_use():
    scores = np.arange(16.0).reshape(4, 4)
    fig = score_table_figure(scores, TOKENS, TOKENS)
    scores[0, 0] = 99.0  # changed in place after building: the figure built again shows what was drawn
    projector._current = projector.PROJECTOR
    again = getattr(fig, AGAIN)()
    assert again.layout.title.font.size == projector.PROJECTOR.title_size > fig.layout.title.font.size
    assert np.array_equal(np.asarray(again.data[0].z), np.asarray(fig.data[0].z))
    assert again.data[0].z[0][0] == 0.0


def test_a_theme_passed_in_stays_when_built_again():
    fig = vaswani_figure(theme=projector.LAPTOP)
    projector._current = projector.PROJECTOR
    assert getattr(fig, AGAIN)().layout.title.font.size == projector.LAPTOP.title_size


def test_a_figure_a_builder_drew_on_is_built_again_first():
    fig = add_reference_line(vaswani_figure(), 0.5, "a line")
    projector._current = projector.PROJECTOR
    again = getattr(fig, AGAIN)()
    assert again.layout.title.font.size == projector.PROJECTOR.title_size  # the figure under the line
    assert again.layout.annotations[-1].font.size == projector.PROJECTOR.small_text_size  # and the line's label
    assert len(again.layout.shapes) == len(fig.layout.shapes)


def test_a_shown_figure_follows_the_switch_in_place(page):
    _words.show_figure(score_table_figure(np.eye(4), TOKENS, TOKENS))
    (bundle, how), (words, told) = page["shown"]
    assert title_px(bundle) == projector.LAPTOP.title_size
    projector.presenter(True)
    (blank, blank_how), (new, new_how), (new_words, new_told) = page["updated"]
    assert blank == {"text/plain": ""} and blank_how["display_id"] == how["display_id"]  # has JupyterLab draw anew
    assert new_how["display_id"] == how["display_id"] and new_told["display_id"] == told["display_id"]
    assert title_px(new) == projector.PROJECTOR.title_size
    assert new[PLOTLY]["data"][0]["z"] == bundle[PLOTLY]["data"][0]["z"]  # the same numbers
    assert "{px: 20}" in new_words.data and "{px: 16}" in words.data  # the save buttons at the control size
    projector.presenter(False)
    assert title_px(page["updated"][-2][0]) == projector.LAPTOP.title_size  # and back


def test_a_figure_of_the_learners_own_keeps_its_sizes(page):
    _words.show_figure(go.Figure(go.Bar(x=["a"], y=[1.0])))
    projector.presenter(True)
    assert page["updated"] == []


def test_a_shown_group_follows_the_switch_where_it_stands(page, monkeypatch):
    grid = head_grid(d_model=16, n_heads=4)
    monkeypatch.setattr("mha_classroom.widgets._base.show_keyboard_ready", lambda box: None)
    grid._ipython_display_()
    grid.head_count.value = 2  # the learner moved it: the restyled figure keeps 2 heads
    before = grid.figure.shown
    projector.presenter(True)
    after = grid.figure.shown
    assert grid.theme is projector.PROJECTOR and grid.head_count.value == 2
    assert after["layout"]["title"]["font"]["size"] == projector.PROJECTOR.title_size
    assert before["layout"]["title"]["font"]["size"] == projector.LAPTOP.title_size
    assert after["data"][0]["z"] == before["data"][0]["z"]  # the same weights, in larger type
    assert "16px" not in grid._shown_box.children[0].value and "20px" in grid._shown_box.children[0].value


def test_a_restyled_group_sizes_its_readout_for_the_new_theme(page, monkeypatch):
    sizing = head_sizing()
    monkeypatch.setattr("mha_classroom.widgets._base.show_keyboard_ready", lambda box: None)
    sizing._ipython_display_()
    assert "font-size:16px" in sizing.readout.value
    projector.presenter(True)
    assert "font-size:20px" in sizing.readout.value
    assert sizing.numbers.layout.min_height == f"{round(4 * 1.35 * 20)}px"


def test_a_shown_quick_check_and_progress_table_follow_the_switch(page, tmp_path):
    from mha_classroom.quiz.progress import ProgressStore

    quiz = quick_check("02", show=False, store=ProgressStore(tmp_path / "p.json"))
    quiz._ipython_display_()
    table = progress_view.ProgressView(store=ProgressStore(tmp_path / "p.json"))
    table._ipython_display_()
    assert "font-size: 18px" in quiz.header.value
    projector.presenter(True)
    assert "font-size: 20px" in quiz.header.value and "Quick check 02" in quiz.header.value
    assert "font-size: 20px" in table.box.children[0].value and "font-size:20px" in table.table.value


def test_one_thing_that_cannot_be_restyled_leaves_the_rest_and_is_counted(page, capsys):
    def broken(theme):
        raise RuntimeError("gone")

    _theme.keep(broken, "a broken thing")
    _words.show_figure(vaswani_figure())
    projector.presenter(True)
    assert len(page["updated"]) == 3  # the figure (a blank, then the figure) and its words, despite the broken one
    said = capsys.readouterr().out
    assert "1 of the 2 figures and controls shown could not be built again in the projector sizes" in said
    assert "a broken thing (RuntimeError: gone)" in said


def test_follow_takes_a_callable_once():
    calls = []
    projector.follow(calls.append)
    projector.follow(calls.append)
    projector.presenter(True)
    assert calls == [projector.PROJECTOR]
    with pytest.raises(TypeError, match="callback must be callable"):
        projector.follow("not a function")


def test_a_training_group_restyles_its_last_run_without_training_again():
    from types import SimpleNamespace

    import ipywidgets as widgets

    from mha_classroom.widgets._base import TrainingGroup

    class Trained(TrainingGroup):
        def __init__(self):
            self.theme, self.status, self.shown, self.trainings = projector.LAPTOP, widgets.HTML(), [], 0
            self.result = SimpleNamespace(config=SimpleNamespace(max_steps=3))

        def _models(self):  # training again would count here
            self.trainings += 1
            return (lambda config: False), None

        def _show(self, result, config, *, cached):
            self.shown.append((result, config, self.theme))
            self._show_status("trained: a new line")

    group = Trained()
    group._show_status("(from the cache) 3 heads")
    group.restyle(projector.PROJECTOR)
    assert group.shown == [(group.result, group.result.config, projector.PROJECTOR)] and group.trainings == 0
    assert "(from the cache) 3 heads" in group.status.value and "font-size:20px" in group.status.value
