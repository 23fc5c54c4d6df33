"""The running sentence and the seeded layers the notebooks share (mha_core.examples)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from mha_core import examples
from mha_core.attention import MultiHeadAttention


def test_the_running_sentence_has_six_word_tokens():
    assert examples.RUNNING_SENTENCE == "the cache key changed after deploy"
    assert examples.TOKENS == ("the", "cache", "key", "changed", "after", "deploy")


@pytest.mark.parametrize("d_model", [1, 4, 8, 64])
def test_token_vectors_have_one_row_per_token(d_model):
    vectors = examples.token_vectors(d_model)
    assert vectors.shape == (6, d_model)
    assert vectors.dtype == np.float64
    assert np.all(np.isfinite(vectors))


def test_token_vectors_are_fixed_by_the_seed():
    assert np.array_equal(examples.token_vectors(8, seed=0), examples.token_vectors(8, seed=0))
    assert np.array_equal(examples.token_vectors(), examples.token_vectors(8, 0))
    assert not np.allclose(examples.token_vectors(8, seed=0), examples.token_vectors(8, seed=1))
    # The same recipe on any machine: numpy's default Generator, seed 0, standard normal.
    expected = np.random.default_rng(0).standard_normal((6, 8))
    assert np.array_equal(examples.token_vectors(8, seed=0), expected)


def test_token_vectors_look_like_unit_variance_features():
    vectors = examples.token_vectors(256, seed=3)
    assert abs(vectors.mean()) < 0.1
    assert 0.85 < vectors.std() < 1.15


def test_token_vectors_refuse_a_bad_width():
    with pytest.raises(ValueError, match=re.escape("d_model=0 is too small; d_model must be at least 1")):
        examples.token_vectors(0)
    with pytest.raises(TypeError, match=re.escape("d_model must be a whole number of at least 1; got 8.0")):
        examples.token_vectors(8.0)


# --- the hand-set sketch -------------------------------------------------------------------------


def test_hand_set_weights_are_three_heads_of_rows_that_sum_to_one():
    weights = examples.hand_set_weights()
    assert weights.shape == (3, 6, 6)
    assert np.all(weights >= 0)
    np.testing.assert_allclose(weights.sum(axis=-1), np.ones((3, 6)), rtol=0, atol=1e-15)


def test_hand_set_weights_point_where_the_labels_say():
    weights = examples.hand_set_weights()
    tokens = examples.TOKENS
    assert len(examples.HAND_SET_HEADS) == 3
    for h, (label, targets) in enumerate(examples.HAND_SET_HEADS):
        assert label.startswith(f"head {h + 1}:")
        for query in range(len(tokens)):
            looked_at = {tokens[k] for k in np.flatnonzero(weights[h, query])}
            if targets:
                # Every query spreads its weight evenly over the named tokens, and only those.
                assert looked_at == set(targets), (label, tokens[query])
                for word in targets:
                    assert weights[h, query, tokens.index(word)] == pytest.approx(1 / len(targets))
                assert all(f"'{word}'" in label for word in targets)
            else:
                assert looked_at == {tokens[query]}, (label, tokens[query])


def test_hand_set_heads_name_head_1_cache_and_key_and_head_2_deploy():
    weights = examples.hand_set_weights()
    cache, key, deploy = (examples.TOKENS.index(w) for w in ("cache", "key", "deploy"))
    assert np.all(weights[0][:, [cache, key]] == 0.5)
    assert np.all(weights[1][:, deploy] == 1.0)
    assert np.array_equal(weights[2], np.eye(6))


# --- the demo layer ---------------------------------------------------------------------------------


def test_demo_layer_is_the_same_for_the_same_seed():
    a, b = examples.demo_layer(8, 2, seed=4), examples.demo_layer(8, 2, seed=4)
    for name in ("w_q", "w_k", "w_v", "w_o", "b_q", "b_k", "b_v", "b_o"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    x = examples.token_vectors(8)
    assert np.array_equal(a(x).output, b(x).output)
    assert not np.allclose(examples.demo_layer(8, 2, seed=5).w_q, a.w_q)


def test_demo_layer_scales_only_the_query_and_key_weights_by_the_sharpness():
    plain = MultiHeadAttention(8, 2, seed=7)
    sharp = examples.demo_layer(8, 2, seed=7, sharpness=3.0)
    np.testing.assert_allclose(sharp.w_q, 3.0 * plain.w_q, rtol=1e-15)
    np.testing.assert_allclose(sharp.w_k, 3.0 * plain.w_k, rtol=1e-15)
    assert np.array_equal(sharp.w_v, plain.w_v) and np.array_equal(sharp.w_o, plain.w_o)
    # Sharper scores: q.k grows by sharpness^2, so the weights move away from uniform.
    x = examples.token_vectors(8)
    np.testing.assert_allclose(sharp(x).scores, 9.0 * plain(x).scores, rtol=1e-12, atol=1e-12)
    assert sharp(x).weights.max() > plain(x).weights.max()


def test_demo_layer_passes_the_head_layout_on():
    layer = examples.demo_layer(16, 4, n_kv_heads=2, seed=0)
    assert (layer.d_model, layer.n_heads, layer.n_kv_heads, layer.d_head) == (16, 4, 2, 4)
    result = layer(examples.token_vectors(16))
    assert result.weights.shape == (4, 6, 6)
    assert result.k.shape == (2, 6, 4)
    with pytest.raises(ValueError, match=re.escape("n_heads=3 does not divide d_model=8; valid head counts are 1, 2, 4, 8")):
        examples.demo_layer(8, 3)


def notebook_code(prefix: str) -> str:
    """The code cells of notebooks/<prefix>_*.ipynb, joined."""
    (path,) = (Path(__file__).resolve().parents[1] / "notebooks").glob(f"{prefix}_*.ipynb")
    cells = json.loads(path.read_text())["cells"]
    return "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")


def test_notebooks_01_and_02_take_their_running_example_from_examples_not_from_a_copy():
    # One source for the notebooks, the tests and the browser checks: no notebook draws its own stand-ins.
    one, two = notebook_code("01"), notebook_code("02")
    assert "single_head_projections(d_model, d_head)" in one and "default_rng" not in one
    assert "single_head_example(" in two and "default_rng" not in two


def test_single_head_projections_are_seeded_and_scaled_to_keep_projected_entries_near_unit_size():
    w_q, w_k, w_v = examples.single_head_projections()
    assert [w.shape for w in (w_q, w_k, w_v)] == [(8, 4)] * 3
    assert not np.allclose(w_q, w_k) and not np.allclose(w_k, w_v)
    np.testing.assert_array_equal(w_q, examples.single_head_projections(seed=1)[0])
    assert not np.allclose(w_q, examples.single_head_projections(seed=2)[0])
    big = examples.single_head_projections(400, 50, seed=3)[0]
    assert big.std() == pytest.approx(1 / np.sqrt(400), rel=0.05)  # N(0, 1) / sqrt(D)
    x = examples.token_vectors(400, seed=0)
    assert (x @ big).std() == pytest.approx(1.0, rel=0.15)
    with pytest.raises(ValueError, match="d_head=0 is too small"):
        examples.single_head_projections(8, 0)


def test_single_head_example_projects_the_sentence_with_those_projections():
    x, (w_q, w_k, w_v), (q, k, v) = examples.single_head_example()
    np.testing.assert_array_equal(x, examples.token_vectors(8, seed=0))
    np.testing.assert_array_equal(w_k, examples.single_head_projections()[1])
    np.testing.assert_allclose(q, x @ w_q)
    assert k.shape == v.shape == (6, 4)


def test_head_weights_are_the_seeded_demo_layers_weights_on_the_sentence():
    weights = examples.head_weights(16, 4, seed=0)
    np.testing.assert_array_equal(weights, examples.demo_layer(16, 4, seed=0)(examples.token_vectors(16, seed=0)).weights)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)


def test_welcome_weights_are_the_softmax_of_sharpened_scores_of_changed():
    from mha_core.attention import softmax

    scores = examples.welcome_scores()
    layer = examples.demo_layer(8, 1, seed=0, sharpness=1.0)
    np.testing.assert_allclose(scores, layer(examples.token_vectors(8, seed=0)).scores[0, 3])
    np.testing.assert_allclose(examples.welcome_weights(2.0), softmax(2.0 * scores))
    np.testing.assert_allclose(examples.welcome_weights(0.0), np.full(6, 1 / 6))


def test_meaning_example_lets_changed_find_key_first_by_construction():
    from mha_core.examples import MEANING_FEATURES, TOKENS, meaning_example

    x, w_q, w_k = meaning_example()
    assert x.shape == (len(TOKENS), len(MEANING_FEATURES)) and w_q.shape == w_k.shape == (3, 2)
    scores = (x @ w_q) @ (x @ w_k).T  # (T, T)
    row = scores[TOKENS.index("changed")]
    assert TOKENS[int(np.argmax(row))] == "key"
    assert np.sort(row)[-1] > np.sort(row)[-2]  # a clear winner, no tie
    assert np.all(scores[TOKENS.index("key")] == 0)  # a thing asks for nothing here
