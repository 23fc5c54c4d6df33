"""Driving a JupyterLab page in Chromium with playwright: what a person does, with a timeout on every wait.

- ``launch_browser``: Debian's Chromium in a persistent context (never ``playwright install``).
- ``WebsocketMeter``: bytes over the kernel's websocket, per page.
- ``open_notebook`` / ``wait_kernel_idle`` / ``run_all`` / ``wait_run_finished``.
- ``rendered_counts``, ``output_problems``: what the outputs show.
- ``plot_data``, ``poll_until``: read a plotly figure's live trace list from the page.
- ``click_toggle_button``, ``keyboard_toggle_button``, ``press_slider_key``, ``select_option``: controls, moved the way a person would.
- ``open_file_browser``, ``fit_problems``: the screen people have (1280 x 800, file browser open), and what
  does not fit in it.
"""

from __future__ import annotations

import base64
import contextlib
import json
import re
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)
#: The screen the course is sized for: a laptop or a projector at 1280 x 800, JupyterLab's file browser open.
VIEWPORT = {"width": 1280, "height": 800}
#: A wide screen, checked too: nothing may depend on the window being small.
WIDE_VIEWPORT = {"width": 1920, "height": 1080}
KERNEL_IDLE_TEXT = "Python 3 (ipykernel) | Idle"

# Selectors, in one place (JupyterLab 4, ipywidgets 8).
OUTPUT = ".jp-OutputArea-output"
PLOT = ".js-plotly-plot"
CODE_PROMPT = ".jp-CodeCell .jp-InputPrompt"
#: What ``rendered_counts`` counts inside cell outputs; keys are used in the expectation table.
WIDGET_SELECTORS = {
    "plots": PLOT,
    "sliders": ".widget-slider",
    "toggle_buttons": ".widget-toggle-buttons, .widget-toggle-button:not(.widget-toggle-buttons .widget-toggle-button)",
    "dropdowns": ".widget-dropdown",
    "buttons": "button.jupyter-button:not(.widget-toggle-button)",
    "checkboxes": ".widget-checkbox",
    "radios": ".widget-radio",
    "quizzes": ".mha-quiz",
}


class BrowserStartError(RuntimeError):
    """Chromium could not be started."""


def launch_browser(playwright, user_data_dir: Path, *, executable: str, env: dict | None = None, timeout_s: float = 60):
    """A headless Chromium persistent context with a fresh profile folder."""
    try:
        return playwright.chromium.launch_persistent_context(
            str(user_data_dir),
            executable_path=executable,
            headless=True,
            args=list(CHROMIUM_ARGS),
            viewport=VIEWPORT,
            env=env,
            timeout=timeout_s * 1000,
        )
    except Exception as exc:  # playwright raises its own Error/TimeoutError types
        raise BrowserStartError(f"Chromium ({executable}) did not start within {timeout_s:.0f} s: {exc}") from exc


def kill_matching(fragment: str) -> list[int]:
    """Kill every process whose command line mentions ``fragment``; their pids."""
    import psutil

    killed = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        with contextlib.suppress(psutil.Error):
            if any(fragment in part for part in proc.info["cmdline"] or []):
                proc.kill()
                killed.append(proc.pid)
    return killed


#: The process's one playwright driver (``playwright_driver``) and how many are using it.
_DRIVER: dict = {"playwright": None, "users": 0}


@contextlib.contextmanager
def playwright_driver():
    """The process's one playwright driver: playwright's sync API runs one at a time, and the session's browser for
    JupyterLab stays open while a test opens another (``test_first_command.py``, Orca's Chromium). Started by the
    first user, stopped when the last is done."""
    from playwright.sync_api import sync_playwright

    if not _DRIVER["users"]:
        _DRIVER["playwright"] = sync_playwright().start()
    _DRIVER["users"] += 1
    try:
        yield _DRIVER["playwright"]
    finally:
        _DRIVER["users"] -= 1
        if not _DRIVER["users"]:
            with contextlib.suppress(Exception):
                _DRIVER["playwright"].stop()
            _DRIVER["playwright"] = None


