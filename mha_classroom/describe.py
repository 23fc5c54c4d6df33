"""A figure in words: a short name and a description with its key numbers, from the figure's own data.

    from mha_classroom.describe import in_words
    words = in_words(fig)          # a go.Figure, or its plotly JSON ({"data", "layout"})
    words.name                            # from the title: "Attention weights of each of H = 4 heads ..."
    words.description                     # "head 2, query token `changed`: largest 0.61 on `key`, then 0.22 on `cache`. ..."

The text is written from what the figure draws, not from the numbers that made it: the
title, the axis titles, the tick labels and each trace's values. So it says what a reader
of the plot can see, for a screen reader (the handouts make each figure an image named by
``name`` and described by ``description``) or for anyone who cannot tell the colours apart.

- A heatmap: for each panel (a tile between blank rows and columns, or its own subplot),
  each row's largest values with their column labels; a large panel gives its largest and
  smallest cells instead. It says what the colour stands for, since colour carries the values.
- Bars: the largest and the smallest bar of each series, with their labels.
- Lines and points: where each series starts and ends, and its highest and lowest points.
- A box: its median and range. A table: its columns and its rows' first entries.

Traces drawn only as decoration (``hoverinfo="skip"``: outlines, reference marks) are not
read out as data; an outline of the largest cells is said in one sentence.

Nothing here needs plotly: the input is plain data. Arrays may come as lists or in
plotly's typed-array form (``{"dtype": "f8", "bdata": ...}``).
"""

from __future__ import annotations

import base64
import functools
import html
import math
import re
from dataclasses import dataclass

import numpy as np

#: Heatmap panels up to this size are read row by row; larger ones by their extremes.
ROWS_READ = 8
PANELS_READ = 4
#: Bars or points per series read out one by one when there are this few.
ITEMS_READ = 6
#: The longest description: Chromium's accessibility tree cuts longer ones off near 1,000 characters.
MAX_CHARS = 950


@dataclass(frozen=True)
class FigureWords:
    """``name``: a short name (the title); ``description``: the key numbers in sentences."""

    name: str
    description: str


# --------------------------------------------------------------------------- reading the JSON


def _spec(figure) -> dict:
    if isinstance(figure, dict):
        return figure
    to_dict = getattr(figure, "to_plotly_json", None)
    if to_dict is None:
        raise TypeError(f"figure={type(figure).__name__} is not a figure; give a go.Figure or its plotly JSON "
                        "(a dict with 'data' and 'layout')")
    return to_dict()


def _array(value) -> np.ndarray | None:
    """A trace's array as float (NaN for blanks), or None; decodes plotly's typed arrays."""
    if value is None:
        return None
    if isinstance(value, dict) and "bdata" in value:
        raw = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value.get("dtype", "f8")))
        shape = value.get("shape")
        if shape:
            raw = raw.reshape([int(s) for s in str(shape).split(",")])
        return raw.astype(float)
    if isinstance(value, np.ndarray):
        return value.astype(float)
    try:
        return np.array([[np.nan if v is None else v for v in row] for row in value] if value and isinstance(value[0], (list, tuple))
                        else [np.nan if v is None else v for v in value], dtype=float)
    except (TypeError, ValueError):
        return None


def _labels(value) -> list | None:
    """A trace's x or y as plain Python values (labels stay text), or None."""
    if value is None:
        return None
    if isinstance(value, dict) and "bdata" in value:
        return _array(value).tolist()
    return list(np.asarray(value, dtype=object).tolist()) if not isinstance(value, list) else value


def plain(text) -> str:
    """Title or label text without its HTML: ``<br>`` becomes a space, tags go, entities are read."""
    if text is None:
        return ""
    if isinstance(text, dict):
        text = text.get("text", "")
    return _plain_text(str(text))


@functools.lru_cache(maxsize=4096)
def _plain_text(text: str) -> str:
    # Cached: a live figure is read again on every control change, with mostly the same titles and labels.
    text = re.sub(r"<br\s*/?>", " ", text, flags=re.IGNORECASE)
    text = html.unescape(re.sub(r"<[^>]+>", "", text))
    return re.sub(r"\s+", " ", text).strip()


