"""Read the weights of a torch attention layer into NumPy, in ``mha_core``'s layout.

Two kinds of layer are read: ``torch.nn.MultiheadAttention`` and
``mha_core.TorchMultiHeadAttention``. ``torch.nn.Linear`` computes ``x @ W.T + b``; the
NumPy reference computes ``x @ w + b``, so every weight matrix is transposed on the way in.
"""

from __future__ import annotations

import numpy as np


def _np(t):
    return None if t is None else t.detach().to("cpu").double().numpy().copy()


def _weights(d_model, n_heads, n_kv_heads, w_qkv, b_qkv, w_out, b_out) -> dict:
    """The dict both readers return: the three input projections (already in reference
    layout) and the output projection, from ``w_out`` (D, D) and ``b_out`` (D,) or None
    in ``torch.nn.Linear``'s layout."""
    w_q, w_k, w_v = (np.ascontiguousarray(w) for w in w_qkv)
    b_q, b_k, b_v = b_qkv
    return {
        "d_model": d_model,
        "n_heads": n_heads,
        "n_kv_heads": n_kv_heads,
        "w_q": w_q,
        "w_k": w_k,
        "w_v": w_v,
        "w_o": _np(w_out).T.copy(),  # (D, D) in reference layout
        "b_q": b_q,
        "b_k": b_k,
        "b_v": b_v,
        "b_o": _np(b_out),
    }


def check_torch_module(module) -> None:
    """Raise unless ``module`` is a ``torch.nn.MultiheadAttention`` that mha_core can model."""
    import torch

    if not isinstance(module, torch.nn.MultiheadAttention):
        raise TypeError(
            f"module must be a torch.nn.MultiheadAttention or an mha_core.TorchMultiHeadAttention; "
            f"got {type(module).__name__}"
        )
    if module.bias_k is not None or module.add_zero_attn:
        raise ValueError("module uses add_bias_kv or add_zero_attn, which mha_core does not model; build it without them")
    if module.kdim != module.embed_dim or module.vdim != module.embed_dim:
        raise ValueError(
            f"module has kdim={module.kdim}, vdim={module.vdim}; mha_core needs kdim = vdim = embed_dim = {module.embed_dim}"
        )


def _from_fused(module) -> dict:
    """Weights of an ``mha_core.TorchMultiHeadAttention`` (one fused QKV projection)."""
    D, Hkv, Dh = module.d_model, module.n_kv_heads, module.d_head
    kv_width = Hkv * Dh
    w = _np(module.w_qkv)  # (D + 2*Hkv*Dh, D), rows: q, k, v
    b = _np(module.b_qkv)  # (D + 2*Hkv*Dh,) or None
    edges = (0, D, D + kv_width, D + 2 * kv_width)
    w_q, w_k, w_v = (w[lo:hi].T for lo, hi in zip(edges, edges[1:]))  # (D, D), (D, Hkv*Dh), (D, Hkv*Dh)
    b_q, b_k, b_v = (None, None, None) if b is None else (b[lo:hi] for lo, hi in zip(edges, edges[1:]))
    return _weights(D, module.n_heads, Hkv, (w_q, w_k, w_v), (b_q, b_k, b_v), module.w_out, module.b_out)


def numpy_weights_from_torch(module) -> dict:
    """A dict with d_model, n_heads, n_kv_heads and w_q ... b_o (float64, reference layout).

    ``module`` is a ``torch.nn.MultiheadAttention`` or an ``mha_core.TorchMultiHeadAttention``.
    """
    import torch

    if isinstance(module, torch.nn.Module) and not isinstance(module, torch.nn.MultiheadAttention):
        from .torch_attention import TorchMultiHeadAttention

        if isinstance(module, TorchMultiHeadAttention):
            return _from_fused(module)
    check_torch_module(module)
    D = module.embed_dim
    if module.in_proj_weight is not None:
        w = _np(module.in_proj_weight)  # (3D, D), rows: q, k, v
        w_q, w_k, w_v = (w[i * D : (i + 1) * D].T for i in range(3))  # each (D, D)
    else:
        w_q, w_k, w_v = (_np(p).T for p in (module.q_proj_weight, module.k_proj_weight, module.v_proj_weight))  # each (D, D)
    b = _np(module.in_proj_bias)
    b_q, b_k, b_v = (None, None, None) if b is None else (b[:D], b[D : 2 * D], b[2 * D :])
    return _weights(D, module.num_heads, module.num_heads, (w_q, w_k, w_v), (b_q, b_k, b_v),
                    module.out_proj.weight, module.out_proj.bias)
