"""What heads cost (mha_core.costs), checked against published figures
("Facts checked against their sources") and against the layer itself."""

from __future__ import annotations

import re
import signal
from contextlib import contextmanager

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_core import costs
from mha_core.attention import MultiHeadAttention

KIB = 1024

# Each model's published config: layers, d_model, heads, d_head, KV heads, FFN, vocab, context
# (Mistral-7B v0.1's context from its paper's Table 1; see CONTEXT_SOURCES).
COURSE_TABLE = {
    "GPT-2 small": (12, 768, 12, 64, 12, 3072, 50257, 1024),
    "BERT-base": (12, 768, 12, 64, 12, 3072, 30522, 512),
    "all-MiniLM-L6-v2": (6, 384, 12, 32, 12, 1536, 30522, 512),
    "Llama-2-7B": (32, 4096, 32, 128, 32, 11008, 32000, 4096),
    "Llama-2-70B": (80, 8192, 64, 128, 8, 28672, 32000, 4096),
    "Mistral-7B v0.1": (32, 4096, 32, 128, 8, 14336, 32000, 8192),
    "Llama-3-8B": (32, 4096, 32, 128, 8, 14336, 128256, 8192),
    "Gemma-7B": (28, 3072, 16, 256, 16, 24576, 256000, 8192),
    "Gemma-2B": (18, 2048, 8, 256, 1, 16384, 256000, 8192),
    "SmolLM2-135M": (30, 576, 9, 64, 3, 1536, 49152, 8192),
}
#: Models whose d_head is not d_model / H (a convention, not a law).
D_HEAD_NOT_D_MODEL_OVER_H = {"Gemma-7B"}


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
    if name in D_HEAD_NOT_D_MODEL_OVER_H:
        # Gemma-7B: 16 heads of 256 = 4096 on a 3072-wide model.
        assert m.d_head * m.n_heads != m.d_model
    else:
        assert m.d_head * m.n_heads == m.d_model
        assert costs.d_head(m.d_model, m.n_heads) == m.d_head
    assert m.n_heads % m.n_kv_heads == 0
    assert "config" in m.source


#: A context taken from elsewhere than the config: (where it comes from, the config's max_position_embeddings).
#: Jiang et al. 2023, Table 1: context_len 8192; mistralai/Mistral-7B-v0.1 config.json: max_position_embeddings 32768.
CONTEXT_SOURCES = {"Mistral-7B v0.1": ("Table 1", 32768)}


@pytest.mark.parametrize("name", sorted(COURSE_TABLE))
def test_each_context_cites_where_it_comes_from(name):
    m = costs.MODEL_SHAPES[name]
    if name in CONTEXT_SOURCES:
        cited, config_positions = CONTEXT_SOURCES[name]
        assert cited in m.context_source and "Jiang et al. 2023" in m.context_source
        assert m.config_max_positions == config_positions != m.context
    else:  # the config's own figure, cited by ``source``
        assert m.context_source is None and m.config_max_positions is None


# --- the KV cache of a whole context ----------------------------------------------------------


@pytest.mark.parametrize(
    "model, kib",
    [
        ("GPT-2 small", 36), ("Llama-2-7B", 512), ("Llama-2-70B", 320), ("Mistral-7B v0.1", 128), ("Llama-3-8B", 128),
        ("Gemma-7B", 448), ("Gemma-2B", 18),
    ],
)
def test_kv_cache_bytes_of_one_token_are_the_published_per_token_figures(model, kib):
    m = costs.MODEL_SHAPES[model]
    assert costs.kv_cache_bytes(m.n_layers, 1, m.n_kv_heads, m.d_head) == kib * KIB
    assert m.kv_cache_bytes(1) == kib * KIB


def test_smollm2_keeps_23040_bytes_per_token_at_16_bits_and_would_keep_three_times_that_with_9_kv_heads():
    m = costs.MODEL_SHAPES["SmolLM2-135M"]
    assert m.kv_cache_bytes_per_token() == 2 * 30 * 3 * 64 * 2 == 23_040
    assert m.kv_cache_bytes(1, n_kv_heads=9) == 69_120


def test_kv_cache_bytes_are_the_per_token_figure_times_tokens_and_batch():
    assert costs.kv_cache_bytes(12, 1024, 12, 64) == 1024 * 36 * KIB == 36 * 2**20  # GPT-2 small, full context
    # Llama-2-7B at its 4,096-token context: 2 GiB per sequence; 8 sequences 16 GiB.
    assert costs.MODEL_SHAPES["Llama-2-7B"].kv_cache_bytes(4096) == 2 * 2**30
    assert costs.MODEL_SHAPES["Llama-2-7B"].kv_cache_bytes(4096, batch=8) == 16 * 2**30
    assert costs.kv_cache_bytes(32, 4096, 32, 128, bytes_per_value=4) == 4 * 2**30


def test_opt_13b_kv_cache_of_one_token_is_800_kb_as_in_the_vllm_paper():
    assert costs.kv_cache_bytes(40, 1, 40, 128) == 819_200 == 800 * KIB


@given(
    n_layers=st.integers(1, 100), n_tokens=st.integers(1, 10**6), n_kv_heads=st.integers(1, 128),
    d_head=st.integers(1, 512), batch=st.integers(1, 1024), bytes_per_value=st.sampled_from([1, 2, 4, 8]),
)
def test_kv_cache_bytes_law(n_layers, n_tokens, n_kv_heads, d_head, batch, bytes_per_value):
    total = costs.kv_cache_bytes(n_layers, n_tokens, n_kv_heads, d_head, batch=batch, bytes_per_value=bytes_per_value)
    per_token = costs.kv_cache_bytes_per_token(n_layers, n_kv_heads, d_head, bytes_per_value)
    assert total == per_token * n_tokens * batch == 2 * n_layers * n_tokens * n_kv_heads * d_head * batch * bytes_per_value
    assert type(total) is int


