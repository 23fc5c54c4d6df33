"""TorchMultiHeadAttention on its own: shapes, masks, grouped-query heads, conversions, errors.

Parity with torch.nn.MultiheadAttention over a sweep of shapes is in test_parity.py.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import mha_core  # noqa: E402
from mha_core import MultiHeadAttention, TorchMultiHeadAttention, costs  # noqa: E402
from mha_core import torch_attention  # noqa: E402


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def layer_with_biases(d_model=16, n_heads=4, *, n_kv_heads=None, seed=0, dtype=torch.float64, bias_scale=1.0, **kwargs):
    """A seeded layer whose biases are non-zero (normal, times ``bias_scale``), so tests see them."""
    layer = TorchMultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads, seed=seed, dtype=dtype, **kwargs)
    generator = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for b in (layer.b_qkv, layer.b_out):
            if b is not None:
                b.copy_(bias_scale * torch.randn(b.shape, generator=generator, dtype=torch.float64))
    return layer


def randn(*shape, seed=0, dtype=torch.float64):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64).to(dtype)


def max_error(a, b) -> float:
    a = a.detach().double().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
    b = b.detach().double().numpy() if isinstance(b, torch.Tensor) else np.asarray(b)
    assert a.shape == b.shape
    return float(np.max(np.abs(a - b)))


# --- import and construction ------------------------------------------------------------


def test_import_mha_core_does_not_import_torch():
    code = "import mha_core, sys; assert 'torch' not in sys.modules, 'torch was imported'"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr


def test_torch_module_is_reachable_lazily_from_the_package():
    assert mha_core.TorchMultiHeadAttention is TorchMultiHeadAttention
    assert TorchMultiHeadAttention.__module__ == "mha_core.torch_attention"
    with pytest.raises(AttributeError, match="no attribute 'NoSuchThing'"):
        mha_core.NoSuchThing  # noqa: B018


@pytest.mark.parametrize(
    "d_model, n_heads, n_kv_heads, bias",
    [(8, 2, None, True), (16, 4, 2, True), (16, 4, 1, False), (64, 8, 8, False), (768, 12, None, True), (4096, 32, 8, False)],
)
def test_parameter_count_equals_costs_attention_parameters(d_model, n_heads, n_kv_heads, bias):
    layer = TorchMultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv_heads, bias=bias, device="meta")
    expected = costs.attention_parameters(d_model, n_heads, n_kv_heads, bias=bias)
    assert layer.n_parameters == sum(p.numel() for p in layer.parameters()) == expected


def test_768_wide_layer_has_the_course_parameter_counts():
    assert TorchMultiHeadAttention(768, 12, device="meta").n_parameters == 2_362_368
    assert TorchMultiHeadAttention(768, 12, bias=False, device="meta").n_parameters == 2_359_296


def test_fused_projection_holds_q_then_k_then_v_rows():
    layer = TorchMultiHeadAttention(16, 4, n_kv_heads=2)
    assert layer.w_qkv.shape == (16 + 2 * 2 * 4, 16)
    assert layer.b_qkv.shape == (32,)
    assert layer.w_out.shape == (16, 16)
    reference = layer.to_numpy()
    w = layer.w_qkv.detach().double().numpy()
    np.testing.assert_array_equal(w[:16], reference.w_q.T)
    np.testing.assert_array_equal(w[16:24], reference.w_k.T)
    np.testing.assert_array_equal(w[24:], reference.w_v.T)


def test_same_seed_gives_same_weights_and_leaves_global_rng_alone():
    state = torch.get_rng_state()
    a = TorchMultiHeadAttention(16, 4, seed=3)
    b = TorchMultiHeadAttention(16, 4, seed=3)
    c = TorchMultiHeadAttention(16, 4, seed=4)
    assert torch.equal(torch.get_rng_state(), state)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.w_qkv, c.w_qkv)


def test_seed_gives_same_weights_in_float32_and_float64():
    a = TorchMultiHeadAttention(16, 4, seed=5, dtype=torch.float32)
    b = TorchMultiHeadAttention(16, 4, seed=5, dtype=torch.float64)
    assert b.w_qkv.dtype == torch.float64
    assert torch.equal(a.w_qkv, b.w_qkv.float())


def test_without_seed_the_global_rng_decides():
    with torch.random.fork_rng():
        torch.manual_seed(11)
        a = TorchMultiHeadAttention(8, 2)
        torch.manual_seed(11)
        b = TorchMultiHeadAttention(8, 2)
    assert torch.equal(a.w_qkv, b.w_qkv)


def test_initial_weights_are_xavier_uniform_per_block_and_biases_zero():
    layer = TorchMultiHeadAttention(64, 8, n_kv_heads=2, seed=0)
    w_q, w_k, w_v = layer.w_qkv.detach().split([64, 16, 16])
    for block, limit in ((w_q, math.sqrt(6 / 128)), (w_k, math.sqrt(6 / 80)), (w_v, math.sqrt(6 / 80))):
        assert block.abs().max() <= limit
        assert block.abs().max() > 0.9 * limit
    assert torch.count_nonzero(layer.b_qkv) == 0
    assert torch.count_nonzero(layer.b_out) == 0


# --- shapes -------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("n_kv_heads", [None, 2, 1])
def test_output_and_weights_shapes(batch_first, n_kv_heads):
    layer = layer_with_biases(16, 4, n_kv_heads=n_kv_heads, batch_first=batch_first)
    B, Tq, Tk = 2, 3, 5
    query = randn(B, Tq, 16, seed=1)
    key = randn(B, Tk, 16, seed=2)
    if not batch_first:
        query, key = query.transpose(0, 1), key.transpose(0, 1)  # (T, B, D)
    result = layer(query, key)
    assert result.weights is None
    assert result.output.shape == ((B, Tq, 16) if batch_first else (Tq, B, 16))
    output, weights = layer(query, key, need_weights=True)
    assert weights.shape == (B, 4, Tq, Tk)
    torch.testing.assert_close(weights.sum(-1), torch.ones(B, 4, Tq, dtype=torch.float64))
    torch.testing.assert_close(output, result.output, rtol=0, atol=1e-12)


def test_batch_first_false_equals_batch_first_true_on_transposed_input():
    first = layer_with_biases(16, 2, batch_first=True)
    second = layer_with_biases(16, 2, batch_first=False)
    x = randn(3, 4, 16, seed=1)  # (B, T, D)
    out_first = first(x).output  # (B, T, D)
    out_second = second(x.transpose(0, 1)).output.transpose(0, 1)  # (T, B, D) -> (B, T, D)
    assert max_error(out_first, out_second) < 1e-12


@pytest.mark.parametrize("batch_first", [True, False])
def test_unbatched_input_equals_a_batch_of_one(batch_first):
    layer = layer_with_biases(16, 4, batch_first=batch_first)
    x, y = randn(3, 16, seed=1), randn(5, 16, seed=2)  # (T, D)
    padding = torch.tensor([False, False, True, False, True])
    single = layer(x, y, key_padding_mask=padding, need_weights=True)
    assert single.output.shape == (3, 16) and single.weights.shape == (4, 3, 5)
    batched_in = (x[None], y[None]) if batch_first else (x[:, None], y[:, None])  # (1, T, D) or (T, 1, D)
    batched = layer(*batched_in, key_padding_mask=padding[None], need_weights=True)
    batched_out = batched.output[0] if batch_first else batched.output[:, 0]
    assert max_error(single.output, batched_out) < 1e-12
    assert max_error(single.weights, batched.weights[0]) < 1e-12


# --- paths give the same answer --------------------------------------------------------------


def test_fused_self_attention_equals_the_split_projection_paths():
    layer = layer_with_biases(24, 6, n_kv_heads=3)
    x = randn(2, 5, 24, seed=1)
    fused = layer(x).output  # one fused projection
    kv_shared = layer(x, x.clone()).output  # q from query, k and v from one key tensor
    separate = layer(x, x.clone(), x.clone()).output  # three projections
    assert max_error(fused, kv_shared) < 1e-12
    assert max_error(fused, separate) < 1e-12


@given(
    B=st.integers(1, 3),
    Tq=st.integers(1, 6),
    Tk=st.integers(1, 6),
    heads=st.sampled_from([(4, 4), (4, 2), (4, 1), (6, 3), (2, 2)]),
    mask_kind=st.sampled_from(["none", "bool", "float", "padding", "causal", "causal+padding"]),
    seed=st.integers(0, 2**16),
)
def test_sdpa_path_equals_explicit_path(B, Tq, Tk, heads, mask_kind, seed):
    # Example count comes from the hypothesis profile in conftest.py (dev 25, ci 50).
    n_heads, n_kv_heads = heads
    d_model = 2 * n_heads * 2
    layer = layer_with_biases(d_model, n_heads, n_kv_heads=n_kv_heads, seed=seed % 97)
    gen = torch.Generator().manual_seed(seed)
    query = torch.randn(B, Tq, d_model, generator=gen, dtype=torch.float64)
    key = torch.randn(B, Tk, d_model, generator=gen, dtype=torch.float64)
    masks = {}
    if mask_kind == "bool":
        masks["attn_mask"] = torch.rand(Tq, Tk, generator=gen) < 0.5  # some rows may be fully blocked
    elif mask_kind == "float":
        masks["attn_mask"] = torch.randn(Tq, Tk, generator=gen, dtype=torch.float64)
    if "padding" in mask_kind:
        masks["key_padding_mask"] = torch.rand(B, Tk, generator=gen) < 0.5
    if mask_kind.startswith("causal"):
        masks["is_causal"] = True
    fast = layer(query, key, **masks)
    slow = layer(query, key, need_weights=True, **masks)
    assert torch.isfinite(fast.output).all() and torch.isfinite(slow.output).all()
    assert max_error(fast.output, slow.output) < 1e-10
    reference = layer.to_numpy()(
        query.numpy(), key.numpy(), **{k: (v.numpy() if isinstance(v, torch.Tensor) else v) for k, v in masks.items()}
    )
    assert max_error(slow.weights, reference.weights) < 1e-12
    assert max_error(fast.output, reference.output) < 1e-10


@pytest.mark.parametrize("Tq, Tk", [(5, 5), (3, 6), (6, 3)])
def test_is_causal_on_the_plain_path_equals_an_explicit_causal_mask(Tq, Tk):
    layer = layer_with_biases(16, 4, n_kv_heads=2)
    query, key = randn(2, Tq, 16, seed=1), randn(2, Tk, 16, seed=2)
    causal = torch.ones(Tq, Tk, dtype=torch.bool).triu(1)  # True = blocked: keys after the query
    fast = layer(query, key, is_causal=True).output  # SDPA's own causal path
    explicit = layer(query, key, attn_mask=causal).output
    weights = layer(query, key, is_causal=True, need_weights=True).weights
    assert max_error(fast, explicit) < 1e-12
    assert torch.all(weights[..., causal] == 0)
    reference = layer.to_numpy()(query.numpy(), key.numpy(), is_causal=True)
    assert max_error(fast, reference.output) < 1e-12


def test_is_causal_adds_to_a_key_padding_mask():
    layer = layer_with_biases(16, 4)
    x = randn(2, 5, 16, seed=1)
    padding = torch.tensor([[False, False, False, True, True], [False, True, False, False, False]])
    causal = torch.ones(5, 5, dtype=torch.bool).triu(1)  # (Tq, Tk)
    both = causal[None, None] | padding[:, None, None, :]  # (B, 1, Tq, Tk)
    together = layer(x, is_causal=True, key_padding_mask=padding, need_weights=True)
    assert torch.all(together.weights[both.expand(-1, 4, -1, -1)] == 0)
    explicit = layer(x, attn_mask=both.expand(-1, 4, -1, -1).reshape(2 * 4, 5, 5)).output  # (B*H, Tq, Tk)
    assert max_error(together.output, explicit) < 1e-12


def test_bool_and_float_masks_mix_as_in_the_reference():
    layer = layer_with_biases(16, 4)
    x = randn(2, 4, 16, seed=1)
    attn_mask = randn(4, 4, seed=2)  # float: added to the scores
    padding = torch.tensor([[False, False, True, False], [True, False, False, False]])
    ours = layer(x, attn_mask=attn_mask, key_padding_mask=padding, need_weights=True)
    reference = layer.to_numpy()(x.numpy(), attn_mask=attn_mask.numpy(), key_padding_mask=padding.numpy())
    assert max_error(ours.output, reference.output) < 1e-12
    assert max_error(ours.weights, reference.weights) < 1e-12
    assert max_error(layer(x, attn_mask=attn_mask, key_padding_mask=padding).output, reference.output) < 1e-12


@pytest.mark.parametrize("need_weights", [False, True])
@pytest.mark.parametrize("kind", ["bool", "float"])
def test_fully_blocked_query_gets_zero_head_output_not_nan(need_weights, kind):
    layer = layer_with_biases(8, 2)
    x = randn(1, 3, 8, seed=1)
    blocked = torch.zeros(3, 3, dtype=torch.bool)
    blocked[2] = True  # query 2 may look at nothing
    attn_mask = blocked if kind == "bool" else torch.zeros(3, 3, dtype=torch.float64).masked_fill(blocked, -math.inf)
    result = layer(x, attn_mask=attn_mask, need_weights=need_weights)
    assert torch.equal(result.output[0, 2], layer.b_out)  # zero head output, then + b_o
    if need_weights:
        assert torch.equal(result.weights[0, :, 2], torch.zeros(2, 3, dtype=torch.float64))
    reference = layer.to_numpy()(x.numpy(), attn_mask=attn_mask.numpy())
    assert max_error(result.output, reference.output) < 1e-12


def test_inputs_are_not_changed():
    layer = layer_with_biases(8, 2)
    x, mask = randn(2, 3, 8, seed=1), torch.tensor([[False, True, False], [False, False, True]])
    x_copy, mask_copy = x.clone(), mask.clone()
    layer(x, key_padding_mask=mask, need_weights=True)
    layer(x, key_padding_mask=mask)
    assert torch.equal(x, x_copy) and torch.equal(mask, mask_copy)


@pytest.mark.parametrize("need_weights", [False, True])
def test_gradients_reach_every_parameter(need_weights):
    layer = TorchMultiHeadAttention(8, 2, n_kv_heads=1, seed=0)
    x = randn(2, 3, 8, seed=1, dtype=torch.float32).requires_grad_()
    layer(x, is_causal=True, need_weights=need_weights).output.square().sum().backward()
    for name, p in layer.named_parameters():
        assert p.grad is not None and torch.isfinite(p.grad).all() and p.grad.abs().sum() > 0, name
    assert x.grad.abs().sum() > 0


# --- the plain SDPA path and its special cases -------------------------------------------------


@pytest.mark.parametrize("heads", [(4, 4), (4, 2), (4, 1)], ids=["mha", "gqa", "mqa"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("is_causal", [False, True])
def test_plain_self_attention_equals_the_special_cases(heads, bias, is_causal):
    n_heads, n_kv_heads = heads
    layer = layer_with_biases(16, n_heads, n_kv_heads=n_kv_heads, bias=bias)
    x = randn(2, 5, 16, seed=1)
    fast = layer(x, is_causal=is_causal)  # no key/value, no masks, no weights: the plain path
    also_plain = layer(x, x, x, is_causal=is_causal)  # key and value are the query object itself
    general = layer(x, x.clone(), is_causal=is_causal)  # another tensor: checks, projection split
    open_mask = torch.zeros(5, 5, dtype=torch.bool)  # blocks nothing, but takes the mask path
    masked = layer(x, attn_mask=open_mask, is_causal=is_causal)
    explicit = layer(x, is_causal=is_causal, need_weights=True)
    assert fast.weights is None and also_plain.weights is None
    assert torch.equal(fast.output, also_plain.output)
    assert max_error(fast.output, general.output) < 1e-12
    assert max_error(fast.output, masked.output) < 1e-12
    assert max_error(fast.output, explicit.output) < 1e-12
    reference = layer.to_numpy()(x.numpy(), is_causal=is_causal)
    assert max_error(fast.output, reference.output) < 1e-12


PLAIN_SDPA_CASES = {
    # name: (call arguments besides the query, the word the reason must contain, or None for the plain path)
    "self-attention": ({}, None),
    "causal": ({"is_causal": True}, None),
    "key and value": ({"key": "x", "value": "x"}, None),
    "cross-attention": ({"key": "x2"}, "cross-attention"),
    "weights": ({"need_weights": True}, "need_weights"),
    "attn_mask": ({"attn_mask": torch.zeros(3, 3, dtype=torch.bool)}, "attn_mask"),
    "padding": ({"key_padding_mask": torch.zeros(2, 3, dtype=torch.bool)}, "key_padding_mask"),
}


@pytest.mark.parametrize("case", PLAIN_SDPA_CASES)
def test_why_not_plain_sdpa_names_the_special_case_and_forward_follows_it(case, monkeypatch):
    kwargs, word = PLAIN_SDPA_CASES[case]
    layer = layer_with_biases(16, 4, n_kv_heads=2)
    x = randn(2, 3, 16, seed=1)
    kwargs = {k: ({"x": x, "x2": x.clone()}[v] if isinstance(v, str) else v) for k, v in kwargs.items()}
    reason = layer.why_not_plain_sdpa(x, **{k: v for k, v in kwargs.items() if k != "is_causal"})
    if word is None:
        assert reason is None
    else:
        assert word in reason
    calls = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def spy(*args, **kw):
        calls.append(kw)
        return sdpa(*args, **kw)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    layer(x, **kwargs)
    if word in (None, "cross-attention"):  # one SDPA call, no mask tensor
        assert len(calls) == 1 and calls[0].get("attn_mask") is None
        assert calls[0]["is_causal"] == kwargs.get("is_causal", False)
    elif word == "need_weights":  # the weights are computed step by step
        assert calls == []
    else:  # SDPA with a mask tensor
        assert len(calls) == 1 and calls[0]["attn_mask"] is not None


def test_why_not_plain_sdpa_names_a_chunk_after_cached_tokens():
    layer = layer_with_biases(16, 4, dtype=torch.float32)
    cache = layer.new_kv_cache(1, 8)
    x = randn(1, 8, 16, seed=1, dtype=torch.float32)
    assert "written to it" in layer.why_not_plain_sdpa(x[:, :3], kv_cache=cache)  # empty cache: plain is_causal
    with torch.no_grad():
        layer(x[:, :3], kv_cache=cache)
    assert "written to it" in layer.why_not_plain_sdpa(x[:, 3:4], kv_cache=cache)  # one new token sees every key
    assert "kv_cache.length" in layer.why_not_plain_sdpa(x[:, 3:6], kv_cache=cache)


@pytest.mark.parametrize("make_call, word", [
    (lambda layer, x: (layer, x[0]), "(B, T, D)"),  # unbatched
    (lambda layer, x: (TorchMultiHeadAttention(16, 4, seed=0, batch_first=False, dtype=torch.float64), x), "batch-first"),
    (lambda layer, x: (layer, x.float()), "dtype"),
    (lambda layer, x: (layer, x[..., :8]), "size"),
    (lambda layer, x: (layer, x.numpy()), "(B, T, D) tensor"),
], ids=["unbatched", "time-first", "dtype", "width", "not-a-tensor"])
def test_why_not_plain_sdpa_names_inputs_that_need_checks_or_a_new_layout(make_call, word):
    layer, query = make_call(layer_with_biases(16, 4), randn(2, 3, 16, seed=1))
    assert word in layer.why_not_plain_sdpa(query)


def test_forward_uses_parameters_assigned_after_construction():
    layer = layer_with_biases(16, 4, n_kv_heads=2)
    x = randn(2, 3, 16, seed=1)
    before = layer(x).output
    with torch.no_grad():
        layer.w_qkv = torch.nn.Parameter(layer.w_qkv * 2.0)  # a new tensor object
        layer.b_out = torch.nn.Parameter(layer.b_out + 1.0)
    after = layer(x).output
    reference = layer.to_numpy()(x.numpy())
    assert max_error(after, reference.output) < 1e-12
    assert max_error(after, before) > 1e-3


@pytest.mark.parametrize(
    "make_call",
    [
        lambda L: L(torch.zeros(2, 3, 8, dtype=torch.float32)),
        lambda L: L(torch.zeros(2, 3, 6, dtype=torch.float64)),
        lambda L: L(torch.zeros(2, 0, 8, dtype=torch.float64)),
        lambda L: L(torch.zeros(3, 8, dtype=torch.float64)[None, None]),
    ],
    ids=["dtype-mismatch", "wrong-d_model", "empty", "rank-4"],
)
def test_inputs_of_a_plain_call_are_checked_too(make_call):
    layer = TorchMultiHeadAttention(8, 2, seed=0, dtype=torch.float64)
    with pytest.raises((TypeError, ValueError), match=r"^query "):
        make_call(layer)


# --- the explicit path (need_weights=True) ----------------------------------------------------


def test_explicit_path_leaves_float_masks_unchanged():
    # The explicit path scales and masks its scores in place: never the caller's masks.
    layer = layer_with_biases(8, 2)
    x = randn(2, 3, 8, seed=1)
    attn_mask = randn(4, 3, 3, seed=2)  # (B*H, Tq, Tk): the layer reshapes it to a view
    attn_mask_2d = randn(3, 3, seed=3)  # (Tq, Tk)
    copies = attn_mask.clone(), attn_mask_2d.clone()
    layer(x, attn_mask=attn_mask, need_weights=True)
    layer(x, attn_mask=attn_mask_2d, need_weights=True)
    layer(x, attn_mask=attn_mask_2d, is_causal=True, need_weights=True)
    assert torch.equal(attn_mask, copies[0]) and torch.equal(attn_mask_2d, copies[1])


@pytest.mark.parametrize("masks", ["none", "causal", "causal+padding", "float"])
def test_explicit_path_gradients_equal_the_sdpa_path_gradients(masks):
    gen = torch.Generator().manual_seed(0)
    kwargs = {}
    if "causal" in masks:
        kwargs["is_causal"] = True
    if "padding" in masks:
        kwargs["key_padding_mask"] = torch.tensor([[False, False, True, False], [False, True, False, True]])
    if masks == "float":
        kwargs["attn_mask"] = torch.randn(4, 4, generator=gen, dtype=torch.float64)
    grads = {}
    for need_weights in (False, True):
        layer = layer_with_biases(8, 2, n_kv_heads=1)
        x = randn(2, 4, 8, seed=1).requires_grad_()
        layer(x, need_weights=need_weights, **kwargs).output.square().sum().backward()
        grads[need_weights] = [x.grad] + [p.grad for p in layer.parameters()]
    for sdpa_grad, explicit_grad in zip(grads[False], grads[True]):
        assert max_error(sdpa_grad, explicit_grad) < 1e-10


# --- grouped-query attention ----------------------------------------------------------------


@pytest.mark.parametrize("n_kv_heads", [1, 2, 4])
def test_grouped_query_attention_equals_the_numpy_reference_loaded_from_it(n_kv_heads):
    layer = layer_with_biases(32, 8, n_kv_heads=n_kv_heads, seed=n_kv_heads)
    reference = layer.to_numpy()
    assert (reference.n_heads, reference.n_kv_heads) == (8, n_kv_heads)
    assert reference.w_k.shape == (32, n_kv_heads * 4)
    query, key = randn(2, 5, 32, seed=1), randn(2, 7, 32, seed=2)
    padding = torch.zeros(2, 7, dtype=torch.bool)
    padding[1, 4:] = True
    expected = reference(query.numpy(), key.numpy(), key_padding_mask=padding.numpy())
    fast = layer(query, key, key_padding_mask=padding)
    slow = layer(query, key, key_padding_mask=padding, need_weights=True)
    assert max_error(fast.output, expected.output) < 1e-12
    assert max_error(slow.output, expected.output) < 1e-12
    assert max_error(slow.weights, expected.weights) < 1e-12


def test_n_kv_heads_equal_to_n_heads_is_plain_multi_head_attention():
    gqa_layout = layer_with_biases(16, 4, n_kv_heads=4, seed=2)
    plain = layer_with_biases(16, 4, seed=2)
    assert all(torch.equal(p, q) for p, q in zip(gqa_layout.parameters(), plain.parameters()))
    torch_mha = torch.nn.MultiheadAttention(16, 4, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(plain.w_qkv)
        torch_mha.in_proj_bias.copy_(plain.b_qkv)
        torch_mha.out_proj.weight.copy_(plain.w_out)
        torch_mha.out_proj.bias.copy_(plain.b_out)
    x = randn(2, 5, 16, seed=1)
    expected, _ = torch_mha(x, x, x, need_weights=False)
    assert max_error(gqa_layout(x).output, expected) < 1e-12
    assert max_error(plain(x).output, expected) < 1e-12


# --- conversions ------------------------------------------------------------------------------


@pytest.mark.parametrize("batch_first", [True, False])
@pytest.mark.parametrize("bias", [True, False])
def test_from_torch_copies_weights_exactly_and_round_trips(batch_first, bias):
    torch_mha = torch.nn.MultiheadAttention(16, 4, bias=bias, batch_first=batch_first)
    with torch.no_grad():
        for p in torch_mha.parameters():
            p.copy_(torch.randn(p.shape, generator=torch.Generator().manual_seed(p.numel())))
    layer = TorchMultiHeadAttention.from_torch(torch_mha)
    assert layer.batch_first == batch_first and layer.bias == bias
    assert layer.w_qkv.dtype == torch.float32
    assert torch.equal(layer.w_qkv, torch_mha.in_proj_weight)
    assert torch.equal(layer.w_out, torch_mha.out_proj.weight)
    if bias:
        assert torch.equal(layer.b_qkv, torch_mha.in_proj_bias)
        assert torch.equal(layer.b_out, torch_mha.out_proj.bias)
    else:
        assert layer.b_qkv is None and layer.b_out is None

    # torch -> NumPy -> torch keeps every bit (float32 -> float64 -> float32).
    again = TorchMultiHeadAttention.from_numpy(layer.to_numpy(), batch_first=batch_first, dtype=torch.float32)
    assert all(torch.equal(p, q) for p, q in zip(layer.parameters(), again.parameters()))

    x = randn(5, 2, 16, seed=3, dtype=torch.float32)  # read as (B, T, D) or (T, B, D)
    with torch.no_grad():
        expected, _ = torch_mha(x, x, x)
        assert max_error(layer(x).output, expected) < 1e-5


def test_from_torch_keeps_float64():
    torch_mha = torch.nn.MultiheadAttention(8, 2, dtype=torch.float64)
    assert TorchMultiHeadAttention.from_torch(torch_mha).w_qkv.dtype == torch.float64


def test_numpy_reference_round_trips_through_the_torch_module():
    reference = MultiHeadAttention(12, 6, n_kv_heads=2, seed=4)
    reference.b_k = np.linspace(-1, 1, reference.b_k.size)
    layer = TorchMultiHeadAttention.from_numpy(reference, dtype=torch.float64)
    back = layer.to_numpy()
    assert (back.d_model, back.n_heads, back.n_kv_heads, back.bias) == (12, 6, 2, True)
    for name in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"):
        np.testing.assert_array_equal(getattr(back, name), getattr(reference, name), err_msg=name)


def test_from_torch_refuses_what_it_cannot_model():
    with pytest.raises(ValueError, match="add_bias_kv"):
        TorchMultiHeadAttention.from_torch(torch.nn.MultiheadAttention(8, 2, add_bias_kv=True))
    with pytest.raises(ValueError, match="kdim"):
        TorchMultiHeadAttention.from_torch(torch.nn.MultiheadAttention(8, 2, kdim=4, vdim=4))
    with pytest.raises(TypeError, match="module must be a torch.nn.MultiheadAttention"):
        TorchMultiHeadAttention.from_torch(torch.nn.Linear(8, 8))
    with pytest.raises(TypeError, match="mha_core.MultiHeadAttention"):
        TorchMultiHeadAttention.from_numpy(torch.nn.Linear(8, 8))


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((64, 5), {}),
        ((12, 4), {"n_kv_heads": 3}),
        ((0, 1), {}),
        ((8.0, 2), {}),
        ((8, 2), {"n_kv_heads": 0}),
    ],
)
def test_constructor_errors_match_the_numpy_reference(args, kwargs):
    with pytest.raises((TypeError, ValueError)) as numpy_error:
        MultiHeadAttention(*args, **kwargs)
    with pytest.raises(type(numpy_error.value)) as torch_error:
        TorchMultiHeadAttention(*args, **kwargs)
    assert str(torch_error.value) == str(numpy_error.value)


def test_constructor_error_names_valid_head_counts():
    with pytest.raises(ValueError, match=r"n_heads=5 does not divide d_model=64; valid head counts are 1, 2, 4, 8, 16, 32, 64"):
        TorchMultiHeadAttention(64, 5)


def test_bad_seed_is_refused():
    with pytest.raises(TypeError, match="seed must be a whole number"):
        TorchMultiHeadAttention(8, 2, seed="zero")


@pytest.mark.parametrize(
    "make_call, error, pattern",
    [
        (lambda L: L(np.zeros((2, 3, 8))), TypeError, r"query must be a torch.Tensor.*ndarray"),
        (lambda L: L(torch.zeros(2, 3, 8, dtype=torch.long)), TypeError, r"query must hold floating-point.*int64"),
        (lambda L: L(torch.zeros(2, 3, 8, dtype=torch.float32)), TypeError, r"query has dtype torch.float32 but this layer's parameters are torch.float64"),
        (lambda L: L(torch.zeros(3, 8, dtype=torch.float64)[None, None]), ValueError, r"query has rank 4 \(shape \(1, 1, 3, 8\)\); expected shape \(B, T, D\) or \(T, D\)"),
        (lambda L: L(torch.zeros(2, 3, 6, dtype=torch.float64)), ValueError, r"query has d_model=6 .*expects d_model=8"),
        (lambda L: L(torch.zeros(2, 0, 8, dtype=torch.float64)), ValueError, r"query is empty"),
        (lambda L: L(torch.zeros(2, 3, 8, dtype=torch.float64), torch.zeros(3, 4, 8, dtype=torch.float64)), ValueError, r"batch sizes differ: query 2, key 3"),
        (lambda L: L(torch.zeros(2, 3, 8, dtype=torch.float64), torch.zeros(4, 8, dtype=torch.float64)), ValueError, r"key has rank 2 but query has rank 3"),
        (lambda L: L(torch.zeros(2, 3, 8, dtype=torch.float64), torch.zeros(2, 4, 8, dtype=torch.float64), torch.zeros(2, 5, 8, dtype=torch.float64)), ValueError, r"key and value must have the same number of tokens Tk; got 4 and 5"),
        (lambda L: L(torch.zeros(2, 3, 8, dtype=torch.float64), torch.zeros(2, 4, 7, dtype=torch.float64)), ValueError, r"key has d_model=7"),
        (lambda L: L(torch.zeros(2, 3, 8, dtype=torch.float64), attn_mask=torch.zeros(3, 4, dtype=torch.bool)), ValueError, r"attn_mask has shape \(3, 4\); valid shapes are \(Tq, Tk\) = \(3, 3\) or \(B\*H, Tq, Tk\) = \(4, 3, 3\)"),
        (lambda L: L(torch.zeros(2, 3, 8, dtype=torch.float64), attn_mask=torch.zeros(3, 3, dtype=torch.long)), TypeError, r"attn_mask has dtype torch.int64; use bool"),
        (lambda L: L(torch.zeros(2, 3, 8, dtype=torch.float64), key_padding_mask=torch.zeros(3, dtype=torch.bool)), ValueError, r"key_padding_mask has shape \(3,\); the valid shape is \(B, Tk\) = \(2, 3\)"),
        (lambda L: L(torch.zeros(2, 3, 8, dtype=torch.float64), key_padding_mask=torch.zeros(2, 3, dtype=torch.int32)), TypeError, r"key_padding_mask has dtype torch.int32"),
    ],
    ids=[
        "numpy-input", "int-input", "dtype-mismatch", "rank-4", "wrong-d_model", "empty", "batch-mismatch",
        "rank-mismatch", "key-value-Tk", "key-d_model", "attn_mask-shape", "attn_mask-dtype", "padding-shape", "padding-dtype",
    ],
)
def test_bad_inputs_raise_errors_naming_the_parameter(make_call, error, pattern):
    layer = TorchMultiHeadAttention(8, 2, seed=0, dtype=torch.float64)
    with pytest.raises(error, match=pattern):
        make_call(layer)


def test_time_first_layout_names_its_shapes_in_errors():
    layer = TorchMultiHeadAttention(8, 2, batch_first=False)
    with pytest.raises(ValueError, match=r"expected shape \(T, B, D\) or \(T, D\)"):
        layer(torch.zeros(1, 2, 3, 8))


# --- the key/value cache (incremental decoding) ------------------------------------------------

HEAD_LAYOUTS = {"mha": (4, 4), "gqa": (4, 2), "mqa": (4, 1)}

#: Largest |cached - full| seen in float32 over the cache tests (outputs are of order 1).
CACHE_ERROR = {"largest": 0.0}


def cache_error(cached, full) -> float:
    error = max_error(cached, full)
    CACHE_ERROR["largest"] = max(CACHE_ERROR["largest"], error)
    return error


def decode(layer, x, chunks, *, max_tokens=None, need_weights=False):
    """Feed ``x`` (B, T, D) to ``layer`` through a fresh cache, ``chunks`` tokens at a time.

    Returns the outputs joined along T, the weights of each call, and the cache.
    """
    B, T, _ = x.shape
    cache = layer.new_kv_cache(B, max_tokens or T)
    outputs, weights, start = [], [], 0
    for size in chunks:
        with torch.no_grad():  # the cache is for inference
            result = layer(x[:, start : start + size], kv_cache=cache, need_weights=need_weights)
        outputs.append(result.output)  # (B, size, D)
        weights.append(result.weights)
        start += size
    assert start == T
    return torch.cat(outputs, dim=1), weights, cache  # (B, T, D)


def split_into(T, sizes):
    """Chunk sizes that add up to T: the given sizes in turn, the last one cut short."""
    chunks, i = [], 0
    while sum(chunks) < T:
        chunks.append(min(sizes[i % len(sizes)], T - sum(chunks)))
        i += 1
    return chunks


@pytest.mark.parametrize("layout", HEAD_LAYOUTS)
@pytest.mark.parametrize("batch", [1, 3])
def test_new_kv_cache_is_preallocated_with_the_layers_head_layout(layout, batch):
    n_heads, n_kv_heads = HEAD_LAYOUTS[layout]
    layer = TorchMultiHeadAttention(16, n_heads, n_kv_heads=n_kv_heads, dtype=torch.float32)
    cache = layer.new_kv_cache(batch, max_tokens=10)
    assert isinstance(cache, torch_attention.KVCache)
    assert cache.k.shape == cache.v.shape == (batch, n_kv_heads, 10, 4)  # (B, Hkv, max_tokens, Dh)
    assert cache.k.dtype == cache.v.dtype == torch.float32
    assert (cache.length, cache.max_tokens) == (0, 10)
    # The bytes a cache holds: keys and values, B * Hkv * max_tokens * Dh numbers each.
    assert cache.nbytes == cache.k.nbytes + cache.v.nbytes == 2 * batch * n_kv_heads * 10 * 4 * 4
    doubles = layer.new_kv_cache(batch, 10, dtype=torch.float64)
    assert doubles.nbytes == 2 * cache.nbytes and doubles.k.dtype == torch.float64


@pytest.mark.parametrize("layout", HEAD_LAYOUTS)
@pytest.mark.parametrize("batch, max_tokens", [(1, 1), (1, 37), (3, 10), (8, 256)])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16], ids=str)
def test_cache_bytes_equal_what_costs_kv_cache_bytes_calculates(layout, batch, max_tokens, dtype):
    # The calculator of notebook 09 and the real cache must agree, for MHA, GQA and MQA.
    n_heads, n_kv_heads = HEAD_LAYOUTS[layout]
    layer = TorchMultiHeadAttention(32, n_heads, n_kv_heads=n_kv_heads, dtype=dtype)
    cache = layer.new_kv_cache(batch, max_tokens=max_tokens)
    calculated = costs.kv_cache_bytes(n_layers=1, n_tokens=max_tokens, n_kv_heads=n_kv_heads, d_head=layer.d_head,
                                      batch=batch, bytes_per_value=dtype.itemsize)
    assert cache.nbytes == calculated


@pytest.mark.parametrize("layout", HEAD_LAYOUTS)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("chunk", [1, 3, "all"])
@pytest.mark.parametrize("T", [1, 5, 8])
def test_cached_decoding_equals_the_full_causal_pass(layout, bias, chunk, T):
    n_heads, n_kv_heads = HEAD_LAYOUTS[layout]
    layer = layer_with_biases(16, n_heads, n_kv_heads=n_kv_heads, bias=bias, dtype=torch.float32, bias_scale=0.1)
    x = randn(2, T, 16, seed=T, dtype=torch.float32)
    with torch.no_grad():
        full = layer(x, is_causal=True).output  # (B, T, D)
        cached, _, cache = decode(layer, x, split_into(T, [T if chunk == "all" else chunk]))
    assert cache.length == T
    assert cache_error(cached, full) < 1e-6


@given(
    layout=st.sampled_from(sorted(HEAD_LAYOUTS)),
    bias=st.booleans(),
    chunks=st.lists(st.integers(1, 5), min_size=1, max_size=6),
    spare=st.integers(0, 3),
    seed=st.integers(0, 2**16),
)
def test_any_chunking_of_cached_decoding_equals_the_full_causal_pass(layout, bias, chunks, spare, seed):
    n_heads, n_kv_heads = HEAD_LAYOUTS[layout]
    layer = layer_with_biases(16, n_heads, n_kv_heads=n_kv_heads, bias=bias, seed=seed % 101, dtype=torch.float32, bias_scale=0.1)
    T = sum(chunks)
    x = randn(1, T, 16, seed=seed, dtype=torch.float32)
    with torch.no_grad():
        full = layer(x, is_causal=True, need_weights=True)
        cached, weights, cache = decode(layer, x, chunks, max_tokens=T + spare, need_weights=True)
    assert cache_error(cached, full.output) < 1e-6
    start = 0
    for size, w in zip(chunks, weights):
        # Each call's weights are its rows of the full causal weights, over the keys seen so far.
        assert w.shape == (1, n_heads, size, start + size)
        assert max_error(w, full.weights[:, :, start : start + size, : start + size]) < 1e-6
        start += size
    assert (cache.length, cache.max_tokens) == (T, T + spare)


@pytest.mark.parametrize("layout", HEAD_LAYOUTS)
def test_chunked_prefill_after_a_partial_fill_keeps_the_causal_offset(layout):
    # nanoGPT PR #613: a chunk that follows cached tokens must see every cached token
    # and only the earlier tokens of its own chunk (the causal mask shifted by the cache length).
    n_heads, n_kv_heads = HEAD_LAYOUTS[layout]
    layer = layer_with_biases(16, n_heads, n_kv_heads=n_kv_heads, dtype=torch.float32, bias_scale=0.1)
    x = randn(2, 9, 16, seed=3, dtype=torch.float32)
    with torch.no_grad():
        full = layer(x, is_causal=True).output
        cached, _, _ = decode(layer, x, [2, 4, 1, 2])
        reference = layer.to_numpy()(x.double().numpy(), is_causal=True).output
    assert cache_error(cached, full) < 1e-6
    assert max_error(cached, reference) < 1e-6


@pytest.mark.parametrize("batch_first", [True, False])
def test_cached_decoding_in_every_input_layout(batch_first):
    layer = layer_with_biases(16, 4, n_kv_heads=2, dtype=torch.float64, batch_first=batch_first)
    x = randn(2, 6, 16, seed=1)  # (B, T, D)
    full = layer(x if batch_first else x.transpose(0, 1), is_causal=True).output
    full = full if batch_first else full.transpose(0, 1)  # (B, T, D)
    cache = layer.new_kv_cache(batch=2, max_tokens=6)
    parts = []
    for start, end in ((0, 4), (4, 5), (5, 6)):
        chunk = x[:, start:end]  # (B, Tc, D)
        with torch.no_grad():
            out = layer(chunk if batch_first else chunk.transpose(0, 1), kv_cache=cache).output
        parts.append(out if batch_first else out.transpose(0, 1))  # (B, Tc, D)
    assert max_error(torch.cat(parts, dim=1), full) < 1e-12
    # Unbatched (T, D) input uses a cache of batch 1.
    single = layer.new_kv_cache(1, 6)
    with torch.no_grad():
        out = torch.cat([layer(x[0, :3], kv_cache=single).output, layer(x[0, 3:], kv_cache=single).output])  # (T, D)
    assert max_error(out, full[0]) < 1e-12


def test_reset_cache_decodes_like_a_fresh_one():
    layer = layer_with_biases(16, 4, n_kv_heads=1, dtype=torch.float32, bias_scale=0.1)
    x, y = randn(1, 5, 16, seed=1, dtype=torch.float32), randn(1, 5, 16, seed=2, dtype=torch.float32)
    cache = layer.new_kv_cache(1, 5)
    with torch.no_grad():
        layer(x, kv_cache=cache)
        assert cache.length == 5
        cache.reset()
        assert cache.length == 0
        again = torch.cat([layer(y[:, :2], kv_cache=cache).output, layer(y[:, 2:], kv_cache=cache).output], dim=1)
        assert cache_error(again, layer(y, is_causal=True).output) < 1e-6


def test_a_full_cache_refuses_more_tokens_and_is_left_as_it_was():
    layer = layer_with_biases(16, 4, dtype=torch.float32, bias_scale=0.1)
    cache = layer.new_kv_cache(1, max_tokens=4)
    x = randn(1, 5, 16, seed=1, dtype=torch.float32)
    with torch.no_grad():
        layer(x[:, :3], kv_cache=cache)
        k_before = cache.k.clone()
        with pytest.raises(ValueError, match=r"kv_cache is full.*3 of max_tokens=4.*2 more"):
            layer(x[:, 3:], kv_cache=cache)
        assert cache.length == 3 and torch.equal(cache.k, k_before)
        layer(x[:, 3:4], kv_cache=cache)  # the last free position still takes one token
        assert cache.length == 4
        with pytest.raises(ValueError, match="max_tokens=4"):
            layer(x[:, 4:], kv_cache=cache)


@pytest.mark.parametrize(
    "make_cache, error, pattern",
    [
        (lambda L: TorchMultiHeadAttention(16, 4, n_kv_heads=1).new_kv_cache(1, 8), ValueError,
         r"kv_cache has k of shape \(1, 1, 8, 4\); this layer needs \(B, Hkv, max_tokens, Dh\) = \(1, 2, max_tokens, 4\)"),
        (lambda L: L.new_kv_cache(2, 8), ValueError, r"kv_cache is for batch 2 but the input has batch 1"),
        (lambda L: L.new_kv_cache(1, 8, dtype=torch.float64), TypeError,
         r"kv_cache holds torch.float64 but this layer's parameters are torch.float32"),
        (lambda L: L.new_kv_cache(1, 8, device="meta"), ValueError, r"kv_cache is on meta but this layer's parameters are on cpu"),
        (lambda L: "cache", TypeError, r"kv_cache must be a KVCache from new_kv_cache\(\); got str"),
    ],
    ids=["wrong-heads", "wrong-batch", "wrong-dtype", "wrong-device", "not-a-cache"],
)
def test_a_cache_that_does_not_fit_the_layer_is_refused(make_cache, error, pattern):
    layer = TorchMultiHeadAttention(16, 4, n_kv_heads=2, dtype=torch.float32)
    cache = make_cache(layer)
    with pytest.raises(error, match=pattern):
        layer(torch.zeros(1, 2, 16), kv_cache=cache)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"key": "x"}, r"kv_cache is for self-attention decoding: pass only the new tokens as query, not key or value"),
        ({"value": "x"}, r"not key or value"),
        ({"attn_mask": torch.zeros(2, 2, dtype=torch.bool)}, r"kv_cache implies the causal mask; attn_mask cannot be combined with it"),
        ({"key_padding_mask": torch.zeros(1, 2, dtype=torch.bool)}, r"key_padding_mask cannot be combined with it"),
    ],
    ids=["key", "value", "attn_mask", "key_padding_mask"],
)
def test_kv_cache_refuses_key_value_and_masks(kwargs, pattern):
    layer = TorchMultiHeadAttention(16, 4, dtype=torch.float32)
    cache = layer.new_kv_cache(1, 8)
    x = torch.zeros(1, 2, 16)
    kwargs = {k: (x if isinstance(v, str) else v) for k, v in kwargs.items()}
    with pytest.raises(ValueError, match=pattern):
        layer(x, kv_cache=cache, **kwargs)
    assert cache.length == 0


@pytest.mark.parametrize(
    "kwargs, error, pattern",
    [
        ({"batch": 0, "max_tokens": 4}, ValueError, r"batch=0 is too small"),
        ({"batch": 1}, TypeError, r"max_tokens is required"),
        ({"batch": 1, "max_tokens": 2.5}, TypeError, r"max_tokens must be a whole number"),
        ({"batch": 1, "max_tokens": 10**12}, ValueError, r"max_tokens=1000000000000 would need .* bytes"),
    ],
)
def test_new_kv_cache_refuses_bad_sizes(kwargs, error, pattern):
    layer = TorchMultiHeadAttention(16, 4)
    with pytest.raises(error, match=pattern):
        layer.new_kv_cache(**kwargs)


def test_largest_cache_error_seen_is_within_float32_tolerance(capsys):
    # Runs after the cache tests above (pytest keeps file order); prints the figure for the report.
    with capsys.disabled():
        print(f"\nlargest |cached - full| in float32: {CACHE_ERROR['largest']:.2e}")
    assert CACHE_ERROR["largest"] < 1e-6


# --- NaN and inf: they propagate in the inputs (as in torch), and are refused in float masks ------

BAD_VALUES = [math.nan, math.inf, -math.inf]


def _nan_case(where, bad, *, causal=False):
    """A layer, call arguments with ``bad`` at token 2 of batch 1, and the clean arguments."""
    layer = layer_with_biases(8, 2)
    query, key, value = randn(2, 4, 8, seed=1), randn(2, 4, 8, seed=2), randn(2, 4, 8, seed=3)
    clean = (query,) if where == "self" else (query, key, value)
    args = tuple(x.clone() for x in clean)
    target = args[0] if where in ("self", "query") else args[("query", "key", "value").index(where)]
    target[1, 2, 5] = bad
    return layer, args, clean


@pytest.mark.parametrize("bad", BAD_VALUES, ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("where", ["query", "key", "value", "self"])
@pytest.mark.parametrize("call", [{}, {"need_weights": True}, {"attn_mask": torch.zeros(4, 4, dtype=torch.bool)}],
                         ids=["plain", "weights", "mask"])
def test_nan_or_inf_in_an_input_propagates_never_a_silent_zero(bad, where, call):
    # SDPA's CPU kernel returns zeros for a query row that is all NaN (then + b_out: a
    # finite, wrong row); the layer lets the NaN through instead.
    layer, args, clean = _nan_case(where, bad)
    output = layer(*args, **call).output  # (B, Tq, D)
    expected = layer(*clean, **call).output
    torch.testing.assert_close(output[0], expected[0], rtol=0, atol=1e-12)  # the other sequence is untouched
    broken = ~torch.isfinite(output[1]).all(dim=-1)  # (Tq,): rows with a NaN or inf
    if where == "query":
        assert broken.tolist() == [False, False, True, False]  # only the query row that holds it
    else:
        assert broken.all()  # token 2's key or value reaches every query
        if bad == math.nan or where != "value":
            assert torch.isnan(output[1]).any(dim=-1).all()


@pytest.mark.parametrize("bad", BAD_VALUES, ids=["nan", "inf", "-inf"])
def test_nan_in_causal_self_attention_reaches_every_row_of_its_sequence(bad):
    # Rows 0 and 1 do not attend to token 2, but a zero weight times a NaN (or inf)
    # value is NaN: as in torch.nn.MultiheadAttention, the whole sequence is NaN.
    layer, (x,), (clean,) = _nan_case("self", bad)
    for call in ({}, {"need_weights": True}):
        output = layer(x, is_causal=True, **call).output  # (B, T, D)
        assert torch.isnan(output[1]).all(dim=-1).all()
        torch.testing.assert_close(output[0], layer(clean, is_causal=True, **call).output[0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("bad", BAD_VALUES, ids=["nan", "inf", "-inf"])
@pytest.mark.parametrize("where", ["query", "key", "value", "self"])
def test_non_finite_rows_include_every_row_torch_multihead_attention_makes_non_finite(bad, where):
    layer, args, _ = _nan_case(where, bad)
    torch_mha = torch.nn.MultiheadAttention(8, 2, batch_first=True, dtype=torch.float64).eval()
    with torch.no_grad():
        torch_mha.in_proj_weight.copy_(layer.w_qkv)
        torch_mha.in_proj_bias.copy_(layer.b_qkv)
        torch_mha.out_proj.weight.copy_(layer.w_out)
        torch_mha.out_proj.bias.copy_(layer.b_out)
        full = args * 3 if where == "self" else args
        torch_broken = ~torch.isfinite(torch_mha(*full, need_weights=False)[0]).all(dim=-1)  # (B, Tq)
        ours_broken = ~torch.isfinite(layer(*args).output).all(dim=-1)  # (B, Tq)
    assert torch_broken.any() or where == "query"  # torch's CPU kernel zeroes a NaN query row in cross-attention
    assert (ours_broken | ~torch_broken).all()  # wherever torch has NaN or inf, so do we
    assert ours_broken.any()


def test_a_query_blocked_by_the_masks_is_zeroed_even_if_its_data_is_nan():
    # The blocking rule belongs to the masks: a blocked row is zero whatever its data.
    layer, (x,), _ = _nan_case("self", math.nan)
    padding = torch.zeros(2, 4, dtype=torch.bool)
    blocked = torch.zeros(4, 4, dtype=torch.bool)
    blocked[0] = True  # query 0 sees no key
    output = layer(x, attn_mask=blocked).output
    torch.testing.assert_close(output[:, 0], layer.b_out.expand(2, 8))  # zero head output, + b_out
    assert torch.isnan(output[1, 1:]).all()  # the rows that see token 2 are NaN, not zero
    assert torch.isfinite(layer(x, key_padding_mask=padding).output[0]).all()


def test_huge_finite_inputs_are_not_mistaken_for_inf():
    layer = TorchMultiHeadAttention(8, 2, seed=0, dtype=torch.float32)
    x = torch.full((1, 2, 8), 3e38)  # finite, but their sum overflows float32
    layer(x)  # no error (the output itself may overflow: that is the arithmetic, not the input)


@pytest.mark.parametrize("bad, word", [(math.nan, "NaN"), (math.inf, r"\+inf")])
@pytest.mark.parametrize("which", ["attn_mask", "key_padding_mask"])
def test_nan_or_plus_inf_in_a_float_mask_is_refused(bad, word, which):
    layer = layer_with_biases(8, 2)
    x = randn(2, 3, 8, seed=1)
    mask = torch.zeros((3, 3) if which == "attn_mask" else (2, 3), dtype=torch.float64)
    mask[1, 2] = bad
    for need_weights in (False, True):
        with pytest.raises(ValueError, match=rf"{which} contains {word}; a float mask holds finite numbers or -inf \(blocked\)"):
            layer(x, need_weights=need_weights, **{which: mask})


@pytest.mark.parametrize("value", ["no", 1, None, 0.0])
@pytest.mark.parametrize("name", ["is_causal", "need_weights"])
def test_flags_must_be_true_or_false(value, name):
    layer = TorchMultiHeadAttention(8, 2, dtype=torch.float64)
    with pytest.raises(TypeError, match=rf"{name} must be True or False; got {re.escape(repr(value))}"):
        layer(torch.zeros(1, 2, 8, dtype=torch.float64), **{name: value})
    assert layer(torch.zeros(1, 2, 8, dtype=torch.float64), **{name: np.bool_(True)}).output.shape == (1, 2, 8)


# --- sizes no machine could hold ----------------------------------------------------------------


def test_a_layer_too_large_for_any_course_machine_is_refused_before_allocating():
    with pytest.raises(ValueError, match=r"d_model=1000000 .* would need 16,000,016,000,000 bytes \(16.0 TB\)"):
        TorchMultiHeadAttention(10**6, 8, dtype=torch.float32)
    # Shapes only (device="meta") allocate nothing, so any size can be counted.
    assert TorchMultiHeadAttention(10**6, 8, device="meta").n_parameters == costs.attention_parameters(10**6, 8)


def test_non_contiguous_masks_are_accepted():
    layer = layer_with_biases(8, 2)
    x = randn(2, 3, 8, seed=1)
    attn_mask = randn(4, 3, 3, seed=2)  # (B*H, Tq, Tk)
    padding = torch.tensor([[False, True], [False, False], [True, False]])  # (Tk, B), transposed below
    expected = layer(x, attn_mask=attn_mask.contiguous(), key_padding_mask=padding.T.contiguous()).output
    got = layer(x, attn_mask=attn_mask.transpose(1, 2).contiguous().transpose(1, 2), key_padding_mask=padding.T).output
    assert max_error(got, expected) == 0
