"""The sentence sets and precomputed results notebooks 07 and 08 read, installed or in a checkout.

They live in the top-level ``data/`` folder (``data/sentences/``, ``data/models/``), apart
from the quiz bank; an installed wheel carries that folder as the package
``mha_core.data`` (see pyproject.toml).
"""

from __future__ import annotations

import json

from .._data import data_file

__all__ = ["data_file", "precomputed", "sentence_lists", "sentence_set", "sentence_sources"]


def sentence_set(name: str) -> dict:
    """``data/sentences/<name>.json`` as a dict (``heads``, ``key_senses``, ``pruning``)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str such as 'heads'; got {type(name).__name__}")
    return json.loads(data_file("sentences", f"{name}.json").read_text(encoding="utf-8"))


def precomputed(name: str) -> dict:
    """``data/models/<name>.json``: results a script computed because they are too slow for a notebook."""
    return json.loads(data_file("models", f"{name}.json").read_text(encoding="utf-8"))


#: Every list of sentences in ``data/sentences/``: (file, key). A pair or triple counts each sentence.
SENTENCE_LISTS = (("heads", "sentences"), ("key_senses", "sentences"), ("pruning", "tuning"), ("pruning", "held_out"),
                  ("pruning", "pairs"), ("calibration", "paraphrases"), ("calibration", "unrelated"))


def sentence_lists() -> dict[str, list[str]]:
    """Every list in ``data/sentences/``, named ``file.json key``, pairs and triples flattened, in file order."""
    lists = {}
    for name, key in SENTENCE_LISTS:
        items = sentence_set(name)[key]
        lists[f"{name}.json {key}"] = [s for item in items for s in ([item] if isinstance(item, str) else item)]
    return lists


def sentence_sources(texts) -> dict[str, tuple[int, int]]:
    """For each list of ``data/sentences/``: how many of its sentences are among ``texts``, and how many it has.

    A sentence that sits in several lists counts in each; ``len(set(texts))`` says how many
    different sentences ``texts`` holds.
    """
    if isinstance(texts, str):
        raise TypeError("texts must be a list of sentences, not one str")
    chosen = set(texts)
    return {name: (sum(s in chosen for s in items), len(items)) for name, items in sentence_lists().items()}
