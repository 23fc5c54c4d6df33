"""Tests for mha_core.models.tasks: shapes, determinism, and targets against a plain loop."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from mha_core.models.tasks import IGNORE, LAST_MATCH, RELATIONS, SEQ_LEN, VOCAB_SIZE, get_task  # noqa: E402


def relations_by_loop(seq):
    """Targets and target positions of previous token, two back, largest so far, one position at a time."""
    T = len(seq)
    targets = [[IGNORE] * T for _ in range(3)]
    positions = [[[False] * T for _ in range(T)] for _ in range(3)]
    for t in range(T):
        if t >= 1:
            targets[0][t] = seq[t - 1]
            positions[0][t][t - 1] = True
        if t >= 2:
            targets[1][t] = seq[t - 2]
            positions[1][t][t - 2] = True
        best = max(seq[: t + 1])
        targets[2][t] = best
        for j in range(t + 1):
            positions[2][t][j] = seq[j] == best
    return targets, positions


def last_match_by_loop(seq):
    T = len(seq)
    targets, positions = [0] * T, [[False] * T for _ in range(T)]
    for t in range(T):
        for j in range(t - 1, -1, -1):
            if seq[j] == seq[t]:
                targets[t] = t - j
                positions[t][j] = True
                break
    return [targets], [positions]


def test_batch_shapes_and_token_range():
    batch = RELATIONS.batch(5, seed=0)
    assert batch.tokens.shape == (5, SEQ_LEN) and batch.tokens.dtype == torch.long
    assert batch.targets.shape == (3, 5, SEQ_LEN)
    assert batch.target_positions.shape == (3, 5, SEQ_LEN, SEQ_LEN) and batch.target_positions.dtype == torch.bool
    assert 0 <= batch.tokens.min() and batch.tokens.max() < VOCAB_SIZE
    match = LAST_MATCH.batch(4, seed=0)
    assert match.targets.shape == (1, 4, SEQ_LEN) and match.target_positions.shape == (1, 4, SEQ_LEN, SEQ_LEN)


def test_same_seed_same_batch_and_another_seed_another():
    a, b, c = RELATIONS.batch(8, seed=3), RELATIONS.batch(8, seed=3), RELATIONS.batch(8, seed=4)
    assert torch.equal(a.tokens, b.tokens) and torch.equal(a.targets, b.targets)
    assert not torch.equal(a.tokens, c.tokens)


def test_batches_leave_the_global_rng_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    RELATIONS.batch(4, seed=1)
    assert torch.equal(torch.rand(3), expected)


@given(st.lists(st.integers(0, VOCAB_SIZE - 1), min_size=1, max_size=SEQ_LEN))
def test_relation_targets_match_a_plain_loop(seq):
    batch = RELATIONS.from_tokens(seq)
    targets, positions = relations_by_loop(seq)
    assert batch.targets[:, 0].tolist() == targets
    assert batch.target_positions[:, 0].tolist() == positions


@given(st.lists(st.integers(0, VOCAB_SIZE - 1), min_size=1, max_size=SEQ_LEN))
def test_last_match_targets_match_a_plain_loop(seq):
    batch = LAST_MATCH.from_tokens(seq)
    targets, positions = last_match_by_loop(seq)
    assert batch.targets[:, 0].tolist() == targets
    assert batch.target_positions[:, 0].tolist() == positions


def test_every_target_position_is_causal():
    positions = RELATIONS.batch(16, seed=0).target_positions  # (R, B, T, T)
    future = torch.ones(SEQ_LEN, SEQ_LEN, dtype=torch.bool).triu(1)
    assert not (positions & future).any()


@pytest.mark.parametrize(("kwargs", "error", "words"), [
    ({"seed": 1.5}, TypeError, "seed must be a whole number"),
    ({"seed": -1}, ValueError, "seed=-1"),
    ({"seed": True}, TypeError, "seed"),
])
def test_bad_seeds_are_named(kwargs, error, words):
    with pytest.raises(error, match=words):
        RELATIONS.batch(2, **kwargs)


def test_bad_tokens_and_task_names_are_named():
    with pytest.raises(ValueError, match="0..11"):
        RELATIONS.from_tokens([0, 12])
    with pytest.raises(ValueError, match="valid tasks are 'relations', 'last match'"):
        get_task("copy")
    with pytest.raises(ValueError, match="batch_size"):
        RELATIONS.batch(0)
