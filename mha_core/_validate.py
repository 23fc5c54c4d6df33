"""Argument checks shared by the core modules.

Every check raises ``TypeError`` or ``ValueError`` with a message that names the
parameter, says what was given, and says what would be valid.
"""

from __future__ import annotations

import math
import numbers

import numpy as np


def divisors(n: int) -> list[int]:
    """All positive divisors of ``n``, smallest first, in O(sqrt(n)) steps.

    Divisors come in pairs d * (n // d) = n with d <= sqrt(n), so the search stops there.
    """
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    large = [n // d for d in reversed(small) if d * d != n]
    return small + large


#: The most memory one layer's weights, or one KV cache, may ask for: 8 GiB. Larger sizes
#: are refused before anything is allocated: a learner's machine (8-32 GB of memory) could
#: not hold them, and a typo such as d_model=10**6 (4 TB per weight matrix in float64)
#: would otherwise stall the machine or end in a bare MemoryError. Real layers fit easily:
#: GPT-3's d_model=12288 needs 4.8 GB in float64, Llama-2-70B's 8192 needs 2.1 GB.
MAX_BYTES = 8 * 2**30


def _human(n_bytes: int) -> str:
    """``8.0 TB``: bytes in decimal units, for messages."""
    for unit, size in (("PB", 10**15), ("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3)):
        if n_bytes >= size:
            return f"{n_bytes / size:.1f} {unit}"
    return f"{n_bytes} bytes"


def fits_in_memory(n_bytes: int, what: str) -> None:
    """Raise a ValueError naming ``what`` (e.g. ``d_model=1000000``) when ``n_bytes`` > ``MAX_BYTES``."""
    if n_bytes > MAX_BYTES:
        raise ValueError(
            f"{what} would need {n_bytes:,} bytes ({_human(n_bytes)}); this package refuses more than "
            f"{MAX_BYTES:,} bytes (8 GiB) for one layer or one cache, which no course machine could hold"
        )


def layer_fits(d_model: int, n_heads: int, n_kv_heads: int, bias: bool, bytes_per_value: int) -> None:
    """Raise unless an attention layer's weights fit in ``MAX_BYTES`` (checked before allocating)."""
    kv_width = d_model // n_heads * n_kv_heads
    numbers_ = 2 * d_model * d_model + 2 * d_model * kv_width + (2 * d_model + 2 * kv_width if bias else 0)
    fits_in_memory(
        numbers_ * bytes_per_value,
        f"d_model={d_model} (weight matrices of about d_model x d_model = {d_model * d_model:,} numbers each)",
    )


def flag(value, name: str) -> bool:
    """``value`` as a bool; anything but True or False (e.g. the string 'no') is a TypeError."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False; got {value!r} ({type(value).__name__})")


def rng(seed, name: str = "seed") -> np.random.Generator:
    """``numpy.random.default_rng(seed)``, with errors that name ``seed``."""
    if isinstance(seed, (bool, np.bool_, str, bytes, float)):
        raise TypeError(f"{name} must be a whole number of at least 0, a numpy Generator, or None; got {seed!r} ({type(seed).__name__})")
    try:
        return np.random.default_rng(seed)
    except (TypeError, ValueError) as exc:
        raise type(exc)(
            f"{name} must be a whole number of at least 0, a numpy Generator, or None; got {seed!r} ({type(seed).__name__}): {exc}"
        ) from None


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


def float_array(x, name: str, *, ranks=(2, 3), shape_names: str = "(B, T, D) or (T, D)", copy: bool = True) -> np.ndarray:
    """``x`` as a float64 array with no NaN or inf, of one of ``ranks``.

    A fresh copy unless ``copy=False`` (then a float64 ``x`` is returned as it is).
    """
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
    # A copy by default: the reference never changes its inputs.
    arr = np.array(arr, dtype=np.float64) if copy else np.asarray(arr, dtype=np.float64)
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
