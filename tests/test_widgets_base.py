"""The shared widget plumbing: one live figure per control group, updated in place."""

import json

import numpy as np
import plotly.graph_objects as go
import pytest

pytest.importorskip("ipywidgets")

from mha_classroom.widgets._base import figure_widget, update_in_place
from mha_core.figures._style import WIDGET_WIDTH


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


class Page:
    """What a live figure's view holds (``js/live_figure.js``): the figure its channel was made with, changed by each
    message the kernel sends on the channel (``apply_diff``, as ``js/diff.js`` does), as plain JSON."""

    def __init__(self, target):
        from mha_classroom.widgets._live_figure import jsonable

        self.messages, self.n = [], 0
        self.figure = jsonable(target._channel.figure)
        original = target._channel.send
        target._channel.send = lambda content, buffers=None: (self.heard(content), original(content, buffers))

    def heard(self, content):
        from mha_classroom.widgets._plain import apply_diff

        self.messages.append(content)
        content = json.loads(json.dumps(content, allow_nan=False))  # strict JSON, as it travels
        if "diff" in content:
            assert content["n"] == self.n + 1
            self.figure = apply_diff(self.figure, content["diff"])
        elif "figure" in content:
            self.figure = content["figure"]
        self.n = content["n"]

    @property
    def data(self):
        return self.figure["data"]

    @property
    def layout(self):
        return self.figure["layout"]


def test_every_change_reaches_the_page_as_one_diff_in_one_message():
    # The page applies it to the figure it holds and draws that whole (Plotly.react); a late view asks for the whole.
    target = figure_widget(bars([1, 2, 3]))
    page = Page(target)
    own = []
    target.send_state = lambda key=None: own.append(key)
    target.send = lambda *args, **kwargs: own.append(args)
    update_in_place(target, bars([3, 2, 1], title="new"))
    assert len(page.messages) == 1 and sorted(page.messages[0]) == ["diff", "n"]
    np.testing.assert_array_equal(np.asarray(page.data[0]["y"]), [3, 2, 1])
    assert page.layout["title"]["text"] == "new"
    assert page.layout["xaxis"]["type"] == "category"  # the whole layout, axis types with it
    assert "x" not in json.dumps(page.messages[0]["diff"]["u"]["data"])  # only what changed travels
    # Nothing goes to the anywidget itself (anywidget may drop it).
    assert own == []
    update_in_place(target, bars([3, 2, 1], title="new"))
    assert len(page.messages) == 1  # nothing changed: nothing sent


def test_a_view_that_asks_gets_the_whole_figure_and_one_that_saw_every_change_gets_nothing():
    target = figure_widget(bars([1, 2, 3], title="a"))
    page = Page(target)
    target._on_page_message(target._channel, {"want": 0}, [])
    assert page.messages == []  # nothing changed since the channel was made
    update_in_place(target, bars([3, 2, 1], title="b"))
    target._on_page_message(target._channel, {"want": 1}, [])
    assert len(page.messages) == 1
    target._on_page_message(target._channel, {"want": 0}, [])  # a view drawn late, from the channel's first state
    assert sorted(page.messages[-1]) == ["figure", "n"] and page.messages[-1]["n"] == 1
    assert page.layout["title"]["text"] == "b"


def test_a_fast_change_shows_in_the_page_what_the_checked_path_gives():
    # show_change skips plotly's validators; the page must still get what plotly's checked objects hold.
    from mha_classroom.widgets._plain import _plain

    def spec(y, title, extra=None):
        return {"data": [{"type": "bar", "x": [1, 2, 4], "y": np.asarray(y, dtype=float)}],
                "layout": {"title_text": title, "xaxis": {"type": "category"}, **(extra or {})}}

    fast, checked = figure_widget(spec([1, 2, 3], "a")), go.FigureWidget(spec([1, 2, 3], "a"))
    checked._mha_shown = _plain(spec([1, 2, 3], "a"))
    page = Page(fast)
    steps = [spec([3, 2, 1], "b", {"yaxis": {"range": [0, 4]}}), spec([3, 2, 1], "c"),  # a key added, then removed
             {"data": [{"type": "heatmap", "z": [[1, 2], [3, 4]]}], "layout": {"title_text": "d"}}]  # traces replaced
    for step in steps:
        update_in_place(fast, step)
        update_in_place(checked, step)
        want = checked.to_plotly_json()
        assert page.layout["title"] == want["layout"]["title"]
        assert ("range" in page.layout.get("yaxis", {})) == ("range" in want["layout"].get("yaxis", {}))
        assert [t["type"] for t in page.data] == [t["type"] for t in want["data"]]
        for shown, held in zip(page.data, checked.data):
            for key in ("x", "y", "z"):
                if key not in held:  # a bar has no z
                    assert key not in shown
                    continue
                assert (key in shown) == (held[key] is not None)
                if held[key] is not None:
                    np.testing.assert_array_equal(np.asarray(shown[key], dtype=float), np.asarray(held[key], dtype=float))


