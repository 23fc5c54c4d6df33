"""What each notebook must show in the browser, and how its live controls are checked.

``NOTEBOOKS`` (at the end) maps a notebook's two-digit prefix to an ``Expect``:

- ``minimum``: at least this many of each thing in the cell outputs (keys of
  ``lab_page.WIDGET_SELECTORS``: plots, sliders, toggle_buttons, dropdowns, buttons,
  checkboxes, radios, quizzes), counted after run-all;
- ``controls``: functions ``check(page, lab) -> dict`` that move one control the way a
  person would and assert that the figure in the page now shows what ``mha_core``
  computes for the new setting; they return what goes in the report (latencies);
- ``quiz``: a set id whose quick check is answered in the page (choose, Check, feedback).

Adding a notebook's control is a few lines: find the CSS class its widget module puts
on the control (``add_class``) and the pure builder that draws its figure, then::

    def my_control(page, lab):
        from mha_core.figures.topic import topic_figure
        return toggle_check(page, ".mha-my-control", lambda label: topic_figure(..., label),
                            initial="none", labels=["causal", "none"], name="NN my control")

(``slider_check`` for sliders, moved with the arrow keys; ``checkbox_check``;
``dropdown_check``.) The figure in the page must then equal the built one: every
trace's x, y and z, and the layout's title, annotation texts, shape corners and
the axis types the builder sets (``layout_keys`` picks which). A notebook with no entry still gets the generic checks
(runs, no errors, figures drawn, its quick check rendered) and is flagged in the report.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import numpy as np

from lab_page import (
    PLOT,
    click_checkbox,
    click_toggle_button,
    decode_typed_arrays,
    keyboard_radio_button,
    keyboard_toggle_button,
    output_with,
    plot_data,
    poll_until,
    press_slider_key,
    select_option,
    wait_kernel_idle,
)

ATOL = 1e-9
#: Trace keys compared between the page and the figure mha_core builds.
TRACE_KEYS = ("x", "y", "z")
#: Layout parts compared (a control may move only the layout, e.g. a marked column).
LAYOUT_KEYS = ("title", "annotations", "shapes", "axis_types")


@dataclass(frozen=True)
class Expect:
    minimum: dict = field(default_factory=lambda: {"quizzes": 1})
    controls: tuple = ()
    quiz: str | None = None


# --------------------------------------------------------------------------- comparing figures


def _as_float(values) -> np.ndarray:
    arr = np.asarray(values, dtype=object)
    return np.where(arr == None, np.nan, arr).astype(float)  # noqa: E711  (None: a gap in a heatmap)


def _values_match(shown, expected) -> bool:
    """Numbers to ATOL (None and nan are the same); labels exactly."""
    if shown is None or expected is None:
        return shown is None and expected is None
    try:
        got, want = _as_float(shown), _as_float(expected)
    except (TypeError, ValueError):
        return np.asarray(shown, dtype=object).tolist() == np.asarray(expected, dtype=object).tolist()
    return got.shape == want.shape and bool(np.allclose(got, want, atol=ATOL, equal_nan=True))


def expected_view(figure) -> dict:
    """A go.Figure reduced to what ``lab_page.plot_data`` reads from the page."""
    spec = decode_typed_arrays(figure.to_dict())  # plotly stores arrays as base64
    layout = spec.get("layout", {})
    title = layout.get("title")
    return {
        "data": spec["data"],
        "title": title.get("text") if isinstance(title, dict) else title,
        "annotations": [a.get("text") for a in layout.get("annotations", [])],
        "shapes": [{k: s.get(k) for k in ("x0", "x1", "y0", "y1")} for s in layout.get("shapes", [])],
        # only the axes whose type the builder sets (category, log, ...); plotly picks the others
        "axis_types": {k: v["type"] for k, v in layout.items()
                       if re.fullmatch(r"[xy]axis\d*", k) and isinstance(v, dict) and v.get("type")},
    }


def figure_mismatch(shown: dict, expected_figure, layout_keys=LAYOUT_KEYS) -> str | None:
    """None if the page shows what ``expected_figure`` (a go.Figure) holds; else what differs."""
    want = expected_view(expected_figure)
    if len(shown["data"]) != len(want["data"]):
        return f"the page shows {len(shown['data'])} traces, mha_core builds {len(want['data'])}"
    for i, (got, exp) in enumerate(zip(shown["data"], want["data"])):
        for key in TRACE_KEYS:
            if key in exp and not _values_match(got.get(key), exp[key]):
                return (f"trace {i} ({exp.get('type', '?')}) {key}: page {got.get(key)!r}, "
                        f"mha_core {np.asarray(exp[key], dtype=object).tolist()!r}")
    for key in layout_keys:
        if key == "shapes":
            same = len(shown["shapes"]) == len(want["shapes"]) and all(
                _values_match([g.get(k) for k in w], list(w.values())) for g, w in zip(shown["shapes"], want["shapes"])
            )
        elif key == "axis_types":
            same = all(shown["axis_types"].get(axis) == kind for axis, kind in want["axis_types"].items())
        else:
            same = shown[key] == want[key]
        if not same:
            return f"layout {key}: page {shown[key]!r}, mha_core {want[key]!r}"
    return None


def wait_for_figure(plot, expected_figure, *, what: str, layout_keys=LAYOUT_KEYS, timeout_s: float = 30) -> float:
    """Poll the page's figure until it matches ``expected_figure``; return the seconds it took."""
    shown, seconds, ok = poll_until(lambda: plot_data(plot),
                                    lambda d: figure_mismatch(d, expected_figure, layout_keys) is None,
                                    timeout_s=timeout_s)
    if not ok:
        raise AssertionError(f"{what}: after {seconds:.1f} s {figure_mismatch(shown, expected_figure, layout_keys)}")
    return seconds


