"""Multi-head attention as a ``torch.nn.Module``: the fast path beside the NumPy reference.

``TorchMultiHeadAttention`` computes what ``mha_core.MultiHeadAttention`` computes,
with the same constructor and the same mask meanings as ``torch.nn.MultiheadAttention``
(bool ``True`` = blocked, float = added to the scores). It differs from the NumPy
reference only in how the work is done:

* one fused projection, ``qkv``, holds W_Q, W_K and W_V stacked (one matrix product
  for self-attention);
* the attention itself runs in ``torch.nn.functional.scaled_dot_product_attention``
  (SDPA), which never builds the per-head weights unless you ask for them with
  ``need_weights=True``.

Weights are stored as ``torch.nn.Linear`` stores them, ``(out_features, in_features)``,
the transpose of the NumPy reference's layout:

    qkv.weight: (D + 2*Hkv*Dh, D)   rows: W_Q^T (D rows), W_K^T (Hkv*Dh), W_V^T (Hkv*Dh)
    qkv.bias:   (D + 2*Hkv*Dh,)
    out_proj.weight: (D, D)         W_O^T
    out_proj.bias:   (D,)

The blocking rule is the reference's: a query whose keys are all blocked gets weights
of all zeros and a zero head output (``torch.nn.MultiheadAttention`` gives NaN there).

This module imports torch; ``import mha_core`` does not import it.
"""

from __future__ import annotations

import math
import numbers
from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

from . import _validate

