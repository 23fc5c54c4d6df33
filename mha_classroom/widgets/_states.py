"""A control group in a handout (static mode): its finite settings computed while the page is built.

A handout has no kernel, so a control cannot call the package when it moves. Instead the
package moves it here, once per setting, while ``make handouts`` runs the notebook: the
real widgets are set (``.value``), the group's own callbacks redraw its figure exactly as
in JupyterLab, and each setting's figure, its text alternative and the lines the group
shows beside it are recorded. Then every control goes back to where it started. The page
(``tools/handouts.py`` and ``handout_assets/states.js``) switches between the recorded
settings with no kernel and no network.

A group says which settings to record with ``handout_controls()``: an ordered
``{attribute: values}`` in the spelling of ``benchmarks/controls_registry.py``
(``"switches[2]"`` is the third control of a list; ``None`` is every option the control
offers). Optional, on the class:

- ``handout_bases``: controls whose every combination is a starting point (notebook 10's model
  presets); from each, the other controls move one at a time. A base that an earlier one
  switches off (``disabled``) keeps the setting it was left at.
- ``handout_note``: one sentence for what only Python can do (type your own sentence, retrain).
- ``handout_legends``: a legend for a list of controls (``{"switches": "Heads switched on"}``).

When every combination of the settings makes at most ``MAX_STATES`` states, all of them are
recorded; otherwise each control moves on its own from the starting settings, and the page
says so.

The same walk serves JupyterLab (``hold``): a group with ``hold_settings`` gives the page every
setting's figure once, when it is shown, and the page then switches between them by itself
(``js/live_figure.js``); the kernel only hears the control's new value and sends nothing back.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import re
from dataclasses import dataclass, field

#: The output a group displays in static mode: data only, turned into HTML by tools/handouts.py.
STATES_MIME = "application/vnd.mha-course.states+json"
#: Under the figure of a group that records no settings: the handout shows its default only.
LIVE_NOTE = "<p><i>This control is live in JupyterLab; here it shows its default setting.</i></p>"
#: Up to this many combinations, every combination is recorded; past it, one control at a time.
MAX_STATES = 100
#: The group attributes that hold text shown beside the figure (an ``ipywidgets.HTML`` each).
TEXT_ATTRS = ("message", "readout", "status")
ONE_AT_A_TIME = "Here each control moves on its own; the others keep their first setting."
FROM_EACH_BASE = ("Here the other controls move one at a time from each choice of {bases}: when one moves, the others "
                  "go back to their first setting.")

_SPELLING = re.compile(r"^([A-Za-z_]\w*)(?:\[(\d+)\])?$")


@dataclass
class Control:
    """One declared control: its attribute spelling, the widget, and the values to record (None: every option)."""

    attr: str
    widget: object
    values: list | None
    options: list = field(default_factory=list)  # every value seen, in the page's order
    labels: list = field(default_factory=list)

    def index(self, value) -> int:
        for i, seen in enumerate(self.options):
            if _same_value(seen, value):
                return i
        self.options.append(value)
        self.labels.append(option_label(self.widget, value))
        return len(self.options) - 1


def _same_value(a, b) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return type(a) is type(b) and a == b or (isinstance(a, (int, float)) and isinstance(b, (int, float)) and a == b)


def _controls_of(group) -> dict:
    """``group.handout_controls()`` (or the attribute itself, when it is a dict), checked for its type."""
    declared = getattr(group, "handout_controls", None)
    declared = declared() if callable(declared) else declared
    if not isinstance(declared, dict) or not declared:
        raise TypeError(f"{type(group).__name__}.handout_controls must give a non-empty dict "
                        f"{{attribute: values or None}}; got {declared!r}")
    return declared


def resolve(group, attr: str):
    """The widget that ``attr`` names on ``group`` (``"switches[2]"``: the third of ``group.switches``)."""
    name = type(group).__name__
    match = _SPELLING.match(attr) if isinstance(attr, str) else None
    if not match:
        raise ValueError(f"{name}.handout_controls names {attr!r}; valid spellings are an attribute "
                         f"('d_head') or an item of a list attribute ('switches[2]')")
    base, item = match.group(1), match.group(2)
    if not hasattr(group, base):
        found = sorted(k for k, v in vars(group).items() if hasattr(v, "value") and hasattr(v, "observe"))
        raise ValueError(f"{name}.handout_controls names {attr!r}, which is not an attribute of the group; "
                         f"its controls are {', '.join(found) or 'none'}")
    widget = getattr(group, base)
    if item is not None:
        if not isinstance(widget, (list, tuple)) or int(item) >= len(widget):
            count = len(widget) if isinstance(widget, (list, tuple)) else 0
            raise ValueError(f"{name}.handout_controls names {attr!r}; {base} holds {count} controls, "
                             f"valid items are {base}[0] to {base}[{max(count - 1, 0)}]")
        widget = widget[int(item)]
    if not (hasattr(widget, "value") and hasattr(widget, "observe")):
        raise ValueError(f"{name}.handout_controls names {attr!r}, which is a {type(widget).__name__}, not a control "
                         "with a value")
    return widget


def every_option(widget) -> list:
    """Every setting ``widget`` offers now: its options, each slider step, or both states of a checkbox."""
    options = getattr(widget, "options", None)
    if options is not None:
        return [o[1] if isinstance(o, tuple) and len(o) == 2 else o for o in options]
    if isinstance(widget.value, bool):
        return [widget.value, not widget.value]
    low, high, step = (getattr(widget, k, None) for k in ("min", "max", "step"))
    if None in (low, high, step) or not step:
        raise ValueError(f"{type(widget).__name__} {getattr(widget, 'description', '')!r} has no finite set of settings: "
                         "list the values to record in handout_controls")
    count = int(round((high - low) / step)) + 1
    if isinstance(widget.value, int):
        return [int(low + i * step) for i in range(count)]
    return [round(low + i * step, 10) for i in range(count)]


def option_label(widget, value) -> str:
    """How the page names ``value`` of ``widget``: its option label, its readout, or on/off for a checkbox."""
    for option in getattr(widget, "options", None) or ():
        if isinstance(option, tuple) and len(option) == 2:
            if _same_value(option[1], value):
                return str(option[0])
        elif _same_value(option, value):
            return f"{value:,}" if isinstance(value, int) and not isinstance(value, bool) else str(value)
    if isinstance(value, bool):
        return "on" if value else "off"
    fmt = getattr(widget, "readout_format", None)
    if fmt and isinstance(value, (int, float)):
        try:
            return format(value, fmt)
        except ValueError:
            pass
    return str(value)


def _values(control: Control) -> list:
    values = every_option(control.widget) if control.values is None else list(control.values)
    current = control.widget.value
    if not any(_same_value(v, current) for v in values):
        values.insert(0, current)  # the starting setting is always a state: the page opens on it
    return values


def _set(group, control: Control, value) -> None:
    widget = control.widget
    try:
        widget.value = value
    except Exception as error:  # a TraitError names the widget, not the declaration
        raise ValueError(f"{type(group).__name__}.handout_controls gives {control.attr}={value!r}, which the control "
                         f"refuses ({error}); valid values are {', '.join(map(repr, every_option(widget)))}") from None
    if not _same_value(widget.value, value):
        raise ValueError(f"{type(group).__name__}.handout_controls gives {control.attr}={value!r}; the control holds "
                         f"{widget.value!r} instead; valid values are {', '.join(map(repr, every_option(widget)))}")


def _figure_json(group) -> dict:
    """The group's figure as plain plotly JSON (what the page draws): the builder's plain figure that a
    ``LiveFigure`` shows, as in JupyterLab."""
    import plotly.io as pio

    figure = group.figure
    return json.loads(pio.to_json(figure.shown if hasattr(figure, "shown") else figure, validate=False))


def shown_texts(group) -> dict:
    """The lines the group shows beside its figure (message, readout, status): HTML, '' when hidden or empty."""
    texts = {}
    for attr in TEXT_ATTRS:
        widget = getattr(group, attr, None)
        if widget is None or not isinstance(getattr(widget, "value", None), str):
            continue
        hidden = getattr(getattr(widget, "layout", None), "display", None) == "none"
        texts[attr] = "" if hidden else widget.value
    return texts


def _record(group, controls: list[Control]) -> dict:
    from ..describe import in_words

    spec = _figure_json(group)
    words = in_words(spec)
    return {"values": [c.index(c.widget.value) for c in controls], "figure": spec,
            "words": {"name": words.name, "description": words.description}, "texts": shown_texts(group)}


def settings(group) -> list[list]:
    """The settings to record, as lists of values in declaration order (what ``record`` walks through)."""
    return [s for s, _ in _walk(group, _plan(group))[0]]


def _plan(group) -> tuple[list[Control], list[str], str]:
    declared = _controls_of(group)
    controls = [Control(attr, resolve(group, attr), values) for attr, values in declared.items()]
    bases = list(getattr(group, "handout_bases", ()) or ())
    unknown = [b for b in bases if b not in declared]
    if unknown:
        raise ValueError(f"{type(group).__name__}.handout_bases names {unknown}, which handout_controls does not; "
                         f"valid names are {', '.join(declared)}")
    sizes = [len(_values(c)) for c in controls]
    if math.prod(sizes) <= MAX_STATES:
        return controls, [c.attr for c in controls], "every"
    return controls, bases, "bases" if bases else "one"


def _walk(group, plan, *, record=None):
    """Drive the controls through their settings; returns ([(values, record(group, controls) or None)], mode), the
    controls restored."""
    controls, bases, mode = plan
    start = [c.widget.value for c in controls]
    base_controls = [c for c in controls if c.attr in bases]
    others = [c for c in controls if c.attr not in bases]
    seen, out = set(), []

    def take():
        key = tuple(repr(c.widget.value) for c in controls)
        if key in seen:
            return
        seen.add(key)
        out.append(([c.widget.value for c in controls], record(group, controls) if record else None))

    def restore():
        for _ in range(3):  # a control may move another (10's model sets its KV heads): until all are back
            for c, value in zip(controls, start):
                if not _same_value(c.widget.value, value):
                    _set(group, c, value)
            if all(_same_value(c.widget.value, v) for c, v in zip(controls, start)):
                return
        raise RuntimeError(f"{type(group).__name__}: the controls did not return to their starting settings")

    try:
        take()  # the starting setting first: the page opens on it
        base_values = [_values(c) for c in base_controls]
        for combo in itertools.product(*base_values):
            reachable = True
            for c, value in zip(base_controls, combo):
                if getattr(c.widget, "disabled", False) and not _same_value(c.widget.value, value):
                    reachable = False  # an earlier base switched this one off (10's window, for a model without one)
                    break
                _set(group, c, value)
            if not reachable:
                continue
            here = [c.widget.value for c in others]  # a base may move the others (a model's own KV heads)
            take()
            for c, value_here in zip(others, here):
                if getattr(c.widget, "disabled", False):
                    continue  # a control this base switches off (10's window, for a model without one)
                for value in _values(c):
                    _set(group, c, value)
                    take()
                _set(group, c, value_here)
    finally:
        restore()
    return out, mode


def record(group) -> dict:
    """Every setting of ``group``'s declared controls, recorded; the controls end where they started.

    Returns the data of the ``STATES_MIME`` output: ``controls`` (attribute, legend, kind,
    option labels), ``states`` (per setting: option indices, figure JSON, its words, the
    texts shown), ``mode`` ('every', 'bases' or 'one'), ``bases``, ``sentence`` (what
    the page says about the mode, '' for every combination) and ``note``.
    """
    plan = _plan(group)
    controls, bases, _ = plan
    walked, mode = _walk(group, plan, record=_record)
    states = [s for _, s in walked]
    _order_options(controls, states)
    legends = getattr(group, "handout_legends", {}) or {}
    base_idx = [i for i, c in enumerate(controls) if c.attr in bases] if mode == "bases" else []
    base_names = " and ".join(controls[i].widget.description or controls[i].attr for i in base_idx)
    return {
        "controls": [{"attr": c.attr, "legend": _legend(c, legends), "kind": _kind(c, k, states, mode, base_idx),
                      "name": getattr(c.widget, "description", "") or c.attr, "labels": c.labels, "values": [_plain_value(v) for v in c.options], "base": k in base_idx}
                     for k, c in enumerate(controls)],
        "states": states,
        "mode": mode,
        "sentence": {"every": "", "one": ONE_AT_A_TIME, "bases": FROM_EACH_BASE.format(bases=base_names)}[mode],
        "note": getattr(group, "handout_note", "") or "",
    }


def _plain_value(value):
    """An option's value as JSON holds it (a NumPy number becomes a Python one)."""
    return value.item() if hasattr(value, "item") else value