def number(value: float) -> str:
    """A value as the text reads it: 0.61, 3.25, 1,024, 2.4e-05."""
    if value is None or not math.isfinite(value):
        return "blank"
    if abs(value - round(value)) < 1e-9 and abs(value) < 1e15:
        return f"{int(round(value)):,}"
    if abs(value) >= 100:
        return f"{value:,.1f}"
    if abs(value) >= 0.01:
        return f"{value:.2f}"
    return f"{value:.2g}"


def _label(value) -> str:
    """A tick label as text: words as `code`, numbers as numbers."""
    text = plain(value) if isinstance(value, str) else (number(value) if isinstance(value, (int, float)) else str(value))
    if isinstance(value, str) and text and not re.fullmatch(r"[-+0-9.,\s%]+", text):
        return f"`{text}`" if "`" not in text else text
    return text


class _Axis:
    """One axis: its title and how a coordinate becomes the label a reader sees."""

    def __init__(self, layout: dict, ref: str | None, letter: str):
        ref = ref or letter
        name = f"{letter}axis" + ref[1:]
        self.layout = layout.get(name, {}) or {}
        self.title = plain(self.layout.get("title"))
        vals, text = self.layout.get("tickvals"), self.layout.get("ticktext")
        self.ticks = {}
        if vals is not None and text is not None:
            vals = _labels(vals)
            self.ticks = {float(v): t for v, t in zip(vals, text) if isinstance(v, (int, float))}
        self.domain = self.layout.get("domain", [0, 1])

    def label(self, coordinate) -> str:
        if isinstance(coordinate, (int, float)) and float(coordinate) in self.ticks:
            return _label(self.ticks[float(coordinate)])
        return _label(coordinate)

    def short(self, fallback: str) -> str:
        """The axis title without its explanation ("key token; in each tile ..." -> "key token")."""
        return re.split(r"[;(:]", self.title)[0].strip() or fallback


# --------------------------------------------------------------------------- panels


def _runs(present: np.ndarray) -> list[tuple[int, int]]:
    """[(start, stop), ...] of the runs of True in a 1-D mask."""
    runs, start = [], None
    for i, flag in enumerate(list(present) + [False]):
        if flag and start is None:
            start = i
        elif not flag and start is not None:
            runs.append((start, i))
            start = None
    return runs


def _panel_title(annotations, x_lo, x_hi, y_top, xref, yref, x_domain, y_domain) -> str:
    """The annotation that titles a panel: in data coordinates just above a tile, or in paper
    coordinates above a subplot's domain."""
    best, best_gap = "", math.inf
    for a in annotations:
        text = plain(a.get("text"))
        if not text:
            continue
        if a.get("xref") == xref and a.get("yref") == yref:
            x, y = a.get("x"), a.get("y")
            if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x_lo - 0.5 <= x <= x_hi + 0.5:
                gap = y_top - y  # the title sits above the tile (the y axis runs downwards in a table)
                if -0.01 <= gap < best_gap and gap <= 1.5:
                    best, best_gap = text, gap
        elif a.get("xref") == "paper" and a.get("yref") == "paper" and xref is not None:
            x, y = a.get("x", 0.5), a.get("y", 1)
            if isinstance(x, (int, float)) and isinstance(y, (int, float)) and x_domain[0] - 0.05 <= x <= x_domain[1] + 0.05:
                gap = y - y_domain[1]
                if -0.02 <= gap < best_gap and gap <= 0.15:
                    best, best_gap = text, gap
    return best


# --------------------------------------------------------------------------- one trace


def _same(a: float, b: float) -> bool:
    """Whether two values read as the same in words (equal to two decimals: 1 and 0.999 are both "1")."""
    return number(a) == number(b) or math.isclose(a, b, rel_tol=5e-3, abs_tol=5e-3)


