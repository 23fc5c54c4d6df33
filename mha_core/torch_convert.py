"""Conversion between torch layers and the NumPy reference: the one place that does it.

The NumPy reference (``mha_core.attention``) imports nothing of torch. Whatever reads a
torch module lives here, on the torch side, and hands plain float64 arrays to the
reference's one constructor, ``MultiHeadAttention.from_parameters``. The other way,
it lays a reference layer's arrays out as ``TorchMultiHeadAttention`` stores them.

Two layouts meet here. The NumPy reference computes ``x @ w + b``; ``torch.nn.Linear``
(and so ``torch.nn.MultiheadAttention`` and ``TorchMultiHeadAttention``) computes
``x @ W.T + b``, so every matrix is transposed on the way across:

    reference:  w_q (D, H*Dh)   w_k, w_v (D, Hkv*Dh)   w_o (H*Dh, D)
    torch:      w_qkv (D + 2*Hkv*Dh, D), rows W_Q^T, W_K^T, W_V^T;  w_out (D, D) = W_O^T

Imports go one way only: this module imports the NumPy reference, and
``torch_attention`` imports this module; neither of them is imported back.

This module imports torch; ``import mha_core`` does not import it.
"""

from __future__ import annotations

import numpy as np
import torch

from .attention import MultiHeadAttention

#: The reference's parameters, in the order ``from_parameters`` takes them.
PARAMETER_NAMES = ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o")


def _np(t: torch.Tensor | None) -> np.ndarray | None:
    """A tensor as a float64 NumPy copy (every float32 or float16 value is kept exactly)."""
    return None if t is None else t.detach().to("cpu").double().numpy().copy()


def _split_rows(a: np.ndarray | None, widths) -> list:
    """Cut ``a`` along its first axis into pieces of ``widths`` rows (one None a piece for None).

    Shapes:
        a: (sum(widths), ...) or None
        returns: one piece per width, (width, ...)
    """
    if a is None:
        return [None] * len(widths)
    edges = np.cumsum([0, *widths])
    return [a[lo:hi] for lo, hi in zip(edges, edges[1:])]


# --- torch.nn.MultiheadAttention -> NumPy ---------------------------------------------------


def check_torch_module(module) -> None:
    """Raise unless ``module`` is a ``torch.nn.MultiheadAttention`` that mha_core can model."""
    if not isinstance(module, torch.nn.MultiheadAttention):
        raise TypeError(
            f"module must be a torch.nn.MultiheadAttention; got {type(module).__name__} "
            f"(an mha_core.TorchMultiHeadAttention converts itself: layer.to_numpy())"
        )
    if module.bias_k is not None or module.add_zero_attn:
        raise ValueError("module uses add_bias_kv or add_zero_attn, which mha_core does not model; build it without them")
    if module.kdim != module.embed_dim or module.vdim != module.embed_dim:
        raise ValueError(
            f"module has kdim={module.kdim}, vdim={module.vdim}; mha_core needs kdim = vdim = embed_dim = {module.embed_dim}"
        )


def numpy_from_torch(module) -> MultiHeadAttention:
    """The NumPy reference layer holding the parameters of a ``torch.nn.MultiheadAttention``.

    Either ``batch_first`` works. The result gives the same output, and the same per-head
    weights as the module called with ``need_weights=True, average_attn_weights=False``.
    """
    check_torch_module(module)
    D = module.embed_dim
    # kdim = vdim = embed_dim (checked), so torch keeps W_Q, W_K, W_V stacked in in_proj_weight.
    w_q, w_k, w_v = (w.T for w in _split_rows(_np(module.in_proj_weight), (D, D, D)))  # (3D, D) -> each (D, D)
    b_q, b_k, b_v = _split_rows(_np(module.in_proj_bias), (D, D, D))  # each (D,) or None
    return MultiHeadAttention.from_parameters(
        w_q=w_q, w_k=w_k, w_v=w_v, w_o=_np(module.out_proj.weight).T,  # w_o: (D, D)
        b_q=b_q, b_k=b_k, b_v=b_v, b_o=_np(module.out_proj.bias), n_heads=module.num_heads,
    )


# --- TorchMultiHeadAttention <-> NumPy ------------------------------------------------------------


def numpy_from_fused(layer) -> MultiHeadAttention:
    """The NumPy reference layer holding the parameters of an ``mha_core.TorchMultiHeadAttention``.

    ``layer`` is read through its attributes (``w_qkv``, ``b_qkv``, ``w_out``, ``b_out``
    and the head counts), so this module need not import ``torch_attention``.
    """
    widths = [n * layer.d_head for n in (layer.n_heads, layer.n_kv_heads, layer.n_kv_heads)]
    w_q, w_k, w_v = (w.T for w in _split_rows(_np(layer.w_qkv), widths))  # (D, D), (D, Hkv*Dh), (D, Hkv*Dh)
    b_q, b_k, b_v = _split_rows(_np(layer.b_qkv), widths)  # (D,), (Hkv*Dh,), (Hkv*Dh,) or None
    return MultiHeadAttention.from_parameters(
        w_q=w_q, w_k=w_k, w_v=w_v, w_o=_np(layer.w_out).T,  # w_o: (D, D)
        b_q=b_q, b_k=b_k, b_v=b_v, b_o=_np(layer.b_out), n_heads=layer.n_heads, n_kv_heads=layer.n_kv_heads,
    )


def fused_from_numpy(layer: MultiHeadAttention) -> dict[str, np.ndarray | None]:
    """A NumPy layer's parameters laid out as ``TorchMultiHeadAttention`` stores them (float64).

    Shapes:
        returns: w_qkv (D + 2*Hkv*Dh, D), b_qkv (D + 2*Hkv*Dh,) or None,
                 w_out (D, D), b_out (D,) or None
    """
    if not isinstance(layer, MultiHeadAttention):
        raise TypeError(f"layer must be an mha_core.MultiHeadAttention; got {type(layer).__name__}")
    # Checked again by the one constructor: a learner may have reassigned an array since.
    layer = MultiHeadAttention.from_parameters(**{name: getattr(layer, name) for name in PARAMETER_NAMES},
                                               n_heads=layer.n_heads, n_kv_heads=layer.n_kv_heads)
    return {
        "w_qkv": np.concatenate([layer.w_q.T, layer.w_k.T, layer.w_v.T]),  # (D + 2*Hkv*Dh, D)
        "b_qkv": None if not layer.bias else np.concatenate([layer.b_q, layer.b_k, layer.b_v]),  # (D + 2*Hkv*Dh,)
        "w_out": layer.w_o.T.copy(),  # (D, D)
        "b_out": None if not layer.bias else layer.b_o.copy(),  # (D,)
    }
