"""Multi-head attention in NumPy, written to be read.

The functions follow the order the course teaches:

    project -> split_heads -> attention_scores -> apply_mask -> softmax
            -> mix_values -> merge_heads -> output_projection

and ``MultiHeadAttention`` composes them. Everything is float64.

Conventions
-----------
* Projection matrices act on the right, as in the paper: ``q = x @ w_q + b_q``.
  ``w_q`` has shape ``(D, H*Dh)``; ``w_o`` has shape ``(H*Dh, D)``, one block of ``Dh``
  rows per head. (``torch.nn.Linear`` stores the transpose; ``mha_core.torch_convert``
  converts. This module imports nothing of torch.)
* Masks have the meaning they have in ``torch.nn.MultiheadAttention``: a bool mask
  blocks where it is ``True``; a float mask is added to the scores.
* The blocking rule: a blocked score becomes ``-inf`` before the softmax, so its
  weight is exactly 0. A row in which every key is blocked gets weights of all
  zeros (not NaN), so that query's head output is the zero vector.
* No function changes its inputs.
"""

from __future__ import annotations

from dataclasses import dataclass


import numpy as np

from . import _validate

#: What a blocked score becomes before the softmax.
BLOCKED = -np.inf


# --- 1. project --------------------------------------------------------------


def project(x: np.ndarray, w: np.ndarray, b: np.ndarray | None = None) -> np.ndarray:
    """One learned linear map: ``x @ w + b``.

    Shapes:
        x: (..., T, D_in)
        w: (D_in, D_out)
        b: (D_out,) or None
        returns: (..., T, D_out)
    """
    out = x @ w
    return out if b is None else out + b