def test_sharing_key_value_heads_shrinks_the_cache_by_h_over_hkv():
    m = costs.MODEL_SHAPES["Llama-2-70B"]
    mha = costs.kv_cache_bytes(m.n_layers, 4096, m.n_heads, m.d_head)
    for n_kv_heads in costs.valid_head_counts(m.n_heads):  # 1 (MQA), 2, 4, 8 (GQA), ..., 64 (MHA)
        assert costs.kv_cache_bytes(m.n_layers, 4096, n_kv_heads, m.d_head) * (m.n_heads // n_kv_heads) == mha


# --- score tables in bytes ------------------------------------------------------------------------


def test_score_table_bytes_are_entries_times_bytes_per_value():
    assert costs.score_table_bytes(12, 1024) == 12 * 1024**2 * 4 == 48 * 2**20  # GPT-2 small, fp32, one layer
    assert costs.score_table_bytes(12, 1024, batch=8, bytes_per_value=2) == 8 * 12 * 1024**2 * 2
    assert costs.score_table_bytes(32, 4096) == costs.score_table_entries(32, 4096) * 4


@given(
    shape=st.sampled_from([(8, 1), (8, 2), (8, 4), (12, 3), (16, 8), (16, 16)]),
    n_tokens=st.integers(1, 9),
    batch=st.integers(1, 3),
)
def test_score_table_bytes_equal_the_numpy_layers_weights(shape, n_tokens, batch):
    d_model, n_heads = shape
    x = np.random.default_rng(0).standard_normal((batch, n_tokens, d_model))  # (B, T, D)
    weights = MultiHeadAttention(d_model, n_heads, seed=0)(x).weights  # (B, H, T, T) float64
    assert weights.nbytes == costs.score_table_bytes(n_heads, n_tokens, batch=batch, bytes_per_value=8)


@pytest.mark.parametrize("d_model, n_heads, n_kv_heads, n_tokens, batch", [(16, 4, None, 7, 2), (16, 4, 1, 5, 1), (32, 8, 2, 12, 3)])
def test_score_table_bytes_equal_the_torch_layers_weights(d_model, n_heads, n_kv_heads, n_tokens, batch):
    torch = pytest.importorskip("torch")
    from mha_core.torch_attention import TorchMultiHeadAttention

    layer = TorchMultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads, seed=0)
    x = torch.randn(batch, n_tokens, d_model)  # (B, T, D) fp32
    _, weights = layer(x, need_weights=True)  # (B, H, T, T)
    assert weights.dtype == torch.float32
    assert weights.numel() * weights.element_size() == costs.score_table_bytes(n_heads, n_tokens, batch=batch)


# --- the KV cache the torch layer really builds ---------------------------------------------------


def _torch_layer_with_cache():
    torch = pytest.importorskip("torch")
    from mha_core.torch_attention import TorchMultiHeadAttention

    if not hasattr(TorchMultiHeadAttention, "new_kv_cache"):
        pytest.skip("needs TorchMultiHeadAttention.new_kv_cache (helper 'core' adds it)")
    return torch, TorchMultiHeadAttention


@pytest.mark.parametrize("d_model, n_heads, n_kv_heads, max_tokens, batch", [(16, 4, None, 10, 1), (32, 8, 2, 33, 3), (64, 8, 1, 128, 2)])
def test_kv_cache_bytes_equal_the_bytes_of_the_cache_the_torch_layer_builds(d_model, n_heads, n_kv_heads, max_tokens, batch):
    torch, TorchMultiHeadAttention = _torch_layer_with_cache()
    layer = TorchMultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads, seed=0)
    Hkv, Dh = layer.n_kv_heads, layer.d_head
    for dtype, bytes_per_value in ((torch.float32, 4), (torch.float64, 8), (torch.bfloat16, 2)):
        cache = layer.new_kv_cache(batch=batch, max_tokens=max_tokens, dtype=dtype)
        assert tuple(cache.k.shape) == tuple(cache.v.shape) == (batch, Hkv, max_tokens, Dh)
        measured = cache.k.numel() * cache.k.element_size() + cache.v.numel() * cache.v.element_size()
        expected = costs.kv_cache_bytes(1, max_tokens, Hkv, Dh, batch=batch, bytes_per_value=bytes_per_value)
        assert measured == cache.nbytes == expected


# --- bad input: every calculator, every parameter ---------------------------------------------------

#: Each calculator with good arguments (all keyword), the names of its size parameters.
CALCULATORS = {
    "kv_cache_bytes": (costs.kv_cache_bytes, dict(n_layers=12, n_tokens=1024, n_kv_heads=12, d_head=64, batch=2, bytes_per_value=2)),
    "kv_cache_bytes_per_token": (costs.kv_cache_bytes_per_token, dict(n_layers=12, n_kv_heads=12, d_head=64, bytes_per_value=2)),
    "score_table_bytes": (costs.score_table_bytes, dict(n_heads=12, n_tokens=1024, batch=2, bytes_per_value=4)),
    "score_table_entries": (costs.score_table_entries, dict(n_heads=12, n_tokens=1024, batch=2)),
    "attention_flops": (costs.attention_flops, dict(d_model=768, n_heads=12, n_tokens=1024)),
    "attention_parameters": (costs.attention_parameters, dict(d_model=768, n_heads=12, n_kv_heads=4)),
    "d_head": (costs.d_head, dict(d_model=768, n_heads=12)),
    "valid_head_counts": (costs.valid_head_counts, dict(d_model=768)),
    "nearest_valid_head_counts": (costs.nearest_valid_head_counts, dict(d_model=768, n_heads=10)),
    "cached_tokens": (costs.cached_tokens, dict(n_tokens=10_000, sliding_window=4096)),
    "window_reach": (costs.window_reach, dict(n_layers=32, window=4096)),
    "quantized_kv_cache_bytes": (costs.quantized_kv_cache_bytes, dict(n_layers=32, n_tokens=8192, n_kv_heads=8, d_head=128, bits=4,
                                                                      group_size=64, scale_bytes=2, batch=2, sliding_window=4096)),
    "layer_decode_bytes": (costs.layer_decode_bytes, dict(d_model=256, n_heads=16, n_kv_heads=4, n_tokens=128, bytes_per_value=4)),
}
#: Parameters where None is a valid choice (MHA; no window; no scales counted).
NONE_IS_VALID = {"n_kv_heads", "sliding_window", "group_size"}
CASES = [(name, param) for name, (_, kwargs) in CALCULATORS.items() for param in kwargs]


