"""mha_core: multi-head attention, tested, for the course.

Shape legend, used in every docstring, comment, notebook and figure:

    B    batch
    T    tokens (Tq on the query side, Tk on the key side)
    D    d_model, the width of a token vector
    H    query heads (n_heads)
    Hkv  key/value heads (n_kv_heads); H for ordinary multi-head attention
    Dh   d_head = D / H

Modules:
    attention   the NumPy reference, one function per step (float64, readable)
    costs       head sizes, parameter counts, score tables, FLOPs, KV cache
    examples    the running sentence and small seeded layers
    torch_attention   TorchMultiHeadAttention, the fast path (imports torch)
    figures, widgets, exercises, quiz   the course's figures, controls, checks, quizzes
    projector   the projector theme: ``mha_core.presenter(True)`` for a room

``import mha_core`` is light: torch, plotly and ipywidgets load only when a feature
that needs them is used.
"""

from .attention import (
    AttentionResult,
    MultiHeadAttention,
    apply_mask,
    attention_scores,
    causal_mask,
    merge_heads,
    mix_values,
    output_projection,
    project,
    scaled_dot_product_attention,
    softmax,
    split_heads,
)
from .examples import RUNNING_SENTENCE, TOKENS

__version__ = "0.1.0"

__all__ = [
    "AttentionResult",
    "MultiHeadAttention",
    "TorchMultiHeadAttention",
    "RUNNING_SENTENCE",
    "TOKENS",
    "apply_mask",
    "attention_scores",
    "causal_mask",
    "merge_heads",
    "mix_values",
    "output_projection",
    "presenter",
    "project",
    "scaled_dot_product_attention",
    "softmax",
    "split_heads",
]


#: Names that load heavy dependencies (torch, model files) on first use: name -> (module, attribute).
#: A new lazily imported feature adds one row here, not another ``if``.
_LAZY = {
    "TorchMultiHeadAttention": (".torch_attention", "TorchMultiHeadAttention"),
    "presenter": (".projector", "presenter"),
}


def __getattr__(name):
    # Import torch (and other heavy dependencies) only when a feature that needs them is asked for.
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        return getattr(importlib.import_module(module, __name__), attribute)
    raise AttributeError(f"module 'mha_core' has no attribute {name!r}")
