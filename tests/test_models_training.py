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


def test_one_head_falls_short_of_the_three_relations_within_a_short_budget():
    # Not an impossibility: given thousands of steps one head gets there too (tests/test_heads_learn_findings.py).
    result = train(n_heads=1, seed=0, max_steps=150, eval_every=150)
    assert result.final.accuracy.min() < 0.6 and not result.reached_target


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


# --------------------------------------------------------------------------- stopping a run (Kernel > Interrupt)


def stop_at(step):
    """A callback that raises KeyboardInterrupt once training reports ``step`` (what Ctrl-C does mid-callback)."""
    def callback(progress):
        if progress.step == step:
            raise KeyboardInterrupt
    return callback


def test_an_interrupt_from_the_callback_stops_training_and_keeps_the_model():
    config = TrainConfig(n_heads=1, seed=0, max_steps=500)
    result = train(config, callback=stop_at(30), interruptible=True)
    assert result.interrupted and not train(config, max_steps=30).interrupted
    assert result.steps == 30 and result.final.step == 30 and result.final.done
    # What was trained is kept: the same weights as a run whose budget was 30 steps.
    reference = train(config, max_steps=30)
    for p, q in zip(result.model.parameters(), reference.model.parameters()):
        assert torch.equal(p, q)
    assert np.array_equal(result.final.accuracy, reference.final.accuracy)
    assert not result.model.training  # ready to use, as a finished run is


def test_without_interruptible_an_interrupt_still_raises():
    with pytest.raises(KeyboardInterrupt):
        train(SHORT, callback=stop_at(10))


def test_sigint_stops_training_at_a_whole_step_even_where_sigint_was_ignored():
    # ipykernel ignores SIGINT outside its own handlers; an interruptible run listens for it anyway.
    import os
    import signal

    def interrupt(progress):
        if progress.step == 20:
            os.kill(os.getpid(), signal.SIGINT)

    before = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        result = train(n_heads=3, seed=0, max_steps=500, eval_every=10, target_accuracy=1.0, callback=interrupt,
                       interruptible=True)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # put back as it was
    finally:
        signal.signal(signal.SIGINT, before)
    assert result.interrupted and result.steps == 20
    reference = train(n_heads=3, seed=0, max_steps=20, target_accuracy=1.0)
    for p, q in zip(result.model.parameters(), reference.model.parameters()):
        assert torch.equal(p, q)


def test_sigint_to_a_process_that_trains_stops_it_within_a_second_and_keeps_the_steps(tmp_path):
    import json
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    child = tmp_path / "child.py"
    child.write_text(
        "import json, sys, time\n"
        "from mha_core.models.training import train\n"
        "def report(p):\n"
        "    if p.step == 50:\n"
        "        print('training', flush=True)\n"
        "result = train(n_heads=1, seed=0, max_steps=100_000, callback=report, interruptible=True)\n"
        "print(json.dumps({'returned': time.monotonic(), 'steps': result.steps, 'interrupted': result.interrupted,\n"
        "                  'history_steps': [p.step for p in result.history][-2:]}), flush=True)\n"
    )
    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen([sys.executable, str(child)], stdout=subprocess.PIPE, text=True, cwd=root)
    try:
        assert proc.stdout.readline().strip() == "training"
        sent = time.monotonic()
        proc.send_signal(signal.SIGINT)
        out = json.loads(proc.stdout.readline())
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
    assert out["interrupted"] and 50 <= out["steps"] < 100_000
    assert out["history_steps"][-1] == out["steps"]  # the last report is the step it stopped at
    assert out["returned"] - sent < 1.0  # CLOCK_MONOTONIC is shared by both processes


def test_an_interrupted_run_is_not_cached():
    config = TrainConfig(n_heads=1, seed=3, max_steps=200)
    result = trained(config, callback=stop_at(10), interruptible=True)
    assert result.interrupted and result.steps == 10
    assert not training.is_cached(config)
