"""What heads cost: head sizes, parameter counts, score tables, FLOPs and KV-cache bytes.

Pure arithmetic on shapes; nothing here runs attention. The real model shapes come
from each model's published configuration file.

Every size is checked and turned into a Python ``int`` first, so a NumPy integer
never wraps around and a byte count is always exact, however large (10**12 tokens
give an exact answer, not an overflow or a rounded float). A bad size (zero,
negative, a float, a bool) raises ``ValueError``/``TypeError`` naming the parameter.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from math import isqrt

import numpy as np

from . import _validate

#: The largest number whose divisors this module lists (a search up to its square root,
#: 3.2e7, takes well under a second). No model has a dimension anywhere near it.
MAX_DIVISOR_SEARCH = 10**15


@dataclass(frozen=True)
class ModelShape:
    """The attention-relevant shape of a published model."""

    name: str
    n_layers: int
    d_model: int
    n_heads: int
    d_head: int
    n_kv_heads: int
    d_ffn: int
    vocab_size: int
    context: int
    source: str
    #: Total parameters of the published checkpoint, rounded to three significant digits (model card).
    n_parameters: int | None = None

    def weights_bytes(self, bytes_per_value: int = 2) -> int:
        """Bytes of the model's weights at ``bytes_per_value`` each (2 for 16-bit)."""
        if self.n_parameters is None:
            raise ValueError(f"{self.name} has no published parameter count in MODEL_SHAPES")
        return self.n_parameters * _size(bytes_per_value, "bytes_per_value")

    def kv_cache_bytes_per_token(self, bytes_per_value: int = 2) -> int:
        return kv_cache_bytes_per_token(self.n_layers, self.n_kv_heads, self.d_head, bytes_per_value)

    def kv_cache_bytes(self, n_tokens: int, *, batch: int = 1, bytes_per_value: int = 2, n_kv_heads: int | None = None) -> int:
        """Bytes of this model's KV cache for ``batch`` sequences of ``n_tokens``.

        ``n_kv_heads`` replaces the model's own count (to ask "what if it used MHA, or MQA?").
        """
        return kv_cache_bytes(self.n_layers, n_tokens, self.n_kv_heads if n_kv_heads is None else n_kv_heads,
                              self.d_head, batch=batch, bytes_per_value=bytes_per_value)


#: Shapes from each model's published config (each source is named in its row).
MODEL_SHAPES: dict[str, ModelShape] = {
    m.name: m
    for m in (
        ModelShape("GPT-2 small", 12, 768, 12, 64, 12, 3072, 50257, 1024, "openai-community/gpt2 config.json", 124_000_000),
        ModelShape("BERT-base", 12, 768, 12, 64, 12, 3072, 30522, 512, "google-bert/bert-base-uncased config.json", 110_000_000),
        ModelShape("all-MiniLM-L6-v2", 6, 384, 12, 32, 12, 1536, 30522, 512, "sentence-transformers/all-MiniLM-L6-v2 config.json", 22_700_000),
        ModelShape("Llama-2-7B", 32, 4096, 32, 128, 32, 11008, 32000, 4096, "meta-llama/Llama-2-7b-hf config.json", 6_740_000_000),
        ModelShape("Llama-2-70B", 80, 8192, 64, 128, 8, 28672, 32000, 4096, "meta-llama/Llama-2-70b-hf config.json", 69_000_000_000),
        ModelShape("Mistral-7B v0.1", 32, 4096, 32, 128, 8, 14336, 32000, 8192, "mistralai/Mistral-7B-v0.1 config.json", 7_240_000_000),
        ModelShape("Llama-3-8B", 32, 4096, 32, 128, 8, 14336, 128256, 8192, "meta-llama/Meta-Llama-3-8B config.json", 8_030_000_000),
        # d_head = 256 is not d_model / H here: 16 heads x 256 = 4096 on a 3072-wide model.
        ModelShape("Gemma-7B", 28, 3072, 16, 256, 16, 24576, 256000, 8192, "google/gemma-7b config.json", 8_540_000_000),
        # One key/value head shared by all 8 query heads: multi-query attention.
        ModelShape("Gemma-2B", 18, 2048, 8, 256, 1, 16384, 256000, 8192, "google/gemma-2b config.json", 2_510_000_000),
    )
}


# -- sizes and divisors ------------------------------------------------------------------


