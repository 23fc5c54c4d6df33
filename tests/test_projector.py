"""The projector theme: one switch to projector sizes and back, light to import, read by the builders."""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import mha_core
from mha_core import projector

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def laptop_theme_after():
    """Every test leaves the theme as it found it (the laptop sizes)."""
    before, style = projector.theme(), projector._style_widget
    yield
    projector._current, projector._style_widget = before, style


def _python(code: str, **env) -> dict:
    """Run ``code`` in a fresh interpreter (this worktree first on the path); it prints one JSON line."""
    environ = {k: v for k, v in os.environ.items() if k != projector.PRESENTER_ENV}
    environ.update(PYTHONPATH=str(ROOT), **env)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=environ, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_presenter_switches_to_projector_sizes_and_back():
    assert projector.theme() == projector.LAPTOP
    on = mha_core.presenter(True)
    assert on is projector.theme() is projector.PROJECTOR and projector.enabled()
    assert min(on.font_size, on.title_size, on.cell_text_size, on.control_font_size) >= 20
    off = mha_core.presenter(False)
    assert off is projector.theme() is projector.LAPTOP and not projector.enabled()
    assert off.font_size == 16


def test_projector_sizes_are_larger_than_laptop_sizes_in_every_field():
    for field in ("font_size", "title_size", "cell_text_size", "control_font_size", "control_height", "slider_handle_size"):
        assert getattr(projector.PROJECTOR, field) > getattr(projector.LAPTOP, field), field


def test_presenter_refuses_anything_but_true_or_false():
    with pytest.raises(TypeError, match="on must be True or False; got 'yes'"):
        mha_core.presenter("yes")
    assert projector.theme() == projector.LAPTOP


def test_importing_the_module_does_not_hide_the_function():
    # A module named mha_core.presenter would replace the function on first import; projector cannot.
    import mha_core.projector  # noqa: F401

    assert callable(mha_core.presenter)
    assert mha_core.presenter is projector.presenter


def test_import_stays_light_and_presenter_loads_no_plotly_or_ipywidgets():
    loaded = _python(
        "import sys, json, mha_core; mha_core.presenter(True); "
        "print(json.dumps({m: m in sys.modules for m in ('plotly', 'ipywidgets', 'torch')}))"
    )
    assert loaded == {"plotly": False, "ipywidgets": False, "torch": False}


@pytest.mark.parametrize("value, projector_on", [("1", True), ("0", False), ("", False)])
def test_the_environment_variable_is_read_at_import(value, projector_on):
    state = _python("import json, mha_core.projector as p; print(json.dumps(p.enabled()))",
                    **{projector.PRESENTER_ENV: value})
    assert state is projector_on


def test_controls_css_is_empty_for_the_laptop_and_sizes_every_control_for_the_projector():
    assert projector.controls_css(projector.LAPTOP) == ""
    css = projector.controls_css(projector.PROJECTOR)
    assert css.startswith("<style>") and css.endswith("</style>")
    assert "--jp-widgets-font-size: 20px" in css
    assert "--jp-widgets-slider-handle-size: 26px" in css
    assert ".widget-toggle-button" in css and ".widget-readout" in css


# --------------------------------------------------------------------------- builders read the theme


def test_base_layout_and_weight_cells_take_their_sizes_from_the_theme_argument_not_the_theme_in_use():
    pytest.importorskip("plotly")
    from mha_core.figures._style import base_layout, weights_heatmap_trace

    weights = np.full((2, 2), 0.5)
    assert base_layout("t", theme=projector.LAPTOP)["font"]["size"] == 16
    assert weights_heatmap_trace(weights, "ab", "ab", theme=projector.LAPTOP)["textfont"]["size"] == 16
    layout = base_layout("t", theme=projector.PROJECTOR)  # while the laptop theme is in use
    assert layout["font"]["size"] == 20 and layout["title"]["font"]["size"] == 24
    assert layout["hoverlabel"]["font"]["size"] == 20
    assert weights_heatmap_trace(weights, "ab", "ab", theme=projector.PROJECTOR)["textfont"]["size"] == 20
    mha_core.presenter(True)
    assert base_layout("t", theme=projector.LAPTOP)["font"]["size"] == 16  # the argument wins over the switch
    with pytest.raises(TypeError, match="missing 1 required keyword-only argument: 'theme'"):
        base_layout("t")  # a helper never falls back to a global


