"""Tests for mha_core.models.induction: an induction head forms live, within the budget, for every seed tried.

The budget (COURSE.md): a notebook that trains runs in under 30 s on two cores. Each of
five seeds must form an induction head (a head's induction score at least 0.4, ARENA's
threshold) within 30 s of training; measured here with ``stop_when_formed``, so the
test costs what forming costs (about 1 to 3 s a seed on a quiet machine).
"""

from __future__ import annotations

import math
import os
import signal

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mha_core.models import induction  # noqa: E402
from mha_core.models.induction import (  # noqa: E402
    INDUCTION_THRESHOLD,
    InductionConfig,
    train_induction,
    trained_induction,
)

SHORT = InductionConfig(seed=0, max_steps=20, eval_every=10)
#: The notebook's budget for a notebook that trains, on two cores (COURSE.md).
BUDGET_S = 30.0
SEEDS = range(5)


# --- forming ---------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_an_induction_head_forms_within_the_budget(seed):
    result = train_induction(seed=seed, stop_when_formed=True)
    assert result.formed_at is not None, f"seed {seed}: no induction head in {result.config.max_steps} steps"
    assert result.final.step == result.formed_at and result.final.done
    assert result.final.induction[-1].max() >= INDUCTION_THRESHOLD  # in the last layer
    assert result.seconds_to_form < BUDGET_S, f"seed {seed}: {result.seconds_to_form:.1f} s (load {os.getloadavg()})"


def test_the_loss_on_the_repeated_half_sits_on_a_plateau_then_drops(varying):
    losses = varying.losses  # (steps, 2): first half, repeated half
    assert losses.shape == (varying.config.max_steps, 2)
    formed = varying.formed_at
    assert 100 < formed < varying.config.max_steps
    plateau = losses[50:150, 1].mean()
    end = losses[-50:, 1].mean()
    assert plateau > 2.5 and end < 1.0  # the drop, after the plateau
    assert abs(losses[-50:, 0].mean() - math.log(32)) < 0.4  # the random first half: nothing to learn


def test_a_previous_token_head_forms_in_layer_0_and_an_induction_head_in_layer_1(varying):
    first, last = varying.history[0], varying.final
    assert first.previous_token.max() < 0.2 and first.induction.max() < 0.15
    assert last.previous_token[0].max() >= 0.4  # a layer-0 head looks at the token before
    assert last.induction[1].max() >= 0.6  # a layer-1 head looks one after the earlier copy
    assert last.induction[0].max() < 0.2 and last.previous_token[1].max() < 0.2


def test_with_a_fixed_length_the_stripe_forms_early_and_no_previous_token_head(fixed):
    assert fixed.formed_at <= 100
    assert fixed.final.previous_token.max() < 0.2


# --- the run itself ------------------------------------------------------------------------------


def test_same_seed_gives_bit_identical_numbers():
    a, b = train_induction(SHORT), train_induction(SHORT)
    assert all(torch.equal(p, q) for p, q in zip(a.model.parameters(), b.model.parameters()))
    np.testing.assert_array_equal(a.losses, b.losses)
    assert all(np.array_equal(x.induction, y.induction) for x, y in zip(a.history, b.history))
    assert not np.array_equal(a.losses, train_induction(SHORT, seed=1).losses)


def test_progress_reaches_the_callback_with_shapes_and_steps():
    seen = []
    result = train_induction(SHORT, callback=seen.append)
    assert [p.step for p in seen] == [0, 10, 20] and seen == result.history
    assert seen[-1].done and not seen[0].done
    assert seen[-1].previous_token.shape == (2, 2) and seen[-1].induction.shape == (2, 2)
    assert math.isnan(seen[0].first_half_loss) and seen[1].first_half_loss == pytest.approx(result.losses[:10, 0].mean())
    steps, previous, ind = result.score_history()
    assert steps.tolist() == [0, 10, 20] and previous.shape == ind.shape == (3, 2, 2)


def test_training_leaves_torch_threads_as_they_were():
    before = torch.get_num_threads()
    train_induction(SHORT, max_steps=1)
    assert torch.get_num_threads() == before


def test_the_cache_returns_the_same_object(varying, monkeypatch):
    monkeypatch.setattr(induction, "train_induction", lambda *a, **k: pytest.fail("trained again"))
    assert trained_induction(InductionConfig(seed=0)) is varying


def test_an_interrupt_from_the_callback_stops_and_keeps_the_model():
    def stop_at_30(progress):
        if progress.step == 30:
            raise KeyboardInterrupt

    result = train_induction(seed=0, max_steps=500, callback=stop_at_30, interruptible=True)
    assert result.interrupted and result.steps == 30 and result.final.done
    reference = train_induction(seed=0, max_steps=30)
    assert all(torch.equal(p, q) for p, q in zip(result.model.parameters(), reference.model.parameters()))
    np.testing.assert_array_equal(result.losses, reference.losses)
    with pytest.raises(KeyboardInterrupt):
        train_induction(seed=0, max_steps=500, callback=stop_at_30)


def test_sigint_stops_training_at_a_whole_step_even_where_sigint_was_ignored():
    def interrupt(progress):
        if progress.step == 20:
            os.kill(os.getpid(), signal.SIGINT)

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        result = train_induction(seed=0, max_steps=500, callback=interrupt, interruptible=True)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, before)
    assert result.interrupted and result.steps == 20 and len(result.losses) == 20


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"repeat": "sometimes"}, ValueError, "repeat='sometimes' is not a valid choice"),
    ({"max_steps": 0}, ValueError, "max_steps=0 is too small"),
    ({"batch_size": 2.0}, TypeError, "batch_size must be a whole number"),
    ({"lr": 0}, ValueError, "lr=0 is out of range; lr must be a finite number above 0, such as 1e-2"),
    ({"seed": -1}, ValueError, "seed=-1 is negative"),
    ({"stop_when_formed": "yes"}, TypeError, "stop_when_formed must be True or False"),
])
def test_bad_settings_raise_errors_naming_the_parameter(kwargs, error, words):
    with pytest.raises(error, match=words):
        InductionConfig(**kwargs)


def test_a_bad_callback_or_config_is_refused_before_training():
    with pytest.raises(TypeError, match="callback must be a function"):
        train_induction(SHORT, callback=3)
    with pytest.raises(TypeError, match="config must be an InductionConfig"):
        train_induction("fast")
