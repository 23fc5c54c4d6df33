"""Serving costs measured on this machine, with ``TorchMultiHeadAttention`` (notebook 10).

``mha_core.costs`` says what a layer *should* cost (bytes, FLOPs). This module runs
the package's torch layer and measures what it *does* cost here:

* ``head_count_sweep``: forward time over head counts and sequence lengths at a
  fixed d_model, beside the calculator's FLOPs and KV-cache bytes;
* ``decode_cached`` / ``decode_uncached``: generating token by token with a key/value
  cache against recomputing the whole prefix at every step; ``compare_decoding``
  checks that both give the full causal pass's outputs and times them;
* ``kv_sharing_decode``: the cache's real bytes, the bytes each step reads and the
  decoding time for MHA, GQA and MQA.

Times are medians of a few runs; on a shared machine they move from run to run, the
ratios much less. Torch is imported when a function here is first called, never by
``import mha_core``. Keep these calls out of widget callbacks: they take seconds.
"""

from __future__ import annotations

import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from . import _validate, costs
from .examples import TOKENS

#: The running sentence, carried on into a longer text (words only; no tokenizer needed).
LONGER_TEXT = (
    "the cache key changed after deploy so every request missed the cache and went to the database "
    "which slowed down until the old key was restored and the cache filled again"
)

#: The most work one call here may ask for, in operations as ``costs.attention_flops``
#: counts them: 10**12 took 20-60 s on one core of the course's machine (16-60 counted
#: GFLOP/s, measured under load). A typo such as ``token_counts=(10**6,)`` asks for
#: 10**16 and would run for days; it is refused before any work, with the largest size that fits.
MAX_FLOPS = 10**12
#: The most token-by-token decoding steps one call may take: each step costs 0.05-0.3 ms
#: of Python and dispatch whatever its size, so 200,000 steps is up to a minute.
MAX_DECODE_STEPS = 200_000


def longer_text(n_tokens: int) -> list[str]:
    """``n_tokens`` words: the running sentence, then ``LONGER_TEXT`` repeated as often as needed."""
    n_tokens = _validate.positive_int(n_tokens, "n_tokens")
    # The words are shared; the list holds one 8-byte reference per token.
    _validate.fits_this_process(8 * n_tokens, f"longer_text(n_tokens={n_tokens}) (a list of {n_tokens:,} words)",
                                hint="use fewer tokens")
    words = LONGER_TEXT.split()
    assert tuple(words[: len(TOKENS)]) == tuple(TOKENS)  # it starts with the running sentence
    return [words[i % len(words)] for i in range(n_tokens)]


def text_vectors(words, d_model: int = 64, *, seed: int = 0) -> np.ndarray:
    """Toy token vectors, one per word: the same word always gets the same seeded vector.

    Shapes:
        returns: (T, D) = (len(words), d_model), float32
    """
    d_model = _validate.positive_int(d_model, "d_model")
    if isinstance(words, (str, bytes)) or not hasattr(words, "__len__"):
        raise TypeError(f"words must be a list of words, such as longer_text(64); got {type(words).__name__}")
    vocabulary = sorted(set(words))
    # The table is drawn in float64 before it becomes float32; the result is float32.
    _validate.fits_this_process(8 * len(vocabulary) * d_model + 4 * len(words) * d_model,
                                f"text_vectors of {len(words):,} words with d_model={d_model}", hint="use fewer words or a smaller d_model")
    table = np.random.default_rng(seed).standard_normal((len(vocabulary), d_model)).astype(np.float32)  # (V, D)
    index = {w: i for i, w in enumerate(vocabulary)}
    return table[[index[w] for w in words]]  # (T, D)


@contextmanager
def torch_threads(threads: int | None):
    """Run the block with ``threads`` torch threads, then restore the setting (None: leave it alone).

    One thread keeps timings steady on a shared machine: with two or more, each of the
    many small operations of decoding can wait for a thread that another process holds
    (on a loaded two-core machine, cached decoding ran ten to thirty times slower).
    """
    import torch

    previous = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(_validate.positive_int(threads, "threads"))
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def _largest(fits, high: int) -> int:
    """The largest n in 1 .. high with ``fits(n)`` (``fits`` grows monotonically false); 0 if none."""
    low = 0
    while low < high:
        mid = (low + high + 1) // 2
        low, high = (mid, high) if fits(mid) else (low, mid - 1)
    return low