@pytest.mark.parametrize("name, param", CASES)
@pytest.mark.parametrize("bad, error", [(0, ValueError), (-3, ValueError), (2.0, TypeError), (1.5, TypeError),
                                        (True, TypeError), ("12", TypeError), (None, TypeError), (np.float64(4), TypeError)])
def test_every_calculator_refuses_a_bad_size_naming_the_parameter(name, param, bad, error):
    function, kwargs = CALCULATORS[name]
    if param in NONE_IS_VALID and bad is None:
        pytest.skip(f"{param}=None is a valid choice")
    with pytest.raises(error, match=rf"^{param}\b"):
        function(**{**kwargs, param: bad})


@pytest.mark.parametrize("name", CALCULATORS)
@pytest.mark.parametrize("np_int", [np.int64, np.int32, np.uint16])
def test_numpy_integers_give_the_same_exact_python_integers(name, np_int):
    function, kwargs = CALCULATORS[name]
    expected = function(**kwargs)
    got = function(**{k: np_int(v) for k, v in kwargs.items()})
    assert got == expected
    values = got.values() if isinstance(got, dict) else got if isinstance(got, list) else [got]
    assert all(type(v) is int for v in values)


def test_numpy_integers_never_wrap_around():
    # 2 * 2**80 does not fit in int64: NumPy arithmetic would wrap it to 0.
    assert costs.kv_cache_bytes_per_token(*[np.int64(2**20)] * 4) == 2 * 2**80
    assert costs.kv_cache_bytes(*[np.int64(2**20)] * 4, batch=np.int64(2**20)) == 2 * 2**100 * 2  # 16-bit: 2 bytes
    flops = costs.attention_flops(np.int64(4096), np.int64(32), 10**12)
    assert flops["projections"] == 8 * 10**12 * 4096**2
    assert flops["total"] == costs.attention_flops(4096, 32, 10**12)["total"] > 2**63


def test_absurd_sizes_give_exact_integers():
    # 10**12 tokens: no overflow, no float rounding of a byte count.
    assert costs.kv_cache_bytes(80, 10**12, 8, 128) == 327_680 * 10**12
    assert costs.score_table_bytes(64, 10**12, batch=10**3) == 64 * 10**24 * 10**3 * 4
    assert costs.score_table_entries(64, 10**12) == 64 * 10**24
    assert costs.kv_cache_bytes(80, 10**12 + 1, 8, 128) - costs.kv_cache_bytes(80, 10**12, 8, 128) == 327_680


# --- divisors in O(sqrt(n)) ------------------------------------------------------------------------


