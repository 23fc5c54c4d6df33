"""Tests for mha_core.figures.serving: every number drawn is the one mha_core.costs computes."""

from __future__ import annotations

import numpy as np
import pytest

from mha_core import costs, tables
from mha_core.figures import serving as fs

GiB = 2**30


def test_growth_figure_draws_score_tables_as_t_squared_and_the_cache_as_t():
    llama = costs.MODEL_SHAPES["Llama-2-7B"]
    rows = tables.growth_rows(llama, [512, 1024, 2048, 4096])
    fig = fs.growth_figure(rows)
    score_tables, cache = fig.data
    np.testing.assert_allclose(score_tables.y * GiB, [costs.score_table_bytes(32, t, bytes_per_value=2) for t in rows.token_counts])
    np.testing.assert_allclose(cache.y * GiB, [costs.kv_cache_bytes(32, t, 32, 128) for t in rows.token_counts])
    # Twice the tokens: four times the tables, twice the cache.
    assert score_tables.y[-1] == 4 * score_tables.y[-2] and cache.y[-1] == 2 * cache.y[-2]
    assert score_tables.y[-1] == 1.0 and cache.y[-1] == 2.0  # 1 GiB of tables per layer, 2 GiB of cache at T = 4096
    assert "1 GiB" in score_tables.text[-1] and "2 GiB" in cache.text[-1]
    assert "Llama-2-7B" in fig.layout.title.text


def test_kv_kind_names_mha_gqa_and_mqa():
    assert [fs.kv_kind(h, 64) for h in (64, 8, 1)] == ["MHA", "GQA", "MQA"]


def test_bytes_text_uses_binary_units():
    assert fs.bytes_text(36 * 1024) == "36 KiB"
    assert fs.bytes_text(2 * GiB) == "2 GiB"
    assert fs.bytes_text(327_680) == "320 KiB"
    assert fs.bytes_text(1536 * 2**20) == "1.5 GiB"
    assert fs.bytes_text(12) == "12 bytes"


def test_calculator_figure_draws_the_rows_and_marks_the_chosen_head_count():
    m = costs.MODEL_SHAPES["Llama-2-7B"]
    rows = tables.calculator_rows(m, n_tokens=4096, batch=1, bytes_per_value=2, memory_bytes=80 * GiB)
    fig = fs.calculator_figure(rows, 8)
    cache, fit = fig.data
    assert list(cache.x) == ["32 MHA", "16", "8", "4", "2", "1 MQA"]
    np.testing.assert_allclose(cache.y * GiB, rows.batch_bytes)
    np.testing.assert_array_equal(fit.y, rows.sequences_that_fit)
    assert list(fit.y) == [33, 67, 134, 269, 539, 1079]
    assert [c == fs.CHOSEN_COLOR for c in cache.marker.color] == [False, False, True, False, False, False]
    cache_title, fit_title, free = (a.text for a in fig.layout.annotations)
    # The chosen count's numbers sit in the panel titles, above the plots, where no bar runs through them.
    assert cache_title.endswith("<br><b>512 MiB</b> with 8 KV heads")
    assert fit_title.endswith("<br><b>134</b> with 8 KV heads")
    assert "8 KV heads (GQA)" in fig.layout.title.text
    left = 80 * GiB - m.parameter_bytes()
    assert fig.layout.shapes[0].y0 == pytest.approx(left / GiB)
    assert free == f"free after the weights: {fs.bytes_text(left)}"
    assert fig.layout.annotations[2].y == pytest.approx(left / GiB) and fig.layout.annotations[2].yanchor == "bottom"
    assert fig.layout.width <= 820


def test_calculator_figure_when_the_weights_fill_the_memory():
    m = costs.MODEL_SHAPES["Llama-2-70B"]
    rows = tables.calculator_rows(m, n_tokens=4096, batch=1, bytes_per_value=2, memory_bytes=80 * GiB)
    fig = fs.calculator_figure(rows, 8)
    assert set(fig.data[1].y) == {0}
    # No line at 0 GiB (its label lay over the bars): the right panel's title says why nothing fits.
    assert len(fig.layout.shapes) == 0 and len(fig.layout.annotations) == 2
    assert fig.layout.annotations[1].text.endswith("<b>none</b>: the weights fill the memory")
    # Whole sequences on the axis: ticks at 0, 1, 2, 3, never 0.2 ("200m").
    assert fig.layout.yaxis2.dtick == 1 and fig.layout.yaxis2.tickformat == ",d"


