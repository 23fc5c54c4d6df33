"""Tests for mha_core.widgets.toy, headless: set a control, the figure equals the builder's output."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from mha_core.figures.toy import ablation_figure  # noqa: E402
from mha_core.models import training  # noqa: E402
from mha_core.models.analysis import ablation_accuracy  # noqa: E402
from mha_core.models.training import TrainConfig, evaluation_batch, trained  # noqa: E402
from mha_core.widgets.toy import HeadSwitches, LiveTraining, history_figure, parse_seed  # noqa: E402

STEPS = 30  # short budgets: the widgets' wiring is under test here, not the training


def same_figure(widget, built):
    assert len(widget.data) == len(built.data)
    for shown, want in zip(widget.data, built.data):
        for key in ("x", "y", "z"):
            a, b = getattr(shown, key, None), getattr(want, key, None)
            if b is None:
                continue
            try:
                assert np.allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float)), key
            except ValueError:  # labels
                assert list(a) == list(b), key
    assert widget.layout.title.text == built.layout.title.text


@pytest.fixture()
def group():
    g = LiveTraining(n_heads=3, seed=0, max_steps=STEPS)
    g.train()
    return g


def test_training_shows_the_history_it_trained(group):
    result = trained(TrainConfig(n_heads=3, seed=0, max_steps=STEPS))
    assert group.result is result and group.progress.value == result.steps
    same_figure(group.figure, history_figure(result, group.relations, max_steps=STEPS))
    assert "3 head(s), seed 0" in group.status.value


def test_a_new_seed_retrains_and_redraws_in_place(group):
    figure = group.figure
    group.seed.value = "1"
    assert group.figure is figure
    result = trained(TrainConfig(n_heads=3, seed=1, max_steps=STEPS))
    same_figure(group.figure, history_figure(result, group.relations, max_steps=STEPS))


def test_a_new_head_count_redraws_one_panel_per_head(group):
    group.n_heads.value = 2
    assert len(group.figure.data) == 2 * 3
    same_figure(group.figure, history_figure(trained(TrainConfig(n_heads=2, seed=0, max_steps=STEPS)),
                                             group.relations, max_steps=STEPS))


def test_a_cached_setting_does_not_train_again(group, monkeypatch):
    group.seed.value = "1"
    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("trained again"))
    group.seed.value = "0"
    assert "from the cache" in group.status.value and group.result.config.seed == 0


@pytest.mark.parametrize(("control", "value", "words"), [
    ("seed", "1.5", "seed must be a whole number"),
    ("seed", "-2", "seed=-2 is negative"),
    ("seed", "two", "seed must be a whole number"),
    ("n_heads", 5, "n_heads=5 does not divide d_model=48; valid head counts are 1, 2, 3, 4, 6, 8"),
    ("max_steps", 0, "max_steps=0 is too small"),
    ("max_steps", -3, "max_steps=-3 is too small"),
])
def test_bad_settings_show_a_plain_message_and_keep_the_figure(group, control, value, words, monkeypatch):
    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("a bad setting trained"))
    before = [t.y for t in group.figure.data]
    getattr(group, control).value = value  # no exception
    assert words in group.message.value.replace("&#x27;", "'")
    assert "Traceback" not in group.message.value
    assert all(np.array_equal(a, t.y) for a, t in zip(before, group.figure.data))


def test_the_message_goes_away_once_the_setting_is_good_again(group):
    group.seed.value = "x"
    group.seed.value = "0"
    assert group.message.value == ""


def test_parse_seed():
    assert parse_seed(" 3 ") == 3
    with pytest.raises(TypeError, match="seed"):
        parse_seed("3.0")


def test_head_switches_show_the_ablation_of_the_unticked_heads():
    result = trained(TrainConfig(n_heads=3, seed=0, max_steps=STEPS))
    switches = HeadSwitches(result)
    batch = evaluation_batch()
    switches.switches[1].value = False
    expected = ablation_accuracy(result.model, batch, [1])
    same_figure(switches.figure, ablation_figure(expected, switches.relations, [True, False, True],
                                                 baseline=ablation_accuracy(result.model, batch, [])))
    for s in switches.switches:
        s.value = False
    assert "only the residual path" in switches.message.value
    assert np.allclose(switches.figure.data[0].y, ablation_accuracy(result.model, batch, [0, 1, 2]))