def _work_fits(flops: int, steps: int, what: str, advice: str) -> None:
    """Refuse, before any work, a call whose work passes ``MAX_FLOPS`` or ``MAX_DECODE_STEPS``."""
    if flops > MAX_FLOPS:
        raise ValueError(f"{what} would take about {flops:.1e} floating-point operations; this function takes at most "
                         f"{MAX_FLOPS:.0e} (serving.MAX_FLOPS, about a minute on one core), so a cell cannot hang: {advice}")
    if steps > MAX_DECODE_STEPS:
        raise ValueError(f"{what} would take {steps:,} decoding steps; this function takes at most {MAX_DECODE_STEPS:,} "
                         f"(serving.MAX_DECODE_STEPS, about a minute): {advice}")


def _decode_flops(d_model: int, n_heads: int, n_tokens: int) -> int:
    """Operations of decoding ``n_tokens`` one at a time through a cache: about one full pass (an upper bound)."""
    return costs.attention_flops(d_model, n_heads, n_tokens)["total"]


def _uncached_flops(d_model: int, n_heads: int, n_tokens: int) -> int:
    """Operations of ``decode_uncached``: a full causal pass over every prefix, 1 .. T tokens."""
    one = costs.attention_flops(d_model, n_heads, 1)
    linear, quadratic = one["projections"], one["total"] - one["projections"]  # per token; per token pair
    T = n_tokens
    return linear * T * (T + 1) // 2 + quadratic * T * (T + 1) * (2 * T + 1) // 6


# -- the head-count sweep ---------------------------------------------------------------


@dataclass(frozen=True)
class HeadSweep:
    """Forward times and calculated costs of one layer, for each head count and length.

    ``seconds``, ``flops`` and ``score_entries`` are arrays of shape (len(token_counts),
    len(head_counts)); ``kv_bytes_per_token`` (one layer, fp32) has one entry per head count.
    """

    d_model: int
    head_counts: tuple[int, ...]
    token_counts: tuple[int, ...]
    seconds: np.ndarray
    flops: np.ndarray
    score_entries: np.ndarray
    kv_bytes_per_token: np.ndarray
    repeats: int

    def rows(self) -> list[dict]:
        """One dict per (T, H): the table the notebook prints and the benchmark reports."""
        return [
            dict(n_tokens=T, n_heads=H, d_head=self.d_model // H, ms=1000 * float(self.seconds[i, j]),
                 gflops=float(self.flops[i, j]) / 1e9, score_entries=int(self.score_entries[i, j]),
                 kv_bytes_per_token=int(self.kv_bytes_per_token[j]))
            for i, T in enumerate(self.token_counts) for j, H in enumerate(self.head_counts)
        ]