class _Sweep:
    """A measured sweep's shape without measuring (the builder takes any object with these fields)."""

    d_model = 128
    head_counts = (1, 4, 16)
    token_counts = (128, 512)
    seconds = np.array([[0.001, 0.0011, 0.002], [0.01, 0.012, 0.04]])
    flops = np.array([[costs.attention_flops(128, h, t)["total"] for h in (1, 4, 16)] for t in (128, 512)], dtype=object)
    kv_bytes_per_token = np.array([costs.kv_cache_bytes_per_token(1, h, 128 // h, 4) for h in (1, 4, 16)], dtype=object)


def test_head_sweep_figure_shows_flat_kv_bytes_and_the_measured_times():
    sweep = _Sweep()
    fig = fs.head_sweep_figure(sweep)
    kv = fig.data[0]
    assert list(kv.x) == ["1", "4", "16"] and set(kv.y) == {1024.0}  # 2 x 128 x 4 bytes, whatever H
    flops_128, time_128, flops_512, time_512 = fig.data[1:]
    np.testing.assert_allclose(flops_512.y * 1e9, np.asarray(sweep.flops[1], dtype=float))
    np.testing.assert_allclose(time_512.y, [10, 12, 40])
    np.testing.assert_allclose(time_128.y, [1, 1.1, 2])
    assert flops_128.name == time_128.name == "T = 128"
    assert "d_model = 128" in fig.layout.title.text


@pytest.mark.parametrize("windowed, n_tokens, per_sequence", [(True, 8192, 512 * 2**20), (False, 8192, GiB),
                                                              (True, 32768, 512 * 2**20), (False, 32768, 4 * GiB)])
def test_calculator_rows_of_mistral_keep_min_t_w_tokens(windowed, n_tokens, per_sequence):
    m = costs.MODEL_SHAPES["Mistral-7B v0.1"]
    rows = tables.calculator_rows(m, n_tokens=n_tokens, batch=2, bytes_per_value=2, memory_bytes=80 * GiB, windowed=windowed)
    assert rows.sliding_window == 4096 and rows.windowed is windowed
    assert rows.cached_tokens == (4096 if windowed else n_tokens)
    k = rows.kv_head_counts.index(8)
    assert rows.bytes_per_sequence[k] == per_sequence and rows.batch_bytes[k] == 2 * per_sequence
    for h, per_seq in zip(rows.kv_head_counts, rows.bytes_per_sequence):
        assert per_seq == m.kv_cache_bytes(n_tokens, n_kv_heads=h, windowed=windowed)
    title = fs.calculator_figure(rows, 8).layout.annotations[0].text
    assert ("the window keeps the last 4,096" in title) is windowed


@pytest.mark.parametrize("model, n_kv_heads", [("Llama-2-7B", 8), ("Llama-2-7B", 32), ("GPT-2 small", 4), ("Gemma-2B", 1)])
def test_the_chosen_bars_are_coloured_and_their_values_head_the_panels(model, n_kv_heads):
    rows = tables.calculator_rows(costs.MODEL_SHAPES[model], n_tokens=4096, batch=1, bytes_per_value=2, memory_bytes=80 * GiB)
    fig = fs.calculator_figure(rows, n_kv_heads)
    k = rows.kv_head_counts.index(n_kv_heads)
    for trace in fig.data:
        assert [c == fs.CHOSEN_COLOR for c in trace.marker.color] == [i == k for i in range(len(rows.kv_head_counts))]
    assert f"<b>{fs.bytes_text(rows.batch_bytes[k])}</b> with {n_kv_heads} KV heads" in fig.layout.annotations[0].text
    assert f"<b>{rows.sequences_that_fit[k]:,}</b> with {n_kv_heads} KV heads" in fig.layout.annotations[1].text
    assert not [a for a in fig.layout.annotations if a.xref in ("x", "x2")]  # no label over a bar


@pytest.mark.parametrize("top, ticks", [(1.1, [0, 1]), (3.3, [0, 1, 2, 3]), (40, [0, 10, 20, 30, 40]), (1200, [0, 500, 1000])])
def test_the_sequences_axis_counts_whole_sequences(top, ticks):
    spec = fs._integer_ticks(top)
    assert spec["tickformat"] == ",d" and isinstance(spec["dtick"], int)
    assert [spec["dtick"] * i for i in range(int(top // spec["dtick"]) + 1)] == ticks


def test_the_mha_and_mqa_names_sit_under_their_numbers():
    rows = tables.calculator_rows(costs.MODEL_SHAPES["Llama-2-70B"], n_tokens=4096, batch=1, bytes_per_value=2,
                                  memory_bytes=80 * GiB)
    axis = fs.calculator_figure(rows, 8).layout.xaxis
    assert list(axis.ticktext) == ["64<br>MHA", "32", "16", "8", "4", "2", "1<br>MQA"]
    assert list(axis.tickvals) == list(fs.calculator_figure(rows, 8).data[0].x)
