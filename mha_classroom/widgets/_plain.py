"""A figure as plain nested dicts in plotly's own spelling (``_plain``: what the builders give and what travels),
and the course's one figure diff: ``figure_diff`` says what changed between two of them, and one function per
place applies it: ``apply_diff`` (plain dicts), ``apply_to_figure`` (a plotly figure, through its validators) and
``mhaDiff.applyDiff`` in the page (``js/diff.js``: a live figure's view in JupyterLab, the handouts' ``states.js``).

When the number or the types of the traces change, the diff sets the whole trace list, so every side
replaces it as plotly would.
"""

from __future__ import annotations

import re

import numpy as np
import plotly.graph_objects as go


class PlainFigure(dict):
    """``{"data", "layout"}`` already in plotly's own spelling (what ``_plain`` returns). Nothing changes one
    after it is made (``apply_plain`` copies what it changes), so what is read from it (its words) can be
    kept on it, and ``_plain`` of it is itself."""


def _plain(fig: go.Figure | dict) -> PlainFigure:
    """The figure as nested dicts in plotly's own spelling, so two figures can be compared leaf by leaf."""
    if isinstance(fig, PlainFigure):
        return fig
    if isinstance(fig, dict):
        return PlainFigure(data=[_nested(t) for t in fig.get("data", ())], layout=_nested(fig.get("layout", {})))
    # A figure built with _validate=False keeps the builder's spelling (title_text=...): spell it out too.
    return PlainFigure(data=[_nested(t.to_plotly_json()) for t in fig.data], layout=_nested(fig.layout.to_plotly_json()))


#: The plotly properties whose own names hold an underscore; in every other key an underscore is a path separator.
_UNDERSCORED = ("plot_bgcolor", "paper_bgcolor", "error_x", "error_y", "error_z", "copy_ystyle", "copy_zstyle")


def _split_key(key: str) -> list[str]:
    """``"xaxis_title_text"`` -> ``["xaxis", "title", "text"]``; plotly's underscored names stay whole,
    and ``xaxis1`` is plotly's ``xaxis``."""
    if re.fullmatch(r"[xy]axis1", key):
        return [key[:-1]]
    if key.startswith("_") or "_" not in key:
        return [key]
    for name in _UNDERSCORED:
        if key == name or key.startswith(name + "_"):
            rest = key[len(name) + 1:]
            return [name] + (rest.split("_") if rest else [])
    return key.split("_")


def _nested(spec):
    """Spell out plotly's "magic underscores" (``title_text`` is ``title: {text}``), as a validated figure does."""
    if isinstance(spec, (list, tuple)):
        # Only lists of objects (traces, annotations, shapes) hold keys; lists of values are left as they are.
        return [_nested(v) for v in spec] if any(isinstance(v, dict) for v in spec[:1]) else spec
    if not isinstance(spec, dict):
        return spec
    out: dict = {}
    for key, value in spec.items():
        *parents, leaf = _split_key(key)
        node = out
        for part in parents:
            node = node.setdefault(part, {})
        value = _nested(value)
        if isinstance(value, dict) and isinstance(node.get(leaf), dict):
            node[leaf] = {**node[leaf], **value}
        else:
            node[leaf] = value
    return out