def _order_options(controls: list[Control], states: list[dict]) -> None:
    """Put each control's options in order: numbers by value (in the widget's direction), others as the widget
    offers them, then in the order first seen; the states are renumbered to match."""
    for k, c in enumerate(controls):
        offered = every_option(c.widget) if getattr(c.widget, "options", None) is not None else []
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in c.options):
            order = sorted(range(len(c.options)), key=lambda i, c=c: c.options[i], reverse=_descending(offered))
        else:
            def rank(i, c=c, offered=offered):
                place = [j for j, v in enumerate(offered) if _same_value(v, c.options[i])]
                return (0, place[0]) if place else (1, i)
            order = sorted(range(len(c.options)), key=rank)
        if order == list(range(len(order))):
            continue
        new_index = {old: new for new, old in enumerate(order)}
        c.options = [c.options[i] for i in order]
        c.labels = [c.labels[i] for i in order]
        for s in states:
            s["values"][k] = new_index[s["values"][k]]


def _descending(offered) -> bool:
    nums = [v for v in offered if isinstance(v, (int, float)) and not isinstance(v, bool)]
    return len(nums) > 1 and nums[0] > nums[-1]


def _legend(control: Control, legends: dict) -> str:
    base = _SPELLING.match(control.attr).group(1)
    if "[" in control.attr:
        return legends.get(base, base.replace("_", " "))
    return legends.get(base) or getattr(control.widget, "description", "") or base.replace("_", " ")