@contextmanager
def answers_within(seconds: int):
    """Fail (instead of hanging) if the block takes longer than ``seconds``: a search that counts to n would."""
    def stop(signum, frame):
        raise TimeoutError(f"no answer within {seconds} s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def test_a_huge_odd_d_model_is_refused_with_its_nearest_head_counts_at_once():
    # 10**12 + 1 = 73 x 137 x 99,990,001: counting up to it would take hours.
    with answers_within(10), pytest.raises(ValueError, match=r"n_heads=2 does not divide d_model=1000000000001; valid head counts are 1, 73, 137, "):
        costs.d_head(10**12 + 1, 2)
    with answers_within(10):
        assert costs.nearest_valid_head_counts(10**12 + 1, 2) == [1, 73]
        assert costs.valid_head_counts(10**12 + 1) == [1, 73, 137, 10001, 99990001, 7299270073, 13698630137, 10**12 + 1]


def test_valid_head_counts_of_a_billion_are_its_hundred_divisors():
    with answers_within(10):
        heads = costs.valid_head_counts(10**9)  # 2**9 x 5**9: 10 x 10 divisors
    assert len(heads) == 100 and heads == sorted(heads)
    assert heads == sorted(2**a * 5**b for a in range(10) for b in range(10))


def test_a_prime_d_model_has_two_head_counts():
    p = 999_999_999_989  # the largest prime below 10**12
    with answers_within(10):
        assert costs.valid_head_counts(p) == [1, p]
        assert costs.nearest_valid_head_counts(p, 12) == [1, p]


@given(st.integers(1, 3000))
def test_valid_head_counts_are_exactly_the_divisors(n):
    assert costs.valid_head_counts(n) == [d for d in range(1, n + 1) if n % d == 0]


def test_a_d_model_too_large_to_search_is_refused_not_searched():
    with answers_within(10), pytest.raises(ValueError, match=r"^d_model=10{16}1 is too large"):
        costs.valid_head_counts(10**17 + 1)
    # A head count that divides needs no search, whatever the size.
    assert costs.d_head(2**80, 2**10) == 2**70


# --- what fits in a GPU ------------------------------------------------------------------------------


def test_concurrent_sequences_divide_the_memory_left_after_the_weights():
    GiB = 2**30
    llama = costs.MODEL_SHAPES["Llama-2-7B"]
    per_sequence = llama.kv_cache_bytes(4096)  # 2 GiB
    assert costs.concurrent_sequences(80 * GiB, per_sequence) == 40
    weights = llama.parameter_bytes()  # 6.74e9 x 2 bytes
    assert weights == 13_480_000_000
    assert costs.concurrent_sequences(80 * GiB, per_sequence, reserved_bytes=weights) == (80 * GiB - weights) // (2 * GiB) == 33
    # With 8 KV heads instead of 32 (GQA), four times as many.
    gqa = llama.kv_cache_bytes(4096, n_kv_heads=8)
    assert costs.concurrent_sequences(80 * GiB, gqa, reserved_bytes=weights) == (80 * GiB - weights) // (GiB // 2) == 134
    # Weights larger than the memory: nothing fits (not a negative count).
    assert costs.concurrent_sequences(80 * GiB, per_sequence, reserved_bytes=200 * GiB) == 0


@pytest.mark.parametrize("bad, error", [(-1, ValueError), (1.0, TypeError), (True, TypeError), (None, TypeError)])
def test_concurrent_sequences_refuse_bad_sizes(bad, error):
    for param in ("memory_bytes", "kv_bytes_per_sequence", "reserved_bytes"):
        kwargs = {"memory_bytes": 2**30, "kv_bytes_per_sequence": 2**20, "reserved_bytes": 0, param: bad}
        with pytest.raises(error, match=rf"^{param}\b"):
            costs.concurrent_sequences(kwargs.pop("memory_bytes"), kwargs.pop("kv_bytes_per_sequence"), **kwargs)
    assert costs.concurrent_sequences(np.int64(2**62), np.int64(3), reserved_bytes=np.int64(1)) == (2**62 - 1) // 3


def _llama_style_parameters(m: costs.ModelShape) -> int:
    """Parameters of a Llama-style decoder from its shape: untied embeddings and output, gated FFN, RMS norms."""
    kv_width = m.n_kv_heads * m.d_head
    attention = 2 * m.d_model * m.n_heads * m.d_head + 2 * m.d_model * kv_width
    layer = attention + 3 * m.d_model * m.d_ffn + 2 * m.d_model
    return m.n_layers * layer + 2 * m.vocab_size * m.d_model + m.d_model


@pytest.mark.parametrize("name", ["Llama-2-7B", "Llama-2-70B", "Mistral-7B v0.1", "Llama-3-8B"])
def test_published_parameter_counts_agree_with_the_shapes(name):
    m = costs.MODEL_SHAPES[name]
    assert abs(m.n_parameters - _llama_style_parameters(m)) / m.n_parameters < 0.005


def test_every_model_has_a_parameter_count_and_parameter_bytes():
    for m in costs.MODEL_SHAPES.values():
        assert m.n_parameters and m.parameter_bytes(4) == 2 * m.parameter_bytes() == 4 * m.n_parameters


# --- what each model is: decoder or encoder, its positions, its window -------------------------------

#: sliding_window in each published config (Mistral-7B v0.1: 4096; Jiang et al. 2023); None elsewhere.
SLIDING_WINDOWS = {"Mistral-7B v0.1": 4096}
ENCODERS = {"BERT-base", "all-MiniLM-L6-v2"}
#: Learned position embeddings (a table with one row per position); the others use rotary positions.
LEARNED_POSITIONS = {"GPT-2 small", "BERT-base", "all-MiniLM-L6-v2"}


@pytest.mark.parametrize("name", sorted(COURSE_TABLE))
def test_each_model_carries_its_window_its_kind_and_its_positions(name):
    m = costs.MODEL_SHAPES[name]
    assert m.sliding_window == SLIDING_WINDOWS.get(name)
    assert m.kind == ("encoder" if name in ENCODERS else "decoder")
    assert m.generates is (name not in ENCODERS)
    assert m.positions == ("learned" if name in LEARNED_POSITIONS else "rotary")


@pytest.mark.parametrize("name", sorted(ENCODERS))
def test_an_encoder_has_no_kv_cache_and_says_so(name):
    m = costs.MODEL_SHAPES[name]
    for ask in (lambda: m.kv_cache_bytes(128), lambda: m.kv_cache_bytes_per_token(), lambda: costs.decode_step_cost(m, 128)):
        with pytest.raises(ValueError, match=rf"^{re.escape(name)} is an encoder: it reads its whole input at once and keeps no KV cache"):
            ask()


# --- sliding windows -------------------------------------------------------------------------------------

MiB = 2**20


def test_mistral_keeps_a_rolling_buffer_of_4096_tokens_512_mib_at_any_length_past_it():
    m = costs.MODEL_SHAPES["Mistral-7B v0.1"]
    # At 16 bits, 128 KiB per token x 4,096 tokens = 512 MiB, once T passes the window.
    assert m.kv_cache_bytes(4096) == m.kv_cache_bytes(8192) == m.kv_cache_bytes(32768) == 512 * MiB
    # Without the window: 1 GiB at 8,192 tokens (twice), 4 GiB at 32,768 (eight times).
    assert m.kv_cache_bytes(8192, windowed=False) == 1024 * MiB == 2 * m.kv_cache_bytes(8192)
    assert m.kv_cache_bytes(32768, windowed=False) == 4096 * MiB == 8 * m.kv_cache_bytes(32768)
    # Inside the window nothing is dropped.
    assert m.kv_cache_bytes(1000) == m.kv_cache_bytes(1000, windowed=False) == 1000 * 128 * KIB
    assert m.cached_tokens(32768) == 4096 and m.cached_tokens(32768, windowed=False) == 32768


def test_models_without_a_window_keep_every_token():
    llama = costs.MODEL_SHAPES["Llama-3-8B"]
    assert llama.kv_cache_bytes(32768) == llama.kv_cache_bytes(32768, windowed=False) == 32768 * 128 * KIB


@given(n_tokens=st.integers(1, 10**7), window=st.one_of(st.none(), st.integers(1, 10**6)))
def test_cached_tokens_are_min_t_w(n_tokens, window):
    assert costs.cached_tokens(n_tokens, window) == (n_tokens if window is None else min(n_tokens, window))
    assert costs.kv_cache_bytes(2, n_tokens, 1, 4, sliding_window=window) == 2 * 2 * 4 * 2 * costs.cached_tokens(n_tokens, window)


def test_cached_tokens_refuse_bad_sizes():
    with pytest.raises(ValueError, match=re.escape("sliding_window=0 is too small")):
        costs.cached_tokens(10, 0)
    with pytest.raises(TypeError, match="^windowed must be True or False"):
        costs.MODEL_SHAPES["Mistral-7B v0.1"].kv_cache_bytes(10, windowed="yes")


@pytest.mark.parametrize("n_tokens, window", [(1, 1), (6, 1), (8, 3), (10, 4), (5, 5), (5, 9)])
def test_the_sliding_window_mask_lets_each_query_see_its_last_w_tokens(n_tokens, window):
    from mha_core.attention import causal_mask

    mask = costs.sliding_window_mask(n_tokens, window)  # (T, T), True = blocked
    assert mask.shape == (n_tokens, n_tokens) and mask.dtype == bool
    for i in range(n_tokens):
        assert [j for j in range(n_tokens) if not mask[i, j]] == list(range(max(0, i - window + 1), i + 1))
    if window >= n_tokens:
        np.testing.assert_array_equal(mask, causal_mask(n_tokens))


def test_attention_under_the_window_puts_no_weight_further_back():
    from mha_core.attention import scaled_dot_product_attention

    rng = np.random.default_rng(0)
    q, k, v = (rng.standard_normal((2, 10, 4)) for _ in range(3))  # (H, T, Dh)
    mask = costs.sliding_window_mask(10, 3)
    _, weights = scaled_dot_product_attention(q, k, v, attn_mask=mask)  # (H, T, T)
    assert np.all(weights[:, mask] == 0)
    np.testing.assert_allclose(weights.sum(-1), 1.0)


@pytest.mark.parametrize("n_tokens, window, n_layers", [(12, 4, 1), (12, 4, 2), (12, 4, 3), (20, 3, 5), (9, 2, 8), (16, 16, 2)])
def test_information_reaches_back_layers_times_w_minus_1_tokens(n_tokens, window, n_layers):
    reach = costs.reach_after_layers(n_tokens, window, n_layers)  # (T, T)
    span = costs.window_reach(n_layers, window)
    for i in range(n_tokens):
        assert [j for j in range(n_tokens) if reach[i, j]] == list(range(max(0, i - span + 1), i + 1))


def test_mistral_reaches_about_131k_tokens_through_its_32_layers():
    # Jiang et al. 2023: "a theoretical attention span of approximately 131K tokens" (32 layers x 4,096).
    assert costs.window_reach(32, 4096) == 131_041
    assert abs(costs.window_reach(32, 4096) - 32 * 4096) < 32


# --- prefill against decode --------------------------------------------------------------------------------


def test_a_decode_step_of_llama_2_7b_does_one_flop_per_byte():
    llama = costs.MODEL_SHAPES["Llama-2-7B"]
    step = costs.decode_step_cost(llama, 4096)
    # 2 x 6.74e9 weights (a multiply-add each) + 4 x 32 x 32 x 128 x 4096 for attention; bytes:
    # 6.74e9 x 2 (the weights) + 2 GiB of cache. With Hkv = H in 16 bits both come out equal.
    assert step.flops == 2 * 6_740_000_000 + 4 * 32 * 32 * 128 * 4096 == 15_627_483_648
    assert step.bytes_moved == 13_480_000_000 + 2 * 2**30 == step.flops
    assert step.intensity == 1.0


def test_a_prefill_of_llama_2_7b_does_thousands_of_flops_per_byte():
    llama = costs.MODEL_SHAPES["Llama-2-7B"]
    prefill = costs.prefill_cost(llama, 4096)
    assert prefill.flops == 2 * 6_740_000_000 * 4096 + 4 * 32 * 32 * 128 * (4096 * 4097 // 2)
    assert prefill.bytes_moved == 13_480_000_000 + 2 * 2**30  # weights read once, the cache written once
    assert round(prefill.intensity) == 3815


def test_on_an_a100_a_decode_step_waits_for_memory_and_a_prefill_for_arithmetic():
    llama = costs.MODEL_SHAPES["Llama-2-7B"]
    a100 = costs.A100_80GB
    ridge = a100["flops_per_second"] / a100["bytes_per_second"]
    assert round(ridge) == 153
    decode = costs.decode_step_cost(llama, 4096).seconds_at_least(a100["flops_per_second"], a100["bytes_per_second"])
    prefill = costs.prefill_cost(llama, 4096).seconds_at_least(a100["flops_per_second"], a100["bytes_per_second"])
    assert decode["bound"] == "memory" and prefill["bound"] == "compute"
    assert round(1000 * decode["memory_s"], 1) == 7.7 and round(1000 * decode["compute_s"], 2) == 0.05
    assert round(1000 * prefill["compute_s"]) == 191


def test_a_larger_batch_shares_the_weights_read_but_not_the_caches():
    llama = costs.MODEL_SHAPES["Llama-2-7B"]
    one, many = costs.decode_step_cost(llama, 4096), costs.decode_step_cost(llama, 4096, batch=32)
    assert many.flops == 32 * one.flops
    assert many.weight_bytes == one.weight_bytes == llama.parameter_bytes()
    assert many.cache_bytes == 32 * llama.kv_cache_bytes(4096) == 32 * one.cache_bytes
    assert many.bytes_moved == many.memory_bytes == llama.parameter_bytes() + 32 * llama.kv_cache_bytes(4096)
    # The weights are shared, but 32 caches of 2 GiB (68.7 GB) outweigh them: still far below an A100's 153.
    assert 6 < many.intensity < 7
    mistral = costs.MODEL_SHAPES["Mistral-7B v0.1"]  # 4 query heads per KV head: more work per cached byte
    assert costs.decode_step_cost(mistral, 4096, batch=64).intensity > many.intensity


@pytest.mark.parametrize("n_tokens", [1, 5, 4096, 4097, 10_000])
def test_prefill_attention_counts_min_i_w_keys_for_query_i(n_tokens):
    mistral = costs.MODEL_SHAPES["Mistral-7B v0.1"]
    keys = sum(min(i, 4096) for i in range(1, n_tokens + 1))
    attention = 4 * 32 * 32 * 128 * keys
    assert costs.prefill_cost(mistral, n_tokens).flops == 2 * mistral.n_parameters * n_tokens + attention


# --- a cost priced on a device must fit in that device's memory ---------------------------------------


def test_an_a100_holds_llama_2_7b_and_33_caches_of_4096_tokens_so_a_batch_of_64_needs_two():
    llama, a100 = costs.MODEL_SHAPES["Llama-2-7B"], costs.A100_80GB
    assert a100["memory_bytes"] == 80 * 2**30
    assert round(llama.parameter_bytes() / 2**30, 2) == 12.55 and llama.kv_cache_bytes(4096) == 2 * 2**30
    fits = [b for b in range(1, 100) if costs.decode_step_cost(llama, 4096, batch=b).fit(a100).fits]
    assert fits == list(range(1, 34))  # the calculator's 33
    big = costs.decode_step_cost(llama, 4096, batch=64).fit(a100)
    assert (big.fits, big.largest_batch, big.devices_needed) == (False, 33, 2)
    assert round(big.needed_bytes / 1e9, 1) == 150.9 and round(big.needed_bytes / 2**30, 1) == 140.6
    assert big.largest_batch == costs.concurrent_sequences(a100["memory_bytes"], llama.kv_cache_bytes(4096),
                                                           reserved_bytes=llama.parameter_bytes())


def test_a_least_time_on_a_device_refuses_a_batch_that_does_not_fit_in_its_memory():
    llama, a100 = costs.MODEL_SHAPES["Llama-2-7B"], costs.A100_80GB
    rates = (a100["flops_per_second"], a100["bytes_per_second"])
    fitting = costs.decode_step_cost(llama, 4096, batch=33)
    assert fitting.least_time_on(a100) == fitting.seconds_at_least(*rates)
    with pytest.raises(ValueError, match=re.escape(
            "decode one token at T = 4,096, batch 64 does not fit: it needs 140.6 GiB (150.9 GB) of weights and "
            "caches; one A100 80GB SXM holds 80 GiB, room for at most 33 sequences beside the weights; a batch of 64 "
            "takes at least 2 such GPUs")):
        costs.decode_step_cost(llama, 4096, batch=64).least_time_on(a100)
    with pytest.raises(ValueError, match="does not fit"):  # 34: one sequence too many
        costs.decode_step_cost(llama, 4096, batch=34).least_time_on(a100)
    # Llama-2-70B's weights alone (129 GiB in 16-bit) fill the GPU: no batch fits.
    seventy = costs.decode_step_cost(costs.MODEL_SHAPES["Llama-2-70B"], 4096).fit(a100)
    assert (seventy.fits, seventy.largest_batch, seventy.devices_needed) == (False, 0, 2)
    with pytest.raises(ValueError, match="does not fit"):
        costs.prefill_cost(costs.MODEL_SHAPES["Llama-2-70B"], 4096).least_time_on(a100)


def test_the_fit_check_reads_the_devices_memory_and_refuses_a_bad_one():
    llama = costs.MODEL_SHAPES["Llama-2-7B"]
    step = costs.decode_step_cost(llama, 4096, batch=64)
    twice = {**costs.A100_80GB, "name": "160 GiB GPU", "memory_bytes": 160 * 2**30}
    assert step.fit(twice).fits and step.least_time_on(twice)["bound"] == "memory"
    with pytest.raises(ValueError, match="memory_bytes=0 is too small"):
        step.fit({**costs.A100_80GB, "memory_bytes": 0})


def test_time_bounds_refuse_rates_that_are_not_positive():
    step = costs.decode_step_cost(costs.MODEL_SHAPES["Gemma-2B"], 16)
    with pytest.raises(ValueError, match=r"^bytes_per_second=0 is out of range; bytes_per_second must be a finite number above 0$"):
        step.seconds_at_least(1e12, 0)
    with pytest.raises(TypeError, match=r"^flops_per_second must be a finite number above 0; got '1e12'"):
        step.seconds_at_least("1e12", 1e9)


# --- paged KV caches ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n_tokens, reserved", [(1, 16), (16, 16), (17, 32), (100, 112), (1000, 1008), (4096, 4096)])
def test_pages_of_16_tokens_waste_less_than_one_page(n_tokens, reserved):
    r = costs.paged_reservation(n_tokens)
    assert r.reserved_tokens == reserved and 0 <= r.wasted_tokens < 16


def test_a_contiguous_reservation_wastes_what_the_sequence_does_not_use():
    r = costs.contiguous_reservation(100, 4096)
    assert (r.reserved_tokens, r.wasted_tokens) == (4096, 3996)
    assert round(100 * r.wasted_fraction, 1) == 97.6
    assert costs.contiguous_reservation(4096, 4096).wasted_tokens == 0
    with pytest.raises(ValueError, match=r"^n_tokens=5000 is more than max_tokens=4096"):
        costs.contiguous_reservation(5000, 4096)
    with pytest.raises(ValueError, match=r"^block_tokens=0 is too small"):
        costs.paged_reservation(10, 0)


@given(n_tokens=st.integers(1, 10**6), block=st.integers(1, 256))
def test_pages_hold_every_token_and_waste_at_most_one_page_minus_one(n_tokens, block):
    r = costs.paged_reservation(n_tokens, block)
    assert r.reserved_tokens % block == 0 and 0 <= r.wasted_tokens <= block - 1


# --- quantized KV caches ------------------------------------------------------------------------------------------


def test_8_and_4_bit_caches_take_a_half_and_a_quarter_of_16_bit():
    shape = (32, 32768, 8, 128)  # Mistral-7B: layers, T, KV heads, d_head
    full = costs.kv_cache_bytes(*shape, sliding_window=4096)
    assert full == 512 * MiB
    assert costs.quantized_kv_cache_bytes(*shape, bits=16, sliding_window=4096) == full
    assert costs.quantized_kv_cache_bytes(*shape, bits=8, sliding_window=4096) == 256 * MiB
    assert costs.quantized_kv_cache_bytes(*shape, bits=4, sliding_window=4096) == 128 * MiB
    # One 16-bit scale per 64 values adds 2 / 64 bytes per value: 8 MiB here.
    assert costs.quantized_kv_cache_bytes(*shape, bits=4, group_size=64, sliding_window=4096) == 136 * MiB


def test_quantized_bytes_refuse_a_group_that_does_not_split_d_head():
    with pytest.raises(ValueError, match=r"^group_size=48 does not divide d_head=128; valid group sizes are 1, 2, 4, 8, 16, 32, 64, 128"):
        costs.quantized_kv_cache_bytes(32, 10, 8, 128, bits=4, group_size=48)
    with pytest.raises(ValueError, match=r"^bits=0 is too small"):
        costs.quantized_kv_cache_bytes(32, 10, 8, 128, bits=0)


# --- bytes one layer reads while decoding ------------------------------------------------------------------


def test_decoding_reads_the_layers_weights_every_step_and_the_cache_so_far():
    read = costs.layer_decode_bytes(256, 16, 16, 128)
    assert read["weights"] == 128 * costs.attention_parameters(256, 16) * 4
    assert read["cache"] == sum(costs.kv_cache_bytes(1, t, 16, 16, bytes_per_value=4) for t in range(1, 129))
    mqa = costs.layer_decode_bytes(256, 16, 1, 128)
    assert read["cache"] == 16 * mqa["cache"]  # the cache read falls H / Hkv times
    assert 2 < read["total"] / mqa["total"] < 2.2  # the total barely halves: the weights dominate at this size
    assert read["weights"] > 0.88 * read["total"]


# --- the numbers notebook 09's prose quotes ------------------------------------------------------------


def _serving_notebook_prose() -> str:
    import json
    from pathlib import Path

    nb = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "10_serving_cost.ipynb").read_text())
    return " ".join(" ".join("".join(c["source"]).split()) for c in nb["cells"] if c["cell_type"] == "markdown")


