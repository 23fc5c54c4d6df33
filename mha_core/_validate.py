"""Argument checks shared by the core modules.

Every check raises ``TypeError`` or ``ValueError`` with a message that names the
parameter, says what was given, and says what would be valid.
"""

from __future__ import annotations

import math
import numbers
from pathlib import Path

import numpy as np


#: The largest number whose divisors are listed (a search up to its square root, 3.2e7,
#: takes well under a second). No model has a dimension anywhere near it.
MAX_DIVISOR_SEARCH = 10**15


def divisors(n: int, name: str = "n") -> list[int]:
    """All positive divisors of ``n``, smallest first, in O(sqrt(n)) steps.

    Divisors come in pairs d * (n // d) = n with d <= sqrt(n), so only 1 ... sqrt(n) is
    searched, in vectorised blocks. A number above ``MAX_DIVISOR_SEARCH`` is refused
    (a ValueError naming ``name``) instead of searched.
    """
    n = positive_int(n, name)
    if n > MAX_DIVISOR_SEARCH:
        raise ValueError(
            f"{name}={n} is too large to list its divisors (at most {MAX_DIVISOR_SEARCH:.0e}); "
            f"no model has a dimension near that size"
        )
    root = math.isqrt(n)
    small: list[int] = []
    block = 1 << 20
    for start in range(1, root + 1, block):
        candidates = np.arange(start, min(start + block, root + 1), dtype=np.int64)
        small.extend(int(d) for d in candidates[n % candidates == 0])
    large = [n // d for d in reversed(small) if d * d != n]
    return small + large


def nearest(valid: list[int], count: int) -> list[int]:
    """The largest of ``valid`` (sorted) below ``count`` and the smallest above it, where they exist."""
    return [c for c in valid if c < count][-1:] + [c for c in valid if c > count][:1]


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


def fits_in_memory(n_bytes: int, what: str, *, in_this_process: bool = True) -> None:
    """Raise a ValueError naming ``what`` (e.g. ``d_model=1000000``) when ``n_bytes`` > ``MAX_BYTES``,
    or when this process cannot have that much memory (``fits_this_process``).

    ``in_this_process=False`` for memory that is not the process's own (a GPU's).
    """
    if n_bytes > MAX_BYTES:
        raise ValueError(
            f"{what} would need {n_bytes:,} bytes ({_human(n_bytes)}); this package refuses more than "
            f"{MAX_BYTES:,} bytes (8 GiB) for one layer or one cache, which no course machine could hold"
        )
    if in_this_process:
        fits_this_process(n_bytes, what)


#: Where the limits on this process's memory are read (tests point these at their own files).
CGROUP_ROOT = Path("/sys/fs/cgroup")
PROC_SELF = Path("/proc/self")
MEMINFO = Path("/proc/meminfo")


def _read_int(path: Path) -> int | None:
    """The first number in a one-line file (``max`` and missing files give None)."""
    try:
        text = path.read_text().split()[0]
    except (OSError, IndexError):
        return None
    return int(text) if text.isdigit() else None


def _stat_field(path: Path, key: str) -> int:
    """One ``key value`` line of a cgroup ``memory.stat`` file (0 when absent)."""
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except OSError:
        pass
    return 0


def _cgroup_headroom() -> int | None:
    """Bytes this process's memory cgroup can still give: its limit less what it holds now.

    Reclaimable page cache (inactive files) is not counted as held: the kernel drops it
    before it refuses memory. cgroup v2 (``memory.max``) first, then v1
    (``memory.limit_in_bytes``); the process's own cgroup from ``/proc/self/cgroup``,
    then the root of the mount. None when no limit is set.
    """
    try:
        lines = (PROC_SELF / "cgroup").read_text().splitlines()
    except OSError:
        lines = []
    v2 = [line.split(":", 2)[2] for line in lines if line.startswith("0::")]
    v1 = [line.split(":", 2)[2] for line in lines if line.split(":")[1:2] == ["memory"]]
    candidates = [(CGROUP_ROOT / rel.lstrip("/"), "memory.max", "memory.current", "inactive_file") for rel in v2]
    candidates += [(CGROUP_ROOT / "memory" / rel.lstrip("/"), "memory.limit_in_bytes", "memory.usage_in_bytes",
                    "total_inactive_file") for rel in v1]
    candidates += [(CGROUP_ROOT, "memory.max", "memory.current", "inactive_file"),
                   (CGROUP_ROOT / "memory", "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")]
    for folder, limit_file, usage_file, inactive in candidates:
        limit = _read_int(folder / limit_file)
        if limit is None or limit >= 2**60:  # "max", or v1's "no limit" (about 2**63)
            continue
        used = (_read_int(folder / usage_file) or 0) - _stat_field(folder / "memory.stat", inactive)
        return max(limit - max(used, 0), 0)
    return None


def _address_space_headroom() -> int | None:
    """Bytes of address space left under ``RLIMIT_AS`` (``ulimit -v``), or None when unlimited (or on Windows)."""
    try:
        import resource
    except ImportError:  # Windows has no rlimits
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft == resource.RLIM_INFINITY:
        return None
    in_use = _stat_field_kib(PROC_SELF / "status", "VmSize:")
    return max(soft - in_use, 0)


def _stat_field_kib(path: Path, key: str) -> int:
    """A ``Key:  123 kB`` line of a /proc file, in bytes (0 when absent)."""
    try:
        for line in path.read_text().splitlines():
            if line.startswith(key):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def memory_limit() -> int | None:
    """The bytes this process can still allocate, as far as the system says: the smallest of
    its cgroup's headroom, its address-space headroom (``RLIMIT_AS``) and ``MemAvailable``.

    None when none of the three can be read (then nothing is refused for memory).
    On a class server a learner's cgroup is far smaller than the machine, so the
    machine's size alone would say yes to what the learner's kernel cannot hold.
    """
    available = _stat_field_kib(MEMINFO, "MemAvailable:") or None
    limits = [n for n in (_cgroup_headroom(), _address_space_headroom(), available) if n is not None]
    return min(limits) if limits else None


#: Requests below this many bytes (16 MiB) are not checked against ``memory_limit()``:
#: reading the limits takes 0.1-0.5 ms (too long for a control's callback), and a
#: process that cannot find 16 MiB more fails at its next step whatever we do.
UNCHECKED_BYTES = 2**24


def fits_this_process(n_bytes: int, what: str, *, hint: str = "ask for less") -> None:
    """Raise a ValueError naming ``what`` when ``n_bytes`` is more than ``memory_limit()``, before allocating.

    ``hint`` ends the message: what to change (``make batch_size or d_model smaller``).
    """
    if n_bytes < UNCHECKED_BYTES:
        return
    limit = memory_limit()
    if limit is not None and n_bytes > limit:
        raise ValueError(
            f"{what} would need {n_bytes:,} bytes ({_human(n_bytes)}), but this process can have only about "
            f"{limit:,} bytes ({_human(limit)}) more (the smallest of its memory cgroup's room, its address-space "
            f"limit and the machine's available memory); {hint}"
        )


def layer_fits(d_model: int, n_heads: int, n_kv_heads: int, bias: bool, bytes_per_value: int, *,
               in_this_process: bool = True) -> None:
    """Raise unless an attention layer's weights fit in ``MAX_BYTES`` and in this process (checked before allocating)."""
    kv_width = d_model // n_heads * n_kv_heads
    numbers_ = 2 * d_model * d_model + 2 * d_model * kv_width + (2 * d_model + 2 * kv_width if bias else 0)
    fits_in_memory(
        numbers_ * bytes_per_value,
        f"d_model={d_model} (weight matrices of about d_model x d_model = {d_model * d_model:,} numbers each)",
        in_this_process=in_this_process,
    )


def flag(value, name: str) -> bool:
    """``value`` as a bool; anything but True or False (e.g. the string 'no') is a TypeError."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be True or False; got {value!r} ({type(value).__name__})")


def rng(seed, name: str = "seed") -> np.random.Generator:
    """``numpy.random.default_rng(seed)`` for a seed (``seed_int``), a numpy Generator or None.

    The same seeds as the torch layer and the toy models take, with the same message.
    """
    if seed is None or isinstance(seed, np.random.Generator):
        return np.random.default_rng(seed)
    return np.random.default_rng(seed_int(seed, name, also=", a numpy Generator, or None"))


#: How many choices an error message lists before it shortens the list with "...".
FORMAT_LIMIT = 12


def format_choices(values, limit: int = FORMAT_LIMIT) -> str:
    """``1, 2, 4, 8`` (with an ellipsis past ``limit`` values)."""
    values = list(values)
    if len(values) <= limit:
        return ", ".join(str(v) for v in values)
    head = ", ".join(str(v) for v in values[: limit - 2])
    return f"{head}, ..., {values[-2]}, {values[-1]}"


def whole_number(value, name: str, low: int = 1, high: int | None = None, *, meaning: str = "") -> int:
    """``value`` as a plain ``int`` of at least ``low`` (and at most ``high``), or a clear error naming ``name``.

    The one check for whole numbers: NumPy integers are converted (so a size never wraps
    around); bools, floats (even 2.0) and strings are a TypeError.

    ``n_heads=0 is too small; n_heads must be at least 1``,
    ``seed=-2 is negative; seed must be a whole number from 0 to 4,294,967,295 (2**32 - 1)``
    """
    bound = f"of at least {low:,}" if high is None else f"from {low:,} to {high:,}"
    valid = f"{name} must be a whole number {bound}{meaning}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{valid}; got {value!r} ({type(value).__name__})")
    if value < low:
        word = "negative" if value < 0 and low == 0 else "too small"
        raise ValueError(f"{name}={value} is {word}; " + (f"{name} must be at least {low:,}" if high is None else valid))
    if high is not None and value > high:
        raise ValueError(f"{name}={value} is too large; {valid}")
    return int(value)


def positive_int(value, name: str) -> int:
    """``value`` as an ``int`` of at least 1, or a clear error naming ``name``."""
    return whole_number(value, name, 1)


def head_counts(d_model, n_heads, n_kv_heads=None) -> tuple[int, int, int]:
    """Check a head layout and return ``(d_model, n_heads, n_kv_heads)``."""
    d_model = positive_int(d_model, "d_model")
    n_heads = positive_int(n_heads, "n_heads")
    divides(n_heads, d_model)
    if n_kv_heads is None:
        n_kv_heads = n_heads
    n_kv_heads = kv_head_count(n_kv_heads, n_heads)
    return d_model, n_heads, n_kv_heads


def kv_head_count(n_kv_heads, n_heads: int, *, of: str = "n_heads") -> int:
    """``n_kv_heads`` as an ``int`` that divides ``n_heads``, or a clear error listing the valid counts.

    ``of`` names the query head count in the message (``"Llama-2-7B's n_heads"``).
    """
    n_kv_heads = positive_int(n_kv_heads, "n_kv_heads")
    divides(
        n_kv_heads,
        n_heads,
        name="n_kv_heads",
        of=of,
        choices="key/value head counts",
        note=f" (1 is multi-query attention, {n_heads} is ordinary multi-head attention)",
    )
    return n_kv_heads


def divides(count: int, total: int, *, name: str = "n_heads", of: str = "d_model", choices: str = "head counts", note: str = "") -> None:
    """Raise a ValueError unless ``count`` divides ``total``, listing the valid choices.

    ``n_heads=5 does not divide d_model=64; valid head counts are 1, 2, 4, 8, 16, 32, 64``.
    When the list is too long to show whole, the nearest valid choices are named too,
    so they are never hidden behind the ellipsis. A ``total`` too large to search
    (``MAX_DIVISOR_SEARCH``) is refused at once, without the list.
    """
    if total % count == 0:
        return
    message = f"{name}={count} does not divide {of}={total}"
    try:
        valid = divisors(total, of)
    except ValueError:
        raise ValueError(f"{message}; {of} is too large to list every valid choice{note}") from None
    message += f"; valid {choices} are {format_choices(valid)}{note}"
    if len(valid) > FORMAT_LIMIT:
        closest = nearest(valid, count)
        verb = "is" if len(closest) == 1 else "are"
        message += f"; the nearest to {count} {verb} " + " and ".join(str(c) for c in closest)
    raise ValueError(message)


def choice(value, name: str, choices, *, kind: type | tuple = ()):
    """``value`` if it is one of ``choices``; else a ValueError (a TypeError when it is not a ``kind``)
    naming ``name``, what was given and the valid choices.

    ``n_tokens=1000 is not a valid choice; valid values are 128, 256, 512``
    """
    choices = list(choices)
    listed = ", ".join(repr(c) if isinstance(c, str) else str(c) for c in choices)
    if kind and (not isinstance(value, kind) or isinstance(value, (bool, np.bool_))):
        raise TypeError(f"{name} must be one of {listed}; got {value!r} ({type(value).__name__})")
    try:
        ok = value in choices
    except TypeError:  # an unhashable or incomparable value
        ok = False
    if not ok:
        raise ValueError(f"{name}={value!r} is not a valid choice; valid values are {listed}")
    return value


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
        raise not_finite(name, bool(np.isnan(arr).any()))
    return arr


def not_finite(name: str, has_nan: bool, why: str = "") -> ValueError:
    """The error for an input holding NaN or inf (raise it): ``x contains NaN; every entry must be a finite number``."""
    return ValueError(f"{name} contains {'NaN' if has_nan else 'inf'}; every entry must be a finite number{why}")


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


#: Seeds run from 0 to 2**32 - 1: the range NumPy's legacy seeding and torch's generators
#: both take, and plenty for a course (torch overflows past 2**64).
MAX_SEED = 2**32 - 1


def int_in_range(value, name: str, low: int, high: int, *, meaning: str = "") -> int:
    """``value`` as a plain ``int`` from ``low`` to ``high`` (NumPy integers are converted), or a clear error.

    ``seed=-2 is negative; seed must be a whole number from 0 to 4,294,967,295 (2**32 - 1)``
    """
    return whole_number(value, name, low, high, meaning=meaning)


def seed_int(seed, name: str = "seed", *, also: str = "") -> int:
    """``seed`` as a plain ``int`` in 0 .. ``MAX_SEED``, or a clear error naming ``name``.

    ``also`` names what else the caller takes (``", a numpy Generator, or None"``).
    """
    return int_in_range(seed, name, 0, MAX_SEED, meaning=" (2**32 - 1)" + also)


def real_number(value, name: str, valid: str, fits) -> float:
    """``value`` as a ``float`` for which ``fits(value)`` holds, or a clear error; ``valid`` says
    what would be valid (``"a number above 0 and at most 1, such as 0.99"``).

    ``target_accuracy=1.5 is out of range; target_accuracy must be a number above 0 and at most 1, such as 0.99``
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be {valid}; got {value!r} ({type(value).__name__})")
    if not fits(value):
        raise ValueError(f"{name}={value!r} is out of range; {name} must be {valid}")
    return float(value)


def positive_number(value, name: str, *, example: str = "") -> float:
    """``value`` as a finite ``float`` above 0, or a clear error (``example``: a valid value to quote)."""
    valid = "a finite number above 0" + (f", such as {example}" if example else "")
    return real_number(value, name, valid, lambda v: math.isfinite(v) and v > 0)


def index(value, name: str, n: int, what: str) -> int:
    """``value`` as an ``int`` index into ``n`` things counted from 0 (``what``: 'heads', 'layers'), or a clear error.

    ``head=2 is out of range; valid heads are 0 to 1``
    """
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be a whole number from 0 to {n - 1}; got {value!r} ({type(value).__name__})")
    if not 0 <= value < n:
        raise ValueError(f"{name}={value} is out of range; valid {what} are 0 to {n - 1}")
    return int(value)


def slider_value(value, name: str, low, high, *, whole: bool = True, note: str = ""):
    """``value`` if a slider from ``low`` to ``high`` can show it, or a clear error; ``note`` ends the message.

    ``n_heads=0 is outside the slider; valid values are whole numbers from 1 to 64``
    """
    kind, numbers_from = ("a whole number", "whole numbers from ") if whole else ("a number", "")
    accepted = numbers.Integral if whole else numbers.Real
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, accepted):
        raise TypeError(f"{name} must be {kind} from {low:g} to {high:g}; got {value!r} ({type(value).__name__})")
    if whole:
        value = int(value)  # np.int64(3) is shown, and returned, as 3
    if not low <= value <= high:
        raise ValueError(f"{name}={value!r} is outside the slider; valid values are {numbers_from}{low:g} to {high:g}{note}")
    return value if whole else float(value)


