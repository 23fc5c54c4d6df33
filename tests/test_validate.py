"""mha_core._validate: one home for each argument rule, one message per rule.

The first half checks the rules themselves (the messages other modules' tests quote);
the second half reads the package's source and fails if a rule's message is written
anywhere but ``_validate.py``, so a hand-made copy cannot come back.
"""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import mha_core
from mha_core import _validate

# --- whole numbers ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: _validate.positive_int(0, "n_heads"), ValueError, "n_heads=0 is too small; n_heads must be at least 1"),
        (lambda: _validate.positive_int(-2, "n_heads"), ValueError, "n_heads=-2 is too small; n_heads must be at least 1"),
        (lambda: _validate.positive_int(2.0, "n_heads"), TypeError, "n_heads must be a whole number of at least 1; got 2.0 (float)"),
        (lambda: _validate.positive_int(True, "n_heads"), TypeError, "n_heads must be a whole number of at least 1; got True (bool)"),
        (lambda: _validate.positive_int(np.bool_(True), "n_heads"), TypeError, "got np.True_ (bool)"),
        (lambda: _validate.whole_number(-1, "reserved_bytes", 0), ValueError, "reserved_bytes=-1 is negative; reserved_bytes must be at least 0"),
        (lambda: _validate.whole_number("1", "reserved_bytes", 0), TypeError, "reserved_bytes must be a whole number of at least 0; got '1' (str)"),
        (lambda: _validate.int_in_range(5, "k", 0, 4), ValueError, "k=5 is too large; k must be a whole number from 0 to 4"),
        (lambda: _validate.int_in_range(-1, "k", 0, 4), ValueError, "k=-1 is negative; k must be a whole number from 0 to 4"),
        (lambda: _validate.int_in_range(0, "bits", 1, 64), ValueError, "bits=0 is too small; bits must be a whole number from 1 to 64"),
    ],
)
def test_whole_numbers_are_refused_with_the_parameter_the_value_and_the_valid_range(call, error, message):
    with pytest.raises(error) as info:
        call()
    assert type(info.value) is error
    assert message in str(info.value)


@pytest.mark.parametrize("value", [3, np.int64(3), np.uint8(3), np.int32(3)])
def test_whole_numbers_come_back_as_plain_ints(value):
    result = _validate.whole_number(value, "n", 1)
    assert result == 3 and type(result) is int


def test_positive_int_and_int_in_range_are_one_rule_with_one_message():
    # The type error is worded the same whichever wrapper is called.
    for call in (lambda: _validate.positive_int(1.5, "n"), lambda: _validate.whole_number(1.5, "n")):
        with pytest.raises(TypeError, match=r"^n must be a whole number of at least 1; got 1\.5 \(float\)$"):
            call()


# --- seeds -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, "zero", True])
def test_numpy_and_torch_seeds_are_refused_by_the_same_rule(seed):
    # One seed rule: rng (the NumPy layers) adds only what else it takes.
    with pytest.raises((TypeError, ValueError)) as for_torch:
        _validate.seed_int(seed)
    with pytest.raises(type(for_torch.value)) as for_numpy:
        _validate.rng(seed)
    assert str(for_numpy.value).replace(", a numpy Generator, or None", "") == str(for_torch.value)
    assert ", a numpy Generator, or None" in str(for_numpy.value)
    assert "seed must be a whole number from 0 to 4,294,967,295 (2**32 - 1)" in str(for_numpy.value)


def test_rng_takes_a_seed_a_generator_or_none():
    assert _validate.rng(7).integers(10**6) == np.random.default_rng(7).integers(10**6)
    assert _validate.rng(np.int64(7)).integers(10**6) == np.random.default_rng(7).integers(10**6)
    generator = np.random.default_rng(3)
    assert _validate.rng(generator) is generator
    assert isinstance(_validate.rng(None), np.random.Generator)
    assert _validate.seed_int(_validate.MAX_SEED) == 2**32 - 1


# --- divisibility, with the fast divisor search ------------------------------------------------------------------


@given(st.integers(1, 5000))
def test_divisors_are_every_divisor_in_order(n):
    assert _validate.divisors(n) == [d for d in range(1, n + 1) if n % d == 0]


def test_divisors_search_only_up_to_the_square_root():
    # 999,999,999,989 is prime: counting to it would take hours, to its square root (1e6) a moment.
    assert _validate.divisors(999_999_999_989) == [1, 999_999_999_989]