def test_a_wrapped_title_takes_the_themes_line_height_from_the_top_margin():
    pytest.importorskip("plotly")
    from mha_core.figures._style import base_layout, title_chars

    long = "word " * 40
    for theme in (projector.LAPTOP, projector.PROJECTOR):
        layout = base_layout(long, theme=theme, margin=dict(t=70))
        lines = layout["title"]["text"].split("<br>")
        assert all(len(line) <= title_chars(theme) for line in lines)
        assert layout["margin"]["t"] == 70 + theme.title_line_px * (len(lines) - 1)
    assert title_chars(projector.PROJECTOR) < title_chars(projector.LAPTOP)


def test_a_live_control_built_under_the_projector_theme_draws_projector_sizes():
    pytest.importorskip("ipywidgets")
    from mha_classroom.widgets.heads import head_grid

    mha_core.presenter(True)
    grid = head_grid(d_model=16, n_heads=4, seed=0)
    assert grid.figure.layout.font.size == 20
    assert grid.figure.layout.title.font.size == 24
    grid.head_count.value = 8  # a moved control keeps the theme it was built with
    assert grid.figure.layout.font.size == 20
    assert len(grid.figure.layout.annotations) == 8


def test_messages_beside_a_control_use_the_control_font_size():
    pytest.importorskip("ipywidgets")
    from mha_classroom.widgets._base import message_box, show_message

    box = message_box()
    show_message(box, "n_heads=5 does not divide d_model=16")
    assert "font-size:16px" in box.value
    mha_core.presenter(True)
    show_message(box, "n_heads=5 does not divide d_model=16")
    assert "font-size:20px" in box.value


def test_in_a_notebook_presenter_puts_one_style_on_the_page_and_empties_it_when_switched_off(monkeypatch):
    pytest.importorskip("ipywidgets")
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())  # as if inside a kernel
    monkeypatch.setattr(IPython.display, "display", shown.append)
    monkeypatch.delenv("MHA_COURSE_STATIC", raising=False)
    projector._style_widget = None

    mha_core.presenter(True)
    (style,) = shown
    assert style.value == projector.controls_css(projector.PROJECTOR)
    mha_core.presenter(False)
    assert style.value == "" and len(shown) == 1  # the same element, emptied: controls shrink back
    mha_core.presenter(True)
    assert style.value == projector.controls_css(projector.PROJECTOR)


def test_static_handouts_get_no_style_widget(monkeypatch):
    import IPython
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython, "get_ipython", lambda: object())
    monkeypatch.setattr(IPython.display, "display", shown.append)
    monkeypatch.setenv("MHA_COURSE_STATIC", "1")
    projector._style_widget = None
    assert mha_core.presenter(True) is projector.PROJECTOR
    assert shown == []


# --------------------------------------------------------------------------- every size from the theme


def _text_sizes(node, path=""):
    """(path, size) for every explicit text size in a figure's JSON: each ``size`` inside a font
    (layout.font, title.font, tickfont, textfont, legend.font, hoverlabel.font, annotations' fonts,
    colour bars' fonts, table header and cell fonts...), a list of sizes counted one by one."""
    found = []
    if isinstance(node, dict):
        in_font = "font" in path.rsplit(".", 1)[-1].lower()
        for key, value in node.items():
            here = f"{path}.{key}" if path else key
            if key == "size" and in_font:
                found += [(here, v) for v in (value if isinstance(value, (list, tuple)) else [value])]
            else:
                found += _text_sizes(value, here)
    elif isinstance(node, (list, tuple)):
        for i, value in enumerate(node):
            found += _text_sizes(value, f"{path}[{i}]")
    return found


def test_the_size_collector_finds_fonts_at_every_depth_and_ignores_marker_sizes():
    fig = {"layout": {"font": {"size": 20}, "annotations": [{"font": {"size": 13}}],
                      "xaxis": {"tickfont": {"size": 9}, "title": {"font": {"size": 24}}}},
           "data": [{"marker": {"size": 5}, "textfont": {"size": [11, 30]}, "colorbar": {"title": {"font": {"size": 8}}}}]}
    assert sorted(s for _, s in _text_sizes(fig)) == [8, 9, 11, 13, 20, 24, 30]


