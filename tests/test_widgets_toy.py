"""Tests for mha_classroom.widgets.toy, headless: set a control, the figure equals the builder's output."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("torch")

from mha_classroom.widgets.toy import HeadSwitches, LiveTraining, history_figure, parse_seed  # noqa: E402
from mha_core.figures.toy import ablation_figure  # noqa: E402
from mha_core.models import training  # noqa: E402
from mha_core.models.analysis import ablation_accuracy  # noqa: E402
from mha_core.models.training import TrainConfig, evaluation_batch, trained  # noqa: E402

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
    np.testing.assert_array_equal(switches.heads_off, [False, True, False])
    same_figure(switches.figure, ablation_figure(expected, switches.relations, [False, True, False],
                                                 baseline=ablation_accuracy(result.model, batch, [])))
    for s in switches.switches:
        s.value = False
    assert "only the residual path" in switches.message.value
    assert np.allclose(switches.figure.data[0].y, ablation_accuracy(result.model, batch, [0, 1, 2]))


# --------------------------------------------------------------------------- axis titles, the budget's maximum, interrupts


def shown_title(figure, axis):
    """An axis title as the browser gets it: the plain figure the page shows (``LiveFigure.shown``), not the Python object."""
    return (figure.shown["layout"].get(axis) or {}).get("title", {}).get("text")


@pytest.mark.parametrize("n_heads", [3, 1])
def test_axis_titles_survive_training_and_a_new_head_count(group, n_heads):
    group.n_heads.value = n_heads  # 3: the same setting again (a redraw from the cache); 1: one panel
    assert len(group.figure.data) == 3 * n_heads
    assert group.figure.layout.xaxis.title.text == "step" and shown_title(group.figure, "xaxis") == "step"
    assert group.figure.layout.yaxis.title.text == "share of weight"
    assert shown_title(group.figure, "yaxis") == "share of weight"


def test_head_switches_keep_the_accuracy_title_after_a_click():
    switches = HeadSwitches(trained(TrainConfig(n_heads=3, seed=0, max_steps=STEPS)))
    switches.switches[0].value = False
    assert shown_title(switches.figure, "yaxis") == "accuracy"


def test_the_step_budget_has_a_maximum_and_says_so(group, monkeypatch):
    from mha_classroom.widgets.toy import MAX_BUDGET

    assert f"{MAX_BUDGET:,}" in group.max_steps.description
    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("an over-budget setting trained"))
    group.max_steps.value = MAX_BUDGET + 1
    message = group.message.value
    assert f"max_steps={MAX_BUDGET + 1}" in message and f"1 to {MAX_BUDGET:,}" in message
    assert "Interrupt" in message


def test_training_frames_are_drawn_without_their_words_and_the_finished_run_with_them(monkeypatch):
    # A screen reader announces the figure's words whenever they change: on every frame of a run it read about
    # 1,000 characters every few tenths of a second, and the learner's next key went unheard.
    import mha_classroom.widgets.toy as toy

    real_update, words = toy.update_in_place, []

    def spy(figure, built, **kw):
        words.append(kw.get("words", True))
        real_update(figure, built, **kw)

    monkeypatch.setattr(toy, "update_in_place", spy)
    LiveTraining(n_heads=1, seed=11, max_steps=23).train()  # a setting no other test trains (none cached)
    assert words.count(False) >= 2 and words[-1] is True and words.count(True) == 1, words


def test_an_interrupt_stops_training_and_keeps_what_was_trained(monkeypatch):
    import os
    import signal

    import mha_classroom.widgets.toy as toy

    real_update = toy.update_in_place
    sent = []

    def update_then_interrupt(figure, built, **kw):
        real_update(figure, built, **kw)
        if max(built.data[0].x) == 40 and not sent:
            sent.append(True)
            os.kill(os.getpid(), signal.SIGINT)  # Kernel > Interrupt, while the figure shows step 40

    monkeypatch.setattr(toy, "update_in_place", update_then_interrupt)
    group = LiveTraining(n_heads=1, seed=0, max_steps=400)
    group.train()  # no exception
    result = group.result
    assert result.interrupted and result.steps == 40 and group.progress.value == 40
    assert max(group.figure.data[0].x) == 40
    assert "stopped at step 40 of 400" in group.status.value and "Traceback" not in group.status.value
    assert not training.is_cached(result.config)
    assert shown_title(group.figure, "xaxis") == "step"


def test_interrupting_a_widget_callback_in_a_real_kernel_keeps_the_model():
    """The browser's path: a comm message changes the budget, training runs in the kernel, Kernel > Interrupt."""
    import time

    from jupyter_client.manager import KernelManager
    from kernel_run import run_in_kernel

    km = KernelManager(kernel_name="python3")
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)

        def run(code, timeout=120):
            return "".join(text if name != "error" else "ERROR " + text for name, text in run_in_kernel(kc, code, timeout))

        comm_id = run("from mha_classroom.widgets.toy import LiveTraining\n"
                      "g = LiveTraining(n_heads=1, seed=0, max_steps=20); g.train()\n"
                      "print(g.max_steps.comm.comm_id)").strip()
        assert "ERROR" not in comm_id
        update = {"method": "update", "state": {"value": 5000}, "buffer_paths": []}
        kc.shell_channel.send(kc.session.msg("comm_msg", {"comm_id": comm_id, "data": update}))
        time.sleep(3)  # training 1 head for up to 5,000 steps (it does not reach the target by then)
        km.interrupt_kernel()
        sent = time.monotonic()
        state = run("print(g.result.interrupted, g.result.steps, g.progress.value, int(max(g.figure.data[0].x)))",
                    timeout=60)
        answered = time.monotonic() - sent
        interrupted, steps, bar, last_x = state.split()
        assert interrupted == "True" and 20 < int(steps) < 5000 and int(bar) == int(steps) == int(last_x)
        assert answered < 5  # the kernel is free again (a second for the interrupt, the rest for the message round trip)
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_head_switches_draw_the_baselines_they_are_given_on_every_update():
    result = trained(TrainConfig(n_heads=3, seed=0, max_steps=STEPS))
    switches = HeadSwitches(result, baselines={"chance": [1 / 12] * 3})
    switches.switches[2].value = False
    line = [t for t in switches.figure.data if t.name == "chance"]
    assert len(line) == 1 and np.allclose(line[0].y, 1 / 12)