def wait_for_trace(plot, trace: int, key: str, expected, *, what: str, timeout_s: float = 15) -> float:
    """Poll until trace[key] of the page's figure equals ``expected`` (numbers); return the seconds it took."""
    shown, seconds, ok = poll_until(
        lambda: plot_data(plot),
        lambda d: len(d["data"]) > trace and _values_match(d["data"][trace].get(key), expected),
        timeout_s=timeout_s,
    )
    if not ok:
        got = shown["data"][trace].get(key) if len(shown["data"]) > trace else f"only {len(shown['data'])} traces"
        raise AssertionError(f"{what}: after {seconds:.1f} s the page shows {key}={got!r}, "
                             f"mha_core computes {np.asarray(expected).tolist()!r}")
    return seconds


def wait_for_text(locator, expected: str, *, what: str, timeout_s: float = 15) -> float:
    """Poll until the element's text (whitespace collapsed) contains ``expected``."""
    text, seconds, ok = poll_until(lambda: re.sub(r"\s+", " ", locator.inner_text()).strip(),
                                   lambda t: expected in t, timeout_s=timeout_s)
    assert ok, f"{what}: after {seconds:.1f} s the page reads {text!r}; expected it to contain {expected!r}"
    return seconds


# --------------------------------------------------------------------------- generic control checks


def _group(page, css: str, index: int = 0):
    """The control (``css``), the first plot in the same cell output, and that output."""
    group = output_with(page, css, index)
    return group.locator(css).first, group.locator(PLOT).first, group


def _check_initial(plot, build, initial, name, layout_keys):
    if initial is not None:
        wait_for_figure(plot, build(initial), what=f"{name}: the figure as the notebook draws it ({initial})",
                        layout_keys=layout_keys)


def slider_check(page, css: str, build, *, steps=(("ArrowRight", 1), ("ArrowLeft", 1)), name: str,
                 initial: str | None = None, layout_keys=LAYOUT_KEYS, index: int = 0) -> dict:
    """Press each (key, times) on the slider ``css``; after each, the figure must equal ``build(readout_text)``.

    ``initial``: the setting the notebook starts at; the figure is first checked against
    ``build(initial)``, which also proves the check rebuilds the notebook's inputs right.
    """
    slider, plot, _ = _group(page, css, index)
    _check_initial(plot, build, initial, name, layout_keys)
    report = {"control": name, "settings": [], "latency_s": []}
    for key, times in steps:
        readout = press_slider_key(slider, key, times)
        report["settings"].append(readout)
        report["latency_s"].append(wait_for_figure(plot, build(readout), what=f"{name}: {key} x{times} -> {readout}",
                                                   layout_keys=layout_keys))
    assert len(set(report["settings"])) == len(report["settings"]), f"{name}: the slider did not move: {report['settings']}"
    return report


def _choices_check(page, css: str, build, choose, verb: str, *, labels, name: str, initial, layout_keys, index) -> dict:
    """Pick each of ``labels`` with ``choose(group, label)``; after each, the figure must equal ``build(label)``."""
    group, plot, _ = _group(page, css, index)
    _check_initial(plot, build, initial, name, layout_keys)
    report = {"control": name, "settings": list(labels), "latency_s": []}
    for label in labels:
        choose(group, label)
        report["latency_s"].append(wait_for_figure(plot, build(label), what=f"{name}: {verb} {label!r}",
                                                   layout_keys=layout_keys))
    return report


def toggle_check(page, css: str, build, *, labels, name: str, initial: str | None = None,
                 layout_keys=LAYOUT_KEYS, index: int = 0) -> dict:
    """Click each toggle button in ``labels``; after each, the figure must equal ``build(label)``."""
    return _choices_check(page, css, build, click_toggle_button, "clicked", labels=labels, name=name,
                          initial=initial, layout_keys=layout_keys, index=index)


def dropdown_check(page, css: str, build, *, labels, name: str, initial: str | None = None,
                   layout_keys=LAYOUT_KEYS, index: int = 0) -> dict:
    """Choose each option in ``labels``; after each, the figure must equal ``build(label)``."""
    return _choices_check(page, css, build, select_option, "chose", labels=labels, name=name,
                          initial=initial, layout_keys=layout_keys, index=index)


def checkbox_check(page, css: str, build, *, clicks, name: str, initial=None, layout_keys=LAYOUT_KEYS) -> dict:
    """Click the checkboxes described by ``clicks`` in turn; after each, the figure must equal
    ``build(ticked)``, where ``ticked`` maps each description to its state (read from the page)."""
    _, plot, group = _group(page, css)
    boxes = group.locator(css)
    names = [t.strip() for t in boxes.locator(".widget-label-basic").all_inner_texts()]

    def ticked():
        return {n: boxes.nth(i).locator("input").is_checked() for i, n in enumerate(names)}

    _check_initial(plot, build, ticked() if initial is None else initial, name, layout_keys)
    report = {"control": name, "settings": [], "latency_s": []}
    for label in clicks:
        before = ticked()[label]
        click_checkbox(group, label)
        state, _, ok = poll_until(ticked, lambda s: s[label] != before, timeout_s=5)
        assert ok, f"{name}: clicking {label!r} did not change it"
        report["settings"].append(f"{label} {'on' if state[label] else 'off'}")
        report["latency_s"].append(wait_for_figure(plot, build(state), what=f"{name}: {report['settings'][-1]}",
                                                   layout_keys=layout_keys))
    return report


