"""The question bank: its schema, its answers (recomputed with mha_core.costs), and grading."""

from __future__ import annotations

import copy
import json
import math
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from mha_classroom.quiz import bank as quiz_bank
from mha_classroom.quiz import grading
from mha_classroom.quiz.bank import COURSE_SET_IDS, SET_IDS, BankError, load_bank, normalise_set_id, quizzes_dir
from mha_classroom.quiz.grading import answer_letters, grade_choice, grade_numeric, option_order, shuffled_order
from mha_classroom.quiz.numbers import parse_number
from mha_core import costs

NOTEBOOK_SETS = [f"{n:02d}" for n in range(1, 11)]


@pytest.fixture(scope="module")
def bank():
    return load_bank()


@pytest.fixture(scope="module")
def questions(bank):
    return bank.all_questions()


def choice_questions(questions, kind=None):
    return [q for q in questions if q.kind != "numeric" and (kind is None or q.kind == kind)]


# --------------------------------------------------------------------------- the bank as a whole


def test_bank_holds_the_practice_set_every_notebook_and_the_review(bank):
    assert sorted(bank.sets) == list(SET_IDS)
    assert len(bank.questions("00")) == 2


def test_the_bank_found_at_run_time_is_this_checkouts_data():
    # Editable install or wheel: quizzes_dir() must find the same files as data/quizzes.
    here = Path(__file__).resolve().parents[1] / "data" / "quizzes"
    found = quizzes_dir()
    assert {p.name for p in found.glob("*.json")} == {f"{s}.json" for s in SET_IDS}
    for path in here.glob("*.json"):
        assert (found / path.name).read_bytes() == path.read_bytes(), path.name


def test_question_ids_are_unique_across_the_bank(questions):
    counts = Counter(q.id for q in questions)
    assert [qid for qid, n in counts.items() if n > 1] == []


@pytest.mark.parametrize("set_id", NOTEBOOK_SETS)
def test_every_notebook_has_at_least_three_questions_of_its_own(bank, set_id):
    assert len(bank.sets[set_id].questions) >= 3
    assert all(q.set_id == set_id and q.id.startswith(set_id + "-") for q in bank.sets[set_id].questions)


def test_single_choice_questions_have_exactly_one_correct_option(questions):
    for q in choice_questions(questions, "single"):
        assert len(q.correct_indices) == 1, q.id


def test_select_all_questions_have_at_least_one_correct_option(questions):
    multi = choice_questions(questions, "multi")
    assert multi, "the bank should hold select-all questions"
    for q in multi:
        assert len(q.correct_indices) >= 1, q.id
        # A select-all question whose every option is right teaches nothing.
        assert len(q.correct_indices) < len(q.options), q.id


def test_every_option_has_text_and_its_own_feedback(questions):
    for q in choice_questions(questions):
        assert len(q.options) >= 3, f"{q.id}: a choice question needs distractors"
        for option in q.options:
            assert option.text.strip() and option.feedback.strip(), q.id
        feedbacks = [o.feedback for o in q.options]
        assert len(set(feedbacks)) == len(feedbacks), f"{q.id}: options share a feedback text"


def test_no_question_has_empty_text_or_explanation(questions):
    for q in questions:
        assert q.text.strip() and q.explanation.strip(), q.id


def test_numeric_questions_have_answer_tolerance_and_feedback(questions):
    numeric = [q for q in questions if q.kind == "numeric"]
    assert len(numeric) >= 5
    for q in numeric:
        assert isinstance(q.answer, (int, float)) and q.tolerance >= 0, q.id
        assert q.feedback.strip() and q.wrong_feedback.strip(), q.id
        assert q.misconceptions, f"{q.id}: name at least one likely wrong number"
        assert all(m.feedback.strip() for m in q.misconceptions), q.id


def test_correct_answer_is_not_always_in_the_same_position(questions):
    single = choice_questions(questions, "single")
    positions = Counter(q.correct_indices[0] for q in single)
    assert positions[0] <= len(single) / 2, positions
    assert max(positions.values()) <= 0.5 * len(single), positions
    assert len(positions) >= 3, positions
    multi = choice_questions(questions, "multi")
    assert sum(q.options[0].correct for q in multi) <= len(multi) / 2 + 1


