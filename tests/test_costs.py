"""What heads cost (mha_core.costs), checked against the figures in COURSE.md
("Facts checked against their sources") and against the layer itself."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_core import costs
from mha_core.attention import MultiHeadAttention

KIB = 1024

# COURSE.md's model table: layers, d_model, heads, d_head, KV heads, FFN, vocab, context.
COURSE_TABLE = {
    "GPT-2 small": (12, 768, 12, 64, 12, 3072, 50257, 1024),
    "BERT-base": (12, 768, 12, 64, 12, 3072, 30522, 512),
    "all-MiniLM-L6-v2": (6, 384, 12, 32, 12, 1536, 30522, 512),
    "Llama-2-7B": (32, 4096, 32, 128, 32, 11008, 32000, 4096),
    "Llama-2-70B": (80, 8192, 64, 128, 8, 28672, 32000, 4096),
    "Mistral-7B v0.1": (32, 4096, 32, 128, 8, 14336, 32000, 8192),
    "Llama-3-8B": (32, 4096, 32, 128, 8, 14336, 128256, 8192),
}


# --- parameters --------------------------------------------------------------------------


@pytest.mark.parametrize("n_heads", costs.valid_head_counts(768))
def test_parameters_of_a_768_wide_layer_do_not_depend_on_the_head_count(n_heads):
    # torch.nn.MultiheadAttention(768, h): 4 d^2 + 4 d = 2,362,368; 4 d^2 = 2,359,296 without biases.
    assert costs.attention_parameters(768, n_heads) == 2_362_368
    assert costs.attention_parameters(768, n_heads, bias=False) == 2_359_296


def test_768_has_the_head_counts_the_course_uses():
    assert costs.valid_head_counts(768) == [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 768]


@pytest.mark.parametrize(
    "d_model, n_heads, n_kv_heads, bias",
    [
        (8, 2, None, True),
        (12, 3, None, False),
        (16, 4, 1, True),  # multi-query
        (16, 8, 2, True),  # grouped-query
        (64, 8, 4, False),
        (96, 12, 3, True),
    ],
)
def test_parameter_count_equals_the_layers_own_count(d_model, n_heads, n_kv_heads, bias):
    layer = MultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads, bias=bias, seed=0)
    assert costs.attention_parameters(d_model, n_heads, n_kv_heads, bias=bias) == layer.n_parameters


def test_grouped_query_attention_saves_key_and_value_parameters():
    # D = 4096, H = 32, Hkv = 8, Dh = 128: W_K and W_V are 4096 x 1024 instead of 4096 x 4096.
    full = costs.attention_parameters(4096, 32, bias=False)
    gqa = costs.attention_parameters(4096, 32, 8, bias=False)
    assert full == 4 * 4096**2
    assert gqa == 2 * 4096**2 + 2 * 4096 * 1024
    assert costs.attention_parameters(4096, 32, 1, bias=False) == 2 * 4096**2 + 2 * 4096 * 128


# --- head sizes ----------------------------------------------------------------------------


@pytest.mark.parametrize("d_model, n_heads, expected", [(768, 12, 64), (512, 8, 64), (384, 12, 32), (4096, 32, 128), (512, 1, 512)])
def test_d_head_is_d_model_over_n_heads(d_model, n_heads, expected):
    assert costs.d_head(d_model, n_heads) == expected


def test_d_head_error_names_the_valid_and_the_nearest_head_counts():
    with pytest.raises(ValueError, match=re.escape("n_heads=5 does not divide d_model=64; valid head counts are 1, 2, 4, 8, 16, 32, 64")):
        costs.d_head(64, 5)
    # 768 has 18 divisors: the list is shortened, so the nearest ones are named outright.
    with pytest.raises(ValueError, match=re.escape("n_heads=100 does not divide d_model=768") + r".*the nearest to 100 are 96 and 128$"):
        costs.d_head(768, 100)
    with pytest.raises(ValueError, match=r"the nearest to 1000 is 768$"):
        costs.d_head(768, 1000)
    with pytest.raises(TypeError, match=re.escape("n_heads must be a whole number of at least 1; got 2.5")):
        costs.d_head(64, 2.5)


@pytest.mark.parametrize(
    "d_model, n_heads, nearest",
    [(64, 5, [4, 8]), (64, 8, [8]), (64, 100, [64]), (768, 100, [96, 128]), (768, 10, [8, 12]), (7, 3, [1, 7]), (384, 11, [8, 12])],
)
def test_nearest_valid_head_counts_are_one_below_and_one_above(d_model, n_heads, nearest):
    result = costs.nearest_valid_head_counts(d_model, n_heads)
    assert result == nearest
    assert all(d_model % h == 0 for h in result)


@given(st.integers(1, 2000), st.integers(1, 200))
def test_nearest_valid_head_counts_are_divisors_with_none_closer(d_model, n_heads):
    nearest = costs.nearest_valid_head_counts(d_model, n_heads)
    valid = costs.valid_head_counts(d_model)
    assert nearest and all(h in valid for h in nearest)
    if n_heads in valid:
        assert nearest == [n_heads]
    else:
        below = [h for h in nearest if h < n_heads]
        above = [h for h in nearest if h > n_heads]
        # No valid head count lies strictly between a returned neighbour and n_heads.
        assert not any(below and below[0] < h < n_heads for h in valid)
        assert not any(above and n_heads < h < above[0] for h in valid)
        assert (below != []) == any(h < n_heads for h in valid)
        assert (above != []) == any(h > n_heads for h in valid)


# --- score tables and FLOPs -----------------------------------------------------------------


def test_score_tables_hold_one_t_by_t_table_per_head():
    assert costs.score_table_entries(12, 1024) == 12 * 1024 * 1024 == 12_582_912
    assert costs.score_table_entries(1, 6) == 36
    assert costs.score_table_entries(12, 1024, batch=8) == 8 * 12_582_912
    # Twice the heads, twice the tables; twice the tokens, four times the entries.
    assert costs.score_table_entries(24, 100) == 2 * costs.score_table_entries(12, 100)
    assert costs.score_table_entries(12, 200) == 4 * costs.score_table_entries(12, 100)


def test_score_table_entries_refuse_bad_arguments():
    with pytest.raises(ValueError, match=re.escape("n_tokens=0 is too small; n_tokens must be at least 1")):
        costs.score_table_entries(12, 0)
    with pytest.raises(TypeError, match=re.escape("batch must be a whole number of at least 1; got 1.5")):
        costs.score_table_entries(12, 10, batch=1.5)


def test_flops_of_the_matrix_products_stay_flat_as_heads_change_and_softmax_grows():
    T, D = 128, 768
    heads = costs.valid_head_counts(D)
    flops = [costs.attention_flops(D, h, T) for h in heads]
    for part in ("projections", "scores", "mix"):
        assert len({f[part] for f in flops}) == 1, part
    softmax_parts = [f["softmax"] for f in flops]
    assert all(a < b for a, b in zip(softmax_parts, softmax_parts[1:]))
    totals = [f["total"] for f in flops]
    assert all(a < b for a, b in zip(totals, totals[1:]))


def test_flops_match_the_formulas():
    f = costs.attention_flops(768, 12, 1024)
    T, D = 1024, 768
    assert f["projections"] == 8 * T * D * D
    assert f["scores"] == f["mix"] == 2 * T * T * D  # 2 H T^2 Dh with H Dh = D
    assert f["softmax"] == 5 * 12 * T * T
    assert f["total"] == f["projections"] + f["scores"] + f["softmax"] + f["mix"]


def test_flops_refuse_an_impossible_head_count():
    with pytest.raises(ValueError, match=re.escape("n_heads=7 does not divide d_model=768")):
        costs.attention_flops(768, 7, 10)


# --- KV cache -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model, kib",
    [("GPT-2 small", 36), ("Llama-2-7B", 512), ("Llama-2-70B", 320), ("Mistral-7B v0.1", 128), ("Llama-3-8B", 128)],
)
def test_kv_cache_per_token_in_16_bit_matches_the_course_figures(model, kib):
    shape = costs.MODEL_SHAPES[model]
    assert shape.kv_cache_bytes_per_token() == kib * KIB
    assert costs.kv_cache_bytes_per_token(shape.n_layers, shape.n_kv_heads, shape.d_head) == kib * KIB
    # 32-bit values double it.
    assert shape.kv_cache_bytes_per_token(bytes_per_value=4) == 2 * kib * KIB


def test_llama_2_70b_would_need_eight_times_the_cache_without_gqa():
    shape = costs.MODEL_SHAPES["Llama-2-70B"]
    without_gqa = costs.kv_cache_bytes_per_token(shape.n_layers, shape.n_heads, shape.d_head)
    assert without_gqa == 2560 * KIB
    assert without_gqa == 8 * shape.kv_cache_bytes_per_token()


def test_opt_13b_kv_cache_matches_the_vllm_paper():
    # Kwon et al. 2023, section 3: 2 (K and V) x 5120 (hidden) x 40 (layers) x 2 bytes = 800 KB.
    # OPT-13B has 40 heads of 128: 40 x 128 = 5120.
    assert costs.kv_cache_bytes_per_token(40, 40, 128) == 2 * 5120 * 40 * 2 == 819_200
    assert costs.kv_cache_bytes_per_token(40, 40, 128) / 1024 == 800


def test_kv_cache_at_fixed_d_model_does_not_depend_on_the_head_count():
    per_token = {h: costs.kv_cache_bytes_per_token(12, h, 768 // h) for h in costs.valid_head_counts(768)}
    assert set(per_token.values()) == {2 * 12 * 768 * 2}


def test_kv_cache_refuses_bad_arguments():
    with pytest.raises(ValueError, match=re.escape("n_kv_heads=0 is too small; n_kv_heads must be at least 1")):
        costs.kv_cache_bytes_per_token(12, 0, 64)
    with pytest.raises(TypeError, match=re.escape("bytes_per_value must be a whole number of at least 1; got 0.5")):
        costs.kv_cache_bytes_per_token(12, 12, 64, 0.5)


# --- real model shapes -------------------------------------------------------------------------


def test_model_shapes_match_the_course_table():
    assert set(costs.MODEL_SHAPES) == set(COURSE_TABLE)
    for name, row in COURSE_TABLE.items():
        m = costs.MODEL_SHAPES[name]
        assert m.name == name
        assert (m.n_layers, m.d_model, m.n_heads, m.d_head, m.n_kv_heads, m.d_ffn, m.vocab_size, m.context) == row, name


@pytest.mark.parametrize("name", sorted(COURSE_TABLE))
def test_model_shapes_are_consistent(name):
    m = costs.MODEL_SHAPES[name]
    assert m.d_head * m.n_heads == m.d_model
    assert costs.d_head(m.d_model, m.n_heads) == m.d_head
    assert m.n_heads % m.n_kv_heads == 0
    assert "config" in m.source