def chromium(work_dir: Path, cleanup: dict | None = None, *, executable: str | None = None):
    """Debian's Chromium via playwright with a fresh profile under ``work_dir`` (a context manager);
    closed, and any process still holding that profile killed, on the way out (recorded in
    ``cleanup`` when given). The one launcher of the browser, handout and hub tests."""
    import os

    import pytest
    from browser_config import CHROMIUM

    @contextlib.contextmanager
    def running():
        work_dir.mkdir(parents=True, exist_ok=True)
        profile = work_dir / "chromium-profile"
        home = work_dir / "chromium-home"
        home.mkdir(exist_ok=True)
        env = dict(os.environ, HOME=str(home))
        try:
            with playwright_driver() as pw:
                try:
                    context = launch_browser(pw, profile, executable=executable or CHROMIUM, env=env)
                except BrowserStartError as exc:
                    pytest.fail(str(exc), pytrace=False)
                try:
                    yield context
                finally:
                    with contextlib.suppress(Exception):
                        context.close()
        finally:
            # Anything still holding this run's profile folder is ours and should be gone.
            killed = kill_matching(str(profile))
            if cleanup is not None:
                cleanup["chromium_killed"] = killed

    return running()


def parse_kernel_frame(payload) -> tuple[dict, dict, dict]:
    """(header, parent_header, content) of one kernel websocket frame.

    JupyterLab speaks either the JSON protocol (text frames) or
    ``v1.kernel.websocket.jupyter.org`` (binary: a count n, n little-endian uint64
    offsets, then channel, header, parent header, metadata, content, buffers).
    """
    if isinstance(payload, str):
        msg = json.loads(payload)
        return msg.get("header", {}), msg.get("parent_header", {}), msg.get("content", {})
    (n,) = struct.unpack_from("<Q", payload, 0)
    offsets = list(struct.unpack_from(f"<{n}Q", payload, 8)) + [len(payload)]
    part = lambda i: json.loads(payload[offsets[i]:offsets[i + 1]]) if i + 1 < len(offsets) else {}  # noqa: E731
    return part(1), part(2), part(4)


@dataclass
class WebsocketMeter:
    """Payload bytes over the page's kernel websockets (``/api/kernels/<id>/channels``), and
    anything the kernel wrote to stderr or raised while handling a widget message (a control's
    callback): JupyterLab shows those in no cell, only in its log console."""

    received: int = 0
    sent: int = 0
    frames: int = 0
    urls: list = field(default_factory=list)
    callback_errors: list = field(default_factory=list)

    def attach(self, page) -> "WebsocketMeter":
        page.on("websocket", self._on_websocket)
        return self

    def _on_websocket(self, ws) -> None:
        if "/api/kernels/" not in ws.url:
            return
        self.urls.append(ws.url.split("?")[0])
        ws.on("framereceived", lambda payload: self._count("received", payload))
        ws.on("framesent", lambda payload: self._count("sent", payload))

    def _count(self, direction: str, payload) -> None:
        n = len(payload.encode("utf-8")) if isinstance(payload, str) else len(payload)
        setattr(self, direction, getattr(self, direction) + n)
        self.frames += 1
        if direction == "received" and n < 1_000_000:  # the big frames are widget code (plotly's bundle)
            self._look_for_callback_error(payload)

    def _look_for_callback_error(self, payload) -> None:
        try:
            header, parent, content = parse_kernel_frame(payload)
        except (ValueError, struct.error, UnicodeDecodeError):
            return
        kind = header.get("msg_type")
        if parent.get("msg_type") != "comm_msg" or kind not in ("stream", "error"):
            return
        if kind == "error":
            self.callback_errors.append(f"{content.get('ename')}: {content.get('evalue')}")
        elif content.get("name") == "stderr" and not content.get("text", "").startswith("No such comm"):
            # ("No such comm: ..." is the kernel answering a frontend probe for a comm it never opened.)
            self.callback_errors.append(content.get("text", "")[:2000])


# --------------------------------------------------------------------------- the notebook lifecycle


def status_bar_text(page) -> str:
    return page.evaluate("() => (document.querySelector('#jp-main-statusbar') || {}).innerText || ''")