def test_a_number_too_large_to_search_is_refused_by_name():
    with pytest.raises(ValueError, match=r"^d_model=10{16}1 is too large to list its divisors \(at most 1e\+15\)"):
        _validate.divisors(10**17 + 1, "d_model")


def test_divides_lists_the_valid_choices():
    with pytest.raises(ValueError, match=re.escape("n_heads=5 does not divide d_model=64; valid head counts are 1, 2, 4, 8, 16, 32, 64") + "$"):
        _validate.divides(5, 64)
    _validate.divides(8, 64)  # no error


def test_divides_names_the_nearest_choices_when_the_list_is_shortened():
    with pytest.raises(ValueError, match=r"valid head counts are 1, 2, 3, .*, 384, 768; the nearest to 100 are 96 and 128$"):
        _validate.divides(100, 768)


def test_divides_refuses_a_total_too_large_to_search_without_searching():
    with pytest.raises(ValueError, match=r"^n_heads=3 does not divide d_model=10{16}1; d_model is too large to list every valid choice$"):
        _validate.divides(3, 10**17 + 1)


@pytest.mark.parametrize("count, expected", [(5, [4, 8]), (1, [2]), (100, [64]), (3, [2, 4])])
def test_nearest_are_the_closest_below_and_above(count, expected):
    assert _validate.nearest([2, 4, 8, 16, 32, 64], count) == expected


def test_key_value_heads_must_divide_the_query_heads_with_one_message():
    with pytest.raises(ValueError, match=re.escape(
            "n_kv_heads=3 does not divide Llama-2-7B's n_heads=32; valid key/value head counts are 1, 2, 4, 8, 16, 32 "
            "(1 is multi-query attention, 32 is ordinary multi-head attention)")):
        _validate.kv_head_count(3, 32, of="Llama-2-7B's n_heads")
    assert _validate.head_counts(64, 8, 2) == (64, 8, 2)
    with pytest.raises(ValueError, match=r"^n_kv_heads=3 does not divide n_heads=8; "):
        _validate.head_counts(64, 8, 3)


# --- flags, choices, real numbers, indices, sliders ---------------------------------------------------------------


def test_flags_are_true_or_false_only():
    assert _validate.flag(np.bool_(False), "bias") is False
    with pytest.raises(TypeError, match=r"^bias must be True or False; got 'no' \(str\)$"):
        _validate.flag("no", "bias")
    with pytest.raises(TypeError, match=r"^bias must be True or False; got 1 \(int\)$"):
        _validate.flag(1, "bias")


def test_a_choice_names_every_valid_value():
    assert _validate.choice(2, "batch", (1, 2, 4)) == 2
    with pytest.raises(ValueError, match=r"^batch=3 is not a valid choice; valid values are 1, 2, 4$"):
        _validate.choice(3, "batch", (1, 2, 4))
    with pytest.raises(TypeError, match=r"^batch must be one of 1, 2, 4; got True \(bool\)$"):
        _validate.choice(True, "batch", (1, 2, 4), kind=int)
    with pytest.raises(ValueError, match=r"^mode=\['x'\] is not a valid choice; valid values are 'none', 'causal'$"):
        _validate.choice(["x"], "mode", ("none", "causal"))


@pytest.mark.parametrize("value", [0, -1.0, math.inf, math.nan])
def test_a_positive_number_is_finite_and_above_zero(value):
    with pytest.raises(ValueError, match=rf"^lr={re.escape(repr(value))} is out of range; lr must be a finite number above 0, such as 3e-3$"):
        _validate.positive_number(value, "lr", example="3e-3")


def test_a_real_number_is_returned_as_a_float_and_strings_are_refused():
    assert _validate.positive_number(np.float32(0.5), "rate") == 0.5
    assert type(_validate.real_number(1, "p", "a number from 0 to 1", lambda v: 0 <= v <= 1)) is float
    with pytest.raises(TypeError, match=r"^rate must be a finite number above 0; got '1e9' \(str\)$"):
        _validate.positive_number("1e9", "rate")


def test_an_index_counts_from_zero():
    assert _validate.index(np.int64(1), "head", 2, "heads") == 1
    with pytest.raises(ValueError, match=r"^head=2 is out of range; valid heads are 0 to 1$"):
        _validate.index(2, "head", 2, "heads")
    with pytest.raises(ValueError, match=r"^head=-1 is out of range; valid heads are 0 to 1$"):
        _validate.index(-1, "head", 2, "heads")
    with pytest.raises(TypeError, match=r"^head must be a whole number from 0 to 1; got 1\.0 \(float\)$"):
        _validate.index(1.0, "head", 2, "heads")