# ``enable_gqa`` arrived in torch 2.5; older versions share K/V heads by copying them.
_SDPA_HAS_GQA = "enable_gqa" in (F.scaled_dot_product_attention.__doc__ or "")


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

    ``seed`` makes the initial weights reproducible with a private ``torch.Generator``
    (the global RNG is left alone). With ``seed=None`` the global RNG is used, so
    ``torch.manual_seed`` works as for any torch layer. Each of W_Q, W_K, W_V and W_O is
    drawn Xavier-uniform on its own, as in the NumPy reference; biases start at zero.

    ``batch_first=True`` (the default) takes (B, T, D); ``False`` takes (T, B, D), as
    ``torch.nn.MultiheadAttention`` does by default.
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
        D, kv_width = self.d_model, self.n_kv_heads * self.d_head
        # Built on the "meta" device (no memory, no random draws), then given real storage:
        # nn.Linear's own initialisation would draw from the global RNG even when seed is set.
        device = torch.empty(0).device if device is None else torch.device(device)
        meta = {"device": "meta", "dtype": dtype}
        self.qkv = nn.Linear(D, D + 2 * kv_width, bias=self.bias, **meta).to_empty(device=device)
        self.out_proj = nn.Linear(D, D, bias=self.bias, **meta).to_empty(device=device)
        self._init_weights(seed)

    @property
    def _widths(self) -> list[int]:
        """Widths of the q, k and v parts of the fused projection: [D, Hkv*Dh, Hkv*Dh]."""
        kv_width = self.n_kv_heads * self.d_head
        return [self.d_model, kv_width, kv_width]

    def _init_weights(self, seed) -> None:
        generator = None
        if seed is not None:
            if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
                raise TypeError(f"seed must be a whole number or None; got {seed!r} ({type(seed).__name__})")
            generator = torch.Generator(device="cpu").manual_seed(int(seed))
        if self.qkv.weight.is_meta:
            return  # shapes only (for counting parameters): nothing to fill
        blocks = list(self.qkv.weight.split(self._widths, dim=0)) + [self.out_proj.weight]  # W_Q^T, W_K^T, W_V^T, W_O^T
        with torch.no_grad():
            for block in blocks:
                rows, cols = block.shape
                limit = math.sqrt(6.0 / (rows + cols))  # Xavier/Glorot uniform
                # Drawn on the CPU in float64 so a seed gives the same numbers on any device and dtype.
                values = torch.empty(rows, cols, dtype=torch.float64).uniform_(-limit, limit, generator=generator)
                block.copy_(values)
            for b in (self.qkv.bias, self.out_proj.bias):
                if b is not None:
                    b.zero_()

    def extra_repr(self) -> str:
        kv = "" if self.n_kv_heads == self.n_heads else f", n_kv_heads={self.n_kv_heads}"
        return f"d_model={self.d_model}, n_heads={self.n_heads}{kv}, bias={self.bias}, batch_first={self.batch_first}"

    @property
    def n_parameters(self) -> int:
        """How many numbers the layer learns (equals ``costs.attention_parameters``)."""
        return sum(p.numel() for p in self.parameters())

    # -- inputs --------------------------------------------------------------------

    def _check_input(self, x, name: str) -> torch.Tensor:
        layout = "(B, T, D) or (T, D)" if self.batch_first else "(T, B, D) or (T, D)"
        if not isinstance(x, torch.Tensor):
            raise TypeError(
                f"{name} must be a torch.Tensor of shape {layout}; got {type(x).__name__} "
                f"(convert it with torch.as_tensor)"
            )
        if not x.is_floating_point():
            raise TypeError(f"{name} must hold floating-point numbers; got dtype {x.dtype}")
        weight_dtype = self.qkv.weight.dtype
        if x.dtype != weight_dtype:
            raise TypeError(
                f"{name} has dtype {x.dtype} but this layer's weights are {weight_dtype}; "
                f"convert the input with .to({weight_dtype}) or the layer with .to({x.dtype})"
            )
        if x.dim() not in (2, 3):
            raise ValueError(f"{name} has rank {x.dim()} (shape {tuple(x.shape)}); expected shape {layout}")
        if 0 in x.shape:
            raise ValueError(f"{name} is empty (shape {tuple(x.shape)}); it needs at least one token and one feature")
        if x.shape[-1] != self.d_model:
            raise ValueError(
                f"{name} has d_model={x.shape[-1]} (shape {tuple(x.shape)}); this layer expects d_model={self.d_model}"
            )
        return x

    def _inputs(self, query, key, value):
        """Check query/key/value; return them as (B, T, D), whether they are one tensor, and unbatched."""
        query = self._check_input(query, "query")
        key = query if key is None else self._check_input(key, "key")
        value = key if value is None else self._check_input(value, "value")
        # Decide on the fused projection before any transpose makes new tensor objects.
        same = "qkv" if (key is query and value is query) else ("kv" if value is key else "none")
        unbatched = query.dim() == 2
        for name, x in (("key", key), ("value", value)):
            if x.dim() != query.dim():
                raise ValueError(
                    f"{name} has rank {x.dim()} but query has rank {query.dim()}; "
                    f"use {'(B, T, D)' if self.batch_first else '(T, B, D)'} for all three or (T, D) for all three"
                )
        if unbatched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)  # (1, T, D)
        elif not self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)  # (B, T, D)
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(
                f"batch sizes differ: query {query.shape[0]}, key {key.shape[0]}, value {value.shape[0]}; they must be equal"
            )
        if key.shape[1] != value.shape[1]:
            raise ValueError(f"key and value must have the same number of tokens Tk; got {key.shape[1]} and {value.shape[1]}")
        return query, key, value, same, unbatched

    def _mask(self, attn_mask, key_padding_mask, is_causal, B, Tq, Tk, like):
        """All masks as one tensor broadcastable to (B, H, Tq, Tk), or None.

        Bool when every mask given is bool (True = blocked), else float (added to the
        scores, bool masks turned into -inf where blocked).
        """
        H = self.n_heads
        masks = []
        if attn_mask is not None:
            m = _as_mask(attn_mask, "attn_mask", like)
            if m.shape == (Tq, Tk):
                masks.append(m)  # (Tq, Tk)
            elif m.shape == (B * H, Tq, Tk):
                masks.append(m.reshape(B, H, Tq, Tk))  # (B, H, Tq, Tk)
            else:
                raise ValueError(
                    f"attn_mask has shape {tuple(m.shape)}; valid shapes are (Tq, Tk) = ({Tq}, {Tk}) "
                    f"or (B*H, Tq, Tk) = ({B * H}, {Tq}, {Tk})"
                )
        if key_padding_mask is not None:
            m = _as_mask(key_padding_mask, "key_padding_mask", like)
            if m.dim() == 1 and B == 1:
                m = m.unsqueeze(0)  # unbatched: (Tk,) -> (1, Tk)
            if tuple(m.shape) != (B, Tk):
                raise ValueError(
                    f"key_padding_mask has shape {tuple(m.shape)}; the valid shape is (B, Tk) = ({B}, {Tk}) "
                    f"(or (Tk,) for unbatched input)"
                )
            masks.append(m.reshape(B, 1, 1, Tk))  # (B, 1, 1, Tk)
        if is_causal:
            masks.append(torch.ones(Tq, Tk, dtype=torch.bool, device=like.device).triu(1))  # (Tq, Tk)
        if not masks:
            return None
        if all(m.dtype == torch.bool for m in masks):
            total = masks[0]
            for m in masks[1:]:
                total = total | m  # broadcasts to (B|1, H|1, Tq, Tk)
            return total
        total = None
        for m in masks:
            if m.dtype == torch.bool:
                m = torch.zeros_like(m, dtype=like.dtype).masked_fill(m, -math.inf)  # same shape, 0 or -inf
            total = m if total is None else total + m  # broadcasts to (B|1, H|1, Tq, Tk)
        return total

    # -- the forward pass --------------------------------------------------------------

    def _project(self, query, key, value, same):
        """q, k, v before the head split, with as few matrix products as the inputs allow.

        Shapes:
            query: (B, Tq, D); key, value: (B, Tk, D)
            returns: q (B, Tq, D), k and v (B, Tk, Hkv*Dh)
        """
        widths = self._widths
        w_qkv, b_qkv, _, _ = self._projection_params()  # (D + 2*Hkv*Dh, D), (D + 2*Hkv*Dh,)
        if same == "qkv":
            return F.linear(query, w_qkv, b_qkv).split_with_sizes(widths, dim=-1)  # (B, T, D), (B, T, Hkv*Dh) x 2
        q_and_kv = [widths[0], widths[1] + widths[2]]
        w_q, w_kv = w_qkv.split_with_sizes(q_and_kv, dim=0)  # (D, D), (2*Hkv*Dh, D)
        b_q, b_kv = (None, None) if b_qkv is None else b_qkv.split_with_sizes(q_and_kv)  # (D,), (2*Hkv*Dh,)
        q = F.linear(query, w_q, b_q)  # (B, Tq, D)
        if same == "kv":
            k, v = F.linear(key, w_kv, b_kv).split_with_sizes(widths[1:], dim=-1)  # (B, Tk, Hkv*Dh) x 2
            return q, k, v
        w_k, w_v = w_kv.split_with_sizes(widths[1:], dim=0)  # (Hkv*Dh, D) each
        b_k, b_v = (None, None) if b_kv is None else b_kv.split_with_sizes(widths[1:])  # (Hkv*Dh,) each
        return q, F.linear(key, w_k, b_k), F.linear(value, w_v, b_v)

    def _projection_params(self):
        """The four projection tensors: (w_qkv, b_qkv, w_o, b_o); a bias is None when bias=False.

        The same tensors as ``self.qkv.weight`` ... ``self.out_proj.bias``, read from the
        parameter dicts directly: each ``module.attribute`` lookup of a parameter goes
        through ``nn.Module.__getattr__`` in Python, and ``forward``'s fast path would pay for
        eight of them.

        Shapes:
            returns: w_qkv (D + 2*Hkv*Dh, D), b_qkv (D + 2*Hkv*Dh,), w_o (D, D), b_o (D,)
        """
        qkv, out_proj = self._modules["qkv"]._parameters, self._modules["out_proj"]._parameters
        return qkv["weight"], qkv["bias"], out_proj["weight"], out_proj["bias"]

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
    ) -> TorchAttentionResult:
        """Attend from ``query`` to ``key``/``value`` (self-attention when they are omitted).

        Masks mean what they mean in ``torch.nn.MultiheadAttention``: bool ``True`` =
        blocked, float = added to the scores. ``is_causal=True`` blocks every key after
        the query's position, on top of any other mask (as in the NumPy reference; in
        ``torch.nn.MultiheadAttention`` it is only a hint about ``attn_mask``).

        Shapes (batch_first=False swaps B and T in query, key, value and output):
            query: (B, Tq, D) or (Tq, D)
            key: (B, Tk, D) or (Tk, D); defaults to query
            value: (B, Tk, D) or (Tk, D); defaults to key
            attn_mask: (Tq, Tk) or (B*H, Tq, Tk)
            key_padding_mask: (B, Tk) or (Tk,); True = padding
            returns: TorchAttentionResult(output (B, Tq, D), weights (B, H, Tq, Tk) or None)
        """
        # Fast path first: the usual call, self-attention on a (B, T, D) batch with at most
        # is_causal=True, runs just the maths below. At the course's small shapes (T = 6
        # or 32) the general path's checks and mask bookkeeping took as long as the
        # attention itself. Any other call, and any input the checks would refuse, goes
        # on to the general path, which checks fully and names the problem.
        if (
            attn_mask is None and key_padding_mask is None and not need_weights
            and (key is None or key is query) and (value is None or value is query)
            and self.batch_first and isinstance(query, torch.Tensor)
        ):
            w_qkv, b_qkv, w_o, b_o = self._projection_params()
            shape = query.shape
            if len(shape) == 3 and shape[2] == self.d_model and 0 not in shape and query.dtype == w_qkv.dtype:
                B, T, _ = shape
                H, Hkv, Dh = self.n_heads, self.n_kv_heads, self.d_head
                # The fused rows are H query heads, then Hkv key heads, then Hkv value heads.
                qkv = F.linear(query, w_qkv, b_qkv)  # (B, T, (H + 2*Hkv) * Dh)
                qkv = qkv.view(B, T, H + 2 * Hkv, Dh).transpose(1, 2)  # (B, H + 2*Hkv, T, Dh)
                q, k, v = qkv.split_with_sizes([H, Hkv, Hkv], dim=1)  # (B, H, T, Dh), (B, Hkv, T, Dh) x 2
                head_outputs = _fast_attention(q, k, v, None, bool(is_causal))  # (B, H, T, Dh)
                concat = head_outputs.transpose(1, 2).reshape(B, T, H * Dh)  # (B, T, D)
                return TorchAttentionResult(F.linear(concat, w_o, b_o), None)  # output (B, T, D)

        # The general path: any layout, cross-attention, masks, per-head weights.
        query, key, value, same, unbatched = self._inputs(query, key, value)
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        H, Hkv, Dh = self.n_heads, self.n_kv_heads, self.d_head
        # With no other mask and no weights wanted, SDPA's own causal path does the masking.
        sdpa_causal = bool(is_causal) and attn_mask is None and key_padding_mask is None and not need_weights
        mask = None if sdpa_causal else self._mask(attn_mask, key_padding_mask, is_causal, B, Tq, Tk, query)

        q, k, v = self._project(query, key, value, same)
        q = q.view(B, Tq, H, Dh).transpose(1, 2)  # (B, H, Tq, Dh)
        k = k.view(B, Tk, Hkv, Dh).transpose(1, 2)  # (B, Hkv, Tk, Dh)
        v = v.view(B, Tk, Hkv, Dh).transpose(1, 2)  # (B, Hkv, Tk, Dh)

        # The reference's rule: a query with every key blocked gets zero weights and a zero
        # head output. Only attn_mask and key_padding_mask can block every key of a query:
        # the causal mask always leaves key 0 open.
        blocked_rows = None
        if attn_mask is not None or key_padding_mask is not None:
            blocked_rows = _fully_blocked(mask)  # (B|1, H|1, Tq, 1)
        if need_weights:
            head_outputs, weights = _explicit_attention(q, k, v, mask, blocked_rows)  # (B, H, Tq, Dh), (B, H, Tq, Tk)
        else:
            head_outputs, weights = _fast_attention(q, k, v, mask, sdpa_causal), None  # (B, H, Tq, Dh)
        if blocked_rows is not None:
            head_outputs = head_outputs.masked_fill(blocked_rows, 0.0)  # (B, H, Tq, Dh)

        concat = head_outputs.transpose(1, 2).reshape(B, Tq, H * Dh)  # (B, Tq, D)
        _, _, w_o, b_o = self._projection_params()
        output = F.linear(concat, w_o, b_o)  # (B, Tq, D)
        if unbatched:
            output = output.squeeze(0)  # (Tq, D)
            weights = None if weights is None else weights.squeeze(0)  # (H, Tq, Tk)
        elif not self.batch_first:
            output = output.transpose(0, 1)  # (Tq, B, D)
        return TorchAttentionResult(output, weights)

    # -- conversions -------------------------------------------------------------------

    @classmethod
    def from_torch(cls, module: nn.MultiheadAttention) -> "TorchMultiHeadAttention":
        """Copy a ``torch.nn.MultiheadAttention`` exactly (its ``batch_first``, dtype and device too).

        The result gives the same output, and the same per-head weights as the module
        called with ``need_weights=True, average_attn_weights=False`` (where no query has
        every key blocked). ``dropout`` is not copied: this layer has none, so compare
        with the module in ``eval()`` mode or with ``dropout=0``.
        """
        from ._torch_weights import check_torch_module

        check_torch_module(module)
        D = module.embed_dim
        if module.in_proj_weight is not None:
            in_weight = module.in_proj_weight  # (3D, D), rows: q, k, v
        else:
            in_weight = torch.cat([module.q_proj_weight, module.k_proj_weight, module.v_proj_weight])  # (3D, D)
        layer = cls(
            D,
            module.num_heads,
            bias=module.in_proj_bias is not None,
            batch_first=module.batch_first,
            device=in_weight.device,
            dtype=in_weight.dtype,
        )
        with torch.no_grad():
            layer.qkv.weight.copy_(in_weight)
            layer.out_proj.weight.copy_(module.out_proj.weight)
            if layer.bias:
                layer.qkv.bias.copy_(module.in_proj_bias)
                layer.out_proj.bias.copy_(module.out_proj.bias)
        return layer

    @classmethod
    def from_numpy(cls, layer, *, batch_first: bool = True, device=None, dtype=None) -> "TorchMultiHeadAttention":
        """Build the torch layer holding the weights of a NumPy ``mha_core.MultiHeadAttention``."""
        from .attention import MultiHeadAttention

        if not isinstance(layer, MultiHeadAttention):
            raise TypeError(f"layer must be an mha_core.MultiHeadAttention; got {type(layer).__name__}")
        out = cls(
            layer.d_model, layer.n_heads, n_kv_heads=layer.n_kv_heads, bias=layer.bias,
            batch_first=batch_first, device=device, dtype=dtype,
        )

        def t(a):
            return torch.as_tensor(a, dtype=out.qkv.weight.dtype, device=out.qkv.weight.device)

        with torch.no_grad():
            # NumPy weights act on the right (x @ w); nn.Linear stores the transpose.
            out.qkv.weight.copy_(torch.cat([t(layer.w_q).T, t(layer.w_k).T, t(layer.w_v).T]))  # (D + 2*Hkv*Dh, D)
            out.out_proj.weight.copy_(t(layer.w_o).T)  # (D, D)
            if layer.bias:
                out.qkv.bias.copy_(torch.cat([t(layer.b_q), t(layer.b_k), t(layer.b_v)]))  # (D + 2*Hkv*Dh,)
                out.out_proj.bias.copy_(t(layer.b_o))
        return out

    def to_numpy(self):
        """The same layer as a NumPy ``mha_core.MultiHeadAttention`` (float64 weights)."""
        from .attention import MultiHeadAttention

        return MultiHeadAttention.from_torch(self)


