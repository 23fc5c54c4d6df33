"""A control group in a handout: every declared setting recorded by driving the real controls, then put back."""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ipywidgets")

from benchmarks.controls_registry import GROUPS
from mha_classroom.describe import in_words
from mha_classroom.widgets import _states
from mha_core.costs import MODEL_SHAPES
from mha_core.tables import kv_head_choices

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
import handout_controls  # noqa: E402


def build(name):
    return GROUPS[name].build()


def values_of(data, state):
    """A recorded state's settings as values, by control attribute."""
    return {c["attr"]: c["values"][i] for c, i in zip(data["controls"], state["values"])}


def test_every_step_of_a_slider_is_one_setting_starting_from_the_default():
    group = build("welcome")
    data = _states.record(group)
    (control,) = data["controls"]
    steps = [float(v) for v in np.arange(0.0, 4.0 + 1e-9, 0.25)]
    assert control["values"] == pytest.approx(steps) and control["kind"] == "range"
    assert [values_of(data, s)["slider"] for s in data["states"]][0] == 1.0  # the page opens on the default
    assert sorted(values_of(data, s)["slider"] for s in data["states"]) == pytest.approx(steps)
    assert data["mode"] == "every" and data["sentence"] == ""


def test_each_recorded_figure_is_what_the_group_draws_at_that_setting():
    recorded = _states.record(build("single_head.mask"))
    fresh = build("single_head.mask")
    assert [values_of(recorded, s)["mode"] for s in recorded["states"]] == ["none", "causal", "padding"]
    for state in recorded["states"]:
        fresh.mode.value = values_of(recorded, state)["mode"]
        spec = _states._figure_json(fresh)
        assert state["figure"] == spec
        assert state["words"] == {"name": in_words(spec).name, "description": in_words(spec).description}
    titles = {s["figure"]["layout"]["title"]["text"] for s in recorded["states"]}
    assert len(titles) == 3  # three masks, three different figures


def test_every_combination_when_there_are_few_and_the_controls_end_where_they_started():
    group = build("projection.head_switches")
    before = _states._figure_json(group)
    data = _states.record(group)
    combos = {tuple(values_of(data, s)[f"switches[{h}]"] for h in range(4)) for s in data["states"]}
    assert data["mode"] == "every" and len(data["states"]) == 16
    assert combos == set(itertools.product([True, False], repeat=4))
    assert all(box.value for box in group.switches)
    assert _states._figure_json(group) == before
    all_off = next(s for s in data["states"] if not any(values_of(data, s).values()))
    assert "Every head is off" in all_off["texts"]["message"]
    assert data["states"][0]["texts"]["message"] == ""


def test_past_max_states_each_control_moves_on_its_own_and_the_page_says_so():
    group = build("sizing.head_sizing")
    group.handout_bases = ()  # its declaration starts from every T; without bases, one control at a time
    data = _states.record(group)
    start = values_of(data, data["states"][0])
    assert start == {"d_model": 768, "n_heads": 12, "n_tokens": 1024}
    assert data["mode"] == "one" and data["sentence"] == _states.ONE_AT_A_TIME
    moved = [{k for k, v in values_of(data, s).items() if v != start[k]} for s in data["states"][1:]]
    assert all(len(m) == 1 for m in moved)
    assert len(data["states"]) == 1 + (9 - 1) + (64 - 1) + (6 - 1)
    assert (group.d_model.value, group.n_heads.value, group.n_tokens.value) == (768, 12, 1024)
    ten = next(s for s in data["states"] if values_of(data, s)["n_heads"] == 10)
    assert "Nearest valid head counts: 8 or 12" in ten["texts"]["message"] and ten["texts"]["readout"] == ""
    assert "<b>64</b>" in data["states"][0]["texts"]["readout"] and data["states"][0]["texts"]["message"] == ""


def test_from_each_base_the_other_controls_move_on_their_own():
    group = build("serving.kv_cache_calculator")
    data = _states.record(group)
    assert data["mode"] == "bases" and "model and cache keeps" in data["sentence"]
    by_base = {}
    for state in data["states"]:
        values = values_of(data, state)
        by_base.setdefault((values["model"], values["window"]), []).append(values)
    assert {model for model, _ in by_base} == set(group.model.options)
    for (model, window), settings in by_base.items():
        start, shape = settings[0], MODEL_SHAPES[model]
        assert start["n_kv_heads"] == shape.n_kv_heads
        assert all(sum(v != start[k] for k, v in s.items()) <= 1 for s in settings)
        assert {s["n_kv_heads"] for s in settings} == set(kv_head_choices(shape.n_heads))
        assert window or shape.sliding_window  # only a model with a window keeps every token as a choice
    assert len(by_base) == len(group.model.options) + 1  # Mistral-7B v0.1 with and without its window
    assert (group.model.value, group.n_kv_heads.value, group.window.value) == ("Llama-2-7B", 32, True)
    kinds = {c["attr"]: c["kind"] for c in data["controls"]}
    assert kinds["n_tokens"] == "range" and kinds["n_kv_heads"] == "radio"  # the KV choices differ per model


