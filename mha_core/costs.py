"""What heads cost: head sizes, parameter counts, score tables, FLOPs and KV-cache bytes.

Pure arithmetic on shapes; nothing here runs attention. The real model shapes come
from each model's published configuration file. Further down, in the order notebook
10 teaches them: sliding windows (a cache of at most ``window`` tokens), prefill
against decode (FLOPs per byte read), paged caches (the room a reservation wastes)
and quantized caches (fewer bits per value).

Every size is checked and turned into a Python ``int`` first, so a NumPy integer
never wraps around and a byte count is always exact, however large (10**12 tokens
give an exact answer, not an overflow or a rounded float). A bad size (zero,
negative, a float, a bool) raises ``ValueError``/``TypeError`` naming the parameter.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
    #: Total parameters of the published checkpoint, rounded to three significant digits (model card).
    n_parameters: int | None = None
    #: Keys each query sees in every layer: the newest ``sliding_window`` tokens, its own included
    #: (``sliding_window`` in the config). None: every earlier token.
    sliding_window: int | None = None
    #: "decoder" generates text one token at a time and keeps a KV cache; "encoder" reads its
    #: whole input at once (every token sees every other) and keeps none.
    kind: str = "decoder"
    #: "learned": one trained position vector per position, none past ``context``;
    #: "rotary": rotations computed for any position (trained only up to ``context``).
    positions: str = "rotary"
    #: Where ``context`` comes from when it is not ``source`` (None: from ``source`` too).
    context_source: str | None = None
    #: ``max_position_embeddings`` in the config (``source``) where it differs from ``context``.
    config_max_positions: int | None = None

    @property
    def generates(self) -> bool:
        """Whether the model generates token by token (a decoder), and so keeps a KV cache."""
        return self.kind == "decoder"

    def _require_decoder(self) -> None:
        if not self.generates:
            raise ValueError(
                f"{self.name} is an encoder: it reads its whole input at once and keeps no KV cache; "
                f"models that keep one are {', '.join(n for n, m in MODEL_SHAPES.items() if m.generates)}"
            )

    def cached_tokens(self, n_tokens: int, *, windowed: bool = True) -> int:
        """Tokens the cache holds after ``n_tokens``: all of them, or at most the sliding window.

        ``windowed=False`` asks what the cache would hold if the model kept every token.
        """
        windowed = _validate.flag(windowed, "windowed")
        return cached_tokens(n_tokens, self.sliding_window if windowed else None)

    def parameter_bytes(self, bytes_per_value: int = 2) -> int:
        """Bytes of the model's parameters at ``bytes_per_value`` each (2 for 16-bit)."""
        if self.n_parameters is None:
            raise ValueError(f"{self.name} has no published parameter count in MODEL_SHAPES")
        return self.n_parameters * _size(bytes_per_value, "bytes_per_value")

    def kv_cache_bytes_per_token(self, bytes_per_value: int = 2) -> int:
        """Bytes one cached token takes: 2 x layers x KV heads x d_head x bytes. An encoder has no cache."""
        self._require_decoder()
        return kv_cache_bytes_per_token(self.n_layers, self.n_kv_heads, self.d_head, bytes_per_value)

    def kv_cache_bytes(self, n_tokens: int, *, batch: int = 1, bytes_per_value: int = 2, n_kv_heads: int | None = None,
                       windowed: bool = True) -> int:
        """Bytes of this model's KV cache for ``batch`` sequences of ``n_tokens``.

        A model with a sliding window keeps at most ``sliding_window`` tokens (a rolling
        buffer); ``windowed=False`` asks what it would take to keep them all.
        ``n_kv_heads`` replaces the model's own count (to ask "what if it used MHA, or MQA?").
        An encoder keeps no cache: a ValueError says so.
        """
        self._require_decoder()
        return kv_cache_bytes(self.n_layers, n_tokens, self.n_kv_heads if n_kv_heads is None else n_kv_heads,
                              self.d_head, batch=batch, bytes_per_value=bytes_per_value,
                              sliding_window=self.sliding_window if _validate.flag(windowed, "windowed") else None)