# -- the two ways to attend -------------------------------------------------------------


def _as_mask(mask, name: str, like: torch.Tensor) -> torch.Tensor:
    """A mask as a tensor on ``like``'s device: bool (True = blocked) or float in ``like``'s dtype."""
    m = mask if isinstance(mask, torch.Tensor) else torch.as_tensor(mask)
    if m.dtype != torch.bool and not m.is_floating_point():
        raise TypeError(
            f"{name} has dtype {m.dtype}; use bool (True = blocked) or float (added to the scores, -inf = blocked)"
        )
    return m.to(device=like.device, dtype=None if m.dtype == torch.bool else like.dtype)


def _fully_blocked(mask: torch.Tensor) -> torch.Tensor:
    """True for each query whose keys are all blocked. Shape (B|1, H|1, Tq, 1)."""
    blocked = mask if mask.dtype == torch.bool else torch.isneginf(mask)
    return blocked.all(dim=-1, keepdim=True)  # (..., Tq, 1)


def _fast_attention(q, k, v, mask, is_causal: bool) -> torch.Tensor:
    """SDPA, with our bool convention (True = blocked) turned into SDPA's (True = allowed).

    Shapes:
        q: (B, H, Tq, Dh); k, v: (B, Hkv, Tk, Dh)
        mask: broadcastable to (B, H, Tq, Tk), or None
        returns: head_outputs (B, H, Tq, Dh)
    """
    if mask is not None and mask.dtype == torch.bool:
        mask = ~mask  # SDPA: True = allowed
    n_rep = q.shape[1] // k.shape[1]
    if n_rep == 1:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)
    if _SDPA_HAS_GQA:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal, enable_gqa=True)
    k = k.repeat_interleave(n_rep, dim=1)  # (B, H, Tk, Dh)
    v = v.repeat_interleave(n_rep, dim=1)  # (B, H, Tk, Dh)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=is_causal)


