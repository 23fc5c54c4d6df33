"""Which of the course's Python files one control change runs code in: notebook 03's head count, 2 to 8.

    python -m benchmarks.files_per_change              # this checkout
    python -m benchmarks.files_per_change /path/to/another/checkout

The change is made in a plain Python process (no kernel, no page), with a keyboard helper watching the
group as a shown group has one (``_words.watch``), so the words' path runs too. Every function call is
recorded (``sys.setprofile``); a file counts when one of its functions runs. Files of the environment
(ipywidgets, traitlets, numpy) are left out. A file that only defines a class the change uses (the channel,
``widgets/_channel.py``) runs no function and does not count. A checkout from before the split into
``mha_core`` and ``mha_classroom`` (its controls under mha_core/widgets/) is measured the same way.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path


def files_per_change(root: Path) -> dict[str, list[str]]:
    """Course file (relative to ``root``) -> the functions of it that a head-count change runs."""
    root = root.resolve()
    sys.path.insert(0, str(root))
    package = "mha_classroom" if (root / "mha_classroom").is_dir() else "mha_core"
    heads = importlib.import_module(f"{package}.widgets.heads")
    keys = importlib.import_module(f"{package}.widgets._keys")
    words = importlib.import_module(f"{package}.widgets._words")
    group = heads.head_grid()
    words.watch(group.box, keys.keyboard_helper())  # as a shown group is watched
    group.head_count.value = 2  # a first change, so one-time work is not counted
    course = [str(root / name) + os.sep for name in ("mha_core", "mha_classroom")]
    seen: dict[str, set[str]] = {}

    def record(frame, event, arg):
        if event == "call":
            path = frame.f_code.co_filename
            if any(path.startswith(prefix) for prefix in course):
                seen.setdefault(os.path.relpath(path, root), set()).add(frame.f_code.co_name)

    sys.setprofile(record)
    try:
        group.head_count.value = 8
    finally:
        sys.setprofile(None)
    return {path: sorted(names) for path, names in sorted(seen.items())}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    root = Path(argv[0]) if argv else Path(__file__).resolve().parents[1]
    found = files_per_change(root)
    for path, names in found.items():
        print(f"{path:40s} {', '.join(names)}")
    by_package = {}
    for path in found:
        by_package[path.split(os.sep)[0]] = by_package.get(path.split(os.sep)[0], 0) + 1
    print(f"{len(found)} files: " + ", ".join(f"{n} in {p}" for p, n in sorted(by_package.items())))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
