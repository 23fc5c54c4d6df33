"""Every live control's Python-side update time: set ``.value``, the figure is updated.

Runs inside a fresh Jupyter kernel, as in a notebook: the widgets have live comms,
so the time includes serialising the figure update that goes to the browser (the
browser's own drawing is not included). Control groups come from
``controls_registry.GROUPS``; widget modules with no row there are found and, where
a group can be built without arguments, driven automatically.

In each round every control gets one event (a new value, cycling through its values),
in an order that rotates from round to round. The first event of each control is
reported on its own and left out of the median and 95th percentile.
Goal: median under 20 ms, 95th percentile under 50 ms.
"""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import time
from pathlib import Path

from . import _format as fmt
from ._timing import summary

GOAL_MEDIAN_MS = 20.0
GOAL_P95_MS = 50.0


# -- inside the kernel ------------------------------------------------------------------


def _option_values(widget) -> list | None:
    values = getattr(widget, "_options_values", None)
    return list(values) if values is not None else None


def _auto_values(widget) -> list | None:
    """Values to cycle through for a control found by discovery (None: not a control we can drive)."""
    options = _option_values(widget)
    if options is not None:
        return None  # options are read at event time
    if isinstance(widget.value, bool):
        return [True, False]
    lo, hi, step = (getattr(widget, a, None) for a in ("min", "max", "step"))
    if isinstance(widget.value, (int, float)) and lo is not None and hi is not None:
        n = 5
        values = [lo + (hi - lo) * i / (n - 1) for i in range(n)]
        if step:
            values = [lo + round((v - lo) / step) * step for v in values]
        if isinstance(widget.value, int):
            values = [int(v) for v in values]
        return list(dict.fromkeys(values))
    raise TypeError(f"cannot choose values for {type(widget).__name__}")


def _next_value(widget, values: list | None, cursor: int):
    """The next value to set, different from the current one, and the new cursor (None if there is none)."""
    candidates = _option_values(widget) if values is None else list(values)
    if not candidates:
        return None, cursor
    for step in range(1, len(candidates) + 1):
        i = (cursor + step) % len(candidates)
        if candidates[i] != widget.value:
            return candidates[i], i
    return None, cursor


def resolve(obj, attribute: str):
    """``obj.attribute``, where the attribute may index a list: ``"switches[2]"``; None if absent."""
    name, _, index = attribute.partition("[")
    value = getattr(obj, name, None)
    if index:
        try:
            value = value[int(index.rstrip("]"))]
        except (TypeError, IndexError, ValueError):
            return None
    return value


def _drivable(widget) -> bool:
    import ipywidgets
    import plotly.graph_objects as go

    return isinstance(widget, ipywidgets.ValueWidget) and not isinstance(
        widget, (go.FigureWidget, ipywidgets.HTML, ipywidgets.Label, ipywidgets.Text, ipywidgets.Textarea)
    )


def discover(registered_modules: set[str]) -> tuple[dict, list[dict]]:
    """Groups in widget modules that the registry does not cover.

    Returns ({name: (build, {attribute: values}, figure_attribute)}, [{module, reason}] for
    modules that could not be driven).
    """
    import plotly.graph_objects as go

    import mha_classroom.widgets as package
    from mha_classroom.widgets._live_figure import LiveFigure

    found, skipped = {}, []
    for info in pkgutil.iter_modules(package.__path__):
        name = f"{package.__name__}.{info.name}"
        if info.name.startswith("_") or name in registered_modules:
            continue
        try:
            module = importlib.import_module(name)
        except Exception as exc:
            skipped.append({"module": name, "reason": f"import failed: {type(exc).__name__}: {exc}"})
            continue
        built_any = False
        for fname, fn in inspect.getmembers(module, inspect.isfunction):
            if fname.startswith("_") or fn.__module__ != name:
                continue
            params = inspect.signature(fn).parameters.values()
            if any(p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params):
                continue
            try:
                obj = fn()
            except Exception:
                continue
            attrs = vars(obj) if hasattr(obj, "__dict__") else {}
            figures = [a for a, v in attrs.items() if isinstance(v, (go.FigureWidget, LiveFigure))]
            candidates = {}
            for attr, value in attrs.items():
                if isinstance(value, (list, tuple)):
                    candidates.update({f"{attr}[{i}]": item for i, item in enumerate(value)})
                else:
                    candidates[attr] = value
            controls = {}
            for attr, widget in candidates.items():
                if _drivable(widget):
                    try:
                        controls[attr] = _auto_values(widget)
                    except TypeError:
                        pass
            if figures and controls:
                found[f"{info.name}.{fname} (auto)"] = (lambda fn=fn: fn(), controls, figures[0])
                built_any = True
        if not built_any:
            skipped.append({
                "module": name,
                "reason": "no registry row in benchmarks/controls_registry.py, and no public function "
                          "builds a control group without arguments",
            })
    return found, skipped


