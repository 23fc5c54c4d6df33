"""Per-head outputs of a causal ``TorchMultiHeadAttention`` layer, from its public parts: shared by the toy models.

A head's output reaches the rest of a model only through its block of W_O (notebook
04: the output is a sum of one term per head). To switch heads off, or to put a mean
in a head's place, a model needs each head's output before the merge: the layer's
per-head weights (``need_weights=True``) times the value rows of its fused projection
``w_qkv``. ``merge_through_output`` then applies the layer's own output projection
(``w_out``, ``b_out``). With nothing changed in between, the two give the layer's own
output (tests check it for each model).
"""

from __future__ import annotations

import torch
from torch import nn


def head_outputs(attention, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each head's output before the merge, causal self-attention on ``x``.

    Shapes:
        x: (B, T, D)
        returns: head_outputs (B, H, T, Dh), weights (B, H, T, T)
    """
    B, T, D = x.shape
    H, Dh = attention.n_heads, attention.d_head
    _, weights = attention(x, is_causal=True, need_weights=True)  # (B, H, T, T)
    w_qkv, b_qkv = attention.w_qkv, attention.b_qkv  # (3D, D), (3D,) or None
    w_v, b_v = w_qkv[2 * D :], (None if b_qkv is None else b_qkv[2 * D :])  # (D, D), (D,): the value rows
    v = nn.functional.linear(x, w_v, b_v)  # (B, T, D)
    v = v.view(B, T, H, Dh).transpose(1, 2)  # (B, H, T, Dh)
    return weights @ v, weights  # (B, H, T, Dh), (B, H, T, T)


def merge_through_output(attention, head_outputs: torch.Tensor) -> torch.Tensor:
    """Concatenate the heads and apply the layer's output projection.

    Shapes:
        head_outputs: (B, H, T, Dh)
        returns: (B, T, D)
    """
    B, H, T, Dh = head_outputs.shape
    concat = head_outputs.transpose(1, 2).reshape(B, T, H * Dh)  # (B, T, D)
    return nn.functional.linear(concat, attention.w_out, attention.b_out)  # (B, T, D)
