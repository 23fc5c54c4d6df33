"""Tests for mha_core.models.toy: the model uses the package's attention layer; heads switch off."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from mha_core import TorchMultiHeadAttention  # noqa: E402
from mha_core.models.tasks import RELATIONS  # noqa: E402
from mha_core.models.toy import ToyModel  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return ToyModel(4, d_model=16, seed=0).eval()


@pytest.fixture(scope="module")
def tokens():
    return RELATIONS.batch(6, seed=1).tokens


def test_uses_the_packages_attention_layer(model):
    assert type(model.attention) is TorchMultiHeadAttention
    assert (model.attention.d_model, model.attention.n_heads) == (16, 4)


def test_output_shapes(model, tokens):
    logits, weights = model(tokens, need_weights=True)
    assert logits.shape == (3, 6, 12, 12) and weights.shape == (6, 4, 12, 12)
    assert torch.allclose(weights.sum(-1), torch.ones(6, 4, 12))
    assert model(tokens).weights is None


def test_heads_computed_by_hand_equal_the_layer_when_all_are_on(model, tokens):
    with torch.no_grad():
        x = model.embed(tokens)
        by_layer, _ = model.attention(x, is_causal=True)
        by_hand, _ = model.attention_with_heads(x, [False] * 4)  # none off
    assert torch.allclose(by_hand, by_layer, atol=1e-6)


def test_every_head_off_leaves_the_residual_path(model, tokens):
    with torch.no_grad():
        x = model.embed(tokens)
        attn, _ = model.attention_with_heads(x, [True] * 4)  # every head off
        logits, _ = model(tokens, heads_off=[True] * 4)
        expected = torch.stack([r(x + model.attention.b_out) for r in model.readouts])
    assert torch.allclose(attn, model.attention.b_out.expand_as(attn))
    assert torch.allclose(logits, expected, atol=1e-6)


def test_switching_one_head_off_removes_exactly_its_block_of_w_o(model, tokens):
    with torch.no_grad():
        x = model.embed(tokens)
        head_outputs, _ = model.head_outputs(x)  # (B, H, T, Dh)
        full, _ = model.attention_with_heads(x, [False] * 4)  # none off
        without_2, _ = model.attention_with_heads(x, [2])  # head index 2 off
        w_o_block = model.attention.w_out[:, 8:12]  # head 2's columns of W_O^T
    assert torch.allclose(full - without_2, head_outputs[:, 2] @ w_o_block.T, atol=1e-6)


def test_same_seed_same_weights_another_seed_other_weights():
    a, b, c = ToyModel(3, seed=5), ToyModel(3, seed=5), ToyModel(3, seed=6)
    for (name, p), q, r in zip(a.named_parameters(), b.parameters(), c.parameters()):
        assert torch.equal(p, q), name
    assert not torch.equal(a.token_embedding.weight, c.token_embedding.weight)


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"n_heads": 5}, ValueError, "n_heads=5 does not divide d_model=48"),
    ({"n_heads": 0}, ValueError, "n_heads"),
    ({"n_heads": 3, "seed": 0.5}, TypeError, "seed must be a whole number"),
])
def test_bad_settings_are_named(kwargs, error, words):
    with pytest.raises(error, match=words):
        ToyModel(**kwargs)


def test_heads_off_of_the_wrong_length_or_an_unknown_head_is_refused(model, tokens):
    with pytest.raises(ValueError, match=r"heads_off as a bool array must have shape \(4,\), one entry per head"):
        model(tokens, heads_off=[True, False])
    with pytest.raises(ValueError, match=r"heads_off has head 4; valid heads are 0 to 3"):
        model(tokens, heads_off=[4])


def test_import_mha_core_leaves_models_and_torch_unloaded_until_asked():
    import subprocess
    import sys

    code = ("import sys, mha_core; assert 'mha_core.models' not in sys.modules and 'torch' not in sys.modules; "
            "assert mha_core.ToyModel is __import__('mha_core.models', fromlist=['ToyModel']).ToyModel; "
            "assert mha_core.TrainConfig().n_heads == 3")
    subprocess.run([sys.executable, "-c", code], check=True)