#: Shapes from each model's published config (each source is named in its row).
MODEL_SHAPES: dict[str, ModelShape] = {
    m.name: m
    for m in (
        # GPT-2 learns one position vector for each of its 1,024 positions (n_positions): none beyond.
        ModelShape("GPT-2 small", 12, 768, 12, 64, 12, 3072, 50257, 1024, "openai-community/gpt2 config.json", 124_000_000,
                   positions="learned"),
        # Encoders: every token sees every other, the whole input at once; nothing is generated, nothing cached.
        ModelShape("BERT-base", 12, 768, 12, 64, 12, 3072, 30522, 512, "google-bert/bert-base-uncased config.json", 110_000_000,
                   kind="encoder", positions="learned"),
        ModelShape("all-MiniLM-L6-v2", 6, 384, 12, 32, 12, 1536, 30522, 512, "sentence-transformers/all-MiniLM-L6-v2 config.json",
                   22_700_000, kind="encoder", positions="learned"),
        ModelShape("Llama-2-7B", 32, 4096, 32, 128, 32, 11008, 32000, 4096, "meta-llama/Llama-2-7b-hf config.json", 6_740_000_000),
        ModelShape("Llama-2-70B", 80, 8192, 64, 128, 8, 28672, 32000, 4096, "meta-llama/Llama-2-70b-hf config.json", 69_000_000_000),
        # sliding_window 4096 with a rolling-buffer cache (Jiang et al. 2023, "Mistral 7B", section 2). The
        # context, 8,192, is the paper's (Table 1, context_len); the config says max_position_embeddings 32768.
        ModelShape("Mistral-7B v0.1", 32, 4096, 32, 128, 8, 14336, 32000, 8192, "mistralai/Mistral-7B-v0.1 config.json", 7_240_000_000,
                   sliding_window=4096, context_source="Jiang et al. 2023, Mistral 7B, Table 1: context_len",
                   config_max_positions=32768),
        ModelShape("Llama-3-8B", 32, 4096, 32, 128, 8, 14336, 128256, 8192, "meta-llama/Meta-Llama-3-8B config.json", 8_030_000_000),
        # d_head = 256 is not d_model / H here: 16 heads x 256 = 4096 on a 3072-wide model.
        ModelShape("Gemma-7B", 28, 3072, 16, 256, 16, 24576, 256000, 8192, "google/gemma-7b config.json", 8_540_000_000),
        # One key/value head shared by all 8 query heads: multi-query attention.
        ModelShape("Gemma-2B", 18, 2048, 8, 256, 1, 16384, 256000, 8192, "google/gemma-2b config.json", 2_510_000_000),
        # The decoder the course runs (07 and the serving-cost notebook): 9 query heads share 3 KV heads; rope_theta 100,000.
        ModelShape("SmolLM2-135M", 30, 576, 9, 64, 3, 1536, 49152, 8192, "HuggingFaceTB/SmolLM2-135M-Instruct config.json",
                   135_000_000),
    )
}


# -- sizes and divisors ------------------------------------------------------------------


def _size(value, name: str) -> int:
    """A size as a Python ``int`` of at least 1 (never a NumPy integer, which can wrap around)."""
    return _validate.positive_int(value, name)


def _head_layout(d_model, n_heads, n_kv_heads=None) -> tuple[int, int, int]:
    """Check a head layout; return ``(d_model, n_heads, n_kv_heads)`` as Python ints (``_validate.head_counts``)."""
    return _validate.head_counts(d_model, n_heads, n_kv_heads)


def valid_head_counts(d_model: int) -> list[int]:
    """Every head count that splits ``d_model`` evenly (its divisors), smallest first."""
    return _validate.divisors(_size(d_model, "d_model"), "d_model")


def nearest_valid_head_counts(d_model: int, n_heads: int) -> list[int]:
    """The valid head counts closest to ``n_heads``: one below and one above where they exist."""
    d_model, n_heads = _size(d_model, "d_model"), _size(n_heads, "n_heads")
    if d_model % n_heads == 0:
        return [n_heads]
    return _validate.nearest(valid_head_counts(d_model), n_heads)


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
    reserved_bytes = _validate.whole_number(reserved_bytes, "reserved_bytes", 0)
    return max(0, memory_bytes - reserved_bytes) // kv_bytes_per_sequence


def kv_cache_bytes(n_layers: int, n_tokens: int, n_kv_heads: int, d_head: int, *, batch: int = 1, bytes_per_value: int = 2,
                   sliding_window: int | None = None) -> int:
    """Bytes of the KV cache for ``batch`` sequences of ``n_tokens``: the per-token figure x T x B.

    Per layer the cache holds k and v, each (B, Hkv, T, Dh): 2 x B x Hkv x T x Dh values.
    It grows linearly with T (the score tables grow with T^2), and with Hkv x Dh, not
    with the query head count H: at fixed d_model and Hkv = H, the head count cancels.
    With a ``sliding_window`` W it holds min(T, W) tokens instead of T (``cached_tokens``).
    """
    per_token = kv_cache_bytes_per_token(n_layers, n_kv_heads, d_head, bytes_per_value)
    return per_token * cached_tokens(n_tokens, sliding_window) * _size(batch, "batch")