def test_the_numbers_notebook_10_quotes_are_the_ones_costs_computes():
    prose = _serving_notebook_prose()
    GiB = 2**30
    llama, mistral = costs.MODEL_SHAPES["Llama-2-7B"], costs.MODEL_SHAPES["Mistral-7B v0.1"]
    a100 = costs.A100_80GB
    rates = (a100["flops_per_second"], a100["bytes_per_second"])
    prefill, decode = costs.prefill_cost(llama, 4096), costs.decode_step_cost(llama, 4096)
    batch = costs.decode_step_cost(llama, 4096, batch=32)
    too_big = costs.decode_step_cost(llama, 4096, batch=64).fit(a100)
    gpt2_steps = [a / b for a, b in zip([12, 6, 4, 3], [6, 4, 3, 2])]
    mha, mqa = (costs.layer_decode_bytes(256, 16, h, 128) for h in (16, 1))
    saved = {part: mha[part] - mqa[part] for part in mha}
    block, pages = costs.contiguous_reservation(500, 4096), costs.paged_reservation(500, 16)
    per_token = llama.kv_cache_bytes_per_token()
    scales = {m.name: costs.quantized_kv_cache_bytes(m.n_layers, T, m.n_kv_heads, m.d_head, bits=4, group_size=64,
                                                     sliding_window=m.sliding_window)
              - costs.quantized_kv_cache_bytes(m.n_layers, T, m.n_kv_heads, m.d_head, bits=4, sliding_window=m.sliding_window)
              for m, T in ((mistral, 32768), (llama, 4096))}
    reach_3 = np.flatnonzero(costs.reach_after_layers(8, 3, 3)[-1]) + 1  # counted from 1
    reach_1 = np.flatnonzero(costs.reach_after_layers(8, 3, 1)[-1]) + 1
    claims = [
        # section 4: the key/value slider's steps for a 12-head model do not halve
        f"the steps divide it by {gpt2_steps[0]:g}, then {gpt2_steps[1]:g}, then {gpt2_steps[2]:.2f}",
        f"its cache stays at {mistral.kv_cache_bytes(32768) // 2**20} MiB per sequence; **every token** shows the "
        f"{mistral.kv_cache_bytes(32768, windowed=False) // GiB} GiB",
        f"GPT-2 small cannot run past {costs.MODEL_SHAPES['GPT-2 small'].context:,} tokens at all",
        # section 4: Mistral's two context figures, each with its source
        f"The calculator uses {mistral.context:,} tokens, the context in its paper's Table 1; its config.json accepts "
        f"positions up to {mistral.config_max_positions:,} (`max_position_embeddings`)",
        # section 5: sliding windows, positions counted from 1
        f"After one layer, position 8 hears from tokens {reach_1[0]}, {reach_1[1]} and {reach_1[2]} (W = 3); after three "
        f"layers from tokens {reach_3[0]} to {reach_3[-1]}: 1 + 3 × 2 = {costs.window_reach(3, 3)} tokens",
        f"At 8,192 tokens that is half of what keeping every token takes ({mistral.kv_cache_bytes(8192, windowed=False) // 2**20:,} MiB)",
        f"at 32,768 an eighth ({mistral.kv_cache_bytes(32768, windowed=False) // 2**20:,} MiB)",
        f"That length is past the {mistral.context:,}-token context of the paper's Table 1, though within the "
        f"{mistral.config_max_positions:,} positions of its config.json",
        f"information can travel {costs.window_reach(32, 4096):,} tokens",
        # section 8: prefill against decode on an A100, in GB (10**9) where the datasheet counts GB/s
        f"the A100's 80 GiB are {a100['memory_bytes'] / 1e9:.1f} GB",
        f"the prefill does about {prefill.intensity:,.0f} FLOPs per byte, far above the A100's {rates[0] / rates[1]:.0f}",
        f"(at least {1000 * prefill.least_time_on(a100)['compute_s']:.0f} ms)",
        f"One decode step does {decode.intensity:.1f} FLOP per byte: it reads {decode.bytes_moved / 1e9:.1f} GB",
        f"to do {decode.flops / 1e12:.3f} TFLOP, so reading takes at least {1000 * decode.least_time_on(a100)['memory_s']:.2f} ms "
        f"against {1000 * decode.least_time_on(a100)['compute_s']:.2f} ms of arithmetic",
        f"{batch.intensity:.1f} FLOPs per byte, still memory-bound, and its 32 caches ({batch.cache_bytes / 1e9:.1f} GB) now "
        f"outweigh the weights ({batch.weight_bytes / 1e9:.1f} GB) {batch.cache_bytes / batch.weight_bytes:.0f} times",
        f"{a100['memory_bytes'] // GiB} GiB, room for {too_big.largest_batch} caches of 4,096 tokens beside the weights",
        f"A batch of 64 needs {too_big.needed_bytes / 1e9:.1f} GB ({too_big.needed_bytes / GiB:.1f} GiB), at least "
        f"{['one', 'two', 'three'][too_big.devices_needed - 1]} such GPUs",
        # section 9: bytes read while decoding, MHA against MQA: where the saving comes from
        f"MQA reads {mha['total'] / mqa['total']:.2f} times fewer in all",
        f"Of the {saved['total'] / 1e6:.1f} MB it saves over 128 tokens, {saved['weights'] / 1e6:.1f} MB "
        f"({100 * saved['weights'] / saved['total']:.0f}%) are weights",
        f"The cache saves {saved['cache'] / 1e6:.1f} MB",
        f"With MHA's weights and MQA's cache, a layer would read only {mha['total'] / (mha['weights'] + mqa['cache']):.2f} "
        f"times fewer bytes",
        f"section 8's batch of 32 reads {batch.cache_bytes / 1e9:.1f} GB of caches and {batch.weight_bytes / 1e9:.1f} GB of weights",
        # section 10: one block against pages
        f"leaves {block.wasted_tokens:,} of its {block.reserved_tokens:,} slots empty: "
        f"{block.wasted_tokens * per_token / GiB:.2f} GiB",
        f"With pages it leaves {pages.wasted_tokens} slots, {pages.wasted_tokens * per_token // 2**20} MiB",
        # section 11: the scales of 4-bit groups of 64
        f"{scales['Mistral-7B v0.1'] // 2**20} MiB for Mistral, {scales['Llama-2-7B'] // 2**20} MiB for Llama-2-7B",
    ]
    missing = [c for c in claims if c not in prose]
    assert not missing, missing
    assert batch.fit(a100).fits and not too_big.fits and too_big.devices_needed == 2
    assert batch.least_time_on(a100)["bound"] == decode.least_time_on(a100)["bound"] == "memory"
    # W_K and W_V of one key/value head: 256 x 16 instead of 256 x 256, "16 times narrower"
    assert costs.attention_parameters(256, 16, bias=False) - costs.attention_parameters(256, 16, 1, bias=False) == 2 * 256 * (256 - 16)
    # section 9: what the published speed-ups were measured on (Shazeer 2019, section 4; Ainslie et al. 2023)
    assert "Shazeer (2019) timed a 6-layer translation model with d_model 1,024 on a TPUv2, Ainslie et al. (2023) T5-XXL" in prose
    assert "(46 to 3.8 µs per token on a TPUv2)" in prose and round(46 / 3.8) == 12
    for old in ("137 GB", "position 7 hears", "89%", "big models, long contexts", "fused kernels", "the kernels run"):
        assert old not in prose, old


