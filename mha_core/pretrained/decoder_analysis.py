"""Searching SmolLM2's heads (notebook 07): previous-token heads and the weight parked on the first token.

The same two searches 07 runs on MiniLM, for a decoder. Each query of a decoder sees
only itself and the tokens before it, so both measures skip the queries that have no
choice: the first token sees only itself, the second only itself and the first.

A decoder without a BOS token has no ``[CLS]``; its first token takes that role:
Xiao et al. (2023, *Efficient Streaming Language Models with Attention Sinks*) found
that large language models put much of their attention on the first tokens whatever
they are, and called them attention sinks. ``uniform_first_token_share`` gives the
share a head that spreads its weight evenly would put there, to compare with.
"""

from __future__ import annotations

import numpy as np

from .. import _validate, circuits


def _attentions(attentions) -> np.ndarray:
    a = np.asarray(attentions, dtype=np.float64)
    if a.ndim != 4 or a.shape[-1] != a.shape[-2]:
        raise ValueError(f"attentions must have shape (L, H, T, T); got {a.shape}")
    return a


def previous_token_share(attentions) -> np.ndarray:
    """Each head's mean weight on the token just before the query, over queries 3 to T.

    ``circuits.previous_token_score`` (the one definition) from the third query on, every
    layer's heads read at once as one axis of heads.

    Shapes:
        attentions: (L, H, T, T), T >= 3
        returns: (L, H)
    """
    a = _attentions(attentions)
    L, H, T, _ = a.shape
    if T < 3:
        raise ValueError(f"attentions cover T={T} tokens; the previous-token share needs at least 3")
    heads = a.reshape(1, L * H, T, T)  # (B=1, L*H, T, T): every head of every layer on one axis
    return circuits.previous_token_score(heads, from_query=2).reshape(L, H)  # (L, H)


def first_token_share(attentions) -> np.ndarray:
    """Each head's mean weight on the first token, over queries 2 to T (the first has no choice).

    Shapes:
        attentions: (L, H, T, T), T >= 2
        returns: (L, H)
    """
    a = _attentions(attentions)
    if a.shape[-1] < 2:
        raise ValueError(f"attentions cover T={a.shape[-1]} token; the first-token share needs at least 2")
    return a[:, :, 1:, 0].mean(axis=-1)  # (L, H)


def uniform_first_token_share(n_tokens: int) -> float:
    """What ``first_token_share`` gives for a head that spreads each query's weight evenly over what it sees.

    The query at position t (counted from 1) sees t tokens: 1 / t on the first.
    """
    T = _validate.whole_number(n_tokens, "n_tokens", 2)
    return float(np.mean(1.0 / np.arange(2, T + 1)))


def mean_share(attention_sets, measure) -> np.ndarray:
    """``measure(attentions)`` for each text's attentions, averaged over the texts (texts may differ in length).

    Shapes:
        attention_sets: N arrays of (L, H, T_i, T_i)
        returns: (L, H)
    """
    attention_sets = list(attention_sets)
    if not attention_sets:
        raise ValueError("attention_sets is empty; give the attentions of at least one text")
    return np.mean([measure(a) for a in attention_sets], axis=0)  # (L, H)


def top_heads(scores, k: int = 5) -> list[tuple[int, int, float]]:
    """The ``k`` heads with the largest score, largest first, as (layer, head, score) counted from 0.

    Shapes:
        scores: (L, H)
    """
    scores = np.asarray(scores, dtype=np.float64)
    k = _validate.whole_number(k, "k", 1, scores.size)
    order = np.argsort(-scores.ravel(), kind="stable")[:k]
    return [(*divmod(int(i), scores.shape[1]), float(scores.ravel()[i])) for i in order]
