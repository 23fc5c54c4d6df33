"""A figure as plain nested dicts in plotly's own spelling, what changed between two of them, and the two ways
a change is applied: to plotly's checked objects (``apply_checked``) or to the plain figure a page draws
(``apply_plain``: no validators, no copies of the arrays).

Both apply the same changes: the leaves of ``new`` that differ from ``old``, set, and the keys
``old`` has and ``new`` lacks, removed; when the number or types of traces change, the whole
trace list is replaced. So a page drawn from ``apply_plain`` shows what the checked figure holds.
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


def _changed_leaves(old, new, path=""):
    """Yield (dotted path, new value) for every leaf of ``new`` that differs from ``old``."""
    if isinstance(new, dict) and isinstance(old, dict):
        for key, value in new.items():
            yield from _changed_leaves(old.get(key), value, f"{path}.{key}" if path else key)
        for key in old.keys() - new.keys():
            yield (f"{path}.{key}" if path else key), None
    elif not _same(old, new):
        yield path, new


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        try:
            return np.shape(a) == np.shape(b) and bool(np.all(np.asarray(a) == np.asarray(b)))
        except (TypeError, ValueError):
            return False
    if type(a) is not type(b):
        return False
    try:
        return bool(a == b)
    except (TypeError, ValueError):
        return False


def _same_traces(old: dict, new: dict) -> bool:
    return len(old["data"]) == len(new["data"]) and all(
        a.get("type") == b.get("type") for a, b in zip(old["data"], new["data"]))


def apply_checked(target: go.Figure, old: dict, new: dict) -> None:
    """Change ``target`` (which holds ``old``) to hold ``new``, through plotly's validators, in one ``batch_update``."""
    with target.batch_update():
        if _same_traces(old, new):
            for trace, old_json, new_json in zip(target.data, old["data"], new["data"]):
                for path, value in _changed_leaves(old_json, new_json):
                    trace[path] = value
        else:
            target.data = ()
            target.add_traces(list(new["data"]))
        for path, value in _changed_leaves(old["layout"], new["layout"]):
            target.layout[path] = value


def _dicts_copied(value):
    """``value`` with every dict and list of dicts copied, its arrays and strings shared (they are never changed)."""
    if isinstance(value, dict):
        return {k: _dicts_copied(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)) and any(isinstance(v, dict) for v in value[:1]):
        return [_dicts_copied(v) for v in value]
    return value


def _put(node: dict, path: str, value) -> None:
    *parents, leaf = path.split(".")
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            if value is None:
                return
            child = node[part] = {}
        node = child
    if value is None:
        node.pop(leaf, None)
    else:
        node[leaf] = _dicts_copied(value)


def apply_plain(page: dict, old: dict, new: dict) -> None:
    """Change ``page`` (plain ``{"data": [...], "layout": {...}}`` that shows ``old``) in place to show ``new``.

    ``page`` never shares a dict with ``old`` or ``new``: they stay as they are."""
    if _same_traces(old, new):
        for trace, old_json, new_json in zip(page["data"], old["data"], new["data"]):
            for path, value in _changed_leaves(old_json, new_json):
                _put(trace, path, value)
    else:
        page["data"][:] = _dicts_copied(list(new["data"]))
    for path, value in _changed_leaves(old["layout"], new["layout"]):
        _put(page["layout"], path, value)