def _heatmap(trace: dict, layout: dict, notes: list[str], *, panels_in_figure: int = 1) -> list[str]:
    z = _array(trace.get("z"))
    if z is None or z.ndim != 2 or not np.isfinite(z).any():
        return []
    xaxis, yaxis = _Axis(layout, trace.get("xaxis"), "x"), _Axis(layout, trace.get("yaxis"), "y")
    xs = _labels(trace.get("x")) or list(range(z.shape[1]))
    ys = _labels(trace.get("y")) or list(range(z.shape[0]))
    # Without labels a cell's coordinate is its index from 0; the words count positions from 1.
    x_named = trace.get("x") is not None or bool(xaxis.ticks)
    y_named = trace.get("y") is not None or bool(yaxis.ticks)
    row_name, col_name = yaxis.short("row"), xaxis.short("column")
    filled = np.isfinite(z)
    annotations = layout.get("annotations", []) or []
    panels = [(r, c) for r in _runs(filled.any(axis=1)) for c in _runs(filled.any(axis=0))
              if filled[r[0]:r[1], c[0]:c[1]].any()]
    sentences = []
    whole = trace.get("name") or ""
    for n, ((r0, r1), (c0, c1)) in enumerate(panels):
        block = z[r0:r1, c0:c1]
        # A cell's label; without labels its position in its panel, counted from 1 (the coordinate counts from 0).
        x_label = lambda v, c0=c0: xaxis.label(v) if x_named else number(float(v) - c0 + 1)  # noqa: E731
        y_label = lambda v, r0=r0: yaxis.label(v) if y_named else number(float(v) - r0 + 1)  # noqa: E731
        x_lo, x_hi = (xs[c0], xs[c1 - 1]) if isinstance(xs[c0], (int, float)) else (c0, c1 - 1)
        y_top = ys[r0] if isinstance(ys[r0], (int, float)) else r0
        title = _panel_title(annotations, x_lo, x_hi, y_top, trace.get("xaxis", "x"), trace.get("yaxis", "y"),
                             xaxis.domain, yaxis.domain) or plain(whole)
        prefix = f"{title}, " if title else ""
        several = max(len(panels), panels_in_figure)
        compact = several > 1 and several <= PANELS_READ and block.shape[0] <= ROWS_READ
        rows_here = [i for i in range(block.shape[0]) if np.isfinite(block[i]).any()]
        tops = {i: int(np.nanargmax(block[i])) for i in rows_here}
        row_labels = {i: y_label(ys[r0 + i]) for i in rows_here}
        # Each row's largest value with every column that ties with it ("`cache` and `key`").
        top_labels = {i: " and ".join(x_label(xs[c0 + j]) for j in range(block.shape[1])
                                      if np.isfinite(block[i, j]) and _same(block[i, j], block[i, tops[i]]))
                      for i in rows_here}
        top_values = [float(block[i, j]) for i, j in tops.items()]
        # Rows whose largest value stands alone (not a tie, not a row of one value): only these can be summed up.
        alone = all(sum(_same(v, block[i, tops[i]]) for v in block[i][np.isfinite(block[i])]) == 1 for i in rows_here)
        span = (f"{number(min(top_values))}" if top_values and _same(min(top_values), max(top_values))
                else f"{number(min(top_values))} to {number(max(top_values))}" if top_values else "")
        if (alone and block.shape[0] <= ROWS_READ and block.shape[1] >= 2 and len(rows_here) > 1
                and all(top_labels[i] == row_labels[i] for i in rows_here)):
            # Every row's largest value is on its own column: the diagonal (a token looking at itself).
            sentences.append(f"{prefix}each {row_name}'s largest value is on itself ({span}).")
        elif (block.shape[0] <= ROWS_READ and block.shape[1] >= 2 and len(rows_here) > 1
              and all(not _same(np.nanmin(block[i]), np.nanmax(block[i])) for i in rows_here)
              and len(set(top_labels.values())) == 1):
            # Every row's largest value is on the same column.
            sentences.append(f"{prefix}every {row_name}'s largest value is on {top_labels[rows_here[0]]} ({span}).")
        elif compact and block.shape[1] >= 2:
            # Several panels: each row's largest value only, one sentence per panel.
            parts = [f"{row_labels[i]} {number(block[i, tops[i]])} on {top_labels[i]}" for i in rows_here]
            if parts:
                sentences.append(f"{prefix}largest per {row_name}: " + ", ".join(parts) + ".")
        elif several == 1 and block.shape[0] <= ROWS_READ and block.shape[1] >= 2:
            if title:
                sentences.append(f"{title}.")
            for i in rows_here:
                row = block[i]
                order = [j for j in np.argsort(-np.nan_to_num(row, nan=-np.inf), kind="stable") if np.isfinite(row[j])]
                label = lambda j: x_label(xs[c0 + j])  # noqa: E731
                if _same(row[order[0]], row[order[-1]]):
                    sentences.append(f"{row_name} {row_labels[i]}: all {number(row[order[0]])}.")
                    continue
                tied = [j for j in order if _same(row[j], row[order[0]])]
                if len(tied) > 1:
                    text = f"largest {number(row[order[0]])} on " + " and ".join(label(j) for j in tied[:3])
                    rest = [j for j in order if j not in tied]
                    if rest and len(tied) < 3:
                        text += f", then {number(row[rest[0]])} on {label(rest[0])}"
                else:
                    text = f"largest {number(row[order[0]])} on {label(order[0])}"
                    if len(order) > 1:
                        text += f", then {number(row[order[1]])} on {label(order[1])}"
                sentences.append(f"{row_name} {row_labels[i]}: {text}.")
        else:
            # A large panel: its size and range, where its largest and smallest values are (ties counted).
            rows, cols = np.nonzero(np.isfinite(block))
            values = block[rows, cols]
            order = np.argsort(-values, kind="stable")
            at = lambda k: (float(values[k]), int(rows[k]), int(cols[k]))  # noqa: E731

            def cell(v, i, j):
                return f"{row_name} {y_label(ys[r0 + i])}, {col_name} {x_label(xs[c0 + j])}"

            def extreme(word, ks):
                v, i, j = at(ks[0])
                same = [k for k in ks if _same(values[k], v)]
                more = f" (and {len(same) - 1} more {'cell' if len(same) == 2 else 'cells'} at {number(v)})" if len(same) > 1 else ""
                return f"{word} {number(v)} at {cell(v, i, j)}{more}", same

            top, tied = extreme("largest", list(order))
            parts = [top]
            rest = [k for k in order if k not in set(tied)]
            if rest and len(panels) <= PANELS_READ:
                v, i, j = at(rest[0])
                parts.append(f"then {number(v)} at {cell(v, i, j)}")
            if len(panels) <= PANELS_READ and not _same(values[order[0]], values[order[-1]]):
                parts.append(extreme("smallest", list(order[::-1]))[0])
            shape = f"{block.shape[0]} rows by {block.shape[1]} columns, " if len(panels) == 1 and block.shape[1] > 1 else ""
            sentences.append(f"{prefix}{shape}" + "; ".join(parts) + ".")
    # Colour carries the values: say what it stands for, and whether the cells also print their numbers.
    bar = trace.get("colorbar") or {}
    what = plain(bar.get("title")) or plain(whole) or "the value"
    lo, hi = trace.get("zmin"), trace.get("zmax")
    lo = float(np.nanmin(z)) if lo is None else lo
    hi = float(np.nanmax(z)) if hi is None else hi
    if re.fullmatch(r"[-+0-9.,\s]+(to|-)[-+0-9.,\s]+", what):
        what = "the value"  # a colour bar titled by its own range ("0 to 1")
    printed = trace.get("text") is not None or trace.get("texttemplate")
    notes.append(("colour", what, f"from {number(lo)} to {number(hi)}", bool(printed)))
    return sentences