# -- sliding windows: a cache of at most W tokens ------------------------------------------------


def cached_tokens(n_tokens: int, sliding_window: int | None = None) -> int:
    """Tokens a cache holds after ``n_tokens``: T, or min(T, W) for a model with a sliding window W.

    With a window, query i sees only keys i - W + 1 ... i, so nothing older is ever read
    again: a rolling buffer of W slots (token i goes to slot i mod W) is enough.
    """
    n_tokens = _size(n_tokens, "n_tokens")
    return n_tokens if sliding_window is None else min(n_tokens, _size(sliding_window, "sliding_window"))


def sliding_window_mask(n_tokens: int, window: int) -> np.ndarray:
    """A causal mask that also blocks every key more than ``window - 1`` places back.

    ``True`` means blocked, as in ``attention.causal_mask``: query i sees keys
    max(0, i - W + 1) ... i, at most W of them, itself included.

    Shapes:
        returns: (T, T), bool
    """
    T, W = _size(n_tokens, "n_tokens"), _size(window, "window")
    i = np.arange(T)[:, None]  # (T, 1) query positions
    j = np.arange(T)[None, :]  # (1, T) key positions
    return (j > i) | (j <= i - W)  # (T, T)


def reach_after_layers(n_tokens: int, window: int, n_layers: int) -> np.ndarray:
    """Which tokens' information can reach each position after ``n_layers`` windowed layers.

    One layer moves information from the keys a query sees; a second layer reads the
    outputs of the first, so it reaches the keys those keys saw. This multiplies the
    "sees" table (the mask's opposite) by itself, once per layer.

    Shapes:
        returns: (T, T), bool; entry (i, j) is True when token j can reach position i
    """
    sees = ~sliding_window_mask(n_tokens, window)  # (T, T)
    n_layers = _size(n_layers, "n_layers")
    reach = sees
    for _ in range(n_layers - 1):
        reach = (reach.astype(np.int64) @ sees.astype(np.int64)) > 0  # (T, T)
    return reach


def window_reach(n_layers: int, window: int) -> int:
    """How many tokens, itself included, can pass information to one position through ``n_layers`` windowed layers.

    Each layer looks W - 1 tokens further back: 1 + layers x (W - 1), about layers x W.
    Mistral-7B: 1 + 32 x 4,095 = 131,041 (its paper: "approximately 131K tokens").
    """
    return 1 + _size(n_layers, "n_layers") * (_size(window, "window") - 1)


# -- prefill against decode: FLOPs per byte read ---------------------------------------------------


@dataclass(frozen=True)
class StepCost:
    """The arithmetic and the memory traffic of one forward pass of a whole model.

    ``flops``: floating-point operations (a multiply-add counts 2). ``weight_bytes``: the
    weights, read once for the whole batch. ``cache_bytes``: the KV caches of all ``batch``
    sequences, read (decode) or written (prefill). Activations are left out; they are
    small next to these at the batches priced here.
    """

    what: str
    flops: int
    weight_bytes: int
    cache_bytes: int
    batch: int = 1

    @property
    def bytes_moved(self) -> int:
        """Bytes moved between memory and the chip: the weights once, plus every sequence's cache."""
        return self.weight_bytes + self.cache_bytes

    @property
    def memory_bytes(self) -> int:
        """Bytes that must sit in the device's memory during the pass: the weights and every cache."""
        return self.weight_bytes + self.cache_bytes

    @property
    def intensity(self) -> float:
        """Arithmetic intensity: FLOPs per byte moved."""
        return self.flops / self.bytes_moved

    def seconds_at_least(self, flops_per_second: float, bytes_per_second: float) -> dict[str, float]:
        """The least time this pass can take on a chip with those two peak rates.

        ``compute_s`` (FLOPs / peak FLOP/s), ``memory_s`` (bytes / bandwidth), and
        ``bound``: the one that is larger, "compute" or "memory". A real run is slower.
        This checks no memory size; ``least_time_on`` does, for a named device.
        """
        compute_s = self.flops / _validate.positive_number(flops_per_second, "flops_per_second")
        memory_s = self.bytes_moved / _validate.positive_number(bytes_per_second, "bytes_per_second")
        return {"compute_s": compute_s, "memory_s": memory_s, "bound": "compute" if compute_s >= memory_s else "memory"}

    def fit(self, device: dict) -> DeviceFit:
        """Whether this pass's weights and caches fit in ``device["memory_bytes"]``, and if not, what would."""
        memory = _size(device["memory_bytes"], "memory_bytes")
        per_sequence = self.cache_bytes // self.batch
        return DeviceFit(device["name"], memory, self.memory_bytes, self.batch,
                         concurrent_sequences(memory, per_sequence, reserved_bytes=self.weight_bytes))

    def least_time_on(self, device: dict) -> dict[str, float]:
        """``seconds_at_least`` at ``device``'s two rates, for a pass that fits in its memory.

        A pass whose weights and caches do not fit in the device's memory raises
        ValueError: a least time for a batch the device cannot hold means nothing.
        """
        fit = self.fit(device)
        if not fit.fits:
            raise ValueError(f"{self.what} does not fit: {fit.describe()}")
        return self.seconds_at_least(device["flops_per_second"], device["bytes_per_second"])