def open_notebook(page, server, rel_path: str, *, workspace: str, timeout_s: float = 60) -> None:
    """Open ``rel_path`` (relative to the server root) in its own, fresh workspace."""
    page.goto(server.url(f"/lab/workspaces/{workspace}/tree/{rel_path}"), timeout=timeout_s * 1000)


def wait_kernel_idle(page, *, timeout_s: float = 60) -> None:
    """Wait for the status bar's ``Python 3 (ipykernel) | Idle`` (the kernel exists and is idle)."""
    try:
        page.wait_for_function(
            "(text) => ((document.querySelector('#jp-main-statusbar') || {}).innerText || '')"
            ".replace(/\\s*\\n\\s*/g, ' | ').includes(text)",
            arg=KERNEL_IDLE_TEXT, timeout=timeout_s * 1000, polling=200,
        )
    except Exception as exc:
        raise AssertionError(
            f"the kernel was not '{KERNEL_IDLE_TEXT}' within {timeout_s:.0f} s; "
            f"status bar reads {status_bar_text(page)!r}"
        ) from exc


def code_prompts(page) -> list[str]:
    return page.evaluate(f"() => [...document.querySelectorAll('{CODE_PROMPT}')].map(e => e.innerText.trim())")


def run_all(page, *, restart: bool = False, timeout_s: float = 20) -> None:
    """Run menu -> 'Run All Cells' (or 'Restart Kernel and Run All Cells...', confirming the dialog)."""
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click(timeout=timeout_s * 1000)
    command = "runmenu:restart-and-run-all" if restart else "runmenu:run-all"
    page.locator(f'.lm-Menu-item[data-command="{command}"]').click(timeout=timeout_s * 1000)
    if restart:
        page.locator(".jp-Dialog-button.jp-mod-accept").click(timeout=timeout_s * 1000)
    # Run-all marks every code cell [*] at once; the first prompt must leave [ ].
    try:
        page.wait_for_function(
            f"() => {{ const p = document.querySelector('{CODE_PROMPT}'); return p && p.innerText.trim() !== '[ ]:'; }}",
            timeout=timeout_s * 1000, polling=100,
        )
    except Exception as exc:
        raise AssertionError(f"Run All did not start any cell within {timeout_s:.0f} s; prompts {code_prompts(page)}") from exc


def wait_run_finished(page, *, timeout_s: float) -> list[str]:
    """Wait until no cell is queued or running and the kernel is idle; return the prompts."""
    script = f"""(text) => {{
        const prompts = [...document.querySelectorAll('{CODE_PROMPT}')].map(e => e.innerText.trim());
        const status = ((document.querySelector('#jp-main-statusbar') || {{}}).innerText || '').replace(/\\s*\\n\\s*/g, ' | ');
        return prompts.length > 0 && /^\\[\\d+\\]:$/.test(prompts[0]) && !prompts.includes('[*]:') && status.includes(text);
    }}"""
    try:
        page.wait_for_function(script, arg=KERNEL_IDLE_TEXT, timeout=timeout_s * 1000, polling=200)
    except Exception as exc:
        raise AssertionError(
            f"Run All did not finish within {timeout_s:.0f} s; prompts {code_prompts(page)}, "
            f"status bar {status_bar_text(page)!r}"
        ) from exc
    return code_prompts(page)


# --------------------------------------------------------------------------- what the outputs show


def rendered_counts(page) -> dict[str, int]:
    """How many of each kind of thing (WIDGET_SELECTORS) the cell outputs hold."""
    return page.evaluate(
        """([output, selectors]) => {
            const counts = {};
            for (const [name, sel] of Object.entries(selectors)) {
                const found = new Set();
                for (const out of document.querySelectorAll(output)) {
                    if (out.matches(sel)) found.add(out);
                    out.querySelectorAll(sel).forEach(e => found.add(e));
                }
                counts[name] = found.size;
            }
            counts.loading_widgets = [...document.querySelectorAll(output)]
                .filter(e => /Loading widget/.test(e.innerText || '')).length;
            counts.empty_plots = [...document.querySelectorAll(output + ' .js-plotly-plot, ' + output + '.js-plotly-plot')]
                .filter(e => !(e.data && e.data.length)).length;
            return counts;
        }""",
        [OUTPUT, WIDGET_SELECTORS],
    )