def test_the_python_figure_catches_up_when_read_and_a_later_python_change_keeps_the_page_whole():
    target = figure_widget(bars([1, 2, 3], title="a"))
    update_in_place(target, bars([3, 2, 1], title="b"))
    assert target._checked_shows is not target.shown  # nothing checked yet
    page = Page(target)
    page.figure = json.loads(json.dumps(target.shown, default=list))  # the page has every change so far
    page.n = 1
    np.testing.assert_array_equal(target.data[0].y, [3, 2, 1])  # reading catches up, with no message
    assert target.layout.title.text == "b" and target.to_dict()["layout"]["title"]["text"] == "b"
    assert target._checked_shows is target.shown and page.messages == []
    target.update_layout(xaxis_title_text="tokens")  # a change made in Python: to the page, the figure kept whole
    assert page.layout["title"]["text"] == "b"
    assert page.layout["xaxis"]["title"]["text"] == "tokens"
    np.testing.assert_array_equal(np.asarray(page.data[0]["y"]), [3, 2, 1])


def test_a_fast_change_never_changes_the_spec_it_came_from():
    from mha_classroom.widgets._plain import _plain

    target = figure_widget(bars([1, 2, 3], title="a"))
    page = Page(target)
    first = {"data": [{"type": "bar", "x": [1, 2, 4], "y": [3, 2, 1]}], "layout": {"title": {"text": "b"}}}
    second = {"data": [{"type": "bar", "x": [1, 2, 4], "y": [1, 1, 1]}], "layout": {"title": {"text": "c"}}}
    kept = _plain(first)
    update_in_place(target, first)
    update_in_place(target, second)
    assert _plain(first) == kept and target._mha_shown["layout"]["title"]["text"] == "c"
    assert page.layout["title"] is not target._mha_shown["layout"]["title"]


def test_a_figure_travels_on_a_channel_opened_before_it_and_closed_with_it(monkeypatch):
    # anywidget drops every message to a model that missed its two-second start; ipywidgets' base model never does.
    import comm

    from mha_classroom.widgets._channel import Channel

    opened = []
    real = comm.create_comm
    monkeypatch.setattr(comm, "create_comm", lambda **kwargs: (opened.append(kwargs), real(**kwargs))[1])
    target = figure_widget(bars([1, 2, 3], title="first"))
    channel = target._channel
    assert isinstance(channel, Channel) and channel._model_module == "@jupyter-widgets/base"
    states = [c["data"]["state"] for c in opened]
    (at,) = [i for i, s in enumerate(states) if s.get("figure")]
    assert states[at]["figure"]["layout"]["title"]["text"] == "first"  # the whole figure with the channel's creation
    (own,) = [s for s in states if s.get("_channel")]
    assert own["_channel"] == f"IPY_MODEL_{channel.model_id}" and states.index(own) > at
    assert "figure" not in own and "data" not in own  # not sent twice
    target.close()
    assert channel.comm is None


def test_one_plotly_js_per_kernel_for_every_live_figure():
    from mha_classroom.widgets._live_figure import PLOTLY_JS, plotly_library

    first, second = figure_widget(bars([1])), figure_widget(bars([2]))
    assert first._esm == second._esm and len(first._esm) < 20_000  # the course's small view (js/live_figure.js with its save buttons), not plotly's 5 MB bundle
    assert plotly_library() is plotly_library()
    assert plotly_library().source == PLOTLY_JS.read_text(encoding="utf-8")


