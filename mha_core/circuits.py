"""Heads that work together across layers, measured in NumPy: pattern scores and composition.

Two measurements name a head from its attention weights on *repeated random tokens*
(a first token, then a random stretch of ``L`` tokens, then the same stretch again;
Olsson et al. 2022, *In-context Learning and Induction Heads*):

    previous-token score   the mean weight from each query t on key t - 1
    induction score        the mean weight from each query of the second copy on the key
                           one after the earlier copy of the query's token: key t - L + 1

Only the queries of the second copy count for the induction score: in the first copy
there is no earlier copy to look back to. A head that spreads its weight evenly over
the keys it can see gets the *chance* score (``chance_scores``), the floor to read
every score against.

One measurement names a pair of heads from their weights alone (Elhage et al. 2021,
*A Mathematical Framework for Transformer Circuits*). Each head h has a QK circuit and
an OV circuit, both D x D matrices of rank at most d_head; with row vectors (``x @ w``,
this package's layout)

    W_QK^h = W_Q^h (W_K^h)^T      scores^h = x_q W_QK^h x_k^T / sqrt(d_head)
    W_OV^h = W_V^h W_O^h          head h writes  weights^h x W_OV^h  into the residual stream

A later head reads an earlier head's output through its keys (*K-composition*) when
W_QK^{h1} and W_OV^{h0} line up; the composition score measures how much (and
``q_composition`` the same through its queries):

    K-composition(h0 -> h1) = ||W_QK^{h1} (W_OV^{h0})^T||_F / (||W_QK^{h1}||_F ||W_OV^{h0}||_F)

which is Elhage et al.'s ||W_QK W_OV||_F / (||W_QK||_F ||W_OV||_F) written for row
vectors (their matrices are the transposes of these; Frobenius norms do not change
under a transpose). The score is between 0 and 1 and is not 0 for unrelated matrices:
``composition_baseline`` computes it the same way on random matrices of the same
shapes, the level to read it against.

Everything here is pure NumPy and reads only arrays: the torch toy models
(``mha_core.models.induction``) and a real decoder hand their weights in.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import _validate

#: The first token of every repeated sequence, before the stretch and its copy (as a BOS token would be).
PREFIX = 1


def repeated_tokens(n_sequences: int, repeat_length: int, vocab_size: int, *, prefix: int = PREFIX, seed=0) -> np.ndarray:
    """Random token sequences: ``prefix`` random tokens, a random stretch of ``repeat_length``, the stretch again.

    Shapes:
        returns: (B, T) int64 with B = n_sequences, T = prefix + 2 * repeat_length
    """
    B = _validate.positive_int(n_sequences, "n_sequences")
    L = _validate.positive_int(repeat_length, "repeat_length")
    V = _validate.whole_number(vocab_size, "vocab_size", 2)
    prefix = _validate.whole_number(prefix, "prefix", 0)
    rng = _validate.rng(seed)
    start = rng.integers(0, V, size=(B, prefix))  # (B, prefix)
    stretch = rng.integers(0, V, size=(B, L))  # (B, L)
    return np.concatenate([start, stretch, stretch], axis=1)  # (B, prefix + 2L)


def _weights(weights, name: str = "weights") -> np.ndarray:
    """``weights`` as float64 (B, H, T, T) with rows of at most 1, or a clear error."""
    w = _validate.float_array(weights, name, ranks=(4,), shape_names="(B, H, T, T)", copy=False)
    if w.shape[-1] != w.shape[-2]:
        raise ValueError(f"{name} must be self-attention weights of shape (B, H, T, T); got {w.shape}, "
                         f"whose last two axes differ")
    return w


def previous_token_score(weights, *, from_query: int = 1) -> np.ndarray:
    """Each head's mean weight from query t on key t - 1, over the queries t = from_query .. T-1 and the batch.

    Positions count from 0. The first query has no token before it, so the default starts
    at the second. A decoder's second query sees only itself and the first token, so
    notebook 07 starts at the third (``from_query=2``, through
    ``pretrained.decoder_analysis.previous_token_share``): one definition, two starting points.

    Shapes:
        weights: (B, H, T, T), rows sum to 1
        returns: (H,), each in 0..1
    """
    w = _weights(weights)
    T = w.shape[-1]
    from_query = _validate.whole_number(from_query, "from_query", 1)
    if T < from_query + 1:
        raise ValueError(f"weights has T={T} tokens; a previous-token score from query {from_query} (counted from 0) "
                         f"needs at least {from_query + 1}")
    query = np.arange(from_query, T)
    stripe = w[:, :, query, query - 1]  # (B, H, T - from_query): each query's weight on the token before it
    return stripe.mean(axis=(0, 2))  # (H,)


def induction_positions(T: int, repeat_length: int) -> tuple[np.ndarray, np.ndarray]:
    """The queries of the second copy (the last L positions) and, for each, its induction key t - L + 1.

    Shapes:
        returns: queries (L,), keys (L,), positions counted from 0
    """
    T = _validate.positive_int(T, "T")
    L = _validate.positive_int(repeat_length, "repeat_length")
    if 2 * L > T:
        raise ValueError(f"repeat_length={L} does not fit twice in T={T} tokens; valid repeat lengths are 1 to {T // 2}")
    queries = np.arange(T - L, T)  # the second copy
    return queries, queries - L + 1


def induction_score(weights, repeat_length: int) -> np.ndarray:
    """Each head's mean weight, from the queries of the second copy, on the key one after the earlier copy.

    The sequences end with a stretch of ``repeat_length`` tokens and its copy (as
    ``repeated_tokens`` makes them): query t of the second copy finds its token's earlier
    copy at t - L, and an induction head looks one further, at t - L + 1, where the
    token that comes next stands.

    Shapes:
        weights: (B, H, T, T), rows sum to 1; T >= 2 * repeat_length
        returns: (H,), each in 0..1
    """
    w = _weights(weights)
    queries, keys = induction_positions(w.shape[-1], repeat_length)
    stripe = w[:, :, queries, keys]  # (B, H, L): the induction stripe
    return stripe.mean(axis=(0, 2))  # (H,)


def uniform_causal_weights(T: int) -> np.ndarray:
    """The weights of a head that spreads its weight evenly over the keys it can see (itself and before).

    Shapes:
        returns: (T, T), lower triangular, rows sum to 1
    """
    T = _validate.positive_int(T, "T")
    seen = np.tril(np.ones((T, T)))  # (Tq, Tk)
    return seen / seen.sum(axis=1, keepdims=True)  # (T, T)


class ChanceScores(NamedTuple):
    """The scores of a head that spreads its weight evenly over the keys it can see."""

    previous_token: float
    induction: float


def chance_scores(T: int, repeat_length: int) -> ChanceScores:
    """Chance level of both scores for T tokens: the same scoring applied to ``uniform_causal_weights``."""
    uniform = uniform_causal_weights(T)[None, None]  # (1, 1, T, T)
    return ChanceScores(float(previous_token_score(uniform)[0]), float(induction_score(uniform, repeat_length)[0]))


# --- circuits and composition ------------------------------------------------------------------


def _head_columns(w: np.ndarray, n_heads: int) -> np.ndarray:
    """(D, H*Dh) -> (H, D, Dh): each head's columns of a projection."""
    D, width = w.shape
    return w.reshape(D, n_heads, width // n_heads).transpose(1, 0, 2)  # (H, D, Dh)


def _projection(w, name: str, d_model: int | None = None) -> np.ndarray:
    w = _validate.weight_array(w, name, ndim=2)
    if d_model is not None and w.shape[0] != d_model:
        raise ValueError(f"{name} has shape {w.shape}; its first axis must be d_model={d_model}, as the other weights'")
    return w


def qk_circuits(w_q, w_k, n_heads: int) -> np.ndarray:
    """Each head's QK circuit W_QK^h = W_Q^h (W_K^h)^T (query side on the left).

    Shapes:
        w_q, w_k: (D, H*Dh), applied as x @ w (this package's layout)
        returns: (H, D, D)
    """
    w_q = _projection(w_q, "w_q")
    w_k = _projection(w_k, "w_k", w_q.shape[0])
    n_heads = _validate.positive_int(n_heads, "n_heads")
    if w_q.shape != w_k.shape:
        raise ValueError(f"w_q has shape {w_q.shape} but w_k has shape {w_k.shape}; they must be equal "
                         f"(grouped keys: repeat each key head's columns first)")
    _validate.divides(n_heads, w_q.shape[1], of="the width of w_q")
    q, k = _head_columns(w_q, n_heads), _head_columns(w_k, n_heads)  # (H, D, Dh) each
    return q @ k.transpose(0, 2, 1)  # (H, D, D)


def ov_circuits(w_v, w_o, n_heads: int) -> np.ndarray:
    """Each head's OV circuit W_OV^h = W_V^h W_O^h: what the head writes for each token it reads.

    Shapes:
        w_v: (D, H*Dh); w_o: (H*Dh, D), applied as x @ w
        returns: (H, D, D)
    """
    w_v = _projection(w_v, "w_v")
    w_o = _validate.weight_array(w_o, "w_o", ndim=2, shape=(w_v.shape[1], w_v.shape[0]))
    n_heads = _validate.positive_int(n_heads, "n_heads")
    _validate.divides(n_heads, w_v.shape[1], of="the width of w_v")
    v = _head_columns(w_v, n_heads)  # (H, D, Dh)
    Dh = w_v.shape[1] // n_heads
    o = w_o.reshape(n_heads, Dh, -1)  # (H, Dh, D): head h's rows of W_O
    return v @ o  # (H, D, D)


def composition_score(left, right) -> np.ndarray:
    """||left @ right||_F / (||left||_F ||right||_F), for every pair of a stack of matrices.

    Shapes:
        left: (H1, D, D); right: (H0, D, D)
        returns: (H1, H0)
    """
    left = np.asarray(left, dtype=np.float64)[:, None]  # (H1, 1, D, D)
    right = np.asarray(right, dtype=np.float64)[None]  # (1, H0, D, D)
    product = np.linalg.norm(left @ right, axis=(-2, -1))  # (H1, H0)
    norms = np.linalg.norm(left, axis=(-2, -1)) * np.linalg.norm(right, axis=(-2, -1))  # (H1, H0)
    return product / np.maximum(norms, np.finfo(np.float64).tiny)


def k_composition(qk_later, ov_earlier) -> np.ndarray:
    """K-composition of every earlier head into every later head (Elhage et al. 2021).

    ``qk_later``: the later layer's QK circuits; ``ov_earlier``: the earlier layer's OV
    circuits (as ``qk_circuits`` and ``ov_circuits`` give them).

    Shapes:
        qk_later: (H1, D, D); ov_earlier: (H0, D, D)
        returns: (H0, H1): row = earlier head, column = later head
    """
    qk = _validate.float_array(qk_later, "qk_later", ranks=(3,), shape_names="(H, D, D)")
    ov = _validate.float_array(ov_earlier, "ov_earlier", ranks=(3,), shape_names="(H, D, D)")
    if qk.shape[1:] != ov.shape[1:] or qk.shape[1] != qk.shape[2]:
        raise ValueError(f"qk_later {qk.shape} and ov_earlier {ov.shape} must both be (H, D, D) with the same D")
    # The later head's key side reads what the earlier head wrote: x_k -> x_k W_OV, so W_QK W_OV^T.
    return composition_score(qk, ov.transpose(0, 2, 1)).T  # (H0, H1)


def q_composition(qk_later, ov_earlier) -> np.ndarray:
    """Q-composition of every earlier head into every later head: the later head reads it through its queries.

    ||(W_OV^{h0}) W_QK^{h1}||_F / (||W_OV^{h0}||_F ||W_QK^{h1}||_F) for row vectors
    (Elhage et al.'s ||W_QK^T W_OV||_F / ...): the query input x_q becomes x_q W_OV.

    Shapes:
        qk_later: (H1, D, D); ov_earlier: (H0, D, D)
        returns: (H0, H1)
    """
    qk = _validate.float_array(qk_later, "qk_later", ranks=(3,), shape_names="(H, D, D)")
    ov = _validate.float_array(ov_earlier, "ov_earlier", ranks=(3,), shape_names="(H, D, D)")
    if qk.shape[1:] != ov.shape[1:] or qk.shape[1] != qk.shape[2]:
        raise ValueError(f"qk_later {qk.shape} and ov_earlier {ov.shape} must both be (H, D, D) with the same D")
    return composition_score(ov, qk)  # (H0, H1)


class Baseline(NamedTuple):
    """The composition score of random matrices: its mean and spread over the draws."""

    mean: float
    std: float
    n_draws: int


def composition_baseline(d_model: int, n_heads: int, *, n_draws: int = 200, seed=0) -> Baseline:
    """K-composition between random heads of the same shapes, computed as ``k_composition`` computes it.

    Each draw fills W_Q, W_K, W_V and W_O of a head (D x Dh, D x Dh, D x Dh, Dh x D)
    with independent standard normal numbers, builds W_QK of one head and W_OV of
    another, and scores them. The scale of the numbers does not matter (the score is
    divided by both norms); the shapes, and so the ranks, do.
    """
    d_model, n_heads, _ = _validate.head_counts(d_model, n_heads)
    n_draws = _validate.whole_number(n_draws, "n_draws", 2)
    rng = _validate.rng(seed)
    D, Dh = d_model, d_model // n_heads
    w_q, w_k, w_v = rng.standard_normal((3, n_draws, D, Dh))  # (n, D, Dh) each
    w_o = rng.standard_normal((n_draws, Dh, D))  # (n, Dh, D)
    qk = w_q @ w_k.transpose(0, 2, 1)  # (n, D, D)
    ov = w_v @ w_o  # (n, D, D)
    scores = np.linalg.norm(qk @ ov.transpose(0, 2, 1), axis=(1, 2)) / (
        np.linalg.norm(qk, axis=(1, 2)) * np.linalg.norm(ov, axis=(1, 2)))  # (n,)
    return Baseline(float(scores.mean()), float(scores.std(ddof=1)), n_draws)