def test_review_draws_on_every_notebook_and_adds_its_own(bank):
    review = bank.sets["11"]
    drawn_from = {qid[:2] for qid in review.include}
    assert set(NOTEBOOK_SETS) <= drawn_from
    assert review.questions, "the review has questions of its own"
    shown = [q.id for q in bank.questions("11")]
    assert shown == list(review.include) + [q.id for q in review.questions]


def is_attention_head_question(q) -> bool:
    if q.kind != "single":
        return False
    right = q.options[q.correct_indices[0]].text.lower()
    wrong = " ".join(o.text.lower() for o in q.options if not o.correct)
    return (
        "learned q/k/v projection path" in right
        and "attention view" in right
        and "grammar rule" in wrong
        and "language model" in wrong
        and "vocabulary" in wrong
        and "n-gram counts" in wrong
    )


@pytest.mark.parametrize("set_id", ["03", "11"])
def test_the_sources_attention_head_question_is_in_notebook_03_and_the_review(bank, set_id):
    assert any(is_attention_head_question(q) for q in bank.questions(set_id))


# --------------------------------------------------------------------------- numeric answers are computed


def compute(spec: dict) -> float:
    """Recompute a numeric answer from its ``computed_by`` spec with mha_core.costs."""
    assert set(spec) <= {"function", "kwargs", "model", "divide_by", "then"}, spec
    if "model" in spec:
        shape = costs.MODEL_SHAPES[spec["model"]]
        assert spec["function"] == "kv_cache_bytes_per_token"
        value = costs.kv_cache_bytes_per_token(shape.n_layers, shape.n_kv_heads, shape.d_head)
    else:
        value = getattr(costs, spec["function"])(**spec["kwargs"])
    value = value / spec.get("divide_by", 1)
    if spec.get("then") == "sqrt":
        value = math.sqrt(value)
    return value


def test_every_numeric_answer_agrees_with_mha_core_costs(questions):
    numeric = [q for q in questions if q.kind == "numeric"]
    for q in numeric:
        assert q.computed_by, f"{q.id}: say how mha_core computes the answer"
        assert abs(compute(q.computed_by) - q.answer) <= max(q.tolerance, 1e-9), q.id


def test_the_bank_asks_the_numbers_the_course_depends_on(questions):
    by_function = {(q.computed_by["function"], json.dumps(q.computed_by, sort_keys=True)): q.answer for q in questions if q.kind == "numeric"}
    functions = {f for f, _ in by_function}
    assert {"d_head", "attention_parameters", "kv_cache_bytes_per_token", "score_table_entries"} <= functions
    assert 2_362_368 in by_function.values()
    assert costs.attention_parameters(768, 12) == 2_362_368


def test_no_misconception_is_graded_as_right(questions):
    for q in (q for q in questions if q.kind == "numeric"):
        for m in q.misconceptions:
            verdict = grade_numeric(q, m.value)
            assert not verdict.correct and verdict.details == (m.feedback,), q.id


# --------------------------------------------------------------------------- claims in option texts, checked


def test_impossible_split_names_the_nearest_valid_head_counts(bank):
    q = bank.question("05-impossible-split")
    right = q.options[q.correct_indices[0]].text
    assert 10 not in costs.valid_head_counts(768)
    low, high = costs.nearest_valid_head_counts(768, 10)
    assert f"{low} and {high}" in right


def test_kv_bytes_do_not_grow_with_the_head_count_as_the_bank_says(bank):
    q = bank.question("10-heads-vs-kv-bytes")
    assert "stay the same" in q.options[q.correct_indices[0]].text
    for n_heads in (12, 24):
        assert costs.kv_cache_bytes_per_token(12, n_heads, costs.d_head(768, n_heads)) == 36_864


def test_what_grows_with_the_head_count_matches_costs(bank):
    q = bank.question("11-what-grows")
    right = {q.options[i].text for i in q.correct_indices}
    assert any("score entries" in t for t in right) and not any("parameter" in t for t in right)
    assert costs.attention_parameters(768, 24) == costs.attention_parameters(768, 12)
    assert costs.score_table_entries(24, 128) == 2 * costs.score_table_entries(12, 128)
    assert costs.attention_flops(768, 24, 128)["softmax"] > costs.attention_flops(768, 12, 128)["softmax"]


