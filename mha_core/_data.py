"""Where the data the package reads at run time lives: installed, or in a checkout.

The top-level ``data/`` folder (the quiz bank, sentence sets, stored results) ships
inside a wheel as the package ``mha_core.data`` (see pyproject.toml). A checkout, and
the editable install (where ``mha_core.data`` does not import as a namespace package),
has it next to the ``mha_core`` folder. Every reader asks here, so the rule is in one place.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE_DIR = Path(__file__).resolve().parent


def data_candidates(*parts: str) -> list[Path]:
    """Where ``data/<parts...>`` may be, in the order to look."""
    candidates: list[Path] = []
    try:
        from importlib.resources import files

        candidates.append(Path(str(files("mha_core.data").joinpath(*parts))))
    except (ImportError, TypeError, ValueError, AttributeError):
        pass
    candidates += [_PACKAGE_DIR.joinpath("data", *parts), _PACKAGE_DIR.parent.joinpath("data", *parts)]
    return candidates


def data_file(*parts: str) -> Path:
    """The path of the file ``data/<parts...>``; FileNotFoundError naming where it looked."""
    candidates = data_candidates(*parts)
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"data file {'/'.join(parts)} not found; looked in " + ", ".join(str(c) for c in candidates))


def checkout_data_file(*parts: str) -> Path:
    """Where a script writes ``data/<parts...>``: the stored copy if there is one, else the checkout's data/."""
    try:
        return data_file(*parts)
    except FileNotFoundError:
        return _PACKAGE_DIR.parent.joinpath("data", *parts)