def _explicit_attention(q, k, v, mask, blocked_rows):
    """Attention written out, step by step, so the per-head weights exist.

    ``blocked_rows`` marks the queries whose keys are all blocked (``_fully_blocked``);
    their weights become zeros instead of softmax's NaN. None: no such query.

    Shapes:
        q: (B, H, Tq, Dh); k, v: (B, Hkv, Tk, Dh)
        mask: broadcastable to (B, H, Tq, Tk), or None
        blocked_rows: (B|1, H|1, Tq, 1), or None
        returns: head_outputs (B, H, Tq, Dh), weights (B, H, Tq, Tk)
    """
    n_rep = q.shape[1] // k.shape[1]
    if n_rep > 1:
        k = k.repeat_interleave(n_rep, dim=1)  # (B, H, Tk, Dh)
        v = v.repeat_interleave(n_rep, dim=1)  # (B, H, Tk, Dh)
    # scores is a fresh tensor, so scaling and masking it in place is safe (autograd
    # included) and saves two more (B, H, Tq, Tk) tensors.
    scores = (q @ k.transpose(-2, -1)).div_(math.sqrt(q.shape[-1]))  # (B, H, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill_(mask, -math.inf) if mask.dtype == torch.bool else scores.add_(mask)
    weights = torch.softmax(scores, dim=-1)  # (B, H, Tq, Tk)
    if blocked_rows is not None:
        # Not in place: softmax's backward needs its output as it was.
        weights = weights.masked_fill(blocked_rows, 0.0)  # all-blocked rows: zeros, not NaN
    return weights @ v, weights
