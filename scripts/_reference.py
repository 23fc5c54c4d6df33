"""What the reference-making scripts share: writing the arrays and their metadata to one .npz.

``make_minilm_reference.py`` and ``make_smollm2_reference.py`` import it as a sibling
module (each is run as ``python scripts/<name>.py``, so this folder is on ``sys.path``).
It needs only NumPy.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np


def save_reference(out: Path, arrays: dict, meta: dict) -> None:
    """Write ``arrays`` and ``meta`` (as JSON in the array ``meta``) to ``out``, compressed; say its size."""
    arrays["meta"] = np.array(json.dumps(meta, ensure_ascii=False))
    out.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(out, **arrays)
    print(f"wrote {out} ({out.stat().st_size / 1e3:.0f} kB)")
