"""What heads cost: head sizes, parameter counts, score tables, FLOPs and KV-cache bytes.

Pure arithmetic on shapes; nothing here runs attention. The real model shapes come
from each model's published configuration file.
"""

from __future__ import annotations

from dataclasses import dataclass

from . import _validate


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

    def kv_cache_bytes_per_token(self, bytes_per_value: int = 2) -> int:
        return kv_cache_bytes_per_token(self.n_layers, self.n_kv_heads, self.d_head, bytes_per_value)


#: Shapes from each model's published config (see COURSE.md, "Facts checked against their sources").
MODEL_SHAPES: dict[str, ModelShape] = {
    m.name: m
    for m in (
        ModelShape("GPT-2 small", 12, 768, 12, 64, 12, 3072, 50257, 1024, "openai-community/gpt2 config.json"),
        ModelShape("BERT-base", 12, 768, 12, 64, 12, 3072, 30522, 512, "google-bert/bert-base-uncased config.json"),
        ModelShape("all-MiniLM-L6-v2", 6, 384, 12, 32, 12, 1536, 30522, 512, "sentence-transformers/all-MiniLM-L6-v2 config.json"),
        ModelShape("Llama-2-7B", 32, 4096, 32, 128, 32, 11008, 32000, 4096, "meta-llama/Llama-2-7b-hf config.json"),
        ModelShape("Llama-2-70B", 80, 8192, 64, 128, 8, 28672, 32000, 4096, "meta-llama/Llama-2-70b-hf config.json"),
        ModelShape("Mistral-7B v0.1", 32, 4096, 32, 128, 8, 14336, 32000, 8192, "mistralai/Mistral-7B-v0.1 config.json"),
        ModelShape("Llama-3-8B", 32, 4096, 32, 128, 8, 14336, 128256, 8192, "meta-llama/Meta-Llama-3-8B config.json"),
    )
}


def valid_head_counts(d_model: int) -> list[int]:
    """Every head count that splits ``d_model`` evenly (its divisors)."""
    return _validate.divisors(_validate.positive_int(d_model, "d_model"))


def nearest_valid_head_counts(d_model: int, n_heads: int) -> list[int]:
    """The valid head counts closest to ``n_heads``: one below and one above where they exist."""
    n_heads = _validate.positive_int(n_heads, "n_heads")
    valid = valid_head_counts(d_model)
    if n_heads in valid:
        return [n_heads]
    below = [h for h in valid if h < n_heads]
    above = [h for h in valid if h > n_heads]
    return ([below[-1]] if below else []) + ([above[0]] if above else [])


def d_head(d_model: int, n_heads: int) -> int:
    """d_head = d_model / n_heads, or a ValueError naming the nearest valid head counts."""
    d_model, n_heads, _ = _validate.head_counts(d_model, n_heads)
    return d_model // n_heads


def attention_parameters(d_model: int, n_heads: int, n_kv_heads: int | None = None, *, bias: bool = True) -> int:
    """How many numbers one attention layer learns.

    W_Q and W_O are (D, D); W_K and W_V are (D, Hkv*Dh). With ``n_kv_heads == n_heads``
    this is 4 D^2 + 4 D with biases: the head count does not appear.
    """
    d_model, n_heads, n_kv_heads = _validate.head_counts(d_model, n_heads, n_kv_heads)
    kv_width = n_kv_heads * (d_model // n_heads)
    weights = 2 * d_model * d_model + 2 * d_model * kv_width
    biases = (2 * d_model + 2 * kv_width) if bias else 0
    return weights + biases


def score_table_entries(n_heads: int, n_tokens: int, *, batch: int = 1) -> int:
    """Entries in the score tables of one layer: one Tq x Tk table per head: B * H * T^2."""
    n_heads = _validate.positive_int(n_heads, "n_heads")
    n_tokens = _validate.positive_int(n_tokens, "n_tokens")
    return _validate.positive_int(batch, "batch") * n_heads * n_tokens * n_tokens


def attention_flops(d_model: int, n_heads: int, n_tokens: int) -> dict[str, int]:
    """Floating-point operations of one self-attention layer on one sequence of T tokens.

    A multiply-add counts as 2. The matrix products do not depend on the head count
    (H * Dh = D); the per-entry work on the score tables (scale, softmax) grows with H.

    Returns a dict with ``projections`` (Q, K, V and output: 4 x 2 T D^2),
    ``scores`` (Q K^T: 2 H T^2 Dh), ``softmax`` (about 5 per score entry: scale,
    subtract the max, exp, sum, divide), ``mix`` (weights @ V: 2 H T^2 Dh) and ``total``.
    """
    Dh = d_head(d_model, n_heads)
    T = _validate.positive_int(n_tokens, "n_tokens")
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
    for name, value in (("n_layers", n_layers), ("n_kv_heads", n_kv_heads), ("d_head", d_head), ("bytes_per_value", bytes_per_value)):
        _validate.positive_int(value, name)
    return 2 * n_layers * n_kv_heads * d_head * bytes_per_value
