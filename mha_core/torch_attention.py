"""Multi-head attention as a ``torch.nn.Module``: the fast path beside the NumPy reference.

``TorchMultiHeadAttention`` computes what ``mha_core.MultiHeadAttention`` computes,
with the same constructor and the same mask meanings as ``torch.nn.MultiheadAttention``
(bool ``True`` = blocked, float = added to the scores). It differs from the NumPy
reference only in how the work is done:

* one fused projection, ``w_qkv``, holds W_Q, W_K and W_V stacked (one matrix product
  for self-attention);
* the attention itself runs in ``torch.nn.functional.scaled_dot_product_attention``
  (SDPA), which never builds the per-head weights unless you ask for them with
  ``need_weights=True``;
* a ``KVCache`` keeps the keys and values of earlier tokens, so decoding one token
  at a time projects each token once.

The four parameters are stored as ``torch.nn.Linear`` stores its weight,
``(out_features, in_features)``, the transpose of the NumPy reference's layout, and
applied with ``F.linear(x, w, b)`` (``x @ w.T + b``):

    w_qkv: (D + 2*Hkv*Dh, D)   rows: W_Q^T (D rows), W_K^T (Hkv*Dh), W_V^T (Hkv*Dh)
    b_qkv: (D + 2*Hkv*Dh,)     or None (bias=False)
    w_out: (D, D)              W_O^T
    b_out: (D,)                or None

The blocking rule is the reference's: a query whose keys are all blocked by the masks
gets weights of all zeros and a zero head output (``torch.nn.MultiheadAttention`` gives
NaN there). Only the masks block: a row made NaN by the data is never zeroed.

NaN and inf in the inputs propagate, as in any torch layer, and are not looked for:
a NaN or inf in query row i gives NaN in output row i; one in key or value token j
gives NaN or inf in every output row of that sequence (a blocked key's zero weight
times NaN is still NaN). Never a silently finite row: SDPA's CPU kernel returns zeros
for a NaN query (so does ``torch.nn.MultiheadAttention``'s cross-attention on CPU);
``_sdpa`` lets the NaN through. That costs one elementwise pass, about as much as a
check would (a sum and ``.item()``, a sync on a GPU). The NumPy reference refuses such
inputs instead, and so does this layer for a chunk written to a ``KVCache`` (one NaN
key there would reach every later token). Float masks are checked: NaN or +inf in one
is a ``ValueError``. Scores that overflow the dtype (|q.k| above about 3e38 in float32)
are not detected here; the NumPy reference refuses them.

This module imports torch; ``import mha_core`` does not import it.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from . import _validate, torch_convert
from .attention import MultiHeadAttention
from .kv_cache import KVCache


class TorchAttentionResult(NamedTuple):
    """What one call of ``TorchMultiHeadAttention`` returns (unpacks like ``output, weights``).

    Shapes (unbatched input drops B):
        output: (B, Tq, D), or (Tq, B, D) when batch_first=False
        weights: (B, H, Tq, Tk) per head, after the softmax; None unless need_weights=True
    """

    output: torch.Tensor
    weights: torch.Tensor | None


class TorchMultiHeadAttention(nn.Module):
    """Multi-head (and grouped-query) attention with one fused QKV projection.

    The constructor matches ``mha_core.MultiHeadAttention``: ``n_kv_heads`` must divide
    ``n_heads``; ``n_kv_heads=1`` is multi-query attention; the default
    (``n_kv_heads=n_heads``) is ordinary multi-head attention.

    ``seed`` makes the initial parameters reproducible with a private ``torch.Generator``
    (the global RNG is left alone). With ``seed=None`` the global RNG is used, so
    ``torch.manual_seed`` works as for any torch layer. Each of W_Q, W_K, W_V and W_O is
    drawn Xavier-uniform on its own, as in the NumPy reference; biases start at zero.

    ``batch_first=True`` (the default) takes (B, T, D); ``False`` takes (T, B, D), as
    ``torch.nn.MultiheadAttention`` does by default. ``device="meta"`` builds the shapes
    only (to count parameters of any size); a layer whose parameters would need more than
    ``mha_core._validate.MAX_BYTES`` (8 GiB) is refused before anything is allocated.
    """

    def __init__(
        self,
        d_model: int,
        n_heads: int,
        *,
        n_kv_heads: int | None = None,
        bias: bool = True,
        seed: int | None = None,
        batch_first: bool = True,
        device=None,
        dtype=None,
    ):
        super().__init__()
        self.d_model, self.n_heads, self.n_kv_heads = _validate.head_counts(d_model, n_heads, n_kv_heads)
        self.d_head = self.d_model // self.n_heads
        self.bias = bool(bias)
        self.batch_first = bool(batch_first)
        self._heads = [self.n_heads, self.n_kv_heads, self.n_kv_heads]  # q, k, v parts of the fused projection
        D, kv_width = self.d_model, self.n_kv_heads * self.d_head
        device = torch.empty(0).device if device is None else _validate.torch_device(device)
        dtype = None if dtype is None else _validate.torch_dtype(dtype)
        if device.type != "meta":
            itemsize = (dtype or torch.get_default_dtype()).itemsize
            _validate.layer_fits(self.d_model, self.n_heads, self.n_kv_heads, self.bias, itemsize,
                                 in_this_process=device.type == "cpu")
        # Allocated without drawing anything; _init_parameters fills them (from a private
        # generator when seed is set), as the NumPy reference does.
        where = {"device": device, "dtype": dtype}
        self.w_qkv = nn.Parameter(torch.empty(D + 2 * kv_width, D, **where))  # rows: W_Q^T, W_K^T, W_V^T
        self.register_parameter("b_qkv", nn.Parameter(torch.empty(D + 2 * kv_width, **where)) if self.bias else None)
        self.w_out = nn.Parameter(torch.empty(D, D, **where))  # W_O^T
        self.register_parameter("b_out", nn.Parameter(torch.empty(D, **where)) if self.bias else None)
        self._init_parameters(seed)

    def _init_parameters(self, seed) -> None:
        generator = None
        if seed is not None:
            generator = torch.Generator(device="cpu").manual_seed(_validate.seed_int(seed))
        if self.w_qkv.is_meta:
            return  # shapes only (for counting parameters): nothing to fill
        widths = [n * self.d_head for n in self._heads]
        blocks = [*self.w_qkv.split(widths, dim=0), self.w_out]  # W_Q^T, W_K^T, W_V^T, W_O^T
        with torch.no_grad():
            for block in blocks:
                rows, cols = block.shape
                limit = math.sqrt(6.0 / (rows + cols))  # Xavier/Glorot uniform
                # Drawn on the CPU in float64 so a seed gives the same numbers on any device and dtype.
                block.copy_(torch.empty(rows, cols, dtype=torch.float64).uniform_(-limit, limit, generator=generator))
            for b in (self.b_qkv, self.b_out):
                if b is not None:
                    b.zero_()

    def extra_repr(self) -> str:
        kv = "" if self.n_kv_heads == self.n_heads else f", n_kv_heads={self.n_kv_heads}"
        return f"d_model={self.d_model}, n_heads={self.n_heads}{kv}, bias={self.bias}, batch_first={self.batch_first}"

    @property
    def n_parameters(self) -> int:
        """How many numbers the layer learns (equals ``costs.attention_parameters``)."""
        return sum(p.numel() for p in self.parameters())

    # -- the forward pass --------------------------------------------------------------

    def forward(
        self,
        query: torch.Tensor,
        key: torch.Tensor | None = None,
        value: torch.Tensor | None = None,
        *,
        attn_mask: torch.Tensor | None = None,
        key_padding_mask: torch.Tensor | None = None,
        is_causal: bool = False,
        need_weights: bool = False,
        kv_cache: KVCache | None = None,
    ) -> TorchAttentionResult:
        """Attend from ``query`` to ``key``/``value`` (self-attention when they are omitted).

        Masks mean what they mean in ``torch.nn.MultiheadAttention``: bool ``True`` =
        blocked, float = added to the scores. ``is_causal=True`` blocks every key after
        the query's position, on top of any other mask (as in the NumPy reference; in
        ``torch.nn.MultiheadAttention`` it is only a hint about ``attn_mask``).

        With ``kv_cache`` (from ``new_kv_cache``), ``query`` is the next Tc tokens of
        one sequence: their keys and values join the cache, and each new token attends
        causally to every cached token and the earlier tokens of its chunk.

        Shapes (batch_first=False swaps B and T in query, key, value and output):
            query: (B, Tq, D) or (Tq, D)
            key: (B, Tk, D) or (Tk, D); defaults to query
            value: (B, Tk, D) or (Tk, D); defaults to key
            attn_mask: (Tq, Tk) or (B*H, Tq, Tk)
            key_padding_mask: (B, Tk) or (Tk,); True = padding
            returns: TorchAttentionResult(output (B, Tq, D), weights (B, H, Tq, Tk) or None);
                with kv_cache, Tk = kv_cache.length after the call
        """
        if type(is_causal) is not bool:
            is_causal = _validate.flag(is_causal, "is_causal")
        special = self.why_not_plain_sdpa(query, key, value, attn_mask=attn_mask, key_padding_mask=key_padding_mask,
                                          need_weights=need_weights, kv_cache=kv_cache)
        if special is not None:
            return self._forward_special(query, key, value, attn_mask, key_padding_mask, is_causal,
                                         need_weights, kv_cache)
        # The plain path: self-attention on (B, T, D), as a hand-written module does it.
        # The parameters are read from nn.Module's own table, where self.w_qkv finds them
        # only after the ordinary lookup fails (about 1 us a name; a call at T=6 takes 20 us).
        p = self._parameters
        B, T, D = query.shape
        qkv = F.linear(query, p["w_qkv"], p["b_qkv"])  # (B, T, D + 2*Hkv*Dh)
        qkv = qkv.view(B, T, -1, self.d_head).transpose(1, 2)  # (B, H + 2*Hkv, T, Dh)
        q, k, v = qkv.split_with_sizes(self._heads, dim=1)  # (B, H, T, Dh), (B, Hkv, T, Dh) x 2
        head_outputs = _sdpa(q, k, v, None, is_causal)  # (B, H, T, Dh)
        concat = head_outputs.transpose(1, 2).reshape(B, T, D)  # (B, T, D)
        return TorchAttentionResult(F.linear(concat, p["w_out"], p["b_out"]), None)  # output (B, T, D)

    def why_not_plain_sdpa(self, query, key=None, value=None, *, attn_mask=None, key_padding_mask=None,
                           need_weights=False, kv_cache=None) -> str | None:
        """Why ``forward`` with these arguments does more than the plain path; None if it does not.

        The plain path is self-attention on a (B, T, D) tensor: the fused projection,
        one ``scaled_dot_product_attention`` call with no mask tensor (at most
        ``is_causal``), and the output projection, what a hand-written module does.
        Each special case below adds work, and is named so that a test, a benchmark or
        a curious learner can see which one applies (as ``torch.nn.MultiheadAttention``'s
        ``why_not_fast_path`` does).

        Shapes: as ``forward``.
        """
        if need_weights is not False and _validate.flag(need_weights, "need_weights"):
            return "need_weights=True: the per-head weights are computed step by step so that they exist"
        if attn_mask is not None:
            return "attn_mask is given: it goes to SDPA as a mask tensor, and fully blocked queries are zeroed"
        if key_padding_mask is not None:
            return "key_padding_mask is given: it goes to SDPA as a mask tensor, and fully blocked queries are zeroed"
        if kv_cache is not None:
            if isinstance(kv_cache, KVCache) and kv_cache.length > 0 and self._n_tokens(query) > 1:
                return "kv_cache holds earlier tokens: the causal mask of a chunk is shifted by kv_cache.length"
            return "kv_cache is given: the new keys and values are written to it before attending"
        if (key is not None and key is not query) or (value is not None and value is not query):
            return "key or value is another tensor (cross-attention): query, key and value are projected apart"
        if not (isinstance(query, torch.Tensor) and query.dim() == 3 and self.batch_first):
            return "query is not a batch-first (B, T, D) tensor: it is checked, and (T, D) or (T, B, D) laid out as (B, T, D)"
        if query.dtype != self._parameters["w_qkv"].dtype or query.shape[2] != self.d_model or 0 in query.shape:
            return "query's dtype or size does not fit the layer: the checks say what to change"
        return None

    def _forward_special(self, query, key, value, attn_mask, key_padding_mask, is_causal, need_weights, kv_cache):
        """``forward`` with every special case that ``why_not_plain_sdpa`` names. Shapes: as ``forward``."""
        if kv_cache is not None:
            self._check_cache(kv_cache, query, key, value, attn_mask, key_padding_mask)
            is_causal = True
        w_qkv, b_qkv = self.w_qkv, self.b_qkv  # (D + 2*Hkv*Dh, D), (D + 2*Hkv*Dh,)
        query, key, value = self._inputs(query, key, value, w_qkv.dtype)
        need_weights = _validate.flag(need_weights, "need_weights")
        q, k, v = self._project(query, key, value, w_qkv, b_qkv)  # (B, H, Tq, Dh), (B, Hkv, Tk, Dh) x 2
        offset = 0
        if kv_cache is not None:
            offset = kv_cache.length  # tokens before this chunk
            k, v = kv_cache.append(k, v)  # (B, Hkv, offset + Tq, Dh): the cached tokens, then these
        masked = attn_mask is not None or key_padding_mask is not None
        if not (masked or need_weights or (is_causal and offset > 0 and q.shape[2] > 1)):
            # One new token sees every cached key; a first chunk is plainly causal.
            head_outputs, weights = _sdpa(q, k, v, None, is_causal and offset == 0), None  # (B, H, Tq, Dh)
        else:
            mask = self._mask(attn_mask, key_padding_mask, is_causal, offset, q, k)  # (B|1, H|1, Tq, Tk) or None
            if need_weights:
                head_outputs, weights = _explicit_attention(q, k, v, mask)  # (B, H, Tq, Dh), (B, H, Tq, Tk)
            else:
                head_outputs, weights = _sdpa(q, k, v, mask, False), None  # (B, H, Tq, Dh)
            if masked:
                head_outputs, weights = _zero_fully_blocked(head_outputs, weights, mask)
        B, H, Tq, Dh = head_outputs.shape
        concat = head_outputs.transpose(1, 2).reshape(B, Tq, H * Dh)  # (B, Tq, D)
        output = F.linear(concat, self.w_out, self.b_out)  # (B, Tq, D)
        return self._caller_layout(output, weights, query)

    # -- the steps ---------------------------------------------------------------------

    def _inputs(self, query, key, value, dtype):
        """Check query/key/value (``dtype``: the parameters'); key defaults to query and value to key.

        A tensor passed more than once stays one object, so that ``_project`` can see
        self-attention. Layout (batch_first, unbatched) is left as given.
        """
        self._check_input(query, "query", dtype)
        if (key is None or key is query) and (value is None or value is query):
            return query, query, query  # self-attention
        key = query if key is None else key
        value = key if value is None else value
        for name, x in (("key", key), ("value", value)):
            if x is not query:
                self._check_input(x, name, dtype)
        if key.dim() != query.dim() or value.dim() != query.dim():
            name, x = ("key", key) if key.dim() != query.dim() else ("value", value)
            raise ValueError(
                f"{name} has rank {x.dim()} but query has rank {query.dim()}; "
                f"use {'(B, T, D)' if self.batch_first else '(T, B, D)'} for all three or (T, D) for all three"
            )
        batch_axis = 0 if self.batch_first else 1
        if query.dim() == 3 and not query.shape[batch_axis] == key.shape[batch_axis] == value.shape[batch_axis]:
            raise ValueError(
                f"batch sizes differ: query {query.shape[batch_axis]}, key {key.shape[batch_axis]}, "
                f"value {value.shape[batch_axis]}; they must be equal"
            )
        if self._n_tokens(key) != self._n_tokens(value):
            raise ValueError(
                f"key and value must have the same number of tokens Tk; got {self._n_tokens(key)} and {self._n_tokens(value)}"
            )
        return query, key, value

    def _check_input(self, x, name: str, dtype) -> None:
        """Raise unless ``x`` is a float tensor of ``dtype`` (the parameters'), this layer's rank and width."""
        if not isinstance(x, torch.Tensor):
            layout = "(B, T, D) or (T, D)" if self.batch_first else "(T, B, D) or (T, D)"
            raise TypeError(f"{name} must be a torch.Tensor of shape {layout}; got {type(x).__name__} (convert it with torch.as_tensor)")
        if x.dtype != dtype:
            if not x.is_floating_point():
                raise TypeError(f"{name} must hold floating-point numbers; got dtype {x.dtype}")
            raise TypeError(
                f"{name} has dtype {x.dtype} but this layer's parameters are {dtype}; "
                f"convert the input with .to({dtype}) or the layer with .to({x.dtype})"
            )
        shape = x.shape
        if len(shape) not in (2, 3) or 0 in shape or shape[-1] != self.d_model:
            layout = "(B, T, D) or (T, D)" if self.batch_first else "(T, B, D) or (T, D)"
            if len(shape) not in (2, 3):
                raise ValueError(f"{name} has rank {len(shape)} (shape {tuple(shape)}); expected shape {layout}")
            if 0 in shape:
                raise ValueError(f"{name} is empty (shape {tuple(shape)}); it needs at least one token and one feature")
            raise ValueError(f"{name} has d_model={shape[-1]} (shape {tuple(shape)}); this layer expects d_model={self.d_model}")
    def _n_tokens(self, x) -> int:
        """T of an input in this layer's layout: (B, T, D), (T, B, D) or (T, D)."""
        return x.shape[0] if x.dim() == 2 or not self.batch_first else x.shape[1]

    def _check_cache(self, cache, query, key, value, attn_mask, key_padding_mask) -> None:
        """Raise unless ``cache`` fits this layer and the call is plain causal self-attention."""
        if key is not None or value is not None:
            raise ValueError("kv_cache is for self-attention decoding: pass only the new tokens as query, not key or value")
        for name, mask in (("attn_mask", attn_mask), ("key_padding_mask", key_padding_mask)):
            if mask is not None:
                raise ValueError(f"kv_cache implies the causal mask; {name} cannot be combined with it")
        if not isinstance(cache, KVCache):
            raise TypeError(f"kv_cache must be a KVCache from new_kv_cache(); got {type(cache).__name__}")
        weight = self.w_qkv
        self._check_input(query, "query", weight.dtype)
        B = 1 if query.dim() == 2 else query.shape[0 if self.batch_first else 1]
        if cache.k.shape[1:2] + cache.k.shape[3:] != (self.n_kv_heads, self.d_head) or cache.v.shape != cache.k.shape:
            raise ValueError(
                f"kv_cache has k of shape {tuple(cache.k.shape)}; this layer needs (B, Hkv, max_tokens, Dh) = "
                f"({B}, {self.n_kv_heads}, max_tokens, {self.d_head})"
            )
        if cache.k.shape[0] != B:
            raise ValueError(f"kv_cache is for batch {cache.k.shape[0]} but the input has batch {B}")
        if cache.k.dtype != weight.dtype:
            raise TypeError(f"kv_cache holds {cache.k.dtype} but this layer's parameters are {weight.dtype}; make it with new_kv_cache()")
        if cache.k.device != weight.device:
            raise ValueError(f"kv_cache is on {cache.k.device} but this layer's parameters are on {weight.device}")
        if not cache.belongs_to(self):
            raise ValueError("kv_cache does not belong to this layer: a cache holds keys and values projected with "
                             "the parameters of the layer whose new_kv_cache() made it; make one with this layer's new_kv_cache()")
        if torch.is_grad_enabled() and (self.w_qkv.requires_grad or query.requires_grad):
            raise ValueError("kv_cache is for inference, and gradients are on: the cache is written in place, which "
                             "autograd cannot train through; decode under torch.no_grad() or torch.inference_mode() "
                             "(to train, pass whole sequences with is_causal=True and no cache)")
        if cache.k.is_inference() and not torch.is_inference_mode_enabled():
            raise ValueError("kv_cache was made inside torch.inference_mode(), and torch lets its tensors be written "
                             "only there: decode under torch.inference_mode() too, or make the cache outside it")
        if not torch.isfinite(query).all():
            # Checked before anything is written: a NaN key would reach every later token until reset().
            raise _validate.not_finite("query", bool(query.isnan().any()),
                                       "; with kv_cache, one would reach every later token (the cache is left as it was)")

    def _project(self, query, key, value, w, b):
        """q, k, v split into heads; self-attention takes one fused matrix product.

        Shapes (query, key, value in the layer's layout):
            query: (B, Tq, D); key, value: (B, Tk, D)
            w: (D + 2*Hkv*Dh, D), the fused weight; b: (D + 2*Hkv*Dh,) or None
            returns: q (B, H, Tq, Dh), k and v (B, Hkv, Tk, Dh)
        """
        if key is query and value is query:
            qkv = self._split_heads(F.linear(query, w, b))  # (B, H + 2*Hkv, T, Dh)
            return qkv.split_with_sizes(self._heads, dim=1)  # (B, H, T, Dh), (B, Hkv, T, Dh) x 2
        widths = [n * self.d_head for n in self._heads]
        w_q, w_k, w_v = w.split_with_sizes(widths)  # (D, D), (Hkv*Dh, D) x 2
        b_q, b_k, b_v = (None, None, None) if b is None else b.split_with_sizes(widths)  # (D,), (Hkv*Dh,) x 2
        return tuple(self._split_heads(F.linear(x, w_x, b_x)) for x, w_x, b_x in
                     ((query, w_q, b_q), (key, w_k, b_k), (value, w_v, b_v)))  # (B, H|Hkv, T, Dh) each

    def _split_heads(self, x):
        """Give each head its own axis, batch first whatever the input layout.

        Shapes:
            x: (B, T, n*Dh), or (T, B, n*Dh) when batch_first=False, or (T, n*Dh)
            returns: (B, n, T, Dh)
        """
        if x.dim() == 2:
            x = x.unsqueeze(0)  # (1, T, n*Dh)
        elif not self.batch_first:
            x = x.transpose(0, 1)  # (B, T, n*Dh)
        B, T, width = x.shape
        return x.view(B, T, width // self.d_head, self.d_head).transpose(1, 2)  # (B, n, T, Dh)

    def _caller_layout(self, output, weights, query) -> TorchAttentionResult:
        """The result in the layout the query came in."""
        if query.dim() == 2:
            output = output.squeeze(0)  # (Tq, D)
            weights = None if weights is None else weights.squeeze(0)  # (H, Tq, Tk)
        elif not self.batch_first:
            output = output.transpose(0, 1)  # (Tq, B, D)
        return TorchAttentionResult(output, weights)

    def _mask(self, attn_mask, key_padding_mask, is_causal, offset, q, k):
        """Every mask as one float tensor added to the scores (-inf = blocked), or None.

        ``offset`` shifts the causal mask: query i sits at position offset + i (the
        tokens already in a KV cache come first).

        Shapes:
            q: (B, H, Tq, Dh); k: (B, Hkv, Tk, Dh)
            returns: broadcastable to (B, H, Tq, Tk)
        """
        B, H, Tq, _ = q.shape
        Tk = k.shape[2]
        total = None
        if attn_mask is not None:
            m = _as_additive_mask(attn_mask, "attn_mask", q)
            if m.shape == (B * H, Tq, Tk):
                m = m.reshape(B, H, Tq, Tk)  # (B, H, Tq, Tk)
            elif m.shape != (Tq, Tk):
                raise ValueError(
                    f"attn_mask has shape {tuple(m.shape)}; valid shapes are (Tq, Tk) = ({Tq}, {Tk}) "
                    f"or (B*H, Tq, Tk) = ({B * H}, {Tq}, {Tk})"
                )
            total = m
        if key_padding_mask is not None:
            m = _as_additive_mask(key_padding_mask, "key_padding_mask", q)
            if m.dim() == 1 and B == 1:
                m = m.unsqueeze(0)  # unbatched: (Tk,) -> (1, Tk)
            if tuple(m.shape) != (B, Tk):
                raise ValueError(
                    f"key_padding_mask has shape {tuple(m.shape)}; the valid shape is (B, Tk) = ({B}, {Tk}) "
                    f"(or (Tk,) for unbatched input)"
                )
            m = m.reshape(B, 1, 1, Tk)  # (B, 1, 1, Tk)
            total = m if total is None else total + m  # (B, H|1, Tq|1, Tk)
        if is_causal:
            later = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).triu(1 + offset)  # (Tq, Tk): keys after the query
            m = torch.zeros(Tq, Tk, dtype=q.dtype, device=q.device).masked_fill_(later, -math.inf)  # (Tq, Tk)
            total = m if total is None else total + m  # (B|1, H|1, Tq, Tk)
        return total

    # -- the key/value cache -------------------------------------------------------------

    def new_kv_cache(self, batch: int = 1, max_tokens: int | None = None, *, dtype=None, device=None) -> KVCache:
        """An empty ``KVCache`` for decoding up to ``max_tokens`` tokens of ``batch`` sequences.

        dtype (a torch floating-point dtype) and device default to the layer's parameters'.
        Use it under ``torch.no_grad()`` or ``torch.inference_mode()``: the cache is
        written in place, and a call with gradients on is refused. A cache that would
        not fit in this process's memory is refused before it is allocated.

        Shapes:
            returns: KVCache with k, v (batch, Hkv, max_tokens, Dh)
        """
        if max_tokens is None:
            raise TypeError("max_tokens is required: the most tokens the cache will hold, e.g. new_kv_cache(1, max_tokens=256)")
        batch = _validate.positive_int(batch, "batch")
        max_tokens = _validate.positive_int(max_tokens, "max_tokens")
        dtype = self.w_qkv.dtype if dtype is None else _validate.torch_dtype(dtype)
        device = self.w_qkv.device if device is None else _validate.torch_device(device)
        shape = (batch, self.n_kv_heads, max_tokens, self.d_head)  # (B, Hkv, max_tokens, Dh)
        _validate.fits_in_memory(2 * math.prod(shape) * dtype.itemsize, f"a cache of batch={batch}, max_tokens={max_tokens}",
                                 in_this_process=device.type == "cpu")
        return KVCache(torch.zeros(shape, dtype=dtype, device=device), torch.zeros(shape, dtype=dtype, device=device),
                       owner=self)

    # -- conversions (the work is in torch_convert, the one place that converts) ---------

    @classmethod
    def from_numpy(cls, layer, *, batch_first: bool = True, device=None, dtype=None) -> "TorchMultiHeadAttention":
        """The torch layer holding the parameters of a NumPy ``mha_core.MultiHeadAttention``.

        To build one from plain arrays, build the NumPy layer first with
        ``MultiHeadAttention.from_parameters``, the one constructor that checks them.
        """
        fused = torch_convert.fused_from_numpy(layer)  # reference layout -> nn.Linear layout
        torch_layer = cls(layer.d_model, layer.n_heads, n_kv_heads=layer.n_kv_heads, bias=layer.bias,
                          batch_first=batch_first, device="meta", dtype=dtype)
        torch_layer.to_empty(device=torch.empty(0).device if device is None else _validate.torch_device(device))
        with torch.no_grad():
            for name, value in fused.items():
                if value is not None:
                    getattr(torch_layer, name).copy_(torch.as_tensor(value))
        return torch_layer

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> "TorchMultiHeadAttention":
        """Copy a ``torch.nn.MultiheadAttention`` exactly (its ``batch_first``, dtype and device too).

        The result gives the same output, and the same per-head weights as the module
        called with ``need_weights=True, average_attn_weights=False`` (where no query has
        every key blocked). ``dropout`` is not copied: this layer has none, so compare
        with the module in ``eval()`` mode or with ``dropout=0``.
        """
        reference = torch_convert.numpy_from_torch(module)  # float64: every float32/16 value is kept exactly
        weight = module.out_proj.weight
        return cls.from_numpy(reference, batch_first=module.batch_first, device=weight.device, dtype=weight.dtype)

    def to_numpy(self) -> MultiHeadAttention:
        """The same layer as a NumPy ``mha_core.MultiHeadAttention`` (float64 parameters)."""
        return torch_convert.numpy_from_fused(self)


# -- checks and masks --------------------------------------------------------------------------


def _as_additive_mask(mask, name: str, like: torch.Tensor) -> torch.Tensor:
    """A mask as numbers to add to the scores, in ``like``'s dtype and device (-inf = blocked)."""
    m = mask if isinstance(mask, torch.Tensor) else torch.as_tensor(mask)
    if m.dtype == torch.bool:
        return torch.zeros(m.shape, dtype=like.dtype, device=like.device).masked_fill_(m.to(like.device), -math.inf)
    if not m.is_floating_point():
        raise TypeError(f"{name} has dtype {m.dtype}; use bool (True = blocked) or float (added to the scores, -inf = blocked)")
    if m.isnan().any() or m.isposinf().any():
        bad = "NaN" if m.isnan().any() else "+inf"
        raise ValueError(f"{name} contains {bad}; a float mask holds finite numbers or -inf (blocked)")
    return m.to(device=like.device, dtype=like.dtype)


# -- the two ways to attend ------------------------------------------------------------------


def _sdpa(q, k, v, mask, is_causal: bool) -> torch.Tensor:
    """SDPA; grouped-query heads share their key/value head without copies (``enable_gqa``).

    SDPA's CPU kernel returns zeros for a query whose scores are all NaN (a query
    holding NaN or inf); adding 0 * q, NaN there and 0 elsewhere, lets the NaN through
    as the rest of the arithmetic does. One elementwise pass over (B, H, Tq, Dh).

    Shapes:
        q: (B, H, Tq, Dh); k, v: (B, Hkv, Tk, Dh)
        mask: float, broadcastable to (B, H, Tq, Tk), or None
        returns: head_outputs (B, H, Tq, Dh)
    """
    head_outputs = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal,
                                                  enable_gqa=q.shape[1] != k.shape[1])  # (B, H, Tq, Dh)
    return torch.add(head_outputs, q, alpha=0.0)  # (B, H, Tq, Dh): NaN where the query holds NaN or inf


def _explicit_attention(q, k, v, mask):
    """Attention written out, step by step, so the per-head weights exist.

    Shapes:
        q: (B, H, Tq, Dh); k, v: (B, Hkv, Tk, Dh)
        mask: float, broadcastable to (B, H, Tq, Tk), or None
        returns: head_outputs (B, H, Tq, Dh), weights (B, H, Tq, Tk)
    """
    n_rep = q.shape[1] // k.shape[1]
    k = k.repeat_interleave(n_rep, dim=1)  # (B, H, Tk, Dh)
    v = v.repeat_interleave(n_rep, dim=1)  # (B, H, Tk, Dh)
    # scores is a fresh tensor, so scaling and masking it in place is safe (autograd
    # included) and saves two more (B, H, Tq, Tk) tensors.
    scores = (q @ k.transpose(-2, -1)).div_(math.sqrt(q.shape[-1]))  # (B, H, Tq, Tk)
    if mask is not None:
        scores = scores.add_(mask)
    weights = torch.softmax(scores, dim=-1)  # (B, H, Tq, Tk)
    return weights @ v, weights


def _zero_fully_blocked(head_outputs, weights, mask):
    """The reference's rule: a query whose keys are all blocked gets zero weights and output.

    Shapes:
        head_outputs: (B, H, Tq, Dh); weights: (B, H, Tq, Tk) or None
        mask: broadcastable to (B, H, Tq, Tk)
        returns: the same two, with those queries' rows zero (never NaN)
    """
    blocked = torch.isneginf(mask).all(dim=-1, keepdim=True)  # (B|1, H|1, Tq, 1)
    # Not in place: softmax's and SDPA's backward need their outputs as they were.
    head_outputs = head_outputs.masked_fill(blocked, 0.0)  # (B, H, Tq, Dh)
    weights = None if weights is None else weights.masked_fill(blocked, 0.0)  # (B, H, Tq, Tk)
    return head_outputs, weights
