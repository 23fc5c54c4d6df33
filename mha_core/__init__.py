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
    torch_convert     the one place that converts between torch layers and the NumPy reference
    blocks      layer norm and GELU, the rest of a transformer block
    pretrained  all-MiniLM-L6-v2 in NumPy on this package's attention (load_minilm)
    figures     the course's figures: pure builders, data in, a plotly figure out
    models      torch toy models: tasks, training, head roles (imports torch; loaded lazily)
    projector   the projector theme: ``mha_core.presenter(True)`` for a room

The classroom around it (controls, checks, quizzes, the instructor's view) is the package
``mha_classroom``; this package never imports it.

``import mha_core`` is light: torch, plotly and ipywidgets load only when a feature
that needs them is used.
"""

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
    "load_minilm",
    "merge_heads",
    "mix_values",
    "output_projection",
    "presenter",
    "project",
    "scaled_dot_product_attention",
    "softmax",
    "split_heads",
]


#: Every public name, loaded on first use: name -> (module, attribute). Even NumPy waits until
#: a name is asked for, so ``python -m mha_classroom.quiz`` can start (and be interrupted) without it,
#: and torch, plotly or the model files load only with the feature that needs them.
#: A new public name adds one row here, not another ``if``.
_LAZY = {
    **{name: (".attention", name) for name in (
        "AttentionResult", "MultiHeadAttention", "apply_mask", "attention_scores", "causal_mask", "merge_heads",
        "mix_values", "output_projection", "project", "scaled_dot_product_attention", "softmax", "split_heads")},
    "RUNNING_SENTENCE": (".examples", "RUNNING_SENTENCE"),
    "TOKENS": (".examples", "TOKENS"),
    "TorchMultiHeadAttention": (".torch_attention", "TorchMultiHeadAttention"),
    "ToyModel": (".models", "ToyModel"),
    "TrainConfig": (".models", "TrainConfig"),
    "load_minilm": (".pretrained", "load_minilm"),
    "presenter": (".projector", "presenter"),
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        module, attribute = _LAZY[name]
        value = getattr(importlib.import_module(module, __name__), attribute)
        globals()[name] = value  # later look-ups skip this function
        return value
    raise AttributeError(f"module 'mha_core' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
