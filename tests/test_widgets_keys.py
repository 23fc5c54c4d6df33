"""The keyboard helper: every shown control group carries it, static handouts and plain Python never need it,
and the notebooks tell a learner the keys it makes work. (Its behaviour in the page: tests/browser/test_keyboard.py.)"""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

widgets = pytest.importorskip("ipywidgets")

from mha_classroom.widgets import _keys  # noqa: E402
from mha_classroom.widgets._keys import GROUP_CLASS, PASSED_KEYS, ROVING_KEYS, keyboard_helper, keyboard_ready  # noqa: E402

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def is_helper(obj) -> bool:
    return isinstance(obj, _keys._helper_class())


def test_keyboard_ready_marks_the_box_once_and_leaves_its_children_alone():
    slider, figure_stand_in = widgets.IntSlider(), widgets.HTML("figure")
    box = widgets.VBox([slider, figure_stand_in])
    assert keyboard_ready(box) is box
    assert keyboard_ready(box) is box
    assert box.children == (slider, figure_stand_in)
    assert list(box._dom_classes).count(GROUP_CLASS) == 1


def test_the_helper_is_visually_hidden_and_is_a_widget_of_its_own():
    from mha_classroom.widgets._words import SR_ONLY_STYLE

    helper = keyboard_helper()
    assert is_helper(helper) and isinstance(helper, widgets.DOMWidget)
    # Its page element is clipped to nothing (its live region must stay rendered to be announced).
    assert helper.layout.display is None and "hidden.setAttribute(\"style\", SR_ONLY)" in helper._esm
    assert json.dumps(SR_ONLY_STYLE) in helper._esm
    assert keyboard_helper() is not helper  # one per group shown


def test_keyboard_ready_refuses_what_is_not_a_box_and_says_what_it_needs():
    with pytest.raises(TypeError, match=r"box=IntSlider: keyboard_ready needs an ipywidgets Box"):
        keyboard_ready(widgets.IntSlider())


def test_the_helper_script_names_the_group_class_and_the_keys_it_handles_and_passes():
    esm = keyboard_helper()._esm
    assert json.dumps(GROUP_CLASS) in esm
    assert json.loads(re.search(r"const ROVING = (\{.*?\});", esm).group(1)) == ROVING_KEYS
    assert json.loads(re.search(r"const PASSED = new Set\((\[.*?\])\);", esm).group(1)) == list(PASSED_KEYS)
    # Each row of toggle buttons becomes a radio group with one Tab stop; keys stop at the group's box.
    for needed in ('"radiogroup"', '"radio"', '"aria-checked"', '"tabindex"', "stopPropagation()",
                   'addEventListener("keydown"', 'removeEventListener("keydown"', "observer.disconnect()",
                   "DOCUMENT_POSITION_FOLLOWING"):
        assert needed in esm, needed


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed: the script's syntax is not checked")
def test_the_helper_script_is_valid_javascript_module_syntax(tmp_path):
    script = tmp_path / "keys.mjs"
    script.write_text(keyboard_helper()._esm)
    result = subprocess.run(["node", "--check", str(script)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr


def shown_by(group, monkeypatch) -> list:
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs, **kw: shown.extend(objs))
    group._ipython_display_()
    return shown


def course_groups():
    """One control group of each kind the notebooks 00-05 and 09 show (toggle buttons, sliders, drop-downs,
    checkboxes), built as the notebooks build them."""
    from mha_classroom.widgets.heads import head_grid
    from mha_classroom.widgets.projection import head_switches
    from mha_classroom.widgets.qkv import token_explorer
    from mha_classroom.widgets.serving import kv_cache_calculator
    from mha_classroom.widgets.single_head import mask_explorer, scaling_explorer
    from mha_classroom.widgets.sizing import head_sizing
    from mha_classroom.widgets.welcome import smoke_check
    from mha_core.examples import TOKENS, single_head_example

    x, (w_q, w_k, w_v), (q, k, v) = single_head_example()
    return {
        "00 smoke check": smoke_check(),
        "01 token explorer": token_explorer(q, k, v, TOKENS),
        "02 scaling": scaling_explorer(),
        "02 mask": mask_explorer(x, w_q, w_k, w_v, TOKENS),
        "03 head grid": head_grid(16, 4),
        "04 head switches": head_switches(),
        "05 sizing": head_sizing(),
        "09 calculator": kv_cache_calculator(),
    }


def test_every_control_group_is_shown_keyboard_ready_in_jupyterlab_followed_by_its_helper(monkeypatch):
    monkeypatch.delenv("MHA_COURSE_STATIC", raising=False)
    for name, group in course_groups().items():
        box, helper = shown_by(group, monkeypatch)
        assert GROUP_CLASS in box._dom_classes, name
        assert is_helper(helper), name
        assert group.figure in _descendants(box), f"{name}: the marked box does not hold the group's figure"
        assert not any(is_helper(w) for w in _descendants(box)), f"{name}: the helper sits inside the box"


def test_a_static_handout_shows_no_widget_and_no_helper(monkeypatch):
    # What it shows instead (a plain figure, or every setting recorded) is widgets._states' to say.
    monkeypatch.setenv("MHA_COURSE_STATIC", "1")
    for name, group in course_groups().items():
        shown = shown_by(group, monkeypatch)
        assert shown, f"{name}: nothing shown"
        assert not any(isinstance(obj, widgets.Widget) for obj in shown), f"{name}: a widget in a static handout"


def test_live_training_shows_its_box_keyboard_ready(monkeypatch):
    pytest.importorskip("torch")
    import IPython.display

    from mha_classroom.widgets import toy

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda *objs: shown.extend(objs))
    monkeypatch.setattr(toy.LiveTraining, "train", lambda self: None)  # the box is what matters here
    group = toy.live_training(n_heads=2, seed=0, max_steps=1)
    box, helper = shown
    assert GROUP_CLASS in box._dom_classes and is_helper(helper)
    assert group.seed in _descendants(box)


