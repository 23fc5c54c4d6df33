"""Tests for mha_core.models.repeats: the repeated-stretch task and its two loss halves."""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mha_core.models.repeats import REPEAT_LENGTHS, RepeatTask, half_losses, next_token_losses  # noqa: E402


@pytest.mark.parametrize("repeat", ["varying", "fixed"])
def test_every_token_of_the_second_half_repeats_the_one_L_back(repeat):
    task = RepeatTask(repeat)
    batch = task.batch(256, seed=1)
    assert batch.tokens.shape == (256, 25) and batch.tokens.dtype == torch.int64
    assert batch.repeat_length.shape == (256,)
    assert set(batch.repeat_length.tolist()) == set(REPEAT_LENGTHS[repeat])
    tokens, lengths = batch.tokens.numpy(), batch.repeat_length.numpy()
    for b in range(256):
        for t in range(13, 25):
            assert tokens[b, t] == tokens[b, t - lengths[b]]
    assert tokens.min() >= 0 and tokens.max() < 32


def test_with_length_12_a_sequence_is_a_first_token_and_a_stretch_twice():
    tokens = RepeatTask("fixed").batch(4, seed=0).tokens
    torch.testing.assert_close(tokens[:, 1:13], tokens[:, 13:25])


def test_batches_come_from_the_seed_or_generator_not_the_global_rng():
    task = RepeatTask()
    torch.manual_seed(0)
    a = task.batch(8, seed=5)
    torch.manual_seed(1)
    b = task.batch(8, seed=5)
    assert torch.equal(a.tokens, b.tokens)
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    assert torch.equal(task.batch(8, generator=g1).tokens, task.batch(8, generator=g2).tokens)
    assert not torch.equal(task.batch(8, seed=6).tokens, a.tokens)


def test_the_halves_are_the_first_twelve_targets_and_the_eleven_after_a_repeated_token():
    task = RepeatTask()
    assert list(task.first_half_targets) == list(range(1, 13))
    assert list(task.repeated_half_targets) == list(range(14, 25))


def test_half_losses_read_the_right_positions():
    tokens = RepeatTask().batch(3, seed=0).tokens
    logits = torch.zeros(3, 25, 32)
    # Perfect predictions from positions 13..23 (the targets 14..24), uniform elsewhere.
    logits[torch.arange(3)[:, None], torch.arange(13, 24), tokens[:, 14:25]] = 100.0
    first, repeated = half_losses(logits, tokens)
    assert float(first) == pytest.approx(math.log(32))
    assert float(repeated) == pytest.approx(0.0, abs=1e-6)
    losses = next_token_losses(logits, tokens)
    assert losses.shape == (3, 24)
    assert float(losses[:, 12].mean()) == pytest.approx(math.log(32))  # token 13 is in neither half


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda: RepeatTask("sometimes"), ValueError, "repeat='sometimes' is not a valid choice; valid values are 'varying', 'fixed'"),
    (lambda: RepeatTask().batch(0), ValueError, "batch_size=0 is too small"),
    (lambda: RepeatTask().batch(2, seed=-1), ValueError, "seed=-1 is negative"),
    (lambda: RepeatTask().batch(2, generator=np.random.default_rng(0)), TypeError, "generator must be a torch.Generator"),
])
def test_bad_settings_name_the_parameter(call, error, words):
    with pytest.raises(error, match=words):
        call()