# -- torch arguments (torch is imported only when these are called) ------------------------


def torch_dtype(dtype, name: str = "dtype"):
    """``dtype`` as a torch floating-point dtype, or a TypeError that lists the valid ones.

    Strings ('float32'), NumPy dtypes (np.float32) and integer dtypes are refused: torch
    reads none of them as a dtype for weights or a cache.
    """
    import torch

    valid = "torch.float16, torch.bfloat16, torch.float32 or torch.float64"
    if not isinstance(dtype, torch.dtype):
        hint = f" (write torch.{dtype} instead)" if isinstance(dtype, str) and isinstance(getattr(torch, dtype, None), torch.dtype) else ""
        raise TypeError(f"{name} must be a torch floating-point dtype ({valid}); got {dtype!r} ({type(dtype).__name__}){hint}")
    if dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        kind = "is not a floating-point dtype" if not dtype.is_floating_point else "is not one the layer computes in"
        raise TypeError(f"{name}={dtype} {kind}; {name} must be a torch floating-point dtype ({valid})")
    return dtype


def _usable_devices(torch) -> list[str]:
    names = ["cpu", "meta"]
    if torch.cuda.is_available():
        names += [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        names.append("mps")
    return names


def torch_device(device, name: str = "device"):
    """``device`` as a ``torch.device`` this process can use, or a clear error listing the usable ones.

    Accepts a ``torch.device`` or a string such as 'cpu' or 'cuda:0'. A device this torch
    build or machine lacks ('cuda' on a CPU-only build, 'cuda:3' with one GPU) is a
    ValueError here, before anything is allocated, instead of torch's AssertionError later.
    """
    import torch

    def usable() -> str:  # only built for a message
        return ", ".join(repr(d) for d in _usable_devices(torch))

    if isinstance(device, torch.device):
        parsed = device
    elif isinstance(device, str) or (isinstance(device, numbers.Integral) and not isinstance(device, bool)):
        try:
            parsed = torch.device(device)
        except RuntimeError:
            raise ValueError(f"{name}={device!r} is not a device; usable devices here are {usable()}") from None
    else:
        raise TypeError(f"{name} must be a device name such as 'cpu', a device index or a torch.device; got {device!r} ({type(device).__name__}); "
                        f"usable devices here are {usable()}")
    try:
        torch.empty(0, device=parsed)  # allocates nothing, but fails for a device torch cannot reach
    except (RuntimeError, AssertionError, AttributeError, ValueError) as exc:
        reason = (str(exc).splitlines() or [type(exc).__name__])[0].split(". ")[0][:120]
        raise ValueError(f"{name}={device!r} is not available here ({reason}); usable devices here are {usable()}") from None
    return parsed


def positive_ints(values, name: str, example: str = "(1, 4, 16)") -> tuple[int, ...]:
    """``values`` (a list or tuple of whole numbers of at least 1) as a tuple of ints, or a clear error."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise TypeError(f"{name} must be a list or tuple of whole numbers such as {example}; got {values!r} ({type(values).__name__})")
    values = tuple(values)
    if not values:
        raise ValueError(f"{name} is empty; give at least one whole number, such as {example}")
    return tuple(positive_int(v, name) for v in values)


def heads_off(value, n_heads: int, n_layers: int | None = None, name: str = "heads_off") -> np.ndarray:
    """Which heads are switched off, as the package's one encoding: a bool array, True = off.

    Shape (H,) for one layer, or (L, H) for a model when ``n_layers`` is given. Also
    accepted, and turned into that array here only: None (every head on), head
    indices counted from 0 such as ``[0, 2]`` (one layer), or (layer, head) pairs
    counted from 0 such as ``[(0, 2), (5, 11)]`` (a model). An index listed twice is
    refused: ``[1, 0, 1, 1]`` is more likely a mask of ones and zeros than a list.

    Shapes:
        returns: (H,) or (L, H) bool, True = off
    """
    shape = (n_heads,) if n_layers is None else (n_layers, n_heads)
    named = f"({n_heads},)" if n_layers is None else f"(L, H) = ({n_layers}, {n_heads})"
    lists = ("head indices counted from 0, such as [0, 2]" if n_layers is None
             else "(layer, head) pairs counted from 0, such as [(0, 2), (5, 11)]")
    off = np.zeros(shape, dtype=bool)
    if value is None:
        return off
    if not isinstance(value, (list, tuple, set, frozenset, range)) and hasattr(value, "__array__"):
        value = np.asarray(value)  # a NumPy array or a torch tensor
    if isinstance(value, np.ndarray):
        if value.dtype == bool:
            if value.shape != shape:
                raise ValueError(f"{name} as a bool array must have shape {named}, one entry per head; got shape {value.shape}")
            return value.copy()
        if not np.issubdtype(value.dtype, np.integer):
            raise TypeError(f"{name} must be a bool array of shape {named} (True = off) or {lists}; "
                            f"got an array of dtype {value.dtype}")
        value = value.tolist()
    if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise TypeError(f"{name} must be a bool array of shape {named} (True = off) or {lists}; got {value!r:.60}")
    items = list(value)
    flag = (bool, np.bool_)
    if items and all(isinstance(i, flag) or (isinstance(i, (list, tuple)) and i and all(isinstance(j, flag) for j in i))
                     for i in items):  # a mask written as (nested) lists of bools
        try:
            mask = np.array(items, dtype=bool)
        except ValueError:  # rows of different lengths
            raise ValueError(f"{name} as a bool array must have shape {named}, one entry per head; its rows differ in length") from None
        return heads_off(mask, n_heads, n_layers, name)
    for item in items:
        where = (item,) if n_layers is None else item
        if n_layers is None:
            if not isinstance(item, numbers.Integral) or isinstance(item, (bool, np.bool_)):
                raise TypeError(f"{name} holds head indices, whole numbers counted from 0; got {item!r}")
            if not 0 <= item < n_heads:
                raise ValueError(f"{name} has head {item}; valid heads are 0 to {n_heads - 1} (counted from 0)")
        else:
            if not (isinstance(item, (tuple, list)) and len(item) == 2 and all(
                    isinstance(i, numbers.Integral) and not isinstance(i, (bool, np.bool_)) for i in item)):
                raise TypeError(f"{name} holds (layer, head) pairs of whole numbers; got {item!r}")
            where = (int(item[0]), int(item[1]))
            if not (0 <= where[0] < n_layers and 0 <= where[1] < n_heads):
                raise ValueError(f"{name} has {where}; valid layers are 0 to {n_layers - 1} and heads 0 to {n_heads - 1} "
                                 f"(counted from 0)")
        if off[where]:
            raise ValueError(f"{name} lists {item!r} twice; list each head once, or give a bool array of shape {named}, "
                             f"True = off")
        off[where] = True
    return off
