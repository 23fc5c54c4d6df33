"""mha_core.blocks: layer norm and GELU, as torch computes them."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from mha_core.blocks import erfc, gelu, layer_norm

finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)


@settings(max_examples=50, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(1, 4), st.integers(2, 16)), elements=finite))
def test_layer_norm_gives_mean_zero_and_variance_one_per_token(x):
    D = x.shape[-1]
    out = layer_norm(x, np.ones(D), np.zeros(D), eps=1e-12)
    spread = x.std(axis=-1)
    ok = spread > 1e-3  # a constant row has no variance to normalise
    np.testing.assert_allclose(out.mean(axis=-1)[ok], 0.0, atol=1e-9)
    np.testing.assert_allclose(out.var(axis=-1)[ok], 1.0, atol=1e-6)


def test_layer_norm_scales_and_shifts_after_normalising():
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    gamma, beta = np.array([1.0, 2.0, 3.0, 4.0]), np.array([0.5, 0.5, 0.5, 0.5])
    z = (x - 2.5) / np.sqrt(1.25 + 1e-12)
    np.testing.assert_allclose(layer_norm(x, gamma, beta), z * gamma + beta)


def test_layer_norm_leaves_its_input_unchanged():
    x = np.arange(6.0).reshape(2, 3)
    before = x.copy()
    layer_norm(x, np.ones(3), np.zeros(3))
    np.testing.assert_array_equal(x, before)


def test_layer_norm_names_the_shapes_when_gamma_does_not_fit():
    with pytest.raises(ValueError, match=r"gamma and beta of shape \(D,\) = \(3,\)"):
        layer_norm(np.ones((2, 3)), np.ones(4), np.zeros(3))
    with pytest.raises(ValueError, match="eps"):
        layer_norm(np.ones((2, 3)), np.ones(3), np.zeros(3), eps=0)


def test_erfc_matches_the_standard_library_to_its_stated_accuracy():
    x = np.linspace(-6, 6, 2001)
    expected = np.array([math.erfc(v) for v in x])
    assert np.max(np.abs(erfc(x) - expected) / expected) < 1.2e-7


def test_gelu_is_the_exact_erf_form_not_the_tanh_approximation():
    x = np.linspace(-8, 8, 1601)
    exact = np.array([v * 0.5 * (1 + math.erf(v / math.sqrt(2))) for v in x])
    np.testing.assert_allclose(gelu(x), exact, atol=1e-7)
    tanh_form = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x**3)))
    assert np.max(np.abs(tanh_form - exact)) > 1e-4  # the two differ by more than our error


def test_gelu_matches_torch():
    torch = pytest.importorskip("torch")
    x = np.linspace(-10, 10, 999)
    expected = torch.nn.functional.gelu(torch.tensor(x, dtype=torch.float64)).numpy()
    np.testing.assert_allclose(gelu(x), expected, atol=1e-7)


def test_layer_norm_matches_torch():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(0)
    x, gamma, beta = rng.standard_normal((3, 5, 8)), rng.standard_normal(8), rng.standard_normal(8)
    ln = torch.nn.LayerNorm(8, eps=1e-12, dtype=torch.float64)
    with torch.no_grad():
        ln.weight.copy_(torch.tensor(gamma))
        ln.bias.copy_(torch.tensor(beta))
        expected = ln(torch.tensor(x)).numpy()
    np.testing.assert_allclose(layer_norm(x, gamma, beta), expected, atol=1e-12)