def wait_rendered(page, minimum: dict[str, int], *, timeout_s: float) -> dict[str, int]:
    """Wait until every count in ``minimum`` is reached, no 'Loading widget...' remains and no figure is empty."""
    deadline = time.monotonic() + timeout_s
    while True:
        counts = rendered_counts(page)
        done = counts["loading_widgets"] == 0 and counts["empty_plots"] == 0
        if done and all(counts.get(k, 0) >= v for k, v in minimum.items()):
            return counts
        if time.monotonic() > deadline:
            missing = {k: f"{counts.get(k, 0)} < {v}" for k, v in minimum.items() if counts.get(k, 0) < v}
            stderr = output_problems(page)["stderr"]
            raise AssertionError(
                f"outputs did not render within {timeout_s:.0f} s: missing {missing}, "
                f"{counts['loading_widgets']} still 'Loading widget...', {counts['empty_plots']} figures drawn with no traces "
                f"(a FigureWidget whose data never reached its view); "
                f"counts {counts}" + (f"; stderr in the outputs: {stderr}" if stderr else "")
            )
        page.wait_for_timeout(250)


def output_problems(page) -> dict[str, list[str]]:
    """Error outputs, 'Error displaying widget', and other stderr text, read from the cell outputs."""
    return page.evaluate(
        """(output) => {
            const errors = [], widget_errors = [], stderr = [];
            for (const el of document.querySelectorAll(output)) {
                const mime = el.getAttribute('data-mime-type') || '';
                const text = (el.innerText || '').trim();
                const isError = mime.includes('error') || el.querySelector('[data-mime-type*="error"]');
                if (isError || (mime.includes('stderr') && /Traceback|Error\\b|Exception\\b/.test(text))) {
                    errors.push(text.slice(0, 2000));
                } else if (mime.includes('stderr') && text) {
                    stderr.push(text.slice(0, 500));
                }
                if (/Error displaying widget|Error rendering|Failed to load model class|Message serialization failed/.test(text)) {
                    widget_errors.push(text.slice(0, 500));
                }
            }
            return {errors, widget_errors, stderr};
        }""",
        OUTPUT,
    )


_NOTEBOOK_HEIGHT = """() => {
    const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer')
               || document.querySelector('.jp-NotebookPanel-notebook');
    const cells = document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell');
    if (!panel || !cells.length) return 0;
    panel.scrollTop = 0;
    // the bottom of the last cell (not the scroll-past-end padding), plus the status bar
    return Math.ceil(cells[cells.length - 1].getBoundingClientRect().bottom + 80);
}"""


#: The tallest the window is stretched to, past every notebook of the course (07 is 16,208 px at 1280 x 800, and
#: taller presented): a check of the whole notebook must reach its last output.
MAX_HEIGHT = 60_000
#: Chromium's tallest screenshot: the picture of a taller notebook stops here.
PICTURE_HEIGHT = 16_384


def on_whole_notebook(page, read, *, picture: Path | None = None, max_height: int = MAX_HEIGHT):
    """``read()`` with the window stretched to the notebook's whole height, so every cell and output is in view
    (a check of what is drawn sees all of it, not one screen), and a screenshot of it to ``picture`` (if given,
    and pictures are taken: ``browser_config.PICTURES``; its first ``PICTURE_HEIGHT`` px) in the same stretch; the
    window's size is put back after."""
    from browser_config import PICTURES

    screen = page.viewport_size
    try:
        # Until the height holds (at most four times): cells outside the viewport are sized by an estimate until
        # they are shown.
        for _ in range(4):
            height = int(min(max(page.evaluate(_NOTEBOOK_HEIGHT) or 0, screen["height"]), max_height))
            if height == page.viewport_size["height"]:
                break
            page.set_viewport_size({"width": screen["width"], "height": height})
            page.wait_for_timeout(700)  # layout, and plotly's relayout on resize
        page.evaluate(_NOTEBOOK_HEIGHT)
        value = read()
        if picture is not None and PICTURES:
            if page.viewport_size["height"] > PICTURE_HEIGHT:
                page.set_viewport_size({"width": screen["width"], "height": PICTURE_HEIGHT})
                page.wait_for_timeout(700)
            picture.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(picture), timeout=30_000)
        return value
    finally:
        page.set_viewport_size(screen)