def _kind(control: Control, k: int, states: list, mode: str, base_idx: list) -> str:
    """How the page offers the control: a checkbox; a slider, where the widget is one and every one of its
    settings is there whatever the bases hold; else a row of radio buttons, or a list for many long labels."""
    import ipywidgets

    if isinstance(control.widget, ipywidgets.Checkbox):
        return "checkbox"
    if "Slider" in type(control.widget).__name__:
        if mode != "bases" or k in base_idx:
            return "range"
        per_base = {}
        for state in states:
            key = tuple(state["values"][i] for i in base_idx)
            per_base.setdefault(key, set()).add(state["values"][k])
        if all(len(found) == len(control.options) for found in per_base.values()):
            return "range"
    if len(control.labels) <= 12 and sum(len(label) for label in control.labels) <= 90:
        return "radio"
    return "select"


def static_display(group) -> None:
    """Display ``group`` for a static page (``MHA_COURSE_STATIC=1``): every declared setting, recorded.

    A group that declares no handout settings shows its figure and a line saying the control is live in JupyterLab.
    """
    from IPython.display import HTML, display

    if getattr(group, "handout_controls", None) is None:
        import plotly.graph_objects as go

        display(go.Figure(group.figure.to_dict() if hasattr(group.figure, "shown") else group.figure), HTML(LIVE_NOTE))
        return
    data = record(group)
    display({STATES_MIME: data, "text/plain": f"<{type(group).__name__}: {len(data['states'])} settings recorded>"},
            raw=True)