# --------------------------------------------------------------------------- 00 welcome


def welcome_sharpness(page, lab) -> dict:
    """00: the sharpness slider, moved with the arrow keys, redraws softmax(sharpness * scores)."""
    from mha_core.examples import welcome_weights

    slider, plot, _ = _group(page, ".mha-welcome-slider")
    report = {"control": "00 sharpness slider (arrow keys)", "settings": [], "latency_s": []}
    wait_for_trace(plot, 0, "y", welcome_weights(1.0), what="the weights as the notebook draws them (sharpness 1)")
    for key, times in (("ArrowRight", 2), ("ArrowLeft", 1)):
        sharpness = float(press_slider_key(slider, key, times))
        report["settings"].append(sharpness)
        report["latency_s"].append(
            wait_for_trace(plot, 0, "y", welcome_weights(sharpness), what=f"sharpness {sharpness} after {key} x{times}")
        )
    assert report["settings"] == [1.5, 1.25], f"the slider should read 1.50 then 1.25 (from 1.00), read {report['settings']}"
    return report


# --------------------------------------------------------------------------- 01 and 02: one head


def sentence_qkv():
    """x, w_q, w_k, w_v and q, k, v as notebooks 01 and 02 get them: ``examples.single_head_example``.

    Shapes: x (T, D) = (6, 8); w_* (D, Dh) = (8, 4); q, k, v (T, Dh) = (6, 4).
    """
    from mha_core.examples import single_head_example

    return single_head_example(8, 4)


def token_picker(page, lab) -> dict:
    """01: clicking a token redraws its q, k, v and its scores against every token."""
    from mha_core.examples import TOKENS
    from mha_core.figures.qkv import token_qkv_figure

    _, _, (q, k, v) = sentence_qkv()
    return toggle_check(page, ".mha-qkv-token", lambda word: token_qkv_figure(q, k, v, TOKENS, TOKENS.index(word)),
                        initial="cache", labels=["deploy", "the"], name="01 token picker (click)")


def d_head_slider(page, lab) -> dict:
    """02: the d_head slider (arrow keys) redraws the scaling figure for the new d_head (scaling_explorer() defaults)."""
    from mha_core.analysis import scaling_experiment
    from mha_core.figures.single_head import scaling_figure

    data = scaling_experiment(seed=0)
    return slider_check(page, ".mha-d-head-slider", lambda readout: scaling_figure(data, int(readout)),
                        initial="4", name="02 d_head slider (arrow keys)")


def mask_buttons(page, lab) -> dict:
    """02: the mask buttons redraw the weights with no mask, a causal mask, and a padding mask."""
    from mha_classroom.widgets.single_head import MASK_TITLES
    from mha_core.analysis import masked_attention
    from mha_core.examples import TOKENS
    from mha_core.figures.single_head import masked_weights_figure

    x, (w_q, w_k, w_v), _ = sentence_qkv()

    def build(mode):
        case = masked_attention(x, w_q, w_k, w_v, TOKENS, mode)  # 'padding' appends two [PAD] tokens, as the widget does
        return masked_weights_figure(case.weights, case.tokens, case.tokens, case.blocked, title=MASK_TITLES[mode])

    return toggle_check(page, ".mha-mask-mode", build, initial="none", labels=["causal", "padding", "none"],
                        name="02 mask buttons (click)")


# --------------------------------------------------------------------------- 03 and 04: several heads


def head_count(page, lab, *, initial: str | None = "4") -> dict:
    """03: clicking a head count redraws every head's weights from demo_layer(16, H, seed=0); ``initial``: the head
    count the group shows before (the notebook's 4), None: the one chosen in the page (where the laptop half's
    keyboard walk left it)."""
    from mha_core.examples import TOKENS, head_weights
    from mha_core.figures.heads import head_grid_figure

    def build(label):
        return head_grid_figure(head_weights(16, int(label), seed=0), TOKENS)  # weights (H, T, T), tiled

    # The widget writes its own title; the tiles (z), their labels and the head titles are compared.
    # First by keyboard, as the notebook tells you: the row of buttons is one Tab stop (a radio group,
    # mha_classroom.widgets._keys), and the arrow keys move the choice.
    if initial is None:
        initial = output_with(page, ".mha-head-count").locator(
            ".mha-head-count .widget-toggle-button[aria-checked='true']").first.inner_text(timeout=10_000).strip()
    keys = {"8": "ArrowRight" if int(initial) < 8 else "ArrowLeft", "2": "ArrowLeft"}
    by_keys = _choices_check(page, ".mha-head-count", build, lambda g, label: keyboard_radio_button(g, label, keys[label]),
                             "pressed the arrow keys to", labels=["8", "2"], initial=initial,
                             layout_keys=("annotations", "shapes"), name="03 head count (keyboard)", index=0)
    # Ends at 16 heads, the tallest grid, so the fit check after the controls sees it.
    by_clicks = toggle_check(page, ".mha-head-count", build, initial="2", labels=["4", "8", "16"],
                             layout_keys=("annotations", "shapes"), name="03 head count (click)")
    by_clicks["control"] = "03 head count (keyboard, then click)"
    by_clicks["settings"] = [f"key {s}" for s in by_keys["settings"]] + by_clicks["settings"]
    by_clicks["latency_s"] = by_keys["latency_s"] + by_clicks["latency_s"]
    return by_clicks


