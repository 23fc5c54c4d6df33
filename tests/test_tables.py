"""Tests for mha_core.tables: every number a sizing or serving figure draws is the one mha_core.costs computes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from mha_core import costs, tables

GiB = 2**30
HEADS_768 = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
ROWS = tables.sizing_rows(768, 1024, HEADS_768)
ROOT = Path(__file__).resolve().parents[1]


# --------------------------------------------------------------------------- 05: sizing rows


def test_rows_come_from_costs_for_every_head_count():
    for i, h in enumerate(HEADS_768):
        flops = costs.attention_flops(768, h, 1024)
        assert ROWS.d_head[i] == 768 // h
        assert ROWS.parameters[i] == costs.attention_parameters(768, h)
        assert ROWS.score_entries[i] == h * 1024**2
        assert ROWS.flops_projections[i] == flops["projections"]
        assert ROWS.flops_products[i] == flops["scores"] + flops["mix"]
        assert ROWS.flops_softmax[i] == flops["softmax"]


def test_parameters_and_matrix_products_are_flat_while_score_tables_and_softmax_grow():
    assert set(ROWS.parameters.tolist()) == {2_362_368}  # 4 D^2 + 4 D for D = 768
    assert len(set((ROWS.flops_projections + ROWS.flops_products).tolist())) == 1
    assert np.all(np.diff(ROWS.score_entries) > 0) and np.all(np.diff(ROWS.flops_softmax) > 0)
    assert np.all(np.diff(ROWS.d_head) < 0)


# --------------------------------------------------------------------------- 09: growth and calculator rows


def test_growth_rows_are_the_costs_numbers():
    llama = costs.MODEL_SHAPES["Llama-2-7B"]
    rows = tables.growth_rows(llama, [512, 4096], bytes_per_value=2)
    assert rows.token_counts == (512, 4096) and rows.n_heads == 32 and rows.n_layers == 32
    assert rows.score_table_bytes == tuple(costs.score_table_bytes(32, t, bytes_per_value=2) for t in (512, 4096))
    assert rows.kv_cache_bytes == tuple(llama.kv_cache_bytes(t, bytes_per_value=2) for t in (512, 4096))
    assert rows.kv_cache_bytes[-1] == 2 * GiB  # 512 KiB a token x 4,096 tokens


def test_kv_head_choices_run_from_mha_to_mqa():
    assert tables.kv_head_choices(32) == [32, 16, 8, 4, 2, 1]
    assert tables.kv_head_choices(12) == [12, 6, 4, 3, 2, 1]


@pytest.mark.parametrize("model, n_tokens, batch, bytes_per_value, memory_gib",
                         [("Llama-2-7B", 4096, 1, 2, 80), ("Llama-2-70B", 4096, 8, 2, 141), ("Gemma-2B", 8192, 4, 1, 24)])
def test_calculator_rows_are_the_costs_numbers(model, n_tokens, batch, bytes_per_value, memory_gib):
    m = costs.MODEL_SHAPES[model]
    rows = tables.calculator_rows(m, n_tokens=n_tokens, batch=batch, bytes_per_value=bytes_per_value, memory_bytes=memory_gib * GiB)
    for h, per_token, per_seq, fit in zip(rows.kv_head_counts, rows.bytes_per_token, rows.bytes_per_sequence, rows.sequences_that_fit):
        assert per_token == costs.kv_cache_bytes_per_token(m.n_layers, h, m.d_head, bytes_per_value)
        assert per_seq == costs.kv_cache_bytes(m.n_layers, n_tokens, h, m.d_head, bytes_per_value=bytes_per_value)
        assert fit == costs.concurrent_sequences(memory_gib * GiB, per_seq, reserved_bytes=m.parameter_bytes(bytes_per_value))
    assert rows.batch_bytes == tuple(batch * p for p in rows.bytes_per_sequence)


def test_calculator_rows_refuse_an_encoder():
    with pytest.raises(ValueError, match=r"^BERT-base is an encoder"):
        tables.calculator_rows(costs.MODEL_SHAPES["BERT-base"], n_tokens=128, batch=1, bytes_per_value=2, memory_bytes=GiB)


def test_the_tables_draw_nothing_and_load_no_plotly():
    # Data preparation, not a figure builder: importing it must not pull plotly or ipywidgets in.
    code = ("import sys, json, mha_core.tables; "
            "print(json.dumps({m: m in sys.modules for m in ('plotly', 'ipywidgets')}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=ROOT, env={"PYTHONPATH": str(ROOT), "PATH": ""})
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"plotly": False, "ipywidgets": False}
