"""Argument checks shared by the core modules.

Every check raises ``TypeError`` or ``ValueError`` with a message that names the
parameter, says what was given, and says what would be valid.
"""

from __future__ import annotations

import numbers

import numpy as np


def divisors(n: int) -> list[int]:
    """All positive divisors of ``n``, smallest first."""
    return [d for d in range(1, n + 1) if n % d == 0]


#: How many choices an error message lists before it shortens the list with "...".
FORMAT_LIMIT = 12


def format_choices(values, limit: int = FORMAT_LIMIT) -> str:
    """``1, 2, 4, 8`` (with an ellipsis past ``limit`` values)."""
    values = list(values)
    if len(values) <= limit:
        return ", ".join(str(v) for v in values)
    head = ", ".join(str(v) for v in values[: limit - 2])
    return f"{head}, ..., {values[-2]}, {values[-1]}"


def positive_int(value, name: str) -> int:
    """``value`` as an ``int`` of at least 1, or a clear error naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number of at least 1; got {value!r} ({type(value).__name__})")
    if value < 1:
        raise ValueError(f"{name}={value} is too small; {name} must be at least 1")
    return int(value)


def head_counts(d_model, n_heads, n_kv_heads=None) -> tuple[int, int, int]:
    """Check a head layout and return ``(d_model, n_heads, n_kv_heads)``."""
    d_model = positive_int(d_model, "d_model")
    n_heads = positive_int(n_heads, "n_heads")
    divides(n_heads, d_model)
    if n_kv_heads is None:
        n_kv_heads = n_heads
    n_kv_heads = positive_int(n_kv_heads, "n_kv_heads")
    divides(
        n_kv_heads,
        n_heads,
        name="n_kv_heads",
        of="n_heads",
        choices="key/value head counts",
        note=f" (1 is multi-query attention, {n_heads} is ordinary multi-head attention)",
    )
    return d_model, n_heads, n_kv_heads


def divides(count: int, total: int, *, name: str = "n_heads", of: str = "d_model", choices: str = "head counts", note: str = "") -> None:
    """Raise a ValueError unless ``count`` divides ``total``, listing the valid choices.

    ``n_heads=5 does not divide d_model=64; valid head counts are 1, 2, 4, 8, 16, 32, 64``.
    When the list is too long to show whole, the nearest valid choices are named too,
    so they are never hidden behind the ellipsis.
    """
    if total % count == 0:
        return
    valid = divisors(total)
    message = f"{name}={count} does not divide {of}={total}; valid {choices} are {format_choices(valid)}{note}"
    if len(valid) > FORMAT_LIMIT:
        nearest = [c for c in valid if c < count][-1:] + [c for c in valid if c > count][:1]
        verb = "is" if len(nearest) == 1 else "are"
        message += f"; the nearest to {count} {verb} " + " and ".join(str(c) for c in nearest)
    raise ValueError(message)


def float_array(x, name: str, *, ranks=(2, 3), shape_names: str = "(B, T, D) or (T, D)") -> np.ndarray:
    """``x`` as a float64 array with no NaN or inf, of one of ``ranks``; never a view of ``x``."""
    if isinstance(x, np.ndarray):
        arr = x
    else:
        try:
            arr = np.asarray(x)
        except Exception as exc:  # ragged lists and the like
            raise TypeError(f"{name} must be an array of numbers with shape {shape_names}; got {type(x).__name__}") from exc
    if arr.dtype == bool or not np.issubdtype(arr.dtype, np.number) or np.iscomplexobj(arr):
        raise TypeError(f"{name} must hold real numbers (a float array) with shape {shape_names}; got dtype {arr.dtype}")
    if arr.ndim not in ranks:
        raise ValueError(
            f"{name} has rank {arr.ndim} (shape {arr.shape}); expected shape {shape_names}"
        )
    if 0 in arr.shape:
        raise ValueError(f"{name} is empty (shape {arr.shape}); it needs at least one token and one feature")
    arr = np.array(arr, dtype=np.float64)  # a copy: the reference never changes its inputs
    if not np.all(np.isfinite(arr)):
        bad = "NaN" if np.isnan(arr).any() else "inf"
        raise ValueError(f"{name} contains {bad}; every entry must be a finite number")
    return arr


def mask_array(mask, name: str) -> np.ndarray:
    """A mask as an array: bool (True = blocked) or float (added to the scores)."""
    arr = np.asarray(mask)
    if arr.dtype != bool and not np.issubdtype(arr.dtype, np.floating):
        raise TypeError(
            f"{name} has dtype {arr.dtype}; use bool (True = blocked) "
            f"or float (added to the scores, -inf = blocked)"
        )
    if arr.dtype != bool and (np.isnan(arr).any() or np.isposinf(arr).any()):
        bad = "NaN" if np.isnan(arr).any() else "+inf"
        raise ValueError(f"{name} contains {bad}; a float mask holds finite numbers or -inf (blocked)")
    return arr


def weight_array(w, name: str, *, ndim: int | None = None, shape: tuple | None = None) -> np.ndarray:
    """A learned weight as a fresh float64 array with finite entries and the expected shape."""
    if isinstance(w, (str, bytes)) or w is None:
        raise TypeError(f"{name} must be an array of numbers; got {type(w).__name__}")
    try:
        a = np.array(w, dtype=np.float64)  # a copy: the layer never shares the caller's array
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be an array of real numbers; got {type(w).__name__} ({exc})") from None
    if ndim is not None and a.ndim != ndim:
        raise ValueError(f"{name} must have {ndim} axes; got shape {a.shape}")
    if shape is not None and a.shape != tuple(shape):
        raise ValueError(f"{name} has shape {a.shape}; this layer needs {tuple(shape)}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name} holds NaN or infinite values; every weight must be finite")
    return a