class _KernelSocket:
    """The notebook's own kernel, driven from the test over JupyterLab's websocket (JSON, the legacy protocol)."""

    def __init__(self, lab, notebook: str):
        import uuid

        import websocket

        [kernel] = [s["kernel"]["id"] for s in lab.sessions() if s["path"].endswith(notebook)]
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{lab.port}/api/kernels/{kernel}/channels?token={lab.token}",
                                              timeout=30)
        self.session, self.uuid = uuid.uuid4().hex, uuid.uuid4

    def execute(self, code: str) -> str:
        """Send ``code``; the message's id (the kernel runs it after what it is running now)."""
        msg_id = self.uuid().hex
        self.ws.send(json.dumps({
            "header": {"msg_id": msg_id, "username": "test", "session": self.session, "msg_type": "execute_request",
                       "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": False}}))
        return msg_id

    def until(self, msg_id: str, state: str, *, timeout_s: float = 60) -> str:
        """Read until the kernel reports ``state`` ('busy' or 'idle') for ``msg_id``; the stdout it printed."""
        import time

        deadline, out = time.monotonic() + timeout_s, []
        while time.monotonic() < deadline:
            self.ws.settimeout(max(0.05, deadline - time.monotonic()))
            msg = json.loads(self.ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "stream":
                out.append(msg["content"]["text"])
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == state:
                return "".join(out)
        raise AssertionError(f"the kernel was not {state} for {msg_id} within {timeout_s} s")

    def idle_already(self, msg_id: str) -> bool:
        """Whether the kernel has already said it is idle for ``msg_id`` (reads what has arrived, waits for nothing)."""
        import websocket

        self.ws.settimeout(0.05)
        try:
            while True:
                msg = json.loads(self.ws.recv())
                if (msg.get("parent_header", {}).get("msg_id") == msg_id and msg["msg_type"] == "status"
                        and msg["content"]["execution_state"] == "idle"):
                    return True
        except websocket.WebSocketTimeoutException:
            return False

    def close(self):
        self.ws.close()


def head_count_while_the_kernel_sleeps(page, lab) -> dict:
    """03: the page holds every head count (``mha_classroom.widgets._states.hold``), so a click switches the grid
    while the notebook's kernel is busy with something else (a 6 s sleep, sent to it here): the grid must show the
    new head count before the kernel is free. Once it is, the kernel must have heard the new value. The group ends
    at the notebook's 4 heads, as ``head_count`` expects."""
    from mha_core.examples import TOKENS, head_weights
    from mha_core.figures.heads import head_grid_figure

    def build(label):
        return head_grid_figure(head_weights(16, int(label), seed=0), TOKENS)

    group, plot, _ = _group(page, ".mha-head-count")
    _check_initial(plot, build, "4", "03 head count, kernel asleep", ("annotations", "shapes"))
    kernel = _KernelSocket(lab, "03_multiple_heads.ipynb")
    try:
        sleep = kernel.execute("import time; time.sleep(6)")
        kernel.until(sleep, "busy")
        click_toggle_button(group, "8")
        seconds = wait_for_figure(plot, build("8"), what="03 head count: clicked '8' while the kernel sleeps",
                                  layout_keys=("annotations", "shapes"), timeout_s=5)
        assert not kernel.idle_already(sleep), "the grid switched only after the kernel was free again"
        kernel.until(sleep, "idle", timeout_s=30)
        heard = kernel.execute("import gc\nfrom mha_classroom.widgets.heads import HeadGrid\n"
                               "print(sorted(g.head_count.value for g in gc.get_objects() if isinstance(g, HeadGrid)))")
        told = kernel.until(heard, "idle", timeout_s=30).strip()
        assert told == "[8]", f"the kernel holds the head count {told}, the page shows 8"
        click_toggle_button(group, "4")
        wait_for_figure(plot, build("4"), what="03 head count: back to 4", layout_keys=("annotations", "shapes"))
    finally:
        kernel.close()
    return {"control": "03 head count, clicked while the kernel sleeps", "settings": ["8"], "latency_s": [seconds]}


def head_switches(page, lab) -> dict:
    """04: switching heads off redraws the token's output from output_projection(heads_off=...) and each head's part."""
    from mha_core.analysis import token_parts
    from mha_core.examples import TOKENS, demo_layer, token_vectors
    from mha_core.figures.projection import contributions_figure

    parts = token_parts(demo_layer(16, 4, seed=0), token_vectors(16, seed=0), TOKENS.index("changed"))
    output_all = parts.output()  # (D,)

    def build(ticked):
        heads_off = np.array([not ticked[f"head {h + 1}"] for h in range(4)])  # (H,) bool, True = off
        return contributions_figure(parts.contributions, parts.layer.b_o, heads_off, output=parts.output(heads_off),
                                    output_all=output_all, token="changed")

    return checkbox_check(page, ".mha-head-switch", build, clicks=["head 2", "head 1", "head 2"],
                          name="04 head switches (click)")


# --------------------------------------------------------------------------- 05 head sizing


def sizing_controls(page, lab) -> dict:
    """05: head count (arrow keys, through an impossible split), d_model (dropdown) and T (arrow keys)
    redraw the cost bars; an impossible split shows the plain message with the nearest valid counts."""
    from mha_classroom.widgets.sizing import impossible_split_message, shown_head_counts
    from mha_core.figures.sizing import sizing_figure
    from mha_core.tables import sizing_rows

    def build(D, H, T):
        return sizing_figure(sizing_rows(D, T, shown_head_counts(D)), n_heads=H)

    heads, plot, group = _group(page, ".mha-sizing-head-count")
    tokens = group.locator(".mha-sizing-tokens").first
    message = group.locator("[role=status]")
    name = "05 sizing: heads, d_model, T"
    state = {"D": 768, "H": 12, "T": 1024}
    wait_for_figure(plot, build(**state), what=f"{name}: the figure as the notebook draws it")
    report = {"control": name, "settings": [], "latency_s": []}

    def step(what, act):
        act()
        report["settings"].append(f"{what} -> D={state['D']} H={state['H']} T={state['T']}")
        report["latency_s"].append(wait_for_figure(plot, build(**state), what=f"{name}: {report['settings'][-1]}"))

    step("heads ArrowRight", lambda: state.update(H=int(press_slider_key(heads, "ArrowRight"))))
    assert state["H"] == 13, f"{name}: the head count should read 13 after one step right from 12, reads {state['H']}"
    wait_for_text(message.first, impossible_split_message(768, 13), what=f"{name}: 13 heads of d_model 768")
    step("heads ArrowLeft", lambda: state.update(H=int(press_slider_key(heads, "ArrowLeft"))))
    _, _, ok = poll_until(lambda: message.count() and message.first.inner_text().strip(), lambda t: not t, timeout_s=10)
    assert ok, f"{name}: the impossible-split message stays after going back to 12 heads"
    step("d_model 384", lambda: (select_option(group, "384"), state.update(D=384)))
    step("tokens ArrowLeft", lambda: state.update(T=int(press_slider_key(tokens, "ArrowLeft"))))
    assert state["T"] == 512, f"{name}: tokens should read 512 after one step left from 1024, reads {state['T']}"
    return report


# --------------------------------------------------------------------------- 10 serving cost


def serving_calculator(page, lab) -> dict:
    """10: the KV-cache calculator. Key/value heads (arrow keys), model and memory (drop-downs), number format
    (buttons) and tokens (arrow keys) redraw the bars from mha_core.costs; weights that do not fit show a plain message."""
    from mha_core import costs
    from mha_core.figures.serving import calculator_figure
    from mha_core.tables import calculator_rows

    def build(model, T, B, b, memory, Hkv):
        rows = calculator_rows(costs.MODEL_SHAPES[model], n_tokens=T, batch=B, bytes_per_value=b, memory_bytes=memory * 2**30)
        return calculator_figure(rows, Hkv)

    kv_heads, plot, group = _group(page, ".mha-serving-kv-heads")
    tokens = group.locator(".mha-serving-tokens").first
    message = group.locator("[role=status]")
    name = "10 KV-cache calculator"
    state = {"model": "Llama-2-7B", "T": 4096, "B": 1, "b": 2, "memory": 80, "Hkv": 32}
    wait_for_figure(plot, build(**state), what=f"{name}: the figure as the notebook draws it")
    report = {"control": name, "settings": [], "latency_s": []}

    def step(what, act):
        act()
        report["settings"].append(f"{what} -> {state}")
        report["latency_s"].append(wait_for_figure(plot, build(**state), what=f"{name}: {report['settings'][-1]}"))

    step("KV heads ArrowRight", lambda: state.update(Hkv=int(press_slider_key(kv_heads, "ArrowRight"))))
    assert state["Hkv"] == 16, f"{name}: one step right from 32 KV heads should read 16, reads {state['Hkv']}"
    step("KV heads ArrowRight", lambda: state.update(Hkv=int(press_slider_key(kv_heads, "ArrowRight"))))
    step("model Llama-2-70B", lambda: (select_option(group, "Llama-2-70B"), state.update(model="Llama-2-70B", Hkv=8)))
    wait_for_text(message.first, "The weights alone (129 GiB in 16-bit) do not fit in 80 GiB", what=f"{name}: Llama-2-70B on 80 GiB")
    step("memory 141 GiB", lambda: (group.locator(".mha-serving-memory select").first.select_option(label="141 GiB", timeout=10_000),
                                    state.update(memory=141)))
    _, _, ok = poll_until(lambda: message.count() and message.first.inner_text().strip(), lambda t: not t, timeout_s=10)
    assert ok, f"{name}: the message stays after choosing 141 GiB"
    step("values 8-bit", lambda: (click_toggle_button(group, "8-bit"), state.update(b=1)))
    step("tokens ArrowLeft", lambda: state.update(T=int(press_slider_key(tokens, "ArrowLeft"))))
    assert state["T"] == 2048, f"{name}: one step left from 4096 tokens should read 2048, reads {state['T']}"
    return report


# --------------------------------------------------------------------------- 11 review


def _progress_store(lab):
    from mha_classroom.quiz.progress import DEFAULT_PATH, ProgressStore

    return ProgressStore(lab.home / DEFAULT_PATH.relative_to("~"))


def review_progress(page, lab) -> dict:
    """11: the progress table matches the progress file; 'Reset progress…' asks first, Cancel erases nothing."""
    from mha_classroom.quiz.summary import progress_summary

    store = _progress_store(lab)
    try:
        summary = progress_summary(store)
        n_answers = store.count()
    finally:
        store.close()
    table = page.locator(".mha-quiz-progress table").first
    table.scroll_into_view_if_needed(timeout=10_000)
    rows = table.evaluate("t => [...t.tBodies[0].rows].map(r => [...r.cells].map(c => c.innerText.trim()))")
    expected = [[r.set_id if key != "course" else "all", r.title, str(r.questions), str(r.attempted), str(r.best),
                 str(r.last), str(r.tries)] for key, r in summary.items()]
    assert [row[:7] for row in rows] == expected, f"progress table {rows} != progress_summary {expected}"

    box = page.locator(".mha-quiz").filter(has=page.locator(".mha-quiz-reset")).first
    box.locator(".mha-quiz-reset").first.click(timeout=10_000)
    ask = f"This erases all {n_answers} recorded answers. Are you sure?"
    message = box.locator(".mha-quiz-note").first
    text, seconds, ok = poll_until(lambda: message.inner_text(), lambda t: ask in t)
    assert ok, f"after 'Reset progress…' the note reads {text!r}, expected {ask!r}"
    box.locator(".mha-quiz-reset-cancel").first.click(timeout=10_000)
    text, _, ok = poll_until(lambda: message.inner_text(), lambda t: "Nothing was erased." in t)
    assert ok, f"after Cancel the note reads {text!r}"
    store = _progress_store(lab)
    try:
        assert store.count() == n_answers, f"Cancel erased answers: {n_answers} -> {store.count()}"
    finally:
        store.close()
    return {"control": "11 progress table and reset (cancel)", "settings": [n_answers], "latency_s": [seconds]}


# --------------------------------------------------------------------------- 06 and 08: the toy model


def _toy_history(n_heads, seed):
    """The live figure of notebook 06 for one setting, trained here (deterministic: the kernel trains the same)."""
    from mha_classroom.widgets.toy import history_figure
    from mha_core.models.tasks import RELATIONS
    from mha_core.models.training import TrainConfig, trained

    config = TrainConfig(n_heads=n_heads, seed=seed)
    return history_figure(trained(config), RELATIONS.relations, max_steps=config.max_steps)


def toy_training(page, lab) -> dict:
    """06: typing a seed retrains (a "training..." state, then the new roles); a seed trained before comes back
    from the cache; a seed that is not a whole number shows a plain message; the head-count slider retrains."""
    name = "06 live training: seed, heads"
    seed_box, plot, group = _group(page, ".mha-toy-seed")
    seed_input = seed_box.locator("input").first
    status = group.locator(".mha-toy-status").first
    message = group.locator("[role=status]")
    wait_for_figure(plot, _toy_history(3, 0), what=f"{name}: the figure as the notebook draws it (3 heads, seed 0)",
                    timeout_s=60)
    report = {"control": name, "settings": [], "latency_s": []}

    def type_seed(text):
        seed_input.scroll_into_view_if_needed(timeout=10_000)
        seed_input.fill(text, timeout=10_000)
        seed_input.press("Enter", timeout=10_000)

    # Seeds 0-2 were trained by the notebook (section 5); seed 3 was not, so it trains in the kernel now.
    expected = _toy_history(3, 3)  # trained here before the page is asked, so the latency is the kernel's
    type_seed("3")
    report["settings"].append("seed 3 (retrains)")
    report["latency_s"].append(wait_for_figure(plot, expected, what=f"{name}: seed 3", timeout_s=90))
    wait_for_text(status, "trained: 3 head(s), seed 3", what=f"{name}: status after seed 3")
    type_seed("0")
    report["settings"].append("seed 0 (cached)")
    report["latency_s"].append(wait_for_figure(plot, _toy_history(3, 0), what=f"{name}: back to seed 0"))
    wait_for_text(status, "(from the cache)", what=f"{name}: seed 0 comes from the cache")
    type_seed("1.5")
    wait_for_text(message.first, "seed must be a whole number", what=f"{name}: seed 1.5")
    type_seed("0")
    heads = group.locator(".mha-toy-head-count").first
    expected = _toy_history(4, 0)
    readout = press_slider_key(heads, "ArrowRight")
    assert readout == "4", f"{name}: the head count should read 4 after one step right from 3, reads {readout}"
    report["settings"].append("heads 4 (retrains)")
    report["latency_s"].append(wait_for_figure(plot, expected, what=f"{name}: 4 heads", timeout_s=90))
    return report


def toy_head_switches(page, lab) -> dict:
    """08: unticking heads of the 6-head toy model redraws its accuracy per relation with those heads off."""
    from mha_core.figures.toy import ablation_figure
    from mha_core.models.analysis import ablation_accuracy
    from mha_core.models.training import TrainConfig, evaluation_batch, one_thread, trained

    result = trained(TrainConfig(n_heads=6, seed=0))
    batch = evaluation_batch()
    relations = result.model.task.relations
    with one_thread():
        baseline = ablation_accuracy(result.model, batch, [])

    def build(ticked):
        heads_off = np.array([not ticked[f"head {h + 1}"] for h in range(6)])  # (H,) bool, True = off
        with one_thread():
            acc = ablation_accuracy(result.model, batch, heads_off)
        return ablation_figure(acc, relations, heads_off, baseline=baseline)

    return checkbox_check(page, ".mha-toy-head-switch", build, clicks=["head 1", "head 6", "head 1"],
                          name="08 toy head switches (click)")


# --------------------------------------------------------------------------- 07 and 08 (real half): all-MiniLM-L6-v2


def _minilm():
    from mha_core.pretrained import load_minilm

    return load_minilm()


def _wait_for_figure_slowly(plot, expected_figure, *, what: str, timeout_s: float = 30) -> float:
    """``wait_for_figure``, polling every 0.4 s: polled every 50 ms, this figure's update did not reach the
    page within 15 s on the loaded two-core machine, and arrived within a second when polled slowly."""
    want = expected_figure
    shown, seconds, ok = poll_until(lambda: plot_data(plot), lambda d: figure_mismatch(d, want) is None,
                                    timeout_s=timeout_s, interval_s=0.4)
    if not ok:
        raise AssertionError(f"{what}: after {seconds:.1f} s {figure_mismatch(shown, want)}")
    return seconds


def minilm_explorer(page, lab) -> dict:
    """07: layer and head buttons redraw layer_heads_figure from the model's weights; a sentence typed in the box
    (Enter) redraws with its tokens; an empty box shows the plain message and keeps the figure."""
    from mha_core.figures.pretrained import layer_heads_figure

    model = _minilm()
    layers, plot, group = _group(page, ".mha-minilm-layer")
    heads = group.locator(".mha-minilm-head").first
    box = group.locator(".mha-minilm-text input").first
    message = group.locator("[role=status]")
    name = "07 layer, head and sentence"
    state = {"text": "the cache key changed after deploy", "layer": 0, "head": 2}  # the notebook starts at L1 H3
    encodings = {}

    def build():
        text = state["text"]
        if text not in encodings:
            encodings[text] = model.encode(text)
        enc = encodings[text]
        return layer_heads_figure(enc.attentions[state["layer"]], enc.tokens, layer=state["layer"], head=state["head"])

    wait_for_figure(plot, build(), what=f"{name}: the figure as the notebook draws it (L1 H3)")
    report = {"control": name, "settings": [], "latency_s": []}

    def step(what, act):
        act()
        report["settings"].append(what)
        report["latency_s"].append(_wait_for_figure_slowly(plot, build(), what=f"{name}: {what}"))

    # The model's cells below the explorer keep the kernel busy for a while on a loaded machine; a click
    # before they finish waits in the kernel's queue.
    wait_kernel_idle(page, timeout_s=60)
    step("layer 4", lambda: (click_toggle_button(layers, "4"), state.update(layer=3)))
    step("head 11", lambda: (click_toggle_button(heads, "11"), state.update(head=10)))
    step("layer 6", lambda: (click_toggle_button(layers, "6"), state.update(layer=5)))
    own = "we rotated the api key, again?"

    def type_sentence(text):
        box.scroll_into_view_if_needed(timeout=10_000)
        box.fill(text)
        box.press("Enter")

    step("typed a sentence", lambda: (type_sentence(own), state.update(text=own)))
    type_sentence("")
    report["latency_s"].append(wait_for_text(message.first, "the box is empty", what=f"{name}: an empty sentence"))
    report["settings"].append("empty sentence: message")
    _wait_for_figure_slowly(plot, build(), what=f"{name}: the figure stays on the last sentence after an empty one")
    return report


def minilm_pruning_slider(page, lab) -> dict:
    """08 (real half): the 'heads off' slider (arrow keys) redraws the held-out cosines for that many heads off,
    from data/models/minilm_pruning.json."""
    from mha_classroom.widgets.pretrained import pruning_step
    from mha_core.pretrained.analysis import cosine_calibration
    from mha_core.pretrained.data import precomputed, sentence_set

    record = precomputed("minilm_pruning")
    # The notebook marks what paraphrases and unrelated sentences score (notebook 07's calibration).
    calibration = cosine_calibration(_minilm(), sentence_set("calibration")).as_dict()
    last = len(record["steps"]) - 1
    return slider_check(page, ".mha-minilm-pruned", lambda readout: pruning_step(record, int(readout), calibration),
                        steps=(("ArrowLeft", 1), ("ArrowLeft", 3), ("ArrowRight", 2)), initial=str(last),
                        name="08 heads off (arrow keys)")


def induction_head_off(page, lab) -> dict:
    """09: clicking a head in the head-off buttons redraws induction and loss from ablation_effects of seed 0's model."""
    from mha_core import circuits
    from mha_core.figures.induction import ablation_figure
    from mha_core.models.induction import EVAL_REPEAT, InductionConfig, trained_induction
    from mha_core.models.induction_analysis import ablation_effects

    effects = ablation_effects(trained_induction(InductionConfig(seed=0)), "zero")
    chance = circuits.chance_scores(25, EVAL_REPEAT).induction

    def build(label):
        if label == "none":
            off, name = (effects.induction_on, effects.repeat_loss_on), "no head off"
        else:
            layer, head = int(label[1]) - 1, int(label[-1]) - 1
            off, name = (effects.induction[layer, head], effects.repeat_loss[layer, head]), f"{label} off (zero)"
        return ablation_figure(effects.induction_on, effects.repeat_loss_on, *off, label=name, chance_induction=chance)

    return toggle_check(page, ".mha-induction-head-off", build, initial="L1 H1", labels=["L1 H2", "none", "L1 H1"],
                        name="09 head off (click)")


# --------------------------------------------------------------------------- the table
NOTEBOOKS: dict[str, Expect] = {
    "00": Expect(
        minimum={"plots": 1, "sliders": 1, "quizzes": 1, "radios": 1, "checkboxes": 1},
        controls=(welcome_sharpness,),
        quiz="00",
    ),
    "01": Expect(minimum={"plots": 4, "toggle_buttons": 1, "quizzes": 1}, controls=(token_picker,)),
    "02": Expect(minimum={"plots": 3, "sliders": 1, "toggle_buttons": 1, "quizzes": 1}, controls=(d_head_slider, mask_buttons)),
    "03": Expect(minimum={"plots": 4, "toggle_buttons": 1, "quizzes": 1},
                 controls=(head_count_while_the_kernel_sleeps, head_count)),
    "04": Expect(minimum={"plots": 3, "checkboxes": 4, "quizzes": 1}, controls=(head_switches,)),
    "05": Expect(minimum={"plots": 3, "sliders": 2, "dropdowns": 1, "quizzes": 1}, controls=(sizing_controls,)),
    "11": Expect(minimum={"quizzes": 2, "buttons": 2}, controls=(review_progress,)),
    "10": Expect(minimum={"plots": 3, "sliders": 3, "dropdowns": 2, "toggle_buttons": 1, "quizzes": 1},
                 controls=(serving_calculator,)),
    "06": Expect(minimum={"plots": 6, "sliders": 1, "quizzes": 1}, controls=(toy_training,)),
    "08": Expect(minimum={"plots": 7, "checkboxes": 6, "sliders": 1, "quizzes": 1},
                 controls=(toy_head_switches, minilm_pruning_slider)),
    "07": Expect(minimum={"plots": 4, "toggle_buttons": 2, "quizzes": 1}, controls=(minilm_explorer,)),
    "09": Expect(minimum={"plots": 5, "toggle_buttons": 3, "quizzes": 1}, controls=(induction_head_off,)),
}


def expectation_for(notebook_name: str) -> tuple[Expect, bool]:
    """The entry for ``NN_name``, and whether the table had one."""
    prefix = notebook_name[:2]
    return (NOTEBOOKS[prefix], True) if prefix in NOTEBOOKS else (Expect(), False)


# --------------------------------------------------------------------------- quick check


def _option_text(label: str) -> str:
    """'b) Some text' -> 'Some text'."""
    return re.sub(r"^\s*[a-z]\)\s*", "", label).strip()


def answer_quiz(page, set_id: str) -> dict:
    """Choose the first shown option of the set's first question, press Check, assert the feedback.

    The expected feedback is graded in this process by ``mha_classroom.quiz.grading.grade_choice``,
    with the display order read back from the page (options are shuffled per learner).
    """
    from mha_classroom.quiz.bank import default_bank
    from mha_classroom.quiz.grading import grade_choice

    question = default_bank().questions(set_id)[0]
    texts = [o.text.replace("`", "") for o in question.options]
    view = page.locator(".mha-quiz").first.locator(".mha-quiz-question").first
    view.scroll_into_view_if_needed(timeout=10_000)
    if question.kind == "single":
        labels = view.locator(".mha-quiz-option .widget-radio-box label")
    elif question.kind == "multi":
        labels = view.locator(".mha-quiz-option.widget-checkbox label")
    else:
        raise AssertionError(f"quiz {set_id}: the first question is {question.kind}; "
                             "choose a set that opens with a choice question")
    shown = [_option_text(t) for t in labels.all_inner_texts()]
    assert sorted(shown) == sorted(texts), f"quiz {set_id}: the page shows options {shown}, the bank has {texts}"
    order = [texts.index(t) for t in shown]
    labels.first.click(timeout=10_000)
    view.locator(".mha-quiz-check").first.click(timeout=10_000)
    verdict = grade_choice(question, [order[0]], order)
    feedback = view.locator(".mha-quiz-feedback").first
    expected = [re.sub(r"\s+", " ", line.replace("`", "")).strip() for line in (verdict.headline, *verdict.details)]
    text, seconds, ok = poll_until(lambda: re.sub(r"\s+", " ", feedback.inner_text()).strip(),
                                   lambda t: all(line in t for line in expected))
    assert ok, f"quiz {set_id}: after Check the feedback reads {text!r}; mha_core grades it {expected!r}"
    tries = view.locator(".mha-quiz-tries").first.inner_text()
    assert "Tries so far: 1" in tries, f"quiz {set_id}: the tries label reads {tries!r} after one Check"
    score = page.locator(".mha-quiz .mha-quiz-score").first.inner_text()
    assert "Score" in score, f"quiz {set_id}: no score shown ({score!r})"
    return {"quiz": set_id, "chosen": shown[0], "correct": verdict.correct, "feedback": text[:160], "latency_s": seconds}
