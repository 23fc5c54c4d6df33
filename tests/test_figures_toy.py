"""Tests for mha_core.figures.toy: each figure shows the numbers it is given."""

from __future__ import annotations

import numpy as np
import pytest

from mha_core.figures.toy import (
    ablation_figure,
    accuracy_comparison_figure,
    bottleneck_figure,
    example_targets_figure,
    key_similarity_figure,
    removal_figure,
    role_history_figure,
    role_table_figure,
    similarity_matrix_figure,
)

RELATIONS = ("previous token", "two back", "largest so far")


def test_role_history_has_one_panel_per_head_and_one_line_per_relation():
    steps = np.array([0, 10, 20])
    scores = np.random.default_rng(0).random((3, 2, 3))  # (N, H, R)
    fig = role_history_figure(steps, scores, RELATIONS, max_steps=100)
    assert len(fig.data) == 6
    assert fig.data[4].xaxis == "x2" and np.allclose(fig.data[4].y, scores[:, 1, 1])
    assert [a.text for a in fig.layout.annotations] == ["head 1", "head 2"]
    assert tuple(fig.layout.xaxis.range) == (0, 100)


def test_example_targets_marks_each_relations_positions():
    pos = np.zeros((3, 4, 4), dtype=bool)
    pos[0, 1, 0] = pos[0, 2, 1] = True
    pos[2, 3, 3] = True
    fig = example_targets_figure([5, 1, 2, 7], pos, RELATIONS)
    assert list(fig.data[0].x) == [0, 1] and list(fig.data[0].y) == [1, 2]
    assert len(fig.data[1].x) == 0 and list(fig.data[2].x) == [3]
    assert list(fig.layout.xaxis.ticktext) == ["0: 5", "1: 1", "2: 2", "3: 7"]


def test_role_table_and_similarity_and_keys_show_their_matrices():
    s = np.array([[0.9, 0.1, 0.3], [0.1, 0.95, 0.2]])
    fig = role_table_figure(s, RELATIONS, roles=["previous token", "two back"])
    assert np.allclose(fig.data[0].z, s) and fig.data[0].y[0] == "head 1 (previous token)"
    js = np.array([[0, 0.4], [0.4, 0]])
    assert np.allclose(similarity_matrix_figure(js).data[0].z, js)
    k = np.random.default_rng(1).uniform(-1, 1, (2, 12))
    fig = key_similarity_figure(k, 7)
    assert np.allclose(fig.data[0].z, k) and "Token 7" in fig.layout.title.text


def test_accuracy_comparison_and_ablation_bars():
    fig = accuracy_comparison_figure({"1 head": [0.3, 0.9, 1.0], "3 heads": [1, 1, 1]}, RELATIONS)
    assert [t.name for t in fig.data] == ["1 head", "3 heads"] and np.allclose(fig.data[0].y, [0.3, 0.9, 1.0])
    fig = ablation_figure([0.5, 1, 1], RELATIONS, [True, False, True], baseline=[1, 1, 1])
    assert fig.data[0].name == "head 2 off" and np.allclose(fig.data[1].y, 1)
    assert ablation_figure([0, 0, 0], RELATIONS, [False, False]).data[0].name == "every head off"


def test_removal_figure_plots_single_and_greedy_removal():
    single = np.array([[0.3, 1, 1], [1, 0.2, 1]])
    greedy = [((), np.ones(3)), ((1,), np.array([1, 0.2, 1])), ((1, 0), np.array([0.1, 0.1, 0.5]))]
    fig = removal_figure(single, greedy, RELATIONS)
    bars = [t for t in fig.data if t.type == "bar"]
    lines = [t for t in fig.data if t.type == "scatter"]
    assert np.allclose(bars[0].y, [0.3, 1]) and np.allclose(lines[1].y, [1, 0.2, 0.1])
    assert list(fig.layout.xaxis2.ticktext) == ["none", "+ head 2", "+ head 1"]


def test_bottleneck_figure_shows_mean_spread_and_every_seed():
    sweep = {"d_model": 48, "steps": 800, "rows": [
        {"n_heads": 1, "d_head": 48, "accuracy": [0.7, 0.8], "mean": 0.75, "min": 0.7, "max": 0.8},
        {"n_heads": 8, "d_head": 6, "accuracy": [0.99, 0.97], "mean": 0.98, "min": 0.97, "max": 0.99},
    ]}
    fig = bottleneck_figure(sweep)
    assert list(fig.data[0].x) == ["1<br>d_head 48", "8<br>d_head 6"] and np.allclose(fig.data[0].y, [0.75, 0.98])
    assert np.allclose(fig.data[0].error_y.array, [0.05, 0.01]) and np.allclose(fig.data[0].error_y.arrayminus, [0.05, 0.01])
    assert np.allclose(fig.data[1].y, [0.7, 0.8, 0.99, 0.97])
