"""The toy model: embeddings, one multi-head attention layer, a residual, one read-out per relation.

    x      = token_embedding[tokens] + position_embedding[0..T-1]     (B, T, D)
    attn   = TorchMultiHeadAttention(x, is_causal=True)                (B, T, D)
    h      = x + attn                                                  (B, T, D)
    logits = readout_r(h) for each relation r                          (B, T, C) each

The attention layer is the package's own ``mha_core.TorchMultiHeadAttention``.

Switching heads off. A head's output reaches the rest of the model only through its
block of W_O (notebook 04: the output is a sum of one term per head). ``forward(...,
heads_off=...)`` therefore computes the per-head outputs itself from the layer's
public parts - the per-head weights the layer returns with ``need_weights=True``,
and the value rows of its fused projection ``w_qkv`` - zeroes the heads that are off,
and applies the layer's output projection (``w_out``, ``b_out``). With every head on this
equals the layer's own output (a test checks it); with every head off only ``b_out`` is left,
and the residual path ``x`` carries the rest.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from .. import _validate
from ..torch_attention import TorchMultiHeadAttention
from . import _heads
from .tasks import get_task

D_MODEL = 48


class ToyOutput(NamedTuple):
    """What one forward pass returns.

    Shapes:
        logits: (R, B, T, C), one read-out per relation
        weights: (B, H, T, T) after the softmax, or None unless asked for
    """

    logits: torch.Tensor
    weights: torch.Tensor | None


class ToyModel(nn.Module):
    """One causal multi-head attention layer with a residual and a linear read-out per relation.

    ``seed`` fixes every initial weight (``torch.manual_seed`` inside the constructor,
    and the attention layer's own seeded generator).
    """

    def __init__(self, n_heads: int, *, d_model: int = D_MODEL, task="relations", seed: int = 0):
        super().__init__()
        d_model, n_heads, _ = _validate.head_counts(d_model, n_heads)
        seed = _validate.seed_int(seed)
        self.task = get_task(task)
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        V, T, C, R = self.task.vocab_size, self.task.seq_len, self.task.n_classes, len(self.task.relations)
        torch.manual_seed(seed)  # embeddings and read-outs draw from the global RNG
        self.token_embedding = nn.Embedding(V, d_model)
        self.position_embedding = nn.Embedding(T, d_model)
        self.attention = TorchMultiHeadAttention(d_model, n_heads, seed=seed)
        self.readouts = nn.ModuleList(nn.Linear(d_model, C) for _ in range(R))

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Token plus position embeddings. Shapes: tokens (B, T) -> (B, T, D)."""
        T = self.task.check_tokens(tokens).shape[1]  # a token past the vocabulary is named, not an IndexError
        return self.token_embedding(tokens) + self.position_embedding.weight[:T]  # (B, T, D)

    def forward(self, tokens: torch.Tensor, *, heads_off=None, need_weights: bool = False) -> ToyOutput:
        """Logits for every relation; ``heads_off`` (H bools, True = off; or head indices) switches heads off.

        Shapes:
            tokens: (B, T) int64
            heads_off: (H,) bool, or None for every head on
            returns: ToyOutput(logits (R, B, T, C), weights (B, H, T, T) or None)
        """
        x = self.embed(tokens)  # (B, T, D)
        if heads_off is None:
            attn, weights = self.attention(x, is_causal=True, need_weights=need_weights)  # (B, T, D), (B, H, T, T)
        else:
            attn, weights = self.attention_with_heads(x, heads_off)
        h = x + attn  # (B, T, D): the residual path keeps x even with every head off
        logits = torch.stack([readout(h) for readout in self.readouts])  # (R, B, T, C)
        return ToyOutput(logits, weights)

    def head_outputs(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Each head's output before the merge, from the layer's weights and its value projection.

        Shapes:
            x: (B, T, D)
            returns: head_outputs (B, H, T, Dh), weights (B, H, T, T)
        """
        return _heads.head_outputs(self.attention, x)  # (B, H, T, Dh), (B, H, T, T)

    def attention_with_heads(self, x: torch.Tensor, heads_off) -> tuple[torch.Tensor, torch.Tensor]:
        """The attention layer's output with the heads in ``heads_off`` zeroed and the others kept.

        Shapes:
            x: (B, T, D)
            heads_off: (H,) bool, True = off (or head indices, such as [0, 2])
            returns: output (B, T, D), weights (B, H, T, T) (of every head, on or off)
        """
        on = torch.from_numpy(~_validate.heads_off(heads_off, self.n_heads))  # (H,) bool, True = on
        head_outputs, weights = self.head_outputs(x)  # (B, H, T, Dh), (B, H, T, T)
        head_outputs = head_outputs * on.to(x.dtype).view(1, -1, 1, 1)  # (B, H, T, Dh): heads off give zeros
        return _heads.merge_through_output(self.attention, head_outputs), weights  # (B, T, D)

    def keys_of_tokens(self) -> torch.Tensor:
        """Every vocabulary token's key through each head, from its token embedding alone.

        Shapes:
            returns: (H, V, Dh)
        """
        D, H, Dh = self.d_model, self.n_heads, self.d_head
        w_k = self.attention.w_qkv[D : 2 * D]  # (D, D): the key rows
        k = self.token_embedding.weight @ w_k.T  # (V, D); the bias is the same for every token, so left out
        return k.view(-1, H, Dh).transpose(0, 1)  # (H, V, Dh)
