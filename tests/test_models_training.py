"""Tests for mha_core.models.training: deterministic, reports progress, stops early, caches."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mha_core.models import training  # noqa: E402
from mha_core.models.training import TrainConfig, train, trained  # noqa: E402

SHORT = TrainConfig(n_heads=3, seed=0, max_steps=20, eval_every=10)


@pytest.fixture(scope="module")
def notebook_model():
    """The 3-head model notebook 06 trains first (seed 0), through the cache."""
    return trained(TrainConfig(n_heads=3, seed=0))


def test_same_seed_gives_bit_identical_numbers():
    a, b = train(SHORT), train(SHORT)
    for p, q in zip(a.model.parameters(), b.model.parameters()):
        assert torch.equal(p, q)
    assert [h.loss for h in a.history[1:]] == [h.loss for h in b.history[1:]]
    assert all(np.array_equal(x.role_scores, y.role_scores) for x, y in zip(a.history, b.history))


def test_another_seed_gives_other_numbers():
    a, b = train(SHORT), train(SHORT, seed=1)
    assert a.history[-1].loss != b.history[-1].loss


def test_progress_reaches_the_callback_with_shapes_and_steps():
    seen = []
    result = train(SHORT, callback=seen.append)
    assert [p.step for p in seen] == [0, 10, 20]
    assert seen == result.history
    assert seen[-1].done and not seen[0].done
    assert seen[-1].accuracy.shape == (3,) and seen[-1].role_scores.shape == (3, 3)
    assert np.isnan(seen[0].loss) and seen[1].loss > seen[-1].loss


def test_training_leaves_torch_threads_as_they_were():
    before = torch.get_num_threads()
    train(SHORT, max_steps=1)
    assert torch.get_num_threads() == before


def test_three_heads_reach_the_target_within_the_budget_and_stop_early(notebook_model):
    assert notebook_model.reached_target
    assert notebook_model.steps < notebook_model.config.max_steps
    assert np.all(notebook_model.final.accuracy >= 0.99)


def test_the_trained_heads_serve_three_different_relations(notebook_model):
    from mha_core.models.analysis import head_roles

    roles = head_roles(notebook_model.final.role_scores, ("previous token", "two back", "largest so far"))
    assert sorted(roles) == ["largest so far", "previous token", "two back"]


def test_one_head_cannot_do_all_three_relations():
    result = train(n_heads=1, seed=0, max_steps=150, eval_every=150)
    assert result.final.accuracy.min() < 0.6


def test_the_cache_returns_the_same_object_without_training(notebook_model, monkeypatch):
    monkeypatch.setattr(training, "train", lambda *a, **k: pytest.fail("trained again"))
    assert trained(TrainConfig(n_heads=3, seed=0)) is notebook_model
    assert training.is_cached(TrainConfig(n_heads=3, seed=0))


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"n_heads": 5}, ValueError, "n_heads=5 does not divide d_model=48; valid head counts are 1, 2, 3, 4, 6, 8"),
    ({"seed": 2.5}, TypeError, "seed must be a whole number"),
    ({"seed": "1"}, TypeError, "seed must be a whole number"),
    ({"max_steps": 0}, ValueError, "max_steps=0 is too small"),
    ({"max_steps": -5}, ValueError, "max_steps=-5"),
    ({"max_steps": 2.0}, TypeError, "max_steps must be a whole number"),
    ({"task": "copy"}, ValueError, "valid tasks"),
])
def test_bad_settings_raise_errors_naming_the_parameter(kwargs, error, words):
    with pytest.raises(error, match=words):
        TrainConfig(**kwargs)