def _builder_calls():
    """One call per figure builder in mha_core.figures, on small inputs: name -> f(theme) -> figure or spec."""
    from mha_core import costs, tables
    from mha_core.analysis import scaling_experiment, scaling_gradients
    from mha_core.figures import decoder_circuits, heads, induction, pretrained, projection, qkv, serving, single_head, sizing, toy, welcome

    rng = np.random.default_rng(0)
    tokens = ["the", "cache", "key", "changed", "after", "deploy"]
    T, D, H = len(tokens), 8, 2
    w = rng.random((H, T, T))
    w /= w.sum(-1, keepdims=True)  # (H, T, T), rows sum to 1
    x, q = rng.normal(size=(T, D)), rng.normal(size=(T, D))
    rel = ("previous token", "two back", "largest so far")
    calibration = {"paraphrase": (0.46, 0.78, 0.95), "unrelated": (-0.05, 0.02, 0.09)}
    minilm = ["[CLS]", *tokens, "[SEP]"]
    w12 = rng.random((12, 8, 8))
    w12 /= w12.sum(-1, keepdims=True)  # (12, T, T)
    llama = costs.MODEL_SHAPES["Llama-2-7B"]
    calc = tables.calculator_rows(llama, n_tokens=4096, batch=1, bytes_per_value=2, memory_bytes=80 * 2**30)
    sizing_rows = tables.sizing_rows(768, 1024, [1, 2, 4, 8, 12, 16])
    scaling = scaling_experiment(seed=0)

    class Sweep:  # a measured head sweep's fields, without measuring
        d_model, head_counts, token_counts = 16, (1, 4), (8, 16)
        seconds = np.array([[1e-3, 2e-3], [3e-3, 4e-3]])
        flops = np.array([[1e6, 1.1e6], [2e6, 2.4e6]])
        kv_bytes_per_token = np.array([128, 128])

    steps_table = {"max_steps": 30000, "target_accuracy": 0.99, "seeds": [0, 1], "rows": [
        {"n_heads": h, "seed": s, "steps": 100 * (h + s + 1), "reached": True} for h in (1, 3) for s in (0, 1)]}
    sweep = {"d_model": 48, "steps": 800, "rows": [
        {"n_heads": 1, "d_head": 48, "accuracy": [0.7, 0.8], "mean": 0.75, "min": 0.7, "max": 0.8},
        {"n_heads": 8, "d_head": 6, "accuracy": [0.99, 0.97], "mean": 0.98, "min": 0.97, "max": 0.99}]}
    greedy = [((), np.ones(3)), ((1,), np.array([1, 0.2, 1])), ((1, 0), np.array([0.1, 0.1, 0.5]))]
    names = [f"L{l + 1} H{h + 1}" for l in range(6) for h in range(12)]
    sim72 = rng.random((72, 72))
    contributions = rng.normal(size=(H, D))
    return {
        "welcome.weights_bar_figure": lambda t: welcome.weights_bar_figure(w[0, 0], tokens, query_token="key",
                                                                           sharpness=1.0, theme=t),
        "qkv.token_vectors_figure": lambda t: qkv.token_vectors_figure(x, tokens, theme=t),
        "qkv.qkv_matrices_figure": lambda t: qkv.qkv_matrices_figure(x[:, :4], x[:, 4:], q[:, :4], tokens, theme=t),
        "qkv.token_qkv_figure": lambda t: qkv.token_qkv_figure(x[:, :4], x[:, 4:], q[:, :4], tokens, 1, theme=t),
        "qkv.token_qkv_spec": lambda t: qkv.token_qkv_spec(x[:, :4], x[:, 4:], q[:, :4], tokens, 1, theme=t),
        "qkv.score_table_figure": lambda t: qkv.score_table_figure(x @ q.T, tokens, tokens, theme=t),
        "qkv.meaning_figure": lambda t: qkv.meaning_figure(x[:, :3], x[:, 0], tokens, ["a", "b", "c"], "key", theme=t),
        "single_head.softmax_spread_figure": lambda t: single_head.softmax_spread_figure({"s": w[0, 0], "10 s": w[1, 0]},
                                                                                         tokens, theme=t),
        "single_head.scores_and_weights_figure": lambda t: single_head.scores_and_weights_figure(x @ q.T, w[0], tokens,
                                                                                                 theme=t),
        "single_head.scaling_figure": lambda t: single_head.scaling_figure(scaling, 4, theme=t),
        "single_head.scaling_spec": lambda t: single_head.scaling_spec(scaling, 4, theme=t),
        "single_head.saturation_figure": lambda t: single_head.saturation_figure(scaling_gradients(n_queries=8), theme=t),
        "single_head.masked_weights_figure": lambda t: single_head.masked_weights_figure(
            w[0], tokens, tokens, np.triu(np.ones((T, T), bool), 1), title="causal", theme=t),
        "single_head.masked_weights_spec": lambda t: single_head.masked_weights_spec(
            w[0], tokens, tokens, np.triu(np.ones((T, T), bool), 1), title="causal", theme=t),
        "heads.head_grid_figure": lambda t: heads.head_grid_figure(np.concatenate([w, w, w]), tokens, theme=t),
        "heads.head_grid_spec": lambda t: heads.head_grid_spec(w, tokens, theme=t),
        "heads.head_split_figure": lambda t: heads.head_split_figure(q, 2, tokens, theme=t),
        "heads.w_q_slices_figure": lambda t: heads.w_q_slices_figure(rng.normal(size=(D, D)), 2, theme=t),
        "heads.token_views_figure": lambda t: heads.token_views_figure(q[:2, :4], w[:, 0], tokens, query_token="key",
                                                                       theme=t),
        "heads.hand_set_figure": lambda t: heads.hand_set_figure(np.concatenate([w, w[:1]]), tokens,
                                                                 ["a: b", "c: d", "e: f"], theme=t),
        "projection.concat_figure": lambda t: projection.concat_figure(q[:2, :4], token="key", theme=t),
        "projection.w_o_blocks_figure": lambda t: projection.w_o_blocks_figure(rng.normal(size=(D, D)), 2, theme=t),
        "projection.contributions_figure": lambda t: projection.contributions_figure(
            contributions, None, np.array([False, True]), output=contributions[0], output_all=contributions.sum(0),
            token="key", theme=t),
        "projection.contributions_spec": lambda t: projection.contributions_spec(
            contributions, None, np.array([False, False]), output=contributions.sum(0),
            output_all=contributions.sum(0), token="key", theme=t),
        "sizing.sizing_figure": lambda t: sizing.sizing_figure(sizing_rows, n_heads=12, theme=t),
        "sizing.sizing_spec": lambda t: sizing.sizing_spec(sizing_rows, n_heads=5, theme=t),
        "sizing.vaswani_figure": lambda t: sizing.vaswani_figure(theme=t),
        "sizing.model_shapes_figure": lambda t: sizing.model_shapes_figure(list(costs.MODEL_SHAPES.values())[:3],
                                                                           theme=t),
        "serving.growth_figure": lambda t: serving.growth_figure(tables.growth_rows(llama, [512, 4096]), theme=t),
        "serving.head_sweep_figure": lambda t: serving.head_sweep_figure(Sweep(), theme=t),
        "serving.calculator_figure": lambda t: serving.calculator_figure(calc, 8, theme=t),
        "serving.calculator_spec": lambda t: serving.calculator_spec(calc, 32, theme=t),
        "induction.training_figure": lambda t: induction.training_figure(
            [10, 20], rng.random((2, 2)) * 4, [0, 10, 20], rng.random((3, 2, 2)), rng.random((3, 2, 2)),
            chance_previous=0.12, chance_induction=0.05, threshold=0.4, max_steps=600, theme=t),
        "induction.head_scores_figure": lambda t: induction.head_scores_figure(
            rng.random((2, 2)), rng.random((2, 2)), chance_previous=0.12, chance_induction=0.05, threshold=0.4, theme=t),
        "induction.induction_pattern_figure": lambda t: induction.induction_pattern_figure(
            np.tril(np.full((25, 25), 1 / 25)), np.arange(25), 12, head="L2 H2", theme=t),
        "induction.composition_figure": lambda t: induction.composition_figure(
            {"varying": rng.random((2, 2)) / 4, "fixed": rng.random((2, 2)) / 4}, 0.176, 0.011, theme=t),
        "induction.ablation_figure": lambda t: induction.ablation_figure(0.81, 0.63, 0.13, 3.73, label="L1 H1 off (zero)",
                                                                         chance_induction=0.05, theme=t),
        "decoder_circuits.head_scores_scatter_figure": lambda t: decoder_circuits.head_scores_scatter_figure(
            rng.random((30, 9)), rng.random((30, 9)), chance_previous=0.07, chance_induction=0.03,
            induction_heads=[(19, 7), (18, 6)], previous_heads=[(17, 1)], threshold=0.4, theme=t),
        "toy.example_targets_figure": lambda t: toy.example_targets_figure([5, 1, 2, 7], rng.random((3, 4, 4)) > 0.5,
                                                                           rel, theme=t),
        "toy.role_history_figure": lambda t: toy.role_history_figure([0, 10], rng.random((2, 3, 3)), rel, max_steps=100,
                                                                     validate=False, theme=t),
        "toy.role_table_figure": lambda t: toy.role_table_figure(rng.random((3, 3)), rel, theme=t),
        "toy.accuracy_comparison_figure": lambda t: toy.accuracy_comparison_figure(
            {"1 head": [0.5, 0.6, 0.7], "3 heads": [1, 1, 1]}, rel, baselines={"chance": [0.1, 0.1, 0.1]}, theme=t),
        "toy.steps_to_target_figure": lambda t: toy.steps_to_target_figure(steps_table, budget=300, theme=t),
        "toy.share_and_removal_figure": lambda t: toy.share_and_removal_figure(rng.random((2, 3)), rng.random((2, 3)),
                                                                               rel, theme=t),
        "toy.key_similarity_figure": lambda t: toy.key_similarity_figure(rng.random((2, 8)), 3, theme=t),
        "toy.similarity_matrix_figure": lambda t: toy.similarity_matrix_figure(rng.random((3, 3)), theme=t),
        "toy.ablation_figure": lambda t: toy.ablation_figure([0.5, 0.6, 0.7], rel, np.array([True, False, False]),
                                                             baseline=[1, 1, 1], baselines={"chance": [0.1] * 3},
                                                             validate=False, theme=t),
        "toy.removal_figure": lambda t: toy.removal_figure(np.array([[0.3, 1, 1], [1, 0.2, 1]]), greedy, rel, theme=t),
        "toy.bottleneck_figure": lambda t: toy.bottleneck_figure(sweep, theme=t),
        "pretrained.head_map_figure": lambda t: pretrained.head_map_figure(rng.random((6, 12)),
                                                                           np.full((6, 12), "word", dtype=object),
                                                                           title="t", theme=t),
        "pretrained.layer_heads_figure": lambda t: pretrained.layer_heads_figure(w12, minilm, layer=0, head=2,
                                                                                 validate=False, theme=t),
        "pretrained.layer_heads_figure (32 tokens)": lambda t: pretrained.layer_heads_figure(
            np.full((12, 32, 32), 1 / 32), [f"w{i}" for i in range(32)], layer=1, head=0, theme=t),
        "pretrained.head_similarity_figure": lambda t: pretrained.head_similarity_figure(sim72, range(72), names,
                                                                                         theme=t),
        "pretrained.pruning_step_figure": lambda t: pretrained.pruning_step_figure(
            np.array([0.99, 0.9, 0.97]), ["a b", "c d", "e f"], n_removed=3, threshold=0.95, ranking_accuracy=0.9,
            ranking_accuracy_full=0.95, calibration=calibration, validate=False, theme=t),
        "pretrained.pruning_curve_figure": lambda t: pretrained.pruning_curve_figure(
            [0, 1, 2], [1, 0.99, 0.97], [1, 0.98, 0.96], [1, 0.97, 0.9], threshold=0.95, calibration=calibration,
            theme=t),
        "pretrained.removal_effect_figure": lambda t: pretrained.removal_effect_figure(
            rng.random((6, 12)), 1 - rng.random((6, 12)) / 10, named=[(0, 2)], calibration=calibration, theme=t),
    }


