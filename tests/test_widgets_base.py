"""The shared widget plumbing: one FigureWidget per control group, updated in place."""

import numpy as np
import plotly.graph_objects as go
import pytest

pytest.importorskip("ipywidgets")

from mha_core.figures._style import WIDGET_WIDTH
from mha_core.widgets._base import figure_widget, update_in_place


def bars(y, title="t", x_type="category"):
    return go.Figure(data=[go.Bar(x=[1, 2, 4], y=y)], layout=dict(title=dict(text=title), xaxis=dict(type=x_type)))


def test_update_in_place_changes_only_what_differs_and_keeps_the_object():
    target = figure_widget(bars([1, 2, 3]))
    trace = target.data[0]
    update_in_place(target, bars([3, 2, 1], title="new"))
    assert target.data[0] is trace
    np.testing.assert_array_equal(target.data[0].y, [3, 2, 1])
    assert target.layout.title.text == "new"
    assert target.layout.xaxis.type == "category"


def test_a_data_change_names_the_explicit_axis_types_for_the_browser():
    # plotly.js clears an axis type when a trace on it is restyled, unless the update names it.
    target = figure_widget(bars([1, 2, 3]))
    sent = []
    target.observe(lambda change: change["new"] and sent.append(change["new"]), names="_py2js_update")
    update_in_place(target, bars([3, 2, 1]))
    (message,) = sent
    np.testing.assert_array_equal(np.asarray(message["style_data"]["y"][0]), [3, 2, 1])
    assert message["layout_data"]["xaxis.type"] == "category"


def test_a_figure_without_width_gets_the_widget_width():
    assert figure_widget(bars([1, 2, 3])).layout.width == WIDGET_WIDTH


def test_changing_the_number_of_traces_replaces_the_trace_list():
    target = figure_widget(bars([1, 2, 3]))
    two = go.Figure(data=[go.Bar(y=[1]), go.Scatter(y=[2])])
    update_in_place(target, two)
    assert [t.type for t in target.data] == ["bar", "scatter"]


def test_every_control_group_displays_its_box(monkeypatch):
    import IPython.display

    from mha_core.widgets._base import ControlGroup

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))

    class Group(ControlGroup):
        box = "the box"

    Group()._ipython_display_()
    assert shown == ["the box"]