def test_settings_lists_what_record_walks_through_without_recording():
    group = build("heads.head_grid")
    assert _states.settings(group) == [[4], [1], [2], [8], [16]]
    assert group.head_count.value == 4


class _Bad:
    """A stand-in group holding the real d_head slider, with a declaration to break."""

    def __init__(self, controls, bases=()):
        real = build("single_head.scaling")
        self.d_head, self.figure = real.d_head, real.figure
        self.handout_controls = controls
        self.handout_bases = bases


@pytest.mark.parametrize(("controls", "bases", "error", "words"), [
    ({"d_heads": None}, (), ValueError, ["'d_heads'", "not an attribute", "d_head"]),
    ({"d_head[3]": None}, (), ValueError, ["'d_head[3]'", "holds 0 controls"]),
    ({"d head": None}, (), ValueError, ["'d head'", "valid spellings"]),
    ({"d_head": [5]}, (), ValueError, ["d_head=5", "refuses", "valid values are 4, 8, 16"]),
    ({"figure": None}, (), ValueError, ["'figure'", "not a control"]),
    ({}, (), TypeError, ["handout_controls must give a non-empty dict"]),
    ({"d_head": None}, ("mask",), ValueError, ["handout_bases names ['mask']", "valid names are d_head"]),
])
def test_a_bad_declaration_is_named_clearly(controls, bases, error, words):
    with pytest.raises(error) as raised:
        _states.record(_Bad(controls, bases))
    for word in words:
        assert word in str(raised.value)


def test_a_slider_value_it_would_clamp_is_refused_by_name():
    group = build("sizing.head_sizing")
    group.handout_controls, group.handout_bases = {"n_heads": [99]}, ()
    with pytest.raises(ValueError, match=r"n_heads=99; the control holds 64 instead"):
        _states.record(group)
    assert group.n_heads.value == 12  # put back even after the error


def test_static_display_shows_one_output_of_data_only(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.append((objs, kw)))
    _states.static_display(build("qkv.token_explorer"))
    ((objs, kw),) = shown
    (bundle,) = objs
    assert kw == {"raw": True} and set(bundle) == {_states.STATES_MIME, "text/plain"}
    data = bundle[_states.STATES_MIME]
    assert len(data["states"]) == 6 and data["controls"][0]["labels"][0] == "the"


def test_a_group_without_a_declaration_shows_its_figure_and_the_live_note(monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.append(objs))
    group = build("heads.head_grid")
    group.handout_controls = None
    _states.static_display(group)
    ((figure, note),) = shown
    assert figure.layout.title.text == group.figure.layout.title.text
    assert "live in JupyterLab" in note.data


def test_the_page_keeps_each_figure_as_a_change_that_rebuilds_it_exactly():
    data = _states.record(build("pretrained.layer_head_explorer"))
    page = handout_controls.states_page_data(data)
    first = data["states"][0]["figure"]
    for i, state in enumerate(data["states"]):
        assert handout_controls.page_figure(page, first, i) == state["figure"]
    whole = sum(len(repr(s["figure"])) for s in data["states"])
    assert len(repr(page["states"])) < whole / 2  # what differs, not every figure whole


def test_the_reviews_progress_shows_the_sections_in_a_handout(monkeypatch):
    import IPython.display

    from mha_classroom.quiz.progress_view import STATIC_PROGRESS_NOTE, show_progress

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.append(objs))
    monkeypatch.setenv("MHA_COURSE_STATIC", "1")
    monkeypatch.setenv("MHA_COURSE_PROGRESS", "/nonexistent/progress.sqlite3")
    view = show_progress(show=True)
    ((table,),) = shown
    assert STATIC_PROGRESS_NOTE.split(":")[0] in table.data
    rows = table.data.count("<tr>") - 1
    assert rows == len(view.bank.sets) - ("00" in view.bank.sets) + 1  # sets 01-10, then the course
    assert "Tried" not in table.data  # no columns that would always read zero
