"""Small experiments the notebooks show, computed with the attention core: pure NumPy.

Figures and controls read these results; they compute nothing themselves.

    scaling_experiment   why scores are divided by sqrt(d_head): spread and saturation per head size
    softmax_jacobian     d weights / d scores for one row: how much a score change moves the weights
    scaling_gradients    the size of that Jacobian per head size, with and without the sqrt(d_head) scale
    heads_vs_one_head    one head's scores over the whole width = the H heads' scores summed / sqrt(H)
    head_write_maps      each head's combined value-and-output map W_V^h W_O^h, of rank at most Dh
    masked_attention     one head's weights with no mask, a causal mask, or [PAD] keys blocked
    head_contributions   each head's part of the output, head_outputs[h] @ (head h's block of W_O)
    token_parts          one token's output split into those parts, with heads switched on or off
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _validate
from .attention import (
    MultiHeadAttention,
    attention_scores,
    causal_mask,
    output_projection,
    project,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)

# --- why divide by sqrt(d_head) ------------------------------------------------------------

#: The head sizes the scaling experiment tries: powers of two, as real head sizes are.
D_HEAD_VALUES: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256, 512)


@dataclass(frozen=True)
class ScalingData:
    """Scores and weights of random unit-variance queries and keys, for each head size d_head.

    Shapes (n = len(d_head_values)):
        d_head_values: (n,)
        unscaled_weights: (n, Tk)   softmax(q·k) for the one query shown
        scaled_weights: (n, Tk)     softmax(q·k / sqrt(d_head)) for the same query
        unscaled_std: (n,)          spread of q·k over many query-key pairs
        scaled_std: (n,)            spread of q·k / sqrt(d_head) over the same pairs
        unscaled_top: (n,)          largest weight of each query's row, averaged over the queries
        scaled_top: (n,)            the same with the division by sqrt(d_head)
    """

    d_head_values: np.ndarray
    key_labels: tuple[str, ...]
    unscaled_weights: np.ndarray
    scaled_weights: np.ndarray
    unscaled_std: np.ndarray
    scaled_std: np.ndarray
    unscaled_top: np.ndarray
    scaled_top: np.ndarray
    n_queries: int

    def index(self, d_head: int) -> int:
        """Where ``d_head`` sits in ``d_head_values``, or a clear error naming the valid values."""
        matches = np.flatnonzero(self.d_head_values == d_head)
        if matches.size == 0:
            valid = ", ".join(str(int(d)) for d in self.d_head_values)
            raise ValueError(f"d_head={d_head!r} was not computed; valid values are {valid}")
        return int(matches[0])


def scaling_experiment(
    d_head_values=D_HEAD_VALUES, key_labels=("key 1", "key 2", "key 3", "key 4", "key 5", "key 6"), *,
    n_queries: int = 256, seed: int = 0,
) -> ScalingData:
    """Draw random queries and keys with unit-variance entries and score them at each d_head.

    For each d_head the vectors are the first d_head entries of the same longer vectors,
    so moving from one d_head to the next adds features rather than drawing new vectors.
    The first query is the one whose weights the figure shows; all ``n_queries`` give
    the spread (standard deviation) of the scores.
    """
    d_head_values = np.asarray(d_head_values, dtype=int)
    key_labels = tuple(key_labels)
    n_queries = _validate.positive_int(n_queries, "n_queries")
    rng = np.random.default_rng(seed)
    d_max = int(d_head_values.max())
    q_all = rng.standard_normal((n_queries, d_max))  # (Nq, d_max)
    k_all = rng.standard_normal((len(key_labels), d_max))  # (Tk, d_max)
    rows = []
    for d_head in d_head_values:
        q, k = q_all[:, :d_head], k_all[:, :d_head]  # (Nq, Dh), (Tk, Dh)
        raw = q @ k.T  # (Nq, Tk): no scaling
        scaled = attention_scores(q, k)  # (Nq, Tk): divided by sqrt(Dh)
        raw_weights, scaled_weights = softmax(raw, axis=-1), softmax(scaled, axis=-1)  # (Nq, Tk) each
        rows.append((raw_weights[0], scaled_weights[0], raw.std(), scaled.std(),
                     raw_weights.max(axis=-1).mean(), scaled_weights.max(axis=-1).mean()))
    columns = (np.array(column) for column in zip(*rows))
    return ScalingData(d_head_values, key_labels, *columns, n_queries=n_queries)


def softmax_jacobian(scores: np.ndarray) -> np.ndarray:
    """The derivative of one row of weights with respect to its scores: diag(p) - p p^T.

    Entry [i, j] says how much weight i moves when score j moves a little. When one weight is
    close to 1 and the rest close to 0, every entry is close to 0: the softmax is saturated and
    training gets almost no signal through it.

    Shapes:
        scores: (..., Tk)
        returns: (..., Tk, Tk)
    """
    p = softmax(np.asarray(scores, dtype=float), axis=-1)  # (..., Tk)
    outer = p[..., :, None] * p[..., None, :]  # (..., Tk, Tk)
    return np.eye(p.shape[-1]) * p[..., :, None] - outer  # (..., Tk, Tk)


@dataclass(frozen=True)
class ScalingGradients:
    """The mean size (Frobenius norm) of the softmax's Jacobian per head size.

    Shapes:
        d_head: (S,), one entry per head size tried
        raw_norm: (S,), scores q.k, not divided by sqrt(d_head)
        scaled_norm: (S,), scores q.k / sqrt(d_head)
        raw_largest: (S, Nq), each query's largest weight without the scale
        scaled_largest: (S, Nq), the same with it
    """

    d_head: np.ndarray
    raw_norm: np.ndarray
    scaled_norm: np.ndarray
    raw_largest: np.ndarray
    scaled_largest: np.ndarray
    n_queries: int


def scaling_gradients(d_head_values=D_HEAD_VALUES, n_keys: int = 6, *, n_queries: int = 256, seed: int = 0) -> ScalingGradients:
    """How much the weights can still move, per head size: the mean norm of ``softmax_jacobian``.

    Queries and keys are drawn as in ``scaling_experiment`` (the same seed gives the very same
    vectors: unit-variance entries, the first d_head entries of the same longer vectors). Without the scale the scores spread like
    sqrt(d_head), the softmax saturates and the Jacobian shrinks towards 0; with it the spread and
    the Jacobian stay about the same at every head size.
    """
    d_head_values = np.asarray(d_head_values, dtype=int)
    n_keys = _validate.positive_int(n_keys, "n_keys")
    n_queries = _validate.positive_int(n_queries, "n_queries")
    rng = np.random.default_rng(seed)
    d_max = int(d_head_values.max())
    q_all = rng.standard_normal((n_queries, d_max))  # (Nq, d_max)
    k_all = rng.standard_normal((n_keys, d_max))  # (Tk, d_max)
    raw_norm, scaled_norm, raw_largest, scaled_largest = [], [], [], []
    for d_head in d_head_values:
        q, k = q_all[:, :d_head], k_all[:, :d_head]  # (Nq, Dh), (Tk, Dh)
        raw = q @ k.T  # (Nq, Tk): no scaling
        scaled = attention_scores(q, k)  # (Nq, Tk)
        raw_norm.append(np.linalg.norm(softmax_jacobian(raw), axis=(-2, -1)).mean())
        scaled_norm.append(np.linalg.norm(softmax_jacobian(scaled), axis=(-2, -1)).mean())
        raw_largest.append(softmax(raw).max(axis=-1))  # (Nq,)
        scaled_largest.append(softmax(scaled).max(axis=-1))  # (Nq,)
    return ScalingGradients(d_head_values, np.array(raw_norm), np.array(scaled_norm),
                            np.array(raw_largest), np.array(scaled_largest), n_queries=n_queries)


# --- several heads against one -------------------------------------------------------------


@dataclass(frozen=True)
class HeadsVsOneHead:
    """The same q and k scored as one wide head and as H heads.

    Shapes:
        one_head_scores: (Tq, Tk) = q k^T / sqrt(D)
        head_scores: (H, Tq, Tk), head h: q_h k_h^T / sqrt(Dh)
        summed_scores: (Tq, Tk) = head_scores.sum(0) / sqrt(H), equal to one_head_scores
        one_head_weights: (Tq, Tk), one softmax over the summed scores
        head_weights: (H, Tq, Tk), H separate softmaxes
    """

    one_head_scores: np.ndarray
    head_scores: np.ndarray
    summed_scores: np.ndarray
    one_head_weights: np.ndarray
    head_weights: np.ndarray


def heads_vs_one_head(q: np.ndarray, k: np.ndarray, n_heads: int) -> HeadsVsOneHead:
    """Score the same queries and keys as one head of D features and as H heads of Dh = D / H.

    q k^T adds up the products of all D features; cutting the features into H blocks cuts that
    sum into H partial sums, one per head. With each head's scale sqrt(Dh) = sqrt(D / H):
    q k^T / sqrt(D) = sum over h of (q_h k_h^T / sqrt(Dh)) / sqrt(H). The scores carry the same
    information; what differs is the softmax: one over the sum, or one per head.

    Shapes:
        q: (Tq, D)
        k: (Tk, D)
        returns: HeadsVsOneHead (see its Shapes)
    """
    q, k = np.asarray(q, dtype=float), np.asarray(k, dtype=float)
    if q.ndim != 2 or k.ndim != 2 or q.shape[1] != k.shape[1]:
        raise ValueError(f"q and k must be (Tq, D) and (Tk, D) with the same D; got q {q.shape} and k {k.shape}")
    D = q.shape[1]
    _validate.head_counts(D, n_heads)
    q_heads = split_heads(q[None], n_heads)[0]  # (H, Tq, Dh)
    k_heads = split_heads(k[None], n_heads)[0]  # (H, Tk, Dh)
    head_scores = attention_scores(q_heads, k_heads)  # (H, Tq, Tk)
    one_head_scores = attention_scores(q, k)  # (Tq, Tk)
    summed = head_scores.sum(axis=0) / np.sqrt(n_heads)  # (Tq, Tk)
    return HeadsVsOneHead(one_head_scores, head_scores, summed, softmax(one_head_scores), softmax(head_scores))


def head_write_maps(w_v: np.ndarray, w_o: np.ndarray, n_heads: int) -> np.ndarray:
    """Each head's combined value-and-output map, W_V^h W_O^h: what the head writes into a token.

    Head h reads a token vector through its Dh columns of W_V and writes through its Dh rows of
    W_O. Together they form one (D, D) map, of rank at most Dh: a head can only write into a
    Dh-dimensional part of the D features. Ignoring the biases, head h's part of the output
    is its weights times (x @ maps[h]).

    Shapes:
        w_v: (D, H*Dh)
        w_o: (H*Dh, D)
        returns: (H, D, D)
    """
    w_v, w_o = np.asarray(w_v, dtype=float), np.asarray(w_o, dtype=float)
    if w_v.ndim != 2 or w_o.ndim != 2 or w_v.shape[1] != w_o.shape[0]:
        raise ValueError(f"w_v must be (D, H*Dh) and w_o (H*Dh, D); got w_v {w_v.shape} and w_o {w_o.shape}")
    width = w_v.shape[1]
    _validate.divides(_validate.positive_int(n_heads, "n_heads"), width, of="the width of w_v (H*Dh)")
    Dh = width // n_heads
    v_blocks = w_v.reshape(w_v.shape[0], n_heads, Dh).transpose(1, 0, 2)  # (H, D, Dh)
    o_blocks = w_o.reshape(n_heads, Dh, w_o.shape[1])  # (H, Dh, D)
    return v_blocks @ o_blocks  # (H, D, D)


# --- masks ---------------------------------------------------------------------------------

MASK_MODES = ("none", "causal", "padding")
PAD_TOKEN = "[PAD]"


@dataclass(frozen=True)
class MaskedAttention:
    """One head's weights under one mask, with the tokens they belong to.

    Shapes (T' = T, or T + n_pad for 'padding'):
        tokens: (T',)
        blocked: (T', T') bool, True = blocked
        weights: (T', T'), rows sum to 1 (0 for a fully blocked row)
    """

    mode: str
    tokens: tuple[str, ...]
    blocked: np.ndarray
    weights: np.ndarray


def masked_attention(x: np.ndarray, w_q: np.ndarray, w_k: np.ndarray, w_v: np.ndarray, tokens, mode: str, *,
                     n_pad: int = 2) -> MaskedAttention:
    """One head's attention weights over the sentence with no mask, a causal mask, or padding blocked.

    'padding' appends ``n_pad`` ``[PAD]`` tokens whose vectors are all zeros (as when a
    short sentence shares a batch with a longer one) and blocks them as keys with a key
    padding mask, the same for every query.

    Shapes:
        x: (T, D), one row per token in ``tokens``
        w_q, w_k, w_v: (D, Dh)
        returns: see ``MaskedAttention``
    """
    if mode not in MASK_MODES:
        raise ValueError(f"mode={mode!r} is not a mask mode; valid modes are {', '.join(MASK_MODES)}")
    x = np.asarray(x, dtype=float)
    tokens = tuple(tokens)
    T = len(tokens)
    if mode == "padding":
        n_pad = _validate.positive_int(n_pad, "n_pad")
        x = np.vstack([x, np.zeros((n_pad, x.shape[1]))])  # (T + n_pad, D)
        tokens = tokens + (PAD_TOKEN,) * n_pad
        key_padding_mask = np.arange(T + n_pad) >= T  # (Tk,), True = padding
        blocked = np.broadcast_to(key_padding_mask, (T + n_pad, T + n_pad))  # (Tq, Tk)
    elif mode == "causal":
        blocked = causal_mask(T)  # (T, T)
    else:
        blocked = np.zeros((T, T), dtype=bool)  # (T, T): nothing blocked
    q, k, v = (project(x, w) for w in (w_q, w_k, w_v))  # (T', Dh) each
    _, weights = scaled_dot_product_attention(q, k, v, attn_mask=blocked)  # (T', T')
    return MaskedAttention(mode, tokens, np.array(blocked), weights)


# --- each head's part of the output ------------------------------------------------------------


def head_contributions(head_outputs: np.ndarray, w_o: np.ndarray) -> np.ndarray:
    """Each head's part of the output: ``head_outputs[..., h, :] @ w_o[h*Dh:(h+1)*Dh]``.

    The output projection of the concatenated heads is the sum of these parts (plus
    ``b_o``), because W_O's rows come in one block of Dh rows per head.

    Shapes:
        head_outputs: (..., H, Dh)
        w_o: (H*Dh, D)
        returns: (..., H, D)
    """
    head_outputs = np.asarray(head_outputs, dtype=float)
    *lead, H, Dh = head_outputs.shape
    w_o = np.asarray(w_o, dtype=float)
    if w_o.shape[0] != H * Dh:
        raise ValueError(f"w_o has {w_o.shape[0]} rows; head_outputs of {H} heads of {Dh} need H*Dh = {H * Dh}")
    blocks = w_o.reshape(H, Dh, w_o.shape[1])  # (H, Dh, D): head h's block of rows
    return np.einsum("...hd,hdo->...ho", head_outputs, blocks)  # (..., H, D)


@dataclass(frozen=True)
class TokenParts:
    """One token's head outputs and each head's part of its output.

    Shapes:
        head_outputs: (B, H, T, Dh) = (1, H, T, Dh), the whole sentence (for output_projection)
        contributions: (H, D), head_outputs[0, h, t] @ w_o_block(h)
    """

    layer: MultiHeadAttention
    head_outputs: np.ndarray
    contributions: np.ndarray
    token_index: int

    def output(self, heads_off=None) -> np.ndarray:
        """The token's output with the heads in ``heads_off`` (H bools, True = off) switched off. Shape (D,)."""
        out = output_projection(self.head_outputs, self.layer.w_o, self.layer.b_o, heads_off=heads_off)  # (1, T, D)
        return out[0, self.token_index]  # (D,)


def token_parts(layer: MultiHeadAttention, x: np.ndarray, token_index: int) -> TokenParts:
    """Run ``layer`` on the sentence ``x`` and split token ``token_index``'s output into one part per head.

    Shapes:
        x: (T, D)
    """
    x = np.asarray(x, dtype=float)
    if not 0 <= int(token_index) < x.shape[0]:
        raise ValueError(f"token_index={token_index!r} is not a token of the sentence; valid indices are 0 to {x.shape[0] - 1}")
    t = int(token_index)
    head_outputs = layer(x[None]).head_outputs  # (1, H, T, Dh)
    contributions = head_contributions(head_outputs[0, :, t], layer.w_o)  # (H, D)
    return TokenParts(layer, head_outputs, contributions, t)
