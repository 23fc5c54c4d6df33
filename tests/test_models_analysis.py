"""Tests for mha_core.models.analysis: roles on hand-built patterns, similarity, ablation."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from hypothesis.extra.numpy import arrays  # noqa: E402

from mha_core.models.analysis import (  # noqa: E402
    ROLE_THRESHOLD,
    ablation_accuracy,
    accuracy,
    duplicate_pairs,
    greedy_removal,
    head_roles,
    head_similarity,
    key_similarity,
    role_findings,
    role_scores,
    single_head_removal,
)
from mha_core.models.tasks import RELATIONS  # noqa: E402
from mha_core.models.toy import ToyModel  # noqa: E402

T = 12


def pattern(back: int) -> np.ndarray:
    """A causal (T, T) pattern putting all weight ``back`` positions back (on itself where impossible)."""
    w = np.zeros((T, T))
    for t in range(T):
        w[t, t - back if t >= back else t] = 1.0
    return w


def uniform_causal() -> np.ndarray:
    w = np.tril(np.ones((T, T)))
    return w / w.sum(1, keepdims=True)


@pytest.fixture(scope="module")
def batch():
    return RELATIONS.batch(32, seed=0)


def test_hand_built_heads_get_the_roles_they_were_built_for(batch):
    B = batch.tokens.shape[0]
    heads = np.stack([pattern(2), uniform_causal(), pattern(1)])  # (H, T, T): two back, nothing, previous
    weights = np.broadcast_to(heads, (B, 3, T, T))
    scores = role_scores(weights, batch.target_positions)  # (H, R)
    assert scores.shape == (3, 3)
    assert scores[0, 1] == pytest.approx(1.0) and scores[2, 0] == pytest.approx(1.0)
    assert scores[0, 0] == pytest.approx(0.0) and scores[2, 1] == pytest.approx(0.0)
    assert head_roles(scores, RELATIONS.relations) == ["two back", "none", "previous token"]
    assert role_findings(scores, RELATIONS.relations)[2] == "head 3 puts 1.00 of its weight on the previous token target"
    assert "serves no single relation" in role_findings(scores, RELATIONS.relations)[1]


def test_a_head_on_the_largest_token_scores_one_for_largest_so_far(batch):
    # Put each query's weight on the first position holding the largest token so far.
    tokens = batch.tokens.numpy()
    B = tokens.shape[0]
    w = np.zeros((B, 1, T, T))
    for b in range(B):
        for t in range(T):
            w[b, 0, t, int(np.argmax(tokens[b, : t + 1]))] = 1.0
    scores = role_scores(w, batch.target_positions)
    assert scores[0, 2] == pytest.approx(1.0)


def test_role_threshold_is_stated_and_applied():
    assert ROLE_THRESHOLD == 0.5
    scores = np.array([[0.49, 0.2, 0.1], [0.51, 0.1, 0.1]])
    assert head_roles(scores, ("a", "b", "c")) == ["none", "a"]


def test_identical_heads_have_similarity_zero(batch):
    w = np.random.default_rng(0).random((4, 1, T, T)) * np.tril(np.ones((T, T)))
    w /= w.sum(-1, keepdims=True)
    weights = np.concatenate([w, w, np.broadcast_to(pattern(1), (4, 1, T, T))], axis=1)  # heads 0 and 1 the same
    s = head_similarity(weights)
    assert s.shape == (3, 3) and s[0, 1] == pytest.approx(0.0, abs=1e-12)
    assert s[0, 2] > 0.1 and np.allclose(s, s.T) and np.all(np.diag(s) == 0)
    assert duplicate_pairs(s) == [(0, 1, pytest.approx(0.0, abs=1e-12))]


def test_heads_that_never_overlap_have_similarity_one():
    weights = np.stack([pattern(1), pattern(0)])[None]  # previous vs self, (1, 2, T, T)
    s = head_similarity(weights)
    assert s[0, 1] == pytest.approx((T - 1) / T)  # every query but the first (both on itself there)


@given(arrays(np.float64, (2, 3, 4, 4), elements=st.floats(0.01, 1.0)))
def test_similarity_is_symmetric_and_between_zero_and_one(raw):
    w = raw / raw.sum(-1, keepdims=True)
    s = head_similarity(w)
    assert np.allclose(s, s.T) and np.all((s >= 0) & (s <= 1))


def test_accuracy_skips_undefined_positions():
    logits = torch.zeros(1, 1, 3, 4)
    logits[0, 0, :, 2] = 1.0  # always predicts class 2
    targets = torch.tensor([[[-100, 2, 1]]])
    assert accuracy(logits, targets).tolist() == [0.5]


def test_ablation_with_every_head_off_uses_only_the_residual_path(batch):
    model = ToyModel(3, d_model=12, seed=0).eval()
    acc_off = ablation_accuracy(model, batch, [0, 1, 2])
    with torch.no_grad():
        x = model.embed(batch.tokens)
        h = x + model.attention.b_out
        logits = torch.stack([r(h) for r in model.readouts])
    assert np.allclose(acc_off, accuracy(logits, batch.targets))
    assert np.allclose(ablation_accuracy(model, batch, []), accuracy(model(batch.tokens).logits, batch.targets))
    with pytest.raises(ValueError, match=r"heads_off has head 3; valid heads are 0 to 2 \(counted from 0\)"):
        ablation_accuracy(model, batch, [3])


def test_single_and_greedy_removal_cover_every_head(batch):
    model = ToyModel(3, d_model=12, seed=0).eval()
    assert single_head_removal(model, batch).shape == (3, 3)
    steps = greedy_removal(model, batch)
    assert [len(off) for off, _ in steps] == [0, 1, 2, 3] and sorted(steps[-1][0]) == [0, 1, 2]
    assert np.allclose(steps[-1][1], ablation_accuracy(model, batch, [0, 1, 2]))


def test_key_similarity_is_one_on_the_token_itself():
    model = ToyModel(4, d_model=16, seed=0)
    s = key_similarity(model, 7)
    assert s.shape == (4, 12) and np.allclose(s[:, 7], 1.0) and np.all(np.abs(s) <= 1 + 1e-9)
    with pytest.raises(ValueError, match="0..11"):
        key_similarity(model, 12)


# --------------------------------------------------------------------------- baselines: what a share or an accuracy means


def exact_largest_so_far_without_attention(V=12, T=12):
    """The best guess of max(x_0..x_t) from x_t and t alone, for iid uniform tokens, averaged (exact)."""
    acc = []
    for t in range(T):
        for x in range(V):
            probs = [((m + 1) / V) ** t - ((m / V) ** t if m > x else 0.0) for m in range(x, V)]
            acc.append(max(probs))
    return float(np.mean(acc))


def test_a_head_that_looks_nowhere_in_particular_gets_these_shares(batch):
    from mha_core.models.analysis import uniform_head_role_scores

    share = uniform_head_role_scores(batch.target_positions)  # (R,)
    B = batch.tokens.shape[0]
    expected = role_scores(np.broadcast_to(uniform_causal(), (B, 1, T, T)), batch.target_positions)[0]
    assert np.allclose(share, expected)
    # previous token: mean over t = 1..11 of 1 / (t + 1); two back: over t = 2..11
    assert share[0] == pytest.approx(np.mean([1 / (t + 1) for t in range(1, T)]))
    assert share[1] == pytest.approx(np.mean([1 / (t + 1) for t in range(2, T)]))


def test_a_purely_positional_head_gets_about_030_of_largest_so_far_by_chance():
    from mha_core.models.analysis import positional_role_scores

    big = RELATIONS.batch(2048, seed=7)
    shares = positional_role_scores(big.target_positions)  # (R,) heads on t-1, t-2 and itself
    assert shares.shape == (3, 3)
    assert np.allclose(np.diag(shares)[:2], 1.0)
    assert np.all(np.abs(shares[:, 2] - 0.30) < 0.02)


def test_the_best_guess_without_attention_matches_the_exact_value():
    from mha_core.models.analysis import chance_accuracy, no_attention_accuracy

    batch = RELATIONS.batch(4096, seed=3)
    acc = no_attention_accuracy(RELATIONS, batch)
    assert acc.shape == (3,)
    assert np.allclose(acc[:2], 1 / 12, atol=0.01)  # tokens are independent: the current one says nothing
    assert acc[2] == pytest.approx(exact_largest_so_far_without_attention(), abs=0.015)
    assert np.allclose(chance_accuracy(RELATIONS), 1 / 12)


def test_an_untrained_readout_is_no_better_than_the_best_guess_without_attention(batch):
    # the baseline is a ceiling for every model whose heads are all off, whatever its read-out learned
    from mha_core.models.analysis import no_attention_accuracy

    model = ToyModel(3, d_model=12, seed=0).eval()
    off = ablation_accuracy(model, batch, [0, 1, 2])
    assert np.all(off <= no_attention_accuracy(RELATIONS, batch) + 0.05)


def test_share_against_removal_lines_up_shares_with_what_switching_off_costs(batch):
    from mha_core.models.analysis import removal_cost

    model = ToyModel(3, d_model=12, seed=0).eval()
    cost = removal_cost(model, batch)  # (H, R)
    full = ablation_accuracy(model, batch, [])
    assert np.allclose(cost, full[None] - single_head_removal(model, batch))
