"""An attention-only transformer: embeddings, layers of attention on a residual stream, an unembedding.

    x      = token_embedding[tokens] + position_embedding[0..T-1]      (B, T, D)
    x      = x + attention_l(x, is_causal=True)    for each layer l     (B, T, D)
    logits = x @ W_U                                                    (B, T, V)

No MLPs and no layer norm, as in the two-layer models of Elhage et al. 2021 (*A
Mathematical Framework for Transformer Circuits*): every path from a token to a logit
goes through attention heads and the residual stream, so each head's part can be read
from its weights. Each layer is the package's own ``mha_core.TorchMultiHeadAttention``,
without biases (a head's scores and writes are then its W_QK and W_OV circuits alone).

Switching heads off. ``forward(..., heads_off=...)`` computes each head's output before
the merge (``_heads.head_outputs``), replaces the output of every head that is off, and
merges through the layer's own output projection. Two replacements:

    zero   the head's output becomes 0: as if the head were not there
    mean   the head's output becomes its mean over a batch of sequences, position by
           position (``head_means``): the head keeps what it writes on average and
           loses only what depends on the sequence

With every head on this equals the plain forward pass (a test checks it).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from .. import _validate
from ..torch_attention import TorchMultiHeadAttention
from . import _heads
from .repeats import SEQ_LEN, VOCAB_SIZE

D_MODEL = 32
N_HEADS = 2
N_LAYERS = 2
ABLATIONS = ("zero", "mean")


class AttentionOnlyOutput(NamedTuple):
    """What one forward pass returns.

    Shapes:
        logits: (B, T, V)
        weights: (L, B, H, T, T) after the softmax, or None unless asked for
    """

    logits: torch.Tensor
    weights: torch.Tensor | None


class AttentionOnlyModel(nn.Module):
    """``n_layers`` layers of causal multi-head attention on a residual stream, no MLPs.

    ``seed`` fixes every initial weight: the embeddings and the unembedding from
    ``torch.manual_seed(seed)``, layer l from its own seeded generator (seed + l).
    """

    def __init__(self, *, n_layers: int = N_LAYERS, n_heads: int = N_HEADS, d_model: int = D_MODEL,
                 vocab_size: int = VOCAB_SIZE, seq_len: int = SEQ_LEN, seed: int = 0):
        super().__init__()
        d_model, n_heads, _ = _validate.head_counts(d_model, n_heads)
        self.n_layers = _validate.positive_int(n_layers, "n_layers")
        self.vocab_size = _validate.whole_number(vocab_size, "vocab_size", 2)
        self.seq_len = _validate.positive_int(seq_len, "seq_len")
        seed = _validate.seed_int(seed)
        _validate.int_in_range(seed + self.n_layers - 1, "seed + n_layers - 1", 0, _validate.MAX_SEED)
        self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
        torch.manual_seed(seed)  # embeddings and unembedding draw from the global RNG, as ToyModel's do
        self.token_embedding = nn.Embedding(self.vocab_size, d_model)
        self.position_embedding = nn.Embedding(self.seq_len, d_model)
        self.layers = nn.ModuleList(TorchMultiHeadAttention(d_model, n_heads, bias=False, seed=seed + layer)
                                    for layer in range(self.n_layers))
        self.unembed = nn.Linear(d_model, self.vocab_size, bias=False)

    def check_tokens(self, tokens) -> torch.Tensor:
        """``tokens`` if it is a (B, T) integer tensor of this model's vocabulary, else a clear error."""
        if not isinstance(tokens, torch.Tensor) or tokens.is_floating_point() or tokens.is_complex() or tokens.dtype == torch.bool:
            what = f"dtype {tokens.dtype}" if isinstance(tokens, torch.Tensor) else type(tokens).__name__
            raise TypeError(f"tokens must be an integer torch.Tensor of shape (B, T); got {what}")
        if tokens.dim() != 2 or not 1 <= tokens.shape[1] <= self.seq_len or tokens.numel() == 0:
            raise ValueError(f"tokens must have shape (B, T) with 1 <= T <= {self.seq_len} (the model's seq_len); "
                             f"got {tuple(tokens.shape)}")
        low, high = int(tokens.min()), int(tokens.max())
        if low < 0 or high >= self.vocab_size:
            raise ValueError(f"tokens must lie in 0..{self.vocab_size - 1} (the model's vocab_size={self.vocab_size}); "
                             f"got values {low}..{high}")
        return tokens

    def embed(self, tokens: torch.Tensor) -> torch.Tensor:
        """Token plus position embeddings. Shapes: tokens (B, T) -> (B, T, D)."""
        T = self.check_tokens(tokens).shape[1]
        return self.token_embedding(tokens) + self.position_embedding.weight[:T]  # (B, T, D)

    def forward(self, tokens: torch.Tensor, *, heads_off=None, ablation: str = "zero", head_means=None,
                need_weights: bool = False) -> AttentionOnlyOutput:
        """Next-token logits; ``heads_off`` ((L, H) bools, True = off, or (layer, head) pairs) replaces heads.

        ``ablation`` 'zero' or 'mean'; 'mean' needs ``head_means`` (from ``head_means``).

        Shapes:
            tokens: (B, T) int64
            heads_off: (L, H) bool, or None for every head on
            head_means: (L, H, T, Dh), or None
            returns: AttentionOnlyOutput(logits (B, T, V), weights (L, B, H, T, T) or None)
        """
        x = self.embed(tokens)  # (B, T, D)
        T = x.shape[1]
        off = None
        if heads_off is not None:
            off = torch.from_numpy(_validate.heads_off(heads_off, self.n_heads, self.n_layers))  # (L, H) bool
            _validate.choice(ablation, "ablation", ABLATIONS)
            if ablation == "mean":
                head_means = self._check_means(head_means, T)
        all_weights = []
        for layer, attention in enumerate(self.layers):
            if off is None or not bool(off[layer].any()):
                attn, weights = attention(x, is_causal=True, need_weights=need_weights)  # (B, T, D), (B, H, T, T)
            else:
                head_outputs, weights = _heads.head_outputs(attention, x)  # (B, H, T, Dh), (B, H, T, T)
                keep = (~off[layer]).to(x.dtype).view(1, -1, 1, 1)  # (1, H, 1, 1): 1 = on
                fill = 0.0 if ablation == "zero" else head_means[layer, :, :T].unsqueeze(0)  # (1, H, T, Dh)
                head_outputs = head_outputs * keep + fill * (1 - keep)  # (B, H, T, Dh)
                attn = _heads.merge_through_output(attention, head_outputs)  # (B, T, D)
            all_weights.append(weights)
            x = x + attn  # (B, T, D): the residual stream
        logits = self.unembed(x)  # (B, T, V)
        return AttentionOnlyOutput(logits, torch.stack(all_weights) if need_weights else None)

    def head_means(self, tokens: torch.Tensor) -> torch.Tensor:
        """Each head's output averaged over the batch, position by position, with every head on.

        Shapes:
            tokens: (B, T)
            returns: (L, H, T, Dh)
        """
        x = self.embed(tokens)  # (B, T, D)
        means = []
        with torch.no_grad():
            for attention in self.layers:
                head_outputs, _ = _heads.head_outputs(attention, x)  # (B, H, T, Dh)
                means.append(head_outputs.mean(dim=0))  # (H, T, Dh)
                x = x + _heads.merge_through_output(attention, head_outputs)  # (B, T, D)
        return torch.stack(means)  # (L, H, T, Dh)

    def _check_means(self, head_means, T: int) -> torch.Tensor:
        want = (self.n_layers, self.n_heads, T, self.d_head)
        if not isinstance(head_means, torch.Tensor):
            raise TypeError(f"ablation='mean' needs head_means, a tensor of shape (L, H, T, Dh) = {want} from "
                            f"model.head_means(tokens); got {type(head_means).__name__}")
        if tuple(head_means.shape[:2]) + tuple(head_means.shape[3:]) != want[:2] + want[3:] or head_means.shape[2] < T:
            raise ValueError(f"head_means has shape {tuple(head_means.shape)}; this model needs (L, H, T, Dh) = {want} "
                             f"(from model.head_means on sequences at least as long as these)")
        return head_means

    def circuits(self):
        """Each layer as a NumPy ``mha_core.MultiHeadAttention`` (float64, x @ w layout), for ``mha_core.circuits``."""
        return [attention.to_numpy() for attention in self.layers]