# --- 2. split into heads -------------------------------------------------------


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """Cut the feature axis into ``n_heads`` slices and give each head its own axis.

    Shapes:
        x: (B, T, D)
        returns: (B, H, T, Dh) with Dh = D / H
    """
    x = _validate.float_array(x, "x", ranks=(3,), shape_names="(B, T, D)", copy=False)
    B, T, D = x.shape
    n_heads = _validate.positive_int(n_heads, "n_heads")
    _validate.divides(n_heads, D)
    Dh = D // n_heads
    x = x.reshape(B, T, n_heads, Dh)  # (B, T, H, Dh)
    return x.transpose(0, 2, 1, 3)  # (B, H, T, Dh)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """Undo ``split_heads``: put the heads side by side on the feature axis (concatenation).

    Shapes:
        x: (B, H, T, Dh)
        returns: (B, T, H*Dh)
    """
    x = _validate.float_array(x, "x", ranks=(4,), shape_names="(B, H, T, Dh)", copy=False)
    B, H, T, Dh = x.shape
    x = x.transpose(0, 2, 1, 3)  # (B, T, H, Dh)
    return x.reshape(B, T, H * Dh)  # (B, T, H*Dh)


def repeat_kv(x: np.ndarray, n_rep: int) -> np.ndarray:
    """Share each key/value head with ``n_rep`` query heads (grouped-query attention).

    Query head ``h`` reads key/value head ``h // n_rep``.

    Shapes:
        x: (B, Hkv, T, Dh)
        returns: (B, Hkv*n_rep, T, Dh)
    """
    return np.repeat(x, n_rep, axis=1)  # (B, H, T, Dh)


# --- 3. score, 4. mask, 5. softmax, 6. mix --------------------------------------


def attention_scores(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """How well each query matches each key: dot products divided by sqrt(Dh).

    Shapes:
        q: (..., Tq, Dh)
        k: (..., Tk, Dh)
        returns: (..., Tq, Tk)
    """
    d_head = q.shape[-1]
    k_t = np.swapaxes(k, -1, -2)  # (..., Dh, Tk)
    with np.errstate(over="ignore", invalid="ignore"):
        scores = q @ k_t / np.sqrt(d_head)  # (..., Tq, Tk)
    if not np.isfinite(scores).all() and np.isfinite(q).all() and np.isfinite(k).all():
        # A score of -inf would read as "blocked" and +inf as a NaN weight: refuse instead.
        raise ValueError(
            f"attention scores overflow float64: q and k are too large (largest |q| entry "
            f"{np.abs(q).max():.3g}, |k| entry {np.abs(k).max():.3g}; a score q.k/sqrt(d_head) must stay "
            f"under about 1.8e308); scale the inputs or the projection matrices down"
        )
    return scores


def causal_mask(T: int, Tk: int | None = None) -> np.ndarray:
    """A bool mask that blocks every key after the query's own position.

    ``True`` means blocked, as in ``torch.nn.MultiheadAttention``.

    Shapes:
        returns: (T, Tk), Tk = T unless given
    """
    T = _validate.positive_int(T, "T")
    Tk = T if Tk is None else _validate.positive_int(Tk, "Tk")
    return np.triu(np.ones((T, Tk), dtype=bool), k=1)  # (T, Tk)


def additive_mask(mask: np.ndarray) -> np.ndarray:
    """Turn a mask into numbers to add to the scores.

    A bool mask gives ``-inf`` where it is ``True`` (blocked) and 0 elsewhere; a float
    mask is returned as float64, unchanged.

    Shapes:
        mask: any shape
        returns: the same shape, float64
    """
    mask = np.asarray(mask)
    if mask.dtype == bool:
        return np.where(mask, BLOCKED, 0.0)
    return mask.astype(np.float64)


def apply_mask(scores: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """Add a mask to the scores (see ``additive_mask``); ``None`` leaves them as they are.

    Shapes:
        scores: (..., Tq, Tk)
        mask: broadcastable to (..., Tq, Tk)
        returns: (..., Tq, Tk)
    """
    if mask is None:
        return scores
    return scores + additive_mask(mask)


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Turn scores into weights that are positive and sum to 1 along ``axis``.

    Numerically stable: the largest entry is subtracted first, so logits of +-1e4
    do not overflow. Blocked entries (``-inf``) get weight 0. A row in which every
    entry is ``-inf`` gets all zeros, never NaN. NaN or ``+inf`` has no meaning as a
    score and raises ``ValueError``.

    Shapes:
        x: any shape, e.g. scores (..., Tq, Tk)
        returns: the same shape; sums to 1 along ``axis`` (0 where fully blocked)
    """
    x = np.asarray(x)
    if x.dtype == bool or not np.issubdtype(x.dtype, np.number) or np.iscomplexobj(x):
        raise TypeError(f"softmax got x of dtype {x.dtype}; scores must be real numbers (a float array)")
    if x.size == 0:
        raise ValueError(f"softmax got an empty x (shape {x.shape}); there is nothing to normalise along axis {axis}")
    x = x.astype(np.float64)
    if np.isnan(x).any() or np.isposinf(x).any():
        bad = "NaN" if np.isnan(x).any() else "+inf"
        raise ValueError(f"softmax got x containing {bad}; scores must be finite numbers or -inf (blocked)")
    row_max = np.max(x, axis=axis, keepdims=True)
    row_max = np.where(np.isneginf(row_max), 0.0, row_max)  # an all-blocked row stays -inf
    exp = np.exp(x - row_max)
    total = np.sum(exp, axis=axis, keepdims=True)
    return np.divide(exp, total, out=np.zeros_like(exp), where=total > 0)