def _series_name(trace: dict, fallback: str, layout: dict | None = None) -> str:
    """The trace's name; else the title of the subplot it is drawn in; else ``fallback``."""
    if plain(trace.get("name")):
        return plain(trace.get("name"))
    if layout is not None:
        xaxis, yaxis = _Axis(layout, trace.get("xaxis"), "x"), _Axis(layout, trace.get("yaxis"), "y")
        title = _panel_title(layout.get("annotations", []) or [], 0, 0, 0, trace.get("xaxis", "x"), trace.get("yaxis", "y"),
                             xaxis.domain, yaxis.domain)
        if title:
            return title
    return fallback


def _bar(trace: dict, layout: dict, notes: list[str]) -> list[str]:
    horizontal = trace.get("orientation") == "h"
    values = _array(trace.get("x" if horizontal else "y"))
    if values is None or values.ndim != 1 or not np.isfinite(values).any():
        return []
    axis = _Axis(layout, trace.get("yaxis" if horizontal else "xaxis"), "y" if horizontal else "x")
    value_axis = _Axis(layout, trace.get("xaxis" if horizontal else "yaxis"), "x" if horizontal else "y")
    cats = _labels(trace.get("y" if horizontal else "x")) or list(range(1, len(values) + 1))
    # Unnamed bars are named by what their height shows (the value axis), not as "bars".
    name = _series_name(trace, value_axis.short("bars"), layout)
    items = [(values[i], axis.label(cats[i])) for i in range(len(values)) if np.isfinite(values[i])]
    if all(_same(v, items[0][0]) for v, _ in items):
        return [f"{name}: all {len(items)} bars {number(items[0][0])}."]
    if len(items) <= ITEMS_READ:
        text = f"{name}: " + ", ".join(f"{label} {number(v)}" for v, label in items)
        top = max(v for v, _ in items)
        tallest = [label for v, label in items if _same(v, top)]
        if len(items) > 2 and len(tallest) == 1:
            text += f"; largest {tallest[0]}"
        return [text + "."]
    where = axis.short("")
    where = f"{where} " if where and not re.search(r"\d", where) else ""
    items.sort(key=lambda t: -t[0])
    return [f"{name}: {len(items)} bars, largest {number(items[0][0])} at {where}{items[0][1]}, "
            f"then {number(items[1][0])} at {items[1][1]}; smallest {number(items[-1][0])} at {items[-1][1]}."]


