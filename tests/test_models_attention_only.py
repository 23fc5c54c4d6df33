"""Tests for mha_core.models.attention_only: shapes, the laws of its attention, switching heads off."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mha_core.models.attention_only import AttentionOnlyModel  # noqa: E402
from mha_core.models.repeats import RepeatTask  # noqa: E402
from mha_core.torch_attention import TorchMultiHeadAttention  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return AttentionOnlyModel(seed=0).eval()


@pytest.fixture(scope="module")
def tokens():
    return RepeatTask().batch(6, seed=0).tokens


def test_shapes_of_logits_and_weights(model, tokens):
    out = model(tokens, need_weights=True)
    assert out.logits.shape == (6, 25, 32)
    assert out.weights.shape == (2, 6, 2, 25, 25)
    assert model(tokens).weights is None
    assert (model.n_layers, model.n_heads, model.d_model, model.d_head) == (2, 2, 32, 16)


def test_every_layer_is_the_courses_attention_layer_without_biases(model):
    assert len(model.layers) == 2
    assert all(type(layer) is TorchMultiHeadAttention and layer.b_qkv is None for layer in model.layers)
    assert not any(isinstance(m, torch.nn.MultiheadAttention) for m in model.modules())


def test_weights_rows_sum_to_one_and_are_causal(model, tokens):
    with torch.no_grad():
        weights = model(tokens, need_weights=True).weights  # (L, B, H, T, T)
    torch.testing.assert_close(weights.sum(-1), torch.ones(2, 6, 2, 25))
    assert torch.all(weights.triu(1) == 0)
    assert torch.all(weights >= 0)


def test_a_later_token_never_changes_an_earlier_logit(model, tokens):
    changed = tokens.clone()
    changed[:, 20:] = (changed[:, 20:] + 1) % 32
    with torch.no_grad():
        a, b = model(tokens).logits, model(changed).logits
    torch.testing.assert_close(a[:, :20], b[:, :20])
    assert not torch.allclose(a[:, 20:], b[:, 20:])


def test_the_same_seed_gives_the_same_weights_and_another_seed_others():
    a, b, c = AttentionOnlyModel(seed=3), AttentionOnlyModel(seed=3), AttentionOnlyModel(seed=4)
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters()))
    assert not torch.equal(a.layers[0].w_qkv, c.layers[0].w_qkv)
    assert not torch.equal(a.layers[0].w_qkv, a.layers[1].w_qkv)


def test_no_head_off_equals_the_plain_forward_pass(model, tokens):
    with torch.no_grad():
        plain = model(tokens, need_weights=True)
        none_off = model(tokens, heads_off=[[False, False], [False, False]], need_weights=True)
    torch.testing.assert_close(none_off.logits, plain.logits)
    torch.testing.assert_close(none_off.weights, plain.weights)


def test_every_head_zeroed_leaves_only_the_residual_path(model, tokens):
    with torch.no_grad():
        logits = model(tokens, heads_off=[(0, 0), (0, 1), (1, 0), (1, 1)]).logits
        direct = model.unembed(model.embed(tokens))
    torch.testing.assert_close(logits, direct)


def test_a_zeroed_head_changes_the_logits_and_its_own_weights_stay(model, tokens):
    with torch.no_grad():
        plain = model(tokens, need_weights=True)
        off = model(tokens, heads_off=[(0, 1)], need_weights=True)
    assert not torch.allclose(off.logits, plain.logits)
    torch.testing.assert_close(off.weights[0], plain.weights[0])  # layer 0's patterns are not changed
    assert not torch.allclose(off.weights[1], plain.weights[1])  # layer 1 reads a residual without head (0, 1)


def test_a_mean_over_one_sequence_is_that_sequences_own_output(model, tokens):
    one = tokens[:1]
    means = model.head_means(one)  # (L, H, T, Dh)
    assert means.shape == (2, 2, 25, 16)
    with torch.no_grad():
        plain = model(one).logits
        mean_off = model(one, heads_off=[(0, 0), (1, 1)], ablation="mean", head_means=means).logits
    torch.testing.assert_close(mean_off, plain)


def test_mean_and_zero_ablation_differ(model, tokens):
    means = model.head_means(RepeatTask().batch(64, seed=9).tokens)
    with torch.no_grad():
        zero = model(tokens, heads_off=[(0, 0)]).logits
        mean = model(tokens, heads_off=[(0, 0)], ablation="mean", head_means=means).logits
    assert not torch.allclose(zero, mean)


def test_circuits_are_the_layers_as_numpy_layers(model, tokens):
    import numpy as np

    layers = model.circuits()
    x = model.embed(tokens).detach()
    with torch.no_grad():
        expected = model.layers[0](x, is_causal=True).output.double().numpy()
    np.testing.assert_allclose(layers[0](x.double().numpy(), is_causal=True).output, expected, atol=1e-5)


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda m, t: m(t.float()), TypeError, "tokens must be an integer torch.Tensor of shape \\(B, T\\); got dtype torch.float32"),
    (lambda m, t: m(t + 32), ValueError, "tokens must lie in 0..31"),
    (lambda m, t: m(torch.zeros(2, 26, dtype=torch.long)), ValueError, "1 <= T <= 25"),
    (lambda m, t: m(t[0]), ValueError, "tokens must have shape \\(B, T\\)"),
    (lambda m, t: m(t, heads_off=[(2, 0)]), ValueError, "heads_off has \\(2, 0\\); valid layers are 0 to 1"),
    (lambda m, t: m(t, heads_off=[(0, 0)], ablation="half"), ValueError, "ablation='half' is not a valid choice"),
    (lambda m, t: m(t, heads_off=[(0, 0)], ablation="mean"), TypeError, "ablation='mean' needs head_means"),
    (lambda m, t: m(t, heads_off=[(0, 0)], ablation="mean", head_means=torch.zeros(2, 2, 25, 8)), ValueError,
     "head_means has shape \\(2, 2, 25, 8\\); this model needs \\(L, H, T, Dh\\) = \\(2, 2, 25, 16\\)"),
    (lambda m, t: AttentionOnlyModel(n_heads=3), ValueError, "n_heads=3 does not divide d_model=32"),
    (lambda m, t: AttentionOnlyModel(seed=2**32 - 1), ValueError, "seed \\+ n_layers - 1"),
])
def test_bad_input_raises_errors_naming_the_parameter(model, tokens, call, error, words):
    with pytest.raises(error, match=words):
        call(model, tokens)
