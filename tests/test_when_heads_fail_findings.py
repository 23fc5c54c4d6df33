"""The claims notebook 08's prose makes about the 6-head toy model (seed 0), checked against the model.

The notebook prints these numbers live; this module keeps its prose from drifting away
from what the model computes.
"""

from __future__ import annotations

import pytest

pytest.importorskip("torch")

from mha_core.models import RELATIONS, ablation_accuracy, evaluation_batch, trained  # noqa: E402


@pytest.fixture(scope="module")
def six():
    return trained(n_heads=6, seed=0)


def test_head_3_is_named_a_previous_token_head_yet_cannot_do_the_job_alone(six):
    batch = evaluation_batch()
    previous = RELATIONS.relations.index("previous token")
    assert round(float(six.final.role_scores[2, previous]), 2) == 0.56
    assert six.final.role_scores[:, previous].argsort()[-3:].tolist() == [2, 5, 0]  # heads 3, 6, 1 name it

    def left(*off):
        return round(float(ablation_accuracy(six.model, batch, off)[previous]), 2)

    assert left(0) == left(5) == 0.89  # "only to about 0.9"
    assert left(0, 5) == 0.38  # head 3 alone: "falls to 0.38"
    assert left(0, 2, 5) == 0.15  # head 3 off as well
    assert round(1 / six.model.task.vocab_size, 2) == 0.08  # chance
    assert left(0, 5) < 0.4 < left(0)


def test_two_back_falls_to_about_0_4_with_head_2_off(six):
    batch = evaluation_batch()
    two_back = RELATIONS.relations.index("two back")
    assert round(float(ablation_accuracy(six.model, batch, (1,))[two_back]), 1) == 0.4