def test_a_figure_without_width_gets_the_widget_width():
    assert figure_widget(bars([1, 2, 3])).layout.width == WIDGET_WIDTH


def test_changing_the_number_of_traces_replaces_the_trace_list():
    target = figure_widget(bars([1, 2, 3]))
    two = go.Figure(data=[go.Bar(y=[1]), go.Scatter(y=[2])])
    update_in_place(target, two)
    assert [t.type for t in target.data] == ["bar", "scatter"]


def test_every_control_group_displays_its_box_sized_by_the_theme_it_was_built_with(monkeypatch):
    import IPython.display
    import ipywidgets as widgets

    from mha_classroom.widgets._base import THEMED_CLASS, ControlGroup, large_controls_box
    from mha_core import projector

    shown = []
    # Each group is shown with its keyboard helper (mha_classroom.widgets._keys) as a second output; keep the boxes.
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.extend(
        o for o in objs if "mha-keys-helper" not in getattr(o, "_dom_classes", ())))
    inner = widgets.VBox([widgets.IntSlider()])

    class Group(ControlGroup):
        box = inner
        theme = projector.PROJECTOR  # built under the projector theme (the laptop one is in use now)

    Group()._ipython_display_()
    (outer,) = shown
    assert THEMED_CLASS in outer._dom_classes and outer.children[1] is inner
    style = outer.children[0].value
    assert "--jp-widgets-font-size: 20px" in style and f".{THEMED_CLASS} .widget-readout" in style, style

    # A group whose box already carries the sizes is shown as it is, once.
    already = large_controls_box(widgets.IntSlider(), theme=projector.LAPTOP)

    class Sized(ControlGroup):
        box = already
        theme = projector.LAPTOP

    Sized()._ipython_display_()
    assert shown[1] is already
    assert "--jp-widgets-font-size" not in already.children[0].value  # laptop: ipywidgets' own rows, 16 px text


def every_control_group():
    """Each control group of notebooks 00-05, built as its notebook builds it, at its largest setting."""
    from mha_classroom.widgets.heads import head_grid
    from mha_classroom.widgets.projection import head_switches
    from mha_classroom.widgets.qkv import token_explorer
    from mha_classroom.widgets.single_head import mask_explorer, scaling_explorer
    from mha_classroom.widgets.sizing import head_sizing
    from mha_classroom.widgets.welcome import smoke_check
    from mha_core.examples import TOKENS, single_head_example

    x, (w_q, w_k, w_v), (q, k, v) = single_head_example()
    return {
        "00 smoke check": smoke_check(),
        "01 token explorer": token_explorer(q, k, v, TOKENS),
        "02 scaling": scaling_explorer(512),
        "02 mask (padding: 8 rows)": mask_explorer(x, w_q, w_k, w_v, TOKENS, mode="padding"),
        "03 head grid (16 heads)": head_grid(16, 16),
        "04 head switches": head_switches(),
        "05 sizing": head_sizing(4096, 13, 4096),
    }


def test_every_live_figure_fits_beside_its_controls_on_a_1280_by_800_screen_with_the_file_browser_open():
    from mha_core.figures._style import SCREEN_HEIGHT, TITLE_CHARS

    for name, group in every_control_group().items():
        layout = group.figure.layout
        assert layout.width <= WIDGET_WIDTH <= 820, name
        assert layout.height <= SCREEN_HEIGHT - 60, name  # at least one row of controls above it
        lines = layout.title.text.split("<br>")
        assert all(len(line) <= TITLE_CHARS for line in lines), f"{name}: a title line runs off the figure: {lines}"