def test_tiny_heads_question_uses_a_real_d_head_of_one(bank):
    assert "d_head = 1" in bank.question("08-too-small").text
    assert costs.d_head(64, 64) == 1


def test_counting_scores_for_the_running_sentence_uses_its_six_tokens(bank):
    from mha_core.examples import TOKENS

    assert bank.question("01-score-count").answer == costs.score_table_entries(1, len(TOKENS))


# --------------------------------------------------------------------------- option order


def test_option_order_is_a_permutation_fixed_per_question(questions):
    for q in choice_questions(questions):
        order = option_order(q)
        assert sorted(order) == list(range(len(q.options)))
        assert option_order(q) == order
    assert all(option_order(q) == [] for q in questions if q.kind == "numeric")


def test_the_shown_order_moves_the_right_answer_around(questions):
    # The letters a learner sees, not the data's order, must not give the answer away.
    single = choice_questions(questions, "single")
    letters = Counter(answer_letters(q) for q in single)
    assert max(letters.values()) <= 0.4 * len(single), letters
    assert len(letters) >= 4 or set(letters) == {"a", "b", "c"}, letters
    multi = choice_questions(questions, "multi")
    assert sum("a" in answer_letters(q) for q in multi) <= len(multi) / 2 + 1


def test_the_shown_order_is_not_the_data_order_for_most_questions(questions):
    qs = choice_questions(questions)
    assert sum(option_order(q) != list(range(len(q.options))) for q in qs) >= 0.7 * len(qs)


def test_shuffled_order_differs_between_seeds(questions):
    qs = choice_questions(questions)
    differing = sum(shuffled_order(q, "seed-a") != shuffled_order(q, "seed-b") for q in qs)
    assert differing >= len(qs) // 2


# --------------------------------------------------------------------------- grading


def test_single_choice_grading_gives_the_chosen_options_feedback(bank):
    q = bank.question("03-what-is-a-head")
    right = q.correct_indices[0]
    wrong = (right + 1) % len(q.options)
    order = shuffled_order(q, "x")
    verdict = grade_choice(q, [wrong], order)
    assert not verdict.correct and q.options[wrong].feedback in verdict.details[0]
    letter = "abcd"[order.index(wrong)]
    assert verdict.details[0].startswith(f"{letter})")
    assert grade_choice(q, [right]).correct


def test_select_all_grading_comments_on_each_option_chosen_or_missed(bank):
    q = bank.question("02-softmax-row")
    right = list(q.correct_indices)
    wrong = [i for i in range(len(q.options)) if i not in right]
    assert grade_choice(q, right).correct
    verdict = grade_choice(q, [right[0], wrong[0]])
    assert not verdict.correct
    text = verdict.text()
    assert q.options[wrong[0]].feedback in text and "should not be chosen" in text
    for i in right[1:]:
        assert grading._without_yes(q.options[i].feedback) in text
    assert text.count("missed, it is right too:") == len(right) - 1
    assert "right to choose" in text


def test_numeric_grading_accepts_the_tolerance_and_explains_other_numbers(bank):
    q = bank.question("02-scale-value")
    assert grade_numeric(q, 8.0).correct
    assert grade_numeric(q, 8.005).correct
    assert "√768" in grade_numeric(q, 27.7).details[0]
    assert grade_numeric(q, 3.0).details == (q.wrong_feedback,)


@pytest.mark.parametrize(
    "text, value",
    [("64", 64.0), (" 2,362,368 ", 2362368.0), ("2_362_368", 2362368.0), ("3.2e2", 320.0), ("-1", -1.0), ("abc", None), ("", None), ("nan", None)],
)
def test_parse_number_reads_what_a_learner_types(text, value):
    assert parse_number(text) == value


