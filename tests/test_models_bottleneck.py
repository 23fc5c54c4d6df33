"""Tests for mha_core.models.bottleneck: the sweep's shape, and the trend in the stored results."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip("torch")

from mha_core.models.bottleneck import bottleneck_sweep, load_sweep, main, sweep_config  # noqa: E402


def test_sweep_rows_hold_every_seed_and_their_spread():
    result = bottleneck_sweep([1, 4], [0, 1], d_model=8, steps=2)
    assert [r["n_heads"] for r in result["rows"]] == [1, 4] and [r["d_head"] for r in result["rows"]] == [8, 2]
    for row in result["rows"]:
        acc = np.array(row["accuracy"])
        assert len(acc) == 2 and row["mean"] == pytest.approx(acc.mean())
        assert row["min"] == acc.min() and row["max"] == acc.max() and row["std"] == pytest.approx(acc.std())


def test_sweep_runs_use_a_fixed_budget_on_the_identity_task():
    config = sweep_config(8, 2)
    assert (config.task, config.d_model, config.max_steps, config.target_accuracy) == ("last match", 48, 800, 1.0)


def test_the_command_writes_the_json_it_documents(tmp_path):
    out = tmp_path / "sweep.json"
    assert main(["--out", str(out), "--steps", "1", "--heads", "2", "--seeds", "0"]) == 0
    data = json.loads(out.read_text())
    assert data["rows"][0]["n_heads"] == 2 and load_sweep(out)["steps"] == 1


def test_the_stored_sweep_shows_the_bottleneck_over_at_least_three_seeds():
    sweep = load_sweep()
    rows = sweep["rows"]
    assert sweep["d_model"] == 48 and all(len(r["accuracy"]) >= 3 for r in rows)
    assert all(r["d_head"] * r["n_heads"] == 48 for r in rows)
    best = max(rows, key=lambda r: r["mean"])
    smallest_head = min(rows, key=lambda r: r["d_head"])
    one_head = min(rows, key=lambda r: r["n_heads"])
    # Too small heads and too few heads both lose, by more than the spread over seeds.
    assert smallest_head["max"] < best["min"] and smallest_head["mean"] < best["mean"] - 0.05
    assert one_head["max"] < best["min"]


def test_a_missing_sweep_file_says_how_to_make_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="python -m mha_core.models.bottleneck"):
        load_sweep(tmp_path / "none.json")
