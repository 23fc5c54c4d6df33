"""What the two key/value caches share: the torch layer's ``KVCache`` and SmolLM2's ``DecoderKVCache``.

Both hold ``k`` and ``v`` arrays with positions on axis 2, allocated once, and count
``length`` (the tokens cached) and ``_written`` (the positions written since the last
reset). ``length`` can be set back, never past ``_written``: those positions hold zeros
or another sequence's keys. This module imports neither torch nor the decoder.
"""

from __future__ import annotations

from . import _validate


class CacheLength:
    """``length`` (settable back to forget the last tokens), ``max_tokens`` and ``nbytes`` of a cache.

    Subclasses set ``k``, ``v``, ``_length`` and ``_written``, and name the setting in errors
    with ``_length_name``.

    Shapes:
        k, v: (..., ..., max_tokens, Dh) each
    """

    _length_name = "cache.length"

    @property
    def length(self) -> int:
        """How many tokens the cache holds: the next token (or chunk) is written at this position."""
        return self._length

    @length.setter
    def length(self, value) -> None:
        # Set back to forget the last tokens (to try another continuation); never past what was written.
        self._length = _validate.int_in_range(value, self._length_name, 0, self._written,
                                              meaning=" (the tokens written since reset())")

    @property
    def max_tokens(self) -> int:
        return self.k.shape[2]

    @property
    def nbytes(self) -> int:
        """Bytes the key and value arrays hold, whatever ``length`` is."""
        return self.k.nbytes + self.v.nbytes
