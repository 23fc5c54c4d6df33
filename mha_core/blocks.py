"""The two other pieces of a transformer block, beside attention: layer norm and GELU.

A BERT-style encoder layer (all-MiniLM-L6-v2, notebook 07) is

    x = layer_norm(x + attention(x))
    x = layer_norm(x + gelu(x @ w_1 + b_1) @ w_2 + b_2)

``attention`` is ``mha_core.attention.MultiHeadAttention``; this module holds the rest,
in NumPy, float64, without changing its inputs.
"""

from __future__ import annotations

import numpy as np

from . import _validate

#: BERT's layer-norm epsilon (``layer_norm_eps`` in its config.json).
BERT_LAYER_NORM_EPS = 1e-12


def layer_norm(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, *, eps: float = BERT_LAYER_NORM_EPS) -> np.ndarray:
    """Normalise each token vector to mean 0 and variance 1 over its features, then scale and shift.

    ``(x - mean) / sqrt(var + eps) * gamma + beta``, with the biased variance (divided
    by D), as ``torch.nn.LayerNorm`` computes it.

    Shapes:
        x: (..., D)
        gamma: (D,)
        beta: (D,)
        returns: (..., D)
    """
    x = np.asarray(x, dtype=np.float64)
    gamma = np.asarray(gamma, dtype=np.float64)
    beta = np.asarray(beta, dtype=np.float64)
    if x.ndim < 1 or gamma.shape != (x.shape[-1],) or beta.shape != (x.shape[-1],):
        raise ValueError(
            f"layer_norm needs gamma and beta of shape (D,) = ({x.shape[-1] if x.ndim else '?'},) "
            f"for x of shape {x.shape}; got gamma {gamma.shape}, beta {beta.shape}"
        )
    eps = _validate.positive_number(eps, "eps", example=f"{BERT_LAYER_NORM_EPS} (BERT's)")
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # (..., 1)
    return (x - mean) / np.sqrt(var + eps) * gamma + beta


def erfc(x: np.ndarray) -> np.ndarray:
    """The complementary error function, 1 - erf(x), to a relative error below 1.2e-7.

    NumPy has no erf. This is the Chebyshev fit ``erfcc`` of Press et al., *Numerical
    Recipes* (2nd ed., section 6.2): fast, vectorised, and far more accurate than the
    float32 weights it is used with.

    Shapes:
        x: any shape
        returns: the same shape
    """
    x = np.asarray(x, dtype=np.float64)
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (
        0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))))
    ans = t * np.exp(-z * z + poly)
    return np.where(x >= 0, ans, 2.0 - ans)


def gelu(x: np.ndarray) -> np.ndarray:
    """The Gaussian error linear unit, ``x * Phi(x)`` with Phi the standard normal CDF.

    BERT's ``hidden_act = "gelu"`` is this exact form (not the tanh approximation):
    ``Phi(x) = erfc(-x / sqrt(2)) / 2``.

    Shapes:
        x: any shape
        returns: the same shape
    """
    x = np.asarray(x, dtype=np.float64)
    return x * 0.5 * erfc(-x / np.sqrt(2.0))
