"""mha_core._cache: the length, max_tokens and nbytes both key/value caches share."""

from __future__ import annotations

import numpy as np
import pytest

from mha_core._cache import CacheLength


class _Cache(CacheLength):
    _length_name = "test_cache.length"

    def __init__(self, max_tokens: int, written: int):
        self.k = np.zeros((2, 3, max_tokens, 4), dtype=np.float32)  # (L, Hkv, max_tokens, Dh)
        self.v = np.zeros((2, 3, max_tokens, 4), dtype=np.float32)
        self._length = self._written = written


def test_length_can_be_set_back_to_any_written_position():
    cache = _Cache(max_tokens=8, written=5)
    for value in range(6):
        cache.length = np.int64(value)
        assert cache.length == value and type(cache.length) is int


def test_length_past_what_was_written_is_refused_by_the_subclass_name():
    cache = _Cache(max_tokens=8, written=2)
    with pytest.raises(ValueError, match=r"test_cache\.length=3 is too large.*from 0 to 2"):
        cache.length = 3
    with pytest.raises(TypeError, match=r"test_cache\.length must be a whole number"):
        cache.length = "1"
    assert cache.length == 2


def test_max_tokens_and_nbytes_come_from_the_arrays():
    cache = _Cache(max_tokens=8, written=0)
    assert cache.max_tokens == 8
    assert cache.nbytes == 2 * (2 * 3 * 8 * 4 * 4)