def _same(a, b) -> bool:
    """Equal values: NumPy arrays by shape and content (a builder's arrays), everything else by type and ``==``."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return np.shape(a) == np.shape(b) and bool(np.all(np.asarray(a) == np.asarray(b)))
        except (TypeError, ValueError):
            return False
    numbers = (int, float, np.integer, np.floating)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        return bool(a == b)  # 1 and 1.0 draw the same (JSON and JavaScript do not tell them apart)
    if type(a) is not type(b) and not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _items_in_place(a, b) -> bool:
    """Two lists of objects (traces, annotations, shapes) whose items change one by one: as many, and each item
    of the same ``type`` (a trace cannot change its type in place)."""
    return (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b) and len(a) > 0
            and all(isinstance(x, dict) and isinstance(y, dict) and x.get("type") == y.get("type")
                    for x, y in zip(a, b)))


def figure_diff(old, new) -> dict | None:
    """What turns ``old`` into ``new`` (two plain figures, or any two parts of them): the course's one figure diff.

    ``{"s": {key: value}, "u": {key: diff}, "d": [key, ...]}``: set these keys, update these (a nested
    object, or an item of a list of objects, keyed by its position as a string), delete these. Dicts are
    compared key by key; lists of objects item by item when ``_items_in_place``; any other change sets
    the value whole. ``None`` when the two are equal. The values are ``new``'s own (never copied here).

    Applied by ``apply_diff`` (plain dicts), ``apply_to_figure`` (a plotly figure) and, in the page,
    ``mhaDiff.applyDiff`` (``js/diff.js``): a live figure's view and the handouts' ``states.js``. The cases
    in ``tests/diff_cases.json`` are checked on both sides.
    """
    if old is new:
        return None  # one object (a remembered setting shown again): nothing to compare
    if isinstance(new, dict) and isinstance(old, dict):
        keys, gone = list(new), [k for k in old if k not in new]
        get_old = old.get
    elif _items_in_place(old, new):
        keys, gone = [str(i) for i in range(len(new))], []
        new = dict(zip(keys, new))
        get_old = dict(zip(keys, old)).get
    else:
        raise TypeError(f"figure_diff compares two dicts or two lists of objects; got old={type(old).__name__}, "
                        f"new={type(new).__name__}")
    out: dict = {}
    for key in keys:
        a, b = get_old(key, _MISSING), new[key]
        if a is _MISSING:
            out.setdefault("s", {})[key] = b
        elif (isinstance(a, dict) and isinstance(b, dict)) or _items_in_place(a, b):
            inner = figure_diff(a, b)
            if inner:
                out.setdefault("u", {})[key] = inner
        elif not _same(a, b):
            out.setdefault("s", {})[key] = b
    if gone:
        out["d"] = gone
    return out or None


_MISSING = object()


def apply_diff(base, diff):
    """``base`` changed by ``diff`` (``figure_diff``'s output), as a new object: ``base`` is left as it is, and
    what the new one shares with it is only what the diff leaves alone. What the page does (``js/diff.js``)."""
    if not diff:
        return base
    out = list(base) if isinstance(base, (list, tuple)) else dict(base)

    def at(key):
        return int(key) if isinstance(out, list) else key

    for key, value in (diff.get("s") or {}).items():
        out[at(key)] = value
    for key, inner in (diff.get("u") or {}).items():
        out[at(key)] = apply_diff(out[at(key)], inner)
    for key in diff.get("d") or ():
        out.pop(key, None)
    return out


def _leaves(diff: dict, prefix: str = ""):
    """(plotly property path, value) for each change of ``diff``; a deleted key is set to None."""
    for key, value in (diff.get("s") or {}).items():
        yield prefix + key, value
    for key, inner in (diff.get("u") or {}).items():
        yield from _leaves(inner, prefix + key + ".")
    for key in diff.get("d") or ():
        yield prefix + key, None


def apply_to_figure(target: go.Figure, diff: dict | None) -> None:
    """Change ``target`` (a plotly figure holding the diff's ``old``) by ``diff``, through plotly's validators,
    in one ``batch_update``. A new trace list replaces the traces."""
    if not diff:
        return
    with target.batch_update():
        sets, updates = diff.get("s") or {}, diff.get("u") or {}
        if "data" in sets:
            target.data = ()
            target.add_traces(list(sets["data"]))
        for index, inner in ((updates.get("data") or {}).get("u") or {}).items():  # same traces: item by item
            trace = target.data[int(index)]
            for path, value in _leaves(inner):
                trace[path] = value
        if "layout" in sets:
            target.layout = sets["layout"]
        for path, value in _leaves(updates.get("layout") or {}):
            target.layout[path] = value
