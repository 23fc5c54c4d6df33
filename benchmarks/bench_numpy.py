"""The NumPy reference (``mha_core.MultiHeadAttention``, float64) at the small shapes.

Runs in its own process, without torch: in a process that has run torch work,
torch's spinning worker threads slow NumPy down several times (measured on two cores). Its
ratio to ``TorchMultiHeadAttention`` is therefore across processes: both medians are
reported, and the ratio is the ratio of the two medians.
"""

from __future__ import annotations

import sys

from ._timing import calibrate_inner, interleaved, summary
from .shapes import CPU_SHAPES, SMALL_SHAPES, describe


def run(quick: bool, log=print, **_) -> dict:
    import numpy as np

    from mha_core import MultiHeadAttention

    out = {"dtype": "float64", "shapes": {}}
    for name in SMALL_SHAPES:
        shape = CPU_SHAPES[name]
        log(f"numpy {name}: {describe(shape)}")
        layer = MultiHeadAttention(shape["d_model"], shape["n_heads"], seed=0)
        x = np.random.default_rng(1).standard_normal((shape["batch"], shape["tokens"], shape["d_model"]))  # (B, T, D)
        causal = bool(shape["causal"])
        contenders = {"NumPy reference": lambda: layer(x, is_causal=causal)}
        inner = {k: calibrate_inner(fn, 0.002) for k, fn in contenders.items()}
        times = interleaved(contenders, rounds=20 if quick else 300, warmup=3, inner=inner,
                            budget_s=None if quick else 15)
        out["shapes"][name] = {
            "shape": shape,
            "describe": describe(shape),
            "rounds": len(times["NumPy reference"]),
            "calls_per_sample": inner["NumPy reference"],
            "seconds": summary(times["NumPy reference"]),
        }
    out["torch_imported"] = "torch" in sys.modules
    return out