#: At most this many settings are held by the page in JupyterLab (``hold``): each is a figure sent once.
HELD_MAX = 32


def page_trait(widget) -> str:
    """The trait of ``widget`` that the page's model changes when a learner moves it: ``index`` for a choice of
    options (ipywidgets syncs the position, not the value), else ``value``."""
    return "index" if getattr(widget, "options", None) is not None else "value"


def hold(group) -> int:
    """Give the page every setting of ``group`` in JupyterLab, so that it switches by itself when a control moves
    (``LiveFigure.hold``): a change then costs the kernel one message in and nothing back. Returns how many
    settings the page holds: 0 when there are more than ``HELD_MAX`` (a learner's 8 heads of on/off switches),
    and then every change comes from the kernel as before.

    For a group with ``hold_settings = True``: its one figure (``group.figure``, a ``LiveFigure``) depends on its
    declared controls (``handout_controls``) alone, and every combination of them has a figure of its own. The
    settings are walked as for a handout, with the figure ``quiet`` and the controls' and texts' syncing held, so
    nothing reaches the page while they are; the group ends where it started.
    """
    from ._words import words_of

    controls, _, _ = _plan(group)
    if math.prod(len(_values(c)) for c in controls) > HELD_MAX:
        return 0
    texts = [w for w in (getattr(group, a, None) for a in TEXT_ATTRS) if hasattr(w, "hold_sync")]

    def take(group, controls):
        shown = group.figure.shown
        return [getattr(c.widget, page_trait(c.widget)) for c in controls], shown, words_of(shown)

    with contextlib.ExitStack() as stack:
        for widget in [c.widget for c in controls] + texts:
            stack.enter_context(widget.hold_sync())
        stack.enter_context(group.figure.quiet())
        walked, _ = _walk(group, (controls, [c.attr for c in controls], "every"), record=take)
    states = [s for _, s in walked]
    group.figure.hold([(c.widget, page_trait(c.widget)) for c in controls], states)
    return len(states)
