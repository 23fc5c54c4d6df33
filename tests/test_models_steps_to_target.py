"""Tests for mha_core.models.steps_to_target: the stored table of steps to 99%, and how it is made."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from mha_core.models.steps_to_target import (  # noqa: E402
    MAX_STEPS,
    load_steps_table,
    measure_run,
    run_config,
    steps_by_head_count,
    steps_table,
    table_path,
)
from mha_core.models.training import TrainConfig  # noqa: E402


@pytest.fixture(scope="module")
def table():
    return load_steps_table()


def test_the_stored_table_covers_one_and_three_heads_over_five_seeds(table):
    assert table["head_counts"] == [1, 3] and table["seeds"] == [0, 1, 2, 3, 4]
    assert table["max_steps"] == MAX_STEPS and table["target_accuracy"] == 0.99
    assert [(r["n_heads"], r["seed"]) for r in table["rows"]] == [(H, s) for H in (1, 3) for s in range(5)]
    for row in table["rows"]:
        assert row["steps"] % table["eval_every"] == 0 and 0 < row["steps"] <= table["max_steps"]
        assert row["reached"] == (min(row["accuracy"]) >= table["target_accuracy"])
        assert len(row["role_scores"]) == row["n_heads"] and all(len(r) == 3 for r in row["role_scores"])


def test_the_table_was_made_with_notebook_06s_settings(table):
    notebook = TrainConfig()
    assert (table["lr"], table["batch_size"], table["eval_every"], table["d_model"], table["task"]) == (
        notebook.lr, notebook.batch_size, notebook.eval_every, notebook.d_model, notebook.task)
    assert run_config(1, 4) == TrainConfig(n_heads=1, seed=4, max_steps=MAX_STEPS)


@pytest.mark.parametrize("seed", [0, 3])
def test_stored_rows_match_a_fresh_training(table, seed):
    # Three heads train in about a hundred steps; one head's thousands are checked by rerunning the script.
    stored = next(r for r in table["rows"] if r["n_heads"] == 3 and r["seed"] == seed)
    assert measure_run(3, seed) == stored


def test_steps_by_head_count_keeps_the_seed_order():
    table = {"rows": [{"n_heads": 1, "seed": 0, "steps": 30}, {"n_heads": 1, "seed": 1, "steps": 10},
                      {"n_heads": 3, "seed": 0, "steps": 20}]}
    assert steps_by_head_count(table) == {1: [30, 10], 3: [20]}


def test_a_run_that_misses_the_target_says_so():
    table = steps_table([1], [0], max_steps=20)
    (row,) = table["rows"]
    assert row["steps"] == 20 and row["reached"] is False and table["max_steps"] == 20


def test_a_missing_table_names_the_command_that_makes_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="scripts/make_toy_steps.py"):
        load_steps_table(tmp_path / "nothing.json")
    assert table_path().name == "steps_to_target.json"
