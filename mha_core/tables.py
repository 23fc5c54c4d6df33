"""The numbers behind notebook 05's and 10's figures and controls, gathered from ``costs``.

Each function looks every number up in ``mha_core.costs`` and returns one frozen
table, so a figure builder only draws and a control only looks up: no figure computes
a cost, and this module draws nothing (it imports neither plotly nor ipywidgets).

- ``SizingRows`` / ``sizing_rows``: one attention layer's costs for each head count (05).
- ``GrowthRows`` / ``growth_rows``: score tables against the KV cache as T grows (10).
- ``CalculatorRows`` / ``calculator_rows``: the KV-cache calculator's numbers for
  every key/value head count of a model (10); ``kv_head_choices`` lists those counts.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import costs

# -- notebook 05: what grows with the head count --------------------------------------------


@dataclass(frozen=True)
class SizingRows:
    """Costs of one attention layer for each head count, at fixed d_model and T.

    Every field but ``head_counts`` is an int array with one entry per head count.
    """

    d_model: int
    n_tokens: int
    head_counts: tuple[int, ...]
    d_head: np.ndarray
    parameters: np.ndarray
    score_entries: np.ndarray
    flops_projections: np.ndarray  # Q, K, V and output projections
    flops_products: np.ndarray  # q k^T and weights @ v
    flops_softmax: np.ndarray  # scale and softmax, per score entry


def sizing_rows(d_model: int, n_tokens: int, head_counts) -> SizingRows:
    """Look up every cost in ``mha_core.costs`` for each head count (each must divide d_model)."""
    head_counts = tuple(int(h) for h in head_counts)
    flops = [costs.attention_flops(d_model, h, n_tokens) for h in head_counts]
    return SizingRows(
        d_model=d_model,
        n_tokens=n_tokens,
        head_counts=head_counts,
        d_head=np.array([costs.d_head(d_model, h) for h in head_counts]),
        parameters=np.array([costs.attention_parameters(d_model, h) for h in head_counts]),
        score_entries=np.array([costs.score_table_entries(h, n_tokens) for h in head_counts]),
        flops_projections=np.array([f["projections"] for f in flops]),
        flops_products=np.array([f["scores"] + f["mix"] for f in flops]),
        flops_softmax=np.array([f["softmax"] for f in flops]),
    )


# -- notebook 10: score tables (T^2) next to the KV cache (T) ---------------------------------


@dataclass(frozen=True)
class GrowthRows:
    """For each length T: one layer's score-table bytes and the whole model's KV-cache bytes."""

    model: str
    n_heads: int
    n_layers: int
    bytes_per_value: int
    token_counts: tuple[int, ...]
    score_table_bytes: tuple[int, ...]  # one layer, H x T^2 x bytes
    kv_cache_bytes: tuple[int, ...]  # every layer, T x per-token bytes


def growth_rows(model: costs.ModelShape, token_counts, *, bytes_per_value: int = 2) -> GrowthRows:
    """One layer's score-table bytes and the model's KV-cache bytes at each length in ``token_counts``."""
    token_counts = tuple(int(t) for t in token_counts)
    return GrowthRows(
        model=model.name, n_heads=model.n_heads, n_layers=model.n_layers, bytes_per_value=bytes_per_value,
        token_counts=token_counts,
        score_table_bytes=tuple(costs.score_table_bytes(model.n_heads, t, bytes_per_value=bytes_per_value) for t in token_counts),
        kv_cache_bytes=tuple(model.kv_cache_bytes(t, bytes_per_value=bytes_per_value) for t in token_counts),
    )


# -- notebook 10: the KV-cache calculator ---------------------------------------------------------


@dataclass(frozen=True)
class CalculatorRows:
    """The calculator's numbers for one setting, for every key/value head count of the model.

    ``kv_head_counts`` runs from H (MHA) down to 1 (MQA); the tuples have one entry each.
    """

    model: str
    n_heads: int
    n_layers: int
    d_head: int
    n_tokens: int
    batch: int
    bytes_per_value: int
    memory_bytes: int
    weights_bytes: int
    #: The model's sliding window (None: it has none), whether the cache keeps only the
    #: window, and the tokens each sequence's cache holds: min(T, W), or T.
    sliding_window: int | None
    windowed: bool
    cached_tokens: int
    kv_head_counts: tuple[int, ...]
    bytes_per_token: tuple[int, ...]  # all layers
    bytes_per_sequence: tuple[int, ...]
    batch_bytes: tuple[int, ...]
    sequences_that_fit: tuple[int, ...]


def kv_head_choices(n_heads: int) -> list[int]:
    """Key/value head counts a model with ``n_heads`` query heads can use: H (MHA), its divisors (GQA), 1 (MQA)."""
    return costs.valid_head_counts(n_heads)[::-1]


def calculator_rows(model: costs.ModelShape, *, n_tokens: int, batch: int, bytes_per_value: int,
                    memory_bytes: int, windowed: bool = True) -> CalculatorRows:
    """Look up every number of the calculator in ``mha_core.costs``.

    ``windowed=False`` keeps every token even where the model has a sliding window (to
    see what the window saves). An encoder keeps no cache: ``costs`` raises a ValueError.
    """
    kv_counts = tuple(kv_head_choices(model.n_heads))
    weights = model.parameter_bytes(bytes_per_value)
    per_token = tuple(costs.kv_cache_bytes_per_token(model.n_layers, h, model.d_head, bytes_per_value) for h in kv_counts)
    per_sequence = tuple(model.kv_cache_bytes(n_tokens, n_kv_heads=h, bytes_per_value=bytes_per_value, windowed=windowed)
                         for h in kv_counts)
    return CalculatorRows(
        model=model.name, n_heads=model.n_heads, n_layers=model.n_layers, d_head=model.d_head,
        n_tokens=int(n_tokens), batch=int(batch), bytes_per_value=int(bytes_per_value), memory_bytes=int(memory_bytes),
        weights_bytes=weights, sliding_window=model.sliding_window, windowed=bool(windowed),
        cached_tokens=model.cached_tokens(n_tokens, windowed=windowed), kv_head_counts=kv_counts, bytes_per_token=per_token,
        bytes_per_sequence=per_sequence,
        batch_bytes=tuple(p * int(batch) for p in per_sequence),
        sequences_that_fit=tuple(costs.concurrent_sequences(memory_bytes, p, reserved_bytes=weights) for p in per_sequence),
    )
