"""Tests for mha_core.models.induction_analysis: the heads named by score, composition, ablation.

On the models notebook-style training gives (seed 0, the default budget): with a varying
repeat length head 0 of layer 0 is the previous-token head and the layer-1 heads are
induction heads; with a fixed one nothing composes.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from mha_core.models import induction_analysis as analysis  # noqa: E402
from mha_core.models.attention_only import AttentionOnlyModel  # noqa: E402
from mha_core.models.induction import InductionConfig, trained_induction  # noqa: E402


def test_head_scores_name_a_previous_token_head_and_an_induction_head_above_chance(varying):
    scores = analysis.head_scores(varying)
    assert scores.previous_token.shape == scores.induction.shape == (2, 2)
    assert scores.chance.previous_token == pytest.approx(0.117, abs=1e-3)
    assert scores.chance.induction == pytest.approx(0.053, abs=1e-3)
    heads = analysis.find_heads(scores)
    prev, ind = heads["previous_token"], heads["induction"]
    assert prev[0] == 0 and ind[0] == 1
    assert scores.previous_token[prev] > 3 * scores.chance.previous_token
    assert scores.induction[ind] > 10 * scores.chance.induction
    np.testing.assert_array_equal(scores.induction, varying.final.induction)  # the same measurement as training's


def test_the_previous_token_head_composes_with_the_induction_heads_through_their_keys(varying):
    comp = analysis.composition(varying)
    assert comp.k_composition.shape == comp.q_composition.shape == (1, 2, 2)
    prev = analysis.find_heads(analysis.head_scores(varying))["previous_token"][1]
    other = 1 - prev
    base = comp.baseline
    assert np.all(comp.k_composition[0, prev] > base.mean + 3 * base.std)  # into both layer-1 heads
    assert np.all(comp.k_composition[0, other] < base.mean)


def test_with_a_fixed_length_no_head_composes_above_the_random_baseline(fixed):
    comp = analysis.composition(fixed)
    assert np.all(comp.k_composition < comp.baseline.mean)
    assert analysis.head_scores(fixed).induction[1].max() > 0.8  # the stripe is there all the same


@pytest.mark.parametrize("ablation", ["zero", "mean"])
def test_switching_the_previous_token_head_off_breaks_induction_and_a_bystander_does_not(varying, ablation):
    effects = analysis.ablation_effects(varying, ablation)
    assert effects.induction.shape == effects.repeat_loss.shape == (2, 2)
    prev = analysis.find_heads(analysis.head_scores(varying))["previous_token"][1]
    bystander = 1 - prev
    assert effects.induction_on > 0.6 and effects.repeat_loss_on < 1.2
    assert effects.induction[0, prev] < 0.25  # falls back towards chance
    assert effects.repeat_loss[0, prev] > effects.repeat_loss_on + 1.5
    assert abs(effects.induction[0, bystander] - effects.induction_on) < 0.1  # nothing moves
    assert abs(effects.repeat_loss[0, bystander] - effects.repeat_loss_on) < 0.3


def test_zero_and_mean_ablation_differ_and_mean_takes_away_less(varying):
    zero, mean = analysis.ablation_effects(varying, "zero"), analysis.ablation_effects(varying, "mean")
    assert not np.allclose(zero.repeat_loss, mean.repeat_loss)
    assert zero.induction_on == mean.induction_on and zero.repeat_loss_on == mean.repeat_loss_on
    prev = analysis.find_heads(analysis.head_scores(varying))["previous_token"]
    assert mean.repeat_loss[prev] < zero.repeat_loss[prev]


def test_second_repeat_loss_is_low_only_when_the_model_has_learned(varying):
    from mha_core.models.induction import evaluation_tokens

    tokens = evaluation_tokens()
    assert analysis.second_repeat_loss(varying, tokens) < 1.2
    assert analysis.second_repeat_loss(AttentionOnlyModel(seed=0), tokens) > 3.0


@pytest.mark.parametrize(("call", "error", "words"), [
    (lambda r: analysis.head_scores("model"), TypeError, "model must be an AttentionOnlyModel or a TrainedInduction"),
    (lambda r: analysis.ablation_effects(r, "half"), ValueError, "ablation='half' is not a valid choice"),
    (lambda r: analysis.ablation_effects(r.model, "mean"), TypeError, "trained must be a TrainedInduction"),
    (lambda r: analysis.ablation_effects(r, tokens=torch.zeros(2, 30, dtype=torch.long)), ValueError, "1 <= T <= 25"),
])
def test_bad_input_raises_errors_naming_the_parameter(varying, call, error, words):
    with pytest.raises(error, match=words):
        call(varying)


def test_another_seed_finds_the_copy_another_way_through_the_queries():
    # Seed 1 forms induction heads without a previous-token head: a layer-0 head looks at the
    # earlier copy of the current token, and the layer-1 heads read it through their queries
    # (Q-composition), not their keys. Which circuit forms moves with the seed, as roles do in 06.
    result = trained_induction(InductionConfig(seed=1))
    scores = analysis.head_scores(result)
    comp = analysis.composition(result)
    base = comp.baseline
    assert scores.induction[1].min() > 0.6 and scores.previous_token[0].max() < 0.2
    assert np.all(comp.k_composition < base.mean)
    assert np.all(comp.q_composition[0, 0] > base.mean + 3 * base.std)
    zero = analysis.ablation_effects(result, "zero")
    assert zero.induction[0, 0] < 0.25 and zero.repeat_loss[0, 0] > zero.repeat_loss_on + 1.5
