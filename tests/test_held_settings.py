"""Settings the page holds: a group with ``hold_settings`` gives the page every setting's figure once, and then a
move switches the figure in the page by itself; the kernel hears the control's value and sends nothing back.

What goes to the page is recorded at ipywidgets' one way out (``Widget._send``), for every widget.
"""

from __future__ import annotations

import ipywidgets
import pytest

from mha_classroom import _theme
from mha_classroom.widgets import _states
from mha_classroom.widgets._live_figure import same_setting
from mha_classroom.widgets._plain import apply_diff, figure_diff
from mha_classroom.widgets.heads import HeadGrid, head_grid
from mha_classroom.widgets.projection import head_switches
from mha_classroom.widgets.sizing import head_sizing
from mha_core import projector


@pytest.fixture(autouse=True)
def laptop(monkeypatch):
    monkeypatch.setattr(projector, "_current", projector.LAPTOP)
    monkeypatch.setattr(projector, "_followers", [])
    monkeypatch.setattr(projector, "_show_controls_css", lambda: None)
    monkeypatch.setattr(_theme, "_shown", [])
    monkeypatch.delenv("MHA_COURSE_STATIC", raising=False)


@pytest.fixture
def sent(monkeypatch):
    """Every message a widget sends to the page: (widget, message)."""
    out = []
    original = ipywidgets.Widget._send

    def record(self, msg, buffers=None):
        out.append((self, msg))
        return original(self, msg, buffers)

    monkeypatch.setattr(ipywidgets.Widget, "_send", record)
    return out


def custom(sent, widget):
    return [m["content"] for w, m in sent if w is widget and m.get("method") == "custom"]


def test_the_page_holds_every_head_count_and_the_walk_sends_nothing(sent):
    group = head_grid(16, 4)
    figure = group.figure
    start = figure.shown
    sent.clear()  # what making the group sent
    assert _states.hold(group) == 5
    held = figure._channel.held
    assert held["controls"] == [{"model": f"IPY_MODEL_{group.head_count.model_id}", "trait": "index"}]
    by_index = {s["values"][0]: s for s in held["states"]}
    assert sorted(by_index) == [0, 1, 2, 3, 4]
    for index, heads in enumerate((1, 2, 4, 8, 16)):
        assert figure_diff(by_index[index]["figure"], group._build(heads)) is None  # what the kernel builds for it
        assert by_index[index]["words"]["name"].startswith(f"H = {heads} ")
    # The walk left the group where it was, and sent the page only the held settings.
    assert group.head_count.value == 4 and figure.shown is start
    assert custom(sent, figure._channel) == []
    assert [sorted(m["state"]) for w, m in sent if m.get("method") == "update" and w is figure._channel] == [["held"]]
    assert [(type(w).__name__, m["method"]) for w, m in sent] == [("ToggleButtons", "update"), ("FigureChannel", "update")]
    assert [m["state"] for w, m in sent if w is group.head_count] == [{"index": 2}]  # where it was: one message


def test_a_move_the_page_made_by_itself_sends_nothing_back(sent):
    group = head_grid(16, 4)
    _states.hold(group)
    figure = group.figure
    sent.clear()
    for heads in (8, 1, 16, 4):
        group.head_count.value = heads  # as the page's move arrives: the group's callback runs as before
        assert figure_diff(figure.shown, group._build(heads)) is None  # the kernel knows what is shown
    assert custom(sent, figure._channel) == []
    assert figure._spoken["name"].startswith("H = 4 ")  # the words the page gave its helper


def test_without_held_settings_each_move_is_a_message():
    group = head_grid(16, 4)
    messages = []
    group.figure._channel.send = messages.append
    group.head_count.value = 8
    assert len(messages) == 1 and "diff" in messages[0]