def _scatter(trace: dict, layout: dict, notes: list[str]) -> list[str]:
    y = _array(trace.get("y"))
    if y is None or y.ndim != 1 or not np.isfinite(y).any():
        return []
    xaxis = _Axis(layout, trace.get("xaxis"), "x")
    xs = _labels(trace.get("x")) or list(range(len(y)))
    yaxis = _Axis(layout, trace.get("yaxis"), "y")
    x_values = _array(trace.get("x"))
    worded = bool(yaxis.ticks) and all(isinstance(t, str) and not re.fullmatch(r"[-+0-9.,\s%]*", plain(t))
                                       for t in yaxis.ticks.values())
    if (worded and x_values is not None and x_values.shape == y.shape
            and all(float(v) in yaxis.ticks for v in y if np.isfinite(v))):
        # Points placed on labelled rows (a dot plot): the values run across, the labels down.
        y, xs, xaxis = x_values, list(trace.get("y")), yaxis
        swapped = True
    else:
        swapped = False
    name = _series_name(trace, "points" if "lines" not in str(trace.get("mode", "lines")) else "line", layout)
    at = [(y[i], xaxis.label(xs[i])) for i in range(len(y)) if np.isfinite(y[i]) and i < len(xs)]
    if not at:
        return []
    x_name = xaxis.short("" if swapped else "x")
    if len(at) <= ITEMS_READ:
        return [f"{name}, by {x_name}: " + ", ".join(f"{label} {number(v)}" for v, label in at) + "."]
    hi = max(at, key=lambda t: t[0])
    lo = min(at, key=lambda t: t[0])
    if "lines" in str(trace.get("mode", "lines")) and _same(hi[0], lo[0]):
        return [f"{name}: flat at {number(hi[0])}, from {x_name} {at[0][1]} to {at[-1][1]}."]
    if "lines" in str(trace.get("mode", "lines")):
        return [f"{name}: from {number(at[0][0])} at {x_name} {at[0][1]} to {number(at[-1][0])} at {at[-1][1]}; "
                f"highest {number(hi[0])} at {hi[1]}, lowest {number(lo[0])} at {lo[1]}."]
    where = f"{x_name} " if x_name else ""
    return [f"{name}: {len(at)} points, highest {number(hi[0])} at {where}{hi[1]}, lowest {number(lo[0])} at {lo[1]}."]


def _box(trace: dict, layout: dict, notes: list[str]) -> list[str]:
    values = _array(trace.get("y") if trace.get("y") is not None else trace.get("x"))
    if values is None or not np.isfinite(values).any():
        return []
    values = values[np.isfinite(values)]
    return [f"{_series_name(trace, 'box')}: {values.size} values, median {number(float(np.median(values)))}, "
            f"from {number(float(values.min()))} to {number(float(values.max()))}."]


def _table(trace: dict, layout: dict, notes: list[str]) -> list[str]:
    header = [plain(h) for h in (trace.get("header", {}) or {}).get("values", [])]
    columns = (trace.get("cells", {}) or {}).get("values", [])
    if not columns:
        return []
    first = [plain(v) for v in _labels(columns[0]) or []]
    text = f"A table of {len(first)} rows"
    if header:
        text += " with columns " + ", ".join(header)
    if first:
        text += ". Rows: " + ", ".join(first)
    return [text + "."]


_READERS = {"heatmap": _heatmap, "bar": _bar, "scatter": _scatter, "scattergl": _scatter, "box": _box, "table": _table}


# --------------------------------------------------------------------------- the figure


