"""Tests for mha_core.serving: the measured head-count sweep and cached against uncached decoding.

The decoding helpers run ``TorchMultiHeadAttention``'s own key/value cache
(``new_kv_cache``; ``layer(x_chunk, kv_cache=cache)``).
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mha_core import costs, serving  # noqa: E402
from mha_core.examples import TOKENS  # noqa: E402
from mha_core.torch_attention import TorchMultiHeadAttention  # noqa: E402


def test_the_longer_text_starts_with_the_running_sentence():
    words = serving.longer_text(40)
    assert len(words) == 40 and tuple(words[: len(TOKENS)]) == tuple(TOKENS)
    assert serving.longer_text(3) == ["the", "cache", "key"]
    with pytest.raises(ValueError, match="^n_tokens=0"):
        serving.longer_text(0)


def test_text_vectors_give_one_vector_per_word():
    words = serving.longer_text(30)
    x = serving.text_vectors(words, 8, seed=0)  # (T, D)
    assert x.shape == (30, 8) and x.dtype == np.float32
    first, again = words.index("cache"), words.index("cache", words.index("cache") + 1)
    np.testing.assert_array_equal(x[first], x[again])
    assert not np.array_equal(x[0], x[1])


def test_head_count_sweep_times_every_shape_and_carries_the_calculators_numbers():
    threads = torch.get_num_threads()
    sweep = serving.head_count_sweep(16, head_counts=(1, 4, 16), token_counts=(8, 32), repeats=2)
    assert torch.get_num_threads() == threads  # restored
    assert sweep.seconds.shape == (2, 3) and (sweep.seconds > 0).all()
    assert sweep.flops[1, 2] == costs.attention_flops(16, 16, 32)["total"]
    assert sweep.score_entries[0, 1] == 4 * 8 * 8
    assert set(sweep.kv_bytes_per_token) == {2 * 16 * 4}  # one layer, fp32: 2 x D x 4 bytes for every H
    rows = sweep.rows()
    assert len(rows) == 6 and rows[0]["n_tokens"] == 8 and rows[0]["n_heads"] == 1 and rows[0]["d_head"] == 16


def test_head_count_sweep_refuses_a_head_count_that_does_not_divide_d_model():
    with pytest.raises(ValueError, match="n_heads=3 does not divide d_model=16"):
        serving.head_count_sweep(16, head_counts=(1, 3), token_counts=(8,), repeats=1)


@pytest.mark.parametrize("n_kv_heads, bias", [(None, True), (2, False), (1, True)])
def test_cached_and_uncached_decoding_equal_the_full_causal_pass(n_kv_heads, bias):
    layer = TorchMultiHeadAttention(32, 8, n_kv_heads=n_kv_heads, bias=bias, seed=0)
    x = torch.from_numpy(serving.text_vectors(serving.longer_text(24), 32))[None]  # (1, T, D)
    threads = torch.get_num_threads()
    result = serving.compare_decoding(layer, x, repeats=1)
    assert torch.get_num_threads() == threads  # timed on one thread, then restored
    assert result.n_tokens == 24
    assert result.max_abs_diff_cached < 1e-5 and result.max_abs_diff_uncached < 1e-5
    assert result.cache_nbytes == result.calculated_nbytes == costs.kv_cache_bytes(
        1, 24, layer.n_kv_heads, 4, bytes_per_value=4)
    assert result.cached_s > 0 and result.uncached_s > 0 and result.speedup == result.uncached_s / result.cached_s


@pytest.mark.parametrize("chunk", [1, 3, 7, 24])
def test_decoding_in_chunks_gives_the_same_outputs(chunk):
    layer = TorchMultiHeadAttention(16, 4, n_kv_heads=2, seed=1)
    x = torch.randn(2, 24, 16, generator=torch.Generator().manual_seed(0))  # (B, T, D)
    with torch.inference_mode():
        full = layer(x, is_causal=True)[0]  # (B, T, D)
    cached, cache = serving.decode_cached(layer, x, chunk=chunk)
    assert cached.shape == (2, 24, 16) and cache.length == 24
    torch.testing.assert_close(cached, full, atol=1e-5, rtol=0)


# -- notebook 09, section 9: decoding time against bytes read (kv_sharing_decode) ----------------------


def test_kv_sharing_decode_reports_the_bytes_each_layout_reads():
    rows = serving.kv_sharing_decode(32, 8, (8, 2, 1), n_tokens=16, rounds=2)
    assert [r["kind"] for r in rows] == ["MHA", "GQA", "MQA"]
    assert [r["cache_nbytes"] for r in rows] == [r["calculated_nbytes"] for r in rows] == [
        costs.kv_cache_bytes(1, 16, h, 4, bytes_per_value=4) for h in (8, 2, 1)]
    assert [r["bytes_read"] for r in rows] == [costs.layer_decode_bytes(32, 8, h, 16) for h in (8, 2, 1)]
    for r in rows:
        low, high = r["ms_per_token_range"]
        assert 0 < low <= r["ms_per_token"] <= high


def test_at_the_notebooks_size_mqa_is_nowhere_near_16_times_faster():
    # Notebook 09 says: the cache shrinks 16 times, the time per token far less. Medians of
    # interleaved rounds after a warm-up; even a cold first run (0.067 / 0.165 / 0.369 ms,
    # MQA slowest) never came near the 16 times the cache bytes fall.
    rows = serving.kv_sharing_decode(256, 16, (16, 4, 1), n_tokens=128, rounds=3)
    mha, mqa = rows[0], rows[-1]
    assert mha["cache_nbytes"] == 16 * mqa["cache_nbytes"]
    assert mha["ms_per_token"] / mqa["ms_per_token"] < 16 / 2


def test_the_scaffolding_for_a_missing_cache_is_gone():
    # The cache exists; the checks and the message for its absence went with the fake layer.
    for name in ("has_kv_cache", "KV_CACHE_MISSING", "_require_cache", "cache_shrink"):
        assert not hasattr(serving, name), name
    assert hasattr(TorchMultiHeadAttention, "new_kv_cache")
