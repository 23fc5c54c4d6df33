"""Decoding with a KV cache against recomputing the whole prefix at every step.

One ``TorchMultiHeadAttention`` layer (D 256, H 8, batch 1, fp32, CPU, under
``torch.inference_mode()``) produces N tokens' outputs one token at a time, two ways:

    cached      cache = layer.new_kv_cache(1, N); for t: layer(x[:, t:t+1], kv_cache=cache)
                each step projects one token and attends to the t cached keys
    recompute   for t: layer(x[:, :t+1], is_causal=True) and keep the last row
                each step projects all t+1 tokens again: O(N^2) projections in all

torch runs on one thread here: a decoding step is too small to split across cores, and on
a shared machine a second thread mostly waits for the first (that made steps 100 times
slower under load). The two ways alternate in interleaved rounds (the order swapping each round); the
figure is the median time per full decode of N tokens, and the ratio is recompute /
cached, round by round (above 1: the cache is faster). Both ways' outputs are compared
with one full causal pass (the largest absolute difference is reported).
"""

from __future__ import annotations

from ._timing import interleaved, paired_ratio, summary

SHAPE = {"batch": 1, "d_model": 256, "n_heads": 8, "dtype": "float32"}
LENGTHS = (64, 256, 1024)
CACHED, RECOMPUTE = "cached", "recompute"


def build(n_tokens: int, *, seed: int = 0):
    """The layer, the input (1, N, D), and the two decoders as zero-argument callables returning (1, N, D)."""
    import torch

    from mha_core import TorchMultiHeadAttention

    layer = TorchMultiHeadAttention(SHAPE["d_model"], SHAPE["n_heads"], seed=seed, dtype=torch.float32).eval()
    generator = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(SHAPE["batch"], n_tokens, SHAPE["d_model"], generator=generator)  # (B, N, D)

    def cached():
        cache = layer.new_kv_cache(SHAPE["batch"], n_tokens)
        return torch.cat([layer(x[:, t : t + 1], kv_cache=cache).output for t in range(n_tokens)], dim=1)  # (B, N, D)

    def recompute():
        return torch.cat([layer(x[:, : t + 1], is_causal=True).output[:, -1:] for t in range(n_tokens)], dim=1)  # (B, N, D)

    return layer, x, {CACHED: cached, RECOMPUTE: recompute}


def compare(n_tokens: int, *, rounds: int, budget_s: float | None, log=print) -> dict:
    import torch

    layer, x, decoders = build(n_tokens)
    with torch.inference_mode():
        full = layer(x, is_causal=True).output  # (B, N, D)
        diffs = {name: float((fn() - full).abs().max()) for name, fn in decoders.items()}
        times = interleaved(decoders, rounds=rounds, warmup=0, budget_s=budget_s, min_rounds=1,
                            progress=lambda msg: log(f"  N={n_tokens}: {msg}"))
    cache_nbytes = layer.new_kv_cache(SHAPE["batch"], n_tokens).nbytes
    return {
        "n_tokens": n_tokens,
        "rounds": len(times[CACHED]),
        "seconds": {name: summary(ts) for name, ts in times.items()},
        "per_token_s": {name: summary(ts, scale=1.0 / n_tokens) for name, ts in times.items()},
        "speedup": paired_ratio(times, RECOMPUTE, CACHED),  # recompute / cached: above 1, the cache is faster
        "max_abs_diff_vs_full_pass": diffs,
        "cache_nbytes": cache_nbytes,
    }


def run(quick: bool, log=print, **_) -> dict:
    import torch

    torch.set_num_threads(1)
    out = {"shape": SHAPE, "torch_threads": torch.get_num_threads(), "device": "cpu", "lengths": {}}
    for n in LENGTHS:
        # Recomputing 1024 tokens takes seconds per decode on two cores: fewer rounds there.
        rounds = (2 if n < 1024 else 1) if quick else {64: 15, 256: 7, 1024: 3}[n]
        log(f"decoding N={n} (D={SHAPE['d_model']}, H={SHAPE['n_heads']}): {rounds} rounds")
        out["lengths"][str(n)] = compare(n, rounds=rounds, budget_s=None if quick else 120, log=log)
    return out