def _descendants(widget) -> list:
    found = [widget]
    for child in getattr(widget, "children", ()):
        found += _descendants(child)
    return found


# --------------------------------------------------------------------------- what the notebooks tell a learner

#: The call that shows each live control group, and the keys its instructions must name (case-insensitive).
LIVE_CONTROLS = {
    "smoke_check(": ("tab", "arrow"),  # 00: a slider
    "token_explorer(": ("tab", "arrow"),  # 01: toggle buttons
    "scaling_explorer(": ("tab", "arrow"),  # 02: a slider
    "mask_explorer(": ("tab", "arrow"),  # 02: toggle buttons
    "head_grid(": ("tab", "arrow"),  # 03: toggle buttons
    "head_switches(": ("tab", "space"),  # 04 and 08: checkboxes
    "head_sizing(": ("tab", "arrow"),  # 05: a drop-down and sliders
    "live_training(": ("tab", "arrow", "enter"),  # 06: a text box, a slider, a number box
    "layer_head_explorer(": ("tab", "arrow", "enter"),  # 07: toggle buttons and a text box
    "pruning_explorer(": ("tab", "arrow"),  # 08: a slider
    "kv_cache_calculator(": ("tab", "arrow"),  # 09: drop-downs, toggle buttons, sliders
}
#: What the instructions said before toggle buttons answered the arrow keys: no longer true.
OUTDATED = ("arrow keys do not work", "from button to button", "moves to the next button")


def instructions_before_each_live_control():
    """(notebook, call, the Markdown between the previous code cell and the control's cell) for every live control."""
    for path in sorted(NOTEBOOKS.glob("[0-9][0-9]_*.ipynb")):
        cells = json.loads(path.read_text())["cells"]
        for i, cell in enumerate(cells):
            source = "".join(cell["source"])
            if cell["cell_type"] != "code":
                continue
            for call in LIVE_CONTROLS:
                if re.search(rf"^\s*(\w+\s*=\s*)?{re.escape(call)}", source, flags=re.M):
                    text = []
                    for before in reversed(cells[:i]):
                        if before["cell_type"] == "code":
                            break
                        text.insert(0, "".join(before["source"]))
                    yield path.stem, call, "\n".join(text)


def test_every_live_control_is_found_in_the_notebooks():
    found = {call for _, call, _ in instructions_before_each_live_control()}
    assert found == set(LIVE_CONTROLS), f"not shown by any notebook: {set(LIVE_CONTROLS) - found}"


def test_each_live_controls_instructions_name_the_keys_that_work_and_no_outdated_ones():
    problems = []
    for notebook, call, text in instructions_before_each_live_control():
        lower = re.sub(r"\s+", " ", text.lower())
        missing = [key for key in LIVE_CONTROLS[call] if key not in lower]
        outdated = [phrase for phrase in OUTDATED if phrase in lower]
        if missing or outdated:
            problems.append(f"{notebook} {call}...): the text before it does not name {missing}"
                            + (f"; it still says {outdated}" if outdated else ""))
    assert not problems, "\n".join(problems)