def _size(value, name: str) -> int:
    """A size as a Python ``int`` of at least 1 (never a NumPy integer, which can wrap around)."""
    return int(_validate.positive_int(value, name))


def _divisors(n: int, name: str) -> list[int]:
    """All positive divisors of ``n``, smallest first, found in O(sqrt(n)).

    Divisors come in pairs d and n / d with d <= sqrt(n), so only 1 ... sqrt(n) is
    searched, in vectorised blocks.
    """
    if n > MAX_DIVISOR_SEARCH:
        raise ValueError(
            f"{name}={n} is too large to list its divisors (at most {MAX_DIVISOR_SEARCH:.0e}); "
            f"no model has a dimension near that size"
        )
    root = isqrt(n)
    small: list[int] = []
    block = 1 << 20
    for start in range(1, root + 1, block):
        candidates = np.arange(start, min(start + block, root + 1), dtype=np.int64)
        small.extend(int(d) for d in candidates[n % candidates == 0])
    large = [n // d for d in reversed(small) if d * d != n]
    return small + large


def _check_divides(count: int, total: int, *, name: str, of: str, choices: str, note: str = "") -> None:
    """A ValueError unless ``count`` divides ``total``, naming the valid and the nearest choices.

    The same message as ``_validate.divides``, with the fast divisor search.
    """
    if total % count == 0:
        return
    message = f"{name}={count} does not divide {of}={total}"
    try:
        valid = _divisors(total, of)
    except ValueError:
        raise ValueError(f"{message}; {of} is too large to list every valid choice{note}") from None
    message += f"; valid {choices} are {_validate.format_choices(valid)}{note}"
    if len(valid) > _validate.FORMAT_LIMIT:
        nearest = _nearest(valid, count)
        verb = "is" if len(nearest) == 1 else "are"
        message += f"; the nearest to {count} {verb} " + " and ".join(str(c) for c in nearest)
    raise ValueError(message)


def _nearest(valid: list[int], count: int) -> list[int]:
    """The largest of ``valid`` below ``count`` and the smallest above it (where they exist)."""
    return [c for c in valid if c < count][-1:] + [c for c in valid if c > count][:1]


def _head_layout(d_model, n_heads, n_kv_heads=None) -> tuple[int, int, int]:
    """Check a head layout; return ``(d_model, n_heads, n_kv_heads)`` as Python ints."""
    d_model, n_heads = _size(d_model, "d_model"), _size(n_heads, "n_heads")
    _check_divides(n_heads, d_model, name="n_heads", of="d_model", choices="head counts")
    n_kv_heads = n_heads if n_kv_heads is None else _size(n_kv_heads, "n_kv_heads")
    _check_divides(
        n_kv_heads, n_heads, name="n_kv_heads", of="n_heads", choices="key/value head counts",
        note=f" (1 is multi-query attention, {n_heads} is ordinary multi-head attention)",
    )
    return d_model, n_heads, n_kv_heads


def valid_head_counts(d_model: int) -> list[int]:
    """Every head count that splits ``d_model`` evenly (its divisors), smallest first."""
    return _divisors(_size(d_model, "d_model"), "d_model")


def nearest_valid_head_counts(d_model: int, n_heads: int) -> list[int]:
    """The valid head counts closest to ``n_heads``: one below and one above where they exist."""
    d_model, n_heads = _size(d_model, "d_model"), _size(n_heads, "n_heads")
    if d_model % n_heads == 0:
        return [n_heads]
    return _nearest(valid_head_counts(d_model), n_heads)


def d_head(d_model: int, n_heads: int) -> int:
    """d_head = d_model / n_heads, or a ValueError naming the nearest valid head counts."""
    d_model, n_heads, _ = _head_layout(d_model, n_heads)
    return d_model // n_heads


def attention_parameters(d_model: int, n_heads: int, n_kv_heads: int | None = None, *, bias: bool = True) -> int:
    """How many numbers one attention layer learns.

    W_Q and W_O are (D, D); W_K and W_V are (D, Hkv*Dh). With ``n_kv_heads == n_heads``
    this is 4 D^2 + 4 D with biases: the head count does not appear.
    """
    d_model, n_heads, n_kv_heads = _head_layout(d_model, n_heads, n_kv_heads)
    kv_width = n_kv_heads * (d_model // n_heads)
    weights = 2 * d_model * d_model + 2 * d_model * kv_width
    biases = (2 * d_model + 2 * kv_width) if bias else 0
    return weights + biases


def score_table_entries(n_heads: int, n_tokens: int, *, batch: int = 1) -> int:
    """Entries in the score tables of one layer: one Tq x Tk table per head: B * H * T^2."""
    n_heads, n_tokens, batch = _size(n_heads, "n_heads"), _size(n_tokens, "n_tokens"), _size(batch, "batch")
    return batch * n_heads * n_tokens * n_tokens


def score_table_bytes(n_heads: int, n_tokens: int, *, batch: int = 1, bytes_per_value: int = 4) -> int:
    """Bytes of one layer's score tables when they are materialised: B * H * T^2 * bytes.

    This is the size of the weights a layer returns when you ask for them
    (``need_weights=True``; float32 by default, 4 bytes). Fused kernels such as
    FlashAttention never hold all of it at once, but still compute every entry.
    """
    return score_table_entries(n_heads, n_tokens, batch=batch) * _size(bytes_per_value, "bytes_per_value")


def attention_flops(d_model: int, n_heads: int, n_tokens: int) -> dict[str, int]:
    """Floating-point operations of one self-attention layer on one sequence of T tokens.

    A multiply-add counts as 2. The matrix products do not depend on the head count
    (H * Dh = D); the per-entry work on the score tables (scale, softmax) grows with H.

    Returns a dict with ``projections`` (Q, K, V and output: 4 x 2 T D^2),
    ``scores`` (Q K^T: 2 H T^2 Dh), ``softmax`` (about 5 per score entry: scale,
    subtract the max, exp, sum, divide), ``mix`` (weights @ V: 2 H T^2 Dh) and ``total``.
    """
    d_model, n_heads, _ = _head_layout(d_model, n_heads)
    Dh = d_model // n_heads
    T = _size(n_tokens, "n_tokens")
    flops = {
        "projections": 4 * 2 * T * d_model * d_model,
        "scores": 2 * n_heads * T * T * Dh,
        "softmax": 5 * n_heads * T * T,
        "mix": 2 * n_heads * T * T * Dh,
    }
    flops["total"] = sum(flops.values())
    return flops


def kv_cache_bytes_per_token(n_layers: int, n_kv_heads: int, d_head: int, bytes_per_value: int = 2) -> int:
    """Bytes the KV cache holds per token: 2 (K and V) x layers x KV heads x d_head x bytes."""
    n_layers, n_kv_heads = _size(n_layers, "n_layers"), _size(n_kv_heads, "n_kv_heads")
    d_head, bytes_per_value = _size(d_head, "d_head"), _size(bytes_per_value, "bytes_per_value")
    return 2 * n_layers * n_kv_heads * d_head * bytes_per_value


def concurrent_sequences(memory_bytes: int, kv_bytes_per_sequence: int, *, reserved_bytes: int = 0) -> int:
    """How many sequences' KV caches fit in ``memory_bytes`` after ``reserved_bytes`` (the weights, say).

    0 when the reserved part alone fills the memory. Exact integer division: a
    sequence either fits whole or it does not.
    """
    memory_bytes = _size(memory_bytes, "memory_bytes")
    kv_bytes_per_sequence = _size(kv_bytes_per_sequence, "kv_bytes_per_sequence")
    if isinstance(reserved_bytes, bool) or not isinstance(reserved_bytes, numbers.Integral):
        raise TypeError(f"reserved_bytes must be a whole number of at least 0; got {reserved_bytes!r} ({type(reserved_bytes).__name__})")
    if reserved_bytes < 0:
        raise ValueError(f"reserved_bytes={reserved_bytes} is negative; reserved_bytes must be at least 0")
    return max(0, memory_bytes - int(reserved_bytes)) // kv_bytes_per_sequence


def kv_cache_bytes(n_layers: int, n_tokens: int, n_kv_heads: int, d_head: int, *, batch: int = 1, bytes_per_value: int = 2) -> int:
    """Bytes of the KV cache for ``batch`` sequences of ``n_tokens``: the per-token figure x T x B.

    Per layer the cache holds k and v, each (B, Hkv, T, Dh): 2 x B x Hkv x T x Dh values.
    It grows linearly with T (the score tables grow with T^2), and with Hkv x Dh, not
    with the query head count H: at fixed d_model and Hkv = H, the head count cancels.
    """
    per_token = kv_cache_bytes_per_token(n_layers, n_kv_heads, d_head, bytes_per_value)
    return per_token * _size(n_tokens, "n_tokens") * _size(batch, "batch")
