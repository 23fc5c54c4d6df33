"""Tests for mha_core.widgets.serving: each control redraws the calculator in place with costs' numbers."""

from __future__ import annotations

import numpy as np
import pytest

from mha_core import costs
from mha_core.figures.serving import calculator_figure, calculator_rows
from mha_core.widgets.serving import KVCacheCalculator, kv_cache_calculator

GiB = 2**30


@pytest.fixture()
def calc() -> KVCacheCalculator:
    return kv_cache_calculator()


def _expected(model, n_tokens, batch, bytes_per_value, memory_gib, n_kv_heads):
    rows = calculator_rows(costs.MODEL_SHAPES[model], n_tokens=n_tokens, batch=batch, bytes_per_value=bytes_per_value,
                           memory_bytes=memory_gib * GiB)
    return rows, calculator_figure(rows, n_kv_heads)


def _assert_shows(calc, model, n_tokens, batch, bytes_per_value, memory_gib, n_kv_heads):
    rows, fig = _expected(model, n_tokens, batch, bytes_per_value, memory_gib, n_kv_heads)
    for shown, built in zip(calc.figure.data, fig.data):
        assert list(shown.x) == list(built.x)
        np.testing.assert_allclose(shown.y, built.y)
    assert calc.figure.layout.title.text == fig.layout.title.text
    assert [a.text for a in calc.figure.layout.annotations] == [a.text for a in fig.layout.annotations]
    k = rows.kv_head_counts.index(n_kv_heads)
    assert f"<b>{rows.sequences_that_fit[k]:,}</b>" in calc.readout.value
    assert f"({rows.batch_bytes[k]:,} bytes)" in calc.readout.value


def test_starts_at_llama_2_7b_with_its_published_numbers(calc):
    assert calc.n_kv_heads.value == 32 and list(calc.n_kv_heads.options) == [32, 16, 8, 4, 2, 1]
    assert "= <b>512 KiB</b> (524,288 bytes)" in calc.readout.value  # the published per-token figure
    assert "<b>2 GiB</b>" in calc.readout.value
    _assert_shows(calc, "Llama-2-7B", 4096, 1, 2, 80, 32)
    assert calc.message.value == ""


@pytest.mark.parametrize(
    "control, value, state",
    [
        ("n_kv_heads", 8, ("Llama-2-7B", 4096, 1, 2, 80, 8)),
        ("n_kv_heads", 1, ("Llama-2-7B", 4096, 1, 2, 80, 1)),
        ("n_tokens", 512, ("Llama-2-7B", 512, 1, 2, 80, 32)),
        ("batch", 16, ("Llama-2-7B", 4096, 16, 2, 80, 32)),
        ("dtype", 1, ("Llama-2-7B", 4096, 1, 1, 80, 32)),
        ("memory", 24, ("Llama-2-7B", 4096, 1, 2, 24, 32)),
    ],
)
def test_each_control_redraws_the_one_figure_in_place(calc, control, value, state):
    figure = calc.figure
    getattr(calc, control).value = value
    assert calc.figure is figure
    _assert_shows(calc, *state)


@pytest.mark.parametrize("model", list(costs.MODEL_SHAPES))
def test_choosing_a_model_offers_its_key_value_head_counts_and_starts_at_its_own(calc, model):
    m = costs.MODEL_SHAPES[model]
    calc.model.value = model
    assert list(calc.n_kv_heads.options) == costs.valid_head_counts(m.n_heads)[::-1]
    assert calc.n_kv_heads.value == m.n_kv_heads
    _assert_shows(calc, model, 4096, 1, 2, 80, m.n_kv_heads)
    per_token = m.kv_cache_bytes_per_token()
    assert f"({per_token:,} bytes)" in calc.readout.value


def test_mistral_and_llama_3_show_128_kib_per_token_and_llama_2_70b_320(calc):
    for model, kib in (("Mistral-7B v0.1", 128), ("Llama-3-8B", 128), ("Llama-2-70B", 320), ("GPT-2 small", 36)):
        calc.model.value = model
        assert f"<b>{kib} KiB</b>" in calc.readout.value, model


def test_model_change_redraws_once_not_once_per_control(calc, monkeypatch):
    calls = []
    original = calc._redraw
    monkeypatch.setattr(calc, "_redraw", lambda: (calls.append(1), original()))
    calc.model.value = "Llama-2-70B"
    assert len(calls) == 1


def test_weights_that_do_not_fit_give_a_plain_message_not_an_error(calc):
    calc.model.value = "Llama-2-70B"  # 69 billion parameters x 2 bytes = 129 GiB > 80 GiB
    assert "The weights alone (129 GiB in 16-bit) do not fit in 80 GiB" in calc.message.value
    assert "Traceback" not in calc.message.value
    calc.memory.value = 141
    assert "do not fit" not in calc.message.value


def test_a_batch_larger_than_what_fits_is_named(calc):
    calc.batch.value = 256
    assert "A batch of 256 needs 512 GiB of cache, but only 33 sequences of 4,096 tokens fit" in calc.message.value
    calc.n_kv_heads.value = 1  # MQA: 32 times less cache
    assert calc.message.value == ""


def test_a_context_past_the_models_own_is_flagged_as_information(calc):
    calc.model.value = "GPT-2 small"
    assert "trained with a context of 1,024 tokens" in calc.message.value
    calc.n_tokens.value = 1024
    assert calc.message.value == ""


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(model="GPT-5"), r"model='GPT-5' is not a known shape; valid models are GPT-2 small"),
        (dict(n_tokens=1000), r"n_tokens=1000 is not one of the choices; valid values are 128, 256"),
        (dict(batch=0), r"batch=0 is not one of the choices"),
        (dict(bytes_per_value=3), r"bytes_per_value=3 is not one of the choices; valid values are 4, 2, 1"),
        (dict(memory_gib=True), r"memory_gib=True is not one of the choices"),
        (dict(n_kv_heads=5), r"n_kv_heads=5 does not divide Llama-2-7B's 32 query heads; valid key/value head counts are 32, 16, 8, 4, 2, 1"),
    ],
)
def test_bad_arguments_name_the_parameter_and_the_choices(kwargs, match):
    with pytest.raises(ValueError, match=match):
        kv_cache_calculator(**kwargs)


def test_controls_carry_the_css_classes_the_browser_test_finds(calc):
    for name in ("model", "memory", "dtype", "n_tokens", "batch", "n_kv_heads"):
        assert any(c.startswith("mha-serving-") for c in getattr(calc, name)._dom_classes), name