def test_a_slider_value_must_be_one_the_slider_can_show():
    assert _validate.slider_value(np.int64(12), "n_heads", 1, 64) == 12
    assert _validate.slider_value(2, "sharpness", 0.0, 4.0, whole=False) == 2.0
    with pytest.raises(ValueError, match=r"^n_heads=0 is outside the slider; valid values are whole numbers from 1 to 64 \(see\)$"):
        _validate.slider_value(0, "n_heads", 1, 64, note=" (see)")
    with pytest.raises(ValueError, match=r"^sharpness=-1 is outside the slider; valid values are 0 to 4$"):
        _validate.slider_value(-1, "sharpness", 0.0, 4.0, whole=False)
    with pytest.raises(TypeError, match=r"^n_heads must be a whole number from 1 to 64; got 12\.5 \(float\)$"):
        _validate.slider_value(12.5, "n_heads", 1, 64)


# --- one home for each rule: no copy of a message outside _validate.py ----------------------------------------------

#: A fragment of each rule's message, as ``_validate.py`` words it. A ``raise`` anywhere else in the
#: package that spells one out is a hand-made copy of the rule: call the ``_validate`` function instead.
RULE_FRAGMENTS = {
    "must be a whole number": "whole_number / positive_int / int_in_range / seed_int / index / slider_value",
    "is too small;": "whole_number",
    "is too large;": "whole_number",
    "is negative;": "whole_number",
    "does not divide": "divides / head_counts / kv_head_count",
    "head counts are": "divides",
    "too large to list": "divisors / divides",
    "must be True or False": "flag",
    "a numpy Generator": "rng",
    "is not a valid choice": "choice",
    "must be one of": "choice",
    "a finite number above 0": "positive_number",
    "is out of range;": "real_number / index",
    "is outside the slider": "slider_value",
}

#: Wordings of copies that disagreed with their rule, before the rule moved here: they must not return.
RETIRED_WORDINGS = {
    "is not one of the choices": "choice",
    "must be a positive number": "positive_number",
    "is not positive": "positive_number",
    "is not a token index": "index",
    "query heads; valid": "kv_head_count",
    "of at least 0, a numpy Generator": "rng",
}

#: Copies in modules this change could not edit (another change was rewriting them), with the
#: ``_validate`` call that replaces each. Entries may only shrink: delete one when its copy goes.
KNOWN_COPIES: set[tuple[str, str]] = set()  # (file, fragment) pairs allowed outside _validate.py: none

PACKAGE = Path(mha_core.__file__).parent


def copied_rules(source: str) -> list[tuple[int, str]]:
    """(line, fragment) for every rule fragment spelled out in a ``raise`` of ``source``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            for part in ast.walk(node.exc):
                if isinstance(part, ast.Constant) and isinstance(part.value, str):
                    found += [(part.lineno, f) for f in {**RULE_FRAGMENTS, **RETIRED_WORDINGS} if f in part.value]
    return found


def test_the_copy_finder_finds_a_copied_rule_in_an_f_string():
    planted = 'def f(n):\n    if n < 1:\n        raise ValueError(f"{n=} is too small; n must be a whole number of at least 1")\n'
    assert copied_rules(planted) == [(3, "must be a whole number"), (3, "is too small;")]
    # Prose a learner reads, outside a raise, is not a copy.
    assert copied_rules('caption = "H = 5 does not divide 64, so no bar is marked"\n') == []


def test_no_module_but_validate_spells_out_a_rules_message():
    copies = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "_validate.py" and path.parent == PACKAGE:
            continue
        name = path.relative_to(PACKAGE.parent).as_posix()
        copies += [f"{name}:{line}: '{fragment}' (use _validate.{RULE_FRAGMENTS.get(fragment) or RETIRED_WORDINGS[fragment]})"
                   for line, fragment in copied_rules(path.read_text(encoding="utf-8"))
                   if (name, fragment) not in KNOWN_COPIES]
    assert not copies, "rules copied outside mha_core/_validate.py:\n" + "\n".join(copies)


def test_validate_itself_holds_every_rule_fragment():
    # A fragment no rule words any more guards nothing: keep RULE_FRAGMENTS in step with _validate.py.
    source = (PACKAGE / "_validate.py").read_text(encoding="utf-8")
    missing = [f for f in RULE_FRAGMENTS if f not in source]
    assert not missing, f"fragments no rule in _validate.py uses: {missing}"
    assert not [f for f in RETIRED_WORDINGS if f in source], "a retired wording is back in _validate.py"
