"""mha_core.pretrained.decoder_circuits: the induction search and head removal on SmolLM2, and its laws.

The numbers notebook 09 quotes are checked in tests/test_decoder_circuits_findings.py.
"""

from __future__ import annotations


import numpy as np
import pytest

from mha_core import circuits
from mha_core.pretrained import decoder_analysis as da
from mha_core.pretrained import decoder_circuits as dc



# --------------------------------------------------------------------------- without the model


def test_token_losses_are_the_cross_entropy_of_each_next_token():
    logits = np.log(np.array([[0.5, 0.25, 0.25], [0.1, 0.8, 0.1], [1 / 3, 1 / 3, 1 / 3]]))  # (T, V)
    ids = np.array([2, 0, 1])
    np.testing.assert_allclose(dc.token_losses(logits, ids), [-np.log(0.5), -np.log(0.8)])


def test_repeat_losses_read_the_first_repeat_and_skip_the_first_token_of_the_copy():
    L = 3
    losses = np.array([[1.0, 1.0, 1.0, 100.0, 2.0, 2.0]])  # column t predicts token t + 1; column L is the copy's first
    assert dc.repeat_losses(losses, L) == (1.0, 2.0)
    with pytest.raises(ValueError, match=r"\(B, 2 \* repeat_length\) = \(B, 8\)"):
        dc.repeat_losses(losses, 4)


def test_a_causal_head_puts_no_weight_on_later_tokens_and_an_even_full_head_half_of_the_rest():
    T = 6
    causal = np.broadcast_to(circuits.uniform_causal_weights(T), (2, 3, T, T))
    assert dc.weight_on_later_tokens(causal).max() == 0.0
    full = np.full((1, 1, T, T), 1 / T)
    np.testing.assert_allclose(dc.weight_on_later_tokens(full), [[(T - 1) / (2 * T)]])
    with pytest.raises(ValueError, match=r"\(L, H, T, T\)"):
        dc.weight_on_later_tokens(np.ones((2, 3, 4, 5)))


def test_the_decoders_previous_token_share_is_the_circuits_score_from_the_third_query():
    rng = np.random.default_rng(3)
    a = rng.random((4, 3, 7, 7))
    a /= a.sum(-1, keepdims=True)
    share = da.previous_token_share(a)
    for layer in range(4):
        np.testing.assert_allclose(share[layer], circuits.previous_token_score(a[layer][None], from_query=2))
    # From the second query (the default) the second query's weight on the first counts too.
    assert not np.allclose(share[0], circuits.previous_token_score(a[0][None]))


def test_a_non_model_is_refused_by_name():
    with pytest.raises(TypeError, match="load_smollm2"):
        dc.find_induction_heads("SmolLM2")


# --------------------------------------------------------------------------- with the model


@pytest.fixture(scope="module")
def search(smol):
    return dc.find_induction_heads(smol)


@pytest.fixture(scope="module")
def removal(smol, search):
    return dc.remove_induction_heads(smol, search)


def test_ordinary_tokens_are_words_with_a_leading_space(smol):
    ids = dc.ordinary_token_ids(smol)
    pieces = smol.pieces(ids)
    assert len(ids) > 1000 and ids.max() < dc.ORDINARY_BELOW
    assert all(p.startswith(" ") and p[1:].isalpha() and p[1:].islower() and len(p) >= 4 for p in pieces)


def test_repeated_words_are_bos_a_stretch_and_the_same_stretch_seeded(smol):
    ids = dc.repeated_word_ids(smol, 3, 5, seed=4)
    assert ids.shape == (3, 11) and (ids[:, 0] == smol.bos_id).all()
    np.testing.assert_array_equal(ids[:, 1:6], ids[:, 6:])
    assert np.isin(ids[:, 1:], dc.ordinary_token_ids(smol)).all()
    np.testing.assert_array_equal(ids, dc.repeated_word_ids(smol, 3, 5, seed=4))
    assert not np.array_equal(ids, dc.repeated_word_ids(smol, 3, 5, seed=5))


def test_the_search_scores_every_head_with_the_circuits_scores(smol, search):
    assert search.ids.shape == (dc.N_SEQUENCES, 1 + 2 * dc.REPEAT_LENGTH)
    assert search.induction.shape == search.previous_token.shape == (30, 9)
    assert 0 <= search.induction.min() and search.induction.max() <= 1
    # Recompute one head by hand: L19 H7 (index (18, 6)) on the first sequence.
    run = smol.forward(search.ids[0], keep=True)
    w = run.attentions[18, 6]  # (T, T)
    L, T = dc.REPEAT_LENGTH, search.ids.shape[1]
    by_hand = np.mean([w[t, t - L + 1] for t in range(T - L, T)])
    assert by_hand == pytest.approx(circuits.induction_score(run.attentions[18][None], L)[6])
    assert search.chance == circuits.chance_scores(T, L)
    assert search.top_induction(3)[0][2] == search.induction.max()
    assert search.count_above("induction", 0.0) == 270


def test_the_second_repeat_is_predicted_far_better_than_the_first(search):
    assert search.second_repeat_loss < search.first_repeat_loss / 3
    assert search.uniform_loss == pytest.approx(np.log(49152))


def test_switching_the_top_induction_heads_off_costs_more_than_random_heads_off(search, removal):
    assert removal.top_loss > removal.random_mean > removal.loss_on - 0.5
    assert removal.top_loss > removal.random_range[1]
    assert removal.loss_on == search.second_repeat_loss
    assert removal.top_heads == tuple((l, h) for l, h, _ in search.top_induction(dc.TOP_K))


def test_random_draws_are_k_distinct_heads_never_the_top_ones_and_seeded(smol, search, removal):
    assert len(removal.random_heads) == dc.N_DRAWS == len(removal.random_losses)
    for draw in removal.random_heads:
        assert len(set(draw)) == removal.k and not set(draw) & set(removal.top_heads)
    assert len(set(removal.random_heads)) == dc.N_DRAWS
    again = dc.remove_induction_heads(smol, search, k=1, n_draws=1, seed=0)
    assert again.random_heads == dc.remove_induction_heads(smol, search, k=1, n_draws=1, seed=0).random_heads


@pytest.mark.parametrize("call, error, words", [
    (lambda m, s: dc.remove_induction_heads(m, s, k=0), ValueError, "k=0"),
    (lambda m, s: dc.remove_induction_heads(m, s, k=270), ValueError, "k=270"),
    (lambda m, s: dc.remove_induction_heads(m, "search"), TypeError, "InductionSearch"),
    (lambda m, s: dc.remove_induction_heads(m, s, n_draws=0), ValueError, "n_draws"),
    (lambda m, s: dc.find_induction_heads(m, repeat_length=5000), ValueError, "repeat_length=5000"),
    (lambda m, s: dc.find_induction_heads(m, n_sequences=0), ValueError, "n_sequences"),
    (lambda m, s: dc.ordinary_token_ids(m, below=1), ValueError, "below=1"),
    (lambda m, s: s.count_above("stripe", 0.4), ValueError, "scores"),
])
def test_bad_input_is_refused_by_name(smol, search, call, error, words):
    with pytest.raises(error, match=words):
        call(smol, search)
