"""Tests for mha_core._validate.heads_off: the one encoding of "which heads are off".

A bool array, True = off: shape (H,) for one layer, (L, H) for a model. Head indices
(one layer) and (layer, head) pairs (a model) are turned into it there, and only there.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mha_core import _validate
from mha_core._validate import heads_off


@given(st.integers(1, 12).flatmap(lambda H: st.tuples(st.just(H), st.sets(st.integers(0, H - 1)))))
def test_indices_and_the_bool_array_they_name_agree(case):
    H, off = case
    mask = np.zeros(H, dtype=bool)
    mask[list(off)] = True
    np.testing.assert_array_equal(heads_off(sorted(off), H), mask)
    np.testing.assert_array_equal(heads_off(mask, H), mask)
    np.testing.assert_array_equal(heads_off(mask.tolist(), H), mask)  # a list of bools is a mask, not indices
    np.testing.assert_array_equal(heads_off(np.array(sorted(off), dtype=np.int64), H), mask)


@given(st.integers(1, 6), st.integers(1, 12), st.data())
def test_pairs_and_the_bool_array_they_name_agree(L, H, data):
    pairs = data.draw(st.sets(st.tuples(st.integers(0, L - 1), st.integers(0, H - 1))), label="pairs")
    mask = np.zeros((L, H), dtype=bool)
    for layer, head in pairs:
        mask[layer, head] = True
    np.testing.assert_array_equal(heads_off(sorted(pairs), H, L), mask)
    np.testing.assert_array_equal(heads_off(frozenset(pairs), H, L), mask)
    np.testing.assert_array_equal(heads_off(mask, H, L), mask)


def test_none_means_every_head_on_and_the_input_is_never_shared():
    assert heads_off(None, 3).tolist() == [False, False, False]
    assert heads_off(None, 2, 2).shape == (2, 2) and not heads_off(None, 2, 2).any()
    mask = np.array([True, False])
    out = heads_off(mask, 2)
    out[1] = True
    assert mask.tolist() == [True, False]  # a copy, not the caller's array


def test_a_torch_bool_tensor_is_read_as_a_mask():
    torch = pytest.importorskip("torch")
    assert heads_off(torch.tensor([False, True, False]), 3).tolist() == [False, True, False]


@pytest.mark.parametrize("value, n_layers, error, message", [
    ([4], None, ValueError, "heads_off has head 4; valid heads are 0 to 3 (counted from 0)"),
    ([-1], None, ValueError, "heads_off has head -1; valid heads are 0 to 3"),
    ([1, 0, 1, 1], None, ValueError, "heads_off lists 1 twice; list each head once, or give a bool array of shape (4,)"),
    ([True, False], None, ValueError, "heads_off as a bool array must have shape (4,), one entry per head; got shape (2,)"),
    (np.ones(4), None, TypeError, "heads_off must be a bool array of shape (4,) (True = off) or head indices counted from 0, "
                                  "such as [0, 2]; got an array of dtype float64"),
    ([0.5], None, TypeError, "heads_off holds head indices, whole numbers counted from 0; got 0.5"),
    ([(0, 1)], None, TypeError, "heads_off holds head indices"),
    ("0 2", None, TypeError, "heads_off must be a bool array of shape (4,)"),
    (3, None, TypeError, "heads_off must be a bool array of shape (4,)"),
    ([(2, 0)], 2, ValueError, "heads_off has (2, 0); valid layers are 0 to 1 and heads 0 to 3 (counted from 0)"),
    ([3], 2, TypeError, "heads_off holds (layer, head) pairs of whole numbers; got 3"),
    ([(0, 1), (0, 1)], 2, ValueError, "heads_off lists (0, 1) twice"),
    ([[True, False, False, False], [True]], 2, ValueError, "its rows differ in length"),
    (np.zeros((2, 3), dtype=bool), 2, ValueError, "heads_off as a bool array must have shape (L, H) = (2, 4)"),
])
def test_a_bad_heads_off_names_itself_what_was_given_and_what_is_valid(value, n_layers, error, message):
    with pytest.raises(error, match=re.escape(message)):
        _validate.heads_off(value, 4, n_layers)
