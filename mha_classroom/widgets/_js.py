"""The course's JavaScript: ``.js`` files in ``js/`` beside this module (package data), put together here.

Each file holds one job (``js/label.js``: every plot an image for a screen reader; ``js/save.js``:
the PNG and SVG buttons; ``js/keys.js``: the keyboard helper's view; ...), with unit tests under
node's own test runner in ``tests/js/`` and a lint (``tests/test_js.py`` runs both).

Why the files are joined, not imported. anywidget evaluates a widget's ``_esm`` from a blob URL,
where a relative ``import`` has nothing to resolve against; and the shared modules (``label.js``,
``save.js``) must also run as classic scripts in the handouts, opened from disk, where Chromium
refuses module scripts. So a shared module is a classic script that defines one name (``mhaLabel``),
and a widget's module is that script, the others it uses, then the widget's own file, joined in
one string (``module``).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

#: Where the ``.js`` files live (installed with the package: pyproject's package-data).
JS_DIR = Path(__file__).resolve().with_name("js")


@functools.cache
def read(name: str) -> str:
    """The text of ``js/<name>``. Raises FileNotFoundError naming the files there if it is not one of them."""
    path = JS_DIR / name
    if not path.is_file():
        valid = ", ".join(sorted(p.name for p in JS_DIR.glob("*.js")))
        raise FileNotFoundError(f"name={name!r} is no file in {JS_DIR}; valid names are {valid}")
    return path.read_text(encoding="utf-8")


def constants(values: dict) -> str:
    """``const NAME = <json>;`` per item: values Python owns, put in front of a module that reads them.
    A tuple becomes a ``Set``."""
    return "".join(f"const {name} = new Set({json.dumps(list(value))});\n" if isinstance(value, tuple) else
                   f"const {name} = {json.dumps(value)};\n" for name, value in values.items())


def module(*names: str, values: dict | None = None) -> str:
    """One ES module for an anywidget's ``_esm``: ``values`` (``constants``), then the files ``names`` in
    order; the last one is the widget's own (it holds the ``export default``)."""
    return (constants(values) if values else "") + "\n".join(read(name) for name in names)
