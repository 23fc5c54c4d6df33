"""The sentence sets and precomputed results notebooks 07 and 08 read, installed or in a checkout.

They live in the top-level ``data/`` folder (``data/sentences/``, ``data/models/``), apart
from the quiz bank; an installed wheel carries that folder as the package
``mha_core.data`` (see pyproject.toml).
"""

from __future__ import annotations

import json

from .._data import data_file

__all__ = ["data_file", "precomputed", "sentence_set"]


def sentence_set(name: str) -> dict:
    """``data/sentences/<name>.json`` as a dict (``heads``, ``key_senses``, ``pruning``)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str such as 'heads'; got {type(name).__name__}")
    return json.loads(data_file("sentences", f"{name}.json").read_text(encoding="utf-8"))


def precomputed(name: str) -> dict:
    """``data/models/<name>.json``: results a script computed because they are too slow for a notebook."""
    return json.loads(data_file("models", f"{name}.json").read_text(encoding="utf-8"))
