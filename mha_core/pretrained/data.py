"""The sentence sets and precomputed results notebooks 07 and 08 read, installed or in a checkout.

They live in the top-level ``data/`` folder (``data/sentences/``, ``data/models/``), apart
from the quiz bank; an installed wheel carries that folder as the package
``mha_core.data`` (see pyproject.toml).
"""

from __future__ import annotations

import json
from pathlib import Path


def data_file(*parts: str) -> Path:
    """The path of ``data/<parts...>``, from an installed copy or a checkout."""
    candidates: list[Path] = []
    try:
        from importlib.resources import files

        candidates.append(Path(str(files("mha_core.data").joinpath(*parts))))
    except (ImportError, TypeError, ValueError, AttributeError):
        pass
    package_dir = Path(__file__).resolve().parents[1]
    candidates += [package_dir.joinpath("data", *parts), package_dir.parent.joinpath("data", *parts)]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"data file {'/'.join(parts)} not found; looked in " + ", ".join(str(c) for c in candidates))


def sentence_set(name: str) -> dict:
    """``data/sentences/<name>.json`` as a dict (``heads``, ``key_senses``, ``pruning``)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str such as 'heads'; got {type(name).__name__}")
    return json.loads(data_file("sentences", f"{name}.json").read_text(encoding="utf-8"))


def precomputed(name: str) -> dict:
    """``data/models/<name>.json``: results a script computed because they are too slow for a notebook."""
    return json.loads(data_file("models", f"{name}.json").read_text(encoding="utf-8"))