def save_screenshot(page, path: Path, *, max_height: int = MAX_HEIGHT) -> None:
    """One picture of the whole notebook: the viewport is stretched to the notebook's height first (nothing, when
    no pictures are taken)."""
    from browser_config import PICTURES

    if not PICTURES:
        return
    on_whole_notebook(page, lambda: None, picture=path, max_height=max_height)


# --------------------------------------------------------------------------- plotly data in the page

#: plain(v): a plotly value as plain JSON (typed arrays as lists, plotly's own "_" keys left out).
PLAIN_JS = """
    const plain = (v) => {
        if (ArrayBuffer.isView(v)) return Array.from(v);
        if (Array.isArray(v)) return v.map(plain);
        if (v && typeof v === 'object') {
            const o = {};
            for (const k of Object.keys(v)) if (!k.startsWith('_')) o[k] = plain(v[k]);
            return o;
        }
        return v;
    };
"""

_READ_PLOT = """(el) => {""" + PLAIN_JS + """    const layout = el.layout || {};
    const title = layout.title;
    return {
        data: plain(el.data || []),
        title: title ? (title.text !== undefined ? title.text : title) : null,
        annotations: (layout.annotations || []).map(a => a.text === undefined ? null : a.text),
        shapes: (layout.shapes || []).map(s => ({x0: s.x0, x1: s.x1, y0: s.y0, y1: s.y1})),
        axis_types: Object.fromEntries(Object.keys(layout).filter(k => /^[xy]axis[0-9]*$/.test(k))
                                        .map(k => [k, (layout[k] || {}).type || null])),
    };
}"""


