"""Tests for mha_classroom.widgets.induction, headless: set a control, the figure equals what the package computes."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from mha_classroom.widgets.induction import MAX_BUDGET, HeadOff, LiveInduction, history_figure  # noqa: E402
from mha_core.figures.induction import ablation_figure  # noqa: E402
from mha_core.models import induction  # noqa: E402
from mha_core.models.induction import InductionConfig, trained_induction  # noqa: E402
from mha_core.models.induction_analysis import ablation_effects  # noqa: E402

STEPS = 30  # short budgets: the wiring is under test here, not the training


def same_figure(widget, built):
    assert len(widget.data) == len(built.data)
    for shown, want in zip(widget.data, built.data):
        for key in ("x", "y"):
            a, b = getattr(shown, key, None), getattr(want, key, None)
            if b is None:
                continue
            try:
                assert np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), equal_nan=True), key
            except ValueError:  # category labels
                assert list(a) == list(b), key
    assert widget.layout.title.text == built.layout.title.text


@pytest.fixture()
def group():
    g = LiveInduction(seed=0, max_steps=STEPS)
    g.train()
    return g


def test_training_shows_the_history_it_trained(group):
    result = group.result
    assert result.config == InductionConfig(seed=0, max_steps=STEPS)
    same_figure(group.figure, history_figure(result, max_steps=STEPS))
    # The score panels carry every head's scores at every report, as training measured them.
    shown = {t.name: np.asarray(t.y, dtype=float) for t in group.figure.data}
    steps, previous, ind = result.score_history()
    assert np.allclose(shown["L1 H1"], previous[:, 0, 0]) and np.allclose(shown["L2 H2, induction"], ind[:, 1, 1])
    repeated = [p.repeated_half_loss for p in result.history[1:]]
    assert np.allclose(shown["loss, repeated half"], repeated)
    assert group.progress.value == STEPS and "seed 0" in group.status.value


def test_the_repeat_toggle_retrains_with_a_fixed_length_and_redraws_in_place(group):
    figure = group.figure
    group.repeat.value = "fixed"
    assert group.figure is figure
    assert group.result.config.repeat == "fixed"
    same_figure(group.figure, history_figure(trained_induction(InductionConfig(seed=0, repeat="fixed", max_steps=STEPS)),
                                             max_steps=STEPS))
    assert "fixed repeat length" in group.status.value


def test_a_cached_setting_does_not_train_again(group, monkeypatch):
    assert induction.is_cached(group.config())
    group.seed.value = "1"  # trains
    monkeypatch.setattr(induction, "train_induction", lambda *a, **k: pytest.fail("trained again"))
    group.seed.value = "0"
    assert "(from the cache)" in group.status.value


@pytest.mark.parametrize(("control", "value", "words"), [
    ("seed", "one", "seed"), ("max_steps", MAX_BUDGET + 1, "max_steps=2001 is more than this control allows"),
    ("max_steps", 0, "max_steps"),
])
def test_bad_settings_show_a_plain_message_and_keep_the_figure(group, control, value, words):
    before = [np.asarray(t.y, dtype=float).copy() for t in group.figure.data]
    getattr(group, control).value = value
    assert words in group.message.value
    assert all(np.allclose(a, np.asarray(t.y, dtype=float), equal_nan=True) for a, t in zip(before, group.figure.data))


@pytest.fixture(scope="module")
def switch():
    return HeadOff(trained_induction(InductionConfig(seed=0, max_steps=STEPS)))


@pytest.mark.parametrize("ablation", ["zero", "mean"])
@pytest.mark.parametrize("head", ["none", "L1 H1", "L1 H2", "L2 H1", "L2 H2"])
def test_the_head_off_buttons_show_what_the_package_measures(switch, head, ablation):
    switch.head.value, switch.ablation.value = head, ablation
    e = ablation_effects(switch.trained, ablation)
    if head == "none":
        off = (e.induction_on, e.repeat_loss_on)
    else:
        layer, h = int(head[1]) - 1, int(head[-1]) - 1
        off = (e.induction[layer, h], e.repeat_loss[layer, h])
    bars = [t for t in switch.figure.data if t.type == "bar"]
    assert np.allclose(bars[0].y, [e.induction_on, off[0]]) and np.allclose(bars[1].y, [e.repeat_loss_on, off[1]])
    label = "no head off" if head == "none" else f"{head} off ({ablation})"
    assert list(bars[0].x) == ["every head on", label]
    same_figure(switch.figure, ablation_figure(*switch.measured(), label=label, chance_induction=switch.chance))


def test_the_head_off_group_records_every_setting_for_a_handout(switch):
    from mha_classroom.widgets import _states

    before = (switch.head.value, switch.ablation.value)
    data = _states.record(switch)
    assert data["mode"] == "every" and len(data["states"]) == 5 * 2
    assert (switch.head.value, switch.ablation.value) == before  # back where it started
    for state in data["states"]:
        head, ablation = (c["values"][i] for c, i in zip(data["controls"], state["values"]))
        assert any(label.endswith(f"{head} off ({ablation})") or (head == "none" and label == "no head off")
                   for label in state["figure"]["data"][0]["x"])


def test_the_live_induction_group_records_both_repeat_settings_of_three_seeds():
    assert LiveInduction.handout_controls == {"repeat": ["varying", "fixed"], "seed": ["0", "1", "2"]}


def test_under_the_projector_theme_no_text_is_below_20_px():
    import mha_core

    mha_core.presenter(True)
    try:
        group = HeadOff(trained_induction(InductionConfig(seed=0, max_steps=STEPS)))
        live = LiveInduction(seed=0, max_steps=STEPS)
    finally:
        mha_core.presenter(False)
    group.head.value = "L2 H2"  # a redraw keeps the sizes the group was built with
    for figure in (group.figure, live.figure):
        spec = figure.to_plotly_json()
        sizes = [spec["layout"]["font"]["size"], spec["layout"]["title"]["font"]["size"]]
        sizes += [a["font"]["size"] for a in spec["layout"].get("annotations", []) if "font" in a]
        assert min(sizes) >= 20, sizes


def test_an_interrupt_stops_training_and_keeps_what_was_trained(monkeypatch):
    """Kernel > Interrupt during a run: the group keeps the model so far, draws it and says where it stopped."""
    import mha_classroom.widgets.induction as module

    group = LiveInduction(seed=3, max_steps=200)
    original = module.history_figure

    def figure_then_interrupt(history, **kwargs):
        figure = original(history, **kwargs)
        if isinstance(history, list) and history[-1].step == module.REDRAW_EVERY:
            raise KeyboardInterrupt  # as SIGINT arrives while the callback redraws
        return figure

    monkeypatch.setattr(module, "history_figure", figure_then_interrupt)
    group.train()
    assert group.result.interrupted and group.result.steps == module.REDRAW_EVERY
    assert f"stopped at step {module.REDRAW_EVERY} of 200 (interrupted)" in group.status.value
    assert not induction.is_cached(group.config())
    assert len(group.figure.data[0].y) == module.REDRAW_EVERY // 10  # the loss of every report so far