def _public_builders() -> set[str]:
    """Every public ``*_figure`` / ``*_spec`` function of the figure modules, as 'module.name'."""
    import importlib
    import inspect
    import pkgutil

    import mha_core.figures as figures

    found = set()
    for info in pkgutil.iter_modules(figures.__path__):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"mha_core.figures.{info.name}")
        for name, fn in inspect.getmembers(module, inspect.isfunction):
            if fn.__module__ == module.__name__ and name.endswith(("_figure", "_spec")) and not name.startswith("_"):
                found.add(f"{info.name}.{name}")
    return found


def _sizes_of(built) -> list:
    import plotly.graph_objects as go

    return _text_sizes(go.Figure(built).to_plotly_json() if isinstance(built, dict) else built.to_plotly_json())


def test_every_figure_builder_takes_the_theme_as_an_argument_and_the_test_covers_it():
    pytest.importorskip("plotly")
    import importlib
    import inspect

    calls = {name.split(" ")[0] for name in _builder_calls()}
    assert _public_builders() <= calls, f"builders with no call in this test: {sorted(_public_builders() - calls)}"
    for name in sorted(_public_builders()):
        module, function = name.split(".")
        parameters = inspect.signature(getattr(importlib.import_module(f"mha_core.figures.{module}"), function)).parameters
        assert "theme" in parameters and parameters["theme"].default is None, name


