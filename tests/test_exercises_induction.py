"""Tests for mha_classroom.exercises.induction: the induction-score exercise names each classic mistake.

tests/test_exercises.py plants every row of the table (and runs the stub, the solution
and the reference through the shared checks); here the mistakes are written the way a
learner writes them, with loops, np.diagonal and index arrays, and each must get its name.
"""

from __future__ import annotations

import numpy as np
import pytest

from mha_classroom import exercises
from mha_classroom.exercises import induction
from mha_core import circuits, solutions


def loop_score(weights, repeat_length, *, shift=1, first_query=None):
    """A learner's loops: for each head, average weights[b, h, t, t - L + shift] over b and the queries."""
    B, H, T, _ = weights.shape
    start = T - repeat_length if first_query is None else first_query(T, repeat_length)
    scores = np.zeros(H)
    for h in range(H):
        total, n = 0.0, 0
        for b in range(B):
            for t in range(start, T):
                total += weights[b, h, t, t - repeat_length + shift]
                n += 1
        scores[h] = total / n
    return scores


def diagonal_score(weights, repeat_length):
    """ARENA's form: the mean of the whole diagonal at offset -(L - 1), first copy included."""
    return np.diagonal(weights, offset=-repeat_length + 1, axis1=2, axis2=3).mean(axis=(0, 2))


def upper_diagonal_score(weights, repeat_length):
    return np.diagonal(weights, offset=repeat_length - 1, axis1=2, axis2=3).mean(axis=(0, 2))


def swapped_index_score(weights, repeat_length):
    T = weights.shape[-1]
    queries = np.arange(T - repeat_length, T)
    return weights[:, :, queries - repeat_length + 1, queries].mean(axis=(0, 2))  # [key, query]: above the diagonal


def first_repeat_loop(weights, repeat_length):
    """Every query from the start of the first copy, where t - L + 1 is still inside the sequence."""
    return loop_score(weights, repeat_length, first_query=lambda T, L: L - 1)


def summed_score(weights, repeat_length):
    T = weights.shape[-1]
    q = np.arange(T - repeat_length, T)
    return weights[:, :, q, q - repeat_length + 1].sum(axis=2).mean(axis=0)


def batch_kept(weights, repeat_length):
    T = weights.shape[-1]
    q = np.arange(T - repeat_length, T)
    return weights[:, :, q, q - repeat_length + 1].mean(axis=-1)


LEARNER_MISTAKES = [
    (lambda w, L: loop_score(w, L, shift=0), "offset_by_one", "key t - 5. An induction head looks one step further"),
    (lambda w, L: loop_score(w, L, shift=2), "offset_by_one", "key t - 5 + 2, one step past"),
    (diagonal_score, "counted_first_repeat", "whole diagonal key = query - 4 starts at query 4"),
    (first_repeat_loop, "counted_first_repeat", "the last 5 positions (6 to T - 1 here)"),
    (upper_diagonal_score, "wrong_diagonal", "Your scores are 0 for every head"),
    (swapped_index_score, "wrong_diagonal", "key = query - 5 + 1"),
    (summed_score, "summed_not_averaged", "5 times too large"),
    (batch_kept, "kept_batch_axis", "shape (B, H) = (2, 3)"),
]


@pytest.mark.parametrize(("fn", "mistake", "words"), LEARNER_MISTAKES, ids=[m[1] + str(i) for i, m in enumerate(LEARNER_MISTAKES)])
def test_a_learners_mistake_is_named(fn, mistake, words):
    result = exercises.evaluate("induction_score", fn)
    assert (result.status, result.mistake) == ("mistake", mistake), result.message
    assert words in result.message


def test_a_learners_loops_pass():
    assert exercises.evaluate("induction_score", loop_score).passed


def test_the_solution_is_the_reference_on_every_case():
    for case in induction.cases():
        np.testing.assert_allclose(solutions.my_induction_score(**case.args), circuits.induction_score(**case.args))


def test_the_cases_are_causal_weights_of_several_shapes():
    shapes = set()
    for case in induction.cases():
        w = case.args["weights"]
        np.testing.assert_allclose(w.sum(-1), 1.0)
        assert np.all(np.triu(w, 1) == 0)
        assert w.shape[-1] >= 2 * case.args["repeat_length"]
        shapes.add(w.shape)
    assert len(shapes) == len(induction.cases()) >= 5


def test_each_mistake_differs_from_the_answer_on_the_case_it_is_named_on():
    ex = exercises._EXERCISES["induction_score"]
    for row in ex.mistakes:
        case = ex.cases()[row.case]
        planted = np.asarray(row.planted(**case.args))
        expected = circuits.induction_score(**case.args)
        assert planted.shape != expected.shape or not np.allclose(planted, expected), row.name


def test_the_stub_keeps_the_hints_and_raises():
    stub = exercises.stub_source("induction_score")
    assert "raise NotImplementedError" in stub and "t - L + 1" in stub
    assert "stripe = weights" not in stub
    assert exercises.catalogue()["induction_score"]["mistakes"][:2] == ("kept_batch_axis", "offset_by_one")