def mix_values(weights: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Each query's output is the weighted average of the value vectors.

    Shapes:
        weights: (..., Tq, Tk)
        v: (..., Tk, Dv)
        returns: (..., Tq, Dv)
    """
    return weights @ v


def scaled_dot_product_attention(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    *,
    attn_mask: np.ndarray | None = None,
    is_causal: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """softmax(q k^T / sqrt(Dh) + mask) v, for one head or for many at once.

    ``attn_mask`` is bool (``True`` = blocked, as in ``torch.nn.MultiheadAttention``;
    note that ``torch.nn.functional.scaled_dot_product_attention`` uses the opposite
    bool convention) or float (added to the scores). ``is_causal=True`` also blocks
    every key after the query's position.

    Shapes:
        q: (..., Tq, Dh)
        k: (..., Tk, Dh)
        v: (..., Tk, Dv)
        attn_mask: broadcastable to (..., Tq, Tk), or None
        returns: output (..., Tq, Dv), weights (..., Tq, Tk)
    """
    q = _validate.float_array(q, "q", ranks=range(2, 9), shape_names="(..., Tq, Dh)")
    k = _validate.float_array(k, "k", ranks=range(2, 9), shape_names="(..., Tk, Dh)")
    v = _validate.float_array(v, "v", ranks=range(2, 9), shape_names="(..., Tk, Dv)")
    if q.shape[-1] != k.shape[-1]:
        raise ValueError(f"q and k must have the same last dimension Dh; got q {q.shape} and k {k.shape}")
    if k.shape[-2] != v.shape[-2]:
        raise ValueError(f"k and v must have the same number of keys Tk; got k {k.shape} and v {v.shape}")
    is_causal = _validate.flag(is_causal, "is_causal")
    Tq, Tk = q.shape[-2], k.shape[-2]
    scores = attention_scores(q, k)  # (..., Tq, Tk)
    if attn_mask is not None:
        attn_mask = _validate.mask_array(attn_mask, "attn_mask")
        try:
            fits = np.broadcast_shapes(attn_mask.shape, scores.shape) == scores.shape
        except ValueError:
            fits = False
        if not fits:
            raise ValueError(
                f"attn_mask has shape {attn_mask.shape}; it must broadcast to the scores' shape "
                f"{scores.shape}, for example ({Tq}, {Tk})"
            )
        scores = apply_mask(scores, attn_mask)
    if is_causal:
        scores = apply_mask(scores, causal_mask(Tq, Tk))
    weights = softmax(scores, axis=-1)  # (..., Tq, Tk)
    return mix_values(weights, v), weights


# --- 7. merge (concatenate), 8. output projection ---------------------------------


def output_projection(
    head_outputs: np.ndarray,
    w_o: np.ndarray,
    b_o: np.ndarray | None = None,
    *,
    heads_off=None,
) -> np.ndarray:
    """Concatenate the heads and blend them with the output projection.

    ``merge_heads(head_outputs) @ w_o`` equals the sum over heads of
    ``head_outputs[:, h] @ w_o[h*Dh:(h+1)*Dh]``: each head owns one block of rows of
    ``w_o``. ``heads_off`` (H bools, True = off; or head indices such as ``[0, 2]``)
    switches heads off by zeroing their output before the blend; the bias stays.

    Shapes:
        head_outputs: (B, H, T, Dh)
        w_o: (H*Dh, D)
        b_o: (D,) or None
        heads_off: (H,) bool, or None for every head on
        returns: (B, T, D)
    """
    head_outputs = np.asarray(head_outputs)
    if head_outputs.ndim != 4:
        raise ValueError(
            f"head_outputs must have shape (B, H, T, Dh); got rank {head_outputs.ndim} (shape {head_outputs.shape})"
        )
    B, H, T, Dh = head_outputs.shape
    w_o = np.asarray(w_o)
    if w_o.ndim != 2 or w_o.shape[0] != H * Dh:
        raise ValueError(
            f"w_o has shape {w_o.shape}; it must be (H*Dh, D) with H*Dh = {H}*{Dh} = {H * Dh} rows, one block of Dh rows per head"
        )
    if heads_off is not None:
        off = _validate.heads_off(heads_off, H)  # (H,) bool
        head_outputs = np.where(off[None, :, None, None], 0.0, head_outputs)  # (B, H, T, Dh): an off head gives zeros
    concat = merge_heads(head_outputs)  # (B, T, H*Dh)
    return project(concat, w_o, b_o)  # (B, T, D)


# --- the layer ---------------------------------------------------------------------


@dataclass(frozen=True)
class AttentionResult:
    """What one call of ``MultiHeadAttention`` computed, step by step.

    Shapes (unbatched input drops the leading B):
        output: (B, Tq, D)          after the output projection
        weights: (B, H, Tq, Tk)     after the softmax; rows sum to 1 (0 if fully blocked)
        scores: (B, H, Tq, Tk)      scaled and masked, before the softmax (-inf = blocked)
        head_outputs: (B, H, Tq, Dh) weighted averages of values, before the merge
        q: (B, H, Tq, Dh)
        k: (B, Hkv, Tk, Dh)         Hkv = n_kv_heads (shared by H / Hkv query heads each)
        v: (B, Hkv, Tk, Dh)
    """

    output: np.ndarray
    weights: np.ndarray
    scores: np.ndarray
    head_outputs: np.ndarray
    q: np.ndarray
    k: np.ndarray
    v: np.ndarray


class MultiHeadAttention:
    """Multi-head attention with readable NumPy parameters.

    ``n_kv_heads`` gives grouped-query attention: it must divide ``n_heads``;
    ``n_kv_heads=1`` is multi-query attention and ``n_kv_heads=n_heads`` (the
    default) is ordinary multi-head attention.

    Parameters (float64):
        w_q: (D, H*Dh)      w_k, w_v: (D, Hkv*Dh)      w_o: (H*Dh, D)
        b_q: (H*Dh,)        b_k, b_v: (Hkv*Dh,)        b_o: (D,)   (None when bias=False)
    """

    def __init__(self, d_model: int, n_heads: int, *, n_kv_heads: int | None = None, bias: bool = True, seed=None):
        self.d_model, self.n_heads, self.n_kv_heads = _validate.head_counts(d_model, n_heads, n_kv_heads)
        self.d_head = self.d_model // self.n_heads
        self.bias = bool(bias)
        _validate.layer_fits(self.d_model, self.n_heads, self.n_kv_heads, self.bias, bytes_per_value=8)
        rng = _validate.rng(seed)
        D, Dh = self.d_model, self.d_head
        kv_width = self.n_kv_heads * Dh

        def uniform(rows, cols):
            # Xavier/Glorot uniform, as torch initialises in_proj_weight.
            limit = np.sqrt(6.0 / (rows + cols))
            return rng.uniform(-limit, limit, size=(rows, cols))

        self.w_q = uniform(D, D)
        self.w_k = uniform(D, kv_width)
        self.w_v = uniform(D, kv_width)
        self.w_o = uniform(D, D)
        if self.bias:
            self.b_q, self.b_k, self.b_v, self.b_o = (np.zeros(n) for n in (D, kv_width, kv_width, D))
        else:
            self.b_q = self.b_k = self.b_v = self.b_o = None

    def __repr__(self):
        kv = "" if self.n_kv_heads == self.n_heads else f", n_kv_heads={self.n_kv_heads}"
        return f"MultiHeadAttention(d_model={self.d_model}, n_heads={self.n_heads}{kv}, bias={self.bias})"

    @property
    def n_parameters(self) -> int:
        """How many numbers the layer learns."""
        arrays = (self.w_q, self.w_k, self.w_v, self.w_o, self.b_q, self.b_k, self.b_v, self.b_o)
        return sum(a.size for a in arrays if a is not None)

    def w_o_block(self, head: int) -> np.ndarray:
        """The rows of ``w_o`` that head ``head`` writes through.

        Shapes:
            returns: (Dh, D)
        """
        head = _validate.index(head, "head", self.n_heads, "heads")
        # A copy, so that changing the block cannot change the layer.
        return self.w_o[head * self.d_head : (head + 1) * self.d_head].copy()  # (Dh, D)

    # -- inputs ------------------------------------------------------------------

    def _inputs(self, query, key, value):
        """Check query/key/value and return them batched, with a flag for unbatched input."""
        query = _validate.float_array(query, "query")
        key = query if key is None else _validate.float_array(key, "key")
        value = key if value is None else _validate.float_array(value, "value")
        unbatched = query.ndim == 2
        for name, x in (("key", key), ("value", value)):
            if x.ndim != query.ndim:
                raise ValueError(
                    f"{name} has rank {x.ndim} but query has rank {query.ndim}; "
                    f"use (B, T, D) for all three or (T, D) for all three"
                )
        # Checked before the batch axis is added, so the message shows the shape as given.
        for name, x in (("query", query), ("key", key), ("value", value)):
            if x.shape[-1] != self.d_model:
                raise ValueError(f"{name} has d_model={x.shape[-1]} (shape {x.shape}); this layer expects d_model={self.d_model}")
        if unbatched:
            query, key, value = query[None], key[None], value[None]  # (1, Tq, D), (1, Tk, D), (1, Tk, D)
        if not query.shape[0] == key.shape[0] == value.shape[0]:
            raise ValueError(
                f"batch sizes differ: query {query.shape[0]}, key {key.shape[0]}, value {value.shape[0]}; they must be equal"
            )
        if key.shape[1] != value.shape[1]:
            raise ValueError(f"key and value must have the same number of tokens Tk; got {key.shape[1]} and {value.shape[1]}")
        return query, key, value, unbatched

    def _mask(self, attn_mask, key_padding_mask, is_causal, B, Tq, Tk):
        """All masks as one float array broadcastable to (B, H, Tq, Tk), or None."""
        H = self.n_heads
        total = None

        def add(m):
            nonlocal total
            total = m if total is None else total + m

        if attn_mask is not None:
            m = _validate.mask_array(attn_mask, "attn_mask")
            if m.shape == (Tq, Tk):
                add(additive_mask(m))  # (Tq, Tk)
            elif m.shape == (B * H, Tq, Tk):
                add(additive_mask(m).reshape(B, H, Tq, Tk))  # (B, H, Tq, Tk)
            else:
                raise ValueError(
                    f"attn_mask has shape {m.shape}; valid shapes are (Tq, Tk) = ({Tq}, {Tk}) "
                    f"or (B*H, Tq, Tk) = ({B * H}, {Tq}, {Tk})"
                )
        if key_padding_mask is not None:
            m = _validate.mask_array(key_padding_mask, "key_padding_mask")
            expected = (B, Tk)
            if m.ndim == 1 and B == 1:
                m = m[None]  # unbatched: (Tk,) -> (1, Tk)
            if m.shape != expected:
                raise ValueError(f"key_padding_mask has shape {m.shape}; the valid shape is (B, Tk) = {expected} (or (Tk,) for unbatched input)")
            add(additive_mask(m)[:, None, None, :])  # (B, 1, 1, Tk)
        if is_causal:
            add(additive_mask(causal_mask(Tq, Tk)))  # (Tq, Tk)
        return total

    # -- the forward pass ------------------------------------------------------------

    def __call__(self, query, key=None, value=None, *, attn_mask=None, key_padding_mask=None, is_causal=False) -> AttentionResult:
        """Attend from ``query`` to ``key``/``value`` (self-attention when they are omitted).

        Shapes:
            query: (B, Tq, D) or (Tq, D)
            key: (B, Tk, D) or (Tk, D); defaults to query
            value: (B, Tk, D) or (Tk, D); defaults to key
            attn_mask: (Tq, Tk) or (B*H, Tq, Tk); bool True = blocked, float = added
            key_padding_mask: (B, Tk) or (Tk,); bool True = padding (blocked), float = added
            returns: AttentionResult (see its shapes)
        """
        is_causal = _validate.flag(is_causal, "is_causal")
        query, key, value, unbatched = self._inputs(query, key, value)
        B, Tq, _ = query.shape
        Tk = key.shape[1]
        H, Hkv = self.n_heads, self.n_kv_heads
        mask = self._mask(attn_mask, key_padding_mask, is_causal, B, Tq, Tk)

        q = split_heads(project(query, self.w_q, self.b_q), H)  # (B, H, Tq, Dh)
        k = split_heads(project(key, self.w_k, self.b_k), Hkv)  # (B, Hkv, Tk, Dh)
        v = split_heads(project(value, self.w_v, self.b_v), Hkv)  # (B, Hkv, Tk, Dh)
        k_per_head = repeat_kv(k, H // Hkv)  # (B, H, Tk, Dh)
        v_per_head = repeat_kv(v, H // Hkv)  # (B, H, Tk, Dh)

        scores = apply_mask(attention_scores(q, k_per_head), mask)  # (B, H, Tq, Tk)
        weights = softmax(scores, axis=-1)  # (B, H, Tq, Tk)
        head_outputs = mix_values(weights, v_per_head)  # (B, H, Tq, Dh)
        output = output_projection(head_outputs, self.w_o, self.b_o)  # (B, Tq, D)

        result = AttentionResult(output, weights, scores, head_outputs, q, k, v)
        if unbatched:
            # Drop the batch axis again: (1, ...) -> (...), e.g. output (Tq, D), weights (H, Tq, Tk).
            result = AttentionResult(*(a[0] for a in (output, weights, scores, head_outputs, q, k, v)))
        return result

    # -- building from given parameters --------------------------------------------------

    @classmethod
    def from_parameters(
        cls, *, w_q, w_k, w_v, w_o, b_q=None, b_k=None, b_v=None, b_o=None, n_heads: int, n_kv_heads: int | None = None
    ) -> "MultiHeadAttention":
        """A layer that holds the given projection matrices and biases (copied, as float64).

        The one constructor from plain arrays, in the reference layout (``x @ w``): every
        loader hands its arrays to it (``mha_core.torch_convert`` for torch layers, the
        pretrained encoder for its checkpoint). d_model is read from ``w_q``. Give all
        four biases or none.

        Shapes:
            w_q: (D, H*Dh)      w_k, w_v: (D, Hkv*Dh)      w_o: (H*Dh, D)
            b_q: (H*Dh,)        b_k, b_v: (Hkv*Dh,)        b_o: (D,)
            returns: MultiHeadAttention
        """
        w_q = _validate.weight_array(w_q, "w_q", ndim=2)
        D = w_q.shape[0]
        layer = cls.__new__(cls)
        layer.d_model, layer.n_heads, layer.n_kv_heads = _validate.head_counts(D, n_heads, n_kv_heads)
        layer.d_head = D // layer.n_heads
        kv_width = layer.n_kv_heads * layer.d_head
        expected = {"w_q": (D, D), "w_k": (D, kv_width), "w_v": (D, kv_width), "w_o": (D, D)}
        given = {"w_q": w_q, "w_k": w_k, "w_v": w_v, "w_o": w_o}
        for name, shape in expected.items():
            setattr(layer, name, _validate.weight_array(given[name], name, shape=shape))
        biases = {"b_q": b_q, "b_k": b_k, "b_v": b_v, "b_o": b_o}
        missing = [name for name, b in biases.items() if b is None]
        if missing and len(missing) != 4:
            raise ValueError(f"give all four biases or none; {', '.join(missing)} missing")
        layer.bias = not missing
        bias_shapes = {"b_q": (D,), "b_k": (kv_width,), "b_v": (kv_width,), "b_o": (D,)}
        for name, shape in bias_shapes.items():
            setattr(layer, name, None if missing else _validate.weight_array(biases[name], name, shape=shape))
        return layer