@pytest.mark.parametrize("theme_name", ["PROJECTOR", "LAPTOP"])
def test_every_text_size_of_every_figure_is_the_themes_minimum_or_more(theme_name):
    """The projector theme reaches every size: with it, no text in any figure is below 20 px (14 px on a laptop).

    The theme is passed as an argument while the other one is in use, so a size read from a
    module constant or from the global theme instead of the argument shows up here.
    """
    pytest.importorskip("plotly")
    theme = getattr(projector, theme_name)
    projector._current = projector.LAPTOP if theme.projector else projector.PROJECTOR  # the other theme is "in use"
    too_small, counted = {}, 0
    for name, build in _builder_calls().items():
        sizes = _sizes_of(build(theme))
        counted += len(sizes)
        small = [f"{path}={size}" for path, size in sizes if size < theme.min_text_size]
        if small:
            too_small[name] = small
    assert counted > 150  # every builder sets its fonts explicitly (base font, title, hover at least)
    assert not too_small, f"text below {theme.min_text_size} px with the {theme.name} theme: {too_small}"


def test_every_figure_follows_the_theme_in_use_when_no_theme_is_given():
    pytest.importorskip("plotly")
    calls = _builder_calls()
    for on in (True, False):
        mha_core.presenter(on)
        for name in ("sizing.sizing_figure", "pretrained.pruning_step_figure", "serving.calculator_spec"):
            built = calls[name](None)
            sizes = [size for _, size in _sizes_of(built)]
            assert min(sizes) >= projector.theme().min_text_size, name
            assert _sizes_of(built) == _sizes_of(calls[name](projector.theme())), name


