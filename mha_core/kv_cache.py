"""The key/value cache: the keys and values of the tokens decoded so far (notebook 10).

``TorchMultiHeadAttention.new_kv_cache`` makes one; ``layer(x_chunk, kv_cache=cache)``
writes the chunk's keys and values into it and attends to everything written so far.
This module holds the cache itself; the layer checks that a cache fits it.

This module imports torch; ``import mha_core`` does not import it.
"""

from __future__ import annotations

import weakref

import torch

from ._cache import CacheLength


class KVCache(CacheLength):
    """The keys and values of the tokens decoded so far, in tensors allocated once.

    Make one with ``TorchMultiHeadAttention.new_kv_cache``; each call
    ``layer(x_chunk, kv_cache=cache)`` writes the chunk's keys and values at positions
    ``length .. length + Tc - 1`` and moves ``length`` on. ``nbytes`` is what the cache
    holds in memory, whatever ``length`` is.

    A cache belongs to the layer that made it: another layer, even one of the same
    shape, refuses it (its keys were projected with other parameters). It is for
    inference, under ``torch.no_grad()`` or ``torch.inference_mode()``.

    ``length`` can be set back to forget the last tokens (to try another continuation),
    to any value from 0 to ``written``; the next write then starts there and ``written``
    ends with it. It cannot be set past what was written since ``reset()``: those
    positions hold zeros or another sequence's keys, never this one's.

    Shapes:
        k, v: (B, Hkv, max_tokens, Dh); positions 0 .. length - 1 are filled
    """

    _length_name = "kv_cache.length"  # the name its errors give the setting

    def __init__(self, k: torch.Tensor, v: torch.Tensor, *, owner: torch.nn.Module | None = None):
        self.k, self.v = k, v  # (B, Hkv, max_tokens, Dh) each
        self._owner = None if owner is None else weakref.ref(owner)
        self._length = 0
        self._written = 0

    def belongs_to(self, layer) -> bool:
        """Whether ``layer``'s ``new_kv_cache`` made this cache (only that layer may write to it)."""
        return self._owner is not None and self._owner() is layer

    @property
    def written(self) -> int:
        """How many positions hold this sequence's keys and values (since ``reset()``)."""
        return self._written

    def reset(self) -> None:
        """Forget every token; the memory is kept and overwritten by the next calls."""
        self._length = self._written = 0

    def append(self, k: torch.Tensor, v: torch.Tensor):
        """Write new keys and values after the cached ones; return every key and value so far.

        Shapes:
            k, v: (B, Hkv, Tc, Dh)
            returns: k, v (B, Hkv, length + Tc, Dh), views of the cache
        """
        start, end = self.length, self.length + k.shape[2]
        if end > self.max_tokens:
            raise ValueError(
                f"kv_cache is full: it holds {start} of max_tokens={self.max_tokens} tokens and cannot take "
                f"{k.shape[2]} more; make a larger one with new_kv_cache(max_tokens=...) or reset() it"
            )
        self.k[:, :, start:end] = k  # (B, Hkv, Tc, Dh) into positions start .. end - 1
        self.v[:, :, start:end] = v
        self._length = self._written = end  # positions past end belonged to a continuation that was set back
        return self.k[:, :, :end], self.v[:, :, :end]  # (B, Hkv, end, Dh) each

    def __repr__(self) -> str:
        B, Hkv, _, Dh = self.k.shape
        return (f"KVCache(batch={B}, n_kv_heads={Hkv}, d_head={Dh}, length={self.length}, written={self.written}, "
                f"max_tokens={self.max_tokens}, dtype={self.k.dtype}, nbytes={self.nbytes})")