def in_words(figure) -> FigureWords:
    """``figure`` (a go.Figure or its plotly JSON) in words: see the module docstring."""
    spec = _spec(figure)
    if not isinstance(spec, dict) or "data" not in spec:
        raise TypeError("figure must be a go.Figure or a dict with 'data' (a list of traces) and 'layout'")
    layout = spec.get("layout", {}) or {}
    traces = list(spec.get("data", []) or [])
    name = plain(layout.get("title")) or "Figure"
    sentences: list[str] = []
    notes: list[str] = []
    outlined = False
    kinds = set()
    for trace in traces:
        kind = trace.get("type", "scatter")
        if trace.get("hoverinfo") == "skip":
            symbol = str((trace.get("marker") or {}).get("symbol", ""))
            outlined = outlined or "open" in symbol
            continue
        reader = _READERS.get(kind)
        if reader is None:
            continue
        if kind == "heatmap":
            found = reader(trace, layout, notes, panels_in_figure=sum(t.get("type") == "heatmap" for t in traces))
        else:
            found = reader(trace, layout, notes)
        if found:
            kinds.add(kind)
        sentences += found
    axes = _axis_sentence(layout, kinds)
    named_series = [t for t in traces if t.get("type", "scatter") in ("bar", "scatter") and plain(t.get("name"))
                    and t.get("hoverinfo") != "skip"]
    if len(named_series) > 1:
        notes.append("Each series has its own colour; the words name each one.")
    if outlined:
        notes.append("An outline marks each row's largest value (named above).")
    tail = _colour_notes([n for n in notes if isinstance(n, tuple)])
    tail += sorted({n for n in notes if isinstance(n, str)}, key=notes.index)
    # Chromium hands a screen reader at most about 1,000 characters of a description: keep the
    # axes and the notes on colour, and as many of the data sentences as fit, in order.
    more = "(More in the figure.)"
    kept = list(sentences)
    while kept and len(" ".join(([axes] if axes else []) + kept + ([more] if kept != sentences else []) + tail)) > MAX_CHARS:
        kept.pop()
    sentences = kept + ([more] if kept != sentences else [])
    body = " ".join(([axes] if axes else []) + sentences + tail)
    return FigureWords(name=name, description=body or f"{name}: a figure with no values to read.")


def _colour_notes(found: list[tuple]) -> list[str]:
    """One sentence per colour scale: what it shows (each heatmap that shares it, named once) and its range."""
    scales: dict[tuple, list[str]] = {}
    for _, what, span, printed in found:
        names = scales.setdefault((span, printed), [])
        if what not in names:
            names.append(what)
    out = []
    for (span, printed), names in scales.items():
        what = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        out.append(f"Colour shows {what}, {span}" + ("; each cell also prints its number." if printed else "."))
    return out


def spoken(description: str) -> str:
    """``description`` as a page reads it aloud: `code` marks become quotes (one run of plain text).

    Plain text on purpose: Chromium stops reading a description into the accessibility tree
    after some dozens of child nodes, and each ``<code>`` element would add two.
    """
    return re.sub(r"`([^`]+)`", "\u2018\\1\u2019", description)


def _axis_sentence(layout: dict, kinds: set) -> str:
    """What the axes show, once. One x and one y axis: where each runs ("Across: key token. Down: query
    token." when the rows run downwards, as in a table; "Up:" otherwise); several: "Axes: ..." in order."""
    titles, keys = [], []
    for key in sorted(k for k in layout if re.fullmatch(r"[xy]axis[0-9]*", k)):
        title = plain((layout[key] or {}).get("title"))
        if title and title not in titles:
            titles.append(title)
            keys.append(key)
    if not titles:
        return ""
    if sorted(keys) == ["xaxis", "yaxis"]:
        yaxis = layout["yaxis"] or {}
        span = yaxis.get("range")
        # plotly.js draws 'reversed' and may write it back as a falling range ("min reversed" and
        # "max reversed" are reversed too): the words read the same from the builder's figure and the page's.
        down = "reversed" in str(yaxis.get("autorange", "")) or (
            isinstance(span, (list, tuple)) and len(span) == 2 and all(isinstance(v, (int, float)) for v in span)
            and span[0] > span[1])
        return f"Across: {plain(layout['xaxis'].get('title'))}. {'Down' if down else 'Up'}: {plain(layout['yaxis'].get('title'))}."
    return "Axes: " + "; ".join(titles) + "."