def test_a_change_the_page_does_not_hold_is_a_diff_from_the_setting_it_switched_to(sent):
    group = head_grid(16, 4)
    _states.hold(group)
    figure = group.figure
    group.head_count.value = 2  # the page switched to H = 2 by itself
    figure.update_layout(height=777)  # a change from Python that no setting holds
    [message] = custom(sent, figure._channel)
    [switched_to] = [s["figure"] for s in figure._channel.held["states"] if s["values"] == [1]]  # H = 2
    page = apply_diff(switched_to, message["diff"])
    assert page["layout"]["height"] == 777
    assert figure_diff(page, figure.shown) is None


def test_restyle_holds_the_settings_again_in_the_new_sizes(sent, monkeypatch):
    group = head_grid(16, 4)
    group._shown_box = ipywidgets.VBox([ipywidgets.HTML(""), group.box])  # as _show_live leaves it
    _states.hold(group)
    group.head_count.value = 8
    group.restyle(projector.PROJECTOR)
    def title_px(figure):
        return figure["layout"]["title"]["font"]["size"]

    assert title_px(group.figure.shown) == projector.PROJECTOR.title_size != projector.LAPTOP.title_size
    assert [title_px(s["figure"]) for s in group.figure._channel.held["states"]] == [projector.PROJECTOR.title_size] * 5
    assert group.head_count.value == 8
    [message] = custom(sent, group.figure._channel)  # the one restyle of what is shown
    assert "diff" in message


def test_a_group_with_more_settings_than_the_page_holds_keeps_the_kernels_changes(sent):
    group = head_switches(16, 8)  # 8 heads: 256 combinations of on and off
    assert _states.hold(group) == 0
    assert group.figure._channel.held == {}
    sent.clear()
    group.switches[0].value = False
    assert ["diff" in m for m in custom(sent, group.figure._channel)] == [True]


def test_a_group_of_few_settings_is_held_with_its_message_still_from_the_kernel(sent):
    group = head_switches(16, 4)
    assert _states.hold(group) == 16
    sent.clear()
    for box in group.switches:
        box.value = False  # every head off: the figure is the page's; the message line still comes from the kernel
    assert custom(sent, group.figure._channel) == []
    assert [m["state"] for w, m in sent if w is group.message][-1]["value"].startswith("<div")


def test_only_groups_that_say_so_hold_their_settings():
    assert HeadGrid.hold_settings is True
    assert type(head_sizing()).hold_settings is False  # hundreds of settings, and its readout changes on every move


def test_settings_compare_as_the_page_compares_them():
    assert same_setting([1, 0.5], [1, 0.5 + 1e-12])
    assert not same_setting([True], [1])
    assert not same_setting([0], [0, 1])
    assert not same_setting(None, [0])


def test_the_welcome_slider_is_held_step_by_step():
    from mha_classroom.widgets.welcome import SHARPNESS_RANGE, SHARPNESS_STEP, smoke_check

    group = smoke_check(1.0)
    steps = round((SHARPNESS_RANGE[1] - SHARPNESS_RANGE[0]) / SHARPNESS_STEP) + 1
    assert _states.hold(group) == steps == 17
    values = sorted(s["values"][0] for s in group.figure._channel.held["states"])
    assert values == [SHARPNESS_RANGE[0] + i * SHARPNESS_STEP for i in range(steps)]


def test_the_head_off_buttons_of_09_are_held_and_a_move_sends_nothing_back(sent):
    from mha_classroom.widgets.induction import HeadOff
    from mha_core.models.induction import InductionConfig, trained_induction

    group = HeadOff(trained_induction(InductionConfig(seed=0, max_steps=40)))
    group._ipython_display_()  # shown as the notebook shows it: the group gives the page its settings
    held = group.figure._channel.held
    assert len(held["states"]) == 5 * 2  # no head off or one of four, zero or mean
    assert [c["trait"] for c in held["controls"]] == ["index", "index"]
    sent.clear()
    for head, ablation in (("L2 H1", "mean"), ("none", "zero"), ("L1 H2", "zero")):
        group.head.value, group.ablation.value = head, ablation
        assert figure_diff(group.figure.shown, group._build(head, ablation)) is None
        label = "no head off" if head == "none" else f"{head} off ({ablation})"
        assert group.figure.shown["data"][0]["x"][-1] == label
    assert custom(sent, group.figure._channel) == []