def test_notebook_10_explains_rotary_positions_and_marks_sections_8_10_and_11_optional():
    from pathlib import Path

    prose = _serving_notebook_prose()
    rotary = {m.name for m in costs.MODEL_SHAPES.values() if m.generates and m.positions == "rotary"}
    assert rotary == {m.name for m in costs.MODEL_SHAPES.values() if m.generates} - {"GPT-2 small"}
    assert "The other models that generate here use *rotary positions* (RoPE)" in prose
    assert "not the Jupyter kernel that runs this notebook" in prose
    for number in ("8", "10", "11"):
        heading = prose.index(f"## {number}. ")
        assert "*Optional" in prose[heading:heading + 120], number
    import json

    welcome = json.loads((Path(__file__).resolve().parents[1] / "notebooks" / "00_welcome.ipynb").read_text())
    welcome_prose = " ".join(" ".join("".join(c["source"]).split()) for c in welcome["cells"] if c["cell_type"] == "markdown")
    assert "In 10, sections 8, 10 and 11 (FLOPs per byte on a GPU, paged caches, quantized caches) are optional" in welcome_prose


def test_the_guides_10_section_quotes_the_same_numbers():
    from pathlib import Path

    guide = (Path(__file__).resolve().parents[1] / "docs" / "instructor_guide.md").read_text()
    section = " ".join(guide[guide.index("## 10 · "):guide.index("## 11 · ")].split())
    llama, a100 = costs.MODEL_SHAPES["Llama-2-7B"], costs.A100_80GB
    batch = costs.decode_step_cost(llama, 4096, batch=32)
    too_big = costs.decode_step_cost(llama, 4096, batch=64).fit(a100)
    mha, mqa = (costs.layer_decode_bytes(256, 16, h, 128) for h in (16, 1))
    saved = {part: mha[part] - mqa[part] for part in mha}
    for quoted in (f"({batch.cache_bytes / 1e9:.1f} GB of caches, {batch.weight_bytes / 1e9:.1f} GB of weights)",
                   f"a batch of 64 ({too_big.needed_bytes / 1e9:.1f} GB) is not",
                   f"hold at most {too_big.largest_batch} such caches",
                   f"it reads only {mha['total'] / mqa['total']:.2f} times fewer bytes",
                   f"Of the {saved['total'] / 1e6:.1f} MB MQA saves, {saved['weights'] / 1e6:.1f} MB "
                   f"({100 * saved['weights'] / saved['total']:.0f}%) are weights",
                   f"would save {mha['total'] / (mha['weights'] + mqa['cache']):.2f} times",
                   "(8,192 in its paper's Table 1; its config.json accepts 32,768 positions)"):
        assert quoted in section, quoted
    assert "89%" not in section
