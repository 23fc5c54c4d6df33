"""mha_core.models._interrupt: what the live trainers share (config overrides, the cache, steps and final)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

pytest.importorskip("torch")

from mha_core.models._interrupt import TrainedRun, cached_run, resolve_config  # noqa: E402


@dataclass(frozen=True)
class _Config:
    seed: int = 0
    max_steps: int = 10


class _Report:
    def __init__(self, step):
        self.step = step


@dataclass
class _Run(TrainedRun):
    config: _Config
    history: list = field(default_factory=list)
    interrupted: bool = False


def test_resolve_config_fills_the_default_and_applies_overrides():
    assert resolve_config(None, _Config, {}) == _Config()
    given = _Config(seed=3)
    assert resolve_config(given, _Config, {}) is given
    assert resolve_config(given, _Config, {"max_steps": 5}) == _Config(seed=3, max_steps=5)
    with pytest.raises(TypeError):
        resolve_config(None, _Config, {"no_such_field": 1})


def test_cached_run_keeps_finished_runs_and_trains_interrupted_ones_again():
    calls = []

    def train(config, callback, *, interruptible):
        calls.append((config, callback, interruptible))
        return _Run(config, interrupted=config.seed == 1)

    cache: dict = {}
    first = cached_run(cache, _Config(), train, None, False)
    assert cached_run(cache, _Config(), train, None, False) is first and len(calls) == 1
    cached_run(cache, _Config(seed=1), train, print, True)
    cached_run(cache, _Config(seed=1), train, print, True)
    assert len(calls) == 3 and calls[-1] == (_Config(seed=1), print, True)
    assert list(cache) == [_Config()]


def test_steps_and_final_read_the_last_report():
    run = _Run(_Config())
    assert run.steps == 0
    run.history += [_Report(0), _Report(7)]
    assert run.steps == 7 and run.final is run.history[-1]
