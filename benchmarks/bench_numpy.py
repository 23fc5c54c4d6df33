"""The NumPy reference (``mha_core.MultiHeadAttention``, float64) at the small shapes.

Runs in its own process, without torch: in a process that has run torch work,
torch's spinning worker threads slow NumPy down several times (measured on two cores). Its
ratio to ``TorchMultiHeadAttention`` is therefore across processes: both medians are
reported, and the ratio is the ratio of the two medians.
"""

from __future__ import annotations

import sys

from . import _format as fmt
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


# -- the report -------------------------------------------------------------------------------------

TITLE = "The NumPy reference at the small shapes"
NUMBER = None


def against_torch(result: dict | None, attention: dict | None) -> dict:
    """Per shape, this section's NumPy median against the attention section's TorchMHA median (two processes)."""
    cross = {}
    if not result or not attention:
        return cross
    for shape_name, entry in result["shapes"].items():
        torch_entry = attention.get("shapes", {}).get(shape_name)
        if torch_entry and "TorchMHA" in torch_entry["seconds"]:
            numpy_s = entry["seconds"]["median"]
            torch_s = torch_entry["seconds"]["TorchMHA"]["median"]
            cross[shape_name] = {"numpy_s": numpy_s, "torch_s": torch_s, "ratio": numpy_s / torch_s,
                                 "note": "across processes: the ratio of two medians measured in different processes"}
    return cross


def markdown(result: dict, report: dict) -> list[str]:
    lines = ["Run in its own process without torch (torch's worker threads slow NumPy down in a process that has run"
             " torch work). Its own seeded weights, same shapes.", "",
             "| shape | NumPy reference median | TorchMHA median (other process) | NumPy / TorchMHA |",
             "| --- | ---: | ---: | ---: |"]
    cross = report.get("numpy_vs_torch", {})
    for name, entry in result["shapes"].items():
        c = cross.get(name, {})
        lines.append(f"| {name}: {entry['describe']} | {fmt.ms(entry['seconds']['median'])} | {fmt.ms(c.get('torch_s'))} | {fmt.x(c.get('ratio'))} |")
    lines += ["", "The ratio is across processes: each median was measured in its own process, not in shared rounds."]
    return lines