def measure(quick: bool, only: list[str] | None, out: str) -> None:
    """Build every group, drive every control, write the results as JSON to ``out``."""
    from benchmarks.controls_registry import GROUPS

    events = 5 if quick else 50
    groups = {name: (g.build, g.controls, g.figure, g.notebook, g.module) for name, g in GROUPS.items()}
    auto, skipped = discover({g.module for g in GROUPS.values()})
    groups.update({name: (build, controls, fig, "", "auto") for name, (build, controls, fig) in auto.items()})
    if only:
        groups = {name: g for name, g in groups.items() if name in only or name.split(".")[0] in only}

    built, results, failed = {}, {}, []
    for name, (build, controls, fig_attr, notebook, module) in groups.items():
        start = time.perf_counter()
        try:
            obj = build()
        except Exception as exc:
            failed.append({"group": name, "reason": f"building it failed: {type(exc).__name__}: {exc}"})
            continue
        build_s = time.perf_counter() - start
        figure = getattr(obj, fig_attr, None)
        for attr, values in controls.items():
            widget = resolve(obj, attr)
            if widget is None or not hasattr(widget, "value"):
                failed.append({"group": name, "reason": f"it has no control attribute {attr!r}"})
                continue
            key = f"{name}.{attr}"
            built[key] = {"widget": widget, "values": values, "figure": figure, "cursor": -1,
                          "last": figure.to_json() if figure is not None else None}
            results[key] = {"group": name, "attribute": attr, "notebook": notebook, "control": type(widget).__name__,
                            "build_s": build_s, "times_ms": [], "first_ms": None, "figure_changed": 0,
                            "events": 0, "errors": 0, "first_error": None}

    keys = list(built)
    for r in range(events + 1):
        shift = r % len(keys) if keys else 0
        for key in keys[shift:] + keys[:shift]:
            b, res = built[key], results[key]
            value, b["cursor"] = _next_value(b["widget"], b["values"], b["cursor"])
            if value is None:
                continue
            start = time.perf_counter()
            try:
                b["widget"].value = value
            except Exception as exc:
                res["errors"] += 1
                res["first_error"] = res["first_error"] or f"value={value!r}: {type(exc).__name__}: {exc}"[:300]
                continue
            elapsed_ms = (time.perf_counter() - start) * 1000
            res["events"] += 1
            if res["first_ms"] is None:
                res["first_ms"] = elapsed_ms
            else:
                res["times_ms"].append(elapsed_ms)
            if b["figure"] is not None:
                now = b["figure"].to_json()  # outside the clock: did the figure change?
                res["figure_changed"] += now != b["last"]
                b["last"] = now

    for res in results.values():
        times = res.pop("times_ms")
        res["ms"] = summary(times) if times else None
        if res["ms"]:
            res["met"] = res["ms"]["median"] < GOAL_MEDIAN_MS and res["ms"]["p95"] < GOAL_P95_MS
    Path(out).write_text(json.dumps({"controls": results, "failed": failed, "unmeasured_modules": skipped,
                                     "events_per_control": events}, default=str))


# -- in the benchmark process -------------------------------------------------------------


def run(quick: bool, log=print, controls: list[str] | None = None, **_) -> dict:
    from ._kernel import measure_in_kernel

    log("controls: driving every control in a fresh kernel")
    result, ran = measure_in_kernel("bench_controls", "measure", label="controls", quick=quick, only=controls)
    if result is None:
        raise RuntimeError(f"the kernel wrote no results: {ran['error'] or ran['errors']}")
    result["goal_median_ms"] = GOAL_MEDIAN_MS
    result["goal_p95_ms"] = GOAL_P95_MS
    result["kernel_peak_kib"] = ran["vmhwm_kib"]
    return result


# -- the report -------------------------------------------------------------------------------------

TITLE = "Live controls: Python-side update time"
NUMBER = 4
MISSING_GOALS = (("every live control", "median < 20 ms, p95 < 50 ms"),)


def goals(result: dict, missing: str) -> list[dict]:
    target = "median < 20 ms, p95 < 50 ms"
    rows = []
    for key, entry in result["controls"].items():
        if entry.get("ms"):
            rows.append(fmt.goal(f"control {key} ({entry['control']})", target,
                                 f"median {entry['ms']['median']:.1f} ms, p95 {entry['ms']['p95']:.1f} ms", entry["met"]))
        else:
            rows.append(fmt.goal(f"control {key}", target, f"no events ({entry.get('first_error')})", False))
    for item in result.get("failed", []):
        rows.append(fmt.goal(f"control group {item['group']}", target, item["reason"], False))
    for item in result.get("unmeasured_modules", []):
        rows.append(fmt.goal(f"controls in {item['module']}", target, item["reason"], None))
    return rows


def markdown(result: dict, report: dict) -> list[str]:
    lines = [
        f"Each control's value set {result['events_per_control']} times in a fresh kernel (live comms), cycling through its values;"
        " time from setting `.value` to the callback returning with the figure updated. The first event is shown on its own"
        " and left out of the median and p95. \"changed\" counts the events after which the figure's JSON differed.",
        "",
        "| control | widget | notebook | events | first | median | p95 | changed | |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]

    def as_ms(value):
        return "-" if value is None else f"{value:.1f} ms"

    for key, e in result["controls"].items():
        ms = e.get("ms") or {}
        status = fmt.met(e.get("met")) if ms else "**no events**"
        if e.get("errors"):
            status += f" ({e['errors']} errors: {e['first_error']})"
        lines.append(f"| {key} | {e['control']} | {e.get('notebook') or '-'} | {e['events']} | {as_ms(e.get('first_ms'))}"
                     f" | {as_ms(ms.get('median'))} | {as_ms(ms.get('p95'))} | {e['figure_changed']} | {status} |")
    for item in result.get("failed", []) + result.get("unmeasured_modules", []):
        lines.append(f"| {item.get('group') or item.get('module')} | - | - | 0 | - | - | - | - | not measured: {item['reason']} |")
    return lines