def decode_typed_arrays(value):
    """Undo plotly's base64 typed-array encoding ({'dtype', 'bdata', 'shape'}) where the page kept it."""
    if isinstance(value, dict) and "bdata" in value and "dtype" in value:
        arr = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = value.get("shape")
        if shape:
            shape = [int(s) for s in (shape.split(",") if isinstance(shape, str) else shape)]
            arr = arr.reshape(shape)
        return arr.tolist()
    if isinstance(value, dict):
        return {k: decode_typed_arrays(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decode_typed_arrays(v) for v in value]
    return value


def plot_data(plot) -> dict:
    """What a ``.js-plotly-plot`` element (a Locator) shows: its live trace list (``data``), and from
    its layout the ``title`` text, the ``annotations`` texts, the ``shapes`` corners and each axis's type."""
    result = plot.evaluate(_READ_PLOT)
    result["data"] = decode_typed_arrays(result["data"])
    return result


def as_array(values) -> np.ndarray:
    """A trace's numbers as float array (None -> nan)."""
    return np.array([[np.nan if x is None else x for x in row] if isinstance(row, list) else (np.nan if row is None else row)
                     for row in values], dtype=float)


def poll_until(read, ok, *, timeout_s: float = 15, interval_s: float = 0.05):
    """Call ``read()`` until ``ok(value)``; return (value, seconds, ok?) — the last value either way."""
    start = time.monotonic()
    while True:
        value = read()
        if ok(value):
            return value, time.monotonic() - start, True
        if time.monotonic() - start > timeout_s:
            return value, time.monotonic() - start, False
        time.sleep(interval_s)


# --------------------------------------------------------------------------- controls, moved like a person


def output_with(page, selector: str, index: int = 0):
    """The ``index``-th cell output that contains ``selector`` (one control group)."""
    return page.locator(OUTPUT).filter(has=page.locator(selector)).nth(index)


def press_slider_key(slider, key: str = "ArrowRight", times: int = 1) -> str:
    """Focus the slider's handle and press ``key``; returns the readout text afterwards."""
    handle = slider.locator(".noUi-handle").first
    handle.scroll_into_view_if_needed(timeout=10_000)
    handle.focus(timeout=10_000)
    for _ in range(times):
        handle.press(key, timeout=10_000)
    return slider.locator(".widget-readout").first.inner_text(timeout=10_000).strip()


def click_toggle_button(group, label: str) -> None:
    """Click the toggle button whose text is ``label`` inside ``group``."""
    button = group.locator(".widget-toggle-button", has_text=re.compile(rf"^\s*{re.escape(label)}\s*$")).first
    button.scroll_into_view_if_needed(timeout=10_000)
    button.click(timeout=10_000)


def keyboard_toggle_button(group, label: str, key: str = "Space") -> str:
    """Choose the toggle button ``label`` as a keyboard user would: focus the chosen button, press Tab
    (or Shift+Tab) until ``label`` has the focus, then press ``key``. Returns the keys pressed."""
    page = group.page
    buttons = [t.strip() for t in group.locator(".widget-toggle-button").all_inner_texts()]
    start = group.locator(".widget-toggle-button.mod-active").first
    start.focus(timeout=10_000)
    here = buttons.index(start.inner_text(timeout=10_000).strip())
    step = "Tab" if buttons.index(label) > here else "Shift+Tab"
    pressed = []
    for _ in range(abs(buttons.index(label) - here)):
        page.keyboard.press(step)
        pressed.append(step)
    focused = page.evaluate("() => (document.activeElement && document.activeElement.textContent || '').trim()")
    assert focused == label, f"after {pressed} the focus is on {focused!r}, not on the button {label!r}"
    page.keyboard.press(key)
    return " ".join(pressed + [key])


def click_checkbox(group, label: str) -> None:
    """Click the checkbox whose description is ``label`` inside ``group``."""
    # ipywidgets 8: <div class="widget-checkbox"><label class="widget-label">(hidden)</label>
    #              <label class="widget-label-basic"><input type="checkbox"><span>description</span></label></div>
    box = group.locator(".widget-checkbox .widget-label-basic", has_text=re.compile(rf"^\s*{re.escape(label)}\s*$"))
    box = box.locator("input").first
    box.scroll_into_view_if_needed(timeout=10_000)
    box.click(timeout=10_000)


def select_option(group, label: str) -> None:
    """Choose ``label`` in the first dropdown inside ``group``."""
    select = group.locator(".widget-dropdown select").first
    select.scroll_into_view_if_needed(timeout=10_000)
    select.select_option(label=label, timeout=10_000)


# --------------------------------------------------------------------------- the screen people have


def open_file_browser(page, *, timeout_s: float = 15) -> float:
    """Make sure JupyterLab's file browser is open in the left sidebar (its default); return its width in px."""
    visible = "() => { const fb = document.querySelector('#filebrowser'); return !!fb && fb.offsetWidth > 0; }"
    if not page.evaluate(visible):
        page.locator('.jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id="filebrowser"]').first.click(timeout=timeout_s * 1000)
        page.wait_for_function(visible, timeout=timeout_s * 1000, polling=100)
    return page.evaluate("() => document.querySelector('#filebrowser').getBoundingClientRect().width")


#: What must stay inside its cell's output area: figures (their drawn SVG), tables, controls.
FIT_SELECTORS = (".main-svg, table, .widget-slider, .widget-toggle-buttons, .widget-dropdown, .widget-checkbox, "
                 ".widget-button, .widget-radio-box, .widget-hbox, .widget-html-content")
#: Pixels an element may pass its output area by: ipywidgets gives a 100%-wide widget a 2 px margin,
#: so a full-width text box ends 2 px past the area without hiding anything. A figure or a table
#: that is cut loses far more than this.
FIT_TOLERANCE_PX = 3
#: Controls that move a figure: each must share the screen with the figure it moves.
CONTROL_SELECTORS = ".widget-slider, .widget-toggle-buttons, .widget-dropdown, .widget-checkbox"


def fit_problems(page) -> dict:
    """What sticks out of its output area, and live figures that cannot share the screen with their control.

    Returns ``{"overflow": [...], "too_tall": [...], "output_width": px, "visible_height": px, "groups": [...]}``:
    ``overflow`` names each figure, table or control whose right (or left) edge passes its output
    area's, and each text of a figure (title, annotation, tick label) that runs past the figure; ``too_tall`` each output whose controls and figure together are taller than the
    notebook's visible height; ``groups`` the measured height of every control group.
    """
    return page.evaluate(
        r"""([output, fit, controls, tolerance]) => {
            const describe = (el) => {
                const cls = (el.getAttribute('class') || '').split(/\s+/).filter(c => c).slice(0, 3).join('.');
                const text = (el.innerText || '').trim().split('\n')[0].slice(0, 40);
                return `${el.tagName.toLowerCase()}.${cls}` + (text ? ` "${text}"` : '');
            };
            const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-WindowedPanel-outer')
                       || document.querySelector('.jp-NotebookPanel-notebook');
            const visible = panel ? panel.getBoundingClientRect().height : window.innerHeight;
            const overflow = [], too_tall = [], groups = [];
            let width = null;
            document.querySelectorAll(output).forEach((out, i) => {
                const box = out.getBoundingClientRect();
                if (box.width === 0) return;
                width = width === null ? box.width : Math.min(width, box.width);
                for (const el of out.querySelectorAll(fit)) {
                    const r = el.getBoundingClientRect();
                    if (r.width === 0 || r.height === 0) continue;
                    if (r.right > box.right + tolerance || r.left < box.left - tolerance) {
                        overflow.push(`output ${i}: ${describe(el)} spans x ${Math.round(r.left)}-${Math.round(r.right)}, ` +
                                      `its output area ${Math.round(box.left)}-${Math.round(box.right)}`);
                    }
                }
                // Text inside a figure (titles, annotations, tick labels) that runs past the figure is cut off.
                const figures = [...(out.matches('.js-plotly-plot') ? [out] : []), ...out.querySelectorAll('.js-plotly-plot')];
                for (const plot of figures) {
                    const edge = plot.getBoundingClientRect();
                    for (const t of plot.querySelectorAll('.main-svg text')) {
                        const r = t.getBoundingClientRect();
                        if (r.width === 0 || !(t.textContent || '').trim()) continue;
                        if (r.right > edge.right + tolerance || r.left < edge.left - tolerance) {
                            overflow.push(`output ${i}: text "${t.textContent.trim().slice(0, 50)}" spans x ` +
                                          `${Math.round(r.left)}-${Math.round(r.right)}, its figure ${Math.round(edge.left)}-${Math.round(edge.right)}`);
                        }
                    }
                }
                const moved = [...out.querySelectorAll(controls)].filter(e => e.getBoundingClientRect().height > 0);
                const plots = [...out.querySelectorAll('.js-plotly-plot')].filter(e => e.getBoundingClientRect().height > 0);
                if (moved.length && plots.length) {
                    const top = Math.min(...moved.map(e => e.getBoundingClientRect().top), ...plots.map(e => e.getBoundingClientRect().top));
                    const bottom = Math.max(...moved.map(e => e.getBoundingClientRect().bottom), ...plots.map(e => e.getBoundingClientRect().bottom));
                    const height = Math.round(bottom - top);
                    groups.push({output: i, height});
                    if (height > visible) too_tall.push(`output ${i}: its controls and figure span ${height} px; ` +
                                                        `the notebook shows ${Math.round(visible)} px at once`);
                }
            });
            return {overflow, too_tall, output_width: width, visible_height: visible, groups};
        }""",
        [OUTPUT, FIT_SELECTORS, CONTROL_SELECTORS, FIT_TOLERANCE_PX],
    )


def keyboard_radio_button(group, label: str, key: str = "ArrowRight") -> str:
    """Choose the toggle button ``label`` as a keyboard user does in a row of toggle buttons, which
    ``mha_classroom.widgets._keys`` makes a radio group (one Tab stop, on the chosen button): focus the chosen
    button, then press ``key`` (ArrowRight or ArrowLeft) until ``label`` is chosen. Returns the keys pressed."""
    page = group.page
    chosen = group.locator(".widget-toggle-button[aria-checked='true']").first
    chosen.focus(timeout=10_000)
    read = "() => document.activeElement && document.activeElement.getAttribute('aria-checked') === 'true' ? " \
           "document.activeElement.textContent.trim() : null"
    pressed = []
    for _ in range(group.locator(".widget-toggle-button").count()):
        if page.evaluate(read) == label:
            return " ".join(pressed)
        page.keyboard.press(key)
        pressed.append(key)
        page.wait_for_function(f"() => ({read})() !== null", timeout=10_000)
    raise AssertionError(f"after {pressed} the focused, chosen button reads {page.evaluate(read)!r}, not {label!r}")