def head_count_sweep(d_model: int = 128, head_counts=(1, 4, 16, 64), token_counts=(128, 512), *,
                     batch: int = 1, repeats: int = 5, seed: int = 0, threads: int | None = 1) -> HeadSweep:
    """Time one causal self-attention forward (``TorchMultiHeadAttention``, fp32) for every (T, H).

    Each round runs every (T, H) once, in an order that turns from round to round, so a
    burst of load from elsewhere hits all of them alike; the first round is a warm-up.
    Returns medians over ``repeats`` rounds, and the calculator's numbers for the same shapes.
    ``threads``: torch threads while timing (restored afterwards); one thread keeps the
    times steady on a shared machine. None leaves torch's setting alone.
    """
    import torch

    from .torch_attention import TorchMultiHeadAttention

    d_model = _validate.positive_int(d_model, "d_model")
    head_counts = _validate.positive_ints(head_counts, "head_counts", "(1, 4, 16, 64)")
    token_counts = _validate.positive_ints(token_counts, "token_counts", "(128, 512)")
    batch, repeats = _validate.positive_int(batch, "batch"), _validate.positive_int(repeats, "repeats")
    for h in head_counts:
        costs.d_head(d_model, h)  # a clear error for a head count that does not divide d_model

    def work(tokens) -> int:  # every round runs every (T, H) once; round 0 warms up
        return (repeats + 1) * batch * sum(costs.attention_flops(d_model, h, t)["total"] for t in tokens for h in head_counts)

    largest = _largest(lambda t: work((t,)) <= MAX_FLOPS, max(token_counts))
    _work_fits(work(token_counts), 0,
               f"head_count_sweep with token_counts={token_counts}, d_model={d_model}, head_counts={head_counts}, "
               f"batch={batch} and repeats={repeats}",
               f"with these settings one token count of at most {largest:,} fits" if largest else
               "use a smaller d_model, batch or repeats, or fewer head counts")
    _validate.fits_this_process(4 * batch * d_model * (sum(token_counts) + 8 * max(token_counts)),
                                f"head_count_sweep's inputs (batch={batch}, token_counts={token_counts}, d_model={d_model})",
                                hint="use a smaller batch, d_model or token counts")
    layers = {h: TorchMultiHeadAttention(d_model, h, seed=seed) for h in head_counts}
    generator = torch.Generator().manual_seed(seed)
    inputs = {t: torch.randn(batch, t, d_model, generator=generator) for t in token_counts}  # (B, T, D)
    cells = [(i, j) for i in range(len(token_counts)) for j in range(len(head_counts))]
    times: dict[tuple[int, int], list[float]] = {c: [] for c in cells}
    with torch_threads(threads), torch.inference_mode():
        for r in range(repeats + 1):
            shift = r % len(cells)
            for i, j in cells[shift:] + cells[:shift]:
                layer, x = layers[head_counts[j]], inputs[token_counts[i]]
                start = time.perf_counter()
                layer(x, is_causal=True)
                if r:  # round 0 warms up
                    times[(i, j)].append(time.perf_counter() - start)
    shape = (len(token_counts), len(head_counts))
    seconds = np.zeros(shape)
    flops = np.zeros(shape, dtype=object)  # exact Python ints
    entries = np.zeros(shape, dtype=object)
    for i, j in cells:
        T, H = token_counts[i], head_counts[j]
        seconds[i, j] = np.median(times[(i, j)])
        flops[i, j] = batch * costs.attention_flops(d_model, H, T)["total"]
        entries[i, j] = costs.score_table_entries(H, T, batch=batch)
    kv = np.array([costs.kv_cache_bytes_per_token(1, h, d_model // h, 4) for h in head_counts], dtype=object)
    return HeadSweep(d_model, head_counts, token_counts, seconds, flops, entries, kv, repeats)


# -- decoding with and without a KV cache -------------------------------------------------


def _check_layer(layer) -> None:
    from .torch_attention import TorchMultiHeadAttention

    if not isinstance(layer, TorchMultiHeadAttention):
        raise TypeError(f"layer must be a TorchMultiHeadAttention, such as TorchMultiHeadAttention(64, 8); "
                        f"got {type(layer).__name__}")


def _check_x(x, layer, name: str = "x") -> tuple[int, int, int]:
    """Raise unless ``x`` is a finite (B, T, D) float tensor for ``layer``; return (B, T, D)."""
    import torch

    _check_layer(layer)
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor of shape (B, T, D); got {type(x).__name__} "
                        f"(convert it with torch.as_tensor)")
    if x.dim() != 3:
        hint = " (add a batch axis with x[None])" if x.dim() == 2 else ""
        raise ValueError(f"{name} has shape {tuple(x.shape)}; these functions take (B, T, D){hint}")
    if 0 in x.shape:
        raise ValueError(f"{name} is empty (shape {tuple(x.shape)}); it needs at least one sequence, one token and one feature")
    if not x.is_floating_point():
        raise TypeError(f"{name} must hold floating-point numbers; got dtype {x.dtype}")
    if x.shape[2] != layer.d_model:
        raise ValueError(f"{name} has D={x.shape[2]} (shape {tuple(x.shape)}); the layer expects d_model={layer.d_model}")
    if not torch.isfinite(x).all():
        raise _validate.not_finite(name, bool(x.isnan().any()))
    return tuple(x.shape)


def decode_cached(layer, x, *, chunk: int = 1, cache=None):
    """Feed ``x`` through ``layer`` ``chunk`` tokens at a time, keeping keys and values in a cache.

    Each step projects only the new tokens; their queries attend to every cached key.
    Returns ``(output, cache)``.

    Shapes:
        x: (B, T, D)
        returns: output (B, T, D); cache.k and cache.v (B, Hkv, max_tokens, Dh)
    """
    import torch

    B, T, D = _check_x(x, layer)
    chunk = _validate.positive_int(chunk, "chunk")
    _work_fits(B * _decode_flops(D, layer.n_heads, T), -(-T // chunk), f"decode_cached of x with T={T:,} tokens (chunk={chunk})",
               "decode fewer tokens, or larger chunks")
    if cache is None:
        cache = layer.new_kv_cache(batch=B, max_tokens=T, dtype=x.dtype, device=x.device)
    outputs = []
    with torch.inference_mode():
        for start in range(0, T, chunk):
            output, _ = layer(x[:, start:start + chunk], kv_cache=cache)  # (B, Tc, D)
            outputs.append(output)
    return torch.cat(outputs, dim=1), cache  # (B, T, D)


def decode_uncached(layer, x):
    """Generate token by token without a cache: step t recomputes the whole prefix x[:, :t+1].

    Shapes:
        x: (B, T, D)
        returns: output (B, T, D), row t taken from the pass over the first t + 1 tokens
    """
    import torch

    B, T, D = _check_x(x, layer)
    largest = _largest(lambda t: B * _uncached_flops(D, layer.n_heads, t) <= MAX_FLOPS, T)
    _work_fits(B * _uncached_flops(D, layer.n_heads, T), T, f"decode_uncached of x with T={T:,} tokens",
               f"at this batch and d_model, at most {min(largest, MAX_DECODE_STEPS):,} tokens fit")
    with torch.inference_mode():
        outputs = [layer(x[:, : t + 1], is_causal=True)[0][:, -1:] for t in range(T)]  # (B, 1, D) each
    return torch.cat(outputs, dim=1)  # (B, T, D)


@dataclass(frozen=True)
class DecodeComparison:
    """Cached against uncached decoding of one text: equal outputs, different cost."""

    n_tokens: int
    max_abs_diff_cached: float  # against the full causal pass
    max_abs_diff_uncached: float
    cached_s: float
    uncached_s: float
    full_pass_s: float
    cache_nbytes: int
    calculated_nbytes: int  # costs.kv_cache_bytes for the same shape

    @property
    def speedup(self) -> float:
        return self.uncached_s / self.cached_s


def compare_decoding(layer, x, *, repeats: int = 3, threads: int | None = 1) -> DecodeComparison:
    """Decode ``x`` with and without the cache; compare both with one full causal pass.

    Times are medians of ``repeats`` runs with ``threads`` torch threads (see ``torch_threads``).

    Shapes:
        x: (B, T, D) torch tensor
    """
    B, T, D = _check_x(x, layer)
    repeats = _validate.positive_int(repeats, "repeats")
    flops = repeats * B * (_decode_flops(D, layer.n_heads, T) + _uncached_flops(D, layer.n_heads, T)
                           + costs.attention_flops(D, layer.n_heads, T)["total"])
    largest = _largest(lambda t: repeats * B * 3 * _uncached_flops(D, layer.n_heads, t) <= MAX_FLOPS, T)
    _work_fits(flops, 2 * repeats * T, f"compare_decoding of x with T={T:,} tokens and repeats={repeats}",
               f"compare at most about {min(largest, MAX_DECODE_STEPS // (2 * repeats)):,} tokens")
    with torch_threads(threads):
        return _compare_decoding(layer, x, repeats)


def _compare_decoding(layer, x, repeats: int) -> DecodeComparison:
    import torch

    B, T, _ = x.shape
    repeats = _validate.positive_int(repeats, "repeats")
    with torch.inference_mode():
        full = layer(x, is_causal=True)[0]  # (B, T, D)
    cache = layer.new_kv_cache(batch=B, max_tokens=T, dtype=x.dtype, device=x.device)
    times: dict[str, list[float]] = {"cached": [], "uncached": [], "full": []}
    # Every run is timed, the first included (it also gives the outputs compared below);
    # the three ways alternate, so a burst of load from elsewhere hits all of them.
    for _ in range(repeats):
        start = time.perf_counter()
        cache.reset()
        cached, _ = decode_cached(layer, x, cache=cache)  # (B, T, D)
        times["cached"].append(time.perf_counter() - start)
        start = time.perf_counter()
        uncached = decode_uncached(layer, x)  # (B, T, D)
        times["uncached"].append(time.perf_counter() - start)
        start = time.perf_counter()
        with torch.inference_mode():
            layer(x, is_causal=True)
        times["full"].append(time.perf_counter() - start)
    return DecodeComparison(
        n_tokens=T,
        max_abs_diff_cached=float((cached - full).abs().max()),
        max_abs_diff_uncached=float((uncached - full).abs().max()),
        cached_s=float(np.median(times["cached"])),
        uncached_s=float(np.median(times["uncached"])),
        full_pass_s=float(np.median(times["full"])),
        cache_nbytes=int(cache.nbytes),
        calculated_nbytes=costs.kv_cache_bytes(1, cache.max_tokens, layer.n_kv_heads, layer.d_head, batch=B,
                                               bytes_per_value=x.element_size()),
    )


def _check_layouts_and_work(d_model, n_heads, kv_head_counts, n_tokens, runs_per_layer: int, what: str):
    """Check the layouts of a MHA/GQA/MQA comparison and refuse its work if it passes the limits.

    Returns ``(kv_head_counts, n_tokens)`` as ints; ``runs_per_layer``: decodes of the
    whole text per layer, warm-up included.
    """
    d_model, n_heads, _ = _validate.head_counts(d_model, n_heads)
    kv_head_counts = _validate.positive_ints(kv_head_counts, "kv_head_counts", f"({n_heads}, 4, 1)")
    for n_kv in kv_head_counts:
        _validate.head_counts(d_model, n_heads, n_kv)  # names a key/value head count that does not divide n_heads
    n_tokens = _validate.positive_int(n_tokens, "n_tokens")
    runs = runs_per_layer * len(kv_head_counts)
    largest = _largest(lambda t: runs * _decode_flops(d_model, n_heads, t) <= MAX_FLOPS, n_tokens)
    _work_fits(runs * _decode_flops(d_model, n_heads, n_tokens), runs * n_tokens,
               f"{what}, n_tokens={n_tokens:,}, d_model={d_model} and {len(kv_head_counts)} layers",
               f"with these settings at most n_tokens={min(largest, MAX_DECODE_STEPS // runs):,} fits")
    return kv_head_counts, n_tokens


# -- notebook 10, section 9: decoding time against bytes read, MHA / GQA / MQA ------------------------


def kv_sharing_decode(d_model: int = 256, n_heads: int = 16, kv_head_counts=(16, 4, 1), n_tokens: int = 128, *,
                      rounds: int = 7, seed: int = 0, threads: int | None = 1) -> list[dict]:
    """Decode one text with MHA, GQA and MQA layers in interleaved rounds; time it beside the bytes each step reads.

    Every layer decodes once to warm up (the first call of a fresh layer is the slowest);
    then each round decodes with every layer once, in an order that turns from round to
    round, so a burst of load from elsewhere hits all of them alike. One row per
    key/value head count: ``n_kv_heads``, ``kind``, ``cache_nbytes`` (the cache's
    tensors), ``calculated_nbytes`` (``costs.kv_cache_bytes``), ``bytes_read``
    (``costs.layer_decode_bytes``: weights, cache, total), ``ms_per_token`` (the median
    round) and ``ms_per_token_range`` (the fastest and slowest rounds).
    """
    import torch

    from .torch_attention import TorchMultiHeadAttention

    rounds = _validate.positive_int(rounds, "rounds")
    kv_head_counts, n_tokens = _check_layouts_and_work(d_model, n_heads, kv_head_counts, n_tokens, rounds + 1,
                                                       f"kv_sharing_decode with rounds={rounds}")
    words = longer_text(n_tokens)
    x = torch.from_numpy(text_vectors(words, d_model, seed=seed))[None]  # (1, T, D)
    layers, caches = [], []
    for n_kv in kv_head_counts:
        layer = TorchMultiHeadAttention(d_model, n_heads, n_kv_heads=n_kv, seed=seed)
        layers.append(layer)
        caches.append(layer.new_kv_cache(batch=1, max_tokens=n_tokens, dtype=x.dtype))

    def run(k):
        caches[k].reset()
        decode_cached(layers[k], x, cache=caches[k])

    times: list[list[float]] = [[] for _ in layers]
    with torch_threads(threads):
        for k in range(len(layers)):
            run(k)  # warm-up, and fills the cache
        for r in range(rounds):
            shift = r % len(layers)
            for k in list(range(shift, len(layers))) + list(range(shift)):
                start = time.perf_counter()
                run(k)
                times[k].append(time.perf_counter() - start)
    rows = []
    for layer, cache, seconds in zip(layers, caches, times):
        per_token_ms = 1000 * np.asarray(seconds) / n_tokens
        rows.append(dict(
            n_kv_heads=layer.n_kv_heads,
            kind="MHA" if layer.n_kv_heads == n_heads else ("MQA" if layer.n_kv_heads == 1 else "GQA"),
            cache_nbytes=int(cache.nbytes),
            calculated_nbytes=costs.kv_cache_bytes(1, n_tokens, layer.n_kv_heads, layer.d_head, bytes_per_value=4),
            bytes_read=costs.layer_decode_bytes(d_model, n_heads, layer.n_kv_heads, n_tokens, bytes_per_value=4),
            ms_per_token=float(np.median(per_token_ms)),
            ms_per_token_range=(float(per_token_ms.min()), float(per_token_ms.max())),
        ))
    return rows
