"""Exceptions every exercise can meet: PyTorch habits on NumPy arrays, names, typed-in sizes.

Looked for after an exercise's own ``Raised`` rows. A named group of a row's pattern
is a field of its message (``{attr}``, ``{undefined}``).
"""

from __future__ import annotations

from ._tables import Raised

TORCH_TRANSPOSE = (
    "NumPy's transpose takes the new order of every axis, for example x.transpose(0, 2, 1, 3); "
    "PyTorch's x.transpose(1, 2) names only the two axes to swap, and NumPy refuses that. To swap "
    "two axes in NumPy, write np.swapaxes(x, 1, 2)."
)

SHARED = (
    Raised("torch_transpose", r"ValueError: axes don't match array|transpose\(\) takes", TORCH_TRANSPOSE),
    Raised(
        "torch_view",
        r"TypeError: view\(\) takes",
        "x.view(...) is PyTorch's reshape; NumPy's view reinterprets the bytes as another dtype. "
        "Write x.reshape(...).",
    ),
    Raised(
        "torch_size",
        r"TypeError: 'int' object is not callable",
        "x.size(-1) is PyTorch's; in NumPy x.size is the number of entries, not a function. Read "
        "sizes from x.shape, for example x.shape[-1].",
        source=r"\.size\(",
    ),
    Raised(
        "torch_method",
        r"AttributeError: 'numpy.ndarray' object has no attribute '(?P<attr>\w+)'",
        "NumPy arrays have no .{attr}(...): that is PyTorch. In NumPy: x.permute(...) is "
        "x.transpose(...), x.masked_fill(mask, value) is np.where(mask, value, x), x.softmax(-1) is "
        "softmax(x, axis=-1) from mha_core, x.unsqueeze(1) is x[:, None], x.dim() is x.ndim.",
    ),
    Raised(
        "torch_keyword",
        r"TypeError: .*unexpected keyword argument '(?P<keyword>dim|keepdim)'",
        "{keyword}= is PyTorch's spelling; NumPy and mha_core say axis= and keepdims=, for example "
        "softmax(scores, axis=-1).",
    ),
    Raised(
        "undefined_name",
        r"NameError: name '(?P<undefined>\w+)' is not defined",
        "Your function uses {undefined}, which nothing in the cell defines or imports: the exercise "
        "cell starts with its imports (import numpy as np, ...); run it again, and check the spelling.",
    ),
    Raised(
        "hard_coded_shape",
        r"ValueError: cannot reshape",
        "Your function worked on the first shape but not on {label}: read B, T, H and the other sizes "
        "from the array's .shape rather than typing numbers; the check tries several shapes.",
        later=True,
    ),
    Raised(
        "reshape_sizes",
        r"ValueError: cannot reshape",
        "A reshape keeps the number of entries: (B, T, D) and (B, T, H, Dh) hold the same numbers because "
        "D = H * Dh. Check the sizes you pass to reshape against x.shape.",
    ),
)
