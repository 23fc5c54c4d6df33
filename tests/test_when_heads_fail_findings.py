"""The claims notebook 08's prose makes about the 6-head toy model (seed 0), checked against the model.

The notebook prints these numbers live; this module keeps its prose from drifting away
from what the model computes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")

from mha_core.models import RELATIONS, ablation_accuracy, evaluation_batch, trained  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


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


# --------------------------------------------------------------------------- the bottleneck sweep, read from its files


def _prose_08() -> str:
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / "08_when_heads_fail.ipynb", as_version=4)
    return " ".join(" ".join(c.source.split()) for c in nb.cells if c.cell_type == "markdown")


def test_what_08_says_about_the_bottleneck_sweep_and_its_diagnosis():
    from mha_core.models import load_sweep
    from mha_core.models.bottleneck import load_diagnosis

    sweep, diagnosis = load_sweep(), load_diagnosis()
    prose = _prose_08()
    assert round(sweep["seconds"], -1) == 1140 and round(sweep["seconds"] / 60) == 19
    assert "18 trainings: 1,140 s (19 minutes) on two cores, as the file records" in prose
    assert "several minutes" not in prose
    one_head = [run for run in diagnosis["runs"] if run["n_heads"] == 1]
    no_match = [run["accuracy_by_case"]["no earlier match"] for run in one_head]
    assert (f"{min(no_match):.2%}", f"{max(no_match):.2%}") == ("99.80%", "99.95%") and max(no_match) < 1
    assert 'One head gets 99.80-99.95% of the "no match" positions right' in prose
    one_match = [run["accuracy_by_case"]["one earlier match"] for run in one_head]
    assert (f"{min(one_match):.0%}", f"{max(one_match):.0%}") == ("33%", "37%")
    assert "**What did one wide head learn?**" in prose and "Why is one wide head the worst setting?" not in prose
    assert "This shows what the wide head failed to learn, not why." in prose


def test_quick_check_08_gives_one_figure_for_48_heads():
    import json

    from mha_core.models import load_sweep

    row = next(r for r in load_sweep()["rows"] if r["n_heads"] == 48)
    assert round(row["mean"], 2) == 0.84
    assert (round(min(row["accuracy"]), 2), round(max(row["accuracy"]), 2)) == (0.83, 0.85)
    bank = json.loads((ROOT / "data" / "quizzes" / "08.json").read_text())
    q = next(q for q in bank["questions"] if q["id"] == "08-toy-sweep")
    text = " ".join(o["feedback"] for o in q["options"])
    assert "0.84 on average (0.83 to 0.85 by seed)" in text and "0.84 with 48" in text and "near 0.83" not in text
