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
    fig = ablation_figure([0.5, 1, 1], RELATIONS, [False, True, False], baseline=[1, 1, 1])  # heads_off: True = off
    assert fig.data[0].name == "head 2 off" and np.allclose(fig.data[1].y, 1)
    assert ablation_figure([0, 0, 0], RELATIONS, [True, True]).data[0].name == "every head off"
    assert ablation_figure([1, 1, 1], RELATIONS, np.zeros(3, bool)).data[0].name == "every head on"
    with pytest.raises(TypeError, match=r"heads_off must be an \(H,\) bool array, True = off; got dtype float64"):
        ablation_figure([1, 1, 1], RELATIONS, np.ones(3))  # the old heads_on encoding, 1 = on


def test_removal_figure_plots_single_and_greedy_removal():
    single = np.array([[0.3, 1, 1], [1, 0.2, 1]])
    greedy = [((), np.ones(3)), ((1,), np.array([1, 0.2, 1])), ((1, 0), np.array([0.1, 0.1, 0.5]))]
    fig = removal_figure(single, greedy, RELATIONS)
    bars = [t for t in fig.data if t.type == "bar"]
    lines = [t for t in fig.data if t.type == "scatter"]
    assert np.allclose(bars[0].y, [0.3, 1]) and np.allclose(lines[1].y, [1, 0.2, 0.1])
    assert list(fig.layout.xaxis2.ticktext) == ["none", "+2", "+1"]  # head 2 off first, then head 1
    assert "next head off" in fig.layout.xaxis2.title.text


def test_bottleneck_figure_shows_mean_spread_and_every_seed():
    sweep = {"d_model": 48, "steps": 800, "rows": [
        {"n_heads": 1, "d_head": 48, "accuracy": [0.7, 0.8], "mean": 0.75, "min": 0.7, "max": 0.8},
        {"n_heads": 8, "d_head": 6, "accuracy": [0.99, 0.97], "mean": 0.98, "min": 0.97, "max": 0.99},
    ]}
    fig = bottleneck_figure(sweep)
    assert list(fig.data[0].x) == ["1<br>d_head 48", "8<br>d_head 6"] and np.allclose(fig.data[0].y, [0.75, 0.98])
    assert np.allclose(fig.data[0].error_y.array, [0.05, 0.01]) and np.allclose(fig.data[0].error_y.arrayminus, [0.05, 0.01])
    assert np.allclose(fig.data[1].y, [0.7, 0.8, 0.99, 0.97])


def test_unvalidated_builders_spell_axis_titles_nested_so_an_in_place_update_keeps_them():
    # update_in_place diffs plotly JSON leaf by leaf; an unexpanded "title_text" key wiped the shown title.
    def underscored_keys(node, path=""):
        if isinstance(node, dict):
            for key, value in node.items():
                if "_" in key and key not in ("plot_bgcolor", "paper_bgcolor"):
                    yield f"{path}.{key}"
                yield from underscored_keys(value, f"{path}.{key}")
        elif isinstance(node, (list, tuple)):
            for item in node:
                yield from underscored_keys(item, path)

    for H in (1, 3):
        fig = role_history_figure(np.arange(2), np.zeros((2, H, 3)), RELATIONS, max_steps=10, validate=False)
        assert not list(underscored_keys(fig.layout.to_plotly_json()))
        assert fig.layout.xaxis.title.text == "step" and fig.layout.yaxis.title.text == "share of weight"
    fig = ablation_figure([0.5, 1, 1], RELATIONS, [False, True, False], validate=False)
    assert not list(underscored_keys(fig.layout.to_plotly_json())) and fig.layout.yaxis.title.text == "accuracy"


def test_accuracy_figures_draw_each_baseline_as_a_labelled_line():
    no_attention = [0.083, 0.083, 0.55]
    fig = accuracy_comparison_figure({"1 head": [0.3, 0.9, 1.0]}, RELATIONS,
                                     baselines={"best guess without attention": no_attention})
    line = [t for t in fig.data if t.name == "best guess without attention"]
    assert len(line) == 1 and np.allclose(line[0].y, no_attention) and list(line[0].x) == list(RELATIONS)
    assert list(line[0].text) == ["0.08", "0.08", "0.55"]
    fig = ablation_figure([0.5, 1, 1], RELATIONS, [False, True, False], baseline=[1, 1, 1],
                          baselines={"chance": [0.1, 0.1, 0.1]})
    assert [t.name for t in fig.data] == ["head 2 off", "reference: every head on", "chance"]
    assert len(accuracy_comparison_figure({"a": [1, 1, 1]}, RELATIONS).data) == 1  # none asked, none drawn


def test_steps_to_target_figure_shows_every_seed_and_the_budget():
    from mha_core.figures.toy import steps_to_target_figure

    table = {"max_steps": 30000, "target_accuracy": 0.99, "seeds": [0, 1], "rows": [
        {"n_heads": 1, "seed": 0, "steps": 19570, "reached": True},
        {"n_heads": 1, "seed": 1, "steps": 4710, "reached": True},
        {"n_heads": 3, "seed": 0, "steps": 150, "reached": True},
        {"n_heads": 3, "seed": 1, "steps": 120, "reached": True},
    ]}
    fig = steps_to_target_figure(table, budget=300)
    bars = [t for t in fig.data if t.type == "bar"]
    assert [t.name for t in bars] == ["1 head", "3 heads"]
    assert np.allclose(bars[0].y, [19570, 4710]) and np.allclose(bars[1].y, [150, 120])
    assert list(bars[0].x) == ["seed 0", "seed 1"] and list(bars[0].text) == ["19,570", "4,710"]
    assert fig.layout.yaxis.type == "log"
    assert any(s.y0 == 300 for s in fig.layout.shapes)
    assert "notebook budget: 300 steps" in [t.name for t in fig.data]
    table["rows"][0].update(reached=False, steps=30000)
    assert list(steps_to_target_figure(table).data[0].text)[0] == "not by 30,000"


def test_share_and_removal_figure_shows_both_tables():
    from mha_core.figures.toy import share_and_removal_figure

    share = np.array([[0.9, 0.1, 0.3], [0.4, 0.1, 0.6]])
    cost = np.array([[0.4, 0.0, 0.0], [0.2, 0.0, 0.4]])
    fig = share_and_removal_figure(share, cost, RELATIONS)
    assert np.allclose(fig.data[0].z, share) and np.allclose(fig.data[1].z, cost)
    assert fig.data[0].zmin == 0 and fig.data[0].zmax == 1 and fig.data[1].zmin == 0 and fig.data[1].zmax == 1
    assert list(fig.data[0].y) == ["head 1", "head 2"]