def test_each_theme_lists_its_smallest_text_and_every_text_size_reaches_it():
    for theme in (projector.LAPTOP, projector.PROJECTOR):
        assert min(theme.text_sizes().values()) == theme.min_text_size
    assert projector.PROJECTOR.min_text_size == 20 and projector.LAPTOP.min_text_size == 14


def test_resolve_gives_the_theme_in_use_for_none_and_refuses_a_bare_size():
    assert projector.resolve(None) is projector.LAPTOP
    assert projector.resolve(projector.PROJECTOR) is projector.PROJECTOR
    with pytest.raises(TypeError, match=r"theme must be a projector.Theme \(LAPTOP, PROJECTOR\) or None; got 20 \(int\)"):
        projector.resolve(20)


def test_the_style_module_holds_no_font_size_constant():
    from mha_core.figures import _style

    assert not [name for name in vars(_style) if name.isupper() and ("FONT" in name or name.endswith("_SIZE"))]


def test_every_live_control_group_draws_projector_sizes_when_built_under_the_projector_theme():
    """The live figures (benchmarks/controls_registry): built after presenter(True), no text below 20 px,
    and a control moved afterwards keeps the sizes the group was built with."""
    pytest.importorskip("ipywidgets")
    sys.path.insert(0, str(ROOT))
    from benchmarks import controls_registry as registry

    cheap = ["welcome", "qkv.token_explorer", "single_head.scaling", "single_head.mask", "heads.head_grid",
             "projection.head_switches", "sizing.head_sizing", "serving.kv_cache_calculator"]
    mha_core.presenter(True)
    groups = {name: registry.GROUPS[name].build() for name in cheap}
    mha_core.presenter(False)  # switched back after building: the groups keep their theme
    groups["sizing.head_sizing"].n_heads.value = 5  # the impossible-split message
    groups["heads.head_grid"].head_count.value = 8
    for name, group in groups.items():
        sizes = _text_sizes(group.figure.to_plotly_json())
        assert sizes and min(size for _, size in sizes) >= 20, (name, [s for s in sizes if s[1] < 20])
    assert "font-size:20px" in groups["sizing.head_sizing"].message.value
    assert "font-size:20px" in groups["serving.kv_cache_calculator"].readout.value