def test_set_ids_are_normalised_and_bad_ones_list_the_valid_ones():
    assert normalise_set_id(3) == "03" and normalise_set_id("3") == "03" and normalise_set_id("11") == "11"
    with pytest.raises(ValueError, match="set_id='99'.*00, 01.*10"):
        normalise_set_id("99")


def test_course_questions_leave_out_the_practice_set(bank):
    ids = [q.id for q in bank.course_questions()]
    assert not any(i.startswith("00-") for i in ids)
    assert len(ids) == sum(len(bank.sets[s].questions) for s in COURSE_SET_IDS)


# --------------------------------------------------------------------------- the validator catches broken data


def write_bank(directory: Path, sets: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for set_id, data in sets.items():
        (directory / f"{set_id}.json").write_text(json.dumps(data))
    return directory


def good_sets() -> dict:
    raw = {p.stem: json.loads(p.read_text(encoding="utf-8")) for p in quizzes_dir().glob("*.json")}
    return copy.deepcopy(raw)


def break_two_correct(s):
    q = next(q for q in s["03"]["questions"] if q["kind"] == "single")
    for o in q["options"]:
        o["correct"] = True


def break_no_correct(s):
    q = next(q for q in s["02"]["questions"] if q["kind"] == "multi")
    for o in q["options"]:
        o["correct"] = False


def break_empty_feedback(s):
    s["01"]["questions"][0]["options"][1]["feedback"] = "  "


def break_empty_text(s):
    s["04"]["questions"][0]["text"] = ""


def break_duplicate_id(s):
    s["04"]["questions"].append(copy.deepcopy(s["04"]["questions"][0]))


def break_missing_tolerance(s):
    q = next(q for q in s["05"]["questions"] if q["kind"] == "numeric")
    del q["tolerance"]


def break_unknown_include(s):
    s["11"]["include"].append("03-no-such-question")


def break_misconception_equals_answer(s):
    q = next(q for q in s["03"]["questions"] if q["kind"] == "numeric")
    q["misconceptions"][0]["value"] = q["answer"]


def break_unknown_kind(s):
    s["06"]["questions"][0]["kind"] = "essay"


def break_set_name(s):
    s["07"]["set"] = "08"


@pytest.mark.parametrize(
    "breaker, message",
    [
        (break_two_correct, "exactly one correct option, found"),
        (break_no_correct, "at least one correct option"),
        (break_empty_feedback, "'feedback' must be non-empty"),
        (break_empty_text, "'text' must be non-empty"),
        (break_duplicate_id, "'04-concat-shape' appears twice in set 04; ids must be unique"),
        (break_missing_tolerance, "'tolerance' must be a finite number"),
        (break_unknown_include, "no set defines"),
        (break_misconception_equals_answer, "overlaps the tolerance"),
        (break_unknown_kind, "kind='essay'; valid kinds are single, multi, numeric"),
        (break_set_name, "expected '07'"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_validator_rejects_broken_data_with_a_clear_message(tmp_path, breaker, message):
    sets = good_sets()
    breaker(sets)
    directory = write_bank(tmp_path / "quizzes", sets)
    with pytest.raises(BankError, match=message):
        load_bank(directory, strict=True)
    # Without strict, the broken set alone is left out, and asking for it gives the same message.
    bank = load_bank(directory)
    (broken,) = bank.problems  # the review keeps going without a repeated question of a broken set
    assert re.search(message, bank.problems[broken]) and bank.problems[broken].startswith(f"{broken}.json")
    assert set(bank.sets) == set(SET_IDS) - {broken}
    with pytest.raises(BankError, match=f"quiz {broken} cannot be shown: {broken}.json"):
        bank.questions(broken)


def test_validator_names_the_file_and_line_of_invalid_json(tmp_path):
    directory = write_bank(tmp_path / "quizzes", good_sets())
    (directory / "04.json").write_text('{"set": "04",\n  "title": "x",\n  not json')
    with pytest.raises(BankError, match="04.json line 3: not valid JSON"):
        load_bank(directory, strict=True)


def test_a_good_copy_of_the_bank_loads(tmp_path):
    copied = load_bank(write_bank(tmp_path / "quizzes", good_sets()))
    assert copied.all_questions() == load_bank().all_questions()


def test_default_bank_is_read_once(monkeypatch):
    quiz_bank.default_bank.cache_clear()
    first = quiz_bank.default_bank()
    assert quiz_bank.default_bank() is first


def test_an_installed_copy_finds_its_bank_without_a_checkout(tmp_path):
    # The wheel layout: data/ ships as mha_core/data (pyproject maps it), with no data/ beside the package.
    root = Path(__file__).resolve().parents[1]
    site = tmp_path / "site-packages"
    for package in ("mha_core", "mha_classroom"):
        shutil.copytree(root / package, site / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(root / "data", site / "mha_core" / "data")
    code = "from mha_classroom.quiz.bank import quizzes_dir, load_bank; print(quizzes_dir()); print(len(load_bank().all_questions()))"
    env = {**os.environ, "PYTHONPATH": str(site)}
    result = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    where, count = result.stdout.split()
    assert Path(where) == site / "mha_core" / "data" / "quizzes"
    assert int(count) == len(load_bank().all_questions())


# --------------------------------------------------------------------------- hostile files cost only their set


def break_typo_misconception(s):
    q = next(q for q in s["05"]["questions"] if q["kind"] == "numeric")
    q["misconception"] = q.pop("misconceptions")


def break_typo_includes(s):
    s["11"]["includes"] = s["11"].pop("include")


def break_typo_units(s):
    q = next(q for q in s["03"]["questions"] if q["kind"] == "numeric")
    q["units"] = q.pop("unit")


def break_answer_on_single(s):
    q = next(q for q in s["01"]["questions"] if q["kind"] == "single")
    q["answer"] = 2


def break_unknown_function(s):
    q = next(q for q in s["05"]["questions"] if q["kind"] == "numeric")
    q["computed_by"]["function"] = "parameter_count"


def break_unknown_option_key(s):
    s["02"]["questions"][0]["options"][0]["corect"] = True


def break_include_outside_the_review(s):
    s["04"]["include"] = ["03-d-head"]


@pytest.mark.parametrize(
    "breaker, message",
    [
        (break_typo_misconception, "unknown key 'misconception' in a numeric question \\(did you mean 'misconceptions'\\?\\)"),
        (break_typo_includes, "unknown key 'includes' in a set \\(did you mean 'include'\\?\\)"),
        (break_typo_units, "unknown key 'units' in a numeric question \\(did you mean 'unit'\\?\\)"),
        (break_answer_on_single, "unknown key 'answer' in a single question"),
        (break_unknown_function, "computed_by names function 'parameter_count', which mha_core.costs does not have"),
        (break_unknown_option_key, "unknown key 'corect' in an option \\(did you mean 'correct'\\?\\)"),
        (break_include_outside_the_review, "only the review \\(11.json\\) repeats questions"),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_the_schema_refuses_unknown_keys_and_names(tmp_path, breaker, message):
    sets = good_sets()
    breaker(sets)
    directory = write_bank(tmp_path / "quizzes", sets)
    with pytest.raises(BankError, match=message):
        load_bank(directory, strict=True)
    assert len(load_bank(directory).problems) == 1


def test_a_schema_error_names_the_file_and_the_line(tmp_path):
    sets = good_sets()
    directory = tmp_path / "quizzes"
    directory.mkdir()
    for set_id, data in sets.items():
        (directory / f"{set_id}.json").write_text(json.dumps(data, indent=2, ensure_ascii=False))
    text = (directory / "03.json").read_text()
    data = json.loads(text)
    data["questions"][2]["kind"] = "essay"
    (directory / "03.json").write_text(json.dumps(data, indent=2, ensure_ascii=False))
    line = next(n for n, row in enumerate(text.splitlines(), 1) if json.dumps(data["questions"][2]["id"]) in row)
    with pytest.raises(BankError, match=f"03.json line {line}, question 2 .*kind='essay'"):
        load_bank(directory, strict=True)


HOSTILE_FILES = {
    "not-utf8": lambda p: p.write_bytes(b'{"set": "04", "title": "\xff\xfe caf\xe9"}'),
    "deep-nesting": lambda p: p.write_text("[" * 100_000 + "]" * 100_000),
    "deep-nesting-in-a-set": lambda p: p.write_text('{"set": "04", "title": "t", "questions": [' + "[" * 50_000 + "]" * 50_000 + "]}"),
    "a-folder": lambda p: p.mkdir(),
    "empty": lambda p: p.write_bytes(b""),
    "nul-bytes": lambda p: p.write_bytes(b"\x00" * 64),
    "a-list": lambda p: p.write_text("[]"),
    "huge-number": lambda p: p.write_text('{"set": "04", "title": "t", "questions": [{"id": "04-x", "kind": "numeric", '
                                          '"text": "t", "explanation": "e", "answer": 1e999, "tolerance": 0}]}'),
}


@pytest.mark.parametrize("name", list(HOSTILE_FILES))
def test_a_hostile_file_costs_only_its_own_set_and_is_named(tmp_path, name):
    directory = write_bank(tmp_path / "quizzes", good_sets())
    target = directory / "04.json"
    target.unlink()
    HOSTILE_FILES[name](target)
    bank = load_bank(directory)
    assert set(bank.sets) == set(SET_IDS) - {"04"}
    assert bank.problems["04"].startswith("04.json"), bank.problems
    assert "04-w-o-blocks" not in bank.sets["11"].include and "left out because their file is broken" in bank.notes["11"]
    with pytest.raises(BankError, match="quiz 04 cannot be shown: 04.json"):
        bank.questions("04")
    with pytest.raises(BankError, match="04.json"):
        load_bank(directory, strict=True)


def test_an_oddly_named_file_is_reported_not_fatal(tmp_path):
    directory = write_bank(tmp_path / "quizzes", good_sets())
    (directory / "notes.json").write_text("{}")
    bank = load_bank(directory)
    assert set(bank.sets) == set(SET_IDS) and "named NN.json" in bank.problems["notes.json"]


@pytest.mark.parametrize("text", ["3 6", "3,6", "1,2345", "12 34", "6 4", "--64", "1e5e5", "0x40", "٣٦", "²", "1" * 300])
def test_parse_number_refuses_what_is_not_one_number(text):
    assert parse_number(text) is None


@pytest.mark.parametrize(
    "text, value",
    [("1.26e7", 1.26e7), ("1.26 × 10^7", 1.26e7), ("1.26x10^7", 1.26e7), ("12.6 million", 1.26e7), ("2 362 368", 2362368.0),
     ("−3", -3.0), ("12,582,912", 12582912.0), (".5", 0.5)],
)
def test_parse_number_reads_other_notations_by_value(text, value):
    assert parse_number(text) == pytest.approx(value)


def test_score_entries_are_judged_by_value_with_a_tolerance(bank):
    q = bank.question("05-score-entries")
    for typed in ("12,582,912", "1.26e7", "1.258e7", "12.6 million", "1.26 × 10^7"):
        assert grade_numeric(q, parse_number(typed)).correct, typed
    for typed in ("1.2e7", "1.3e7", "1,048,576"):
        assert not grade_numeric(q, parse_number(typed)).correct, typed


BAD_SET_IDS = ["²", "³", "٣", "9" * 5000, "", " ", "0x3", "3.0", None, 3.0, True, -1, 10**5000, [3], "1_0"]


@pytest.mark.parametrize("set_id", BAD_SET_IDS, ids=[f"bad{i}" for i in range(len(BAD_SET_IDS))])
def test_a_bad_set_id_gives_the_valid_ids_not_a_conversion_error(set_id):
    with pytest.raises(ValueError, match="is not a quiz; valid quizzes are 00, 01") as info:
        normalise_set_id(set_id)
    assert len(str(info.value)) < 200


# --------------------------------------------------------------------------- length balance and review wording


def strictly_longest(q) -> bool:
    """The right option of a single-choice question is longer than every other: a test-wise learner's cue."""
    lengths = [len(o.text) for o in q.options]
    right = q.correct_indices[0]
    return all(lengths[right] > n for i, n in enumerate(lengths) if i != right)


@pytest.mark.parametrize("set_id", SET_IDS)
def test_the_correct_option_is_not_a_giveaway_by_length_in_any_set(bank, set_id):
    """In at most a third of a set's single-choice questions is the right option the strictly longest (one is fine)."""
    mine = [q for q in bank.sets[set_id].questions if q.kind == "single"]
    longest = [q.id for q in mine if strictly_longest(q)]
    assert len(longest) <= max(1, len(mine) / 3), longest


def test_the_correct_option_is_not_a_giveaway_by_length_across_the_bank(bank):
    singles = [q for q in bank.all_questions() if q.kind == "single"]
    longest = [q.id for q in singles if strictly_longest(q)]
    assert len(longest) <= len(singles) / 3, longest


def test_the_sets_written_here_balance_option_lengths(bank):
    """Sets 00-05 and 11, together: the right option is the strictly longest in at most one in six."""
    singles = [q for s in ("00", "01", "02", "03", "04", "05", "11") for q in bank.sets[s].questions if q.kind == "single"]
    longest = [q.id for q in singles if strictly_longest(q)]
    assert len(longest) <= len(singles) / 6, longest


def test_repeated_questions_stand_alone_outside_their_notebook(bank):
    for qid in bank.sets["11"].include:
        text = bank.question(qid).text.lower()
        for pointer in ("that layer", "this layer", "the same layer", "the previous question", "above"):
            assert pointer not in text, (qid, pointer)


# --------------------------------------------------------------------------- the public API under hypothesis
#
# Hostile input of every kind: each case either gives an answer of the documented type or a
# ValueError/BankError with a message; nothing else escapes, and each case has a bounded time.

from datetime import timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

BOUNDED = settings(deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.function_scoped_fixture])
ANY_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=4),
    max_leaves=25,
)


@BOUNDED
@given(st.text(max_size=300) | st.binary(max_size=50).map(lambda b: b.decode("latin-1")))
def test_parse_number_returns_a_finite_number_or_none(text):
    value = parse_number(text)
    assert value is None or (isinstance(value, float) and math.isfinite(value))


@BOUNDED
@given(st.integers(1, 999), st.integers(1, 99))
def test_parse_number_never_joins_two_numbers_typed_with_a_space(a, b):
    assert parse_number(f"{a} {b}") is None  # '3 6' is not 36, and '12 34' is not 1234


@BOUNDED
@given(st.integers(0, 10**12))
def test_parse_number_reads_grouped_and_plain_integers(n):
    assert parse_number(f"{n:,}") == n and parse_number(str(n)) == n and parse_number(f"{n:_}") == n


@BOUNDED
@given(st.one_of(st.text(max_size=50), st.integers(), st.floats(), st.none(), st.booleans(), st.lists(st.integers(), max_size=2)))
def test_normalise_set_id_gives_a_valid_id_or_lists_the_valid_ones(set_id):
    try:
        result = normalise_set_id(set_id)
    except ValueError as exc:
        assert "valid quizzes are 00, 01" in str(exc)
    else:
        assert result in SET_IDS


@BOUNDED
@given(ANY_JSON)
def test_any_json_in_a_set_file_costs_only_that_set(tmp_path_factory, raw):
    directory = write_bank(tmp_path_factory.mktemp("bank"), good_sets())
    (directory / "04.json").write_text(json.dumps(raw))
    bank = load_bank(directory)
    assert set(bank.sets) >= set(SET_IDS) - {"04", "11"} and "04" in bank.problems
    assert bank.problems["04"].startswith("04.json")


@BOUNDED
@given(st.binary(max_size=400))
def test_any_bytes_in_a_set_file_cost_only_that_set(tmp_path_factory, data):
    directory = write_bank(tmp_path_factory.mktemp("bank"), good_sets())
    (directory / "04.json").write_bytes(data)
    bank = load_bank(directory)
    assert "04" in bank.problems and set(bank.sets) >= set(SET_IDS) - {"04", "11"}


@BOUNDED
@given(st.data())
def test_a_mutated_question_loads_or_is_refused_with_a_bank_error(tmp_path_factory, data):
    sets = good_sets()
    questions = sets["03"]["questions"]
    q = questions[data.draw(st.integers(0, len(questions) - 1))]
    key = data.draw(st.sampled_from(sorted(q) + ["answer", "options", "misconceptions", "typo"]))
    q[key] = data.draw(ANY_JSON)
    directory = write_bank(tmp_path_factory.mktemp("bank"), sets)
    try:
        load_bank(directory, strict=True)
    except BankError as exc:
        assert str(exc).startswith("03.json")


@BOUNDED
@given(st.floats(allow_nan=False, allow_infinity=False) | st.integers(-10**20, 10**20))
def test_numeric_grading_takes_any_number(value):
    for q in load_bank().all_questions():
        if q.kind == "numeric":
            verdict = grade_numeric(q, value)
            assert verdict.correct == (abs(value - q.answer) <= q.tolerance)


@BOUNDED
@given(st.lists(st.integers(0, 5), max_size=6), st.booleans())
def test_choice_grading_takes_any_chosen_set_or_says_why_not(chosen, show_missed):
    q = load_bank().question("02-softmax-row")
    try:
        verdict = grade_choice(q, chosen, show_missed=show_missed)
    except ValueError as exc:
        assert "chosen=" in str(exc)
    else:
        assert verdict.correct == (set(chosen) == set(q.correct_indices))
        if not verdict.correct and not show_missed:
            assert "missed" not in verdict.text()


# --------------------------------------------------------------------------- the review for a class that stops after 05


def test_the_review_through_05_shows_only_what_notebooks_01_to_05_taught(bank):
    shown = bank.questions("11", through="05")
    repeated = [q for q in shown if q.set_id != "11"]
    assert [q.set_id for q in repeated] == ["01", "02", "03", "04", "05"]
    # The review's own questions draw on the core only, so both classes get them.
    assert [q.id for q in shown if q.set_id == "11"] == list(bank.sets["11"].question_ids)


def test_the_review_through_10_is_the_whole_review(bank):
    assert bank.questions("11", through="10") == bank.questions("11")
    assert {q.set_id for q in bank.questions("11")} == set(NOTEBOOK_SETS) | {"11"}


@pytest.mark.parametrize("through", ["5", 5, "06", "07", "08"])
def test_the_review_can_stop_after_any_notebook(bank, through):
    last = f"{int(through):02d}"
    repeated = {q.set_id for q in bank.questions("11", through=through) if q.set_id != "11"}
    assert repeated == {s for s in NOTEBOOK_SETS if s <= last}


@pytest.mark.parametrize("through", ["00", "11", "12", "x", 3.5, True, ""])
def test_a_bad_through_names_the_parameter_and_the_choices(bank, through):
    with pytest.raises(ValueError, match=r"through=.* valid choices are 01, 02, .* 10"):
        bank.questions("11", through=through)


def test_through_applies_only_to_the_review(bank):
    with pytest.raises(ValueError, match=r"through= applies only to the review \(11\)"):
        bank.questions("03", through="05")


def test_the_review_asks_nothing_the_core_notebooks_did_not_teach(bank):
    # A class that stops after 05 meets no term defined only in 06-10.
    later_terms = ("KV cache", "KV-cache", "MQA", "GQA", "grouped-query", "multi-query", "MiniLM", "pruning", "seed")
    for q in bank.sets["11"].questions:
        words = " ".join([q.text, q.explanation, *(o.text + " " + o.feedback for o in q.options)])
        assert not [t for t in later_terms if t in words], q.id


@pytest.mark.parametrize("typed", ["2 x 10^a5", "1 x 10^400", "2 x 10^0005", "1e999", "2 x 10^5a"])
def test_a_malformed_or_overflowing_power_of_ten_is_no_number_never_an_error(typed):
    from mha_classroom.quiz.numbers import parse_number

    assert parse_number(typed) is None


@pytest.mark.parametrize("typed, value", [("3 x 10^-2", 0.03), ("3 x 10^−2", 0.03), ("3 x 10^+2", 300.0), ("1.26 × 10^7", 1.26e7)])
def test_a_power_of_ten_takes_a_plus_a_minus_or_a_true_minus_sign(typed, value):
    from mha_classroom.quiz.numbers import parse_number

    assert parse_number(typed) == pytest.approx(value)
