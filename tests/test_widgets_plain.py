"""The course's one figure diff (``mha_classroom.widgets._plain``): ``figure_diff`` and the functions that apply it.

The cases of ``tests/diff_cases.json`` are checked here and, for the page's inverse (``js/diff.js``), in
``tests/js/diff.test.js``."""

import json
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mha_classroom.widgets._plain import _plain, apply_diff, apply_to_figure, figure_diff

CASES = json.loads((Path(__file__).with_name("diff_cases.json")).read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_each_shared_case_gives_its_diff_and_the_diff_gives_the_new_figure(case):
    diff = figure_diff(case["old"], case["new"])
    assert diff == case["diff"]
    assert apply_diff(case["old"], diff) == case["new"]


def test_applying_a_diff_leaves_the_old_figure_and_the_diff_as_they_were():
    old = {"data": [{"type": "bar", "y": [1]}], "layout": {"title": {"text": "a"}, "xaxis": {"type": "log"}}}
    new = {"data": [{"type": "bar", "y": [2]}], "layout": {"title": {"text": "b"}, "xaxis": {"type": "log"}}}
    kept_old, diff = json.dumps(old), figure_diff(old, new)
    kept_diff = json.dumps(diff)
    out = apply_diff(old, diff)
    assert json.dumps(old) == kept_old and json.dumps(diff) == kept_diff
    assert out["layout"]["xaxis"] is old["layout"]["xaxis"]  # what the diff leaves alone is shared, not copied


def test_numpy_arrays_are_compared_by_content():
    old = {"data": [{"type": "bar", "y": np.array([1.0, 2.0])}], "layout": {}}
    assert figure_diff(old, {"data": [{"type": "bar", "y": np.array([1.0, 2.0])}], "layout": {}}) is None
    diff = figure_diff(old, {"data": [{"type": "bar", "y": np.array([2.0, 1.0])}], "layout": {}})
    np.testing.assert_array_equal(diff["u"]["data"]["u"]["0"]["s"]["y"], [2.0, 1.0])


def test_figure_diff_names_what_it_cannot_compare():
    with pytest.raises(TypeError, match="old=int, new=list"):
        figure_diff(1, [])


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_a_plotly_figure_changed_by_the_diff_holds_the_new_figure(case):
    if "title" in case["old"]["layout"] and not isinstance(case["old"]["layout"]["title"], dict):
        pytest.skip("plotly spells a string title as {text}: not a plain figure of its own")
    target = go.Figure(case["old"])
    apply_to_figure(target, figure_diff(_plain(case["old"]), _plain(case["new"])))
    want = go.Figure(case["new"])
    assert target.to_plotly_json()["layout"] == want.to_plotly_json()["layout"]
    assert [t.to_plotly_json() for t in target.data] == [t.to_plotly_json() for t in want.data]


leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text("ab", max_size=2),
                 st.lists(st.integers(0, 3), max_size=3))
tree = st.recursive(leaf, lambda inner: st.one_of(
    st.dictionaries(st.sampled_from(["a", "b", "c", "type"]), inner, max_size=3),
    st.lists(st.dictionaries(st.sampled_from(["a", "type"]), inner, max_size=2), min_size=1, max_size=3)), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(["data", "layout", "x"]), tree, max_size=3),
       st.dictionaries(st.sampled_from(["data", "layout", "x"]), tree, max_size=3))
def test_the_diff_of_any_two_figures_turns_the_first_into_the_second(old, new):
    assert apply_diff(old, figure_diff(old, new)) == new
    assert figure_diff(new, new) is None