@dataclass(frozen=True)
class DeviceFit:
    """A pass's weights and caches against one device's memory.

    ``largest_batch``: how many sequences' caches fit beside the weights (0 when the
    weights alone fill it). ``devices_needed``: the fewest such devices that hold the
    bytes at all, split evenly over them (a lower bound; a real split wastes some).
    """

    device: str
    memory_bytes: int
    needed_bytes: int
    batch: int
    largest_batch: int

    @property
    def fits(self) -> bool:
        return self.needed_bytes <= self.memory_bytes

    @property
    def devices_needed(self) -> int:
        return -(-self.needed_bytes // self.memory_bytes)

    def describe(self) -> str:
        """One sentence, in GiB (2**30 bytes) and GB (10**9 bytes)."""
        needed = f"{self.needed_bytes / 2**30:.1f} GiB ({self.needed_bytes / 1e9:.1f} GB) of weights and caches"
        memory = f"{self.memory_bytes / 2**30:.0f} GiB"
        if self.fits:
            return f"it needs {needed}; one {self.device} holds {memory}"
        return (f"it needs {needed}; one {self.device} holds {memory}, room for at most {self.largest_batch} "
                f"sequences beside the weights; a batch of {self.batch} takes at least {self.devices_needed} such GPUs")


#: One data-centre GPU from NVIDIA's A100 datasheet (A100 80GB SXM): 312 TFLOP/s of dense 16-bit
#: (BF16) tensor arithmetic and 2,039 GB/s of memory bandwidth. Its "80GB" of HBM2e is 80 GiB
#: (81,920 MiB as nvidia-smi reports it), the 80 GiB the calculator of notebook 10 offers.
A100_80GB = {"name": "A100 80GB SXM", "flops_per_second": 312e12, "bytes_per_second": 2039e9, "memory_bytes": 80 * 2**30}


def _attention_flops_per_query(model: ModelShape, n_keys: int) -> int:
    """Scores (q . k) and mixing (weights @ v) of one query against ``n_keys`` keys, every layer and head."""
    return 4 * model.n_layers * model.n_heads * model.d_head * n_keys


def decode_step_cost(model: ModelShape, n_context: int, *, batch: int = 1, bytes_per_value: int = 2) -> StepCost:
    """One decoding step: ``batch`` sequences each add one token to a context of ``n_context`` (the new one included).

    FLOPs: every weight takes part in one multiply-add per token (2 x parameters; the
    embedding table, about 2% of a 7B model, is counted too, so this is a slight
    overestimate), plus attention of the new query over the cached keys.
    Bytes: all the weights, read once for the whole batch, and every sequence's cache.
    """
    model._require_decoder()
    batch = _size(batch, "batch")
    keys = model.cached_tokens(n_context)
    flops = batch * (2 * model.n_parameters + _attention_flops_per_query(model, keys))
    caches = batch * model.kv_cache_bytes(n_context, bytes_per_value=bytes_per_value)
    return StepCost(f"decode one token at T = {n_context:,}, batch {batch}", flops, model.parameter_bytes(bytes_per_value),
                    caches, batch)


def prefill_cost(model: ModelShape, n_tokens: int, *, batch: int = 1, bytes_per_value: int = 2) -> StepCost:
    """Reading a prompt of ``n_tokens`` in one pass (prefill), for ``batch`` sequences.

    FLOPs: 2 x parameters per token, plus causal attention: query i scores min(i, W)
    keys. Bytes: the weights, read once for all T tokens, and the cache written once.
    """
    model._require_decoder()
    T, batch = _size(n_tokens, "n_tokens"), _size(batch, "batch")
    W = model.sliding_window
    if W is None or T <= W:
        keys = T * (T + 1) // 2  # 1 + 2 + ... + T
    else:
        keys = W * (W + 1) // 2 + (T - W) * W  # the first W queries as above, every later one W keys
    flops = batch * (2 * model.n_parameters * T + _attention_flops_per_query(model, keys))
    caches = batch * model.kv_cache_bytes(T, bytes_per_value=bytes_per_value)
    return StepCost(f"prefill {T:,} tokens, batch {batch}", flops, model.parameter_bytes(bytes_per_value), caches, batch)


# -- paged KV caches: what a reservation wastes ---------------------------------------------------


@dataclass(frozen=True)
class Reservation:
    """Cache slots held for one sequence, against the tokens it really has."""

    n_tokens: int
    reserved_tokens: int

    @property
    def wasted_tokens(self) -> int:
        return self.reserved_tokens - self.n_tokens

    @property
    def wasted_fraction(self) -> float:
        """The share of the reserved slots that hold nothing."""
        return self.wasted_tokens / self.reserved_tokens


def contiguous_reservation(n_tokens: int, max_tokens: int) -> Reservation:
    """One block of ``max_tokens`` slots, reserved up front because the answer's length is unknown."""
    n_tokens, max_tokens = _size(n_tokens, "n_tokens"), _size(max_tokens, "max_tokens")
    if n_tokens > max_tokens:
        raise ValueError(f"n_tokens={n_tokens} is more than max_tokens={max_tokens}; a reservation holds at most max_tokens")
    return Reservation(n_tokens, max_tokens)


def paged_reservation(n_tokens: int, block_tokens: int = 16) -> Reservation:
    """Pages of ``block_tokens`` slots, one more whenever the last is full (vLLM; Kwon et al. 2023).

    Only the last page can be part empty: at most ``block_tokens - 1`` slots wasted.
    """
    n_tokens, block_tokens = _size(n_tokens, "n_tokens"), _size(block_tokens, "block_tokens")
    return Reservation(n_tokens, -(-n_tokens // block_tokens) * block_tokens)


# -- quantized KV caches: fewer bits per value -------------------------------------------------------


def quantized_kv_cache_bytes(n_layers: int, n_tokens: int, n_kv_heads: int, d_head: int, *, bits: int,
                             group_size: int | None = None, scale_bytes: int = 2, batch: int = 1,
                             sliding_window: int | None = None) -> int:
    """Bytes of a KV cache stored in ``bits`` bits per value (8, 4, ...).

    Quantizing stores each value as a small integer and keeps one ``scale_bytes`` scale
    per ``group_size`` consecutive values of a head's key or value vector (None: the
    scales are left out of the count). ``group_size`` must divide ``d_head``.
    """
    bits = _validate.int_in_range(bits, "bits", 1, 64, meaning=" (bits per value: 2, 4, 8 or 16, say)")
    n_kv_heads, d_head = _size(n_kv_heads, "n_kv_heads"), _size(d_head, "d_head")
    values = 2 * _size(n_layers, "n_layers") * n_kv_heads * d_head * cached_tokens(n_tokens, sliding_window) * _size(batch, "batch")
    data = -(-values * bits // 8)  # whole bytes
    if group_size is None:
        return data
    group_size = _size(group_size, "group_size")
    _validate.divides(group_size, d_head, name="group_size", of="d_head", choices="group sizes")
    return data + values // group_size * _size(scale_bytes, "scale_bytes")


def layer_decode_bytes(d_model: int, n_heads: int, n_kv_heads: int, n_tokens: int, *, bytes_per_value: int = 4,
                       bias: bool = True) -> dict[str, int]:
    """Bytes one attention layer reads while it decodes ``n_tokens`` one at a time with its cache.

    Every step reads all the layer's weights (``weights``) and the keys and values of
    every token so far (``cache``: 1 + 2 + ... + T tokens). ``total`` adds them up.
    """
    d_model, n_heads, n_kv_heads = _head_layout(d_model, n_heads, n_kv_heads)
    T, b = _size(n_tokens, "n_tokens"), _size(bytes_per_value, "bytes_per_value")
    weights = T * attention_parameters(d_model, n_heads, n_kv_heads, bias=_validate.flag(bias, "bias")) * b
    cache = kv_cache_bytes_per_token(1, n_kv_heads, d_model // n_heads, b) * (T * (T + 1) // 2)
    return {"weights": weights, "cache": cache, "total": weights + cache}