def test_a_spec_with_plotlys_shorthand_changes_only_what_differs_and_never_drops_a_title():
    # A builder's spec may write title_text=...; the figure shown holds title: {text: ...}. They are the same.
    from mha_core.figures._style import base_layout
    from mha_core.projector import LAPTOP

    def spec(y):
        return {"data": [{"type": "bar", "x": [1, 2, 3], "y": y}],
                "layout": base_layout("t", theme=LAPTOP, xaxis={"title_text": "key token", "type": "category"})}

    from mha_classroom.widgets._plain import _plain, figure_diff

    target = figure_widget(spec([1, 2, 3]))
    page = Page(target)
    shown_layout = {k: v for k, v in target.shown["layout"].items() if k != "width"}  # the width figure_widget gave
    assert figure_diff(shown_layout, _plain(spec([3, 2, 1]))["layout"]) is None
    assert figure_diff(target._mha_shown["data"][0], _plain(spec([3, 2, 1]))["data"][0]) == {"s": {"y": [3, 2, 1]}}
    update_in_place(target, spec([3, 2, 1]))
    assert target.layout.xaxis.title.text == "key token"
    assert page.layout["xaxis"]["title"]["text"] == "key token"


def test_a_spec_naming_the_first_axis_xaxis1_updates_that_axis_and_keeps_it():
    def spec(y):
        return {"data": [{"type": "bar", "x": ["a", "b"], "y": y}],
                "layout": {"xaxis1": {"domain": [0, 0.5], "type": "category"}, "template": {}}}

    target = figure_widget(spec([1, 2]))
    update_in_place(target, spec([2, 1]))
    assert tuple(target.layout.xaxis.domain) == (0, 0.5) and target.layout.xaxis.type == "category"


def test_an_unvalidated_figure_with_plotlys_shorthand_never_drops_a_title():
    # go.Figure(..., _validate=False) keeps title_text as written; the figure shown holds title: {text}.
    def built(y):
        return go.Figure(data=[{"type": "bar", "x": [1, 2, 3], "y": y}],
                         layout={"xaxis": {"title_text": "step"}, "yaxis": {"title_text": "share of weight"}}, _validate=False)

    target = figure_widget(go.Figure(built([1, 2, 3]).to_dict()))
    update_in_place(target, built([3, 2, 1]))
    assert target.layout.xaxis.title.text == "step" and target.layout.yaxis.title.text == "share of weight"
    np.testing.assert_array_equal(target.data[0].y, [3, 2, 1])


def test_a_remembered_builder_builds_each_setting_once_and_shows_it_again_as_a_fresh_build_would(monkeypatch):
    from mha_classroom.widgets import heads

    built = []
    real = heads.head_grid_spec
    monkeypatch.setattr(heads, "head_grid_spec", lambda *a, **k: (built.append(k["title"][:5]), real(*a, **k))[1])
    grid = heads.head_grid(16, 4)
    for h in (8, 2, 8, 4, 2, 8):
        grid.head_count.value = h
    assert built == ["H = 4", "H = 8", "H = 2"]  # each head count built once
    fresh = heads.head_grid(16, 8)  # a new group, built at 8 heads
    page, fresh_page = Page(grid.figure), Page(fresh.figure)
    grid.figure._on_page_message(grid.figure._channel, {"want": 0}, [])  # the whole figure, as a view drawn now gets it
    assert page.layout == fresh_page.layout
    assert len(page.data) == len(fresh_page.data)
    for shown, want in zip(page.data, fresh_page.data):
        assert shown.keys() == want.keys()
        for key in shown.keys() - {"uid"}:  # plotly's random trace ids
            np.testing.assert_equal(np.asarray(shown[key], dtype=object), np.asarray(want[key], dtype=object))


def test_a_last_frame_drawn_without_words_gets_its_words_in_a_message_of_their_own():
    # 06 and 09 draw a training run's frames without words (a screen reader would read each one); the finished
    # run's figure is often the last frame itself: no diff, but its words must still reach the page.
    target = figure_widget(bars([1, 2, 3], title="a"))
    page = Page(target)
    first = {"name": "a", "description": "one, two, three"}
    target.show(bars([1, 2, 3], title="a"), words=first)
    assert page.messages == [{"n": 0, "words": first}]  # words alone, for the drawing shown
    target.show(bars([3, 2, 1], title="a"))  # a frame, no words
    target.show(bars([3, 2, 1], title="a"), words=first)  # the same words as the page holds: nothing to say
    assert len(page.messages) == 2
    last = {"name": "a", "description": "three, two, one"}
    target.show(bars([3, 2, 1], title="a"), words=last)
    assert page.messages[-1] == {"n": 1, "words": last} and page.n == 1
